"""Build chat messages from the prompts in ``prompts.yaml``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from rag_lib.core.documents import Chunk
from rag_lib.core.text import language_name

PROMPTS_YAML = Path(__file__).resolve().parent / "prompts.yaml"
TASKS = ("answer", "recovery", "sufficiency")

# The decline wording the answer prompt requires, and the wording it forbids (casebook section 03:
# "not in the corpus" is not "the vendor does not have it").
DECLINE_PHRASES = ("the evidence provided does not include", "提供的证据中未包含")
FORBIDDEN_DECLINE_PHRASES = (
    "the documentation does not have", "the docs do not have", "the documentation does not include",
    "文档中没有", "官方文档没有",
)


@cache
def prompts() -> dict[str, Any]:
    """The parsed ``prompts.yaml``."""
    with open(PROMPTS_YAML, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def clip_text(text: str, max_chars: int | None) -> str:
    """``text`` cut to ``max_chars`` at a line or word boundary, marked with " …" (``None``: whole)."""
    text = text.strip()
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    return (cut[:boundary] if boundary > max_chars // 2 else cut).rstrip() + " …"


def format_evidence(evidence: Sequence[Chunk], max_chunk_chars: int | None = None) -> str:
    """Number the chunks in rank order, each with its id and where it comes from.

    ``max_chunk_chars`` cuts each chunk's text for small-context models; a quote is still checked
    against the whole chunk, so cutting can only make a citation harder, never easier, to pass.
    """
    item = Template(prompts()["evidence_item"])
    parts = []
    for rank, chunk in enumerate(evidence, start=1):
        source = " > ".join((chunk.title, *chunk.heading_path))
        parts.append(item.substitute(rank=rank, chunk_id=chunk.id, source=source,
                                     text=clip_text(chunk.text, max_chunk_chars)))
    return "\n\n".join(parts)


def build_messages(
    task: str, question: str, evidence: Sequence[Chunk], max_chunk_chars: int | None = None
) -> list[dict[str, str]]:
    """System + user messages for ``task`` (one of ``answer``, ``recovery``, ``sufficiency``)."""
    if task not in TASKS:
        raise ValueError(f"Unknown prompt task {task!r}; use one of {', '.join(TASKS)}.")
    spec = prompts()[task]
    user = Template(spec["user"]).substitute(
        question=question.strip(), evidence=format_evidence(evidence, max_chunk_chars),
        language=language_name(question),
    )
    return [{"role": "system", "content": spec["system"]}, {"role": "user", "content": user}]


# The evidence layout a prompt shows the model ("Source 1: …", "[S1] …", "[1] chunk_id: …"): an answer that
# contains it copied the prompt instead of answering from it.
_EVIDENCE_LAYOUT = re.compile(r"(?m)^\s*(?:Source \d+: |\[S\d+\] |\[\d+\] chunk_id: )")
MIN_ECHO_CHARS = 40  # a prompt line this long or longer, found in an answer, was copied, not written


@cache
def _prompt_lines() -> tuple[str, ...]:
    """Every fixed line of every prompt (placeholders cut out), at least ``MIN_ECHO_CHARS`` long, squashed."""
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(prompts())
    lines = set()
    for text in texts:
        # Lines are joined where the YAML wraps a sentence, so a reply that copies the sentence matches.
        for paragraph in re.split(r"\n\s*\n", text):
            for piece in re.split(r"\$\w+|<[^>]*>", " ".join(paragraph.split())):
                for sentence in re.split(r"(?<=[.:])\s+", piece):
                    squashed = _squash(sentence)
                    if len(squashed) >= MIN_ECHO_CHARS:
                        lines.add(squashed)
    return tuple(sorted(lines))


def _squash(text: str) -> str:
    return "".join(text.lower().split())


def echoed_prompt(answer: str) -> str | None:
    """What of the prompt ``answer`` repeats, or ``None``: a fixed prompt sentence (at least
    ``MIN_ECHO_CHARS`` characters) or the evidence layout. Such an answer copied its instructions or its
    evidence listing instead of answering, whatever its citations say, so it is never shown."""
    layout = _EVIDENCE_LAYOUT.search(answer)
    if layout:
        return f"the evidence layout ({layout.group().strip()!r})"
    squashed = _squash(answer)
    return next((f"a sentence of the prompt ({line[:40]!r}…)" for line in _prompt_lines() if line in squashed), None)


def decline_wording_problems(text: str) -> list[str]:
    """Warnings about a decline's wording: it must say what the *evidence* does not include."""
    lowered = text.lower()
    problems = [f"forbidden wording {p!r}" for p in FORBIDDEN_DECLINE_PHRASES if p in lowered]
    if not any(p in lowered for p in DECLINE_PHRASES):
        problems.append("a decline should say 'the evidence provided does not include …'")
    return problems
