"""Small text helpers shared by every stage: which language a question is in."""

from __future__ import annotations

import re

# Sentence ends: Western punctuation followed by whitespace, CJK punctuation, or a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")

# CJK Unified Ideographs, Extension A and the compatibility block: enough to tell Chinese from English.
CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LANGUAGE_NAMES = {"zh": "Chinese", "en": "English"}


def language_of(text: str) -> str:
    """``"zh"`` when ``text`` contains a Chinese character, else ``"en"``."""
    return "zh" if CJK_CHAR.search(text) else "en"


def language_name(text: str) -> str:
    """The English name of the language of ``text`` (what a prompt tells the model to answer in)."""
    return LANGUAGE_NAMES[language_of(text)]


def sentences(text: str) -> list[str]:
    """The non-empty sentences of ``text``, each a verbatim (stripped) substring of it."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text) if s and s.strip()]
