"""Q7 diagnosis (casebook sections 04–05): its Top-10, each piece's first rank, and the failing layer.

For each phrasing (original, terms, aligned) and language: the Top-10 with headings, scores and
the piece each chunk covers; each piece's first rank; coverage at 5 and 10; and the layer the
retrieval fails at, judged by the worst piece (missing from the corpus / just outside the top k /
ranked deep), next to the casebook's published ranks, which are THEIRS (bge-m3, their snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rag_lib.benchmark import Q7_PHRASINGS, Question
from rag_lib.core.casebook import published
from rag_lib.evaluation import Layer, diagnose, piece_ranks
from rag_lib.evaluation.margins import margin_to_cut, median_gap
from rag_lib.evaluation.metrics import layer_of
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.figures import piece_ranks_of
from rag_lib.results.provenance import retriever_provenance
from rag_lib.results.q7_diagnosis import CasebookQ7, Q7Case, Q7DiagnosisResult, TopChunk
from rag_lib.retrieval import Ranking


def piece_layer(rank: int | None, k: int) -> str:
    """Where one piece stands: ``in_top_k``, ``just_outside`` (≤ 2k), ``ranked_deep`` or ``not_in_corpus``."""
    return str(layer_of(rank, k))  # one piece is its own worst


def top_rows(question: Question, ranking: Ranking, wb: Workbench, n: int = 10) -> list[TopChunk]:
    """The first ``n`` of ``ranking``: rank, score, page, heading path and the pieces the chunk covers."""
    rows = []
    for rank, (cid, score) in enumerate(ranking.top(n), start=1):
        chunk = wb.by_id[cid]
        covers = [f"C{i + 1}" for i, piece in enumerate(question.pieces) if cid in piece]
        rows.append(TopChunk(rank=rank, score=round(score, 4), page=chunk.page,
                             heading=" > ".join(chunk.heading_path) or chunk.title, covers=",".join(covers) or "-",
                             chunk_id=cid))
    return rows


def run_q7_diagnosis(
    key: str = "dense", k: int | None = None, languages: Sequence[str] = ("zh", "en"),
    workbench: Workbench | None = None,
) -> Q7DiagnosisResult:
    """Diagnose Q7 for every phrasing and language with retrieval ``key``."""
    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    q7 = wb.benchmark.by_casebook("Q7")
    cases: dict[str, dict[str, Q7Case]] = {}
    rank_rows = []
    for phrasing in Q7_PHRASINGS:
        name = phrasing or "original"
        for lang in languages:
            ranking = wb.rank(q7.text(lang, phrasing), key)
            ranks = piece_ranks(q7.pieces, ranking)
            d = diagnose(q7.pieces, ranking, k)
            n = len(ranks)
            in5 = sum(r is not None and r <= k for r in ranks)
            in10 = sum(r is not None and r <= 10 for r in ranks)
            rows = top_rows(q7, ranking, wb, 10)
            cases.setdefault(name, {})[lang] = Q7Case(
                question=q7.text(lang, phrasing),
                top10=rows,
                piece_ranks={f"C{i + 1}": r for i, r in enumerate(ranks)},
                piece_layers={f"C{i + 1}": piece_layer(r, k) for i, r in enumerate(ranks)},
                top10_margins={f"C{i + 1}": margin_to_cut(ranking, r) for i, r in enumerate(ranks)},
                top10_median_gap=median_gap(ranking),
                coverage_at_k=f"{in5}/{n}",
                coverage_top10=f"{in10}/{n}",
                layer=str(d.layer),
                worst_rank=d.worst_rank,
            )
            rank_rows.append({"phrasing": name, "language": lang, "source": "ours",
                              **{f"C{i + 1}": r for i, r in enumerate(ranks)},
                              f"in top {k}": f"{in5}/{n}", "in top 10": f"{in10}/{n}", "layer": str(d.layer)})
    theirs = published()["q7"]
    rank_rows.append({"phrasing": "original", "language": "zh", "source": "casebook (theirs, bge-m3)",
                      **theirs["piece_ranks"], "C4": "≤ 10", "in top 10": theirs["coverage_top10"],
                      "layer": str(Layer.RANKED_DEEP)})
    return Q7DiagnosisResult(
        configuration=wb.resolve(key).label,
        provenance=retriever_provenance(wb.provenance(key)),
        k=k,
        languages=list(languages),
        pieces={p.id: p.what for p in q7.gold},
        cases=cases,
        rank_rows=rank_rows,
        casebook=CasebookQ7(piece_ranks=dict(theirs["piece_ranks"]), coverage_top10=theirs["coverage_top10"],
                            note="THEIRS: bge-m3 on their 26-page snapshot; the casebook gives C4 only as 'in the "
                                 "Top-10'"),
    )


def findings(result: Q7DiagnosisResult) -> list[str]:
    """Sentences generated from :func:`run_q7_diagnosis`'s stored numbers, with their caveats."""
    out: list[str] = []
    theirs = result.casebook
    for lang in result.languages:
        original = result.cases["original"][lang]
        ranks = ", ".join(f"{p} {r}" for p, r in original.piece_ranks.items())
        out.append(f"Q7 ({lang}), original phrasing: first ranks {ranks}; {original.coverage_top10} pieces in the "
                   f"Top-10, layer **{original.layer}** (casebook, theirs: C1–C3 at "
                   f"{', '.join(str(v) for v in theirs.piece_ranks.values())}, {theirs.coverage_top10} in the "
                   "Top-10).")
    for lang in result.languages:
        original = result.cases["original"][lang]
        margins = {p: m for p, m in original.top10_margins.items() if m is not None}
        if margins:
            nearest = min(margins, key=lambda p: abs(margins[p]))
            rank, margin = original.piece_ranks[nearest], margins[nearest]
            side = "above the 11th chunk" if margin >= 0 else "below the 10th chunk"
            gap = original.top10_median_gap
            if gap is None:
                fragile = ""
            elif abs(margin) < gap:
                fragile = (f", less than the median gap between neighbouring Top-10 scores ({gap:.5f}): whether it "
                           "counts as in the Top-10 is fragile (the order of such near-ties can change with the "
                           "floating-point details of the engine that computes the vectors, which is why the "
                           "workbook reads pinned ones: rag_lib/embedding/pinned.py)")
            else:
                fragile = f" (median gap between neighbouring Top-10 scores: {gap:.5f})"
            out.append(f"Q7 ({lang}), original phrasing: the piece nearest the Top-10 boundary is {nearest} at rank "
                       f"{rank}, {abs(margin):.5f} (cosine) {side}{fragile}.")
    for phrasing in (p for p in result.cases if p != "original"):
        moved = []
        for lang in result.languages:
            before, after = result.cases["original"][lang], result.cases[phrasing][lang]
            moved.append(f"{lang} {before.coverage_top10} → {after.coverage_top10} in the Top-10 "
                         f"(layer {after.layer})")
        out.append(f"The {phrasing} phrasing: {'; '.join(moved)}.")
    if all(result.cases["original"][lang].layer == "ranked_deep" for lang in result.languages):
        out.append("The pieces are in the corpus and retrieved, but ranked deep, which is what one expects when "
                   "each piece answers a different sub-question of a compound question: one query embedding sits "
                   "close to none of them.")
    out.append("Caveats: one question, this benchmark's labels, and the offline default embedder rather than the "
               "casebook's bge-m3.")
    return out


def ranks_figure(result: Q7DiagnosisResult, path: Path, k: int) -> Path:
    """Our first rank of each piece, one line per phrasing and language, with the Top-k and Top-10 cuts drawn
    (the casebook's ranks stay in the table: some are published only as bounds, "≤ 10")."""
    ours = [r for r in result.rank_rows if r["source"] == "ours"]
    return piece_ranks_of(ours, ("phrasing", "language"), path, cuts=(k, 10) if k != 10 else (10,),
                          title="Q7: first rank of each piece (ours; phrasing · language)")
