"""Step 2: :class:`MdxNormalizer` renders one page's component tree (and its partials) as Markdown."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from rag_lib.core.documents import Removal
from rag_lib.core.errors import NormalizationError
from rag_lib.corpus.normalize.components import COMPONENT_HANDLERS
from rag_lib.corpus.normalize.sections import map_outside_code
from rag_lib.corpus.normalize.source import (
    close_open_asides,
    expression_end,
    resolve_expressions,
    split_front_matter,
    strip_imports,
    strip_spanning_comments,
)
from rag_lib.corpus.normalize.tokens import (
    ASIDE_CLOSE_RE,
    ASIDE_OPEN_RE,
    FENCE_RE,
    TAG_NAME_RE,
    CodeToken,
    TagToken,
    TokenNode,
    dedent_to,
    indent_block,
    parse_attrs,
    tag_end,
)
from rag_lib.corpus.snapshot import Snapshot

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
        title, body = split_front_matter(source, path, self)
        body = strip_imports(body, self)
        body = close_open_asides(strip_spanning_comments(body, self), path, self)
        if "props." in body or "params." in body:
            body = map_outside_code(body, lambda text: resolve_expressions(text, params or {}, path, self))
        tree = self._build_tree(self._tokenize(body, path), path)
        return self.render_children(tree, params or {}, depth), title

    # -- step 1: tokens ----------------------------------------------------------------------
    def _tokenize(self, body: str, path: str) -> list[Any]:
        """Split into fenced code (:class:`CodeToken`), text (str) and tags (:class:`TagToken`)."""
        tokens: list[Any] = []
        lines = body.split("\n")
        text_buf: list[str] = []
        i = 0
        while i < len(lines):
            fm = FENCE_RE.match(lines[i])
            if not fm:
                text_buf.append(lines[i])
                i += 1
                continue
            fence = fm.group(2)
            j = i + 1
            while j < len(lines):
                close = FENCE_RE.match(lines[j])
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
            tokens.append(CodeToken("\n".join(lines[i : j + 1]) + "\n"))
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
                expr_end = expression_end(text, i)
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
                m = TAG_NAME_RE.match(text, i)
                if m and re.search(r"[a-z]", m.group(2)):
                    try:
                        end = tag_end(text, i)
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
                    tokens.append(TagToken(m.group(2), parse_attrs(inner), kind, raw, indent))
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
            m = ASIDE_OPEN_RE.match(line)
            if m:
                title = (m.group(3) or "").replace('"', "&quot;")
                out.append(f'{m.group(1)}<Aside type="{m.group(2)}" title="{title}">')
            elif ASIDE_CLOSE_RE.match(line):
                out.append(f"{ASIDE_CLOSE_RE.match(line).group(1)}</Aside>")
            else:
                out.append(line)
        return "\n".join(out)

    def _expression(self, expr: str, path: str) -> list[Any]:
        """Evaluate the few JSX expression shapes the corpus uses; warn about the rest."""
        body = expr[1:-1].strip()
        if m := re.fullmatch(r"(?:props|params)\.(\w+)", body):
            return [TagToken("__param", {"name": m.group(1)}, "self", expr)]
        if m := re.fullmatch(r"([\"'`])(.*)\1", body, re.DOTALL):
            return [m.group(2)]
        if m := re.fullmatch(r"props\.(\w+)\s*===\s*[\"'](.*?)[\"']\s*&&\s*<>(.*)</>", body, re.DOTALL):
            return [
                TagToken("__if", {"name": m.group(1), "value": m.group(2)}, "open", expr),
                *self._tokenize_text(m.group(3), path),
                TagToken("__if", {}, "close", ""),
            ]
        if m := re.search(r"switch\s*\(\s*props\.(\w+)\s*\)", body):
            cases = {
                c.group(1): c.group(2)
                for c in re.finditer(r"case\s+[\"'](.*?)[\"']\s*:\s*return\s*\((.*?)\);", body, re.DOTALL)
            }
            return [TagToken("__switch", {"name": m.group(1), "cases": json.dumps(cases)}, "self", expr)]
        self.warn(f"unsupported JSX expression dropped: {expr[:80]!r}")
        self.removed("expression", expr, len(expr))
        return []

    def _build_tree(self, tokens: list[Any], path: str) -> TokenNode:
        root = TokenNode(None)
        stack = [root]
        for tok in tokens:
            if isinstance(tok, TagToken) and tok.kind == "open":
                node = TokenNode(tok)
                stack[-1].children.append(node)
                stack.append(node)
            elif isinstance(tok, TagToken) and tok.kind == "close":
                if len(stack) == 1 or stack[-1].tag.name != tok.name:
                    expected = stack[-1].tag.name if len(stack) > 1 else "nothing"
                    raise NormalizationError(
                        f"{path} (page {self.page}): closing </{tok.name}> found while <{expected}> is open. "
                        "Fix the component nesting in the source."
                    )
                stack.pop()
            elif isinstance(tok, TagToken):
                stack[-1].children.append(TokenNode(tok))
            else:
                stack[-1].children.append(tok)
        if len(stack) > 1:
            raise NormalizationError(
                f"{path} (page {self.page}): <{stack[-1].tag.name}> is opened but never closed. "
                "Close the component in the source."
            )
        return root

    # -- step 2: render ---------------------------------------------------------------------
    def render_children(self, node: TokenNode, params: dict[str, str], depth: int) -> str:
        parts: list[str] = []
        for child in node.children:
            if isinstance(child, str):
                parts.append(child)
            elif isinstance(child, CodeToken):
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

    def _render_node(self, node: TokenNode, params: dict[str, str], depth: int) -> str:
        tag = node.tag
        assert tag is not None
        handler = COMPONENT_HANDLERS.get(tag.name)
        if handler is None:
            self.warn(f"unknown component <{tag.name}> unwrapped; its inner text is kept")
            inner = self.inner(node, params, depth)
            return indent_block(tag.indent, inner) if tag.indent or "\n" in inner else inner
        return handler(self, node, params, depth)

    def inner(self, node: TokenNode, params: dict[str, str], depth: int) -> str:
        """Rendered children, dedented to the tag's own indentation."""
        text = self.render_children(node, params, depth).strip("\n")
        return dedent_to(text, node.tag.indent if node.tag else "")
