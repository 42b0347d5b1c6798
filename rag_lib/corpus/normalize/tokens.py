"""Step 1 of the normaliser: MDX split into fenced code, text and component tags, and the tags' tree.

Also the two block-layout helpers every component handler uses (:func:`indent_block`, :func:`dedent_to`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DOCS_PREFIX = "src/content/docs/"
PARTIALS_PREFIX = "src/content/partials/"
MAX_RENDER_DEPTH = 8  # partials may nest; a deeper chain is a cycle

FENCE_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
ASIDE_OPEN_RE = re.compile(r"^([ \t]*):::(note|caution|tip|danger|warning)(?:\[(.*)\])?[ \t]*$")
ASIDE_CLOSE_RE = re.compile(r"^([ \t]*):::[ \t]*$")
TAG_NAME_RE = re.compile(r"<(/?)([A-Z][A-Za-z0-9]*)")
HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
PARAM_SUB_RE = re.compile(r"\{\s*(?:props|params)\.(\w+)\s*\}")


# --------------------------------------------------------------------------------------------
# Tokens and tree
# --------------------------------------------------------------------------------------------


@dataclass
class TagToken:
    name: str
    attrs: dict[str, str]
    kind: str  # "open", "close" or "self"
    raw: str
    indent: str = ""  # whitespace before the tag on its line (empty when the tag is inline)


@dataclass
class TokenNode:
    tag: TagToken | None  # None for the root
    children: list[Any] = field(default_factory=list)  # str (text), CodeToken, TokenNode


@dataclass
class CodeToken:
    text: str  # the whole fenced block, fences included


def parse_attrs(raw: str) -> dict[str, str]:
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
                end = match_brace(raw, i)
                value = raw[i + 1 : end].strip()
                attrs[name] = (
                    value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`" else value
                )
                i = end + 1
        else:
            attrs[name] = "true"
    return attrs


def match_brace(text: str, start: int) -> int:
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


def tag_end(text: str, start: int) -> int:
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
            i = match_brace(text, i)
        elif c == ">":
            return i + 1
        i += 1
    raise ValueError("unterminated tag")


def dedent_to(text: str, indent: str) -> str:
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
        return dedent_to("\n".join(lines), indent)
    if not common.startswith(indent) or common == indent:
        return text
    return "\n".join(indent + ln[len(common) :] if ln.strip() else "" for ln in lines)


def indent_block(indent: str, text: str) -> str:
    """A block component's output: blank lines around it, every line at ``indent``."""
    lines = [
        (indent + ln[len(indent) :] if ln.startswith(indent) else indent + ln.lstrip()) if ln.strip() else ""
        for ln in text.strip("\n").split("\n")
    ]
    return "\n\n" + "\n".join(lines) + "\n\n"
