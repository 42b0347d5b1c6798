"""Step 2: :class:`MdxNormalizer` renders one page's component tree (and its partials) as Markdown."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import yaml

from rag_lib.corpus.normalize.components import COMPONENT_HANDLERS
from rag_lib.corpus.normalize.mdx_expressions import JsSyntaxError, evaluate, parse_container, uses_props
from rag_lib.corpus.normalize.sections import _code_spans, _map_outside_code
from rag_lib.corpus.normalize.tokens import (
    _ASIDE_CLOSE_RE,
    _ASIDE_OPEN_RE,
    _FENCE_RE,
    _HEADING_RE,
    _TAG_NAME_RE,
    _block,
    _Code,
    _dedent_to,
    _match_brace,
    _Node,
    _parse_attrs,
    _Tag,
    _tag_end,
)
from rag_lib.corpus.snapshot import Snapshot
from rag_lib.documents import Removal
from rag_lib.errors import NormalizationError

log = logging.getLogger("rag_lib.corpus.normalize")  # one logger for the whole normaliser


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
