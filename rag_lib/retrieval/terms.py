"""A question's content terms (stop words out, light stems) and which of them a set of texts names.

Two stages read them: the aspect gate (``rag_lib.evidence``, whose docstring states the rule) asks it of
everything sent, and verification asks it of the units an answer rests on (does it answer what was asked).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from rag_lib.core.text import CHINESE_STOPWORDS, CJK_CHAR, CJK_RANGES, ENGLISH_STOPWORDS
from rag_lib.retrieval.tokenize import jieba_tokenizer

# A Latin-script word or identifier ("wrangler.toml", "R2", "--secrets-file"'s parts): the unit of every term.
LATIN_WORD = re.compile(r"[0-9A-Za-z_\u00C0-\u024F]+(?:[.\-][0-9A-Za-z_\u00C0-\u024F]+)*")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
OTHER_SCRIPTS = re.compile(rf"[^\W\d_A-Za-z\u00C0-\u024F{CJK_RANGES}]+")
# Longest first: the first suffix that leaves a stem of >= 4 characters is removed (one only).
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s", "e")

@lru_cache(maxsize=1 << 16)  # called for every token of every evidence set: millions of calls on few words
def stem(word: str) -> str:
    """Light suffix stripping (rule 2 of the aspect rule); identifiers with '.' or '-' stay whole."""
    if not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def aspects(question: str) -> list[str]:
    """The question's content terms, in order, each once (rule 1 of the aspect rule, in rag_lib.evidence)."""
    out: list[str] = []
    for match in re.finditer(f"{LATIN_WORD.pattern}|{_CJK_RUN.pattern}|{OTHER_SCRIPTS.pattern}", question):
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


def vocabulary(texts: Iterable[str]) -> tuple[set[str], str, bool]:
    """Stems of every Latin token of ``texts``, their lower-cased text, and whether any CJK text is present."""
    text = "\n".join(texts)
    lowered = text.lower()
    stems = set()
    for match in LATIN_WORD.finditer(lowered):
        token = match.group()
        stems.add(stem(token))
        stems.update(stem(part) for part in re.split(r"[.\-_]", token) if part)
    return stems, lowered, bool(CJK_CHAR.search(text))


def term_coverage(question: str, texts: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
    """``(matched, unmatched, unchecked)`` content terms of ``question`` against ``texts`` (rules 2 and 3
    of the aspect rule: a light stem or an identifier's substring; a script the texts lack is unchecked)."""
    stems, lowered, has_cjk = vocabulary(texts)
    matched, unmatched, unchecked = [], [], []
    for term in aspects(question):
        if CJK_CHAR.match(term) or OTHER_SCRIPTS.match(term):
            script_present = has_cjk if CJK_CHAR.match(term) else any(ch in lowered for ch in term)
            if not script_present:
                unchecked.append(term)
            else:
                (matched if term in lowered else unmatched).append(term)
        elif stem(term) in stems or (not term.isalpha() and term in lowered):
            matched.append(term)
        else:
            unmatched.append(term)
    return matched, unmatched, unchecked
