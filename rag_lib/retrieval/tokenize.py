"""BM25 tokenisation for mixed Chinese / English technical text.

Decisions (each one is tested in ``tests/test_retrieval.py``):

* **Chinese** runs are segmented by jieba in search mode (``cut_for_search``) with jieba's
  default dictionary, on a private :class:`jieba.Tokenizer` initialised once, so nothing
  another module adds to jieba's global dictionary can change our tokens. Search mode emits a
  long word *and* its dictionary sub-words (``环境变量`` → ``环境``, ``变量``, ``环境变量``),
  so a query saying ``变量`` still matches a chunk saying ``环境变量``.
* **Identifiers** such as ``wrangler.toml``, ``.dev.vars``, ``ERR_4021``, ``--secrets-file``,
  ``context.env`` and ``env.MY_BUCKET`` are kept whole *and* their parts are emitted too
  (``wrangler.toml`` → ``wrangler.toml``, ``wrangler``, ``toml``). The whole token is rare, so
  an exact identifier match earns a high IDF; the parts let ``wrangler`` match ``wrangler.toml``.
  Same idea as jieba's search mode, applied to code.
* **English** is lowercased; English stopwords (bm25s' list) are dropped by default. No
  stemming: the corpus is API documentation, and a stemmer rewrites identifiers and their parts
  (``versions`` in ``wrangler versions deploy``) while buying little on 1-2k chunks; tokens stay
  readable in the notebooks.
* Punctuation (ASCII and full-width) is dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable
from functools import cache

import jieba
from bm25s.stopwords import STOPWORDS_EN

from rag_lib.core.text import CJK_RANGES, QUESTION_WORDS_EN, QUESTION_WORDS_ZH

# An identifier: optional leading "--", "-" or "." (``--secrets-file``, ``.dev.vars``), then
# alphanumeric runs joined by ".", "-" or "_" (``env.MY_BUCKET``, ``ERR_4021``). A trailing
# sentence period is not part of it because a separator must be followed by a word character.
_WORD = r"[0-9A-Za-z_\u00C0-\u024F]+"
_IDENT = rf"(?:--?|\.)?{_WORD}(?:[.\-]{_WORD})*"
_CJK = f"[{CJK_RANGES}]+"
_TOKEN_RE = re.compile(rf"(?P<ident>{_IDENT})|(?P<cjk>{_CJK})")
_PART_SPLIT = re.compile(r"[._\-]+")

BM25_STOPWORDS_EN: frozenset[str] = frozenset(STOPWORDS_EN)  # bm25s's list; question-term lists: rag_lib.core.text


@cache
def jieba_tokenizer() -> jieba.Tokenizer:
    """A private jieba tokenizer on the default dictionary, initialised once, logging quiet.

    Every module that segments Chinese uses this one, so words added to jieba's global
    dictionary elsewhere cannot change retrieval, the evidence gate or the extractive answers.
    """
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()  # default dictionary (jieba/dict.txt)
    tokenizer.initialize()
    return tokenizer


class Tokenizer:
    """Turn text into BM25 tokens (see the module docstring for the rules).

    Parameters
    ----------
    stopwords : collection of str or None
        Lowercase words to drop; default: bm25s' English list. ``None`` or ``()`` keeps all.
    identifier_parts : bool
        Also emit the parts of compound identifiers (``wrangler.toml`` → ``wrangler``, ``toml``).
    """

    def __init__(self, stopwords: Collection[str] | None = BM25_STOPWORDS_EN, identifier_parts: bool = True):
        self.stopwords = frozenset(stopwords or ())
        self.identifier_parts = identifier_parts

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        """Tokens of one text, in reading order."""
        tokens: list[str] = []
        for match in _TOKEN_RE.finditer(text):
            if match.lastgroup == "cjk":
                tokens.extend(t for t in jieba_tokenizer().cut_for_search(match.group()) if t.strip())
            else:
                tokens.extend(self._identifier_tokens(match.group().lower()))
        return [t for t in tokens if t not in self.stopwords]

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Tokens of each text."""
        return [self.tokenize(t) for t in texts]

    def _identifier_tokens(self, word: str) -> list[str]:
        parts = [p for p in _PART_SPLIT.split(word) if p]
        if not parts:  # a lone "-" or "." cannot occur (the pattern needs a word), but be safe
            return []
        whole = word
        if len(parts) == 1:
            # "--force" / ".env": the flag or dotfile spelling is the token, "force"/"env" its part
            return [whole] if whole == parts[0] or not self.identifier_parts else [whole, parts[0]]
        return [whole, *parts] if self.identifier_parts else [whole]


# Only function and question words: the terms left are what a sentence or an answer is matched on.
CONTENT_STOPWORDS = QUESTION_WORDS_EN | QUESTION_WORDS_ZH
_HAS_WORD = re.compile(r"\w")


def content_terms(text: str) -> frozenset[str]:
    """Content terms of ``text``: jieba tokens, lower-cased, without stopwords and punctuation (the
    extractive answerer's sentence match, the support check's "adds a term" rule, the narrower)."""
    tokens = (t.strip().lower() for t in jieba_tokenizer().lcut(text))
    return frozenset(t for t in tokens if t and _HAS_WORD.search(t) and t not in CONTENT_STOPWORDS)
