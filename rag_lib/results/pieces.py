"""Q7's gold pieces as the columns of a stored row, read by piece name.

A typed row declares one field per piece (``C1`` … ``C4``, the order of
:data:`rag_lib.benchmark.questions.Q7_PIECES`, their one home) so that results.json and the report's tables
name them; :class:`PieceColumns` reads those fields through ``Q7_PIECES`` instead of spelling the names out,
and ``tests/test_typed_results.py`` checks that every such row declares exactly these fields.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rag_lib.benchmark.questions import Q7_PIECES

T = TypeVar("T")


class PieceColumns(Generic[T]):
    """Mixin for a typed row with one field per Q7 piece (a first rank, or its text)."""

    def rank(self, piece: str) -> T:
        """The value of ``piece`` (``"C1"`` … ``"C4"``)."""
        if piece not in Q7_PIECES:
            raise KeyError(f"{piece!r} is not one of Q7's pieces ({', '.join(Q7_PIECES)})")
        return getattr(self, piece)

    @property
    def ranks(self) -> tuple[T, ...]:
        """Every piece's value, in piece order."""
        return tuple(getattr(self, p) for p in Q7_PIECES)

    def by_piece(self) -> dict[str, T]:
        """Piece → value, in piece order."""
        return {p: getattr(self, p) for p in Q7_PIECES}
