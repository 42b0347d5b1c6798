"""MDX → Markdown: the text a reader of the published page sees.

The Cloudflare docs are MDX: Markdown plus front matter, ``import`` lines, JSX components
(``<Tabs>``, ``<WranglerConfig>``, ``<Render file=… />`` …), ``:::note`` asides and JSX
expressions. :class:`MdxNormalizer` turns one page into plain Markdown in three steps:

1. *tokenize* — split the source into fenced code (opaque, never touched), text, and
   component tags (found only outside fenced code and inline backticks);
2. *build a tree* of components and *render* each one with a handler from
   :data:`COMPONENT_HANDLERS` (inlining ``<Render>`` partials recursively);
3. *select sections* — drop the sections of long, mixed pages that ``sections.yaml``
   names (data, not code), then tidy blank lines and trailing whitespace.

Everything dropped is recorded as a :class:`~rag_lib.documents.Removal`; anything the
normaliser does not understand becomes a warning and keeps its inner text.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag_lib.documents import NormalizedPage, Removal
from rag_lib.errors import NormalizationError
from rag_lib.mdx_expressions import JsSyntaxError, evaluate, parse_container, uses_props
from rag_lib.snapshot import Snapshot, SourceFile, load_snapshot

log = logging.getLogger(__name__)

DOCS_PREFIX = "src/content/docs/"
PARTIALS_PREFIX = "src/content/partials/"
MAX_RENDER_DEPTH = 8  # partials may nest; a deeper chain is a cycle

_FENCE_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_ASIDE_OPEN_RE = re.compile(r"^([ \t]*):::(note|caution|tip|danger|warning)(?:\[(.*)\])?[ \t]*$")
_ASIDE_CLOSE_RE = re.compile(r"^([ \t]*):::[ \t]*$")
_TAG_NAME_RE = re.compile(r"<(/?)([A-Z][A-Za-z0-9]*)")
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
_PARAM_SUB_RE = re.compile(r"\{\s*(?:props|params)\.(\w+)\s*\}")


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
# Tokens and tree
# --------------------------------------------------------------------------------------------


@dataclass
class _Tag:
    name: str
    attrs: dict[str, str]
    kind: str  # "open", "close" or "self"
    raw: str
    indent: str = ""  # whitespace before the tag on its line (empty when the tag is inline)


@dataclass
class _Node:
    tag: _Tag | None  # None for the root
    children: list[Any] = field(default_factory=list)  # str (text), _Code, _Node


@dataclass
class _Code:
    text: str  # the whole fenced block, fences included


def _parse_attrs(raw: str) -> dict[str, str]:
    """Attribute values of a JSX tag: ``a="x"``, ``a='x'``, ``a={"x"}``, ``a={3}``, ``a={{…}}``."""
    attrs: dict[str, str] = {}
    i, n = 0, len(raw)
    while i < n:
        m = re.compile(r"\s*([A-Za-z_][\w-]*)").match(raw, i)
        if not m:
            break
        name, i = m.group(1), m.end()
        if i < n and raw[i] == "=":
            i += 1
            if raw[i] in "\"'":
                end = raw.index(raw[i], i + 1)
                attrs[name], i = raw[i + 1 : end], end + 1
            elif raw[i] == "{":
                end = _match_brace(raw, i)
                value = raw[i + 1 : end].strip()
                attrs[name] = (
                    value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`" else value
                )
                i = end + 1
        else:
            attrs[name] = "true"
    return attrs


def _match_brace(text: str, start: int) -> int:
    """Index of the ``}`` that closes the ``{`` at ``start`` (quotes respected)."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced braces")


def _tag_end(text: str, start: int) -> int:
    """Index just past the ``>`` that ends the tag starting at ``start``."""
    i, quote = start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            i = _match_brace(text, i)
        elif c == ">":
            return i + 1
        i += 1
    raise ValueError("unterminated tag")


# --------------------------------------------------------------------------------------------
# The normaliser
# --------------------------------------------------------------------------------------------


class MdxNormalizer:
    """Render the MDX of one page (and the partials it includes) as Markdown.

    Parameters
    ----------
    snapshot
        The verified snapshot the page and its partials come from.
    page
        Slug of the page being normalised (used in removals and messages).
    product
        Default ``product`` of ``<Render>``: the first path segment under ``docs/``.
    """

    def __init__(self, snapshot: Snapshot, page: str, product: str) -> None:
        self.snapshot = snapshot
        self.page = page
        self.product = product
        self.removals: list[Removal] = []
        self.warnings: list[str] = []

    # -- bookkeeping ------------------------------------------------------------------------
    def removed(self, kind: str, detail: str, chars: int) -> None:
        self.removals.append(Removal(page=self.page, kind=kind, detail=detail[:120], chars=chars))
        log.debug("%s: removed %s (%s, %d chars)", self.page, kind, detail[:60], chars)

    def warn(self, message: str) -> None:
        message = f"{self.page}: {message}"
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning(message)

    # -- entry points -----------------------------------------------------------------------
    def render_file(self, path: str, params: dict[str, str] | None = None, depth: int = 0) -> tuple[str, str]:
        """Markdown body and front-matter title of one MDX file."""
        source = self.snapshot.read(path)
        title, body = self._split_front_matter(source, path)
        body = self._strip_imports(body)
        body = self._close_open_asides(self._strip_spanning_comments(body), path)
        if "props." in body or "params." in body:
            body = _map_outside_code(body, lambda text: self._resolve_expressions(text, params or {}, path))
        tree = self._build_tree(self._tokenize(body, path), path)
        return self._render_children(tree, params or {}, depth), title

    # -- step 1: front matter, imports, tokens ----------------------------------------------
    def _split_front_matter(self, source: str, path: str) -> tuple[str, str]:
        m = re.match(r"---[ \t]*\n(.*?)\n---[ \t]*(\n|$)", source, re.DOTALL)
        if not m:
            return "", source
        try:
            meta = yaml.safe_load(m.group(1)) or {}
        except yaml.YAMLError as exc:
            raise NormalizationError(
                f"{path}: front matter is not valid YAML ({exc}); fix the source file."
            ) from exc
        self.removed("frontmatter", path, m.end())
        title = str(meta.get("title", "")) if isinstance(meta, dict) else ""
        return title, source[m.end() :]

    def _strip_imports(self, body: str) -> str:
        out, in_code, fence = [], False, ""
        lines = body.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            fm = _FENCE_RE.match(line)
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
                    self.removed("import", stmt.split("\n")[0], len(stmt) + 1)
                    i = j + 1
                    continue
            out.append(line)
            i += 1
        return "\n".join(out)

    def _close_open_asides(self, body: str, path: str) -> str:
        """Close a ``:::note`` that the source never closes, before the next heading.

        The published site (remark-directive) would run such an aside to the end of the page,
        swallowing every later section into the note; the next heading is where the author's
        aside evidently ends. A ``:::`` that closes nothing is dropped. Each repair is a warning
        that quotes the text next to it.
        """
        lines = body.split("\n")
        code = {i for start, end in _code_spans(body) for i in range(start, end + 1)}
        open_at: list[int] = []
        stray: list[int] = []
        headings: list[int] = []
        for idx, line in enumerate(lines):
            if idx in code:
                continue
            if _ASIDE_OPEN_RE.match(line):
                open_at.append(idx)
            elif _ASIDE_CLOSE_RE.match(line):
                if open_at:
                    open_at.pop()
                else:
                    stray.append(idx)
            elif _HEADING_RE.match(line):
                headings.append(idx)
        edits = []  # (line, lines to insert, lines to delete), applied bottom-up
        for idx in open_at:
            at = next((h for h in headings if h > idx), len(lines))
            after = next((ln.strip() for ln in lines[idx + 1 :] if ln.strip()), "")
            self.warn(
                f"{path}: aside {lines[idx].strip()!r} (before {after[:50]!r}) is never closed; "
                f"closed before {'the next heading' if at < len(lines) else 'the end of the file'}"
            )
            edits.append((at, [f"{_ASIDE_OPEN_RE.match(lines[idx]).group(1)}:::", ""], 0))
        for idx in stray:
            before = next((ln.strip() for ln in reversed(lines[:idx]) if ln.strip()), "")
            self.warn(f"{path}: a ':::' (after {before[:50]!r}) closes no aside; dropped")
            self.removed("aside-close", lines[idx], len(lines[idx]) + 1)
            edits.append((idx, [], 1))
        for at, insert, delete in sorted(edits, key=lambda e: e[0], reverse=True):
            lines[at : at + delete] = insert
        return "\n".join(lines)

    def _strip_spanning_comments(self, body: str) -> str:
        """Drop a ``{/* … */}`` comment that encloses fenced code (it hides the code on the site).

        Comments within one stretch of text go with the other comments in :meth:`_strip_comments`;
        this one must go first, because the tokenizer would otherwise see its fences as code.
        """
        for m in re.finditer(r"^[ \t]*\{/\*.*?\*/\}[ \t]*$", body, re.DOTALL | re.MULTILINE):
            spans_code = any(_FENCE_RE.match(ln) for ln in m.group(0).split("\n"))
            if not spans_code or m.group(0).count("*/}") > 1 or self._inside_code(body, m.start()):
                continue
            self.removed("comment", m.group(0).strip(), len(m.group(0)))
            return self._strip_spanning_comments(body[: m.start()] + body[m.end() :])
        return body

    @staticmethod
    def _inside_code(body: str, offset: int) -> bool:
        """Whether ``offset`` lies inside a fenced code block of ``body``."""
        line = body[:offset].count("\n")
        return any(start <= line <= end for start, end in _code_spans(body))

    def _resolve_expressions(self, text: str, params: dict[str, str], path: str) -> str:
        """Evaluate the ``{…}`` expressions that read ``props`` (ternaries, templates, values).

        Runs on text outside fenced code, before tokenizing, because the values exist only once
        the including ``<Render params>`` are known. Expressions in a component's attributes are
        left to the component (``<Code code={…}>``); ``&&`` branches and ``switch`` functions
        are not in the grammar and stay for :meth:`_expression`.
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
                end = self._expression_end(text, i) or i + 1  # skip the whole unsupported expression
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
                self.removed("jsx-branch", text[start:stop], stop - start)
            for name in sorted(set(result.missing)):
                self.warn(f"{path}: props.{name} is not passed; evaluated as undefined, as the site does")
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

    def _tokenize(self, body: str, path: str) -> list[Any]:
        """Split into fenced code (:class:`_Code`), text (str) and tags (:class:`_Tag`)."""
        tokens: list[Any] = []
        lines = body.split("\n")
        text_buf: list[str] = []
        i = 0
        while i < len(lines):
            fm = _FENCE_RE.match(lines[i])
            if not fm:
                text_buf.append(lines[i])
                i += 1
                continue
            fence = fm.group(2)
            j = i + 1
            while j < len(lines):
                close = _FENCE_RE.match(lines[j])
                if (
                    close
                    and close.group(2)[0] == fence[0]
                    and len(close.group(2)) >= len(fence)
                    and not close.group(3).strip()
                ):
                    break
                j += 1
            if j == len(lines):
                raise NormalizationError(
                    f"{path} (page {self.page}): code fence {fence!r} opened at line {i + 1} "
                    "is never closed. "
                    "Close the fence in the source, or import a corrected snapshot batch."
                )
            if text_buf:
                tokens.extend(self._tokenize_text("\n".join(text_buf) + "\n", path))
                text_buf = []
            tokens.append(_Code("\n".join(lines[i : j + 1]) + "\n"))
            i = j + 1
        if text_buf:
            tokens.extend(self._tokenize_text("\n".join(text_buf), path))
        return tokens

    def _tokenize_text(self, text: str, path: str) -> list[Any]:
        """Find comments, JSX expressions, asides and component tags in text outside code."""
        text = self._strip_comments(text)
        text = self._asides_to_tags(text)
        tokens: list[Any] = []
        i, last, n = 0, 0, len(text)
        while i < n:
            c = text[i]
            if c == "`":  # inline code: skip to the matching run of backticks
                run = re.match(r"`+", text[i:]).group(0)
                end = text.find(run, i + len(run))
                i = (end + len(run)) if end >= 0 else i + len(run)
                continue
            if c == "{" and (i == 0 or text[i - 1] == "\n" or text[i - 1] in " \t"):
                expr_end = self._expression_end(text, i)
                if expr_end is not None:
                    tokens.append(text[last:i])
                    tokens.extend(self._expression(text[i:expr_end], path))
                    i = last = expr_end
                    continue
            if text.startswith("<code>", i):  # HTML inline code is code too
                end = text.find("</code>", i)
                i = end + len("</code>") if end >= 0 else i + 1
                continue
            # `\<Response>` and `Promise<Env>` are text (escaped, or a generic type), not tags
            # (a closing tag is never a generic: `term">session</GlossaryTooltip>`)
            literal = i > 0 and (text[i - 1] == "\\" or (text[i - 1].isalnum() and text[i + 1 : i + 2] != "/"))
            if c == "<" and not literal:
                m = _TAG_NAME_RE.match(text, i)
                if m and re.search(r"[a-z]", m.group(2)):
                    try:
                        end = _tag_end(text, i)
                    except ValueError as exc:
                        raise NormalizationError(
                            f"{path} (page {self.page}): tag <{m.group(2)} at character {i} is never closed "
                            "with '>'. Fix the source file."
                        ) from exc
                    raw = text[i:end]
                    line_start = text.rfind("\n", 0, i) + 1
                    before = text[line_start:i]
                    indent = before if not before.strip() else ""
                    kind = (
                        "close"
                        if m.group(1)
                        else ("self" if raw.rstrip(">").rstrip().endswith("/") else "open")
                    )
                    inner = raw[len(m.group(0)) : -1].rstrip("/") if kind != "close" else ""
                    tokens.append(text[last:i])
                    tokens.append(_Tag(m.group(2), _parse_attrs(inner), kind, raw, indent))
                    i = last = end
                    continue
            i += 1
        tokens.append(text[last:])
        return [t for t in tokens if not (isinstance(t, str) and t == "")]

    def _strip_comments(self, text: str) -> str:
        def drop(m: re.Match[str]) -> str:
            self.removed("comment", m.group(0), len(m.group(0)))
            return ""

        text = re.sub(r"[ \t]*\{/\*.*?\*/\}", drop, text, flags=re.DOTALL)
        return re.sub(r"<!--.*?-->", drop, text, flags=re.DOTALL)

    @staticmethod
    def _asides_to_tags(text: str) -> str:
        """``:::note[Title]`` … ``:::`` become ``<Aside>`` tags so that they nest like components."""
        out = []
        for line in text.split("\n"):
            m = _ASIDE_OPEN_RE.match(line)
            if m:
                title = (m.group(3) or "").replace('"', "&quot;")
                out.append(f'{m.group(1)}<Aside type="{m.group(2)}" title="{title}">')
            elif _ASIDE_CLOSE_RE.match(line):
                out.append(f"{_ASIDE_CLOSE_RE.match(line).group(1)}</Aside>")
            else:
                out.append(line)
        return "\n".join(out)

    @staticmethod
    def _expression_end(text: str, start: int) -> int | None:
        """End of a JSX expression ``{…}`` at ``start``, or None when the brace is literal text."""
        if re.match(r"\{\s*\(\s*function", text[start:]):  # IIFE: its JSX text may hold stray quotes
            close = text.find("})()}", start)
            return close + len("})()}") if close >= 0 else None
        try:
            end = _match_brace(text, start) + 1
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

    def _expression(self, expr: str, path: str) -> list[Any]:
        """Evaluate the few JSX expression shapes the corpus uses; warn about the rest."""
        body = expr[1:-1].strip()
        if m := re.fullmatch(r"(?:props|params)\.(\w+)", body):
            return [_Tag("__param", {"name": m.group(1)}, "self", expr)]
        if m := re.fullmatch(r"([\"'`])(.*)\1", body, re.DOTALL):
            return [m.group(2)]
        if m := re.fullmatch(r"props\.(\w+)\s*===\s*[\"'](.*?)[\"']\s*&&\s*<>(.*)</>", body, re.DOTALL):
            return [
                _Tag("__if", {"name": m.group(1), "value": m.group(2)}, "open", expr),
                *self._tokenize_text(m.group(3), path),
                _Tag("__if", {}, "close", ""),
            ]
        if m := re.search(r"switch\s*\(\s*props\.(\w+)\s*\)", body):
            cases = {
                c.group(1): c.group(2)
                for c in re.finditer(r"case\s+[\"'](.*?)[\"']\s*:\s*return\s*\((.*?)\);", body, re.DOTALL)
            }
            return [_Tag("__switch", {"name": m.group(1), "cases": json.dumps(cases)}, "self", expr)]
        self.warn(f"unsupported JSX expression dropped: {expr[:80]!r}")
        self.removed("expression", expr, len(expr))
        return []

    def _build_tree(self, tokens: list[Any], path: str) -> _Node:
        root = _Node(None)
        stack = [root]
        for tok in tokens:
            if isinstance(tok, _Tag) and tok.kind == "open":
                node = _Node(tok)
                stack[-1].children.append(node)
                stack.append(node)
            elif isinstance(tok, _Tag) and tok.kind == "close":
                if len(stack) == 1 or stack[-1].tag.name != tok.name:
                    expected = stack[-1].tag.name if len(stack) > 1 else "nothing"
                    raise NormalizationError(
                        f"{path} (page {self.page}): closing </{tok.name}> found while <{expected}> is open. "
                        "Fix the component nesting in the source."
                    )
                stack.pop()
            elif isinstance(tok, _Tag):
                stack[-1].children.append(_Node(tok))
            else:
                stack[-1].children.append(tok)
        if len(stack) > 1:
            raise NormalizationError(
                f"{path} (page {self.page}): <{stack[-1].tag.name}> is opened but never closed. "
                "Close the component in the source."
            )
        return root

    # -- step 2: render ---------------------------------------------------------------------
    def _render_children(self, node: _Node, params: dict[str, str], depth: int) -> str:
        parts: list[str] = []
        for child in node.children:
            if isinstance(child, str):
                parts.append(child)
            elif isinstance(child, _Code):
                parts.append(child.text)
            else:
                out = self._render_node(child, params, depth)
                if out.startswith("\n\n"):  # a block: drop the indentation left before the tag
                    if parts:
                        parts[-1] = parts[-1].rstrip(" \t")
                    out = out.rstrip("\n") + "\n\n"
                parts.append(out)
        text = "".join(parts)
        # a block's trailing "\n\n" is followed by the rest of the tag's line (often spaces)
        return re.sub(r"\n\n[ \t]+\n", "\n\n", text)

    def _render_node(self, node: _Node, params: dict[str, str], depth: int) -> str:
        tag = node.tag
        assert tag is not None
        handler = COMPONENT_HANDLERS.get(tag.name)
        if handler is None:
            self.warn(f"unknown component <{tag.name}> unwrapped; its inner text is kept")
            inner = self._inner(node, params, depth)
            return _block(tag.indent, inner) if tag.indent or "\n" in inner else inner
        return handler(self, node, params, depth)

    def _inner(self, node: _Node, params: dict[str, str], depth: int) -> str:
        """Rendered children, dedented to the tag's own indentation."""
        text = self._render_children(node, params, depth).strip("\n")
        return _dedent_to(text, node.tag.indent if node.tag else "")


def _dedent_to(text: str, indent: str) -> str:
    """Remove indentation that a block has beyond ``indent`` (it sat inside a component)."""
    lines = text.split("\n")
    body = [ln for ln in lines if ln.strip()]
    if not body:
        return ""
    common = re.match(r"[ \t]*", body[0]).group(0)
    for ln in body[1:]:
        while not ln.startswith(common):
            common = common[:-1]
    if not common and all(ln[0] in " \t" for ln in body) and len({ln[0] for ln in body}) > 1:
        # every line is indented, some with a tab and some with spaces: a tab is four columns
        lines = [re.sub(r"^[ \t]+", lambda m: m.group(0).expandtabs(4), ln) for ln in lines]
        return _dedent_to("\n".join(lines), indent)
    if not common.startswith(indent) or common == indent:
        return text
    return "\n".join(indent + ln[len(common) :] if ln.strip() else "" for ln in lines)


def _block(indent: str, text: str) -> str:
    """A block component's output: blank lines around it, every line at ``indent``."""
    lines = [
        (indent + ln[len(indent) :] if ln.startswith(indent) else indent + ln.lstrip()) if ln.strip() else ""
        for ln in text.strip("\n").split("\n")
    ]
    return "\n\n" + "\n".join(lines) + "\n\n"


# --------------------------------------------------------------------------------------------
# Component handlers: one function per component, registered by name
# --------------------------------------------------------------------------------------------

Handler = Callable[[MdxNormalizer, _Node, dict[str, str], int], str]
COMPONENT_HANDLERS: dict[str, Handler] = {}


def handles(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            COMPONENT_HANDLERS[name] = fn
        return fn

    return register


@handles(
    "WranglerConfig", "Steps", "TypeScriptExample", "FileTree", "Tabs", "Markdown", "__if_true", "Example", "CardGrid"
)
def _unwrap(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    return _block(node.tag.indent, n._inner(node, params, depth))


@handles("TabItem")
def _tab_item(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    # a bold label, not a heading: headings drive chunking
    label = node.tag.attrs.get("label", "")
    return _block(node.tag.indent, f"{node.tag.indent}**{label}**\n\n{n._inner(node, params, depth)}")


@handles("Details")
def _details(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    ind = node.tag.indent
    inner = n._inner(node, params, depth)
    header = node.tag.attrs.get("header", "Details")
    return _block(ind, f"{ind}<details>\n{ind}<summary>{header}</summary>\n\n{inner}\n\n{ind}</details>")


@handles("Aside")
def _aside(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    ind = node.tag.indent
    label = node.tag.attrs.get("title") or node.tag.attrs.get("type", "note").capitalize()
    label = label.replace("&quot;", '"')
    lines = [
        ln[len(ind) :] if ln.startswith(ind) else ln.lstrip()
        for ln in n._inner(node, params, depth).split("\n")
    ]
    first = lines[0] if lines else ""
    if first and not re.match(r"\s*(`{3}|~{3}|[-*+] |\d+\. |\||#|<|>)", first):
        lines[0] = f"**{label}:** {first}"
    else:
        lines = [f"**{label}:**", "", *lines] if first else [f"**{label}:**"]
    return _block(ind, "\n".join(f"{ind}> {ln}".rstrip() if ln.strip() else f"{ind}>" for ln in lines))


@handles("PackageManagers")
def _package_managers(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    kind, pkg, args = a.get("type", "add"), a.get("pkg", ""), a.get("args", "")
    if kind == "create":
        cmd = f"npm create {pkg}" + (f" -- {args}" if args else "")
    elif kind == "exec":
        cmd = f"npx {pkg} {args}".rstrip()
    elif kind == "run":
        cmd = f"npm run {args}".rstrip()
    else:  # install / add
        cmd = f"npm i {'-D ' if a.get('dev') == 'true' else ''}{pkg}".rstrip()
    if a.get("prefix"):
        cmd = f"{a['prefix']} {cmd}"
    n.removed("component:PackageManagers", "yarn/pnpm/bun variants (npm kept)", 0)
    ind = node.tag.indent
    return _block(ind, f"{ind}```sh\n{ind}{cmd}\n{ind}```")


@handles("AnchorHeading")
def _anchor_heading(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    level = int(node.tag.attrs.get("depth", "2"))
    return _block("", f"{'#' * level} {node.tag.attrs.get('title', '')}")


@handles("WranglerCommand", "WranglerNamespace")
def _wrangler_command(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    command = a.get("command") or a.get("namespace", "")
    n.removed(f"component:{node.tag.name}", f"flags of `wrangler {command}` (generated, not in the repo)", 0)
    return _block(node.tag.indent, f"`wrangler {command}`")


@handles("Type")
def _type(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    text = node.tag.attrs.get("text", "")
    return f"({text})"


@handles("MetaInfo")
def _meta_info(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    return node.tag.attrs.get("text", "")


@handles("InlineBadge", "Badge")
def _inline_badge(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    return a.get("text") or a.get("preset", "").capitalize()


@handles(
    "DashButton", "DirectoryListing", "PagesBuildPresetsTable", "PagesBuildEnvironment",
    "PagesBuildEnvironmentLanguages", "PagesBuildEnvironmentTools", "CompatibilityFlags",
    "YouTube", "Stream", "R2LocalUploadsDiagram",
)
def _interface_only(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    # links to the dashboard, tables generated at build time from data outside the repo, videos and
    # diagrams: nothing in the source to show as text
    n.removed(f"component:{node.tag.name}", node.tag.raw, len(node.tag.raw))
    return ""


@handles("GlossaryTooltip")
def _glossary_tooltip(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    # inline: the term as the sentence shows it (the tooltip's definition lives in a glossary file)
    return " ".join(n._render_children(node, params, depth).split())


@handles("LinkCard")
def _link_card(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    link = f"[{a.get('title', '')}]({a.get('href', '')})"
    return _block(node.tag.indent, f"{node.tag.indent}{link}: {a['description']}" if a.get("description") else link)


@handles("LinkButton")
def _link_button(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    text = " ".join(n._render_children(node, params, depth).split())
    return _block(node.tag.indent, f"{node.tag.indent}[{text}]({node.tag.attrs.get('href', '')})")


@handles("Code")
def _code(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    """Starlight's ``<Code lang code={`…`} />``: a fenced block; the code may depend on props."""
    a, raw = node.tag.attrs, node.tag.raw
    m = re.search(r"\bcode=\{", raw)
    if m:
        try:
            expr, _ = parse_container(raw, m.end() - 1)
        except JsSyntaxError as exc:
            raise NormalizationError(
                f"Page {n.page}: <Code code={{…}}> is not a string, template or props ternary ({exc}). "
                "Simplify the expression in the source."
            ) from exc
        result = evaluate(expr, params)
        for start, stop in result.dropped:
            n.removed("jsx-branch", raw[start:stop], stop - start)
        code = result.value
    else:
        code = a.get("code", "")
    ind = node.tag.indent
    body = "\n".join(f"{ind}{ln}" if ln else "" for ln in code.strip("\n").split("\n"))
    return _block(ind, f"{ind}```{a.get('lang', '')}\n{body}\n{ind}```")


@handles("APIRequest")
def _api_request(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    """A Cloudflare API call: the site renders it as a curl command from ``path`` and ``method``."""
    a, ind = node.tag.attrs, node.tag.indent
    cmd = (
        f'curl "https://api.cloudflare.com/client/v4{a.get("path", "")}" \\\n'
        f"  --request {a.get('method', 'GET')} \\\n"
        '  --header "Authorization: Bearer <API_TOKEN>"'
    )
    return _block(ind, "\n".join(f"{ind}{ln}" for ln in ["```sh", *cmd.split("\n"), "```"]))


@handles("Render")
def _render_partial(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    name, product = a.get("file", ""), a.get("product", n.product)
    path = f"{PARTIALS_PREFIX}{product}/{name}.mdx"
    if path not in n.snapshot.partials:
        raise NormalizationError(
            f"Page {n.page}: <Render file={name!r} product={product!r}> needs partial {path}, "
            f"which is not in snapshot {n.snapshot.batch}. "
            "Add the partial to the snapshot (a new batch) or remove the Render."
        )
    if depth >= MAX_RENDER_DEPTH:
        raise NormalizationError(
            f"Page {n.page}: partials nest deeper than {MAX_RENDER_DEPTH} at {path}; "
            "break the Render cycle in the source."
        )
    child_params = _parse_object_literal(a.get("params", ""), params) if a.get("params") else {}
    body, _ = n.render_file(path, child_params, depth + 1)
    return _block(node.tag.indent, body)


@handles("__param")
def _param(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    name = node.tag.attrs["name"]
    if name not in params:
        n.warn(f"{node.tag.raw} has no value (the <Render> passes no such param); left empty")
        n.removed("param", node.tag.raw, len(node.tag.raw))
        return ""
    return params[name]


@handles("__if")
def _if(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    if params.get(node.tag.attrs["name"]) == node.tag.attrs["value"]:
        return n._render_children(node, params, depth)
    n.removed("jsx-branch", node.tag.raw, len(node.tag.raw))
    return ""


@handles("__switch")
def _switch(n: MdxNormalizer, node: _Node, params: dict[str, str], depth: int) -> str:
    cases: dict[str, str] = json.loads(node.tag.attrs["cases"])
    value = params.get(node.tag.attrs["name"])
    if value not in cases:
        raise NormalizationError(
            f"Page {n.page}: JSX switch on props.{node.tag.attrs['name']}={value!r} has no matching case "
            f"(cases: {sorted(cases)}). Pass one of them in the <Render params>."
        )
    n.removed("jsx-branch", f"switch cases other than {value!r}", len(node.tag.raw) - len(cases[value]))
    html = _PARAM_SUB_RE.sub(lambda m: params.get(m.group(1), ""), cases[value])
    return _block("", _html_list_to_markdown(html))


def _html_list_to_markdown(html: str) -> str:
    """The ``<ul><li>…`` a JSX branch returns, as a Markdown list."""
    html = re.sub(r"<em>(.*?)</em>", r"*\1*", html)
    html = re.sub(r"<code>(.*?)</code>", r"`\1`", html)
    html = re.sub(r"<strong>(.*?)</strong>", r"**\1**", html)
    items = re.findall(r"<li>(.*?)</li>", html, re.DOTALL)
    return "\n".join(f"- {' '.join(item.split())}" for item in items)


def _parse_object_literal(text: str, parent: dict[str, str] | None = None) -> dict[str, str]:
    """``{ key: "value", key2: props.x, … }`` from a ``params={{…}}`` attribute.

    Values are strings, or the including partial's own props (passed through when present).
    """
    out = {m.group(1): m.group(3) for m in re.finditer(r"(\w+)\s*:\s*([\"'`])(.*?)\2", text, re.DOTALL)}
    for m in re.finditer(r"(\w+)\s*:\s*(?:props|params)\.(\w+)", text):
        if parent and m.group(2) in parent:
            out[m.group(1)] = parent[m.group(2)]
    return out


# --------------------------------------------------------------------------------------------
# Step 3: sections and tidy-up
# --------------------------------------------------------------------------------------------


def _headings(markdown: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, text, char offset) of every heading outside fenced code."""
    out, in_code, fence, offset = [], False, "", 0
    for idx, line in enumerate(markdown.split("\n")):
        fm = _FENCE_RE.match(line)
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
        elif not in_code and (h := _HEADING_RE.match(line)):
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


def _code_spans(markdown: str) -> list[tuple[int, int]]:
    """(first line, last line) of every fenced code block."""
    spans, start, fence = [], -1, ""
    for idx, line in enumerate(markdown.split("\n")):
        fm = _FENCE_RE.match(line)
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


def _map_outside_code(markdown: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the text between fenced code blocks only."""
    lines = markdown.split("\n")
    out, pos = [], 0
    for start, end in _code_spans(markdown):
        out.append(fn("\n".join(lines[pos:start])))
        out.append("\n".join(lines[start : end + 1]))
        pos = end + 1
    out.append(fn("\n".join(lines[pos:])))
    return "\n".join(out)


def _html_links(text: str) -> str:
    """A multi-line ``<a href="X" …>TEXT</a>`` (left around a badge) as ``[TEXT](X)``."""
    return re.sub(
        r"<a\s[^>]*?href=\"([^\"]+)\"[^>]*>\s*([^<>]*?)\s*</a>",
        lambda m: f"[{m.group(2)}]({m.group(1)})" if m.group(2) else "",
        text,
    )


_LIST_ITEM_RE = re.compile(r"^([ ]*)([-*+]|\d+[.)])([ ]+)\S")


def _clamp_indentation(markdown: str) -> str:
    """MDX has no indented code blocks: pull over-indented lines back to their list item.

    A line indented four or more columns beyond the content of the list item above it would
    read as an indented code block in plain Markdown; the published page shows it as text.
    Fenced code blocks move as a whole, so their inner indentation is unchanged.
    """
    lines = markdown.split("\n")
    code = {start: end for start, end in _code_spans(markdown)}
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
        fm = _FENCE_RE.match(line)
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


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def page_slug(path: str) -> str:
    """``src/content/docs/d1/worker-api/index.mdx`` → ``d1/worker-api``."""
    if not path.startswith(DOCS_PREFIX) or not path.endswith(".mdx"):
        raise NormalizationError(f"{path} is not a docs page (expected {DOCS_PREFIX}….mdx).")
    slug = path[len(DOCS_PREFIX) : -len(".mdx")]
    return slug[: -len("/index")] if slug.endswith("/index") else slug


def normalize_page(
    snapshot: Snapshot, source: SourceFile, rules: dict[str, dict[str, Any]]
) -> NormalizedPage:
    """Turn one MDX page of ``snapshot`` into a :class:`NormalizedPage`.

    Raises
    ------
    NormalizationError
        On an unclosed code fence or component, a missing partial, or a section rule that
        names a heading the page does not have. Each message names the page and the fix.
    """
    slug = page_slug(source.path)
    norm = MdxNormalizer(snapshot, slug, product=slug.split("/")[0])
    body, title = norm.render_file(source.path)
    markdown = tidy(_clamp_indentation(_map_outside_code(body, _html_links)))
    removals = list(norm.removals)
    if slug in rules:
        markdown, dropped = apply_section_rules(markdown, slug, rules[slug])
        removals.extend(dropped)
        markdown = tidy(markdown)
    if not title:
        norm.warn("front matter has no title; the page title is empty")
    if not markdown.strip():
        norm.warn("page is empty after normalisation")
    for message in norm.warnings:
        warnings.warn(message, stacklevel=2)
    return NormalizedPage(
        slug=slug,
        path=source.path,
        title=title,
        url=source.url or "",
        markdown=markdown,
        removals=tuple(removals),
        warnings=tuple(norm.warnings),
    )


def normalize_snapshot(
    snapshot: Snapshot | None = None, rules: dict[str, dict[str, Any]] | None = None
) -> list[NormalizedPage]:
    """Normalise every page of ``snapshot`` in manifest order.

    ``rules`` default to ``<batch root>/sections.yaml``. A rule for a page that is not in the
    snapshot raises :class:`NormalizationError`.
    """
    snapshot = snapshot or load_snapshot()
    if rules is None:
        rules = load_section_rules(snapshot.root / "sections.yaml")
    slugs = {page_slug(f.path) for f in snapshot.pages}
    unknown = sorted(set(rules) - slugs)
    if unknown:
        raise NormalizationError(
            f"sections.yaml names page(s) {unknown} that are not in snapshot {snapshot.batch}. "
            "Fix the slug (repo path under src/content/docs/ without .mdx and /index) or delete the rule."
        )
    return [normalize_page(snapshot, f, rules) for f in snapshot.pages]
