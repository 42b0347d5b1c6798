"""BM25 + dense fused by RRF; hybrid and BM25 alone on identifier questions and on the rest."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.benchmark import Question
from rag_lib.core.text import identifiers
from rag_lib.experiments.mechanisms.registry import BuildContext, FromSettings, Variant, mechanism
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.results.mechanism import RetrieverVariant


def identifier_question_ids(questions: Sequence[Question]) -> frozenset[str]:
    """Questions that contain an exact identifier (:func:`rag_lib.core.text.identifiers`, on either language)."""
    return frozenset(q.id for q in questions if identifiers(q.en) or identifiers(q.zh))


def hybrid_variants(wb: Workbench, rrf_k: int) -> list[Variant]:
    """BM25 + dense (default embedder) fused by RRF (the workbench's hybrid retriever, whose constant is
    ``rrf_k``), on every question; then hybrid and BM25 alone on the questions with an exact
    identifier and on the rest (Halo: hybrid helps "far more" there)."""
    key = RunKey("hybrid", wb.config.embedder)
    hybrid = wb.retriever(key, rrf_k=rrf_k)  # the declared constant, not the workbench's default
    variants = [Variant("hybrid", f"BM25 + dense RRF (k={rrf_k})", hybrid.rank,
                        provenance=RetrieverVariant(**wb.provenance(key), rrf_k=rrf_k))]
    answerable = wb.benchmark.questions(answerable=True)
    tagged = identifier_question_ids(answerable)
    rest = frozenset(q.id for q in answerable) - tagged
    rule = ("Identifier questions: those whose text (zh or en) contains an exact identifier — a file or host name, "
            "a config key, a flag, a method call, a camelCase handler or a `wrangler` command "
            f"(rag_lib.core.text.identifiers): {len(tagged)} of {len(answerable)} answerable questions "
            f"({', '.join(sorted(tagged))}).")
    for retriever in ("hybrid", "bm25"):
        run_key = key if retriever == "hybrid" else RunKey("bm25")
        for label, ids in (("identifier questions", tagged), ("other questions", rest)):
            variants.append(Variant(f"{retriever} · {label}", f"{run_key.label} on the {label} only",
                                    (hybrid if retriever == "hybrid" else wb.retriever(run_key)).rank,
                                    q7_phrasings=(), question_ids=ids, notes=[rule],
                                    provenance=RetrieverVariant(**wb.provenance(run_key), subset=sorted(ids),
                                                                rrf_k=rrf_k if retriever == "hybrid" else None)))
    return variants


@mechanism("hybrid", "BM25 + dense fused by RRF; hybrid and BM25 alone on identifier questions and the rest",
           rrf_k=FromSettings("retrieval.rrf_k"))
def _hybrid(ctx: BuildContext, rrf_k: int) -> tuple[list[Variant], dict[str, str]]:
    return hybrid_variants(ctx.wb, rrf_k), {}
