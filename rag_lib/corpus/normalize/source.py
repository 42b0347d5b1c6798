"""Step 0 of the normaliser: the MDX source of one file cleaned before it is tokenized.

Front matter and ``import`` lines go, an aside the source never closes is closed, a comment that
hides fenced code goes, and ``{…}`` expressions that read ``props`` are evaluated with the
including ``<Render params>``. Every removal and repair is recorded on ``notes`` (the
:class:`~rag_lib.corpus.normalize.render.MdxNormalizer` of the page).
"""

from __future__ import annotations

import re
from typing import Protocol

import yaml

from rag_lib.core.errors import NormalizationError
from rag_lib.corpus.normalize.mdx_expressions import JsSyntaxError, evaluate, parse_container, uses_props
from rag_lib.corpus.normalize.sections import code_spans
from rag_lib.corpus.normalize.tokens import ASIDE_CLOSE_RE, ASIDE_OPEN_RE, FENCE_RE, HEADING_RE, match_brace


class Notes(Protocol):
    """Where the steps record what they removed and what they had to repair."""

    def removed(self, kind: str, detail: str, chars: int) -> None: ...

    def warn(self, message: str) -> None: ...


def split_front_matter(source: str, path: str, notes: Notes) -> tuple[str, str]:
    """The front matter's ``title`` and the body after it (no front matter: an empty title)."""
    m = re.match(r"---[ \t]*\n(.*?)\n---[ \t]*(\n|$)", source, re.DOTALL)
    if not m:
        return "", source
    try:
        meta = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise NormalizationError(
            f"{path}: front matter is not valid YAML ({exc}); fix the source file."
        ) from exc
    notes.removed("frontmatter", path, m.end())
    title = str(meta.get("title", "")) if isinstance(meta, dict) else ""
    return title, source[m.end() :]


def strip_imports(body: str, notes: Notes) -> str:
    """Drop the ``import … from "…"`` statements outside fenced code (they may span lines)."""
    out, in_code, fence = [], False, ""
    lines = body.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fm = FENCE_RE.match(line)
        if fm and (
            not in_code
            or (fm.group(2)[0] == fence[0] and len(fm.group(2)) >= len(fence) and not fm.group(3).strip())
        ):
            in_code, fence = (not in_code), fm.group(2)
        if not in_code and line.startswith("import "):
            j = i
            while j < len(lines) and not re.search(r"from\s+[\"'][^\"']+[\"'];?\s*$", lines[j]):
                j += 1
            if j < len(lines):
                stmt = "\n".join(lines[i : j + 1])
                notes.removed("import", stmt.split("\n")[0], len(stmt) + 1)
                i = j + 1
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def close_open_asides(body: str, path: str, notes: Notes) -> str:
    """Close a ``:::note`` that the source never closes, before the next heading.

    The published site (remark-directive) would run such an aside to the end of the page,
    swallowing every later section into the note; the next heading is where the author's
    aside evidently ends. A ``:::`` that closes nothing is dropped. Each repair is a warning
    that quotes the text next to it.
    """
    lines = body.split("\n")
    code = {i for start, end in code_spans(body) for i in range(start, end + 1)}
    open_at: list[int] = []
    stray: list[int] = []
    headings: list[int] = []
    for idx, line in enumerate(lines):
        if idx in code:
            continue
        if ASIDE_OPEN_RE.match(line):
            open_at.append(idx)
        elif ASIDE_CLOSE_RE.match(line):
            if open_at:
                open_at.pop()
            else:
                stray.append(idx)
        elif HEADING_RE.match(line):
            headings.append(idx)
    edits = []  # (line, lines to insert, lines to delete), applied bottom-up
    for idx in open_at:
        at = next((h for h in headings if h > idx), len(lines))
        after = next((ln.strip() for ln in lines[idx + 1 :] if ln.strip()), "")
        notes.warn(
            f"{path}: aside {lines[idx].strip()!r} (before {after[:50]!r}) is never closed; "
            f"closed before {'the next heading' if at < len(lines) else 'the end of the file'}"
        )
        edits.append((at, [f"{ASIDE_OPEN_RE.match(lines[idx]).group(1)}:::", ""], 0))
    for idx in stray:
        before = next((ln.strip() for ln in reversed(lines[:idx]) if ln.strip()), "")
        notes.warn(f"{path}: a ':::' (after {before[:50]!r}) closes no aside; dropped")
        notes.removed("aside-close", lines[idx], len(lines[idx]) + 1)
        edits.append((idx, [], 1))
    for at, insert, delete in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[at : at + delete] = insert
    return "\n".join(lines)


def strip_spanning_comments(body: str, notes: Notes) -> str:
    """Drop a ``{/* … */}`` comment that encloses fenced code (it hides the code on the site).

    Comments within one stretch of text go with the other comments in :meth:`MdxNormalizer._strip_comments`;
    this one must go first, because the tokenizer would otherwise see its fences as code.
    """
    for m in re.finditer(r"^[ \t]*\{/\*.*?\*/\}[ \t]*$", body, re.DOTALL | re.MULTILINE):
        spans_code = any(FENCE_RE.match(ln) for ln in m.group(0).split("\n"))
        if not spans_code or m.group(0).count("*/}") > 1 or _inside_code(body, m.start()):
            continue
        notes.removed("comment", m.group(0).strip(), len(m.group(0)))
        return strip_spanning_comments(body[: m.start()] + body[m.end() :], notes)
    return body


def _inside_code(body: str, offset: int) -> bool:
    """Whether ``offset`` lies inside a fenced code block of ``body``."""
    line = body[:offset].count("\n")
    return any(start <= line <= end for start, end in code_spans(body))


def resolve_expressions(text: str, params: dict[str, str], path: str, notes: Notes) -> str:
    """Evaluate the ``{…}`` expressions that read ``props`` (ternaries, templates, values).

    Runs on text outside fenced code, before tokenizing, because the values exist only once
    the including ``<Render params>`` are known. Expressions in a component's attributes are
    left to the component (``<Code code={…}>``); ``&&`` branches and ``switch`` functions
    are not in the grammar and stay for :meth:`MdxNormalizer._expression`.
    """
    out: list[str] = []
    i = last = 0
    while i < len(text):
        c = text[i]
        if c == "`":  # inline code
            run = re.match(r"`+", text[i:]).group(0)
            end = text.find(run, i + len(run))
            i = (end + len(run)) if end >= 0 else i + len(run)
            continue
        if c != "{":
            i += 1
            continue
        try:
            node, end = parse_container(text, i)
        except JsSyntaxError:
            end = expression_end(text, i) or i + 1  # skip the whole unsupported expression
            i = end if end > i else i + 1
            continue
        if not uses_props(node) or (node.kind == "param" and node.value not in params):
            i = end  # a missing prop keeps the warning path of <__param>
            continue
        tag = re.search(r"<([A-Za-z][\w.]*)\b[^<>]*=\s*$", text[max(0, i - 2000) : i])
        if tag and tag.group(1)[0].isupper():
            i = end  # the component evaluates its own attribute
            continue
        result = evaluate(node, params)
        for start, stop in result.dropped:
            notes.removed("jsx-branch", text[start:stop], stop - start)
        for name in sorted(set(result.missing)):
            notes.warn(f"{path}: props.{name} is not passed; evaluated as undefined, as the site does")
        start, replacement = i, result.value
        if tag:  # an HTML attribute: href={…} becomes href="…"
            replacement = '"' + replacement.replace('"', "&quot;") + '"'
        elif (pre := re.search(r"<pre class=\"mermaid\">\s*$", text[:i])) and (
            post := re.match(r"\s*</pre>", text[end:])
        ):  # a diagram's source is code
            start, end = pre.start(), end + post.end()
            replacement = f"\n\n```mermaid\n{replacement.strip(chr(10))}\n```\n\n"
        out.append(text[last:start])
        out.append(replacement)
        i = last = end
    out.append(text[last:])
    return "".join(out)


def expression_end(text: str, start: int) -> int | None:
    """End of a JSX expression ``{…}`` at ``start``, or None when the brace is literal text."""
    if re.match(r"\{\s*\(\s*function", text[start:]):  # IIFE: its JSX text may hold stray quotes
        close = text.find("})()}", start)
        return close + len("})()}") if close >= 0 else None
    try:
        end = match_brace(text, start) + 1
    except ValueError:
        return None
    body = text[start + 1 : end - 1]
    if (
        re.match(r"\s*(props|params)\.\w+\s*$", body)
        or "props." in body
        or "&&" in body
        or "function" in body
        or re.match(r"\s*[\"'`].*[\"'`]\s*$", body, re.DOTALL)
    ):
        return end
    return None
