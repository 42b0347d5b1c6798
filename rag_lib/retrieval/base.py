"""The retrieval protocol and the :class:`Ranking` every retriever returns.

A Ranking is never truncated: it orders *every* embeddable chunk, so a gold chunk at
rank 52 can be reported as rank 52 instead of "not retrieved".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Ranking:
    """A full ordered list of ``(chunk_id, score)``, best first.

    Parameters
    ----------
    ids : tuple of str
        Chunk ids, best first; each id appears once.
    scores : tuple of float
        The score the last stage assigned, aligned with ``ids``. Scores of different
        stages live on different scales (cosine, BM25, RRF, sigmoid); only the order is
        comparable across stages.
    n_matched : int or None
        How many leading entries the retriever actually matched (e.g. BM25 score > 0);
        the rest follow in chunk order only to keep the ranking full. ``None`` means all.
    source : str
        What produced the ranking, e.g. ``"dense"`` or ``"rrf(dense,bm25)"``.
    """

    ids: tuple[str, ...]
    scores: tuple[float, ...]
    n_matched: int | None = None
    source: str = ""
    demoted: tuple[str, ...] = field(default=())  # ids a diversity step moved to the end

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.scores):
            raise ValueError(f"Ranking has {len(self.ids)} ids but {len(self.scores)} scores; pass one score per id.")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("Ranking ids must be unique; remove repeated chunk ids before building it.")

    @classmethod
    def from_scores(
        cls, ids: Sequence[str], scores: np.ndarray, *, source: str = "", n_matched: int | None = None
    ) -> Ranking:
        """Order ``ids`` by descending score; ties keep the order of ``ids`` (chunk order)."""
        scores = np.asarray(scores, dtype=np.float64)
        order = np.argsort(-scores, kind="stable")  # stable sort = deterministic tie-break
        return cls(tuple(ids[i] for i in order), tuple(float(scores[i]) for i in order), n_matched, source)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return iter(zip(self.ids, self.scores, strict=True))

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._positions

    @property
    def matched_ids(self) -> tuple[str, ...]:
        """The ids the retriever actually matched (all of them unless ``n_matched`` is set)."""
        return self.ids if self.n_matched is None else self.ids[: self.n_matched]

    def rank_of(self, chunk_id: str) -> int:
        """1-based rank of ``chunk_id``.

        Raises
        ------
        KeyError
            If the chunk is not in the ranking (not embeddable, or dropped by a diversity step).
        """
        try:
            return self._positions[chunk_id] + 1
        except KeyError:
            raise KeyError(
                f"chunk {chunk_id!r} is not in this {self.source or 'ranking'} ranking of {len(self)} chunks; "
                "check that it is an embeddable chunk of the same snapshot, or use `in` first"
            ) from None

    def top(self, k: int) -> list[tuple[str, float]]:
        """The first ``k`` ``(chunk_id, score)`` pairs."""
        if k < 0:
            raise ValueError(f"top(k) needs k >= 0, got {k}")
        return list(zip(self.ids[:k], self.scores[:k], strict=True))


@runtime_checkable
class Retriever(Protocol):
    """Anything that turns a query into a full :class:`Ranking`."""

    name: str

    def rank(self, query: str) -> Ranking:
        """Rank every indexed chunk for ``query``."""
        ...
