"""The baseline (dense retrieval, default embedder) as measured once, and where runs report it.

01's bake-off measures every configuration, the baseline among them; :class:`BaselineMeasures` is
its baseline as stored there (each answerable question's measures at full precision, Q7's piece
ranks). Every mechanism run (06) compares against it instead of measuring the baseline again, and
the summary (08) shows its Q7 ranks. 05 ranks Q7 itself, because it shows the ranking (its Top-10);
:func:`q7_baseline_disagreements` holds the stored runs to one answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.core.config import RunConfig
from rag_lib.results.bakeoff import EXPERIMENT as BAKEOFF
from rag_lib.results.bakeoff import BakeoffResult
from rag_lib.results.mechanism import mechanism_results
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.q7_diagnosis import EXPERIMENT as DIAGNOSIS
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.store import MissingResult, rerun_command
from rag_lib.results.typed_json import encode

Q7Ranks = dict[tuple[str, str], tuple[int | None, ...]]  # (phrasing, language) -> first rank of C1..C4


def baseline_label(embedder: str | None = None) -> str:
    """The baseline's run label: dense retrieval with ``embedder`` (default: the workbook's
    ``embedding.default``, read when called; a run with a workbench passes ``wb.config.embedder``)."""
    return f"dense:{embedder or RunConfig.from_settings().embedder}"


def bakeoff_q7(bakeoff: BakeoffResult, label: str) -> dict[str, dict[str, dict[str, int | None]]]:
    """``{phrasing: {lang: {"C1": first rank, …}}}`` of configuration ``label`` in a bake-off's Q7 rows."""
    q7: dict[str, dict[str, dict[str, int | None]]] = {}
    for row in bakeoff.q7_rows:
        if row.configuration == label:
            q7.setdefault(row.phrasing, {})[row.language] = row.by_piece()
    return q7


@dataclass(frozen=True)
class BaselineMeasures:
    """The baseline's measurements as 01 stored them, for runs that compare against the baseline.

    Parameters
    ----------
    configuration : str
        The baseline's run label (``dense:<default embedder>``).
    provenance : RetrieverProvenance
        Retriever and embedder (model, backend, version, checksum) that produced it.
    inputs_sha256 : str
        The workbench inputs it was measured on (:attr:`rag_lib.pipeline.workbench.Workbench.inputs_sha256`).
    per_question : dict
        ``{lang: {question id: {measure: value}}}``, every answerable question, full precision.
    q7 : dict
        ``{phrasing: {lang: {"C1": first rank, …}}}``.
    """

    configuration: str
    provenance: RetrieverProvenance
    inputs_sha256: str
    per_question: dict[str, dict[str, dict[str, float]]]
    q7: dict[str, dict[str, dict[str, int | None]]]

    @classmethod
    def from_bakeoff(cls, bakeoff: BakeoffResult, configuration: str | None = None) -> Self:
        """The baseline rows of a bake-off; a bake-off that did not run the baseline is an error."""
        label = configuration or baseline_label()
        if label not in bakeoff.configurations:
            raise MissingResult(f"{BAKEOFF.name} did not run the baseline {label} (it ran "
                                f"{bakeoff.configurations_text or 'nothing'}); put its embedder back in 01's "
                                f"parameters and re-run it (`{rerun_command(BAKEOFF.name)}`).")
        prefix = f"{label} ["
        per_question = {name[len(prefix):-1]: rows for name, rows in bakeoff.per_question.items()
                        if name.startswith(prefix)}
        return cls(label, bakeoff.provenance[label], bakeoff.inputs_sha256, per_question, bakeoff_q7(bakeoff, label))

    @classmethod
    def read(cls, root: Path | None = None, needed_by: str = "this step", configuration: str | None = None) -> Self:
        """The baseline (``configuration``, default :func:`baseline_label`) as 01 stored it under ``root``
        (``RAG_RESULTS_DIR``)."""
        return cls.from_bakeoff(BakeoffResult.read(BAKEOFF.name, root, needed_by), configuration)

    def check(self, provenance: Mapping[str, Any], inputs_sha256: str, languages: Sequence[str],
              question_ids: Sequence[str], phrasings: Sequence[str]) -> None:
        """Fail, naming the run to repeat, unless this baseline was measured with ``provenance`` on
        these inputs, in every one of ``languages``, for every question and Q7 phrasing asked for."""
        problems = []
        if json.loads(json.dumps(provenance)) != encode(self.provenance):  # as stored (tuples become lists)
            problems.append("it was measured with another model or version")
        if inputs_sha256 != self.inputs_sha256:
            problems.append("it was measured on other chunks or benchmark labels")
        for lang in languages:
            missing = sorted(set(question_ids) - set(self.per_question.get(lang, {})))
            if missing:
                more = "…" if len(missing) > 3 else ""
                problems.append(f"it lacks {len(missing)} question(s) in {lang} ({', '.join(missing[:3])}{more})")
            absent = [p for p in phrasings if lang not in self.q7.get(p, {})]
            if absent:
                problems.append(f"it lacks Q7's {', '.join(absent)} phrasing(s) in {lang}")
        if problems:
            raise MissingResult(f"the baseline stored by {BAKEOFF.name} cannot be compared with this run: "
                                f"{'; '.join(problems)}. Re-run it (`{rerun_command(BAKEOFF.name)}`).")

    def scores(self, lang: str, question_ids: Sequence[str], measure: str) -> list[float]:
        """``measure`` of each question, in the order given."""
        return [self.per_question[lang][qid][measure] for qid in question_ids]

    def q7_ranks(self, phrasings: Sequence[str], languages: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
        """Q7's piece ranks, phrasing by phrasing, language by language (the order asked for)."""
        return {p: {lang: dict(self.q7[p][lang]) for lang in languages} for p in phrasings}


def baseline_q7_ranks(root: Path | None = None) -> dict[str, Q7Ranks]:
    """The baseline's (dense, default embedder) Q7 piece ranks as each run that reports them stored them:
    01 (its row for the default configuration), 05 (its own rows) and every mechanism run (01's, as it read them).

    01 and 05 rank Q7 each; :func:`q7_baseline_disagreements` says where any two stored runs differ.
    """
    def ranks(row: Mapping[str, Any]) -> tuple[int | None, ...]:
        return tuple(row.get(p) for p in Q7_PIECES)

    def flat(q7: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Q7Ranks:  # {phrasing: {lang: {piece: rank}}}
        return {(phrasing, lang): ranks(by_piece) for phrasing, by_lang in q7.items()
                for lang, by_piece in by_lang.items()}

    out: dict[str, Q7Ranks] = {}
    bakeoff = BakeoffResult.find(BAKEOFF.name, root)
    diagnosis = Q7DiagnosisResult.find(DIAGNOSIS.name, root)
    if bakeoff is not None:
        out[BAKEOFF.name] = flat(bakeoff_q7(bakeoff, baseline_label()))
    if diagnosis is not None:
        out[DIAGNOSIS.name] = {(r["phrasing"], r["language"]): ranks(r) for r in diagnosis.rank_rows
                                  if r.get("source") == "ours"}
    for name, mechanism in mechanism_results(root)[0].items():
        if mechanism.ran:
            out[name] = flat(mechanism.baseline.q7)
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
