"""A reranker over the dense top candidates: the paper's cross-encoder when its files are here,
and the offline LLM reranker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.core.errors import WorkbookError
from rag_lib.evaluation import piece_ranks
from rag_lib.experiments.mechanisms.registry import (
    BaselineDense,
    BuildContext,
    FromSettings,
    RankFailed,
    Variant,
    mechanism,
)
from rag_lib.generation.llm_calls import LLMCallError, ReplayMissError
from rag_lib.pipeline.workbench import Workbench
from rag_lib.rerank import available_rerankers, get_reranker
from rag_lib.results.mechanism import RerankerVariant, Strata
from rag_lib.retrieval import Ranking

RERANKER = "bge-reranker-v2-m3"  # the casebook's cross-encoder


def _recorded_rank(rerank: Callable[[str], Ranking]) -> Callable[[str], Ranking]:
    """A reranking whose scores are recorded LLM calls: a missing or failed call fails the question."""
    def rank(text: str) -> Ranking:
        try:
            return rerank(text)
        except ReplayMissError as exc:
            raise RankFailed("replay_miss", str(exc)) from exc
        except LLMCallError as exc:
            raise RankFailed(exc.kind, str(exc)) from exc
    return rank


def earlier_subset(questions: Sequence[Question], size: int = 20, seed: int = 0) -> frozenset[str]:
    """The reranker's earlier design: a seeded subset of ``size`` questions, stratified by compound /
    single-piece. It was drawn without looking at any ranking, so a random draw from it is a random draw."""
    rng = np.random.default_rng(seed)
    groups = [sorted(q.id for q in questions if q.compound == c) for c in (True, False)]
    total = sum(len(g) for g in groups)
    picked: list[str] = []
    for group in groups:
        share = round(size * len(group) / total) if total else 0
        picked += list(rng.choice(group, size=min(share, len(group)), replace=False)) if group else []
    return frozenset(picked)


def misses_plus_equal(questions: Sequence[Question], base: Callable[[str], Ranking], k: int,
                      languages: Sequence[str], seed: int = 0,
                      draw_from: frozenset[str] | None = None) -> tuple[frozenset[str], Strata]:
    """Every question whose baseline Top-``k`` misses a piece in any of ``languages``, plus as many of the
    others drawn at random (seeded): a design in which a reranker can both help and hurt.

    ``draw_from``, when it holds enough of the others, is where they are drawn from (questions whose LLM
    judgements are already recorded: a random draw from a random subset is still a random draw, and each
    question costs 40 calls of minutes on 2 cores). Returns the question ids and the two :class:`Strata` (``misses``,
    ``sample``), sorted.
    """
    def misses(q: Question) -> bool:
        return any(r is None or r > k for lang in languages for r in piece_ranks(q.pieces, base(q.text(lang))))

    missed = sorted(q.id for q in questions if misses(q))
    rest = sorted(q.id for q in questions if q.id not in set(missed))
    if draw_from is not None and len(set(rest) & draw_from) >= len(missed):
        rest = sorted(set(rest) & draw_from)
    rng = np.random.default_rng(seed)
    sample = sorted(str(x) for x in rng.choice(rest, size=min(len(missed), len(rest)), replace=False)) if rest else []
    return frozenset(missed + sample), Strata(misses=missed, sample=sample)


def reciprocal_rank(pieces: Sequence[frozenset[str]], ranking: Ranking) -> float:
    """1 / rank of the first chunk of any gold piece (0 when none is ranked)."""
    found = [r for r in piece_ranks(pieces, ranking) if r is not None]
    return 1.0 / min(found) if found else 0.0


class Interpolated:
    """``w`` · dense score (min-max over the candidates) + (1 − ``w``) · reranker score, re-ordering the
    dense top ``n``; ``w`` is chosen per question from a grid by leave-one-question-out: the weight with
    the best mean reciprocal rank over the other fitting questions of the same language (ties: the larger
    ``w``, nearer the baseline). A Q7 phrasing is weighted without any of Q7's texts.
    """

    GRID = tuple(i / 10 for i in range(11))

    def __init__(self, wb: Workbench, base: Callable[[str], Ranking], score: Callable[[str, list[str]], np.ndarray],
                 n: int, fit_ids: frozenset[str], languages: Sequence[str]) -> None:
        self.base, self.score, self.n = base, score, n
        self.texts = {c.id: c.embed_input for c in wb.embeddable}
        self.questions = {q.id: q for q in wb.benchmark.questions(answerable=True)}
        self.fit_ids = sorted(fit_ids & set(self.questions))
        self.owner: dict[str, tuple[str, str]] = {}  # question text -> (question id, language)
        for q in self.questions.values():
            for lang in languages:
                for phrasing in (None, *(p.id for p in q.phrasings)):
                    self.owner.setdefault(q.text(lang, phrasing), (q.id, lang))
        self._candidates: dict[str, tuple[tuple[str, ...], np.ndarray, np.ndarray]] = {}
        self.chosen: dict[str, dict[str, float]] = {}  # language -> question id -> w (provenance)

    def candidates(self, text: str) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """The dense top ``n`` of ``text``: ids, dense scores min-max scaled to [0, 1], reranker scores."""
        if text not in self._candidates:
            ranking = self.base(text)
            ids = ranking.ids[: self.n]
            dense = np.asarray(ranking.scores[: self.n], dtype=np.float64)
            spread = float(dense.max() - dense.min()) if len(dense) else 0.0
            scaled = (dense - dense.min()) / spread if spread > 0 else np.zeros_like(dense)
            self._candidates[text] = (ids, scaled, np.asarray(self.score(text, [self.texts[c] for c in ids])))
        return self._candidates[text]

    def ranking(self, text: str, w: float) -> Ranking:
        ids, dense, rerank = self.candidates(text)
        combined = w * dense + (1 - w) * rerank
        order = np.argsort(-combined, kind="stable")
        rest = self.base(text)
        return Ranking(tuple(ids[i] for i in order) + rest.ids[len(ids):],
                       tuple(float(combined[i]) for i in order) + rest.scores[len(ids):],
                       source=f"interpolate(dense,rerank,w={w:.1f},n={len(ids)})")

    def weight(self, question_id: str, lang: str) -> float:
        if question_id in self.chosen.get(lang, {}):  # fitted already (Q7's phrasings share one weight)
            return self.chosen[lang][question_id]
        fit = [self.questions[q] for q in self.fit_ids if q != question_id]
        best, best_mean = 1.0, -1.0  # nothing to fit on: the dense order
        for w in sorted(self.GRID, reverse=True) if fit else ():
            mean = float(np.mean([reciprocal_rank(q.pieces, self.ranking(q.text(lang), w)) for q in fit]))
            if mean > best_mean:
                best, best_mean = w, mean
        self.chosen.setdefault(lang, {})[question_id] = best
        return best

    def __call__(self, text: str) -> Ranking:
        question_id, lang = self.owner[text]
        return self.ranking(text, self.weight(question_id, lang))


def reranker_variants(wb: Workbench, base: BaselineDense, name: str = RERANKER, candidates: int | None = None,
                      questions: str = "all", languages: Sequence[str] = ("zh", "en"),
                      interpolate: bool = False) -> list[Variant]:
    """Reranker ``name`` over the baseline's top candidates (default: the workbench's ``config.rerank_candidates``).

    ``questions`` is ``"all"`` (every answerable question) or ``"misses+equal"``
    (:func:`misses_plus_equal` at the workbench's ``config.k``: an LLM reranker costs minutes per question here); Q7
    always runs on every phrasing. ``interpolate`` adds the reranker's score interpolated with the dense
    score (:class:`Interpolated`), from the same recorded judgements.
    """
    n = int(candidates or wb.config.rerank_candidates)
    reranker = get_reranker(name)
    texts = {c.id: c.embed_input for c in wb.embeddable}
    ids, strata = None, None
    notes = []
    if questions == "misses+equal":
        k = wb.config.k
        answerable = wb.benchmark.questions(answerable=True)
        ids, strata = misses_plus_equal(answerable, base, k, languages, draw_from=earlier_subset(answerable))
        notes = [f"A stratified sample of {len(ids)} of the {len(answerable)} answerable questions, not the whole "
                 f"benchmark and not weighted back to it: the {len(strata.misses)} whose dense Top-{k} misses a "
                 f"piece in zh or en, plus {len(strata.sample)} of the rest drawn at random (seed 0; from the earlier "
                 "seeded 20-question subset, whose judgements were recorded), so the reranker can both help and hurt; "
                 "half of the sample are baseline misses, so its differences overstate what the reranker can gain "
                 "on the benchmark and understate what it can lose. Q7 on every phrasing."]
    elif questions != "all":
        raise WorkbookError(f"retrieval.offline_reranker_questions is {questions!r}; use 'all' or 'misses+equal'.")
    provenance = RerankerVariant(reranker.provenance, questions, strata)
    variants = [Variant(f"{name} top-{n}", f"{name} re-scores the dense top {n}",
                        _recorded_rank(lambda text: reranker.rerank(text, base(text), texts, top_n=n)),
                        provenance=provenance, question_ids=ids, notes=notes)]
    if interpolate:
        mixed = Interpolated(wb, base, reranker.score, n, ids if ids is not None else frozenset(
            q.id for q in wb.benchmark.questions(answerable=True)), languages)
        variants.append(Variant(
            f"{name} top-{n} + dense", f"{name}'s score interpolated with the dense score over the dense top {n} "
            "(weight chosen leave-one-question-out)", _recorded_rank(mixed),
            # mixed.chosen fills in as the variant ranks: the weights stored are those it used
            provenance=replace(provenance, grid=list(Interpolated.GRID), weights=mixed.chosen),
            question_ids=ids, notes=[*notes, "The weight w of the dense score is chosen for each question without it "
                                     "(leave-one-question-out over the same questions, best mean reciprocal rank), "
                                     "so the figure is out of sample."]))
    return variants


@mechanism("reranker", "a reranker re-scores the dense top candidates: the paper's cross-encoder when its files "
           "are here, and always the offline LLM reranker (replayed)", paper=RERANKER,
           offline=FromSettings("retrieval.offline_reranker"), candidates=FromSettings("retrieval.rerank_candidates"),
           offline_questions=FromSettings("retrieval.offline_reranker_questions"))
def _reranker(ctx: BuildContext, paper: str, offline: str, candidates: int,
              offline_questions: str) -> tuple[list[Variant], dict[str, str]]:
    status = available_rerankers()
    ctx.rerankers = {name: ok is True for name, ok in status.items()}
    missing = {name: str(ok) for name, ok in status.items() if ok is not True}
    variants = reranker_variants(ctx.wb, ctx.base, paper, candidates) if status.get(paper) is True else []
    if status.get(offline) is True:
        variants += reranker_variants(ctx.wb, ctx.base, offline, candidates, str(offline_questions), interpolate=True)
    return variants, missing
