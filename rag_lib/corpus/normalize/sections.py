"""Step 3: the section rules of ``sections.yaml`` (data, not code) and the final tidy-up of the Markdown."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.documents import Removal
from rag_lib.core.errors import NormalizationError
from rag_lib.corpus.normalize.tokens import FENCE_RE, HEADING_RE

# --------------------------------------------------------------------------------------------
# Section rules (sections.yaml)
# --------------------------------------------------------------------------------------------


def load_section_rules(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read and validate ``sections.yaml``.

    The file maps a page slug to exactly one of ``drop_sections`` or ``keep_sections`` (a list
    of heading texts) plus a ``reason`` that says why, e.g.::

        pages:
          workers/platform/pricing:
            reason: "KV pricing must stay out of the corpus (Q9a is unanswerable)."
            drop_sections: [Workers KV, Queues]

    Returns
    -------
    dict
        ``{slug: {"drop_sections" | "keep_sections": [...], "reason": str}}``.

    Raises
    ------
    NormalizationError
        When the file is missing or a rule is malformed; the message names the rule.
    """
    path = Path(path)
    if not path.is_file():
        raise NormalizationError(
            f"Section rules {path} not found. Create it (an empty `pages: {{}}` is valid)."
        )
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    pages = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(pages, dict):
        raise NormalizationError(f"{path}: expected a top-level mapping `pages: {{slug: rule}}`.")
    rules: dict[str, dict[str, Any]] = {}
    for slug, rule in pages.items():
        if not isinstance(rule, dict):
            raise NormalizationError(
                f"{path}: rule for {slug!r} must be a mapping with drop_sections or keep_sections."
            )
        unknown = set(rule) - {"drop_sections", "keep_sections", "reason"}
        modes = [k for k in ("drop_sections", "keep_sections") if k in rule]
        if unknown or len(modes) != 1:
            raise NormalizationError(
                f"{path}: rule for {slug!r} must have exactly one of drop_sections/keep_sections "
                f"(and a reason); found keys {sorted(rule)}."
            )
        headings = rule[modes[0]]
        if not (isinstance(headings, list) and headings and all(isinstance(h, str) and h for h in headings)):
            raise NormalizationError(f"{path}: {slug}.{modes[0]} must be a non-empty list of heading texts.")
        if not isinstance(rule.get("reason"), str) or not rule["reason"].strip():
            raise NormalizationError(
                f"{path}: rule for {slug!r} needs a `reason:` saying why sections are removed."
            )
        rules[str(slug)] = {modes[0]: list(headings), "reason": rule["reason"].strip()}
    return rules


# --------------------------------------------------------------------------------------------
# Step 3: sections and tidy-up
# --------------------------------------------------------------------------------------------


def _headings(markdown: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, text, char offset) of every heading outside fenced code."""
    out, in_code, fence, offset = [], False, "", 0
    for idx, line in enumerate(markdown.split("\n")):
        fm = FENCE_RE.match(line)
        if fm and not in_code:
            in_code, fence = True, fm.group(2)
        elif (
            fm
            and in_code
            and fm.group(2)[0] == fence[0]
            and len(fm.group(2)) >= len(fence)
            and not fm.group(3).strip()
        ):
            in_code = False
        elif not in_code and (h := HEADING_RE.match(line)):
            out.append((idx, len(h.group(1)), h.group(2), offset))
        offset += len(line) + 1
    return out


def _heading_key(text: str) -> str:
    return text.strip().strip("`").strip()


def apply_section_rules(markdown: str, page: str, rule: dict[str, Any]) -> tuple[str, list[Removal]]:
    """Drop (or keep only) the sections ``rule`` names; a name that matches no heading is an error."""
    lines = markdown.split("\n")
    heads = _headings(markdown)
    mode = "drop_sections" if "drop_sections" in rule else "keep_sections"
    wanted = rule[mode]
    present = {_heading_key(h[2]) for h in heads}
    missing = [w for w in wanted if _heading_key(w) not in present]
    if missing:
        raise NormalizationError(
            f"sections.yaml rule for {page}: heading(s) {missing} not found on the page "
            f"(headings are {sorted(present)}). Fix the rule to name existing headings."
        )
    spans = []  # (first line, end line, heading text) of each section
    for k, (idx, level, text, _) in enumerate(heads):
        end = next((h[0] for h in heads[k + 1 :] if h[1] <= level), len(lines))
        spans.append((idx, end, text))
    keys = {_heading_key(w) for w in wanted}
    drop = [False] * len(lines)
    if mode == "drop_sections":
        for start, end, text in spans:
            if _heading_key(text) in keys:
                drop[start:end] = [True] * (end - start)
    else:
        keep = [False] * len(lines)
        keep[: heads[0][0] if heads else len(lines)] = [True] * (heads[0][0] if heads else len(lines))
        for start, end, text in spans:
            if _heading_key(text) in keys:
                keep[start:end] = [True] * (end - start)
        drop = [not k for k in keep]
    removals = []
    for start, end, text in spans:
        # log each outermost dropped section once
        if drop[start] and not any(s < start < e and drop[s] for s, e, _ in spans):
            chars = sum(len(lines[i]) + 1 for i in range(start, end) if drop[i])
            removals.append(Removal(page=page, kind="section", detail=text, chars=chars))
    kept = "\n".join(ln for ln, d in zip(lines, drop, strict=True) if not d)
    return kept, removals


def code_spans(markdown: str) -> list[tuple[int, int]]:
    """(first line, last line) of every fenced code block."""
    spans, start, fence = [], -1, ""
    for idx, line in enumerate(markdown.split("\n")):
        fm = FENCE_RE.match(line)
        if fm and start < 0:
            start, fence = idx, fm.group(2)
        elif (
            fm
            and start >= 0
            and fm.group(2)[0] == fence[0]
            and len(fm.group(2)) >= len(fence)
            and not fm.group(3).strip()
        ):
            spans.append((start, idx))
            start = -1
    return spans


def map_outside_code(markdown: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the text between fenced code blocks only."""
    lines = markdown.split("\n")
    out, pos = [], 0
    for start, end in code_spans(markdown):
        out.append(fn("\n".join(lines[pos:start])))
        out.append("\n".join(lines[start : end + 1]))
        pos = end + 1
    out.append(fn("\n".join(lines[pos:])))
    return "\n".join(out)


def html_links(text: str) -> str:
    """A multi-line ``<a href="X" …>TEXT</a>`` (left around a badge) as ``[TEXT](X)``."""
    return re.sub(
        r"<a\s[^>]*?href=\"([^\"]+)\"[^>]*>\s*([^<>]*?)\s*</a>",
        lambda m: f"[{m.group(2)}]({m.group(1)})" if m.group(2) else "",
        text,
    )


_LIST_ITEM_RE = re.compile(r"^([ ]*)([-*+]|\d+[.)])([ ]+)\S")


def clamp_indentation(markdown: str) -> str:
    """MDX has no indented code blocks: pull over-indented lines back to their list item.

    A line indented four or more columns beyond the content of the list item above it would
    read as an indented code block in plain Markdown; the published page shows it as text.
    Fenced code blocks move as a whole, so their inner indentation is unchanged.
    """
    lines = markdown.split("\n")
    code = {start: end for start, end in code_spans(markdown)}
    content = 0  # content column of the current list item
    i = 0
    while i < len(lines):
        line = lines[i]
        lead = len(line) - len(line.lstrip(" "))
        if line.strip() and lead == 0:
            content = 0
        if m := _LIST_ITEM_RE.match(line):
            content = len(m.group(1) + m.group(2) + m.group(3))
        elif line.strip() and lead >= content + 4:
            shift = lead - content
            end = code.get(i, i)
            block = lines[i : end + 1]
            if all(not ln.strip() or ln.startswith(" " * shift) for ln in block):
                lines[i : end + 1] = [ln[shift:] if ln.strip() else ln for ln in block]
        i = code.get(i, i) + 1
    return "\n".join(lines)


def tidy(markdown: str) -> str:
    """Blank line between blocks, no trailing spaces, no leading blank lines, one final newline.

    Lines inside fenced code are left byte-intact.
    """
    out: list[str] = []
    in_code, fence = False, ""
    for line in markdown.split("\n"):
        fm = FENCE_RE.match(line)
        if in_code:
            out.append(line)
            if (
                fm
                and fm.group(2)[0] == fence[0]
                and len(fm.group(2)) >= len(fence)
                and not fm.group(3).strip()
            ):
                in_code = False
            continue
        if fm:
            in_code, fence = True, fm.group(2)
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip("\n") + "\n" if any(out) else ""
