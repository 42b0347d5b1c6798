"""Stored results: the one reader of the ``results/<run>/results.json`` files that runs wrote.

Every consumer of another experiment's figures (the summary notebook, ``ask``, ``make check``)
reads through here, so a missing or stale file fails with one message that names the run to
execute. Runs are the ones declared in ``workbook.yaml`` (``reproduce.notebooks``), never found
by globbing folder names: a leftover folder of a removed run is not read, and a declared run that
has not written its results is reported as missing.

The mechanism runs (notebook 06) are the one family read field by field, so they have typed
views (:class:`MechanismResult`, :class:`VariantResult`); the others are read by dotted path
(:meth:`StoredResult.get`, the same paths ``results/expected.yaml`` uses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.config import NOTEBOOKS_DIR, TOP_K, results_dir, run_config, settings, shown_path
from rag_lib.errors import WorkbookError
from rag_lib.evaluation.metrics import HIT
from rag_lib.io import read_json
from rag_lib.workbook.report import lookup

RESULTS_FILE = "results.json"
MECHANISM_NOTEBOOK = "06_q7_mechanism"
PIECES = ("C1", "C2", "C3", "C4")
# What a mechanism run compares per variant and language (coverage@evidence: the share of gold pieces
# in the evidence the variant sends, its own k).
MECHANISM_METRICS = (HIT.name, "coverage@10", "mrr", "coverage@evidence")


class MissingResult(WorkbookError):
    """A run's ``results.json`` is absent, unreadable, or lacks a figure a reader needs."""


@dataclass(frozen=True)
class NotebookRun:
    """One execution of a notebook: its output name, source and papermill parameters."""

    name: str
    notebook: str
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.notebook}.py"


def planned_runs() -> list[NotebookRun]:
    """The runs listed in ``workbook.yaml``, in order."""
    return [
        NotebookRun(r["name"], r["notebook"], dict(r.get("parameters") or {}))
        for r in settings()["reproduce"]["notebooks"]
    ]


def runs_of(notebook: str) -> list[NotebookRun]:
    """The declared runs of ``notebook``, in name order (the order the summary tables have always had)."""
    return sorted((r for r in planned_runs() if r.notebook == notebook), key=lambda r: r.name)


@dataclass(frozen=True)
class StoredResult:
    """One run's ``results.json`` as read from disk."""

    name: str
    path: Path
    data: dict[str, Any]

    def get(self, dotted: str) -> Any:
        """The value at ``dotted`` (``calibration.zh.floor_aspects``, ``rows[language=zh].hit@5``).

        Raises :class:`MissingResult` naming the run to re-execute when the path is not there.
        """
        try:
            return lookup(self.data, dotted)
        except (KeyError, IndexError, TypeError) as exc:
            raise MissingResult(f"{shown_path(self.path)} has no {dotted} ({exc}); re-run {self.name} "
                                f"(`python -m rag_lib.workbook.reproduce {self.name}`).") from exc


def find_result(name: str, root: Path | None = None) -> StoredResult | None:
    """The stored result of run ``name`` under ``root`` (``RAG_RESULTS_DIR``), or ``None`` if it has not run."""
    path = (root or results_dir()) / name / RESULTS_FILE
    if not path.is_file():
        return None
    data = read_json(path)  # a damaged file is named with its line by read_json
    if not isinstance(data, dict):
        raise MissingResult(f"{shown_path(path)} holds {type(data).__name__}, not an object; re-run {name}.")
    return StoredResult(name, path, data)


def read_result(name: str, root: Path | None = None, needed_by: str = "this step") -> StoredResult:
    """Like :func:`find_result`, but a run that has not written its results is an error that says so."""
    found = find_result(name, root)
    if found is None:
        path = (root or results_dir()) / name / RESULTS_FILE
        raise MissingResult(f"{shown_path(path)} is missing: {needed_by} reads it; run "
                            f"`python -m rag_lib.workbook.reproduce {name}` (or `make reproduce`).")
    return found


# --------------------------------------------------------------------------- fields read across runs
def context_cut(result: dict[str, Any], lang: str) -> tuple[dict[str, Any], dict[str, Any], float]:
    """From a chunking result (notebook 11): the Top-5 and Top-20 context rows of ``lang`` and the share of
    tokens the Top-5 saves (read by 11's findings and by the summary)."""
    small, large = (next(r for r in result["context_rows"] if r["language"] == lang and r["k"] == k) for k in (5, 20))
    return small, large, 1 - small["tokens per question"] / large["tokens per question"]


Q7Ranks = dict[tuple[str, str], tuple[int | None, ...]]  # (phrasing, language) -> first rank of C1..C4


def baseline_q7_ranks(root: Path | None = None) -> dict[str, Q7Ranks]:
    """The baseline's (dense, default embedder) Q7 piece ranks as each run that reports them stored them:
    01 (its row for the default configuration), 05 (its own rows) and every mechanism run (its baseline).

    They are three computations of one ranking; :func:`q7_baseline_disagreements` says where they differ.
    """
    def ranks(row: dict[str, Any]) -> tuple[int | None, ...]:
        return tuple(row.get(p) for p in PIECES)

    out: dict[str, Q7Ranks] = {}
    bakeoff, diagnosis = find_result("01_embedding_bakeoff", root), find_result("05_q7_diagnosis", root)
    if bakeoff is not None:
        default = f"dense:{run_config().embedder}"
        out[bakeoff.name] = {(r["phrasing"], r["language"]): ranks(r) for r in bakeoff.data["q7_rows"]
                             if r["configuration"] == default}
    if diagnosis is not None:
        out[diagnosis.name] = {(r["phrasing"], r["language"]): ranks(r) for r in diagnosis.data["rank_rows"]
                               if r.get("source") == "ours"}
    for run in runs_of(MECHANISM_NOTEBOOK):
        stored = find_result(run.name, root)
        if stored is not None and "baseline" in stored.data:
            out[run.name] = {(phrasing, lang): ranks(by_piece) for phrasing, by_lang in
                             stored.data["baseline"]["q7"].items() for lang, by_piece in by_lang.items()}
    return out


def q7_baseline_disagreements(root: Path | None = None) -> list[str]:
    """Every (phrasing, language) whose baseline Q7 ranks differ between two runs that report them."""
    runs = baseline_q7_ranks(root)
    problems = []
    for key in sorted({k for ranks in runs.values() for k in ranks}):
        seen = {name: ranks[key] for name, ranks in runs.items() if key in ranks}
        if len(set(seen.values())) > 1:
            problems.append(f"Q7 {key[0]} ({key[1]}): " + "; ".join(f"{n} {v}" for n, v in seen.items()))
    return problems


# --------------------------------------------------------------------------- mechanism runs (06)
@dataclass(frozen=True)
class VariantResult:
    """One variant of a mechanism run, as stored (see ``run_mechanism``)."""

    name: str
    evidence_k: int
    q7: dict[str, dict[str, dict[str, int | None]]]  # phrasing -> language -> piece -> first rank
    q7_failures: dict[str, dict[str, str]]  # phrasing -> language -> why it failed
    benchmark: dict[str, dict[str, dict[str, Any]]]  # language -> metric -> comparison
    compared_on: dict[str, int]  # language -> questions, where fewer than all were ranked
    failures: dict[str, dict[str, Any]]  # language -> failed LLM calls
    provenance: dict[str, Any]

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> VariantResult:
        return cls(name=row["name"], evidence_k=int(row.get("evidence_k") or TOP_K), q7=row.get("q7", {}),
                   q7_failures=row.get("q7_failures", {}), benchmark=row.get("benchmark", {}),
                   compared_on=row.get("compared_on", {}), failures=row.get("failures", {}),
                   provenance=row.get("provenance", {}))

    def label(self, mechanism: str) -> str:
        """``mechanism: variant``, with the model that produced it for LLM variants."""
        reranker = self.provenance.get("reranker", {})
        model = self.provenance.get("llm", {}).get("model") or (
            reranker.get("revision") if reranker.get("backend") == "llm_yes_no" else None)
        return f"{mechanism}: {self.name}" + (f" ({model})" if model else "")


@dataclass(frozen=True)
class MechanismResult:
    """One run of notebook 06: a mechanism's variants against the baseline."""

    run: str
    mechanism: str
    status: str  # "ran" or "unavailable"
    variants: list[VariantResult]
    n_answerable: int | None

    @property
    def ran(self) -> bool:
        return self.status == "ran"

    @classmethod
    def from_stored(cls, stored: StoredResult) -> MechanismResult:
        data = stored.data
        try:
            return cls(run=stored.name, mechanism=data["mechanism"], status=str(data.get("status")),
                       variants=[VariantResult.from_json(v) for v in data.get("variants", [])],
                       n_answerable=data.get("provenance", {}).get("n_answerable"))
        except (KeyError, TypeError, ValueError) as exc:
            raise MissingResult(f"{shown_path(stored.path)} is not a mechanism result ({exc!r}); re-run "
                                f"{stored.name}.") from exc


def mechanism_results(root: Path | None = None) -> tuple[list[MechanismResult], list[str]]:
    """The declared mechanism runs that have results, and the names of those that have none."""
    found, missing = [], []
    for run in runs_of(MECHANISM_NOTEBOOK):
        stored = find_result(run.name, root)
        if stored is None:
            missing.append(run.name)
        else:
            found.append(MechanismResult.from_stored(stored))
    return found, missing
