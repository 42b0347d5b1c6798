"""Small text helpers shared by every stage: which language a text is in, its sentences, the
stopwords, and a model-free token estimate. Every Chinese-character test in the package uses
:data:`CJK_RANGES` (or, to remove spaces next to any East Asian character, :data:`CJK_WIDE_RANGES`).

Two sentence rules, for two kinds of text: :func:`sentences` cuts passages (evidence, answers, and
the semantic chunker's pages, as offsets: :func:`sentence_spans`) and also breaks at newlines;
:func:`question_sentences` cuts one question, keeps each mark with its sentence and keeps
``wrangler.toml`` whole."""

from __future__ import annotations

import math
import re

# Sentence ends: Western punctuation followed by whitespace, CJK punctuation, or a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")

# A question's sentence ends at ？。！； (the mark stays with its sentence); English ? ! . ; need a
# following space or the end, so "wrangler.toml" and ".dev.vars" are not split.
_QUESTION_SENTENCE_END = re.compile(r"(?<=[？。！；])|(?<=[?!.;])(?=\s|$)")

# CJK Unified Ideographs, Extension A and the compatibility block: enough to tell Chinese from English.
CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Wider: also radicals, CJK punctuation, kana and Hangul compatibility jamo (U+2E80 on), for rules
# that concern any East Asian character, such as "no space next to one" when comparing answers.
CJK_WIDE_RANGES = "\u2e80-\u9fff\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
# Characters a BPE tokenizer spends about one token on: ideographs, CJK and full-width punctuation.
_ONE_TOKEN_CHAR = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
LANGUAGE_NAMES = {"zh": "Chinese", "en": "English"}
# A Markdown link or image; group 1 is its visible text (what plain-text matching keeps).
MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def language_of(text: str) -> str:
    """``"zh"`` when ``text`` contains a Chinese character, else ``"en"``."""
    return "zh" if CJK_CHAR.search(text) else "en"


def language_name(text: str) -> str:
    """The English name of the language of ``text`` (what a prompt tells the model to answer in)."""
    return LANGUAGE_NAMES[language_of(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each non-empty sentence of ``text``, surrounding whitespace left out."""
    spans, start = [], 0
    for end, next_start in [(m.start(), m.end()) for m in _SENTENCE_BREAK.finditer(text)] + [(len(text), len(text))]:
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        start = next_start
    return spans


def sentences(text: str) -> list[str]:
    """The non-empty sentences of ``text``, each a verbatim (stripped) substring of it."""
    return [text[a:b] for a, b in sentence_spans(text)]


def question_sentences(text: str) -> list[str]:
    """The non-empty sentences of one question, stripped, in order (see :data:`_QUESTION_SENTENCE_END`)."""
    return [part.strip() for part in _QUESTION_SENTENCE_END.split(text) if part.strip()]


# A comma followed by a clause-level conjunction starts a new clause; a comma inside a list does not.
_CLAUSE_COMMA = re.compile(r"\s*[,，]\s*(?=(?:and|or|并且|并|而且|以及|又|还)\b|(?:并且|并|而且|以及|又|还))",
                           re.IGNORECASE)
_LEADING_CONJ = re.compile(r"^(?:and|or|并且|并|而且|以及|又|还)\s*", re.IGNORECASE)
_EN_STEM = re.compile(r"^(?:how|what|which|where|when|why)(?:\s+(?:do|does|should|can|is|are|i|we|you))*\b",
                      re.IGNORECASE)
_EN_QWORD = re.compile(r"^(?:how|what|which|where|when|why|who|can|do|does|is|are|should)\b", re.IGNORECASE)
_ZH_QWORD = ("怎么", "怎样", "如何", "为什么", "什么", "哪些", "哪", "多少", "是否")
_ZH_STEM = re.compile(r"^(怎么|怎样|如何)")


def question_clauses(question: str) -> list[str]:
    """The question's clauses, each ending in a question mark and able to stand alone: split after ``？ ? 。 ！ ;``
    and at a comma followed by a conjunction; a clause without a question word borrows the first clause's stem
    ("How do I", "怎么")."""
    parts = [p for s in question_sentences(question) for p in _CLAUSE_COMMA.split(s)]
    parts = [_LEADING_CONJ.sub("", p.strip()).strip() for p in parts]
    parts = [p for p in parts if p.strip("？?。！!；;，, ")]
    if not parts:
        return []
    en_stem = _EN_STEM.match(parts[0])
    zh_stem = _ZH_STEM.match(parts[0])
    out = []
    for part in parts:
        cjk = bool(CJK_CHAR.search(part))
        if cjk and zh_stem and not any(w in part for w in _ZH_QWORD):
            part = zh_stem.group(0) + part
        elif not cjk and en_stem and not _EN_QWORD.match(part):
            part = f"{en_stem.group(0)} {part}"
        part = part.rstrip("。！!；;，, ")
        if not part.endswith(("？", "?")):
            part += "？" if cjk else "?"
        out.append(part if cjk else part[0].upper() + part[1:])
    return out


# Function and question words, left out of a question's content terms. The core (both languages) is
# what the extractive answerer drops when it matches evidence sentences to a question; the aspect
# gate drops more (ENGLISH_STOPWORDS, CHINESE_STOPWORDS), since every word it keeps must be found in
# the evidence. BM25 uses bm25s's own English list (rag_lib.retrieval.tokenize).
QUESTION_WORDS_EN = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "between", "by", "can", "difference", "do", "does", "each", "for",
    "from", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "should", "the", "their",
    "there", "this", "to", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
})
QUESTION_WORDS_ZH = frozenset({
    "怎么", "如何", "什么", "哪些", "是", "的", "了", "吗", "呢", "和", "与", "在", "并", "给", "里", "它", "我",
    "我们", "你", "有", "是否", "应该", "分别", "多少", "后", "时", "以及", "还是", "或", "及", "要", "请", "可以",
    "能", "一个", "这个", "那个", "吧",
})
ENGLISH_STOPWORDS = QUESTION_WORDS_EN | {
    "about", "after", "all", "also", "any", "been", "before", "being", "both", "but", "could", "did", "either",
    "get", "happen", "happens", "has", "have", "if", "into", "let", "many", "more", "most", "much", "must", "need",
    "no", "not", "one", "other", "set", "so", "some", "than", "that", "them", "then", "these", "they", "those",
    "through", "use", "used", "using", "was", "way", "whether", "while", "without", "work", "would",
}
CHINESE_STOPWORDS = QUESTION_WORDS_ZH | {
    "会", "到", "中", "用", "对", "把", "被", "让", "为什么", "怎样", "哪个", "需要", "之间", "区别", "有什么",
    "什么样", "多", "吗？",
}


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


_SITE_RELATIVE_LINK = re.compile(r"\]\((/[^)\s]*)\)")


def absolute_links(text: str, page_url: str) -> str:
    """Markdown links to site-relative paths (``[KV](/kv/)``) made absolute against ``page_url``'s site,
    so a link printed on a terminal opens.

    >>> absolute_links("see [KV](/kv/) and [x](https://a.b/c)", "https://developers.cloudflare.com/pages/")
    'see [KV](https://developers.cloudflare.com/kv/) and [x](https://a.b/c)'
    """
    from urllib.parse import urljoin

    return _SITE_RELATIVE_LINK.sub(lambda m: f"]({urljoin(page_url, m.group(1))})", text)


_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_HTML_BREAK = re.compile(r"\s*<br\s*/?>\s*", re.IGNORECASE)
_TABLE_RULE = re.compile(r"[\s|:-]*")
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
CITATION_MARK = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def as_prose(text: str) -> str:
    """An answer as a reader reads it: a Markdown link as its text, no bold or italic markers, an HTML line break
    as "; ", a table row as its cells joined by "; " (its rule line dropped). Code spans stay: commands are
    quoted verbatim.

    >>> as_prose("Use the [Wrangler file](/workers/wrangler/) and **Secret** with [`wrangler dev`](/dev/).")
    'Use the Wrangler file and Secret with `wrangler dev`.'
    >>> as_prose("| CPU time | 10 ms | 5 min<br />(default: 30 seconds) | [1]")
    'CPU time; 10 ms; 5 min; (default: 30 seconds); [1]'
    >>> as_prose("| Free | 10 ms |\\n| --- | --- |")
    'Free; 10 ms'
    """
    def plain(part: str) -> str:
        part = _BOLD.sub(r"\2", part)
        part = _ITALIC.sub(r"\1", part)
        return _HTML_BREAK.sub("; ", part)

    text = MARKDOWN_LINK.sub(r"\1", text)  # first: a link's text may be code ("[`wrangler dev`](/…)")
    # Code spans (odd pieces of the split) stay as written.
    text = "".join(part if i % 2 else plain(part) for i, part in enumerate(_CODE_SPAN.split(text)))

    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):  # a table row (or several, run together): its cells, in order
            if _TABLE_RULE.fullmatch(line):
                continue
            line = "; ".join(cell.strip() for cell in line.split("|") if cell.strip())
        lines.append(line)
    return "\n".join(lines).strip()


def is_fragment(text: str) -> bool:
    """Text that cannot stand as an answer: nothing left once its citation marks ("[1]") are taken out, or it
    ends in a colon (it introduces what it never says: "To add a secret via the dashboard: [1]")."""
    bare = CITATION_MARK.sub("", text).strip()
    return not bare or bare.endswith((":", "："))
