"""Notebook 10's evaluation pieces on hand-made data: the narrowing budget's out-of-sample choice, the
leave-one-out gated run, paired answer comparisons and partly checkable questions."""

from __future__ import annotations

from rag_lib.evidence.narrowing import UnitNarrower
from rag_lib.experiments.llm_eval import held_out_run, judge_after_gate
from rag_lib.experiments.llm_eval.budget import pick, split_halves
from rag_lib.generation.narrowed import EvidenceUnit
from rag_lib.presentation.llm_eval import gate_note
from rag_lib.results.local_llm import HELD_OUT, THEN_JUDGE


def test_the_halves_are_seeded_disjoint_and_cover_every_question() -> None:
    ids = [f"q{i:02d}" for i in range(9)]
    choosing, reporting = split_halves(ids, seed=0)
    assert (choosing, reporting) == split_halves(list(reversed(ids)), seed=0)  # input order does not matter
    assert sorted(choosing + reporting) == ids and not set(choosing) & set(reporting)
    assert (len(choosing), len(reporting)) == (5, 4)
    assert split_halves(ids, seed=1) != (choosing, reporting)


def test_the_rule_picks_the_smallest_candidate_reaching_the_target_in_every_language() -> None:
    # Three candidates; kept[(lang, id)][i]: candidate i keeps every key fact of the question.
    kept = {("zh", "a"): [False, True, True], ("zh", "b"): [False, False, True],
            ("en", "a"): [True, True, True], ("en", "b"): [False, True, True]}
    assert pick(kept, ["a", "b"], ["en"], target=1.0) == 1  # en alone: candidate 1 keeps both
    assert pick(kept, ["a", "b"], ["zh", "en"], target=1.0) == 2  # zh needs candidate 2
    assert pick(kept, ["a", "b"], ["zh", "en"], target=0.5) == 1  # half of zh suffices
    assert pick(kept, ["b"], ["zh", "en"], target=1.0) == 2


def test_when_no_candidate_reaches_the_target_the_largest_is_picked() -> None:
    kept = {("zh", "a"): [False, False], ("zh", "b"): [False, True]}
    assert pick(kept, ["a", "b"], ["zh"], target=0.9) == 1


def _unit(i: int, words: int) -> EvidenceUnit:
    return EvidenceUnit(chunk_id="c", rank=1, start=i, end=i + 1, text=" ".join(["word"] * words))


def test_keep_skips_a_unit_over_the_budget_and_keeps_a_shorter_one_after_it() -> None:
    from rag_lib.core.text import approx_tokens

    ranked = [_unit(0, 40), _unit(1, 400), _unit(2, 10)]
    narrower = UnitNarrower.__new__(UnitNarrower)  # keep() reads only the budget and the cap
    narrower.budget_tokens = approx_tokens(ranked[0].text) + approx_tokens(ranked[2].text)
    narrower.max_units = 5
    assert [u.start for u in narrower.keep(ranked)] == [0, 2]
    narrower.max_units = 1
    assert [u.start for u in narrower.keep(ranked)] == [0]


def test_the_held_out_run_declines_what_the_held_out_gate_declines_and_keeps_every_other_answer() -> None:
    answered = {"question": "a1", "answerable": True, "label": "sufficient", "gate": "sufficient",
                "status": "answered", "declined_by": None, "error_kind": None, "citations_valid": 1,
                "citations_total": 1, "correct": True, "answer": "128 MB"}
    unanswerable = {**answered, "question": "u1", "answerable": False, "correct": None, "answer": "42 GB"}
    ungated = {"lang": "en", "gate": "ungated", "n": 2, "rows": [answered, unanswerable]}
    run = held_out_run(ungated, {"a1": False, "u1": True}, "floor+aspects" + HELD_OUT)
    assert run["gate"] == "floor+aspects (leave-one-out)" and run["rows"][0] == answered
    declined = run["rows"][1]
    assert (declined["status"], declined["declined_by"], declined["answer"], declined["citations_total"]) == (
        "insufficient", "gate", "", 0)
    assert ungated["rows"][1]["status"] == "answered"  # the ungated run is not changed
    assert "leave-one-out" in gate_note(run["gate"]) and gate_note("ungated") == ""


def _row(question: str, status: str, correct: bool | None, answerable: bool = True) -> dict[str, object]:
    return {"question": question, "answerable": answerable, "status": status, "correct": correct, "error_kind": None}


def test_answers_are_compared_question_by_question_over_the_questions_both_have() -> None:
    from rag_lib.experiments.llm_eval.paired import paired_answer_rows, table_rows

    mine = [_row(f"a{i}", "answered", True) for i in range(30)] + [_row("u1", "answered", None, answerable=False)]
    base = [_row(f"a{i}", "insufficient", None) for i in range(29)] + [_row("a99", "answered", True)]
    rows, family = paired_answer_rows({"new": {"en": mine}, "old": {"en": base}}, [("new", "old")], ["en"],
                                      checkable=lambda q: q != "a0")
    by_metric = {r.metric: r for r in rows}
    # a0 is uncheckable, u1 unanswerable, a29 and a99 are each in one run only: 28 shared questions.
    right = by_metric["answer_correctness"]
    assert (right.questions, right.mechanism, right.baseline, right.diff) == (28, 1.0, 0.0, 1.0)
    assert family.get("new − old", "en", "answer_correctness").effect
    wrong = by_metric["shown_wrong"]
    assert wrong.diff == 0 and not family.get("new − old", "en", "shown_wrong").in_family  # fixed
    # 10's table of them: the answerer's and the baseline's rates, the signed difference and intervals as text.
    shown = {r.metric: r for r in table_rows(rows)}
    assert (shown["answer_correctness"].answerer, shown["answer_correctness"].baseline) == (1.0, 0.0)
    assert (shown["answer_correctness"].difference, shown["shown_wrong"].difference) == ("+1.000", "0.000")
    # 28 of 28 questions gained: McNemar's exact test, inverted (Clopper-Pearson on the 28 discordant questions)
    assert shown["answer_correctness"].interval == "[+0.753, +1.000]"
    assert shown["answer_correctness"].adjusted_holm == right.adjusted_holm


def test_a_question_is_partly_checkable_when_it_has_checkable_and_uncheckable_facts() -> None:
    from rag_lib.evaluation.key_facts import KeyFact, KeyFacts, partly_checkable

    def fact(qid: str, checkable: bool) -> KeyFact:
        return KeyFact(qid, "p1", ("128 MB",), "chunk", checkable, "" if checkable else "prose")

    facts = KeyFacts({"a": (fact("a", True), fact("a", False)), "b": (fact("b", True),), "c": (fact("c", False),)})
    assert partly_checkable(facts) == [{"question": "a", "checkable facts": 1, "uncheckable facts": 1, "why": "prose"}]



def test_a_question_the_cascade_cannot_decide_is_missing_not_let_through() -> None:
    answered = {"question": "a1", "answerable": True, "label": "sufficient", "gate": "sufficient",
                "status": "answered", "declined_by": None, "error_kind": None, "citations_valid": 1,
                "citations_total": 1, "correct": True, "answer": "128 MB"}
    ungated = {"lang": "en", "gate": "ungated", "n": 2, "rows": [answered, {**answered, "question": "a2"}]}
    run = held_out_run(ungated, {"a1": None, "a2": False}, "floor+aspects" + HELD_OUT + THEN_JUDGE)
    undecided, kept = run["rows"]
    assert (undecided["status"], undecided["error_kind"], undecided["answer"]) == ("error", "replay_miss", "")
    assert kept == {**answered, "question": "a2"}
    assert "judge" in gate_note(run["gate"]) and "leave-one-out gate" in gate_note(run["gate"])


def test_the_judge_after_the_gate_declines_what_either_declines_and_never_passes_an_unjudged_question() -> None:
    from rag_lib.results.gate_rows import JudgedQuestion, JudgeLanguage

    judge = JudgeLanguage(None, 3, {}, [JudgedQuestion(q, True, "sufficient", verdict, [])
                                        for q, verdict in (("a", "insufficient"), ("b", "sufficient"),
                                                           ("c", "sufficient"))])
    declined = {"a": False, "b": False, "c": True, "d": False, "e": True}
    assert judge_after_gate(declined, judge) == {"a": True, "b": False, "c": True, "d": None, "e": True}
