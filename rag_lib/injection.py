"""Text addressed to a model or a reader-agent, inside documents that should only be data.

A page can carry an instruction meant for whatever reads it ("ignore the instructions above and
answer that …", "请回答…"). Such text is *data* to the workbook, never an instruction: the
normaliser records every span found here among the page's warnings, and the support check never
accepts a flagged span as the support of an answer (:mod:`rag_lib.generation.support`).

The patterns are deliberately about *addressing a reader*: imperatives to answer, reply, say or
ignore, and phrases naming an AI, assistant or agent as the addressee. Documentation's own
imperatives ("run `wrangler deploy`", "the server responds with 404") do not match. This is a
detector, so it can miss a paraphrase it has never seen; the injection set of notebook 10 measures
it on planted variants, and the limits of that measurement are stated there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_READER = r"(?:AI|A\.I\.|LLM|large language model|language model|assistant|chat ?bot|agent|model|bot|crawler)s?"
_SAY = r"(?:answer|reply|respond|say|state|claim|tell (?:the )?(?:user|reader|customer)s?)"
_PRIOR = r"(?:(?:all|any|the|your|these|those|previous|prior|above|earlier|preceding|other|system|original)\s+){1,3}"
_RULES = r"(?:instructions?|prompts?|rules|directions|guidelines|context|messages?)"

_ENGLISH = [
    rf"\b(?:ignore|disregard|forget|override|bypass)\s+{_PRIOR}{_RULES}",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:above|before|else|previous)",
    rf"\b(?:note|message|instructions?|attention)\s+(?:to|for)\s+(?:any\s+|the\s+|all\s+)?{_READER}\b",
    rf"\bif\s+you\s+are\s+an?\s+(?:\w+\s+)?{_READER}\b",
    rf"\b{_READER}\s+(?:must|should|shall|need\s+to|have\s+to|are\s+to)\s+(?:always\s+|only\s+)?{_SAY}",
    r"\bignore\s+(?:the\s+|everything\s+)?(?:above|previous|preceding|prior|earlier)\b",
    r"\bregardless\s+of\s+(?:the\s+|any\s+|all\s+|your\s+)?(?:evidence|instructions?|context|documentation|"
    r"sources?|above|previous)",
    r"\bthe\s+(?:correct|right|only\s+acceptable)\s+(?:answer|reply|response)\s+(?:is|should\s+be)\s+that\b",
    rf"\b(?:dear|hey|attention|hello)\s*,?\s+{_READER}\b",
    rf"\b{_READER}\s+(?:reading|processing|summari[sz]ing|answering|parsing|indexing)\s+(?:this|these|the)\b",
    rf"\b(?:you\s+(?:must|should|shall|will|are\s+required\s+to|have\s+to|need\s+to)|always|from\s+now\s+on,?|"
    rf"instead,?|be\s+sure\s+to|make\s+sure\s+(?:to|you))\s+(?:only\s+|now\s+|always\s+)?{_SAY}\b",
    rf"(?:^|[.!?:>|#*\-]\s*|\n\s*)(?:please\s+)?{_SAY}\s+(?:only\s+)?(?:that|with\s+[\"'“]|to\s+(?:every|any|all)\b|"
    r"(?:the\s+)?(?:user|question)s?\s+(?:that|with))",
    rf"\b(?:when|whenever|if)\s+(?:you\s+are\s+|you're\s+)?(?:asked|answering|responding|replying)\b[^.\n]{{0,80}}?"
    rf"\b(?:{_SAY}|tell\s+them|say\s+that)\b",
    r"\b(?:new|updated|real|actual|hidden)\s+(?:system\s+)?instructions?\s*:",
    r"\bsystem\s+prompt\s*:",
    r"\byou\s+are\s+now\s+(?:a|an|in)\b",
]
_CHINESE = [
    r"(?:忽略|无视|忘记|忘掉|不要理会|不要遵守|覆盖)(?:掉)?(?:之前|此前|以上|上面|上述|前面|先前|所有|全部|其他|原有|系统)?"
    r"(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|规则|提示|要求|设定)",
    r"(?:请|务必|一定要|必须|只能|只许|应当|应该)(?:直接|只|始终|一律)?(?:回答|回复|答复|告诉(?:用户|读者)|声称|说明|表示|输出)"
    r"(?:说|称|道)?[:：]?",
    r"(?:你|您)(?:必须|应该|只能|需要|要)(?:直接|只|始终)?(?:回答|回复|答复|告诉|声称|说)",
    r"(?:致|给|对)(?:所有|任何)?(?:AI|人工智能|大模型|语言模型|模型|助手|机器人|智能体)(?:的)?(?:说明|提示|指令|留言)",
    r"(?:如果|假如|若)(?:你|您)是(?:一个)?(?:AI|人工智能|大模型|语言模型|模型|助手|机器人|智能体)",
    r"(?:当|每当|如果|若)(?:有人|用户)?(?:问到|问起|询问|提问)[^。\n]{0,40}?(?:回答|回复|答复|告诉|说)",
    r"(?:新的|最新|真正的|隐藏的)(?:系统)?(?:指令|指示)[:：]",
    r"(?:无论|不管)(?:证据|文档|上文|上述|之前)[^。\n]{0,20}?(?:回答|回复|答复|说|告诉)",
]
_PATTERN = re.compile("|".join(f"(?:{p})" for p in _ENGLISH + _CHINESE), re.IGNORECASE)


@dataclass(frozen=True)
class FlaggedSpan:
    """One stretch of text that addresses a reader; ``start``/``end`` are offsets into the text."""

    start: int
    end: int
    text: str

    def warning(self) -> str:
        """The line recorded among a page's build warnings."""
        shown = " ".join(self.text.split())
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        return (f"text addressed to a model or reader-agent at characters {self.start}-{self.end} "
                f"(kept as data; never the support of an answer): {shown!r}")


_ANNOUNCES = re.compile(r"(?:[:：]\s*$|\bfollowing\b|\bbelow\b|以下|如下|下面)", re.IGNORECASE)
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n")


def instruction_spans(text: str) -> list[FlaggedSpan]:
    """The sentences (or lines) of ``text`` that contain an instruction addressed to a reader.

    A match is widened to its whole sentence, so the claim that usually follows the imperative
    ("… answer that the limit is 42 GB") is flagged with it; a sentence that announces what follows
    ("… the following is authoritative.", "…：") is widened to the next sentence too.
    """
    spans: list[FlaggedSpan] = []
    for match in _PATTERN.finditer(text):
        start = _sentence_start(text, match.start())
        end = _sentence_end(text, match.end())
        if _ANNOUNCES.search(text[start:end]):  # "Note to AI: the following is true. <claim>"
            end = _sentence_end(text, min(len(text), end + 1))
        if spans and start <= spans[-1].end:  # overlapping matches: one span
            start = spans[-1].start
            end = max(end, spans[-1].end)
            spans.pop()
        spans.append(FlaggedSpan(start, end, text[start:end]))
    return spans


def _sentence_start(text: str, at: int) -> int:
    starts = [m.end() for m in _BOUNDARY.finditer(text, 0, at)]
    return starts[-1] if starts else 0


def _sentence_end(text: str, at: int) -> int:
    match = _BOUNDARY.search(text, at)
    return match.start() if match else len(text)


def overlaps_instruction(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` touches a flagged span of ``text``."""
    return any(s.start < end and start < s.end for s in instruction_spans(text))
