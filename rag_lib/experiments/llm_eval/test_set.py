"""The sealed test set (``data/test_set/``, issue #46 item 2): notebook 10's pipeline out of sample.

The benchmark's 91 questions are the **development set**: the gate was calibrated on them, the prompts
and the model for each task were chosen on them. The 66 questions of the test set were written about
pages drawn from the wide batch before the pipeline ever ran on them, and sealed by sha256
(``data/test_set/SHA256SUMS``). This experiment runs the narrowed and the claims pipelines on them, retrieved from the
whole wide batch, in three forms: ungated; behind the floor+aspects gate with the parameters fitted on
the whole development set; and that gate followed by the narrowed LLM judge (10's cascade). Nothing here
is fitted on the test set, so these are the only answer figures the workbook calls out of sample.

A sealed file that no longer matches its sha256 stops the run (:class:`TestSetChanged`): the set is
evaluated once per pipeline version, never relabelled to fit a run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from rag_lib.benchmark import Benchmark, load_benchmark
from rag_lib.core.config import DATA_DIR
from rag_lib.core.errors import WorkbookError
from rag_lib.corpus import load_chunks
from rag_lib.evaluation.claim_checks import SHEET_RUN, TEST_SET_CHECK, ClaimCheck, claim_check
from rag_lib.evaluation.key_facts import MAX_CHUNK_SHARE, KeyFacts, common_facts, load_key_facts
from rag_lib.evidence.narrowing import narrowed_generator
from rag_lib.experiments.llm_eval import Ungated, answer_figures, held_out_run, judge_after_gate
from rag_lib.experiments.llm_eval.findings import readers_brief
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.llm_eval import missing_text, set_figures
from rag_lib.question_sweeps.gates import (
    calibrate,
    chosen_gates,
    general_gate_key,
    measure_narrowed_judge,
)
from rag_lib.question_sweeps.generation import run_generation_eval
from rag_lib.results.gate_rows import LLMJudge
from rag_lib.results.local_llm import THEN_JUDGE, AnsweredQuestion, AnswerRow
from rag_lib.results.test_set import EXPERIMENT as TEST_SET
from rag_lib.results.test_set import FITTED_ON_DEV, SealedFile, TestSetResult, TestSetRun
from rag_lib.results.typed_json import decode, encode

TEST_SET_DIR = DATA_DIR / "test_set"
SEALED_FILES = ("questions.yaml", "key_facts.yaml", "drawn_pages.txt")
TEST_SET_ANSWERERS = ("narrowed", "claims")  # notebook 10's pipelines of the local answer model, in the order run


class TestSetChanged(WorkbookError):
    """A sealed file of the test set differs from the sha256 recorded when it was sealed."""


def sealed_files(folder: Path = TEST_SET_DIR) -> list[SealedFile]:
    """Each sealed file with its recorded sha256, checked against the file as it is now."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        raise TestSetChanged(f"{sums} is missing: the test set cannot be shown to be the sealed one. Restore it "
                             "from git (`git checkout -- data/test_set`).")
    recorded = dict(reversed(m.groups()) for m in re.finditer(r"^([0-9a-f]{64}) [ *](\S+)$",
                                                                 sums.read_text(encoding="utf-8"), re.M))
    out = []
    for name in SEALED_FILES:
        path = folder / name
        actual = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "(missing)"
        if recorded.get(name) != actual:
            raise TestSetChanged(f"{path} does not match its sealed sha256 ({recorded.get(name, 'not recorded')}; "
                                 f"now {actual}). The test set is evaluated as sealed, never edited to fit a run: "
                                 "restore it with `git checkout -- data/test_set` (see data/test_set/README.md).")
        out.append(SealedFile(name, actual))
    return out


def test_set_batch(folder: Path = TEST_SET_DIR) -> str:
    """The snapshot batch the test set's locators resolve on (``snapshot`` in its questions.yaml)."""
    return str(yaml.safe_load((folder / "questions.yaml").read_text(encoding="utf-8"))["snapshot"])


def test_set_workbench(dev: Workbench, folder: Path = TEST_SET_DIR) -> tuple[Workbench, KeyFacts]:
    """A workbench over the test set's batch, scored with the test set (its embedders shared with ``dev``),
    and the test set's key facts."""
    chunks = load_chunks(test_set_batch(folder))
    benchmark: Benchmark = load_benchmark(folder / "questions.yaml", chunks)
    key_facts = load_key_facts(folder / "key_facts.yaml", load_benchmark(folder / "questions.yaml"))
    return Workbench.over(chunks, benchmark, config=dev.config, embedders_of=dev), key_facts


def run_test_set(languages: Sequence[str] = ("zh", "en"), k: int | None = None, key: str = "dense") -> TestSetResult:
    """Notebook 10's narrowed and claims pipelines on the sealed test set (see the module docstring); notebook 10
    shows their rows beside the development set's (:func:`beside_development`)."""
    sealed = sealed_files()
    dev = Workbench()
    k = dev.config.top_k(k)
    wb, key_facts = test_set_workbench(dev)
    answerers = {name: narrowed_generator("answer_narrowed", dev.embedder(), claims=name == "claims")
                 for name in TEST_SET_ANSWERERS}
    # The answers first, then the judge: `make llm-runs` makes the missing calls in the order they are asked.
    ungated_runs = {(name, lang): run_generation_eval(wb, Ungated(), answerer, lang, k, key, key_facts)
                    for name, answerer in answerers.items() for lang in languages}
    judge = decode(LLMJudge, measure_narrowed_judge(wb, languages, k, key))
    rows: list[AnswerRow] = []
    runs: list[TestSetRun] = []
    gates: dict[str, dict[str, str | float | None]] = {}
    for lang in languages:
        calibration = calibrate(dev, lang, key, k)
        fitted = chosen_gates(calibration, dev)
        chosen = general_gate_key(fitted)
        gate = fitted[chosen]
        gates[lang] = {"gate": gate.name, **{p: calibration[chosen][p] for p in ("floor", "min_coverage")
                                             if p in calibration[chosen]}}
        rankings = {q.id: wb.rank(q.text(lang), key) for q in wb.benchmark}
        declined = {q.id: not gate.decide(q.text(lang), wb.evidence(rankings[q.id], k), rankings[q.id]).sufficient
                    for q in wb.benchmark}
        name = gate.name + FITTED_ON_DEV
        for answerer_name, answerer in answerers.items():
            ungated = ungated_runs[(answerer_name, lang)]
            recorded = {r["question"] for r in ungated["rows"] if r["error_kind"] != "replay_miss"}
            for result in (ungated, held_out_run(ungated, declined, name),
                           held_out_run(ungated, judge_after_gate(declined, judge.by_lang[lang]), name + THEN_JUDGE,
                                        declined)):
                figures = answer_figures(result, None if result is ungated else recorded, key_facts)
                rows.append(AnswerRow(**vars(figures), generator=answerer.label))
                runs.append(TestSetRun(lang, result["gate"], [AnsweredQuestion(**r) for r in result["rows"]],
                                       answerer.label))
    return TestSetResult(
        languages=list(languages), k=k, retriever=key, batch=test_set_batch(), sealed=sealed,
        n_questions=len(wb.benchmark), n_answerable=len(wb.benchmark.questions(answerable=True)),
        answerers={name: answerer.label for name, answerer in answerers.items()},
        pipelines={name: answerer.describe() for name, answerer in answerers.items()}, gates=gates,
        rows=rows,
        runs=runs, embedder=dev.embedder().describe(),
        common_key_facts=[f"{f.describe()} ({share:.0%})" for f, share in common_facts(key_facts, wb.chunks)],
        claims_check=test_set_claim_check(runs, answerers["claims"].label),
    )


def test_set_claim_check(runs: Sequence[TestSetRun], label: str, folder: Path = TEST_SET_CHECK) -> ClaimCheck | None:
    """The blind readers' check of every answer the claims pipeline (``label``) showed ungated, or ``None`` before
    both readers' files are in ``folder``."""
    if not all((folder / f"reader_{r}.yaml").is_file() for r in ("a", "b")):
        return None
    rows = {f"{run.lang}:{row.question}": encode(row) for run in runs
            if run.generator == label and run.gate == SHEET_RUN for row in run.rows}
    return claim_check(rows, folder, ())


def findings(result: TestSetResult) -> list[str]:
    """Per language and gate: the test set's figures (notebook 10 sets them beside the development set's)."""
    out = []
    for row in result.rows:
        if row.missing == row.n:
            out.append(f"{row.generator}, {row.lang}, {row.gate}: no recorded call yet on the test set ({row.n} "
                       f"questions missing; `make llm-runs RUNS={TEST_SET.name}` makes them).")
            continue
        out += [f"Test set, out of sample ({row.generator}, {row.lang}, {row.gate}){missing_text(row)}: "
                f"{set_figures(row)[part]}." for part in ("correct", "refusal")]
    if result.claims_check is not None:
        check = result.claims_check
        out.append(readers_brief(check, "claims", result.languages, "the sealed test set, ungated, out of sample")
                   + f" Against the answers both call true and complete, the key-fact measure's 'correct' has "
                   f"{check.agreement.keyfact_text()} here.")
    if result.common_key_facts:
        out.append(f"{len(result.common_key_facts)} checkable key facts of the test set are stated by more than "
                   f"{MAX_CHUNK_SHARE:.0%} of the wide batch's chunks ({'; '.join(result.common_key_facts)}): the "
                   "development set's loader refuses such facts, but the test set is sealed, so they stay and "
                   "'correct' is lenient on their questions.")
    out.append(f"Caveats: the test set has {result.n_answerable} answerable questions of {result.n_questions} per "
               "language, so each interval (Wilson 95%) is wide; 'correct' is the key-fact measure (each checkable key "
               "fact stated); the blind readers are two LLM helper sessions, not people; the "
               "gate's parameters were fitted on the development set only, and retrieval ranks the whole "
               f"{result.batch} batch.")
    return out


__all__ = ["FITTED_ON_DEV", "TestSetChanged", "findings", "run_test_set", "sealed_files", "test_set_workbench"]
