"""The results of notebooks 02 (Q5) and 03 (Q9a): schema, and every figure in report.md is in results.json."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_checks import load_results, report_numbers_not_in_json

from rag_lib.core.config import RESULTS_DIR
from rag_lib.experiments.q9a.validation import FIGURES, VALIDATED_GATES

# A number standing on its own (not part of an identifier such as "q9a" or "e5").

SCHEMAS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "02_q5_success": {
        "casebook": dict, "question": dict, "k": int, "provenance": dict, "generator": dict, "top": list,
        "pieces": list, "gate_params": dict, "gate_used": str, "decisions": dict, "answer": dict, "citations": list,
        "citations_valid": int, "citations_total": int, "wrangler_r2": list, "wrangler_rank": dict, "faults": list,
    },
    "03_q9a_no_evidence": {
        "casebook": dict, "question": dict, "k": int, "provenance": dict, "corpus_check": dict, "top": dict,
        "scores": dict, "calibration": dict, "floor_sweep": dict, "gates": dict, "gated_decline": dict,
        "bypass": dict, "llm_judge": dict, "llm_judge_rows": list, "generation": dict, "overlap": dict,
        "validation": dict, "validation_rows": dict, "gate_order": list, "near_miss": dict,
    },
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_results_schema_and_report_numbers(name: str) -> None:
    results, report = load_results(name)
    assert results["experiment"] == name
    for key, kind in SCHEMAS[name].items():
        assert isinstance(results.get(key), kind), f"{name}: results.json[{key!r}] missing or not {kind}"
    missing = report_numbers_not_in_json(results, report)
    assert not missing, f"{name}: report.md states numbers that results.json does not hold: {sorted(missing)}"


def test_q5_figures_are_consistent() -> None:
    results, _ = load_results("02_q5_success")
    assert [row["rank"] for row in results["top"]] == list(range(1, results["k"] + 1))
    scores = [row["score"] for row in results["top"]]
    assert scores == sorted(scores, reverse=True)
    assert results["citations_valid"] == sum(c["valid"] for c in results["citations"]) <= results["citations_total"]
    assert all(c["deep_link"].startswith("https://") and "#:~:text=" in c["deep_link"]
               for c in results["citations"] if c["valid"])
    assert {row["page"] for row in results["wrangler_r2"]} == {"workers/wrangler/configuration",
                                                               "pages/functions/wrangler-configuration"}
    outcomes = {row["case"]: row for row in results["faults"]}
    assert outcomes["empty question"]["error_kind"] == "empty_question"
    assert outcomes["100 KB question"]["error_kind"] == "question_too_long"
    assert outcomes["backend times out"]["error_kind"] == "timeout"
    assert outcomes["answer cites nothing"]["error_kind"] == "no_citations"


def test_q9a_figures_are_consistent() -> None:
    results, report = load_results("03_q9a_no_evidence")
    assert results["corpus_check"]["absent_found"] == 0  # the corpus holds no KV allowance
    for lang, row in results["scores"].items():
        top = [r["score"] for r in results["top"][lang]]
        assert (row["q9a_min"], row["q9a_max"]) == (min(top), max(top))
        assert row["q5_above_q9a"] == (row["q5_rank_k"] > row["q9a_max"])
        assert row["gap"] == round(row["q5_rank_k"] - row["q9a_max"], 4)
    for lang, gates in results["gates"].items():
        oracle = gates["checklist"]
        assert (oracle["precision"], oracle["recall"], oracle["fp"], oracle["fn"]) == (1.0, 1.0, 0, 0)
        for scores in gates.values():
            assert scores["n"] == scores["tp"] + scores["fp"] + scores["fn"] + scores["tn"]
        chosen = results["calibration"][lang]["floor"]
        assert (gates["floor"]["tp"], gates["floor"]["fp"]) == (chosen["tp"], chosen["fp"])  # sweep = measurement
        # The report's gate table: one row per gate in the order measured (the oracle first), every gate once.
        order = results["gate_order"]
        assert order[:3] == ["checklist", "floor", "aspects"] and sorted(order) == sorted(gates)
        table = report.split(f"in-sample, {lang}:", 1)[1]
        assert [table.index(f"| {gate} ") for gate in order] == sorted(table.index(f"| {gate} ") for gate in order)
    for lang, validation in results["validation"].items():
        measured = results["gates"][lang]
        n = measured["floor"]["n"]
        for gate, block in validation.items():
            # In-sample figures are the measured gate's; out of sample, every question is its own fold.
            in_sample = block["in_sample"]["refusal_correctness"]
            assert (in_sample["k"], in_sample["n"]) == (measured[gate]["unanswerable_declined"],
                                                        measured[gate]["unanswerable"])
            assert block["folds"]["leave_one_out"] == n and block["folds"]["grouped_by_page"] < n
            for name in ("in_sample", "leave_one_out", "grouped_by_page"):
                figures = block[name]
                assert figures["refusal_near_miss"]["n"] + figures["refusal_absent_topic"]["n"] == in_sample["n"]
                for fig in figures.values():
                    lo, hi = fig["wilson95"]
                    assert lo <= fig["rate"] <= hi
        assert {row["question"] for row in results["near_miss"]["rows"][lang]} == set(results["near_miss"]["ids"])
        # The report's validation table: one row per gate and figure, each cell the stored rate as text.
        rows = results["validation_rows"][lang]
        assert [(row["gate"], row["figure"]) for row in rows] == [(gate, figure) for gate in VALIDATED_GATES
                                                                   for figure in FIGURES]
        for row in rows:
            block = validation[row["gate"]]
            for name in ("in_sample", "leave_one_out", "grouped_by_page"):
                fig = block[name][row["figure"]]
                assert row[name] == (f"{fig['k']}/{fig['n']} = {fig['rate']:.3f} "
                                     f"[{fig['wilson95'][0]:.2f}, {fig['wilson95'][1]:.2f}]")
            held_out = block["near_miss_held_out"]["refusal_near_miss"]
            assert (row["near_miss_held_out"] is None) == (row["figure"] != "refusal_near_miss")
            if row["near_miss_held_out"] is not None:
                assert row["near_miss_held_out"].startswith(f"{held_out['k']}/{held_out['n']} = ")
    for lang, decline in results["gated_decline"].items():
        if decline["status"] == "insufficient":
            assert (decline["generator_called"], decline["recorded_calls"]) == (False, 0), lang
    gen = results["generation"]
    assert gen["answered"] + gen["declined_by_gate"] + gen["declined_by_generator"] + gen["errors"] == gen["n"]
    assert gen["citations_valid"] <= gen["citations_total"]
    assert gen["generator_calls"] == gen["n"] - gen["declined_by_gate"]


def test_reports_exist_beside_results() -> None:
    for name in SCHEMAS:
        folder: Path = RESULTS_DIR / name
        if (folder / "results.json").is_file():
            assert (folder / "report.md").is_file()
