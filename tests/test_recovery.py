"""Recovery loop: the rule decomposer's exact outputs, the loop on a hand-made ranking, and results.json."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pytest

from rag_lib.benchmark import Question
from rag_lib.core.config import RESULTS_DIR
from rag_lib.core.documents import Chunk
from rag_lib.experiments.recovery import COUNT_KEYS, summarise
from rag_lib.generation.base import LLMGenerator
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.recovery import (
    Decomposer,
    FixedSuggestions,
    LLMDecomposer,
    SuggestionRun,
    choose_suggestion,
    copies_prompt_example,
    run_recovery,
)
from rag_lib.generation.rule_decomposer import RuleDecomposer
from rag_lib.retrieval import Ranking

Q7_ZH = "环境变量、secret 和普通配置应该分别怎么设置？本地开发和线上部署有什么区别？"
Q7_EN = ("How should environment variables, secrets and plain configuration each be set? "
         "What is the difference between local development and a production deployment?")


# -- rule decomposer --------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "expected"), [
    (Q7_ZH, ("环境变量应该怎么设置？", "secret 应该怎么设置？", "普通配置应该怎么设置？")),
    (Q7_EN, ("How should environment variables be set?", "How should secrets be set?",
             "How should plain configuration be set?")),
    ("怎么给 Pages Functions 配置 R2 bucket 绑定，并在代码里访问它？",
     ("怎么给 Pages Functions 配置 R2 bucket 绑定？", "怎么在代码里访问它？")),
    ("How do I configure an R2 bucket binding for Pages Functions, and access it in code?",
     ("How do I configure an R2 bucket binding for Pages Functions?", "How do I access it in code?")),
    ("为什么要给 Pages 项目加 _routes.json？include 和 exclude 冲突时谁优先？",
     ("为什么要给 Pages 项目加 _routes.json？", "include 和 exclude 冲突时谁优先？")),
])
def test_rule_decomposer_exact(question: str, expected: tuple[str, ...]) -> None:
    suggestions = RuleDecomposer().suggest(question, [])
    assert suggestions.status == "ok" and suggestions.source == "rule"
    assert suggestions.questions == expected


def test_rule_decomposer_reports_no_split_and_the_cap() -> None:
    # "with Wrangler and with the dashboard" is not an enumeration of things: nothing to split.
    none = RuleDecomposer().suggest("How do I delete a Worker secret, with Wrangler and with the dashboard?", [])
    assert (none.status, none.questions) == ("no_split", ())
    # Q7 yields four questions; the casebook's rule allows three, so the fourth is dropped and said so.
    assert RuleDecomposer().suggest(Q7_ZH, []).reason == "4 clause/aspect question(s); the last 1 dropped"
    assert len(RuleDecomposer(max_questions=4).suggest(Q7_ZH, []).questions) == 4


# -- the loop on a hand-made "workbench" ------------------------------------------------------------
def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(id=cid, page="workers/configuration/secrets", ordinal=0, title="Secrets", heading_path=(cid,),
                 text=text, start=0, end=len(text), url="https://example.invalid/#x", embeddable=True,
                 oversized=False)


CHUNKS = {cid: _chunk(cid, text) for cid, text in [
    ("vars", "Plain variables go in the vars table."),
    ("secret", "Use wrangler secret put to add a secret in production."),
    ("local", "For local development, put values in a .dev.vars file."),
    ("noise1", "Pages has limits."), ("noise2", "R2 has classes."), ("noise3", "D1 has rows."),
]}
# Each query text maps to a fixed order of chunk ids (best first).
ORDERS = {
    "original?": ["local", "noise1", "noise2", "vars", "noise3", "secret"],
    "how vars?": ["vars", "noise1", "local", "noise2", "noise3", "secret"],
    "how secret?": ["secret", "vars", "noise1", "noise2", "noise3", "local"],
}


class FakeBench:
    by_id: Mapping[str, Chunk] = CHUNKS

    def __init__(self) -> None:
        self.queries: list[tuple[str, str]] = []

    def rank(self, text: str, key: str = "dense") -> Ranking:
        self.queries.append((text, key))
        ids = ORDERS[text]
        return Ranking(tuple(ids), tuple(float(-i) for i in range(len(ids))), source="fake")


QUESTION = Question(id="qx", type="answerable", compound=True, zh="original?", en="original?",
                    resolved=(frozenset({"vars"}), frozenset({"secret"}), frozenset({"local"})))


def test_run_recovery_on_a_hand_made_ranking() -> None:
    bench = FakeBench()
    fixed = FixedSuggestions(["how vars?", "how secret?"], reason="two topics", name="fixed")
    assert isinstance(fixed, Decomposer)
    result = run_recovery(bench, QUESTION, "en", fixed, k=3, retriever="bm25")
    assert bench.queries == [("original?", "bm25"), ("how vars?", "bm25"), ("how secret?", "bm25")]
    assert result.baseline_ranks == (4, 6, 1)
    assert result.rows() == [{"suggestion": "how vars?", "C1": 1, "C2": 6, "C3": 3},
                             {"suggestion": "how secret?", "C1": 2, "C2": 1, "C3": 6}]
    # Both bring one missing piece into the Top-3 ("how secret?" brings C1 and C2: two) -> index 1.
    assert result.chosen == 1
    assert (result.covered(3, "before"), result.covered(3, "chosen"), result.covered(3, "union")) == (1, 3, 3)
    assert (result.covered(1, "before"), result.covered(1, "chosen"), result.covered(1, "union")) == (1, 2, 3)
    answer = result.answer
    assert answer is not None and answer.evidence_ids == ("secret", "vars", "noise1")
    assert answer.status == "answered" and answer.citations is not None and answer.citations.n_valid >= 1
    assert result.to_json()["chosen_question"] == "how secret?"


def test_choose_ties_go_to_the_first_and_no_runs_means_no_choice() -> None:
    runs = [SuggestionRun("a", (1, 9), ()), SuggestionRun("b", (2, 9), ())]
    assert choose_suggestion((8, 1), runs, k=5) == 0
    assert choose_suggestion((8, 1), [], k=5) is None
    empty = run_recovery(FakeBench(), QUESTION, "zh", FixedSuggestions([]), k=3)
    assert empty.chosen is None and empty.answer is None and empty.covered(5, "union") == 2


class ScriptedLLM(LLMGenerator):
    backend = "fake"

    def __init__(self, reply: str, recorder: CallRecorder) -> None:
        super().__init__("fake-model", recorder=recorder)
        self.reply = reply

    def _params(self, json_schema: dict[str, object]) -> dict[str, object]:
        return {}

    def _complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse(content=self.reply)


def test_llm_decomposer_records_schema_failures_as_outcomes(tmp_path) -> None:
    good = ScriptedLLM('{"reason": "r", "suggestions": ["how vars?", "how secret?"]}', CallRecorder(tmp_path))
    ok = LLMDecomposer(good).suggest("original?", list(CHUNKS.values())[:2])
    assert (ok.status, ok.questions, ok.source) == ("ok", ("how vars?", "how secret?"), "llm:fake/fake-model")
    assert len(ok.call_keys) == 1 and (tmp_path / f"{ok.call_keys[0]}.json").is_file()
    one = ScriptedLLM('{"reason": "r", "suggestions": ["only one"]}', CallRecorder(tmp_path / "b"))
    bad = LLMDecomposer(one).suggest("original?", [])
    assert (bad.status, bad.questions) == ("schema_invalid", ()) and bad.raw_output is not None
    result = run_recovery(FakeBench(), QUESTION, "en", LLMDecomposer(one), k=3)
    assert result.chosen is None and result.suggestions.status == "schema_invalid"


def test_summary_shows_no_after_counts_while_a_call_is_missing_and_counts_recorded_failures() -> None:
    fixed = run_recovery(FakeBench(), QUESTION, "en", FixedSuggestions(["how vars?", "how secret?"]), k=3)
    missing = run_recovery(FakeBench(), QUESTION, "en", FixedSuggestions([]), k=3)
    missing = replace(missing, suggestions=replace(missing.suggestions, status="replay_miss"))
    failed = replace(missing, suggestions=replace(missing.suggestions, status="schema_invalid"))
    complete = summarise([fixed, failed])
    assert (complete.missing, complete.failed) == (0, 1)
    assert (complete.in_top5_before, complete.in_top5_after_union) == (4, 3 + 2)  # the failure keeps its 2
    partial = summarise([fixed, missing])
    assert (partial.missing, partial.in_top5_before) == (1, 4)
    assert all(value is None for key, value in vars(partial).items() if "_after_" in key)


def test_copies_prompt_example() -> None:
    assert copies_prompt_example("narrower question 1") and copies_prompt_example("Narrower question 3")
    assert not copies_prompt_example("How do I add a secret?") and not copies_prompt_example("42")


def test_suggestions_copied_from_the_prompt_are_dropped_never_run(tmp_path) -> None:
    echo = ScriptedLLM('{"reason": "r", "suggestions": ["narrower question 1", "narrower question 2"]}',
                       CallRecorder(tmp_path / "a"))
    copied = LLMDecomposer(echo).suggest("original?", [])
    assert (copied.status, copied.questions) == ("copied_example", ())
    assert copied.copied == ("narrower question 1", "narrower question 2") and "prompt's example" in copied.error
    result = run_recovery(FakeBench(), QUESTION, "en", LLMDecomposer(echo), k=3)
    assert result.runs == ()  # nothing is retrieved for a placeholder
    mixed = ScriptedLLM('{"reason": "r", "suggestions": ["how secret?", "narrower question 2"]}',
                        CallRecorder(tmp_path / "b"))
    kept = LLMDecomposer(mixed).suggest("original?", [])
    assert (kept.status, kept.questions, kept.copied) == ("ok", ("how secret?",), ("narrower question 2",))
    assert summarise([result]).n_echoing_prompt == 2 and summarise([result]).failed == 1


# -- results.json of the notebook -------------------------------------------------------------------
RESULTS = RESULTS_DIR / "07_recovery_loop" / "results.json"  # the committed results, not a scratch run


@pytest.mark.skipif(not RESULTS.is_file(), reason="run `python -m rag_lib.runner.reproduce 07_recovery_loop` first")
def test_results_json_schema_and_report() -> None:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert data["experiment"] == "07_recovery_loop" and set(data["languages"]) == {"zh", "en"}
    for lang in data["languages"]:
        assert set(data["q7"][lang]) == {"llm", "rule", "casebook"}
        for entry in data["q7"][lang].values():
            assert set(entry["baseline"]) == {"C1", "C2", "C3", "C4"}
            assert [row["suggestion"] for row in entry["ranks"]] == entry["suggestions"]
            assert all(set(row) == {"suggestion", "C1", "C2", "C3", "C4"} for row in entry["ranks"])
        casebook = data["q7"][lang]["casebook"]
        assert len(casebook["suggestions"]) == 3 and casebook["answer"]["citations"] is not None
        for source, counts in data["benchmark"][lang].items():
            assert source in {"llm", "rule"} and set(COUNT_KEYS) <= set(counts)
            if counts["missing"]:  # calls without a record: no "after" figure is shown at all
                assert all(v is None for key, v in counts.items() if "_after_" in key)
                continue
            # Cumulative counts: the original's evidence stays, so after >= before, union >= best.
            for cut in ("top5", "top10"):
                before, first, random, best, union = (counts[f"in_{cut}_{w}"] for w in (
                    "before", "after_first", "after_random", "after_best", "after_union"))
                assert before <= first <= union <= counts["pieces_total"]
                assert before <= random <= union and before <= best <= union
            # The oracle picks the suggestion with the most new pieces in the Top-5: no single pick does better.
            assert counts["in_top5_after_first"] <= counts["in_top5_after_best"]
            assert counts["in_top5_after_random"] <= counts["in_top5_after_best"]
            rows = data["per_question"][lang][source]
            assert sum(r["before_top5"] for r in rows) == counts["in_top5_before"]
            assert sum(r["after_union_top10"] for r in rows) == counts["in_top10_after_union"]
    assert data["casebook_published"]["recovery"] == {"s2_c3_rank": {"before": 36, "after": 2},
                                                      "s1": {"C1": 31, "C2": 16}}
    assert data["casebook_published"]["whose"].startswith("THEIRS")
    assert {"retriever", "llm", "rule", "answer"} <= set(data["provenance"])
    # That report.md is written from this JSON is checked for every run by tests/test_report_functions.py.


def test_the_recovery_experiment_runs_end_to_end_on_a_fixture_corpus(monkeypatch, tmp_path) -> None:
    """run_recovery_experiment on Q7's pages alone, with an empty call-record folder: the rule source is
    measured, the LLM source has no record for any question and so reports no "after" figure at all."""
    from fixture_corpus import q7_pages_workbench

    from rag_lib.experiments import recovery
    from rag_lib.generation import llm_calls
    from rag_lib.results.recovery import RecoveryExperimentResult

    monkeypatch.setattr(llm_calls, "DEFAULT_CALLS_DIR", tmp_path / "no_records")
    wb = q7_pages_workbench(tmp_path)
    result = recovery.run_recovery_experiment(languages=("en",), llm_mode="replay_only", workbench=wb)
    compound = wb.benchmark.questions(compound=True, answerable=True)
    assert result.compound_question_ids == [q.id for q in compound] and result.q7_id in result.compound_question_ids

    rule, llm = result.benchmark["en"]["rule"], result.benchmark["en"]["llm"]
    assert rule.n_questions == llm.n_questions == len(compound)
    assert rule.pieces_total == sum(len(q.pieces) for q in compound)
    for before, first, random, best, union in (
            (rule.in_top5_before, rule.in_top5_after_first, rule.in_top5_after_random, rule.in_top5_after_best,
             rule.in_top5_after_union),
            (rule.in_top10_before, rule.in_top10_after_first, rule.in_top10_after_random, rule.in_top10_after_best,
             rule.in_top10_after_union)):
        assert first is not None and random is not None and best is not None and union is not None
        assert before <= first <= union and before <= best <= union and before <= random <= union
    assert llm.missing == len(compound) and llm.n_suggestions == 0
    assert all(value is None for key, value in vars(llm).items() if "_after_" in key)  # not measured, not "unchanged"
    assert any("no recorded LLM call yet" in line for line in recovery.findings(result))

    casebook = result.q7["en"]["casebook"]
    assert casebook.suggestions == list(recovery.CASEBOOK_Q7_SUGGESTIONS["en"]) and len(casebook.ranks) == 3
    assert RecoveryExperimentResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_the_casebooks_recovery_figures_read_as_labelled_rows() -> None:
    from rag_lib.experiments.recovery import casebook_rows
    from rag_lib.results.recovery import BeforeAfter, CasebookRecovery, CasebookRecoveryFigures

    published = CasebookRecovery(whose="THEIRS", q7_piece_ranks={"C1": 52, "C2": 36, "C3": 36}, recovery=(
        CasebookRecoveryFigures(s1={"C1": 31, "C2": 16}, s2_c3_rank=BeforeAfter(before=36, after=2))), user_pick="S2")
    assert [r["casebook (theirs)"] for r in casebook_rows(published)] == ["52 / 36 / 36", "31 / 16", "36 → 2", "S2"]
