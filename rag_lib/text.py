"""Small text helpers shared by every stage: which language a text is in, its sentences, and a
model-free token estimate. Every Chinese-character test in the package uses :data:`CJK_RANGES`."""

from __future__ import annotations

import math
import re

# Sentence ends: Western punctuation followed by whitespace, CJK punctuation, or a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")

# CJK Unified Ideographs, Extension A and the compatibility block: enough to tell Chinese from English.
CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
# Characters a BPE tokenizer spends about one token on: ideographs, CJK and full-width punctuation.
_ONE_TOKEN_CHAR = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
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


def approx_tokens(text: str) -> int:
    """A model-free token estimate: one token per CJK character, one per 4 other characters (rounded up).

    The generator's own tokenizer would be exact only for that generator; this rule of thumb is
    the same for every model and close for English and Chinese BPE vocabularies.
    """
    cjk = len(_ONE_TOKEN_CHAR.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


# An exact identifier a user types as-is (Halo's "exact identifiers"): a file or host name, a config
# key, a flag, a method call, a camelCase handler, or a `wrangler` command. Product names ("Workers",
# "D1") and hyphenated English words ("read-only") are not identifiers.
_IDENTIFIER = re.compile(
    r"`[^`]+`"                                     # anything written as code
    r"|(?<![\w.])\.?[A-Za-z0-9]+(?:[._][A-Za-z0-9]+)*_[A-Za-z0-9_.]*"  # has an underscore: compatibility_date
    r"|(?<![\w.])_[A-Za-z0-9_.]+"                  # starts with one: _routes.json, _redirects
    r"|(?<![\w.])\.?[A-Za-z0-9-]+\.[A-Za-z0-9.]*[A-Za-z]"  # dotted: workers.dev, .dev.vars, wrangler.toml
    r"|(?<![\w.])\.[a-z][a-z0-9]+"                 # a dotfile: .env
    r"|\b[a-z]+\(\)"                               # a call: batch()
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"                # camelCase: onRequestGet
    r"|(?<![\w-])--[a-z][a-z0-9-]*"                # a flag: --env
    # a command: `wrangler login`, or a command group and its subcommand (`wrangler secret put`)
    r"|\bwrangler (?:(?:secret|pages|d1|r2|kv|versions|queues|vectorize)(?: [a-z][a-z0-9-]*)?"
    r"|login|logout|deploy|dev|whoami|init|tail|types|delete|rollback)\b"
)


def identifiers(text: str) -> list[str]:
    """The exact identifiers in ``text`` (see ``_IDENTIFIER``), in order; a sentence's final period
    is not part of one."""
    return [m.group().rstrip(".") for m in _IDENTIFIER.finditer(text)]
