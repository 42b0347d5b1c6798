"""The baseline is measured once (01) and reused: 06 reads it, checked against its own model and inputs."""

from __future__ import annotations

import pytest
from typed_results import partial_result

from rag_lib.core.config import RESULTS_DIR, RunConfig
from rag_lib.results.bakeoff import BakeoffResult, Q7RankRow
from rag_lib.results.baseline import BaselineMeasures
from rag_lib.results.provenance import RetrieverProvenance, retriever_provenance
from rag_lib.results.store import MissingResult

BASE = f"dense:{RunConfig.from_settings().embedder}"
PROVENANCE = {"retriever": "dense", "embedder": {"model": RunConfig.from_settings().embedder, "version": "1"}}


def _bakeoff(**changes: object) -> BakeoffResult:
    given: dict[str, object] = {
        "configurations": [BASE, "bm25"], "configurations_text": f"{BASE}, bm25",
        "provenance": {BASE: retriever_provenance(PROVENANCE), "bm25": RetrieverProvenance("bm25")},
        "per_question": {f"{BASE} [zh]": {"a01": {"mrr": 1 / 3, "hit@5": 1.0}, "a02": {"mrr": 0.0625, "hit@5": 0.0}},
                         "bm25 [zh]": {"a01": {"mrr": 1.0, "hit@5": 1.0}, "a02": {"mrr": 1.0, "hit@5": 1.0}}},
        "q7_rows": [Q7RankRow(BASE, "original", "zh", 20, None, 10, 1),
                    Q7RankRow("bm25", "original", "zh", 1, 2, 3, 4)],
        "inputs_sha256": "abc",
    }
    return partial_result(BakeoffResult, **{**given, **changes})


def test_the_baseline_is_the_bakeoffs_default_configuration_at_full_precision() -> None:
    baseline = BaselineMeasures.from_bakeoff(_bakeoff())
    assert baseline.configuration == BASE and baseline.provenance == retriever_provenance(PROVENANCE)
    assert baseline.scores("zh", ["a02", "a01"], "mrr") == [0.0625, 1 / 3]  # the order asked for, unrounded
    assert baseline.q7_ranks(["original"], ["zh"]) == {"original": {"zh": {"C1": 20, "C2": None, "C3": 10,
                                                                          "C4": 1}}}
    baseline.check(PROVENANCE, "abc", ["zh"], ["a01", "a02"], ["original"])  # measured as asked: no error


def test_a_bakeoff_without_the_baseline_names_what_it_ran_and_the_fix() -> None:
    with pytest.raises(MissingResult, match=rf"did not run the baseline {BASE} \(it ran bm25\); put its embedder "
                                            r"back .*reproduce 01_embedding_bakeoff"):
        BaselineMeasures.from_bakeoff(_bakeoff(configurations=["bm25"], configurations_text="bm25"))


@pytest.mark.parametrize(("args", "problem"), [
    (({"retriever": "dense", "embedder": {"model": "x"}}, "abc", ["zh"], ["a01"], ["original"]),
     "another model or version"),
    ((PROVENANCE, "def", ["zh"], ["a01"], ["original"]), "other chunks or benchmark labels"),
    ((PROVENANCE, "abc", ["zh", "en"], ["a01"], ["original"]), r"lacks 1 question\(s\) in en \(a01\)"),
    ((PROVENANCE, "abc", ["zh"], ["a01", "a03"], ["original"]), r"lacks 1 question\(s\) in zh \(a03\)"),
    ((PROVENANCE, "abc", ["zh"], ["a01"], ["original", "terms"]), "lacks Q7's terms phrasing"),
])
def test_a_baseline_measured_otherwise_is_refused_naming_why_and_the_run(args: tuple, problem: str) -> None:
    with pytest.raises(MissingResult, match=rf"cannot be compared with this run: .*{problem}.*"
                                            r"`python -m rag_lib\.runner\.reproduce 01_embedding_bakeoff`"):
        BaselineMeasures.from_bakeoff(_bakeoff()).check(*args)


def test_a_mechanism_run_without_a_stored_baseline_says_which_run_to_execute(monkeypatch, tmp_path) -> None:
    from rag_lib.experiments.mechanisms import run_mechanism

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    with pytest.raises(MissingResult, match=r"01_embedding_bakeoff/results\.json is missing: the topk mechanism "
                                            r"run \(its baseline\) reads it; run `python -m rag_lib\.runner"):
        run_mechanism("topk", languages=("en",), use_llm=False, n_boot=10)


@pytest.mark.skipif(not (RESULTS_DIR / "01_embedding_bakeoff" / "results.json").is_file(),
                    reason="run `make reproduce` first")
def test_the_stored_baseline_equals_a_fresh_measurement_bit_for_bit() -> None:
    """What 06 pairs its variants with is what ranking the baseline again gives, to the last bit."""
    from rag_lib.experiments.mechanisms import BaselineDense
    from rag_lib.experiments.mechanisms.run import _baseline_scores, variant_scores
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench()
    stored = BaselineMeasures.read(RESULTS_DIR)
    questions = wb.benchmark.questions(answerable=True)
    stored.check(wb.provenance(BASE), wb.inputs_sha256, ["zh", "en"], [q.id for q in questions], ["original"])
    rank = BaselineDense(wb)
    for lang in ("zh", "en"):
        fresh = variant_scores(wb, {q.id: rank(q.text(lang)) for q in questions}, wb.config.k)
        assert _baseline_scores(stored, lang, [q.id for q in questions], wb.config.k) == fresh
