"""The one reader of stored results: declared runs only, and a missing figure names the run to execute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mechanism_fixtures import provenance
from typed_results import partial_result

from rag_lib.core.config import RESULTS_DIR, RunConfig
from rag_lib.results.bakeoff import BakeoffResult, Q7RankRow
from rag_lib.results.baseline import q7_baseline_disagreements
from rag_lib.results.mechanism import EXPERIMENT as MECHANISMS
from rag_lib.results.mechanism import (
    BaselineFigures,
    LLMVariant,
    MechanismResult,
    RerankerVariant,
    VariantResult,
    mechanism_results,
)
from rag_lib.results.provenance import LLMDescription
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.runs import declared_experiments, planned_runs
from rag_lib.results.store import MissingResult, find_result, read_result, result_type


def _write(root: Path, name: str, payload: object) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "results.json").write_text(json.dumps(payload), encoding="utf-8")


def test_a_missing_result_is_none_to_find_and_an_error_to_read(tmp_path: Path) -> None:
    assert find_result("03_q9a_no_evidence", tmp_path) is None
    with pytest.raises(MissingResult, match=r"03_q9a_no_evidence/results\.json is missing: the gate reads it; "
                                            r"run `python -m rag_lib\.runner\.reproduce 03_q9a_no_evidence`"):
        read_result("03_q9a_no_evidence", tmp_path, needed_by="the gate")


def test_a_results_file_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "01_x", [1, 2])
    with pytest.raises(MissingResult, match="holds list, not an object"):
        find_result("01_x", tmp_path)


def test_mechanism_runs_are_the_declared_ones_never_a_leftover_folder(tmp_path: Path) -> None:
    declared = [run.name for run in sorted(MECHANISMS.runs(), key=lambda r: r.name)]
    assert declared == sorted(declared) and len(declared) >= 2
    variant = partial_result(VariantResult, name="v", evidence_k=7)
    written = partial_result(MechanismResult, mechanism="m", status="ran", variants=[variant],
                             provenance=provenance(k=3, n_answerable=3))
    _write(tmp_path, declared[0], written.to_json())
    _write(tmp_path, MECHANISMS.run_name("removed"), partial_result(MechanismResult, mechanism="old").to_json())
    found, missing = mechanism_results(tmp_path)
    assert [(name, r.mechanism) for name, r in found.items()] == [(declared[0], "m")] and missing == declared[1:]
    stored = found[declared[0]]
    assert stored == written and stored.n_answerable == 3 and stored.k == 3 and stored.variants[0].evidence_k == 7
    # a variant without evidence_k, or a run without its k, is an error naming the run and the field, never the
    # run's k guessed
    no_evidence_k, no_k = written.to_json(), written.to_json()
    del no_evidence_k["variants"][0]["evidence_k"], no_k["provenance"]["baseline"]["k"]
    for folder, data, lacks in (("a", no_evidence_k, r"variants\[0\]: lacks evidence_k"),
                                ("b", no_k, r"provenance\.baseline: lacks k")):
        _write(tmp_path / folder, declared[0], data)
        with pytest.raises(MissingResult, match=rf"results of {declared[0]} do not have the declared shape \({lacks}"):
            MechanismResult.read(declared[0], tmp_path / folder)


def test_a_stored_file_of_another_shape_names_what_it_lacks_and_the_run(tmp_path: Path) -> None:
    name = sorted(MECHANISMS.runs(), key=lambda r: r.name)[0].name
    _write(tmp_path, name, {"status": "ran", "extra": 1, "experiment": name, "findings": []})
    with pytest.raises(MissingResult, match=rf"results of {name} lack baseline, .*variants_text and have fields "
                                            rf"MechanismResult does not declare: extra; re-run it .*reproduce {name}"):
        MechanismResult.read(name, tmp_path)


def test_a_typed_result_reads_back_as_written(tmp_path: Path) -> None:
    row = Q7RankRow("bm25", "original", "zh", 1, 2, None, 4)
    written = partial_result(BakeoffResult, k=5, languages=["zh"], q7_rows=[row],
                             per_question={"bm25 [zh]": {"q01": {"mrr": 0.5}}})
    _write(tmp_path, "01_embedding_bakeoff", {"experiment": "01_embedding_bakeoff", **written.to_json()})
    assert BakeoffResult.read("01_embedding_bakeoff", tmp_path) == written
    assert BakeoffResult.find("01_embedding_bakeoff", tmp_path) == written
    assert Q7DiagnosisResult.find("05_q7_diagnosis", tmp_path) is None


def test_a_variant_label_names_the_llm_that_produced_it() -> None:
    plain = partial_result(VariantResult, name="k=10", evidence_k=10)
    llm = partial_result(VariantResult, name="llm", evidence_k=5,
                         provenance=LLMVariant(LLMDescription("llama_cpp", "qwen2.5-coder-0.5b", None, 1)))
    reranker = partial_result(VariantResult, name="r", evidence_k=5, provenance=RerankerVariant(
        {"backend": "llm_yes_no", "revision": "q1.5b"}, questions="all", strata=None))
    assert plain.label("topk") == "topk: k=10"
    assert llm.label("query_rewrite") == "query_rewrite: llm (qwen2.5-coder-0.5b)"
    assert reranker.label("reranker") == "reranker: r (q1.5b)"


def test_a_stale_baseline_is_named_with_the_runs_that_disagree(tmp_path: Path) -> None:
    mechanism_run = sorted(MECHANISMS.runs(), key=lambda r: r.name)[0].name
    _write(tmp_path, "01_embedding_bakeoff", partial_result(BakeoffResult, q7_rows=[
        Q7RankRow(f"dense:{RunConfig.from_settings().embedder}", "original", "zh", 20, 28, 10, 1),
        Q7RankRow("dense:other", "original", "zh", 1, 2, 3, 4),
    ]).to_json())
    _write(tmp_path, mechanism_run, partial_result(MechanismResult, status="ran", baseline=BaselineFigures(
        q7={"original": {"zh": {"C1": 20, "C2": 28, "C3": 10, "C4": 1}}}, benchmark={})).to_json())
    assert q7_baseline_disagreements(tmp_path) == []
    _write(tmp_path, "05_q7_diagnosis", partial_result(Q7DiagnosisResult, rank_rows=[
        {"source": "ours", "phrasing": "original", "language": "zh", "C1": 20, "C2": 29, "C3": 10, "C4": 1},
        {"source": "casebook", "phrasing": "original", "language": "zh", "C1": 36, "C2": 1, "C3": 2, "C4": 3},
    ]).to_json())
    assert q7_baseline_disagreements(tmp_path) == [
        f"Q7 original (zh): 01_embedding_bakeoff (20, 28, 10, 1); 05_q7_diagnosis (20, 29, 10, 1); "
        f"{mechanism_run} (20, 28, 10, 1)"]


@pytest.mark.skipif(not (RESULTS_DIR / "01_embedding_bakeoff" / "results.json").is_file(),
                    reason="run `make reproduce` first")
def test_the_committed_runs_report_one_baseline() -> None:
    """01, 05 and every mechanism run compute the baseline's Q7 ranks separately: they must agree."""
    assert q7_baseline_disagreements(RESULTS_DIR) == []


def test_every_committed_result_reads_back_as_its_declared_type() -> None:
    """The stored shape of every run is its dataclass: no field missing, none undeclared."""
    runs = [run for run in planned_runs() if (RESULTS_DIR / run.name / "results.json").is_file()]
    assert [e.notebook for e in declared_experiments() if e.result is None] == ["09_explore"]  # it stores nothing
    for run in runs:
        result_type(run.name).read(run.name, RESULTS_DIR)
