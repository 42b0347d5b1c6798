"""Chunking strategies compared on the whole benchmark (Halo's headline claim), and context size against cost.

For every strategy of ``chunking.strategies`` (config.yaml; :mod:`rag_lib.corpus.chunkers`): cut the
normalized pages, embed the chunks with the default embedder, rank every answerable question with
dense retrieval, and score it against gold pieces resolved by span (:mod:`rag_lib.evaluation.gold_spans`, one
rule for every strategy). Reported per language: hit@5, coverage@10, MRR and the tokens the Top-5
sends to generation; paired bootstrap intervals of structural − strategy (Halo's "+18 points" is
structural's advantage); Q7's C1–C4 first ranks.

Context size against cost (Halo: five reranked passages instead of twenty unranked cut cost by two
thirds): with the structural chunks, the Top-5 against the Top-20 of dense retrieval — tokens per
question, estimated input cost at the paper model's price, piece coverage. The offline LLM reranker
lowered hit@5 (06-reranker), so the best available ordering here is the dense one; no answers were
recorded with the Top-20, so answer correctness is not compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_lib.benchmark.questions import Q7_ID
from rag_lib.core.casebook import halo
from rag_lib.core.documents import Chunk
from rag_lib.core.text import approx_tokens
from rag_lib.corpus import load_pages
from rag_lib.corpus.chunkers import SemanticChunker, TokenCounter, get_chunker, strategies
from rag_lib.evaluation import MRR, HitAt, PieceCoverage, hit_name, piece_ranks
from rag_lib.evaluation.gold_spans import piece_spans, resolve_by_span
from rag_lib.evaluation.readers import missed_gold
from rag_lib.evaluation.stats import MIN_RESAMPLES, compare
from rag_lib.generation.call_records import price_table
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.chunking import (
    ChunkingProvenance,
    ChunkingResult,
    ContextCost,
    HaloClaims,
    Price,
    StrategyComparison,
    StrategyQ7,
    StrategySizes,
)
from rag_lib.results.comparisons import Compared, FamilySummary, judge_compared, judged_fields
from rag_lib.results.provenance import model_name
from rag_lib.results.typed_json import Scalar, decode
from rag_lib.retrieval import Ranking

BASELINE = "structural"
# Piece coverage of the leading chunks that fit the structural Top-5's tokens for the same question: the
# strategies compared at an equal token budget rather than at an equal k (a small chunk sends fewer tokens).
EQUAL_TOKENS = "coverage@equal-tokens"


def strategy_metrics(k: int) -> tuple[str, ...]:
    """The ranking metrics each strategy is measured on at top-``k``: ``("hit@5", "coverage@10", "mrr")`` at k = 5."""
    return (hit_name(k), "coverage@10", "mrr")


def compared_metrics(k: int) -> tuple[str, ...]:
    """What the comparison table compares at top-``k``: :func:`strategy_metrics` and coverage at equal tokens."""
    return (*strategy_metrics(k), EQUAL_TOKENS)
FAMILY_NAME = "this notebook (strategies × languages × metrics)"
# A verdict on structural − strategy, in words: positive differences put structural ahead.
_SIDE = {"helps": "structural ahead", "hurts": "structural behind", "mixed": "mixed"}
PRICED_MODEL = "qwen3.8-flash"  # the casebook's generator: what a paid answer would cost


def _size_stats(name: str, declared: dict[str, Any], chunks: Sequence[Chunk], counter: TokenCounter,
                threshold: float | None) -> StrategySizes:
    kept = [c for c in chunks if c.embeddable]
    sizes = [counter.text(c.text) for c in kept]
    return StrategySizes(
        strategy=name, kind=declared["kind"], description=declared.get("description", ""), n_chunks=len(kept),
        median_tokens=int(np.median(sizes)), p90_tokens=int(np.percentile(sizes, 90)), max_tokens=max(sizes),
        # inputs the embedder splits into windows whose vectors it averages (over its window)
        overlong_inputs=sum(counter.input(c.embed_input) > counter.limit for c in kept),
        embedder_max_tokens=counter.limit, cosine_threshold=threshold)


Scores = tuple[dict[str, Ranking], dict[str, list[float]], list[float], list[int | None]]


def _scores(wb: Workbench, lang: str) -> Scores:
    """Rankings, per-question metrics, tokens of the Top-5 and Q7's piece ranks of one strategy and language."""
    questions = wb.benchmark.questions(answerable=True)
    rankings = wb.run("dense", questions, lang)
    table = wb.evaluate(rankings, (HitAt(wb.config.k), PieceCoverage(10), MRR()))
    scores = {m: [float(v) for v in table[m]] for m in strategy_metrics(wb.config.k)}
    tokens = [float(sum(approx_tokens(wb.by_id[cid].text) for cid in rankings[q.id].ids[:5])) for q in questions]
    q7 = wb.benchmark[Q7_ID]
    return rankings, scores, tokens, piece_ranks(q7.pieces, wb.rank(q7.text(lang)))


def fitting(wb: Workbench, ranking: Ranking, budget: float) -> int:
    """How many leading chunks of ``ranking`` fit ``budget`` estimated tokens (at least one)."""
    used, n = 0.0, 0
    for cid in ranking.ids:
        used += approx_tokens(wb.by_id[cid].text)
        if used > budget:
            break
        n += 1
    return max(n, 1)


def equal_token_scores(wb: Workbench, rankings: dict[str, Ranking], budgets: Sequence[float]
                       ) -> tuple[list[float], list[int]]:
    """Per answerable question (benchmark order): piece coverage of the leading chunks that fit its budget, and
    how many chunks that is."""
    questions = wb.benchmark.questions(answerable=True)
    sent = [fitting(wb, rankings[q.id], budget) for q, budget in zip(questions, budgets, strict=True)]
    coverage = [PieceCoverage(n).question(q.pieces, rankings[q.id]) for q, n in zip(questions, sent, strict=True)]
    return coverage, sent


def context_cost(wb: Workbench, rankings: dict[str, dict[str, Ranking]],
                 ks: Sequence[int] = (5, 20)) -> list[ContextCost]:
    """Top-k of dense retrieval with the structural chunks (``rankings``: language → question id →
    ranking, from the structural run): tokens, estimated input cost, coverage."""
    price = price_table()[PRICED_MODEL]["input_per_mtok"]
    rows = []
    questions = wb.benchmark.questions(answerable=True)
    for lang, by_question in rankings.items():
        coverage = wb.evaluate(by_question, tuple(PieceCoverage(k) for k in ks))
        for k in ks:
            tokens = [approx_tokens(q.text(lang)) + sum(approx_tokens(wb.by_id[c].text)
                                                        for c in by_question[q.id].ids[:k]) for q in questions]
            rows.append(ContextCost(language=lang, evidence=f"Top-{k} (dense order)", k=k,
                                    tokens=round(float(np.mean(tokens)), 1),
                                    cost=round(float(np.mean(tokens)) * price / 1e6 * 1000, 4),
                                    coverage=round(float(coverage[f"coverage@{k}"].mean()), 4)))
    return rows


def run_chunking(names: Sequence[str] | None = None, languages: Sequence[str] = ("zh", "en"),
                 n_boot: int = MIN_RESAMPLES, seed: int = 0) -> ChunkingResult:
    """Every declared strategy on the whole answerable benchmark; see the module docstring."""
    base = Workbench()
    names = list(names or strategies())
    if BASELINE not in names:
        names.insert(0, BASELINE)
    pages = load_pages()
    spans = piece_spans(base.benchmark, base.chunks)
    counter = TokenCounter(base.embedder())
    declared = strategies()
    stats: list[StrategySizes] = []
    q7_rows: list[StrategyQ7] = []
    scores, tokens, sent, gold_diff = {}, {}, {}, 0
    structural_rankings: dict[str, dict[str, Ranking]] = {}
    for name in names:
        chunker = get_chunker(name, base.embedder(), base.store)
        chunks = chunker.chunk(pages)
        bench = resolve_by_span(base.benchmark, spans, chunks)
        if name == BASELINE:  # the span rule must reproduce the benchmark's own labels on these chunks
            gold_diff = sum(a != b for q, r in zip(base.benchmark.items, bench.items, strict=True)
                            for a, b in zip(q.resolved or (), r.resolved or (), strict=True))
        wb = Workbench.over(chunks, bench, base.store, base.config, embedders_of=base)
        threshold = round(float(chunker.threshold or 0.0), 4) if isinstance(chunker, SemanticChunker) else None
        stats.append(_size_stats(name, declared[name], chunks, counter, threshold))
        for lang in languages:
            rankings, scores[name, lang], tokens[name, lang], q7 = _scores(wb, lang)
            q7_rows.append(StrategyQ7(name, lang, *q7))
            scores[name, lang][EQUAL_TOKENS], sent[name, lang] = equal_token_scores(
                wb, rankings, tokens[BASELINE, lang])  # the baseline runs first: its Top-5 tokens are the budget
            if name == BASELINE:
                structural_rankings[lang] = rankings
        if name == BASELINE:
            structural_wb = wb
    compared = compared_metrics(base.config.k)
    metric_rows: list[dict[str, Scalar]] = []
    compared_pairs: list[Compared] = []
    for name in names:
        for lang in languages:
            metric_rows.append({"strategy": name, "language": lang,
                                **{m: round(float(np.mean(scores[name, lang][m])), 4) for m in compared},
                                "tokens@5": round(float(np.mean(tokens[name, lang])), 1),
                                "chunks@equal-tokens": round(float(np.mean(sent[name, lang])), 1)})
            if name == BASELINE:
                continue
            for m in compared:  # structural − strategy: Halo's "+18 points" is structural's advantage
                compared_pairs.append((name, lang, m, compare(scores[BASELINE, lang][m], scores[name, lang][m],
                                                              n_boot, seed)))
    # One Holm family: every strategy × language × metric the comparison table reports.
    family = judge_compared(compared_pairs, FAMILY_NAME, n_boot, seed)
    comparison_rows = [StrategyComparison(strategy=name, language=lang, metric=m, structural=c.mechanism,
                                          strategy_value=c.baseline, difference=c.diff, **judged_fields(c, j))
                       for (name, lang, m, c), j in zip(compared_pairs, family.judgements, strict=True)]
    embedder = base.embedder()
    context = context_cost(structural_wb, structural_rankings)
    return ChunkingResult(
        languages=list(languages), strategies=stats, metric_rows=metric_rows,
        comparison_rows=comparison_rows, q7_rows=q7_rows, gold_span_differences=gold_diff,
        n_answerable=len(base.benchmark.questions(answerable=True)),
        context_rows=context, priced_model=PRICED_MODEL,
        price=Price(**price_table()[PRICED_MODEL]), halo=decode(HaloClaims, halo(), "data/casebook/halo.yaml"),
        provenance=ChunkingProvenance(
            retriever="dense", embedder=embedder.describe(), n_boot=n_boot, seed=seed,
            claims=FamilySummary.of(family), strategies={n: declared[n] for n in names},
            gold="spans of the benchmark's locators; a chunk counts when it holds the whole span, "
                 "else the chunk(s) holding its largest part (rag_lib.evaluation.gold_spans)",
            token_estimate="tokens@5 and context cost: approx_tokens (1 per CJK character, 1 per 4 other characters)"),
    )


def findings(result: ChunkingResult) -> list[str]:
    """Sentences from the stored results: each strategy against structural over every metric of the comparison
    table, after the notebook's Holm adjustment (:mod:`rag_lib.evaluation.claims`); Q7; the context trade-off."""
    out = []
    points = result.halo.chunking.structural_hit_rate_points
    family = result.family()
    hit, compared = hit_name(result.k), compared_metrics(result.k)  # at the k the run stored
    embedder = result.provenance.embedder
    for lang in result.languages:
        parts = []
        for s in result.strategies:
            if s.strategy == BASELINE:
                continue
            verdict = family.verdict(s.strategy, lang)
            said = (f"{_SIDE[verdict.kind]}: " + "; ".join(j.text(scoped=False) for j in verdict.effects)
                    if verdict.effects else verdict.text(scoped=False))
            parts.append(f"vs {s.strategy}, {said}")
        base = next(r for r in result.metric_rows if r["strategy"] == BASELINE and r["language"] == lang)
        out.append(f"{lang}: structural {hit} {base[hit]:.3f}; structural − strategy over "
                   f"{', '.join(compared)} (the last at the structural Top-5's tokens per question): "
                   f"{'; '.join(parts)}. Halo reports +{points} points (+{points / 100:.2f}) of hit rate for "
                   "structural chunking (theirs; baseline not stated).")
    for lang in result.languages:
        rows = [r for r in result.q7_rows if r.language == lang]
        shown = "; ".join(f"{r.strategy} " + "/".join(map(str, r.ranks)) for r in rows)
        out.append(f"Q7 ({lang}) first ranks C1/C2/C3/C4: {shown}.")
    for lang in result.languages:
        small, large, cut = result.context_cut(lang)
        out.append(f"Context ({lang}): the Top-5 sends {small.tokens:.0f} input tokens per question (the question and "
                   f"its chunks) against "
                   f"{large.tokens:.0f} for the Top-20 ({cut:.0%} less; Halo: "
                   f"{result.halo.context.cost_cut}), with piece coverage {small.coverage:.3f} against "
                   f"{large.coverage:.3f}.")
    out.append(f"Caveats: {result.n_answerable} answerable questions, labels of this benchmark placed as spans "
               f"({result.gold_span_differences} differences from the chunk-id labels on the structural chunks); "
               f"one offline embedder ({model_name(embedder)}); structural chunks longer than its "
               f"{embedder['max_tokens']}-token window are "
               "embedded in windows whose vectors are averaged, while the other strategies fit the window by "
               "construction; no answers were generated from the Top-20, so the context comparison is cost and "
               f"coverage, not answer quality; {missed_gold().caveat()}.")
    out.append(family.describe())
    return out
