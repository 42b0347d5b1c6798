"""The aspect rule's text side: content terms of a question (stop words out, light stems) and the
evidence's vocabulary. The rule itself is in the package docstring."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from rag_lib.core.documents import Chunk
from rag_lib.core.text import CHINESE_STOPWORDS, CJK_CHAR, CJK_RANGES, ENGLISH_STOPWORDS
from rag_lib.retrieval.tokenize import jieba_tokenizer

if TYPE_CHECKING:
    pass



# -------------------------------------------------------------------------------- aspect coverage

_LATIN = re.compile(r"[0-9A-Za-z_\u00C0-\u024F]+(?:[.\-][0-9A-Za-z_\u00C0-\u024F]+)*")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
OTHER_SCRIPTS = re.compile(rf"[^\W\d_A-Za-z\u00C0-\u024F{CJK_RANGES}]+")
# Longest first: the first suffix that leaves a stem of >= 4 characters is removed (one only).
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s", "e")

@lru_cache(maxsize=1 << 16)  # called for every token of every evidence set: millions of calls on few words
def stem(word: str) -> str:
    """Light suffix stripping (see the module docstring); identifiers with '.' or '-' stay whole."""
    if not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def aspects(question: str) -> list[str]:
    """The question's content terms, in order, each once (rule 1 of the module docstring)."""
    out: list[str] = []
    for match in re.finditer(f"{_LATIN.pattern}|{_CJK_RUN.pattern}|{OTHER_SCRIPTS.pattern}", question):
        text = match.group()
        if OTHER_SCRIPTS.fullmatch(text):  # another script (Cyrillic, Kana …): one aspect per word
            words = [text.lower()]
        elif CJK_CHAR.match(text):
            words = [w for w in jieba_tokenizer().lcut(text) if w.strip() and w not in CHINESE_STOPWORDS]
        else:
            lowered = text.lower()
            words = [] if lowered in ENGLISH_STOPWORDS or len(lowered) < 2 else [lowered]
        out.extend(w for w in words if w not in out)
    return out


def evidence_vocabulary(evidence: Sequence[Chunk]) -> tuple[set[str], str, bool]:
    """Stems of every Latin token, the lower-cased text, and whether any CJK text is present."""
    text = "\n".join(c.embed_input for c in evidence)
    lowered = text.lower()
    stems = set()
    for match in _LATIN.finditer(lowered):
        token = match.group()
        stems.add(stem(token))
        stems.update(stem(part) for part in re.split(r"[.\-_]", token) if part)
    return stems, lowered, bool(CJK_CHAR.search(text))
