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

Everything dropped is recorded as a :class:`~rag_lib.core.documents.Removal`; anything the
normaliser does not understand becomes a warning and keeps its inner text.
"""

from __future__ import annotations

import warnings
from typing import Any

from rag_lib.core.documents import NormalizedPage
from rag_lib.core.errors import NormalizationError
from rag_lib.core.injection import instruction_spans
from rag_lib.corpus.normalize.components import COMPONENT_HANDLERS
from rag_lib.corpus.normalize.render import MdxNormalizer
from rag_lib.corpus.normalize.sections import (
    apply_section_rules,
    clamp_indentation,
    html_links,
    load_section_rules,
    map_outside_code,
    tidy,
)
from rag_lib.corpus.normalize.tokens import DOCS_PREFIX
from rag_lib.corpus.snapshot import Snapshot, SourceFile, load_snapshot

__all__ = ["COMPONENT_HANDLERS", "MdxNormalizer", "apply_section_rules", "load_section_rules", "normalize_page",
           "normalize_snapshot", "page_slug", "tidy"]


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
    markdown = tidy(clamp_indentation(map_outside_code(body, html_links)))
    removals = list(norm.removals)
    if slug in rules:
        markdown, dropped = apply_section_rules(markdown, slug, rules[slug])
        removals.extend(dropped)
        markdown = tidy(markdown)
    if not title:
        norm.warn("front matter has no title; the page title is empty")
    if not markdown.strip():
        norm.warn("page is empty after normalisation")
    for span in instruction_spans(markdown):  # data, never instructions: recorded, never support
        norm.warn(span.warning())
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
