"""08's Q7 side-by-side rows as its tables show them: ranks inside the Top-10 in bold (the casebook's green
cells), or inside a row's larger evidence; a rank tied at the Top-10 cut gets ``≈`` and no bold.

The marks are applied when a table is rendered, from the stored rows (``side_by_side`` and ``evidence_k`` of
08's ``results.json``): 08's report, the notebook and the README's headline through :func:`side_by_side_table`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.presentation.report import markdown_table
from rag_lib.results.summary import Q7Ranks, SideBySideRow
from rag_lib.results.typed_json import Scalar, decode, encode

# Bold in the Q7 tables: inside the Top-10 (the casebook's green cells), or inside a larger evidence. A fixed
# cut of the tables, not the retrieval k.
BOLD_WITHIN = 10
COLUMNS = ("row", *Q7_PIECES)


def highlight(rows: Sequence[SideBySideRow | Mapping[str, object]], k: int = BOLD_WITHIN,
              evidence_k: Mapping[str, int] | None = None) -> list[dict[str, Scalar | list[str]]]:
    """The rows (typed, or as ``results.json`` stores them) as the tables show them: ranks inside the Top-k in
    bold, or inside a row's larger evidence (``evidence_k``: row label → evidence size); a rank tied at the
    Top-k cut (``ties``) is neither: it gets ``≈`` and no bold."""
    out = []
    for stored in rows:
        row = stored if is_dataclass(stored) else decode(SideBySideRow, stored, "side_by_side")
        marked = encode(row)
        cut = max(k, (evidence_k or {}).get(row.row, k))
        for p in Q7_PIECES if isinstance(row, Q7Ranks) else ():
            value = row.rank(p)
            if value is not None and p in row.tied and cut == k:
                marked[p] = f"{value}≈"
            elif value is not None and value <= cut:
                marked[p] = f"**{value}**"
            elif value is None:
                marked[p] = "—"
        out.append(marked)
    return out


def side_by_side_table(rows: Sequence[SideBySideRow | Mapping[str, object]],
                       evidence_k: Mapping[str, int] | None = None) -> str:
    """The side-by-side rows of one language as a Markdown table (:func:`highlight`, columns ``row``, C1–C4)."""
    return markdown_table(highlight(rows, evidence_k=evidence_k), COLUMNS)
