"""Top-k sensitivity (casebook Q8: 1/2 → 2/2 at k = 6): pieces covered, and context cost, versus k.

Two parts:

* Q8 (benchmark ``q08``, two pieces; labels v2: secrets per environment): which pieces are in
  the top k, for every k, and whether it can test the casebook's claim at all (``testable``:
  a piece outside the Top-5 but inside the Top-10 while the others are inside the Top-5).
* Every answerable compound question completed only between k = 6 and k = 10 (``late_complete``):
  the benchmark's own Q8-like cases, with their piece ranks, per language.
* The whole answerable benchmark: mean piece coverage@k for k = 1..K, per language, with what
  the larger evidence costs: total characters of the top-k chunk texts and an approximate
  token count (:func:`approx_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_lib.core.casebook import published
from rag_lib.core.text import approx_tokens
from rag_lib.evaluation import piece_ranks
from rag_lib.evaluation.readers import missed_gold
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.provenance import retriever_provenance
from rag_lib.results.topk import CasebookQ8, CurvePoint, CurveRow, Q8Case, TopkResult
from rag_lib.results.typed_json import Scalar


def coverage_at(ranks: Sequence[int | None], k: int) -> int:
    """How many pieces have their first rank within ``k``."""
    return sum(r is not None and r <= k for r in ranks)


def first_full_k(ranks: Sequence[int | None]) -> int | None:
    """The smallest k with every piece covered (the worst piece's rank); ``None`` if a piece is missing."""
    return None if not ranks or any(r is None for r in ranks) else max(r for r in ranks if r is not None)


def completes_late(ranks: Sequence[int | None], k: int, max_k: int = 10) -> bool:
    """Whether a question can test "a larger k completes it": its last piece enters between k+1 and max_k."""
    full = first_full_k(ranks)
    return full is not None and k < full <= max_k


def verdict(piece_ranks: dict[str, int | None], k: int, max_k: int = 10) -> str:
    """One sentence: can this question test "k = 6…10 completes it", and why not when it cannot."""
    ranks = list(piece_ranks.values())
    shown = ", ".join(f"{p} at rank {r}" for p, r in piece_ranks.items())
    full = first_full_k(ranks)
    if completes_late(ranks, k, max_k):
        return f"testable: {shown}; the last piece enters at k = {full}"
    if full is not None and full <= k:
        return f"not testable on this corpus: {shown}, all already inside the Top-{k}"
    return f"not testable on this corpus: {shown}, a piece beyond the Top-{max_k}"


def run_topk(
    key: str = "dense", max_k: int = 20, languages: Sequence[str] = ("zh", "en"), workbench: Workbench | None = None
) -> TopkResult:
    """The Q8 sweep and the whole-benchmark coverage@k curve with its context cost.

    ``curve[lang][k]`` holds mean coverage, mean characters and mean
    approximate tokens of the top-k evidence over the answerable questions.
    """
    wb = workbench or Workbench()
    label = wb.resolve(key).label
    ks = list(range(1, max_k + 1))
    q8 = wb.benchmark.by_casebook("Q8")
    questions = wb.benchmark.questions(answerable=True)
    chars = {c.id: len(c.text) for c in wb.embeddable}
    tokens = {c.id: approx_tokens(c.text) for c in wb.embeddable}

    q8_out: dict[str, Q8Case] = {}
    q8_rows: list[dict[str, str]] = []
    for lang in languages:
        ranks = piece_ranks(q8.pieces, wb.rank(q8.text(lang), key))
        n = len(ranks)
        sweep = {str(k): coverage_at(ranks, k) for k in ks}
        q8_out[lang] = Q8Case(question=q8.text(lang), piece_ranks={f"C{i + 1}": r for i, r in enumerate(ranks)},
                              n_pieces=n, covered=sweep, first_full_k=first_full_k(ranks),
                              covered_at_5=f"{sweep['5']}/{n}", covered_at_6=f"{sweep['6']}/{n}",
                              testable=completes_late(ranks, wb.config.k))
        q8_rows.append({"language": lang, **{f"k={k}": f"{sweep[str(k)]}/{n}" for k in ks}})

    late: dict[str, list[dict[str, Scalar]]] = {}
    for lang in languages:
        late[lang] = []
        for q in wb.benchmark.questions(answerable=True, compound=True):
            ranks = piece_ranks(q.pieces, wb.rank(q.text(lang), key))
            if completes_late(ranks, wb.config.k):
                late[lang].append({"question": q.id, "text": q.text(lang), "first_full_k": first_full_k(ranks),
                                   **{f"C{i + 1}": r for i, r in enumerate(ranks)}})

    curve: dict[str, dict[str, CurvePoint]] = {}
    curve_rows = []
    for lang in languages:
        runs = wb.run(key, questions, lang)
        curve[lang] = {}
        for k in ks:
            cov = [coverage_at(piece_ranks(q.pieces, runs[q.id]), k) / len(q.pieces) for q in questions]
            top = [runs[q.id].ids[:k] for q in questions]
            point = CurvePoint(
                coverage=round(float(np.mean(cov)), 4),
                full=round(float(np.mean([c == 1.0 for c in cov])), 4),
                chars=round(float(np.mean([sum(chars[c] for c in ids) for ids in top])), 1),
                tokens=round(float(np.mean([sum(tokens[c] for c in ids) for ids in top])), 1),
            )
            curve[lang][str(k)] = point
            curve_rows.append(CurveRow(lang, k, point.coverage, point.full, point.chars, point.tokens))
    theirs = published()["q8"]["coverage"]
    return TopkResult(
        configuration=label,
        provenance=retriever_provenance(wb.provenance(key)),
        languages=list(languages),
        max_k=max_k,
        n_answerable=len(questions),
        token_estimate="1 token per CJK character + 1 per 4 other characters (approx_tokens)",
        q8={"id": q8.id, **q8_out},
        q8_rows=q8_rows,
        q8_testable={lang: q8_out[lang].testable for lang in languages},
        q8_verdict={lang: verdict(q8_out[lang].piece_ranks, wb.config.k) for lang in languages},
        late_complete=late,
        late_complete_count={lang: len(rows) for lang, rows in late.items()},
        n_compound=len(wb.benchmark.questions(answerable=True, compound=True)),
        casebook_q8=CasebookQ8(theirs["k5"], theirs["k6"], "THEIRS: bge-m3 on their 26-page snapshot"),
        curve=curve,
        curve_rows=curve_rows,
        plot={"coverage": {lang: {k: p.coverage for k, p in curve[lang].items()} for lang in languages}},
    )


def findings(result: TopkResult) -> list[str]:
    """Sentences generated from :func:`run_topk`'s stored numbers, with their caveats."""
    out: list[str] = []
    theirs = result.casebook_q8
    for lang in result.languages:
        q8 = result.q8_case(lang)
        full = (f"every piece is in from k = {q8.first_full_k}, so a larger k completes Q8 here too"
                if q8.first_full_k else f"it is still incomplete at k = {result.max_k}")
        out.append(f"Q8 ({lang}): {q8.covered_at_5} pieces at k = 5 and {q8.covered_at_6} at k = 6; {full} "
                   f"(casebook, theirs: {theirs.k5} at k = 5, {theirs.k6} at k = 6).")
    for lang in result.languages:
        curve = result.curve[lang]
        five, ten, last = curve["5"], curve["10"], curve[str(result.max_k)]
        out.append(f"{lang}: from k = 5 to 10, mean piece coverage goes {five.coverage:.3f} → {ten.coverage:.3f} "
                   f"while the evidence grows ≈{five.tokens:.0f} → ≈{ten.tokens:.0f} evidence tokens "
                   f"({ten.tokens / five.tokens:.1f}×); k = {result.max_k} reaches {last.coverage:.3f} "
                   f"for ≈{last.tokens:.0f} tokens. {result.late_complete_count[lang]} of the "
                   f"{result.n_compound} compound questions are completed only between k = 6 and 10.")
    out.append(f"Caveats: token counts are an estimate ({result.token_estimate}); coverage is over this "
               "benchmark's labels with the offline default embedder; more evidence also means more text for a "
               "small model to misread, which this notebook does not measure (10 does, at k = 5); "
               f"{missed_gold().caveat()}.")
    return out
