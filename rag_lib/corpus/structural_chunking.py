"""Structure-aware chunking (casebook section 08).

A heading, a paragraph, a list item, a table, a code block, a blockquote (an aside) and a
``<details>`` element are each a *block*. A heading is bound to the explanation right below it;
a chunk never crosses a heading; chunks stay within about ``max_chars`` characters with zero
overlap; tables, code blocks and ``<details>`` are never split: one that is larger than the limit
is kept whole and the chunk is flagged ``oversized``. A heading with no body of its own becomes a
heading-only chunk that is kept but marked not embeddable.

Every chunk is a span of the normalized page (``text == markdown[start:end]``), and the gaps
between a page's chunks hold only whitespace, so nothing is lost and nothing is duplicated.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.core.documents import Chunk, NormalizedPage
from rag_lib.core.errors import ChunkingError
from rag_lib.core.text import MARKDOWN_LINK


def max_chars_setting() -> int:
    """The chunk size limit: ``chunking.max_chars`` in ``config.yaml`` (its one home)."""
    from rag_lib.core.config import settings

    return int(settings()["chunking"]["max_chars"])


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)")
_DETAILS_OPEN = re.compile(r"<details\b", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """One structural unit of a page: ``markdown[start:end]``."""

    kind: str  # heading | paragraph | list_item | table | code | details | quote
    start: int
    end: int
    level: int = 0  # heading level (1-6); 0 for other blocks
    heading: str = ""  # plain heading text, for headings


class _Lines:
    """The page split into lines, with the character offset where each line starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.offsets: list[int] = []
        pos = 0
        for line in self.lines:
            self.offsets.append(pos)
            pos += len(line) + 1

    def __len__(self) -> int:
        return len(self.lines)

    def end_of(self, i: int) -> int:
        """Offset just past the last non-whitespace character of line ``i``."""
        return self.offsets[i] + len(self.lines[i].rstrip())


def plain_heading(text: str) -> str:
    """Heading text without Markdown decoration: links, code ticks, emphasis."""
    text = MARKDOWN_LINK.sub(r"\1", text)
    text = re.sub(r"(?<!\w)_{1,2}([^_]+?)_{1,2}(?!\w)", r"\1", text)  # _emphasis_, not _routes.json
    text = re.sub(r"[`*]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def anchor_slug(heading: str) -> str:
    """The fragment a documentation site gives a heading (github-slugger rules)."""
    text = unicodedata.normalize("NFKC", plain_heading(heading)).lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def _is_blank(line: str) -> bool:
    return not line.strip()


def _starts_block(line: str) -> bool:
    """True when ``line`` opens a block other than a paragraph continuation."""
    stripped = line.lstrip()
    return bool(
        _HEADING.match(line)
        or _FENCE.match(line)
        or _LIST_ITEM.match(line)
        or stripped.startswith("|")
        or stripped.startswith(">")
        or _DETAILS_OPEN.match(stripped)
    )


def _close_fence(lines: _Lines, i: int, page: str) -> int:
    """Index of the line that closes the fence opened on line ``i``."""
    match = _FENCE.match(lines.lines[i])
    assert match is not None
    marker = match.group(1)
    closer = re.compile(rf"^[ \t]*{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
    for j in range(i + 1, len(lines)):
        if closer.match(lines.lines[j]):
            return j
    raise ChunkingError(
        f"{page}: code fence {marker!r} opened on line {i + 1} is never closed. "
        "Close it in the source (or fix the normaliser) so code is not merged with the text after it."
    )


def _close_details(lines: _Lines, i: int, page: str) -> int:
    """Index of the line holding the ``</details>`` matching the one opened on line ``i``."""
    depth = 0
    j = i
    while j < len(lines):
        line = lines.lines[j]
        if j > i and _FENCE.match(line):
            j = _close_fence(lines, j, page) + 1
            continue
        depth += len(_DETAILS_OPEN.findall(line)) - len(_DETAILS_CLOSE.findall(line))
        if depth <= 0:
            return j
        j += 1
    raise ChunkingError(f"{page}: <details> opened on line {i + 1} is never closed; add the </details>.")


def _list_item_end(lines: _Lines, i: int, page: str) -> int:
    """Index of the last line of the list item that starts on line ``i``."""
    match = _LIST_ITEM.match(lines.lines[i])
    assert match is not None
    indent = len(match.group(1))
    last = i
    j = i + 1
    while j < len(lines):
        line = lines.lines[j]
        if _is_blank(line):
            # A blank line continues the item only if indented content follows it.
            k = j
            while k < len(lines) and _is_blank(lines.lines[k]):
                k += 1
            if k < len(lines) and len(lines.lines[k]) - len(lines.lines[k].lstrip()) > indent:
                j = k
                continue
            break
        line_indent = len(line) - len(line.lstrip())
        if line_indent <= indent and (_starts_block(line)):
            break  # a sibling item or another block at the item's own level
        if _FENCE.match(line):
            j = _close_fence(lines, j, page)
        last = j
        j += 1
    return last


def parse_blocks(markdown: str, page: str = "<page>") -> list[Block]:
    """Split a normalized page into its blocks, in order.

    Raises
    ------
    ChunkingError
        For an unclosed code fence or ``<details>`` element.
    """
    lines = _Lines(markdown)
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines.lines[i]
        stripped = line.lstrip()
        if _is_blank(line):
            i += 1
            continue
        start = lines.offsets[i] + (len(line) - len(stripped))
        if _FENCE.match(line):
            j = _close_fence(lines, i, page)
            kind = "code"
        elif heading := _HEADING.match(line):
            blocks.append(
                Block("heading", start, lines.end_of(i), len(heading.group(1)), plain_heading(heading.group(2)))
            )
            i += 1
            continue
        elif _DETAILS_OPEN.match(stripped):
            j, kind = _close_details(lines, i, page), "details"
        elif stripped.startswith("|"):
            j = i
            while j + 1 < len(lines) and lines.lines[j + 1].lstrip().startswith("|"):
                j += 1
            kind = "table"
        elif stripped.startswith(">"):
            j = i
            while j + 1 < len(lines) and lines.lines[j + 1].lstrip().startswith(">"):
                j += 1
            kind = "quote"
        elif _LIST_ITEM.match(line):
            j, kind = _list_item_end(lines, i, page), "list_item"
        else:
            j = i
            while j + 1 < len(lines) and not _is_blank(lines.lines[j + 1]) and not _starts_block(lines.lines[j + 1]):
                j += 1
            kind = "paragraph"
        blocks.append(Block(kind, start, lines.end_of(j)))
        i = j + 1
    return blocks


def chunk_id(slug: str, ordinal: int, text: str) -> str:
    """``<page-slug>-<ordinal:03d>-<sha256(text)[:8]>``: stable for the same text at the same place."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{slug.replace('/', '-')}-{ordinal:03d}-{digest}"


def chunk_id_slug(cid: str) -> str:
    """The page-slug part of a :func:`chunk_id` (``/`` written as ``-``); a chunk id names its page."""
    return cid.rsplit("-", 2)[0]


def chunk_id_digest(cid: str) -> str:
    """The text-hash part of a :func:`chunk_id`: equal for the same text wherever it is rendered."""
    return cid.rsplit("-", 1)[-1]


def _sections(blocks: Sequence[Block]) -> list[list[Block]]:
    """Group blocks so that each group starts at a heading (the first may have none)."""
    groups: list[list[Block]] = [[]]
    for block in blocks:
        if block.kind == "heading":
            groups.append([block])
        else:
            groups[-1].append(block)
    return [g for g in groups if g]


def _pack(section: list[Block], max_chars: int) -> list[list[Block]]:
    """Greedily pack a section's blocks into chunks of at most ``max_chars`` characters.

    The heading stays with the first block below it; a single block larger than the limit
    becomes a chunk of its own (with the heading, when it is the first).
    """
    packs: list[list[Block]] = []
    current: list[Block] = []
    for block in section:
        has_body = any(b.kind != "heading" for b in current)
        if has_body and block.end - current[0].start > max_chars:
            packs.append(current)
            current = []
        current.append(block)
    if current:
        packs.append(current)
    return packs


def chunk_page(page: NormalizedPage, max_chars: int) -> list[Chunk]:
    """Cut one normalized page into chunks.

    Parameters
    ----------
    page
        The page; its ``markdown`` is cut, its ``title`` and ``url`` are carried by every chunk.
    max_chars
        Soft size limit; only a single unsplittable block may exceed it.
    """
    blocks = parse_blocks(page.markdown, page.slug)
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []  # (level, heading) of the enclosing headings
    for section in _sections(blocks):
        head = section[0] if section[0].kind == "heading" else None
        if head is not None:
            while stack and stack[-1][0] >= head.level:
                stack.pop()
            stack.append((head.level, head.heading))
        heading_path = tuple(h for _, h in stack)
        fragment = f"#{anchor_slug(stack[-1][1])}" if stack else ""
        for pack in _pack(section, max_chars):
            start, end = pack[0].start, pack[-1].end
            text = page.markdown[start:end]
            kinds = tuple(b.kind for b in pack)
            embeddable = any(k != "heading" for k in kinds)
            ordinal = len(chunks)
            chunks.append(
                Chunk(
                    id=chunk_id(page.slug, ordinal, text), page=page.slug, ordinal=ordinal,
                    title=page.title, heading_path=heading_path, text=text, start=start, end=end,
                    url=page.url + fragment, embeddable=embeddable,
                    oversized=len(text) > max_chars, block_kinds=kinds,
                )
            )
    return chunks


def chunk_pages(pages: Sequence[NormalizedPage], max_chars: int) -> list[Chunk]:
    """Chunk every page, in page order."""
    return [chunk for page in pages for chunk in chunk_page(page, max_chars)]
