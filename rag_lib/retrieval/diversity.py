"""Diversity steps applied to a full :class:`Ranking`: MMR and near-duplicate demotion.

Both return a new *full* ranking so later ranks stay meaningful:

* :func:`mmr` re-orders the top ``candidates`` (default: all) by maximal marginal relevance;
  the rest keep their order below them.
* :func:`demote_near_duplicates` moves each near-duplicate to the end (in its original relative
  order) instead of dropping it, so a gold chunk that happens to be a near-duplicate still has a
  rank; ``drop=True`` removes them instead (then ``rank_of`` raises for them). The ids moved are
  listed in ``Ranking.demoted``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from rag_lib.retrieval.base import Ranking
from rag_lib.retrieval.dense import VectorIndex


def _rows(ranking: Ranking, index: VectorIndex, ids: Sequence[str]) -> np.ndarray:
    """Unit vectors of ``ids``, in that order."""
    row_of = {cid: i for i, cid in enumerate(index.ids)}
    missing = [cid for cid in ids if cid not in row_of]
    if missing:
        raise ValueError(
            f"{len(missing)} chunks of the {ranking.source} ranking have no vector (first: {missing[0]!r}); "
            "use the embedding matrix of the same chunks"
        )
    vectors = np.asarray(index.vectors, dtype=np.float64)[[row_of[cid] for cid in ids]]
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def mmr(
    ranking: Ranking,
    index: VectorIndex,
    query_vector: np.ndarray,
    *,
    lambda_: float = 0.5,
    candidates: int | None = None,
) -> Ranking:
    """Maximal marginal relevance (Carbonell & Goldstein, 1998) over the top candidates.

    Greedily picks ``argmax λ·cos(q, d) − (1−λ)·max_{s∈selected} cos(d, s)``; ties go to the
    candidate ranked higher in ``ranking``. The new scores are the MMR values at selection time;
    entries below ``candidates`` keep their old scores.

    Parameters
    ----------
    ranking : Ranking
        The input order; its top ``candidates`` are re-ordered.
    index : VectorIndex
        Chunk vectors (``ids``, ``vectors``), e.g. the embedding matrix.
    query_vector : ndarray
        The query embedding (same model as ``index``).
    lambda_ : float
        1.0 is pure relevance, 0.0 pure diversity.
    candidates : int, optional
        How many top entries to re-order; ``None`` means the whole ranking.
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    n = len(ranking) if candidates is None else min(candidates, len(ranking))
    head = list(ranking.ids[:n])
    vectors = _rows(ranking, index, head)
    q = np.asarray(query_vector, dtype=np.float64).reshape(-1)
    relevance = vectors @ (q / max(float(np.linalg.norm(q)), 1e-12))
    similarity = vectors @ vectors.T
    max_sim = np.full(n, -np.inf)
    remaining = np.ones(n, dtype=bool)
    order: list[int] = []
    values: list[float] = []
    for step in range(n):
        # With nothing selected yet the redundancy term is 0 (pure relevance for the first pick).
        redundancy = max_sim if step else np.zeros(n)
        value = np.where(remaining, lambda_ * relevance - (1.0 - lambda_) * redundancy, -np.inf)
        best = int(np.argmax(value))  # argmax returns the first maximum: higher original rank wins
        order.append(best)
        values.append(float(value[best]))
        remaining[best] = False
        max_sim = np.maximum(max_sim, similarity[:, best])
    ids = tuple(head[i] for i in order) + ranking.ids[n:]
    scores = tuple(values) + ranking.scores[n:]
    return Ranking(ids, scores, source=f"mmr({ranking.source},lambda={lambda_},n={n})")


_SHINGLE_WORD = re.compile(r"\w+")


def shingles(text: str, size: int = 3) -> frozenset[tuple[str, ...]]:
    """Word ``size``-grams of ``text`` (lowercased); short texts give one shingle of all words."""
    words = _SHINGLE_WORD.findall(text.lower())
    if len(words) < size:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def demote_near_duplicates(
    ranking: Ranking,
    *,
    index: VectorIndex | None = None,
    texts: Mapping[str, str] | None = None,
    threshold: float = 0.95,
    shingle_size: int = 3,
    depth: int | None = None,
    drop: bool = False,
) -> Ranking:
    """Walk the ranking top-down; a chunk too similar to a kept one is a near-duplicate.

    Similarity is the cosine of the chunk vectors when ``index`` is given, else the Jaccard
    similarity of word shingles of ``texts``; "too similar" means ``> threshold``.

    Parameters
    ----------
    ranking : Ranking
        The input ranking.
    index, texts :
        Exactly one: chunk vectors, or chunk id → text (e.g. ``Chunk.text``).
    threshold : float
        Cosine or Jaccard above which a chunk counts as a duplicate of a kept one.
    depth : int, optional
        Only look for duplicates among the top ``depth`` entries (``None``: all).
    drop : bool
        Remove duplicates instead of moving them to the end.
    """
    if (index is None) == (texts is None):
        raise ValueError("pass exactly one of index= (cosine) or texts= (shingle Jaccard)")
    n = len(ranking) if depth is None else min(depth, len(ranking))
    head = ranking.ids[:n]
    duplicate = np.zeros(n, dtype=bool)
    if index is not None:
        vectors = _rows(ranking, index, head)
        kept: list[int] = []
        for i in range(n):
            if kept and float(np.max(vectors[kept] @ vectors[i])) > threshold:
                duplicate[i] = True
            else:
                kept.append(i)
        method = f"cosine>{threshold}"
    else:
        assert texts is not None
        sets = [shingles(texts[cid], shingle_size) for cid in head]
        kept_sets: list[frozenset[tuple[str, ...]]] = []
        for i, s in enumerate(sets):
            if any(jaccard(s, k) > threshold for k in kept_sets):
                duplicate[i] = True
            else:
                kept_sets.append(s)
        method = f"jaccard{shingle_size}>{threshold}"
    keep = [i for i in range(n) if not duplicate[i]]
    moved = [i for i in range(n) if duplicate[i]]
    ids = [head[i] for i in keep] + list(ranking.ids[n:])
    scores = [ranking.scores[i] for i in keep] + list(ranking.scores[n:])
    if not drop:
        ids += [head[i] for i in moved]
        scores += [ranking.scores[i] for i in moved]
    return Ranking(
        tuple(ids), tuple(scores), source=f"dedup({ranking.source},{method})",
        demoted=tuple(head[i] for i in moved),
    )
