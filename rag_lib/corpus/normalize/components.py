"""Component handlers: one function per MDX component, registered by name in :data:`COMPONENT_HANDLERS`.

A component the docs use and no handler names is an *unknown component*: its text is kept and a
warning is recorded (``00_corpus`` requires there be none)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from rag_lib.core.errors import NormalizationError
from rag_lib.corpus.normalize.mdx_expressions import JsSyntaxError, evaluate, parse_container
from rag_lib.corpus.normalize.tokens import MAX_RENDER_DEPTH, PARAM_SUB_RE, PARTIALS_PREFIX, TokenNode, indent_block

if TYPE_CHECKING:
    from rag_lib.corpus.snapshot import Snapshot


class PageRenderer(Protocol):
    """What a handler uses of the page renderer (:class:`rag_lib.corpus.normalize.render.MdxNormalizer`), stated
    here so the handlers do not import the renderer that imports them."""

    snapshot: Snapshot
    page: str
    product: str

    def warn(self, message: str) -> None: ...

    def removed(self, kind: str, detail: str, chars: int) -> None: ...

    def render_file(self, path: str, params: dict[str, str] | None = None, depth: int = 0) -> tuple[str, str]: ...

    def render_children(self, node: TokenNode, params: dict[str, str], depth: int) -> str: ...

    def inner(self, node: TokenNode, params: dict[str, str], depth: int) -> str: ...


# --------------------------------------------------------------------------------------------
# Component handlers: one function per component, registered by name
# --------------------------------------------------------------------------------------------

Handler = Callable[["PageRenderer", TokenNode, dict[str, str], int], str]
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
def _unwrap(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    return indent_block(node.tag.indent, n.inner(node, params, depth))


@handles("TabItem")
def _tab_item(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    # a bold label, not a heading: headings drive chunking
    label = node.tag.attrs.get("label", "")
    return indent_block(node.tag.indent, f"{node.tag.indent}**{label}**\n\n{n.inner(node, params, depth)}")


@handles("Details")
def _details(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    ind = node.tag.indent
    inner = n.inner(node, params, depth)
    header = node.tag.attrs.get("header", "Details")
    return indent_block(ind, f"{ind}<details>\n{ind}<summary>{header}</summary>\n\n{inner}\n\n{ind}</details>")


@handles("Aside")
def _aside(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    ind = node.tag.indent
    label = node.tag.attrs.get("title") or node.tag.attrs.get("type", "note").capitalize()
    label = label.replace("&quot;", '"')
    lines = [
        ln[len(ind) :] if ln.startswith(ind) else ln.lstrip()
        for ln in n.inner(node, params, depth).split("\n")
    ]
    first = lines[0] if lines else ""
    if first and not re.match(r"\s*(`{3}|~{3}|[-*+] |\d+\. |\||#|<|>)", first):
        lines[0] = f"**{label}:** {first}"
    else:
        lines = [f"**{label}:**", "", *lines] if first else [f"**{label}:**"]
    return indent_block(ind, "\n".join(f"{ind}> {ln}".rstrip() if ln.strip() else f"{ind}>" for ln in lines))


@handles("PackageManagers")
def _package_managers(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
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
    return indent_block(ind, f"{ind}```sh\n{ind}{cmd}\n{ind}```")


@handles("AnchorHeading")
def _anchor_heading(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    level = int(node.tag.attrs.get("depth", "2"))
    return indent_block("", f"{'#' * level} {node.tag.attrs.get('title', '')}")


@handles("WranglerCommand", "WranglerNamespace")
def _wrangler_command(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    command = a.get("command") or a.get("namespace", "")
    n.removed(f"component:{node.tag.name}", f"flags of `wrangler {command}` (generated, not in the repo)", 0)
    return indent_block(node.tag.indent, f"`wrangler {command}`")


@handles("Type")
def _type(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    text = node.tag.attrs.get("text", "")
    return f"({text})"


@handles("MetaInfo")
def _meta_info(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    return node.tag.attrs.get("text", "")


@handles("InlineBadge", "Badge")
def _inline_badge(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    return a.get("text") or a.get("preset", "").capitalize()


@handles(
    "DashButton", "DirectoryListing", "PagesBuildPresetsTable", "PagesBuildEnvironment",
    "PagesBuildEnvironmentLanguages", "PagesBuildEnvironmentTools", "CompatibilityFlags",
    "YouTube", "Stream", "R2LocalUploadsDiagram",
)
def _interface_only(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    # links to the dashboard, tables generated at build time from data outside the repo, videos and
    # diagrams: nothing in the source to show as text
    n.removed(f"component:{node.tag.name}", node.tag.raw, len(node.tag.raw))
    return ""


@handles("GlossaryTooltip")
def _glossary_tooltip(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    # inline: the term as the sentence shows it (the tooltip's definition lives in a glossary file)
    return " ".join(n.render_children(node, params, depth).split())


@handles("LinkCard")
def _link_card(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    a = node.tag.attrs
    link = f"[{a.get('title', '')}]({a.get('href', '')})"
    text = f"{node.tag.indent}{link}: {a['description']}" if a.get("description") else link
    return indent_block(node.tag.indent, text)


@handles("LinkButton")
def _link_button(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    text = " ".join(n.render_children(node, params, depth).split())
    return indent_block(node.tag.indent, f"{node.tag.indent}[{text}]({node.tag.attrs.get('href', '')})")


@handles("Code")
def _code(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
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
    return indent_block(ind, f"{ind}```{a.get('lang', '')}\n{body}\n{ind}```")


@handles("APIRequest")
def _api_request(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    """A Cloudflare API call: the site renders it as a curl command from ``path`` and ``method``."""
    a, ind = node.tag.attrs, node.tag.indent
    cmd = (
        f'curl "https://api.cloudflare.com/client/v4{a.get("path", "")}" \\\n'
        f"  --request {a.get('method', 'GET')} \\\n"
        '  --header "Authorization: Bearer <API_TOKEN>"'
    )
    return indent_block(ind, "\n".join(f"{ind}{ln}" for ln in ["```sh", *cmd.split("\n"), "```"]))


@handles("Render")
def _render_partial(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
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
    return indent_block(node.tag.indent, body)


@handles("__param")
def _param(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    name = node.tag.attrs["name"]
    if name not in params:
        n.warn(f"{node.tag.raw} has no value (the <Render> passes no such param); left empty")
        n.removed("param", node.tag.raw, len(node.tag.raw))
        return ""
    return params[name]


@handles("__if")
def _if(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    if params.get(node.tag.attrs["name"]) == node.tag.attrs["value"]:
        return n.render_children(node, params, depth)
    n.removed("jsx-branch", node.tag.raw, len(node.tag.raw))
    return ""


@handles("__switch")
def _switch(n: PageRenderer, node: TokenNode, params: dict[str, str], depth: int) -> str:
    cases: dict[str, str] = json.loads(node.tag.attrs["cases"])
    value = params.get(node.tag.attrs["name"])
    if value not in cases:
        raise NormalizationError(
            f"Page {n.page}: JSX switch on props.{node.tag.attrs['name']}={value!r} has no matching case "
            f"(cases: {sorted(cases)}). Pass one of them in the <Render params>."
        )
    n.removed("jsx-branch", f"switch cases other than {value!r}", len(node.tag.raw) - len(cases[value]))
    html = PARAM_SUB_RE.sub(lambda m: params.get(m.group(1), ""), cases[value])
    return indent_block("", _html_list_to_markdown(html))


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
