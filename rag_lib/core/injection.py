"""Text addressed to a model or a reader-agent, inside documents that should only be data.

A page can carry an instruction meant for whatever reads it ("ignore the instructions above and
answer that …", "请回答…"). Such text is *data* to the workbook, never an instruction: the
normaliser records every span found here among the page's warnings, and the support check never
accepts a flagged span as the support of an answer (:mod:`rag_lib.generation.support`).

Two rules, each flagging a whole sentence (or line: a table row, a list item, a code comment):

* **Phrases** (:data:`_ENGLISH`, :data:`_CHINESE`): imperatives to answer, reply, say or ignore,
  and phrases naming an AI, assistant or agent as the addressee ("ignore the previous instructions",
  "note to AI assistants", "请回答", "忽略之前的所有指令").
* **Addressee + obligation**, whatever the wording between them: a sentence is flagged when it
  names an addressee (:data:`_ADDRESSEE`) *and* states an obligation (:data:`_OBLIGATION`: must,
  shall, should, ought to, is/are required/expected/supposed to, required, mandatory, need/have to,
  is/are to; 必须, 须, 应当, 应该, 务必, 需要, 要求 (not after 不/无/毋), 一律, 一定要, 只能). An
  addressee is *generated text or a reading tool tied to this page*, never a bare noun, because the
  documentation itself says "the response must include a header", "the model must be deployed" and
  "answers from the DNS resolver": summaries/answers/replies generated from, based on, of or about
  this page ("Summaries generated from this page …", "根据本页生成的摘要 …", "本页的任何总结");
  AI-written text ("AI-generated answers", "machine-written overview", "AI 生成的答案"); an AI,
  LLM, assistant, chatbot, agent, model, bot or crawler that reads, processes, quotes, cites, uses
  or answers questions about this page ("any AI assistant reading this page", "阅读本页的 AI 助手",
  "大模型读到本节"); the reader named by what it does ("when summarising, …", "when answering
  questions", "if this document is used to answer a question", "在总结本页时", "回答关于…的问题");
  "your answer", "answers to user questions", "关于…的回复"; and a vocative ("LLMs, …").
  "Responses"/"outputs" (HTTP and command words) count only when *about* or *quoting* this page.

Measured false positives (:data:`MEASURED_FALSE_POSITIVES`): over every chunk text of both
snapshot batches (``cloudflare-docs-2026-11-30``: 411 chunks, ``cloudflare-docs-wide-2026-11-30``:
2,151 chunks), both rules together flag **0** spans, before and after the addressee rule was added
(and 0 of the 282 normalised pages); no sentence of either batch even names an addressee. A looser
rule (any of response/model/answer/summary/assistant/AI/agent/bot/crawler with an obligation) would
flag 34 documentation sentences there, so a count above 0 means the rule has become too loose. The
batches are English Cloudflare docs without the Workers AI, Agents or AI Search sections, so the
measurement says nothing about Chinese pages or AI-product pages; known risks outside it: "AI-generated
answers should be reviewed", prompt examples ("Your answer should be concise") and, from the phrase
rule, "the agent must respond within 30 seconds".

This is a detector, so it can miss a paraphrase it has never seen; the injection set of notebook 10
measures it on planted variants (its template paraphrases were written apart from these rules), and
the limits of that measurement are stated there.
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

# ---- the addressed-obligation rule: an addressee that is generated text or a reading tool, and an
# obligation, in one sentence. Every addressee is tied to *this* page or to generated text, because
# the documentation itself talks about responses, models, agents and bots all the time.
_DOC = (r"(?:(?:this|these|the\s+(?:present|current))\s+(?:web\s*)?(?:pages?|docs?|documents?|documentation|"
        r"articles?|sections?|text|content|material|passages?|sources?|site|chunks?|excerpts?)\b"
        r"|this(?=\s*(?:[,.;:!?)]|$)))")
_DOC_REF = rf"(?:the\s+(?:contents?|information|text|material|facts|data)\s+(?:of|on|in|from)\s+)?{_DOC}"
# Generated text; "responses" and "outputs" are also HTTP and command words, so they get fewer links below.
_TEXT = (r"(?:summar(?:y|ies)|answers?|repl(?:y|ies)|completions?|overviews?|synops[ie]s|digests?|recaps?|"
         r"abstracts?|paraphrases?|TL;?DR)")
_GEN = rf"(?:{_TEXT}|responses?|outputs?)"
_TOOL = (r"(?:AIs?|A\.I\.|LLMs?|GPTs?|(?:large\s+)?language\s+models?|chat\s?bots?|assistants?|agents?|models?|"
         r"bots?|crawlers?|scrapers?|spiders?|(?:automated|automatic|machine|AI|LLM|software|robot)\s+(?:readers?|"
         r"tools?|systems?|clients?|programs?|pipelines?|services?)|(?:answer|search|RAG|retrieval|"
         r"question[- ]answering)\s+(?:engines?|systems?|tools?|pipelines?))")
_READS = (r"(?:read(?:s|ing)?|process(?:es|ed|ing)?|summari[sz](?:e|es|ed|ing)|pars(?:e|es|ed|ing)|"
          r"answer(?:s|ed|ing)?\s+(?:\w+\s+){0,2}?questions?\s+(?:about|on|regarding|concerning|from|using)|"
          r"index(?:es|ed|ing)?|ingest(?:s|ed|ing)?|consum(?:e|es|ed|ing)|crawl(?:s|ed|ing)?|scrap(?:e|es|ed|ing)|"
          r"us(?:e|es|ed|ing)|quot(?:e|es|ed|ing)|cit(?:e|es|ed|ing)|retriev(?:e|es|ed|ing)|trained\s+on|fed|"
          r"see(?:s|ing)?|visit(?:s|ed|ing)?|analy[sz](?:e|es|ed|ing)|learn(?:s|ed|ing)?\s+from|draw(?:s|ing)?\s+on|"
          r"rel(?:y|ies|ying)\s+on|encounter(?:s|ed|ing)?|view(?:s|ed|ing)?|load(?:s|ed|ing)?)")
_ADDRESSEE_EN = [
    # "Summaries generated from this page", "Responses based on the content of this page"
    rf"\b{_GEN}\b(?:\s+[\w'-]+){{0,3}}?\s+(?:generated|produced|derived|created|written|drawn|compiled|built|"
    rf"made|based|sourced|taken|extracted|grounded|informed|(?:that|which)\s+(?:rel(?:y|ies)|draws?|(?:is|are)\s+"
    rf"based))\s+(?:\w+\s+)?(?:from|of|on|upon|using|with|out\s+of|in)\s+{_DOC_REF}",
    # "any summary of this page", "a response about this article" (not "responses from this site")
    rf"\b{_TEXT}\s+(?:of|about|for|from|on|regarding|concerning|covering|citing|quoting)\s+{_DOC_REF}",
    rf"\b{_GEN}\s+(?:about|regarding|concerning|citing|quoting|summari[sz]ing)\s+{_DOC_REF}",
    # "AI-generated answers", "machine-written overview", "generated summaries"
    rf"\b(?:AI|A\.I\.|LLMs?|GPT|machines?|bots?|chat\s?bots?|assistants?|agents?|models?|computers?|automatically|"
    rf"auto)[- ](?:generated|written|produced|created|authored|drafted|composed)\s+(?:\w+\s+)?{_GEN}\b",
    r"\bgenerated\s+(?:summar(?:y|ies)|answers?|repl(?:y|ies)|overviews?|synops[ie]s|digests?|recaps?|TL;?DR)\b",
    # a tool tied to this page: "any AI assistant reading this page", "LLMs that process this document"
    rf"\b{_TOOL}\s+(?:(?:that|which|who)\s+(?:(?:is|are|was|were|has|have)\s+(?:been\s+)?)?)?{_READS}\s+{_DOC_REF}",
    # the reader named by what it does: "when summarising", "when answering questions", "while generating a
    # response from this documentation", "if this document is used to answer a question"
    # ("when summarizing long documents, use a large model" is advice, so the page or a comma must follow)
    rf"\b(?:when|whenever|while|if|before|once)\s+(?:you\s+are\s+|you're\s+|you\s+)?(?:summari[sz]|condens|"
    rf"paraphras|recapp|digest)(?:ing|es?)(?:\s*[,:]|\s+(?:\w+\s+){{0,3}}?{_DOC_REF})",
    r"\b(?:when|whenever|while|if|before)\s+(?:you\s+are\s+|you're\s+|you\s+)?(?:answering|responding\s+to|"
    r"replying\s+to)\s+(?:\w+\s+){0,3}?questions?\b",
    rf"\b(?:when|whenever|while|if|before)\s+(?:you\s+are\s+|you're\s+|you\s+)?(?:generating|producing|writing|"
    rf"drafting|composing|creating)\s+(?:an?\s+|any\s+|the\s+|your\s+)?(?:\w+\s+)?{_GEN}\s+(?:from|of|about|on|"
    rf"for|based\s+on|using)\s+{_DOC_REF}",
    rf"{_DOC}\s+(?:is|are|gets|get|has\s+been|was)\s+(?:being\s+)?(?:summari[sz]ed|quoted|cited|paraphrased|"
    rf"condensed|used\s+(?:to\s+(?:answer|generate|write|produce|summari[sz]e)|as\s+(?:a\s+|the\s+)?(?:source|"
    rf"context|evidence|grounding))|fed\s+(?:to|into)|(?:read|processed|ingested|retrieved|indexed)\s+by)",
    # the reader's output named directly: "your answer", "answers to user questions", "any answer about"
    r"\byour\s+(?:answers?|summar(?:y|ies)|synops[ie]s)\b",
    r"\b(?:answers?|repl(?:y|ies)|responses?)\s+to\s+(?:any\s+|all\s+|every\s+|each\s+|the\s+|a\s+|their\s+)?"
    r"(?:user(?:s'|'s)?\s+|customer\s+|reader\s+)?questions?\b",
    r"\b(?:answers?|summar(?:y|ies)|repl(?:y|ies))\s+(?:about|regarding|concerning)\b",
    # a vocative at the start of a line or sentence: "LLMs, ...", "AI assistants: ..."
    r"(?:^|[\n|>#*\-/]\s*|(?<=[.!?])\s+)(?:all\s+|any\s+)?(?:AIs?|LLMs?|(?:large\s+)?language\s+models?|"
    r"chat\s?bots?|AI\s+(?:assistants?|agents?|models?|systems?|crawlers?)|assistants?)\s*[,:]",
]
_OBLIGATION_EN = (r"\b(?:must|shall|should|ought\s+to|(?:is|are|be|been|being)\s+(?:required|obliged|obligated|"
                  r"expected|supposed)\s+to|required|mandatory|(?:need|needs|needed|have|has|had)\s+to|"
                  r"(?:is|are)\s+to)\b")
_DOC_ZH = (r"(?:本|此|该|这|这个|这一|这篇|这份|这些|当前)\s*(?:页面|页|网页|文档|文章|文|篇|部分|章节|节|内容|"
           r"资料|材料|段落|段|文本|站点|网站)")
_GEN_ZH = r"(?:摘要|总结|概述|概要|综述|梗概|提要|回答|答案|答复|回复|解答|复述|转述)"
_TOOL_ZH = (r"(?:AI|A\.I\.|LLM|GPT|人工智能|大模型|大语言模型|语言模型|模型|智能助手|助手|智能体|聊天机器人|"
            r"机器人|爬虫|搜索引擎|问答系统|程序|工具|系统|代理)")
_STRONG_TOOL_ZH = r"(?:AI|人工智能|大模型|大语言模型|语言模型|智能助手|AI\s*助手|助手|智能体|聊天机器人)"
# Reading verbs for any tool; "使用/处理/参考本节…的系统" is how Chinese docs describe a setup, so those
# verbs count only for a tool that is an AI by name.
_READS_ZH = r"(?:阅读|读取|读到|读|浏览|解析|总结|概括|摘要|引用|检索|索引|抓取|爬取|收录|看到)"
_USES_ZH = rf"(?:{_READS_ZH}|处理|学习|使用|参考|访问|利用)"
_ADDRESSEE_ZH = [
    # 根据本页生成的摘要, 基于本文档的回答, AI 对本节的总结, 任何引用本页的回复
    rf"(?:根据|基于|依据|按照|依照|从|由|参考|引用|利用|使用|借助|针对|关于|对)\s*{_DOC_ZH}[^。！？；\n]{{0,12}}?的\s*"
    rf"(?:任何|所有|一切)?\s*{_GEN_ZH}",
    rf"{_DOC_ZH}(?:内容)?的\s*(?:任何|所有|一切|每[一个篇份条]?)?\s*(?:摘要|总结|概述|概要|梗概|提要|回答|答案)",
    rf"(?:AI|A\.I\.|LLM|GPT|人工智能|大模型|语言模型|机器|自动|智能体|助手|聊天机器人)\s*(?:生成|产生|撰写|编写|给出|"
    rf"输出|作出|做出|写)的\s*(?:任何|所有)?\s*{_GEN_ZH}",
    # a tool tied to this page: 阅读本页的 AI 助手, 使用本文作为资料的聊天机器人, 大模型读到本节
    rf"{_READS_ZH}(?:了|过)?\s*{_DOC_ZH}[^。！？；\n]{{0,8}}?的\s*(?:任何|所有)?\s*{_TOOL_ZH}",
    rf"{_USES_ZH}(?:了|过)?\s*{_DOC_ZH}[^。！？；\n]{{0,8}}?的\s*(?:任何|所有)?\s*{_STRONG_TOOL_ZH}",
    rf"{_STRONG_TOOL_ZH}\s*(?:在)?\s*{_USES_ZH}(?:了|过|到)?\s*{_DOC_ZH}",
    # the reader named by what it does: 在总结本页时, 回答关于…的问题时, 回答用户问题的智能体, 本页被用来回答问题
    rf"(?:总结|概括|摘要|归纳|转述|复述|改写|引用|转载|概述|回答|答复|回复)\s*(?:了)?{_DOC_ZH}[^。！？；\n]{{0,12}}?"
    rf"(?:时|的时候|之时)",
    r"(?:回答|答复|回复|解答)\s*(?:用户|读者|客户|他人|别人)?(?:的)?(?:关于|有关|涉及|针对)[^。！？；\n]{0,24}?问题",
    rf"(?:回答|答复|回复|解答)\s*(?:用户|读者|客户|任何|所有)?(?:的)?(?:提问|问题|疑问)的\s*(?:任何|所有)?\s*"
    rf"{_STRONG_TOOL_ZH}",
    rf"{_DOC_ZH}(?:内容)?\s*(?:被|用于|用来|拿来)[^。！？；\n]{{0,6}}?(?:回答|总结|概括|摘要|引用|生成)",
    # the reader's output named directly: 你的回答, 关于 Workers KV 的回复
    r"(?:你|您)的\s*(?:回答|答案|摘要|总结|回复)",
    r"(?:关于|有关|涉及|针对)[^。！？；\n，,]{1,20}?的\s*(?:回答|答案|答复|回复|摘要|总结)",
]
_OBLIGATION_ZH = r"(?:(?<![不无毋])(?:必须|必需|务必|应当|应该|需要|须|要求)|一律|一定要|只能|只许|只准|只可)"
_ADDRESSEE = re.compile("|".join(f"(?:{p})" for p in _ADDRESSEE_EN + _ADDRESSEE_ZH), re.IGNORECASE)
_OBLIGATION = re.compile(f"{_OBLIGATION_EN}|{_OBLIGATION_ZH}", re.IGNORECASE)


# Flagged spans over every chunk text of both snapshot batches, all read and none real documentation
# (see the module docstring); tests/test_injection.py fails when the rules flag more.
MEASURED_FALSE_POSITIVES = 0


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
    hits = sorted([(m.start(), m.end()) for m in _PATTERN.finditer(text)] + _addressed_obligations(text))
    spans: list[FlaggedSpan] = []
    for hit_start, hit_end in hits:
        start = _sentence_start(text, hit_start)
        end = _sentence_end(text, hit_end)
        if _ANNOUNCES.search(text[start:end]):  # "Note to AI: the following is true. <claim>"
            end = _sentence_end(text, min(len(text), end + 1))
        if spans and start <= spans[-1].end:  # overlapping matches: one span
            start = spans[-1].start
            end = max(end, spans[-1].end)
            spans.pop()
        spans.append(FlaggedSpan(start, end, text[start:end]))
    return spans


def _addressed_obligations(text: str) -> list[tuple[int, int]]:
    """The sentences (or lines) that hold both an addressee (:data:`_ADDRESSEE`) and an obligation."""
    found: list[tuple[int, int]] = []
    start = 0
    for boundary in [*_BOUNDARY.finditer(text), None]:
        end = boundary.start() if boundary else len(text)
        sentence = text[start:end]
        if sentence.strip() and _OBLIGATION.search(sentence) and _ADDRESSEE.search(sentence):
            found.append((start + len(sentence) - len(sentence.lstrip()), end))
        start = boundary.end() if boundary else end
    return found


def _sentence_start(text: str, at: int) -> int:
    starts = [m.end() for m in _BOUNDARY.finditer(text, 0, at)]
    return starts[-1] if starts else 0


def _sentence_end(text: str, at: int) -> int:
    match = _BOUNDARY.search(text, at)
    return match.start() if match else len(text)


def overlaps_instruction(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` touches a flagged span of ``text``."""
    return any(s.start < end and start < s.end for s in instruction_spans(text))
