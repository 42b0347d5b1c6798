"""08's Q7 rows: the side-by-side table of C1–C4's first ranks (baseline, every mechanism variant, every
recovery suggestion), the baseline's ties at the Top-10 cut, and which rows put every piece inside it."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.experiments.summary.inputs import SummaryInputs
from rag_lib.presentation.side_by_side import BOLD_WITHIN
from rag_lib.results.bakeoff import EXPERIMENT as BAKEOFF
from rag_lib.results.baseline import bakeoff_q7, baseline_label
from rag_lib.results.mechanism import MechanismResult
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.summary import Q7EveryPhrasing, Q7Note, Q7Ranks, Q7TiedRanks, SideBySideRow

# BOLD_WITHIN: the Top-10 cut of the Q7 tables (rag_lib.presentation.side_by_side), not the retrieval k.


def side_by_side(lang: str, inputs: SummaryInputs) -> list[SideBySideRow]:
    """Rows: baseline, each mechanism variant, each recovery suggestion; columns: first rank of C1–C4."""
    rows: list[SideBySideRow] = []
    if inputs.bakeoff is not None:
        baseline = bakeoff_q7(inputs.bakeoff, baseline_label()).get("original", {}).get(lang)
        if baseline is None:
            raise KeyError(f"{BAKEOFF.name} has no Q7 row for the default embedder ({lang}); re-run it")
        rows.append(Q7TiedRanks("baseline (dense, default embedder, original question)", **baseline,
                                ties=baseline_ties(inputs.diagnosis, lang)))
    for result in inputs.mechanisms:
        if not result.ran:
            rows.append(Q7Note(f"{result.mechanism}: not run ({result.status})"))
            continue
        for variant in result.variants:
            label = variant.label(result.mechanism)
            failed = variant.q7_failures.get("original", {}).get(lang)
            ranks = variant.q7.get("original", {}).get(lang)
            if failed:
                rows.append(Q7Note(f"{label}: failed ({failed})"))
            elif ranks:
                rows.append(Q7TiedRanks(label, **{p: ranks.get(p) for p in Q7_PIECES},
                                        ties=variant.q7_ties.get("original", {}).get(lang, [])))
    recovery = inputs.recovery
    if recovery and lang in recovery.q7:
        for source, block in recovery.q7[lang].items():
            if block.status not in ("ok", "no_split"):  # e.g. only the prompt's example copied
                rows.append(Q7Note(f"recovery ({source}): no usable suggestion ({block.status})"))
            for i, entry in enumerate(block.ranks, 1):
                label = f"recovery ({source}) S{i}: {entry['suggestion']}"
                rows.append(Q7Ranks(label, **{p: entry.get(p) for p in Q7_PIECES}))
    return rows


def baseline_ties(diagnosis: Q7DiagnosisResult | None, lang: str) -> list[str]:
    """The baseline's pieces tied at the Top-10 cut (05's margins against its median neighbour gap)."""
    case = diagnosis.cases.get("original", {}).get(lang) if diagnosis else None
    if case is None or case.top10_median_gap is None:
        return []
    return [p for p, m in case.top10_margins.items() if m is not None and abs(m) < case.top10_median_gap]


def q7_inside(rows: Sequence[SideBySideRow], evidence_k: dict[str, int],
              pieces: tuple[str, ...] = ("C1", "C2", "C3"), k: int = BOLD_WITHIN) -> list[str]:
    """The side-by-side rows that rank every one of ``pieces`` inside the Top-``k`` (or the row's larger evidence)."""
    out = []
    for row in rows:
        if not isinstance(row, Q7Ranks):
            continue  # a row without ranks
        cut = max(k, evidence_k.get(row.row, k))
        tied = row.tied if cut == k else []  # a tie at the Top-k cut is neither in nor out
        if all((rank := row.rank(p)) is not None and rank <= cut and p not in tied for p in pieces):
            out.append(row.row)
    return out


def q7_every_phrasing(mechanisms: Sequence[MechanismResult], k: int = BOLD_WITHIN) -> Q7EveryPhrasing:
    """Q7's mechanism rows over every phrasing (not only the original): how many, and which put all pieces
    inside the Top-``k`` (a piece tied at the cut does not count as inside)."""
    rows, complete = 0, []
    for result in mechanisms:
        for variant in result.variants if result.ran else []:
            for phrasing, by_lang in variant.q7.items():
                for lang, ranks in sorted(by_lang.items()):
                    if not ranks or all(r is None for r in ranks.values()):
                        continue  # a failed phrasing has no ranks to judge
                    rows += 1
                    tied = variant.q7_ties.get(phrasing, {}).get(lang, [])  # neither in nor out
                    if all(r is not None and r <= k and p not in tied for p, r in ranks.items()):
                        complete.append(f"{variant.label(result.mechanism)}, {phrasing} phrasing ({lang})")
    return Q7EveryPhrasing(rows=rows, complete=complete, k=k)
