"""Findings are sentences generated from stored numbers: checked on small hand-made results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typed_results import partial_result

from rag_lib.experiments import q9a, recovery, summary, topk
from rag_lib.workbook.experiment_results import Q9aResult, RecoveryExperimentResult, TopkResult
from rag_lib.workbook.mechanism_results import MechanismResult


def _metric(diff: float, lo: float, hi: float, p: float) -> dict[str, object]:
    return {"baseline": 0.5, "mechanism": 0.5 + diff, "diff": diff, "ci95": [lo, hi], "p": p}


def _mechanism(root: Path, name: str, variants: list[dict]) -> None:
    """A stored run of a declared mechanism (the summary reads the runs workbook.yaml declares)."""
    folder = root / f"06_q7_mechanism-{name}"
    folder.mkdir()
    payload = partial_result(MechanismResult, mechanism=name, status="ran", provenance={"n_answerable": 58},
                             variants=variants)
    (folder / "results.json").write_text(json.dumps(payload.to_json()))


def test_what_helps_ranks_gains_first_losses_last_and_never_judges_a_failed_variant(tmp_path: Path) -> None:
    flat = {m: _metric(0.0, 0.0, 0.0, 1.0) for m in summary.METRICS}
    _mechanism(tmp_path, "dedup_mmr", [
        {"name": "up", "benchmark": {"zh": {**flat, "coverage@evidence": _metric(0.1, 0.05, 0.2, 0.0001)}}},
        {"name": "down", "benchmark": {"zh": {**flat, "hit@5": _metric(-0.2, -0.3, -0.1, 0.0001)}}},
        {"name": "flat", "benchmark": {"zh": flat}},
    ])
    _mechanism(tmp_path, "reranker", [
        {"name": "llm", "benchmark": {"zh": {**flat, "coverage@evidence": _metric(0.5, 0.5, 0.5, 0.0)}},
         "compared_on": {"zh": 1}, "failures": {"zh": {"failed": 19, "of": 20, "by_kind": {"replay_miss": 19}}}},
    ])
    mechanisms = summary.SummaryInputs.read(tmp_path).mechanisms
    rows = summary.what_helps(summary.comparisons(mechanisms), summary.failures(mechanisms))
    assert [(r["mechanism"], r["verdict"]) for r in rows] == [
        ("dedup_mmr: up", "helps"), ("dedup_mmr: flat", "no clear effect"), ("dedup_mmr: down", "hurts"),
        ("reranker: llm", "incomplete: 19 of 20 questions failed")]
    assert rows[0]["coverage@evidence"] == "+0.100 [+0.050, +0.200]" and rows[0]["hit@5"] == "no change"
    assert rows[0]["questions"] == 58 and rows[3]["questions"] == 1


def test_the_llm_judge_is_not_reported_as_a_result_while_its_calls_are_missing() -> None:
    judge = {"gate": "llm_judge (m)", "lang": "zh", "judged": 3, "failed": 88, "n": 3}
    result = partial_result(Q9aResult, corpus_check={"absent_found": 0, "chunks": 2, "pages": 1}, languages=[], k=5,
                      llm_judge_rows=[judge],
                      generation={"gate": "g", "lang": "en", "generator": {"model": "x"}, "answered": 1, "n": 2,
                                  "citations_valid": 1, "citations_total": 1, "unanswerable_declined": 1,
                                  "unanswerable": 1})
    lines = q9a.findings(result)
    assert "decided 3 questions and 88 calls failed or have no record, so its rates are not a result yet" in lines[1]
    done = {**judge, "judged": 90, "failed": 1, "unanswerable_declined": 20, "unanswerable": 33,
            "refusal_correctness": 20 / 33, "complete_declined": 5, "complete": 45, "false_refusal_rate": 5 / 45}
    line = q9a.findings(dataclasses.replace(result, llm_judge_rows=[done]))[1]
    assert line.startswith("zh: the LLM judge (llm_judge (m)) declines 20/33 unanswerable questions (refusal "
                           "correctness 0.61) and 5/45 answerable ones") and "1 failed calls are left out" in line


def test_recovery_findings_give_no_after_count_while_calls_are_missing() -> None:
    counts = {"missing": 4, "n_questions": 17}
    result = partial_result(RecoveryExperimentResult, k=5, languages=["zh"], q7={"zh": {}},
                            benchmark={"zh": {"llm": counts}})
    assert recovery.findings(result)[0] == ("zh · llm: 4 of 17 questions have no recorded LLM call yet, so there "
                                            "is no after-count for this source.")


def test_topk_findings_say_when_q8_never_completes() -> None:
    curve = {str(k): {"coverage": 0.5, "tokens": 100.0 * k} for k in (5, 10, 20)}
    result = partial_result(TopkResult, languages=["zh"], max_k=20, n_compound=17, token_estimate="t",
                      casebook_q8={"k5": "1/2", "k6": "2/2"}, late_complete_count={"zh": 0}, curve={"zh": curve},
                      q8={"zh": {"covered_at_5": "1/2", "covered_at_6": "1/2", "first_full_k": None}})
    lines = topk.findings(result)
    assert lines[0] == ("Q8 (zh): 1/2 pieces at k = 5 and 1/2 at k = 6; it is still incomplete at k = 20 "
                        "(casebook, theirs: 1/2 at k = 5, 2/2 at k = 6).")
    assert "≈500 → ≈1000 tokens (2.0×)" in lines[1]


def test_partial_results_name_a_misspelt_field() -> None:
    with pytest.raises(AssertionError, match="lnaguages"):
        partial_result(TopkResult, lnaguages=["zh"])
