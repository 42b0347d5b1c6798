"""Corpus size: does "relevant but ranked deep" get worse as the corpus grows?

Nested corpora from the labelled batch's pages up to the whole wide batch (``scale`` in
config.yaml): the labelled batch's pages always, then the wide batch's other pages in a random
order (one order per seed), the same questions. Dense retrieval with the default embedder ranks the
whole wide batch once per question; a smaller corpus's ranking is that ranking restricted to its
chunks, which is exactly what exact cosine search over the smaller corpus returns (a chunk's vector
does not depend on the other chunks).

Per size, language and seed: hit@5, coverage@10 and the floor+aspects gate's declines (parameters
from notebook 03) on the answerable questions; Q7's C1–C4 first ranks; and what fills the Top-5
slots that are not gold (:func:`distractor_kind`). Bands: bootstrap 95% over questions of the
seed-averaged per-question value; the change from the smallest corpus is a paired bootstrap.

Gold labels on the wide batch: the benchmark's locators plus the wide batch's own
(``data/benchmark/batches/``, :func:`rag_lib.benchmark.batch_labels.benchmark_for`), so a new page that
states a piece counts as gold instead of as a distractor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_lib.benchmark.questions import Q7_ID, Q7_PIECES
from rag_lib.core.config import default_batch, settings
from rag_lib.core.documents import Chunk
from rag_lib.corpus import load_chunks
from rag_lib.corpus.structural_chunking import chunk_id_digest
from rag_lib.evaluation import HitAt, PieceCoverage, evaluate, paired_bootstrap, piece_ranks
from rag_lib.evaluation.stats import MIN_RESAMPLES, compare, sign_test_p, stored_value, wilson_text
from rag_lib.evidence import AspectGate, Case, score_cases
from rag_lib.evidence.calibration import held_out_parameters
from rag_lib.experiments.corpus_size.report import findings, result_metrics, size_metrics
from rag_lib.pipeline.answer import calibrated_gate_parameters
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.report import rank_span
from rag_lib.question_sweeps.gates import score_question, scored_questions
from rag_lib.results.comparisons import Compared, FamilySummary, judge_compared, judged_fields
from rag_lib.results.corpus_size import (
    DISTRACTOR_KINDS,
    CorpusChunks,
    CorpusSizeProvenance,
    CorpusSizeResult,
    GateParameters,
    LabelReview,
    Q7First,
    Q7Run,
    Q7Span,
    RefusalChange,
    ScaleSettings,
    SizeChange,
    SlotShares,
    TopDistractor,
    WideBatchLabels,
)
from rag_lib.results.q9a import EXPERIMENT as GATE
from rag_lib.results.typed_json import Scalar, decode
from rag_lib.retrieval import Ranking

FAMILY_NAME = "this notebook (corpus sizes × languages × metrics, each against the smallest corpus)"


def scale_settings() -> dict[str, Any]:
    """``scale`` of config.yaml: the wide batch, the intermediate sizes, the seeds."""
    return dict(settings()["scale"])


def page_orders(base_pages: Sequence[str], all_pages: Sequence[str], seeds: Sequence[int]) -> dict[int, list[str]]:
    """Per seed, every page: the base pages first (sorted), then the others in that seed's random order."""
    base = sorted(base_pages)
    others = sorted(set(all_pages) - set(base))
    return {seed: base + [others[i] for i in np.random.default_rng(seed).permutation(len(others))] for seed in seeds}


def restrict(ranking: Ranking, allowed: set[str]) -> Ranking:
    """``ranking`` over the ``allowed`` chunks only (exact search over the smaller corpus)."""
    kept = [(cid, s) for cid, s in ranking if cid in allowed]
    return Ranking(tuple(c for c, _ in kept), tuple(s for _, s in kept), source=ranking.source)


def product(page: str) -> str:
    """The product a page documents: its first path segment (workers, pages, r2, d1)."""
    return page.split("/", 1)[0]


def text_key(chunk: Chunk) -> str:
    """The chunk id's text hash: equal for the same text wherever it is rendered (a shared partial)."""
    return chunk_id_digest(chunk.id)


def distractor_kind(chunk: Chunk, gold_pages: set[str], copies: Mapping[str, set[str]]) -> str:
    """What a non-gold chunk in the Top-5 is, relative to the question's gold (first rule that holds)."""
    if chunk.page in gold_pages:
        return "same page as gold"
    if len(copies.get(text_key(chunk), ())) > 1:
        return "copy on another page"
    if product(chunk.page) in {product(p) for p in gold_pages}:
        return "same product, other page"
    return "other product"


def _band(values: Sequence[float], n_boot: int, seed: int) -> list[float]:
    mean, lo, hi = paired_bootstrap(values, [0.0] * len(values), n=n_boot, seed=seed)
    return [round(mean, 4), round(lo, 4), round(hi, 4)]


@dataclass
class SizeRuns:
    """Everything the size × seed × language runs measured, before it is summarised."""

    sizes: list[int]
    seeds: list[int]
    base_pages: list[str]
    pages_of: dict[str, set[str]]  # a chunk text -> the pages that render it (shared partials)
    per_question: dict[tuple[int, str, str], list[list[float]]] = field(default_factory=dict)  # -> per seed
    rows: list[dict[str, Scalar]] = field(default_factory=list)  # keyed by metrics that carry k (hit@5)
    q7_rows: list[Q7Run] = field(default_factory=list)
    slots: list[dict[str, Any]] = field(default_factory=list)  # counts per kind of slot (summarised as shares)
    q7_first: list[Q7First] = field(default_factory=list)
    by_slot: Counter[tuple[int, str, str]] = field(default_factory=Counter)
    # (size, language, gate) -> each unanswerable question declined, for the smallest and the whole corpus
    declines: dict[tuple[int, str, str], dict[str, bool]] = field(default_factory=dict)

    def of(self, rows: Sequence[dict[str, Any]], size: int, lang: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["pages"] == size and r["language"] == lang]


def measure(wide: Workbench, conf: Mapping[str, Any], languages: Sequence[str]) -> SizeRuns:
    """Rank every question on the whole wide batch once per language, then score each nested corpus
    (size × seed) by restricting those rankings: metrics, the gate, Q7's pieces and the Top-5 slots."""
    questions = wide.benchmark.questions(answerable=True)
    base_pages = sorted({c.page for c in load_chunks(default_batch())})
    all_pages = sorted({c.page for c in wide.chunks})
    sizes = sorted({len(base_pages), *(int(s) for s in conf["sizes"] if len(base_pages) < s < len(all_pages)),
                    len(all_pages)})
    runs = SizeRuns(sizes, [int(s) for s in conf["seeds"]], base_pages, {})
    for c in wide.embeddable:
        runs.pages_of.setdefault(text_key(c), set()).add(c.page)
    orders = page_orders(base_pages, all_pages, runs.seeds)
    q7 = wide.benchmark[Q7_ID]
    labelled = Workbench(config=wide.config)  # the gate is fitted at the same k
    for lang in languages:
        full = wide.run("dense", questions, lang)
        q7_full = wide.rank(q7.text(lang))
        for piece_id, chunks in zip(Q7_PIECES, q7.pieces, strict=True):  # whole wide batch
            first = min(chunks, key=q7_full.rank_of)
            runs.q7_first.append(Q7First(language=lang, piece=piece_id, rank=q7_full.rank_of(first), chunk=first,
                                         page=wide.by_id[first].page,
                                         added_page=wide.by_id[first].page not in set(base_pages)))
        # The gate as 03 fitted it on the labelled batch (in-sample for these questions), and out of sample:
        # each question decided by the parameters fitted without it on the labelled batch.
        gate = (calibrated_gate_parameters(lang),
                held_out_parameters(scored_questions(labelled, lang), "floor_aspects")[0])
        unanswerable_full = wide.run("dense", wide.benchmark.questions(answerable=False), lang)
        for size in sizes:
            for s in runs.seeds if len(base_pages) < size < len(all_pages) else runs.seeds[:1]:
                pages = set(orders[s][:size])
                _measure_corpus(runs, wide, lang, size, s, pages, full, unanswerable_full, q7_full, gate)
    return runs


def _measure_corpus(runs: SizeRuns, wide: Workbench, lang: str, size: int, s: int, pages: set[str],
                    full: Mapping[str, Ranking], unanswerable_full: Mapping[str, Ranking], q7_full: Ranking,
                    gate: tuple[dict[str, float], Mapping[str, dict[str, float]]]) -> None:
    """One nested corpus (``size`` pages, page order ``s``) in one language, appended to ``runs``."""
    fitted, held_out = gate
    k = wide.config.k
    questions = wide.benchmark.questions(answerable=True)
    unanswerable = wide.benchmark.questions(answerable=False)  # those still unanswerable on the wide batch
    aspects, base_set, q7 = AspectGate(), set(runs.base_pages), wide.benchmark[Q7_ID]
    allowed = {c.id for c in wide.embeddable if c.page in pages}
    ranked = {qid: restrict(r, allowed) for qid, r in full.items()}
    gold = {q.id: [p & allowed for p in q.pieces] for q in questions}
    table = evaluate(gold, ranked, (HitAt(k), PieceCoverage(10)))
    for m in size_metrics(k):
        runs.per_question.setdefault((size, lang, m), []).append([float(v) for v in table[m]])
    cases, held_cases, kinds, from_added = [], [], Counter(), 0
    copies = {k: v & pages for k, v in runs.pages_of.items()}
    for q in questions:
        top = ranked[q.id].ids[:k]
        seen = score_question(q, lang, ranked[q.id], [wide.by_id[c] for c in top], aspects)
        cases.append(Case(q.id, True, seen.label_insufficient, seen.declined_with(fitted)))
        held_cases.append(Case(q.id, True, seen.label_insufficient, seen.declined_with(held_out[q.id])))
        gold_pages = {wide.by_id[c].page for c in q.gold_chunks}
        for cid in top:
            if cid in q.gold_chunks:
                continue
            kinds[distractor_kind(wide.by_id[cid], gold_pages, copies)] += 1
            from_added += wide.by_id[cid].page not in base_set
    gate_scores, held_scores = score_cases(cases), score_cases(held_cases)
    refused: Counter[str] = Counter()
    for q in unanswerable:
        ranking = restrict(unanswerable_full[q.id], allowed)
        seen = score_question(q, lang, ranking, [wide.by_id[c] for c in ranking.ids[:k]], aspects)
        refused["in-sample"] += seen.declined_with(fitted)
        refused["held out"] += seen.declined_with(held_out[q.id])
        if size in (runs.sizes[0], runs.sizes[-1]):  # the same pages for every seed
            runs.declines.setdefault((size, lang, "in-sample"), {})[q.id] = seen.declined_with(fitted)
            runs.declines.setdefault((size, lang, "leave-one-out"), {})[q.id] = seen.declined_with(held_out[q.id])
    c1, c2, c3, c4 = piece_ranks([p & allowed for p in q7.pieces], restrict(q7_full, allowed))
    runs.q7_rows.append(Q7Run(pages=size, language=lang, seed=s, C1=c1, C2=c2, C3=c3, C4=c4))
    runs.slots.append({"pages": size, "language": lang, "seed": s, "non-gold slots": sum(kinds.values()),
                       "from added pages": from_added, **{k: kinds[k] for k in DISTRACTOR_KINDS}})
    runs.rows.append({"pages": size, "language": lang, "seed": s, "chunks": len(allowed),
                      **{m: round(float(table[m].mean()), 4) for m in size_metrics(k)},
                      "declined (answerable)": sum(c.declined for c in cases),
                      "complete declined": gate_scores.complete_declined, "complete": gate_scores.complete,
                      "complete declined (held out)": held_scores.complete_declined,
                      "unanswerable declined": refused["in-sample"],
                      "unanswerable declined (held out)": refused["held out"],
                      "unanswerable": len(unanswerable)})
    for cid in (c for q in questions for c in ranked[q.id].ids[:k] if c not in q.gold_chunks):
        runs.by_slot[size, lang, cid] += 1


def curve_and_change(runs: SizeRuns, languages: Sequence[str], n_boot: int,
                     seed: int, k: int) -> tuple[list[dict[str, Scalar]], list[SizeChange], FamilySummary]:
    """Per size and language: each metric (at top-``k``, as :func:`measure` took them) seed-averaged with its
    band, the gate's rates; and each size's paired change from the smallest corpus, judged as one Holm family
    (every size × language × metric of the change table)."""
    metrics = size_metrics(k)
    curve: list[dict[str, Scalar]] = []
    compared: list[Compared] = []
    smallest = len(runs.base_pages)
    for lang in languages:
        base_scores = {m: np.mean(runs.per_question[smallest, lang, m], axis=0) for m in metrics}
        for size in runs.sizes:
            entry: dict[str, Scalar] = {"pages": size, "language": lang}
            for m in metrics:
                seed_mean = np.mean(runs.per_question[size, lang, m], axis=0)  # per question, averaged over seeds
                entry[m], entry[f"{m} lo"], entry[f"{m} hi"] = _band(seed_mean.tolist(), n_boot, seed)
                if size != smallest:
                    compared.append((str(size), lang, m, compare(seed_mean.tolist(), base_scores[m].tolist(),
                                                                 n_boot, seed)))
            mine = runs.of(runs.rows, size, lang)
            entry["declined (answerable)"] = round(float(np.mean([r["declined (answerable)"] for r in mine])), 2)
            for label, suffix in (("", ""), (" (held out)", " (held out)")):
                entry[f"false refusal rate{label}"] = round(float(np.mean(
                    [r[f"complete declined{suffix}"] / r["complete"] for r in mine if r["complete"]])), 4)
                entry[f"unanswerable declined{label}"] = round(float(np.mean(
                    [r[f"unanswerable declined{suffix}"] / r["unanswerable"] for r in mine if r["unanswerable"]])), 4)
            entry["seeds"] = len(mine)
            curve.append(entry)
    family = judge_compared(compared, FAMILY_NAME, n_boot, seed)
    change = [SizeChange(pages=int(size), language=lang, metric=m, smallest=c.baseline, this_size=c.mechanism,
                         change=c.diff, **judged_fields(c, j))
              for (size, lang, m, c), j in zip(compared, family.judgements, strict=True)]
    return curve, change, FamilySummary.of(family)


@dataclass(frozen=True)
class Summaries:
    """What :func:`summaries` returns: the corpus sizes, Q7's ranks per size, the slot shares, the top distractors."""

    sizes: list[CorpusChunks]
    q7: list[Q7Span]
    slots: list[SlotShares]
    top_distractors: list[TopDistractor]


def refusal_changes(runs: SizeRuns, languages: Sequence[str]) -> list[RefusalChange]:
    """Per language and gate: unanswerable questions declined on the smallest corpus and on the whole batch,
    paired by question (McNemar's exact test on the questions that changed)."""
    out = []
    small, whole = runs.sizes[0], runs.sizes[-1]
    for lang in languages:
        for gate in ("in-sample", "leave-one-out"):
            a, b = runs.declines[small, lang, gate], runs.declines[whole, lang, gate]
            n = len(a)
            before, after = sum(a.values()), sum(b.values())
            diffs = [float(b[q]) - float(a[q]) for q in a]
            out.append(RefusalChange(lang, gate, n, before, wilson_text(before, n), after, wilson_text(after, n),
                                     sum(d > 0 for d in diffs), sum(d < 0 for d in diffs),
                                     stored_value(sign_test_p(diffs))))
    return out


def summaries(runs: SizeRuns, wide: Workbench, languages: Sequence[str]) -> Summaries:
    """Q7's ranks per size (a span over seeds), the Top-5 slots by kind, the chunks that take most slots in
    the whole wide batch, and the corpus sizes."""
    q7 = []
    for lang in languages:
        for size in runs.sizes:
            mine = [r for r in runs.q7_rows if r.pages == size and r.language == lang]
            q7.append(Q7Span(size, lang, *(rank_span([r.ranks[i] for r in mine]) for i in range(len(Q7_PIECES)))))
    slots = []
    for lang in languages:
        for size in runs.sizes:
            mine = runs.of(runs.slots, size, lang)
            total = sum(r["non-gold slots"] for r in mine)
            same_page, copy_elsewhere, same_product, other_product = (_share(sum(r[k] for r in mine), total)
                                                                      for k in DISTRACTOR_KINDS)
            slots.append(SlotShares(pages=size, language=lang, per_run=round(total / len(mine), 1),
                                    same_page=same_page, copy_elsewhere=copy_elsewhere, same_product=same_product,
                                    other_product=other_product,
                                    from_added=_share(sum(r["from added pages"] for r in mine), total)))
    top_distractors = []
    for lang in languages:
        counts = [(cid, n) for (size, la, cid), n in runs.by_slot.items() if size == runs.sizes[-1] and la == lang]
        for cid, n in sorted(counts, key=lambda x: (-x[1], x[0]))[:8]:
            chunk = wide.by_id[cid]
            top_distractors.append(TopDistractor(language=lang, chunk=cid, page=chunk.page,
                                                 heading=" › ".join(chunk.heading_path[-2:]), questions=n,
                                                 added_page=chunk.page not in set(runs.base_pages),
                                                 copies=len(runs.pages_of.get(text_key(chunk), ())) - 1))
    sizes = [CorpusChunks(size, round(float(np.mean(
        [r["chunks"] for r in runs.of(runs.rows, size, languages[0])])), 1)) for size in runs.sizes]
    return Summaries(sizes, q7, slots, top_distractors)


def run_corpus_size(languages: Sequence[str] = ("zh", "en"), n_boot: int = MIN_RESAMPLES,
                    seed: int = 0) -> CorpusSizeResult:
    """Every size × seed × language (:func:`measure`), summarised (:func:`curve_and_change`,
    :func:`summaries`); see the module docstring."""
    conf = scale_settings()
    wide = Workbench(conf["batch"])
    on_batch = wide.batch_benchmark
    runs = measure(wide, conf, languages)
    k = wide.config.k
    metrics = size_metrics(k)
    curve, change, claims = curve_and_change(runs, languages, n_boot, seed, k)
    summary = summaries(runs, wide, languages)
    return CorpusSizeResult(
        languages=list(languages), sizes=runs.sizes, seeds=runs.seeds, batch=conf["batch"],
        base_batch=default_batch(), n_answerable=len(wide.benchmark.questions(answerable=True)),
        labels=decode(WideBatchLabels, on_batch.to_json(), "labels"), size_rows=summary.sizes,
        label_rows=[LabelReview(q, "answered there: left out" if r.answered else "still unanswerable: kept", r.reason)
                    for q, r in sorted(on_batch.labels.absent_review.items())],
        curve=curve, change_rows=change,
        # the curve keyed by language and size, for make check (results/expected.yaml)
        by_size={lang: {str(r["pages"]): {m: r[m] for m in (*metrics, "declined (answerable)")}
                        for r in curve if r["language"] == lang} for lang in languages},
        runs=runs.rows, q7_runs=runs.q7_rows, q7_rows=summary.q7,
        slot_rows=summary.slots, top_distractors=summary.top_distractors, q7_first=runs.q7_first,
        gate={lang: GateParameters(**calibrated_gate_parameters(lang)) for lang in languages},
        refusal_changes=refusal_changes(runs, languages),
        provenance=CorpusSizeProvenance(
            retriever="dense", embedder=wide.embedder().describe(), n_boot=n_boot, seed=seed, claims=claims,
            scale=ScaleSettings(**conf), top=k,
            gate=f"floor+aspects with notebook 03's parameters (results/{GATE.name})",
            restriction="each smaller corpus ranks the wide batch's dense ranking restricted to its chunks "
                        "(identical to exact search over it)"),
    )


def _share(part: int, total: int) -> float:
    return round(part / total, 3) if total else 0.0


__all__ = ["FAMILY_NAME", "SizeRuns", "distractor_kind", "findings", "measure", "page_orders", "restrict",
           "result_metrics", "run_corpus_size", "scale_settings", "size_metrics", "text_key"]
