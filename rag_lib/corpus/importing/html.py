"""HTML → the Markdown the chunker reads: headings, paragraphs, lists, code blocks and pipe tables.

Only the page's main content is kept (``<main>``, ``[role=main]``, Sphinx's ``div.body``, ``<article>``, else
``<body>``); scripts, styles, navigation, headers, footers and Sphinx's sidebars and permalink marks are
dropped. What cannot become Markdown faithfully is counted for the import's warnings: a table with merged
cells is flattened cell by cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bs4 import BeautifulSoup, NavigableString, Tag

_MAIN = ("main", "[role=main]", "div.body", "article", "div.document", "body")
_DROP = ("script", "style", "noscript", "nav", "header", "footer", "form", "a.headerlink", "div.sphinxsidebar",
         "div.related", "div.footer", "div.navigation", "span.linenos")
_BLOCKS = {"p", "div", "section", "pre", "ul", "ol", "dl", "table", "blockquote", "h1", "h2", "h3", "h4", "h5",
           "h6", "hr", "figure", "details", "aside"}


@dataclass
class HtmlPage:
    title: str
    markdown: str
    merged_tables: int = 0
    tables: int = 0
    notes: list[str] = field(default_factory=list)


def _inline(node: Tag | NavigableString) -> str:
    if isinstance(node, NavigableString):
        return str(node)
    if node.name == "br":
        return "\n"
    if node.name in ("code", "kbd", "samp", "tt") and node.find(_BLOCKS) is None:
        text = node.get_text()
        return f"`{text}`" if text.strip() and "`" not in text else text
    if node.name == "img":
        return str(node.get("alt") or "")
    return "".join(_inline(child) for child in node.children)


def _text(node: Tag) -> str:
    return re.sub(r"[ \t\r\f\v]*\n[ \t\r\f\v]*", "\n", re.sub(r"[ \t\r\f\v]+", " ", _inline(node))).strip()


class _Converter:
    def __init__(self) -> None:
        self.tables = 0
        self.merged = 0
        self.h1_seen = False

    def blocks(self, node: Tag, depth: int = 0) -> list[str]:
        out: list[str] = []
        inline: list[str] = []

        def flush() -> None:
            text = re.sub(r"\s+", " ", "".join(inline)).strip()
            if text:
                out.append(text)
            inline.clear()

        for child in node.children:
            if isinstance(child, NavigableString) or child.name not in _BLOCKS | {"li", "dt", "dd", "summary"}:
                inline.append(_inline(child))
                continue
            flush()
            out.extend(self.block(child, depth))
        flush()
        return out

    def block(self, node: Tag, depth: int) -> list[str]:
        name = node.name
        if name in ("h1", "h2", "h3", "h4", "h5", "h6"):
            text = re.sub(r"\s+", " ", _text(node))
            if name == "h1" and not self.h1_seen:  # the page title: the chunker's title, not a heading
                self.h1_seen = True
                return []
            return [f"{'#' * int(name[1])} {text}"] if text else []
        if name == "pre":
            code = node.get_text().strip("\n")
            return [f"```\n{code}\n```"] if code.strip() else []
        if name in ("ul", "ol"):
            items = []
            for i, li in enumerate(node.find_all("li", recursive=False), 1):
                marker = f"{i}." if name == "ol" else "-"
                body = self.blocks(li, depth + 1)
                if body:
                    first, *rest = body
                    items.append("  " * depth + f"{marker} {first}")
                    items += ["  " * (depth + 1) + line for line in rest]
            return ["\n".join(items)] if items else []
        if name == "dl":
            out = []
            for item in node.children:
                if isinstance(item, Tag) and item.name == "dt":
                    term = re.sub(r"\s+", " ", _text(item).replace("`", ""))
                    if term:
                        out.append(f"`{term}`")
                elif isinstance(item, Tag) and item.name == "dd":
                    out.extend(self.blocks(item, depth))
            return out
        if name == "table":
            return self.table(node)
        if name == "blockquote":
            return ["\n".join("> " + line for line in "\n\n".join(self.blocks(node, depth)).splitlines())]
        if name == "hr":
            return []
        return self.blocks(node, depth)

    def table(self, node: Tag) -> list[str]:
        self.tables += 1
        rows = [[re.sub(r"\s+", " ", _text(cell)).replace("|", "\\|") for cell in tr.find_all(["th", "td"])]
                for tr in node.find_all("tr")]
        rows = [r for r in rows if any(r)]
        if any(int(cell.get("rowspan", 1) or 1) > 1 or int(cell.get("colspan", 1) or 1) > 1
               for cell in node.find_all(["th", "td"])):
            self.merged += 1
        if not rows:
            return []
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return ["\n".join(lines)]


def html_to_markdown(html: str, fallback_title: str) -> HtmlPage:
    """The main content of one HTML page as Markdown, its title, and what was flattened."""
    soup = BeautifulSoup(html, "lxml")
    title_tag = soup.find("title")
    h1 = soup.find("h1")
    title = re.sub(r"\s+", " ", (h1.get_text() if h1 else title_tag.get_text() if title_tag else "")).strip()
    title = title.rstrip("¶").strip() or fallback_title
    for selector in _DROP:
        for tag in soup.select(selector):
            tag.decompose()
    main = next((found for selector in _MAIN if (found := soup.select_one(selector)) is not None), soup)
    converter = _Converter()
    markdown = "\n\n".join(block for block in converter.blocks(main) if block.strip())
    return HtmlPage(title, markdown, converter.merged, converter.tables)
