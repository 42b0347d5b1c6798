"""How an answer is compared with a key fact (the rule every correctness figure rests on).

Matching rule
-------------
Answer and fact are normalised the same way, in this order:

1. Unicode NFKC (full-width letters, digits and punctuation become half-width: ``１２８ＭＢ`` is
   ``128MB``, ``，`` is ``,``, the ideographic space is a space);
2. CJK punctuation without an NFKC form is mapped to its ASCII peer (``。`` → ``.``, ``、`` → ``,``,
   curly and corner quotes → ``"``/``'``, ``【】`` → ``[]``, ``《》`` → ``<>``);
3. case folding;
4. thousands separators dropped: a comma between a digit and exactly three digits
   (``10,000`` == ``10000``; so a list written without a space, ``64,128``, reads as ``64128``);
5. whitespace runs collapsed to one space, and whitespace next to a CJK character removed
   (``10 万`` == ``10万``, ``5 分钟`` == ``5分钟``).

A fact is found when one of its alternatives occurs in the answer as a substring, with a boundary
where the alternative starts or ends with an ASCII letter or digit: no ASCII letter or digit may
touch it there (``env`` is not found in ``environment``, ``50`` not in ``500``), and a number may
not continue as a decimal (``$5`` is not found in ``$5.50``, ``64`` not in ``1.64``). Nothing else
is fuzzy: a space between a number and its unit matters (list ``25 MiB`` and ``25MiB``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache

from rag_lib.core.text import CJK_WIDE_RANGES

_CJK_PUNCT = str.maketrans(
    {
        "。": ".",
        "、": ",",
        "“": '"',
        "”": '"',
        "„": '"',
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "‘": "'",
        "’": "'",
        "【": "[",
        "】": "]",
        "〔": "[",
        "〕": "]",
        "《": "<",
        "》": ">",
        "〈": "<",
        "〉": ">",
    }
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WS = re.compile(r"\s+")
_WS_NEAR_CJK = re.compile(rf"(?<=[{CJK_WIDE_RANGES}]) | (?=[{CJK_WIDE_RANGES}])")
_ALNUM = re.compile(r"[0-9a-z]")


def normalize(text: str) -> str:
    """Text as answers and facts are compared (the module docstring states the five steps)."""
    text = unicodedata.normalize("NFKC", text).translate(_CJK_PUNCT).casefold()
    text = _THOUSANDS.sub("", text)
    text = _WS.sub(" ", text).strip()
    return _WS_NEAR_CJK.sub("", text)


@cache
def _pattern(alternative: str) -> re.Pattern[str]:
    """Regex for one normalised alternative, with the boundaries of the matching rule."""
    left = right = ""
    if _ALNUM.match(alternative[0]):
        left = r"(?<![0-9a-z])" + (r"(?<![0-9]\.)" if alternative[0].isdigit() else "")
    if _ALNUM.match(alternative[-1]):
        right = r"(?![0-9a-z])" + (r"(?!\.[0-9])" if alternative[-1].isdigit() else "")
    return re.compile(left + re.escape(alternative) + right)


def states_any(alternatives: Iterable[str], normalized: str) -> bool:
    """Whether an already :func:`normalize`-d text states one of ``alternatives`` (for many texts at once)."""
    return any(_pattern(normalize(alt)).search(normalized) for alt in alternatives)


def find_alternative(alternatives: Iterable[str], text: str) -> str | None:
    """The first of ``alternatives`` stated in ``text`` (both normalised here), else ``None``."""
    norm = normalize(text)
    for alt in alternatives:
        if _pattern(normalize(alt)).search(norm):
            return alt
    return None
