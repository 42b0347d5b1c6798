"""Build chat messages from the prompts in ``prompts.yaml``."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from rag_lib.documents import Chunk
from rag_lib.text import language_name

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


def decline_wording_problems(text: str) -> list[str]:
    """Warnings about a decline's wording: it must say what the *evidence* does not include."""
    lowered = text.lower()
    problems = [f"forbidden wording {p!r}" for p in FORBIDDEN_DECLINE_PHRASES if p in lowered]
    if not any(p in lowered for p in DECLINE_PHRASES):
        problems.append("a decline should say 'the evidence provided does not include …'")
    return problems
