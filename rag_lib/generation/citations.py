"""Citation check: every cited chunk id must have been sent, every quote must be in that chunk.

Rules (production lessons, seed 004: "verify every id before rendering", "link to the source
position, not the document"):

* the cited ``chunk_id`` must be one of the chunks sent to the model (else ``unknown_id``);
* the quote must be a verbatim substring of *that one* chunk, up to whitespace (else
  ``quote_not_found``); a quote that joins text from two chunks is therefore rejected;
* an empty or whitespace-only id or quote is ``empty``;
* the quote must be a meaningful span of the chunk, never a word fragment, markup or text that
  addresses a model (``fragment``, ``markup``, ``partial``, ``flagged``:
  :func:`rag_lib.generation.support.span_problem`), so a quote of ``e`` or ``| --- |`` supports
  nothing.

Invalid citations are dropped and counted with their reason. Each valid one gets character
offsets into the normalized page (``chunk.start`` + position in the chunk) and a deep link: the
page URL without its fragment plus a ``#:~:text=`` text fragment built from the quote.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote as _percent_encode

from rag_lib.core.documents import Chunk
from rag_lib.generation.schema import Citation
from rag_lib.generation.support import chunk_units, span_problem, table_header
from rag_lib.verification.rules import CitedUnit

INVALID_REASONS = ("unknown_id", "quote_not_found", "empty", "fragment", "markup", "partial", "flagged")

# Text fragments longer than this many words use the ``textStart,textEnd`` form, which browsers
# match more reliably than a long exact string.
_FRAGMENT_MAX_WORDS = 8
_FRAGMENT_EDGE_WORDS = 4
# Markdown markup the browser does not render as text; a fragment containing it would not match.
_MARKUP = re.compile(r"[`*]+")


def normalize_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """Locate ``quote`` in ``text`` allowing only whitespace differences.

    Returns
    -------
    (start, end) offsets into ``text`` of the first match, or ``None``.
    """
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, text)
    return (match.start(), match.end()) if match else None


def text_fragment(quote: str) -> str:
    """The ``#:~:text=`` fragment for ``quote`` (URL-encoded, markup stripped)."""
    words = normalize_whitespace(_MARKUP.sub("", quote)).split()
    if len(words) > _FRAGMENT_MAX_WORDS:
        start = " ".join(words[:_FRAGMENT_EDGE_WORDS])
        end = " ".join(words[-_FRAGMENT_EDGE_WORDS:])
        return f"#:~:text={_encode_fragment_part(start)},{_encode_fragment_part(end)}"
    return f"#:~:text={_encode_fragment_part(' '.join(words))}"


def _encode_fragment_part(text: str) -> str:
    # '-', ',' and '&' are syntax inside a text directive, so they must be percent-encoded too.
    return _percent_encode(text, safe="").replace("-", "%2D")


def deep_link(chunk: Chunk, quote: str) -> str:
    """Page URL without its fragment, plus a text fragment that highlights ``quote``."""
    return chunk.url.split("#", 1)[0] + text_fragment(quote)


@dataclass(frozen=True)
class CheckedCitation:
    """One citation after the check; ``reason`` is ``None`` for a valid one."""

    chunk_id: str
    quote: str
    reason: str | None = None
    deep_link: str | None = None
    page: str | None = None
    page_start: int | None = None  # offsets into the normalized page markdown
    page_end: int | None = None

    @property
    def valid(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id, "quote": self.quote, "valid": self.valid, "reason": self.reason,
            "deep_link": self.deep_link, "page": self.page,
            "page_start": self.page_start, "page_end": self.page_end,
        }


@dataclass(frozen=True)
class CitationReport:
    """All citations of one answer, checked against the evidence that was sent."""

    checked: tuple[CheckedCitation, ...]

    @property
    def valid(self) -> tuple[CheckedCitation, ...]:
        return tuple(c for c in self.checked if c.valid)

    @property
    def dropped(self) -> tuple[CheckedCitation, ...]:
        return tuple(c for c in self.checked if not c.valid)

    @property
    def n_valid(self) -> int:
        return len(self.valid)

    @property
    def n_total(self) -> int:
        return len(self.checked)

    @property
    def validity(self) -> float | None:
        """valid / total; ``None`` when nothing was cited (no ratio to report)."""
        return self.n_valid / self.n_total if self.checked else None

    @property
    def dropped_by_reason(self) -> dict[str, int]:
        counts = Counter(c.reason for c in self.dropped)
        return {reason: counts.get(reason, 0) for reason in INVALID_REASONS}

    def to_json(self) -> dict[str, Any]:
        return {
            "n_valid": self.n_valid, "n_total": self.n_total, "validity": self.validity,
            "dropped_by_reason": self.dropped_by_reason,
            "citations": [c.to_json() for c in self.checked],
        }


def _fields(citation: Any) -> tuple[str, str]:
    if isinstance(citation, Mapping):
        return str(citation.get("chunk_id") or ""), str(citation.get("quote") or "")
    return str(getattr(citation, "chunk_id", "") or ""), str(getattr(citation, "quote", "") or "")


def check_citation(chunk_id: str, quote: str, evidence: Mapping[str, Chunk]) -> CheckedCitation:
    """Check one citation against the chunks that were sent, keyed by id."""
    if not chunk_id.strip() or not quote.strip():
        return CheckedCitation(chunk_id, quote, reason="empty")
    chunk = evidence.get(chunk_id.strip())
    if chunk is None:
        return CheckedCitation(chunk_id, quote, reason="unknown_id")
    span = find_quote(quote, chunk.text)
    if span is None:
        return CheckedCitation(chunk_id, quote, reason="quote_not_found")
    problem = span_problem(chunk.text, *span)
    if problem is not None:
        return CheckedCitation(chunk_id, quote, reason=problem)
    return CheckedCitation(
        chunk_id, quote, deep_link=deep_link(chunk, quote), page=chunk.page,
        page_start=chunk.start + span[0], page_end=chunk.start + span[1],
    )


def check_citations(citations: Iterable[Any], evidence: Sequence[Chunk]) -> CitationReport:
    """Check every citation (objects or mappings with ``chunk_id`` and ``quote``).

    Parameters
    ----------
    citations
        What the model cited, in order.
    evidence
        The chunks that were sent to the model; only these ids are accepted.
    """
    by_id = {chunk.id: chunk for chunk in evidence}
    return CitationReport(tuple(check_citation(*_fields(c), by_id) for c in citations))


def cited_units(citations: Sequence[Citation | CheckedCitation], evidence: Sequence[Chunk]) -> list[CitedUnit]:
    """Valid quotes as the verification stage reads them: each with its table's header row when it is a
    table row (which column is which plan)."""
    by_id = {chunk.id: chunk for chunk in evidence}
    units = []
    for citation in citations:
        chunk = by_id[citation.chunk_id]
        span = find_quote(citation.quote, chunk.text)
        units.append(CitedUnit(citation.quote, table_header(chunk.text, span[0]) if span else None,
                               unit_context(chunk)))
    return units


def unit_context(chunk: Chunk) -> str:
    """What a unit of ``chunk`` is about when its own words do not say: page path, title and heading path."""
    return " > ".join((chunk.page, chunk.title, *chunk.heading_path))


def evidence_units(evidence: Sequence[Chunk]) -> list[CitedUnit]:
    """Every unit (sentence, list item, table row with its header) of the evidence: what a cited unit is
    checked for conflicts against, and what tells whether the evidence names something at all."""
    return [CitedUnit(text, header, unit_context(chunk))
            for chunk in evidence for _, text, header in chunk_units(chunk.text)]
