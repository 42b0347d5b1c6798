"""Halo's ranked claims beside our figures for the same change (08's Halo table)."""

from __future__ import annotations

from collections.abc import Mapping

from rag_lib.core.casebook import halo
from rag_lib.evaluation import hit_name
from rag_lib.evaluation.claims import Family
from rag_lib.results.chunking import EXPERIMENT as CHUNKING
from rag_lib.results.chunking import ChunkingResult
from rag_lib.results.summary import HaloRow
from rag_lib.results.typed_json import Scalar


def _verdict_named(row: Mapping[str, Scalar], family: Family | None) -> str:
    """A what-helps row's verdict, with the metrics that earned it (hit@5 alone may not have)."""
    if family is None or row["verdict"] not in ("helps", "hurts", "mixed"):
        return str(row["verdict"])
    earned = family.verdict(str(row["mechanism"]), str(row["language"])).effects
    return f"{row['verdict']} on {', '.join(j.metric for j in earned)}"


def halo_rows(ranked: list[dict[str, Scalar]], chunking: ChunkingResult | None, k: int, family: Family | None = None
              ) -> list[HaloRow]:
    """Halo's ranked claims (theirs) beside our figures for the same change, per language.

    Ours: hit@``k`` differences (hit@5 at the workbook's k) with Holm-adjusted intervals from 11_chunking
    (structural − each strategy, 11's family) and from the 06 mechanism runs (reranker, hybrid overall and on
    the identifier subset; the summary's family), and the Top-5 / Top-20 context cost from 11_chunking
    (``chunking``); "not run" where the notebook has no results.
    """
    theirs = halo()
    hit = hit_name(k)
    out = []
    for lang in ("zh", "en"):
        if chunking:  # 11's own Holm family: its adjusted intervals, as its Findings quote them
            chunking_hit = hit_name(chunking.k)  # 11's hit rate, at the k 11 ran with
            alpha = chunking.provenance.claims.alpha
            parts = [f"vs {r.strategy}: " + r.judgement(alpha).text(scoped=False)
                     for r in chunking.comparison_rows if r.language == lang and r.metric == chunking_hit]
            ours = "structural − strategy (adjusted over 11's comparisons): " + "; ".join(parts)
        else:
            ours = f"not run ({CHUNKING.name} has no results)"
        out.append(HaloRow("structural chunking", lang, f"+{theirs['chunking']['structural_hit_rate_points']} points",
                           ours))
        for change, prefix, claim in (
            ("reranker", "reranker:", f"+{theirs['reranker']['hit_rate_points']} points"),
            ("hybrid search, all questions", "hybrid: hybrid", f"+{theirs['hybrid']['hit_rate_points']} points"),
            ("hybrid search, identifier questions", "hybrid: hybrid · identifier questions", "far more"),
        ):
            rows = [r for r in ranked if r["language"] == lang and (
                str(r["mechanism"]).startswith(prefix) if prefix.endswith(":") else r["mechanism"] == prefix)]
            ours = "; ".join(f"{r['mechanism']} {hit} {r[hit]} ({r['questions']} questions, "
                             f"{_verdict_named(r, family)})"
                             for r in rows) or "not run"
            out.append(HaloRow(change, lang, claim, ours))
        if chunking:
            small, large, cut = chunking.context_cut(lang)
            ours = (f"Top-5 {small.tokens:.0f} vs Top-20 {large.tokens:.0f} input tokens per "
                    f"question ({cut:.0%} less); coverage {small.coverage:.3f} vs {large.coverage:.3f}; "
                    "answers not compared")
        else:
            ours = f"not run ({CHUNKING.name} has no results)"
        out.append(HaloRow("Top-5 instead of Top-20", lang, f"cost cut by {theirs['context']['cost_cut']}", ours))
    return out
