"""The small subset of JavaScript that MDX partials use in ``{…}`` expressions, evaluated with the
``<Render params>`` of the page that includes them.

Shared partials switch wording by product (``{props.product === 'workers' ? 'Workers' : 'Pages'}``),
interpolate into code (``code={`…${props.product === "workers" ? "a" : "b"}…`}``) and pick whole
JSX fragments. The grammar here is exactly what the corpus needs::

    expr     := compare ["?" expr ":" expr]
    compare  := primary [("===" | "!==") primary]
    primary  := "(" expr ")" | string | template | jsx | ("props" | "params") "." name

A string outside the grammar raises :class:`JsSyntaxError`; the normaliser then leaves the text to
its other rules (``&&`` branches, ``switch`` functions) or warns. JSX evaluates to its MDX source
(fragments unwrapped, attribute expressions resolved), which the normaliser then tokenizes as usual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_IDENT_RE = re.compile(r"(props|params)\.(\w+)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


class JsSyntaxError(ValueError):
    """The text is not an expression of the supported subset."""


@dataclass
class Expr:
    kind: str  # "str", "template", "param", "compare", "ternary", "element", "fragment"
    start: int
    end: int
    value: str = ""  # str: the value; param: the name; compare: the operator; element: the tag name
    parts: list[Any] = field(default_factory=list)  # template / jsx children (str | Expr); operands
    attrs: list[tuple[str, Any]] = field(default_factory=list)  # element attributes (str | Expr | None)
    self_closing: bool = False


@dataclass
class Evaluation:
    """Result of :func:`evaluate`: the value, and the source spans of branches not taken."""

    value: str
    dropped: list[tuple[int, int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # props read but not passed


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text

    def ws(self, i: int) -> int:
        s = self.s
        while i < len(s):
            if s[i].isspace():
                i += 1
            elif s.startswith("/*", i):
                end = s.find("*/", i + 2)
                if end < 0:
                    raise JsSyntaxError("unclosed comment")
                i = end + 2
            else:
                break
        return i

    def expect(self, i: int, token: str) -> int:
        i = self.ws(i)
        if not self.s.startswith(token, i):
            raise JsSyntaxError(f"expected {token!r} at {i}")
        return i + len(token)

    def expr(self, i: int) -> tuple[Expr, int]:
        cond, i = self.compare(i)
        j = self.ws(i)
        if j < len(self.s) and self.s[j] == "?" and not self.s.startswith("??", j):
            a, j = self.expr(j + 1)
            j = self.expect(j, ":")
            b, j = self.expr(j)
            return Expr("ternary", cond.start, j, parts=[cond, a, b]), j
        return cond, i

    def compare(self, i: int) -> tuple[Expr, int]:
        left, i = self.primary(i)
        j = self.ws(i)
        for op in ("===", "!=="):
            if self.s.startswith(op, j):
                right, j = self.primary(j + 3)
                return Expr("compare", left.start, j, value=op, parts=[left, right]), j
        return left, i

    def primary(self, i: int) -> tuple[Expr, int]:
        i = self.ws(i)
        if i >= len(self.s):
            raise JsSyntaxError("unexpected end")
        c = self.s[i]
        if c == "(":
            inner, j = self.expr(i + 1)
            return inner, self.expect(j, ")")
        if c in "\"'":
            return self.string(i)
        if c == "`":
            return self.template(i)
        if c == "<":
            return self.jsx(i)
        if m := _IDENT_RE.match(self.s, i):
            return Expr("param", i, m.end(), value=m.group(2)), m.end()
        raise JsSyntaxError(f"unsupported expression at {i}: {self.s[i : i + 20]!r}")

    def _escape(self, i: int) -> tuple[str, int]:
        c = self.s[i + 1] if i + 1 < len(self.s) else ""
        return _ESCAPES.get(c, c), i + 2

    def string(self, i: int) -> tuple[Expr, int]:
        quote, j, out = self.s[i], i + 1, []
        while j < len(self.s):
            c = self.s[j]
            if c == "\\":
                ch, j = self._escape(j)
                out.append(ch)
            elif c == quote:
                return Expr("str", i, j + 1, value="".join(out)), j + 1
            elif c == "\n":
                break
            else:
                out.append(c)
                j += 1
        raise JsSyntaxError(f"unclosed string at {i}")

    def template(self, i: int) -> tuple[Expr, int]:
        j, buf, parts = i + 1, [], []
        while j < len(self.s):
            c = self.s[j]
            if c == "\\":
                ch, j = self._escape(j)
                buf.append(ch)
            elif c == "`":
                parts.append("".join(buf))
                return Expr("template", i, j + 1, parts=parts), j + 1
            elif self.s.startswith("${", j):
                j = self.embedded(j + 2, parts, buf)
            else:
                buf.append(c)
                j += 1
        raise JsSyntaxError(f"unclosed template at {i}")

    def embedded(self, i: int, parts: list[Any], buf: list[str]) -> int:
        """An expression from ``i`` to its ``}`` (template ``${…}``, JSX ``{…}``), after the text in ``buf``."""
        parts.append("".join(buf))
        buf.clear()
        inner, j = self.expr(i)
        parts.append(inner)
        return self.expect(j, "}")

    def jsx(self, i: int) -> tuple[Expr, int]:
        s = self.s
        if s.startswith("<>", i):
            children, j = self.children(i + 2, "")
            return Expr("fragment", i, j, parts=children), j
        m = re.compile(r"<([A-Za-z][\w.-]*)").match(s, i)
        if not m:
            raise JsSyntaxError(f"not a JSX element at {i}")
        node = Expr("element", i, i, value=m.group(1))
        j = m.end()
        while True:
            j = self.ws(j)
            if s.startswith("/>", j):
                node.self_closing, node.end = True, j + 2
                return node, j + 2
            if s.startswith(">", j):
                node.parts, j = self.children(j + 1, node.value)
                node.end = j
                return node, j
            a = re.compile(r"([A-Za-z_][\w:-]*)").match(s, j)
            if not a:
                raise JsSyntaxError(f"bad attribute at {j}")
            name, j = a.group(1), a.end()
            if s.startswith("=", j):
                if s[j + 1 : j + 2] in ("'", '"'):
                    end = s.index(s[j + 1], j + 2)
                    node.attrs.append((name, s[j + 2 : end]))
                    j = end + 1
                elif s.startswith("{", j + 1):
                    value, j = self.expr(j + 2)
                    node.attrs.append((name, value))
                    j = self.expect(j, "}")
                else:
                    raise JsSyntaxError(f"bad attribute value at {j}")
            else:
                node.attrs.append((name, None))

    def children(self, i: int, name: str) -> tuple[list[Any], int]:
        """JSX children up to ``</name>`` (``</>`` for a fragment); text is kept verbatim."""
        s, parts, buf = self.s, [], []
        close = f"</{name}>"
        while i < len(s):
            if s.startswith(close, i):
                parts.append("".join(buf))
                return parts, i + len(close)
            if s.startswith("<", i) and re.match(r"<[A-Za-z>]", s[i : i + 2]):
                parts.append("".join(buf))
                buf = []
                child, i = self.jsx(i)
                parts.append(child)
            elif s[i] == "{":
                j = self.ws(i + 1)
                if s.startswith("}", j):  # an empty container or a {/* comment */}
                    i = j + 1
                    continue
                i = self.embedded(i + 1, parts, buf)
            else:
                buf.append(s[i])
                i += 1
        raise JsSyntaxError(f"<{name}> is not closed")


def parse(text: str, start: int = 0) -> tuple[Expr, int]:
    """Parse one expression of ``text`` from ``start``; return it and the index just past it."""
    return _Parser(text).expr(start)


def parse_container(text: str, start: int) -> tuple[Expr, int]:
    """Parse the expression container ``{…}`` whose ``{`` is at ``start``; return it and the end."""
    p = _Parser(text)
    node, i = p.expr(start + 1)
    return node, p.expect(i, "}")


def uses_props(node: Any) -> bool:
    """Whether the expression reads ``props``/``params`` anywhere."""
    if not isinstance(node, Expr):
        return False
    if node.kind == "param":
        return True
    return any(uses_props(p) for p in node.parts) or any(uses_props(v) for _, v in node.attrs)


def evaluate(node: Expr, params: dict[str, str]) -> Evaluation:
    """Evaluate ``node`` with ``params`` (a prop that is not passed is ``undefined``, as in JavaScript)."""
    result = Evaluation("")
    result.value = _eval(node, params, result)
    return result


def _eval(node: Any, params: dict[str, str], out: Evaluation) -> str:
    if isinstance(node, str):
        return node
    if node.kind == "str":
        return node.value
    if node.kind == "param":
        if node.value not in params:
            out.missing.append(node.value)
            return ""
        return params[node.value]
    if node.kind == "template":
        return "".join(_eval(p, params, out) for p in node.parts)
    if node.kind == "compare":
        left, right = node.parts
        values = []
        for p in (left, right):
            if p.kind == "param" and p.value not in params:
                out.missing.append(p.value)
                values.append(None)
            else:
                values.append(_eval(p, params, out))
        equal = values[0] == values[1]
        return "true" if equal == (node.value == "===") else ""
    if node.kind == "ternary":
        cond, a, b = node.parts
        taken, other = (a, b) if _eval(cond, params, out) else (b, a)
        out.dropped.append((other.start, other.end))
        return _eval(taken, params, out)
    if node.kind == "fragment":
        return "".join(_eval(p, params, out) for p in node.parts)
    # an element: its MDX source with the attribute and child expressions resolved
    attrs = "".join(
        f" {name}" if value is None else f' {name}="{_eval(value, params, out) if isinstance(value, Expr) else value}"'
        for name, value in node.attrs
    )
    if node.self_closing:
        return f"<{node.value}{attrs} />"
    return f"<{node.value}{attrs}>" + "".join(_eval(p, params, out) for p in node.parts) + f"</{node.value}>"
