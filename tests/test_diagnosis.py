"""Claim-level diagnosis (issue 44 item 5): where each answer was lost, RAGChecker's measures without an LLM,
and the stored rows of notebook 10 and the explorer's row agree with what they are computed from."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from rag_lib.app.explore import answer_stages, answer_stages_html
from rag_lib.core.config import REPO_ROOT
from rag_lib.evaluation.diagnosis import STAGES, ClaimCounts, QuestionTrace, claim_metrics, where_it_failed
from rag_lib.experiments.llm_eval import held_out_run
from rag_lib.results.local_llm import LocalLLMResult

RESULTS = REPO_ROOT / "results"
BASE = QuestionTrace(question="a01", gold_ranks=(1, 3), depth=20, k=5, facts_sent=True, declined_by=None,
                     shown=True, correct=True, stated=True)


@pytest.mark.parametrize(("change", "stage"), [
    ({}, "answered"),
    ({"gold_ranks": (1, None), "shown": False}, "not retrieved"),
    ({"gold_ranks": (1, 21), "shown": False}, "not retrieved"),
    ({"gold_ranks": (1, 6), "shown": False}, "ranked below the cut"),
    ({"declined_by": "gate", "shown": False}, "declined by the gate"),
    ({"declined_by": "judge", "shown": False}, "declined by the judge"),
    ({"facts_sent": False, "shown": False}, "not sent by narrowing"),
    ({"shown": False, "stated": False}, "sent but not stated"),
    ({"shown": False, "stated": True}, "stated but unsupported"),
    ({"shown": False, "stated": True, "off_question": True}, "withheld as off the question"),
    ({"shown": False, "stated": False, "off_question": True}, "sent but not stated"),
    ({"correct": False}, "supported but wrong"),
    ({"gold_ranks": (1, 9)}, "answered"),  # the key facts stated and shown, whatever retrieval did
    ({"facts_sent": None, "shown": False, "stated": False}, "sent but not stated"),  # the whole Top-k was sent
])
def test_each_stage_is_the_first_that_lost_the_answer(change, stage):
    assert where_it_failed(replace(BASE, **change)) == stage


def test_claim_measures_are_their_counts():
    counts = ClaimCounts(facts=10, facts_shown=4, facts_sent=8, facts_shown_of_sent=3, top_k_slots=50,
                         top_k_gold=10, claims=20, claims_supported=15, claims_ungrounded=2)
    got = {m.metric: (m.value, m.numerator, m.denominator) for m in claim_metrics(counts)}
    assert got == {"claim recall": (0.4, 4, 10), "context precision": (0.2, 10, 50),
                   "context utilisation": (0.375, 3, 8), "faithfulness": (0.75, 15, 20),
                   "hallucination": (0.1, 2, 20)}


def test_a_cascade_tells_the_judges_declines_from_the_gates():
    empty = {"citations_valid": 1, "citations_total": 1, "correct": True, "answer": "x", "stated": True,
             "claims": 1, "claims_supported": 1, "claims_ungrounded": 0}
    rows = [{"question": q, "status": "answered", "declined_by": None, "error_kind": None, "gate": "sufficient",
             **empty} for q in ("a", "b", "c")]
    run = held_out_run({"rows": rows}, {"a": True, "b": True, "c": False}, "g then judge",
                       {"a": True, "b": False, "c": False})
    assert [r["declined_by"] for r in run["rows"]] == ["gate", "judge", None]
    assert run["rows"][1]["claims"] == 0 and run["rows"][2]["claims"] == 1


@pytest.fixture(scope="module")
def stored() -> LocalLLMResult:
    result = LocalLLMResult.find("10_local_llm", RESULTS)
    if result is None:
        pytest.skip("results/10_local_llm not written (make reproduce)")
    return result


def test_stored_stage_rows_are_the_per_question_stages(stored):
    per_run = Counter((q.lang, q.gate, q.answerer, q.stage) for q in stored.question_failures)
    labels = {name: a.label for name, a in stored.answers.items()}
    for row in stored.failures:
        answerer = next(name for name, label in labels.items() if label == row.generator)
        assert row.questions == per_run[(row.lang, row.gate, answerer, row.stage)], row
    totals = Counter((r.generator, r.lang, r.gate) for r in stored.failures)
    assert set(totals.values()) == {len(STAGES)}
    for (generator, lang, gate), _ in totals.items():
        rows = [r for r in stored.failures if (r.generator, r.lang, r.gate) == (generator, lang, gate)]
        assert sum(r.questions for r in rows) == rows[0].of


def test_stored_answered_is_shown_and_correct(stored):
    for name, answerer in stored.answers.items():
        for key, run in answerer.runs.items():
            lang, gate = key.split(":", 1)
            stage = {q.question: q.stage for q in stored.question_failures
                     if (q.answerer, q.lang, q.gate) == (name, lang, gate)}
            for row in run.rows:
                if row.question in stage:
                    assert (stage[row.question] == "answered") == (row.status == "answered" and row.correct is True)


def test_stored_claim_measures_recount_from_the_rows(stored):
    for name, answerer in stored.answers.items():
        for key, run in answerer.runs.items():
            lang, gate = key.split(":", 1)
            diagnosed = {q.question for q in stored.question_failures
                         if (q.answerer, q.lang, q.gate) == (name, lang, gate)}
            replied = [r for r in run.rows if r.question in diagnosed and r.status != "insufficient"]
            faithful = next(m for m in stored.claim_measures if (m.generator, m.lang, m.gate, m.metric)
                            == (answerer.label, lang, gate, "faithfulness"))
            assert (faithful.numerator, faithful.denominator) == (sum(r.claims_supported for r in replied),
                                                                  sum(r.claims for r in replied))


def test_the_explorer_shows_the_stored_row_of_the_question(stored):
    question = stored.question_failures[0]
    rows = answer_stages(question.question, question.lang, RESULTS)
    assert {(r["answerer"], r["gate"], r["stage"]) for r in rows} == {
        (q.answerer, q.gate, q.stage) for q in stored.question_failures
        if (q.question, q.lang) == (question.question, question.lang)}
    assert question.stage in answer_stages_html(question.question, question.lang, RESULTS)
    assert "No where-it-failed row" in answer_stages_html("not-a-question", "zh", RESULTS)


def test_every_question_has_one_outcome() -> None:
    from rag_lib.experiments.llm_eval.diagnosis import OUTCOMES, outcome
    from rag_lib.results.answer_rows import AnsweredQuestion

    def row(answerable: bool, status: str, label: str = "sufficient", correct: bool | None = None) -> AnsweredQuestion:
        return AnsweredQuestion(question="q", answerable=answerable, label=label, gate=None, status=status,
                                declined_by=None, error_kind=None, citations_valid=0, citations_total=0,
                                correct=correct, answer="")

    seen = [outcome(row(True, "answered", correct=True)), outcome(row(True, "answered", correct=False)),
            outcome(row(True, "answered")), outcome(row(True, "insufficient")),
            outcome(row(True, "insufficient", label="insufficient")), outcome(row(True, "error")),
            outcome(row(False, "insufficient", label="insufficient")), outcome(row(False, "answered"))]
    assert seen == list(OUTCOMES)
