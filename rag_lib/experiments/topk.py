"""Top-k sensitivity (casebook Q8: 1/2 → 2/2 at k = 6): pieces covered, and context cost, versus k.

Two parts:

* Q8 (benchmark ``q08``, two pieces): which pieces are in the top k, for every k.
* The whole answerable benchmark: mean piece coverage@k for k = 1..K, per language, with what
  the larger evidence costs: total characters of the top-k chunk texts and an approximate
  token count (:func:`approx_tokens`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_lib.casebook import published
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.evaluation import piece_ranks
from rag_lib.report import markdown_table
from rag_lib.workbench import RunKey, Workbench

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def full_label(key: str) -> str:
    """``"dense"`` → ``"dense:<default embedder>"``: a label that names the model."""
    run_key = RunKey.parse(key)
    if run_key.embedder is None and run_key.retriever in {"dense", "hybrid"}:
        run_key = RunKey(run_key.retriever, default_embedder_name())
    return run_key.label


def approx_tokens(text: str) -> int:
    """A model-free token estimate: one token per CJK character, one per 4 other characters (rounded up).

    The generator's own tokenizer would be exact only for that generator; this rule of thumb is
    the same for every model and close for English and Chinese BPE vocabularies.
    """
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def coverage_at(ranks: Sequence[int | None], k: int) -> int:
    """How many pieces have their first rank within ``k``."""
    return sum(r is not None and r <= k for r in ranks)


def first_full_k(ranks: Sequence[int | None]) -> int | None:
    """The smallest k with every piece covered (the worst piece's rank); ``None`` if a piece is missing."""
    return None if not ranks or any(r is None for r in ranks) else max(r for r in ranks if r is not None)


def run_topk(
    key: str = "dense", max_k: int = 20, languages: Sequence[str] = ("zh", "en"), workbench: Workbench | None = None
) -> dict[str, Any]:
    """The Q8 sweep and the whole-benchmark coverage@k curve with its context cost.

    Returns a JSON-ready dict; ``curve[lang][k]`` holds mean coverage, mean characters and mean
    approximate tokens of the top-k evidence over the answerable questions.
    """
    wb = workbench or Workbench()
    label = full_label(key)
    ks = list(range(1, max_k + 1))
    q8 = wb.benchmark.by_casebook("Q8")
    questions = wb.benchmark.questions(answerable=True)
    chars = {c.id: len(c.text) for c in wb.embeddable}
    tokens = {c.id: approx_tokens(c.text) for c in wb.embeddable}

    q8_out: dict[str, Any] = {}
    q8_rows = []
    for lang in languages:
        ranks = piece_ranks(q8.pieces, wb.rank(q8.text(lang), key))
        n = len(ranks)
        sweep = {str(k): coverage_at(ranks, k) for k in ks}
        q8_out[lang] = {"question": q8.text(lang), "piece_ranks": {f"C{i + 1}": r for i, r in enumerate(ranks)},
                        "n_pieces": n, "covered": sweep, "first_full_k": first_full_k(ranks),
                        "covered_at_5": f"{sweep['5']}/{n}", "covered_at_6": f"{sweep['6']}/{n}"}
        q8_rows.append({"language": lang, **{f"k={k}": f"{sweep[str(k)]}/{n}" for k in ks}})

    curve: dict[str, dict[str, dict[str, float]]] = {}
    curve_rows = []
    for lang in languages:
        runs = wb.run(key, questions, lang)
        curve[lang] = {}
        for k in ks:
            cov = [coverage_at(piece_ranks(q.pieces, runs[q.id]), k) / len(q.pieces) for q in questions]
            top = [runs[q.id].ids[:k] for q in questions]
            point = {
                "coverage": round(float(np.mean(cov)), 4),
                "full": round(float(np.mean([c == 1.0 for c in cov])), 4),
                "chars": round(float(np.mean([sum(chars[c] for c in ids) for ids in top])), 1),
                "tokens": round(float(np.mean([sum(tokens[c] for c in ids) for ids in top])), 1),
            }
            curve[lang][str(k)] = point
            curve_rows.append({"language": lang, "k": k, "coverage@k": point["coverage"],
                               "all pieces@k": point["full"], "chars": point["chars"], "≈tokens": point["tokens"]})
    theirs = published()["q8"]["coverage"]
    return {
        "configuration": label,
        "provenance": wb.provenance(key),
        "languages": list(languages),
        "max_k": max_k,
        "n_answerable": len(questions),
        "token_estimate": "1 token per CJK character + 1 per 4 other characters (approx_tokens)",
        "q8": {"id": q8.id, **q8_out},
        "q8_table": markdown_table(q8_rows),
        "casebook_q8": {"k5": theirs["k5"], "k6": theirs["k6"], "note": "THEIRS: bge-m3 on their 26-page snapshot"},
        "curve": curve,
        "curve_rows": curve_rows,
        "curve_table": markdown_table([r for r in curve_rows if r["k"] in (1, 3, 5, 6, 8, 10, 15, 20)]),
        # integer k, so the figure orders the points 1, 2, …, 20 (not as text)
        "plot": {"coverage": {lang: {int(k): p["coverage"] for k, p in curve[lang].items()} for lang in languages},
                 "tokens": {lang: {int(k): p["tokens"] for k, p in curve[lang].items()} for lang in languages}},
    }
