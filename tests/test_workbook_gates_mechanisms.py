"""A workbook's gates (W3) and mechanisms (W4), issue 49 item 4: each runs on any workbook, is stored long, and
its rates, comparisons and Findings are derived when rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_lib.core.config import RunConfig
from rag_lib.pipeline import workbook as workbooks
from rag_lib.presentation import workbook_gates as gates_view
from rag_lib.presentation import workbook_mechanisms as mechanisms_view
from rag_lib.results.workbook import Measurement
from rag_lib.results.workbook_gates import (
    CASEBOOK,
    IN_SAMPLE,
    LEAVE_ONE_OUT,
    Decision,
    GateInput,
    GateSetting,
    WorkbookGatesResult,
)
from rag_lib.results.workbook_mechanisms import BASELINE, NotRun, VariantRun, WorkbookMechanismsResult
from tests.test_workbook import tiny  # noqa: F401  (the fixture)


def test_the_gates_run_on_a_workbook_and_refuse_settings_fitted_at_another_k(tiny: workbooks.Workbook) -> None:  # noqa: F811
    from rag_lib.experiments.workbook_gates import GATES, run_gates

    result = run_gates(workbooks.open_workbook(tiny, RunConfig.from_settings()))
    assert WorkbookGatesResult.from_json(result.to_json()) == result
    assert result.casebook_refused is not None and "k = 5" in result.casebook_refused  # the tiny workbook reads k = 1
    assert {s.fit for s in result.settings} == {IN_SAMPLE} and not result.same_questions
    assert {(i.question, i.answerable, i.complete) for i in result.inputs} >= {("p03", False, False)}
    assert len(result.decisions) == len(GATES) * 2 * 3  # in-sample and leave-one-out, three questions
    rows = gates_view.rate_rows(result)
    assert all("unanswerable declined" in r and "false refusals" in r for r in rows)  # never one without the other
    found = gates_view.findings(result)
    assert not any("the gate `ask` applies" in f for f in found)
    assert any(f.startswith("The casebook's settings are not applied here: ") for f in found)


def _gates_result() -> WorkbookGatesResult:
    inputs = [GateInput("en", "a1", True, False, True, 0.9, 1.0), GateInput("en", "a2", True, False, True, 0.8, 1.0),
              GateInput("en", "a3", True, False, False, 0.7, 0.5), GateInput("en", "u1", False, True, False, 0.75, 0.5),
              GateInput("en", "u2", False, False, False, 0.6, 0.0)]
    declined = {CASEBOOK: {"a2", "u1", "u2"}, IN_SAMPLE: {"u1", "u2", "a3"}, LEAVE_ONE_OUT: {"u2"}}
    decisions = [Decision("en", gate, fit, i.question, i.question in declined[fit])
                 for gate in ("floor", "aspects", "floor_aspects") for fit in declined for i in inputs]
    settings = [GateSetting("en", gate, fit, 0.85 if fit == CASEBOOK else 0.78, 0.6)
                for gate in ("floor", "aspects", "floor_aspects") for fit in (CASEBOOK, IN_SAMPLE)]
    return WorkbookGatesResult("w", "A corpus", 5, "dense:x", "x (onnx, 1)", "questions.yaml", "03, 91 questions",
                               None, False, inputs, settings, decisions)


def test_gate_rates_are_counted_from_the_stored_decisions() -> None:
    result = _gates_result()
    row = next(r for r in gates_view.rate_rows(result) if r["gate"] == "floor+aspects" and "casebook" in r["settings"])
    assert row["unanswerable declined"].startswith("2/2 [") and row["near miss declined"].startswith("1/1 [")
    assert row["false refusals"].startswith("1/2 [") and row["answerable, a piece missing, declined"].startswith("0/1 ")
    assert row["setting"] == "best score ≥ 0.8500, aspect coverage ≥ 0.60"
    found = gates_view.findings(result)
    assert found[0] == ("English questions on A corpus: the gate `ask` applies (floor+aspects with the casebook's "
                        "settings, tuned on none of these questions) declines 2/2 [0.34, 1.00] unanswerable questions "
                        "(near miss: 1/1 [0.21, 1.00]) and 1/2 [0.09, 0.91] answerable ones whose Top-5 holds every "
                        "gold piece (false refusals).")
    assert "leave-one-out declines 1/2 [" in found[1] and "(in-sample, optimistic) it declines 2/2 [" in found[1]
    assert found[-1].startswith("Caveat: 2 unanswerable and 2 complete-evidence answerable questions (en), so")
    assert {lang: (b.answerable, b.unanswerable) for lang, b in gates_view.best_scores(result).items()} == {
        "en": ([0.7, 0.8, 0.9], [0.6, 0.75])}
    assert "| en | floor+aspects | the casebook's (what ask applies) | best score ≥ 0.8500" in (
        gates_view.report_markdown(result, found))


def test_the_mechanisms_run_on_a_workbook_without_llm_calls(tiny: workbooks.Workbook) -> None:  # noqa: F811
    from rag_lib.experiments.mechanisms.workbook import run_mechanisms

    result = run_mechanisms(workbooks.open_workbook(tiny, RunConfig.from_settings()), ["topk", "reranker"], n_boot=200)
    assert WorkbookMechanismsResult.from_json(result.to_json()) == result
    assert [(v.name, v.evidence_k) for v in result.variants] == [("k=10", 10), ("k=20", 20)]
    assert [n.name for n in result.not_run] == ["reranker"]  # an LLM per question: listed with its reason
    assert {m.configuration for m in result.measurements} == {BASELINE, "k=10", "k=20"}
    assert {m.question for m in result.measurements} == {"p01", "p02"}  # answerable only
    found = mechanisms_view.findings(result)
    assert "no variant moves hit@1 or coverage@evidence beyond the adjustment" in found[0]
    assert "not run here (reasons in the report): reranker." in found[-1]


def test_a_variant_that_finds_more_evidence_is_said_to_with_its_adjusted_interval() -> None:
    questions = [f"q{i:02d}" for i in range(30)]
    rows = [Measurement(config, "en", q, metric, float(config != BASELINE and i < 25))
            for config in (BASELINE, "better") for i, q in enumerate(questions)
            for metric in ("hit@5", "coverage@10", "mrr", "coverage@evidence")]
    result = WorkbookMechanismsResult("w", "A corpus", 5, ["en"], "dense:x", "x", 30,
                                      [VariantRun("m", "better", "finds more", 5, ["en"], None, "", [])],
                                      [NotRun("reranker", "an LLM per question")], rows, 200, 0)
    judged = mechanisms_view.family(result)
    assert judged.size == 4 and all(j.effect and j.diff > 0 for j in judged.judgements)
    [finding, caveat] = mechanisms_view.findings(result)
    assert finding.startswith("English questions on A corpus, against dense retrieval: more gold evidence: better (")
    assert "adjusted [" in finding and caveat.startswith("Caveat: 30 answerable questions and one Holm family of 4")
    assert mechanisms_view.verdict_rows(result, judged)[0]["verdict"].startswith("helps: ")
    report = mechanisms_view.report_markdown(result, [finding, caveat])
    assert "| m | better | en | 5 | helps: " in report and "- not run: reranker: an LLM per question" in report


def test_answers_run_behind_the_gate_w3_chose(tiny: workbooks.Workbook, tmp_path: Path,  # noqa: F811
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.experiments.workbook_answers import run_answers
    from rag_lib.experiments.workbook_gates import run_gates
    from rag_lib.presentation import report
    from rag_lib.presentation import workbook_answers as answers_view
    from rag_lib.results.workbook_answers import WorkbookAnswersResult
    from rag_lib.results.workbook_gates import EXPERIMENT as W3

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path / "results"))
    opened = workbooks.open_workbook(tiny, RunConfig.from_settings())
    report.write_experiment(W3.name, run_gates(opened), gates_view.report_markdown)
    result = run_answers(opened)
    assert WorkbookAnswersResult.from_json(result.to_json()) == result
    assert result.gate_fit == IN_SAMPLE  # the casebook's settings were fitted at k = 5, the tiny workbook reads 1
    assert result.generator.backend == "extractive" and result.generator_calls["en"] <= 3
    assert sorted(r.question for r in result.answers["en"]) == ["p01", "p02", "p03"]
    assert result.checkable == []  # the tiny questions name no key facts
    [row] = answers_view.funnel_rows(result)
    assert row["states every key fact"] == "0/0 —" and row["unanswerable declined"].endswith("]")
    assert "from question to correct answer" in answers_view.report_markdown(result, ["a finding"]).lower()


def test_the_funnel_counts_each_stop_and_the_false_refusals() -> None:
    from rag_lib.presentation import workbook_answers as answers_view
    from rag_lib.results.answer_rows import AnsweredQuestion, GeneratorInfo
    from rag_lib.results.workbook_answers import WorkbookAnswersResult

    def row(q: str, label: str, status: str, by: str | None, correct: bool | None,
            kind: str | None = None) -> AnsweredQuestion:
        return AnsweredQuestion(q, q.startswith("a"), label, "sufficient", status, by, kind, 1, 1, correct, "…")

    rows = [row("a1", "sufficient", "answered", None, True), row("a2", "sufficient", "insufficient", "gate", None),
            row("a3", "insufficient", "answered", None, False), row("u1", "insufficient", "insufficient", "gate", None),
            row("a4", "sufficient", "error", None, None, "unsupported_claims"),
            row("a5", "insufficient", "error", None, None, "truncated")]
    result = WorkbookAnswersResult("w", "A corpus", 5, "dense:x", "floor+aspects (en: …)", CASEBOOK,
                                   GeneratorInfo("llama_cpp", "qwen", "1"), {"en": 4}, ["a1", "a2", "a3"], {"en": rows})
    [funnel] = answers_view.funnel_rows(result)
    assert funnel["states every key fact"].startswith("1/3 [") and funnel["answered"].startswith("2/5 [")
    assert funnel["false refusals"].startswith("1/3 [") and funnel["unanswerable declined"].startswith("1/1 [")
    assert funnel["withheld by the checks"].endswith("] (unsupported_claims 1)")  # the checks withheld its answer
    assert funnel["failed"].startswith("1/5 [") and funnel["failed"].endswith("] (truncated 1)")  # the call failed
    assert answers_view.findings(result)[0].startswith("English questions on A corpus, answered by qwen (llama_cpp, 1) "
                                                       "behind floor+aspects: 1/3 [")


def test_pages_the_import_flagged_move_to_the_end_of_the_ranking(tiny: workbooks.Workbook,  # noqa: F811
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.experiments.mechanisms.catalog import flagged_pages
    from rag_lib.experiments.mechanisms.registry import BaselineDense

    wb = workbooks.open_workbook(tiny, RunConfig.from_settings()).workbench
    base = BaselineDense(wb)
    assert flagged_pages.flagged_page_variants(wb, base, ("list_page",))[0] == []  # the tiny import flags nothing
    monkeypatch.setattr(flagged_pages, "page_warnings", lambda batch: {"limits": ["list_page"], "secrets": []})
    [variant], reason = flagged_pages.flagged_page_variants(wb, base, ("list_page",))
    assert reason == "" and variant.name == flagged_pages.VARIANT
    question = "What is the CPU limit on the free plan?"
    before, after = base(question), variant.rank(question)
    assert wb.by_id[before.ids[0]].page == "limits" and wb.by_id[after.ids[0]].page == "secrets"
    assert sorted(after.ids) == sorted(before.ids) and set(after.demoted) == {
        c.id for c in wb.embeddable if c.page == "limits"}
