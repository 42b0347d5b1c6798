"""14_test_set's committed results (the sealed test set; not re-run by `make test`, which would embed the wide batch):
they were made from the sealed files as they are, their figures recount from their own per-question rows, and their
Findings regenerate from them."""

from __future__ import annotations

import pytest

from rag_lib.benchmark import load_benchmark
from rag_lib.core.config import REPO_ROOT
from rag_lib.evaluation.key_facts import load_key_facts
from rag_lib.experiments.llm_eval import answer_figures
from rag_lib.experiments.llm_eval.test_set import TEST_SET_DIR, findings, sealed_files
from rag_lib.results.local_llm import AnswerRow
from rag_lib.results.test_set import TestSetResult
from rag_lib.results.typed_json import encode

TestSetResult.__test__ = False  # a result type, not a test class (its name starts with "Test")


@pytest.fixture(scope="module")
def stored() -> TestSetResult:
    result = TestSetResult.find("14_test_set", REPO_ROOT / "results")
    if result is None:
        pytest.skip("results/14_test_set not written yet (make reproduce RUNS=14_test_set)")
    return result


def test_the_run_used_the_sealed_files(stored):
    assert stored.sealed == sealed_files()  # raises TestSetChanged if a sealed file was edited


def test_every_row_recounts_from_its_per_question_rows(stored):
    key_facts = load_key_facts(TEST_SET_DIR / "key_facts.yaml", load_benchmark(TEST_SET_DIR / "questions.yaml"))
    runs = {(r.generator, r.lang, r.gate): r for r in stored.runs}
    assert len(runs) == len(stored.runs) == len(stored.rows)
    ungated = {(generator, lang): {q.question for q in runs[generator, lang, "ungated"].rows
                                   if q.error_kind != "replay_miss"}
               for generator in stored.answerers.values() for lang in stored.languages}
    for row in stored.rows:
        run = runs[row.generator, row.lang, row.gate]
        result = {"lang": row.lang, "gate": row.gate, "n": len(run.rows), "rows": encode(run.rows),
                  "generator": {"model": row.model, "backend": row.backend}}
        recorded = None if row.gate == "ungated" else ungated[row.generator, row.lang]
        again = AnswerRow(**vars(answer_figures(result, recorded, key_facts)), generator=row.generator)
        assert again == row, (row.generator, row.lang, row.gate)


def test_the_findings_regenerate(stored):
    import json

    data = json.loads((REPO_ROOT / "results" / "14_test_set" / "results.json").read_text(encoding="utf-8"))
    assert data["findings"] == findings(stored)
    assert any("out of sample" in f and "Test set" in f for f in data["findings"]) or all(
        "no recorded call yet" in f or f.startswith(("Caveats", str(len(stored.common_key_facts))))
        for f in data["findings"])


def test_the_blind_check_recounts_from_the_stored_answers(stored):
    from rag_lib.experiments.llm_eval.test_set import test_set_claim_check

    again = test_set_claim_check(stored.runs, stored.answerers["claims"])
    assert again == stored.claims_check
    if again is not None:  # every drawn answer is one the pipeline showed: the sheet was drawn from these runs
        assert again.compared == again.drawn
