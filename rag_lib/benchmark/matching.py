"""How a locator's heading and phrase are compared with chunk text: Markdown reduced to plain text,
whitespace collapsed, headings case-folded."""

from __future__ import annotations

import re

from rag_lib.core.text import MARKDOWN_LINK

# --------------------------------------------------------------------------- text matching
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.S)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_STRONG = re.compile(r"(\*\*|__)(.+?)\1")
_EM_STAR = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_EM_UNDERSCORE = re.compile(r"(?<![\w])_(?!\s)(.+?)(?<!\s)_(?!\w)")
_WS = re.compile(r"\s+")


def collapse_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def plain_text(markdown: str) -> str:
    """Inline Markdown rendered as plain text: link targets, tags, emphasis and backticks removed.

    Block structure is kept (only inline markup goes), so table rows and list items still read
    as they do on the page. Whitespace is collapsed.
    """
    text = _MDX_COMMENT.sub("", markdown)
    text = MARKDOWN_LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EM_STAR.sub(r"\1", text)
    text = _EM_UNDERSCORE.sub(r"\1", text)
    text = text.replace("`", "").replace("\\", "")
    return collapse_ws(text)


def heading_key(heading: str) -> str:
    """How headings are compared: plain text, whitespace collapsed, case-folded, '#' and '_' dropped.

    Underscores are ignored so that ``_routes.json`` and ``routes.json`` compare equal whichever
    way a normaliser renders inline code in a heading.
    """
    return plain_text(heading.lstrip("#")).replace("_", "").casefold()
