"""The two data types every stage shares: a normalized page and a chunk."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Removal:
    """One piece of source text that normalisation dropped, kept for audit."""

    page: str  # page slug
    kind: str  # e.g. "frontmatter", "import", "component:DashButton", "section:KV"
    detail: str  # what was removed (a heading, a component name, the first characters)
    chars: int  # how many source characters were dropped


@dataclass(frozen=True)
class NormalizedPage:
    """A page as a reader of the published site sees it, in plain Markdown.

    ``markdown`` is the body without the page title; headings start at ``##`` as in the
    source. Code blocks are fenced with backticks, tables are pipe tables, ``<details>``
    blocks are kept as HTML ``<details><summary>…</summary> … </details>``, asides are
    blockquotes (``> **Note:** …``).
    """

    slug: str  # e.g. "workers/configuration/secrets"
    path: str  # repository path of the source file
    title: str
    url: str
    markdown: str
    removals: tuple[Removal, ...] = ()
    warnings: tuple[str, ...] = ()


def document_slug(relative: str) -> str:
    """An imported file's page slug: ``guide/setup/index.md`` → ``guide/setup``; characters outside
    ``[A-Za-z0-9._/-]`` become ``-``."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", relative)
    stem = stem[: -len("/index")] if stem.endswith("/index") else stem
    return id_slug(stem)


def id_slug(doc_id: str) -> str:
    """A document id (BEIR's ``_id``) as a page slug: characters outside ``[A-Za-z0-9._/-]`` become ``-``."""
    return re.sub(r"[^A-Za-z0-9._/-]+", "-", doc_id).strip("-/") or "index"


def embed_header(title: str, heading_path: Sequence[str]) -> str:
    """What precedes a chunk's text in its embedding input: the page title and the heading path."""
    path = " > ".join(heading_path)
    return f"{title}\n{path}\n\n" if path else f"{title}\n\n"


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of a normalized page that never crosses a heading.

    ``text == page.markdown[start:end]``; the gaps between a page's chunks hold only whitespace.
    """

    id: str  # "<page-slug>-<ordinal:03d>-<sha256(text)[:8]>"
    page: str  # page slug
    ordinal: int
    title: str  # page title
    heading_path: tuple[str, ...]
    text: str
    start: int
    end: int
    url: str  # page URL with a deep-link fragment to the section heading
    embeddable: bool  # False for heading-only chunks
    oversized: bool  # True when a single unsplittable block exceeds the size limit
    block_kinds: tuple[str, ...] = field(default=())

    @property
    def n_chars(self) -> int:
        return len(self.text)

    @property
    def embed_input(self) -> str:
        """What the embedder sees: document title + heading path + chunk text (casebook section 08)."""
        return embed_header(self.title, self.heading_path) + self.text

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["heading_path"] = list(self.heading_path)
        row["block_kinds"] = list(self.block_kinds)
        row["embed_input"] = self.embed_input
        row["n_chars"] = self.n_chars
        return row

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Chunk:
        return cls(
            id=row["id"], page=row["page"], ordinal=int(row["ordinal"]), title=row["title"],
            heading_path=tuple(row["heading_path"]), text=row["text"], start=int(row["start"]),
            end=int(row["end"]), url=row["url"], embeddable=bool(row["embeddable"]),
            oversized=bool(row["oversized"]), block_kinds=tuple(row.get("block_kinds", ())),
        )
