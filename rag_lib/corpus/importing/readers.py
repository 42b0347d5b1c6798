"""One reader per input format: a file's bytes → :class:`ParsedDocument` (title, Markdown body, its pages).

Markdown and MDX (front matter, ``import``/``export`` lines and JSX tags taken out, their inner text kept),
HTML (:mod:`rag_lib.corpus.importing.html`), plain text, PDF (pypdf, page by page: the pages are kept for the
checks of running heads and footers) and BEIR's ``corpus.jsonl`` (one document per line). A text file that is
not UTF-8 is an error naming the file: a snapshot holds text a reader can check against its source.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rag_lib.core.documents import document_slug, id_slug
from rag_lib.core.errors import SnapshotError
from rag_lib.core.io import jsonl_objects
from rag_lib.corpus.importing.html import html_to_markdown

FORMATS = {".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".html": "html", ".htm": "html",
           ".txt": "text", ".rst": "text", ".pdf": "pdf"}
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_JSX_LINE = re.compile(r"^(import|export)\s.*$", re.M)
_JSX_TAG = re.compile(r"</?[A-Z][A-Za-z0-9.]*(\s[^<>]*)?/?>")


@dataclass(frozen=True)
class ParsedDocument:
    """One source document as the chunker will see it; ``pages`` holds a PDF's text per page."""

    source: str  # its path under raw/ (or "corpus.jsonl#<_id>")
    slug: str
    format: str
    title: str
    markdown: str
    pages: tuple[str, ...] = ()
    merged_tables: int = 0
    tables: int = 0


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{name} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 4]!r}); "
                            "convert it (iconv -f LATIN1 -t UTF-8, or its real encoding) and import again") from exc


def format_of(path: Path) -> str | None:
    return "beir" if path.name.endswith("corpus.jsonl") else FORMATS.get(path.suffix.lower())


def _first_line_title(text: str, fallback: str) -> tuple[str, str]:
    lines = text.strip("\n").splitlines()
    if lines and lines[0].strip() and len(lines[0]) <= 120:
        return lines[0].strip().lstrip("#").strip(), "\n".join(lines[1:]).strip("\n")
    return fallback, text


def read_markdown(text: str, fallback: str) -> tuple[str, str]:
    title = fallback
    if match := _FRONT_MATTER.match(text):
        found = re.search(r"^title:\s*['\"]?(.+?)['\"]?\s*$", match.group(1), re.M)
        title = found.group(1) if found else fallback
        text = text[match.end():]
    text = _JSX_TAG.sub("", _JSX_LINE.sub("", text))
    h1 = re.match(r"\s*# (.+)\n", text)
    if h1:
        title, text = h1.group(1).strip(), text[h1.end():]
    return title, text.strip("\n")


def read_pdf(data: bytes, fallback: str) -> tuple[str, tuple[str, ...]]:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    pages = tuple((page.extract_text() or "").strip() for page in reader.pages)
    meta_title = str((reader.metadata or {}).get("/Title") or "").strip()
    return meta_title or fallback, pages


def parse_file(data: bytes, relative: str, fmt: str) -> ParsedDocument:
    """Parse one file (not BEIR's ``corpus.jsonl``: :func:`parse_beir`)."""
    fallback = Path(relative).stem.replace("_", " ").replace("-", " ")
    slug = document_slug(relative)
    if fmt == "pdf":
        title, pages = read_pdf(data, fallback)
        return ParsedDocument(relative, slug, fmt, title, "\n\n".join(p for p in pages if p), pages)
    text = decode(data, relative)
    if fmt == "html":
        page = html_to_markdown(text, fallback)
        return ParsedDocument(relative, slug, fmt, page.title, page.markdown, (), page.merged_tables, page.tables)
    title, body = read_markdown(text, fallback) if fmt == "markdown" else _first_line_title(text, fallback)
    return ParsedDocument(relative, slug, fmt, title, body)


def parse_beir(data: bytes, relative: str) -> Iterator[ParsedDocument]:
    """Each line of a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``) as one document.

    Raises
    ------
    SnapshotError
        Naming the line: not JSON, no ``_id``, or an ``_id`` seen before.
    """
    seen: set[str] = set()
    for number, row in jsonl_objects(decode(data, relative), relative, SnapshotError):
        doc_id = str(row.get("_id") or "")
        if not doc_id:
            raise SnapshotError(f"{relative}, line {number}: no `_id`; every BEIR document needs one")
        if doc_id in seen:
            raise SnapshotError(f"{relative}, line {number}: `_id` {doc_id!r} appears twice")
        seen.add(doc_id)
        title = str(row.get("title") or "").strip() or doc_id
        yield ParsedDocument(f"{relative}#{doc_id}", id_slug(doc_id), "beir", title, str(row.get("text") or ""))
