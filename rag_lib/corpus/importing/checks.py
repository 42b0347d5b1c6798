"""What silently hurts retrieval in parsed text, warned per document (Halo's advice: read your parser output).

Each check is a plain measurement with a threshold, so a warning says what was seen and how often:

* ``empty``: a document with (almost) no text;
* ``near_duplicate``: a document whose word 5-grams overlap another's (Jaccard) at :data:`DUPLICATE_JACCARD`
  or more (both rank for the same questions and push other evidence out of the Top-k);
* ``flattened_table``: a table with merged cells read cell by cell (HTML), or lines of extracted text (PDF,
  plain text) holding several columns separated by runs of spaces;
* ``broken_lines``: most lines of extracted text (PDF, plain text; list items aside) are short fragments, as
  when two-column text or a table is read cell by cell and the columns interleave;
* ``glued_words``: long runs of lower-case letters after one capital or none, outside code, as when a PDF's
  word spacing is lost (``Queryinstalledpackages``; identifiers such as ``ParseTupleAndKeywords`` are not);
* ``page_furniture``: a line repeated on most pages of a PDF (running head, footer), or a page number alone
  on its line; across documents, a line repeated in most of them (navigation or a footer left in the text);
* ``list_page``: a page that is mostly a list (a table of contents, an index, a list of modules or symbols):
  its many names make it rank high for almost any question, and it pushes the evidence out of the Top-k.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.corpus.importing.readers import ParsedDocument

MIN_CHARS = 40  # below this many non-space characters a document is "empty"
DUPLICATE_JACCARD = 0.9
SHORT_LINE = 30  # characters
SHORT_LINE_SHARE = 0.5  # of a document's lines (with at least MIN_LINES lines)
MIN_LINES = 20
GLUED_RUN = 20  # letters without a space
GLUED_SHARE = 0.02  # of a document's words
REPEATED_SHARE = 0.5  # of pages (at least 3) or documents (at least 5)
LIST_SHARE = 0.7  # of a page's lines that are list items or table rows (with at least LIST_LINES lines)
LIST_LINES = 30
HUGE_ROW = 2000  # characters in one table row
_COLUMN_GAPS = re.compile(r"\S(?: {2,}|\t)\S")
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s+)?\d{1,4}(?:\s*(?:/|of)\s*\d{1,4})?\s*$", re.I)
_GLUED = re.compile(rf"(?<![\w`])[A-Z]?[a-z]{{{GLUED_RUN - 1},}}(?![\w`])")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class ParseWarning:
    document: str  # its source path
    check: str
    detail: str


def _prose_lines(markdown: str) -> list[str]:
    """Non-empty lines outside fenced code and pipe tables."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip("> \t").startswith(("```", "~~~")):  # a fence inside a quote too
            fenced = not fenced
            continue
        if not fenced and line.strip() and not line.lstrip().startswith("|"):
            out.append(line)
    return out


def document_warnings(doc: ParsedDocument) -> list[ParseWarning]:
    found: list[ParseWarning] = []

    def warn(check: str, detail: str) -> None:
        found.append(ParseWarning(doc.source, check, detail))

    chars = len(re.sub(r"\s", "", doc.markdown))
    if chars < MIN_CHARS:
        warn("empty", f"{chars} characters of text")
    if doc.merged_tables:
        warn("flattened_table", f"{doc.merged_tables} of {doc.tables} tables have merged cells, read cell by cell")
    huge = [line for line in doc.markdown.splitlines() if line.lstrip().startswith("|") and len(line) > HUGE_ROW]
    if huge:
        warn("flattened_table", f"{len(huge)} table rows are longer than {HUGE_ROW:,} characters (the longest "
                                f"{max(map(len, huge)):,}): a list or an index flattened into table cells")
    lines = _prose_lines(doc.markdown)
    extracted = [line for line in lines if not _LIST_ITEM.match(line)] if doc.format in ("pdf", "text") else []
    columned = [line for line in extracted if len(_COLUMN_GAPS.findall(line)) >= 2]
    if columned:
        warn("flattened_table", f"{len(columned)} lines hold several columns separated by runs of spaces, e.g. "
                                f"{columned[0].strip()[:60]!r}")
    if len(extracted) >= MIN_LINES:
        short = sum(len(line.strip()) < SHORT_LINE for line in extracted)
        if short / len(extracted) >= SHORT_LINE_SHARE:
            warn("broken_lines", f"{short} of {len(extracted)} lines are shorter than {SHORT_LINE} characters: "
                                 "columns or table cells may be interleaved")
    prose = _CODE_SPAN.sub(" ", " ".join(lines))
    words = _WORD.findall(prose)
    glued = [w for w in _GLUED.findall(prose) if len(w) >= GLUED_RUN]
    if words and len(glued) / len(words) >= GLUED_SHARE:
        warn("glued_words", f"{len(glued)} of {len(words)} words run {GLUED_RUN}+ letters without a space, e.g. "
                            f"{glued[0][:40]!r}: spaces lost in extraction")
    if len(doc.pages) >= 3:
        per_page = Counter(line.strip() for page in doc.pages for line in set(page.splitlines()) if line.strip())
        repeated = [line for line, n in per_page.items()
                    if n / len(doc.pages) >= REPEATED_SHARE and not _PAGE_NUMBER.match(line)]
        if repeated:
            warn("page_furniture", f"{len(repeated)} lines repeat on most of its {len(doc.pages)} pages (running "
                                   f"head or footer), e.g. {repeated[0][:60]!r}")
    items = [line for line in doc.markdown.splitlines() if _LIST_ITEM.match(line) or line.lstrip().startswith("|")]
    text_lines = [line for line in doc.markdown.splitlines() if line.strip()]
    if len(text_lines) >= LIST_LINES and len(items) / len(text_lines) >= LIST_SHARE:
        warn("list_page", f"{len(items)} of {len(text_lines)} lines are list items or table rows: a table of contents "
                          "or an index ranks for almost any question and crowds evidence out of the Top-k")
    numbers = sum(bool(_PAGE_NUMBER.match(line)) for line in lines)
    if doc.pages and numbers >= max(2, len(doc.pages) // 2):
        warn("page_furniture", f"{numbers} lines hold only a page number")
    return found


def _shingles(text: str) -> frozenset[int]:
    words = text.lower().split()
    return frozenset(hash(" ".join(words[i:i + 5])) for i in range(max(0, len(words) - 4)))


def corpus_warnings(docs: Sequence[ParsedDocument]) -> list[ParseWarning]:
    """Warnings that need the whole corpus: near-duplicate documents, lines repeated across documents."""
    found: list[ParseWarning] = []
    shingles = [_shingles(d.markdown) for d in docs]
    for i, a in enumerate(shingles):
        for j in range(i):
            b = shingles[j]
            if a and b and min(len(a), len(b)) >= DUPLICATE_JACCARD * max(len(a), len(b)):
                jaccard = len(a & b) / len(a | b)
                if jaccard >= DUPLICATE_JACCARD:
                    found.append(ParseWarning(docs[i].source, "near_duplicate",
                                              f"Jaccard {jaccard:.2f} with {docs[j].source} (word 5-grams)"))
    if len(docs) >= 5:
        counts = Counter(line.strip() for d in docs for line in set(_prose_lines(d.markdown)) if len(line.strip()) > 3)
        for line, n in counts.most_common(5):
            if n / len(docs) >= REPEATED_SHARE:
                found.append(ParseWarning("(corpus)", "page_furniture", f"the line {line[:60]!r} is in {n} of "
                                          f"{len(docs)} documents: navigation or a footer left in the text?"))
    return found
