"""The structural chunker: properties on generated Markdown, and exact cases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_lib.core.documents import NormalizedPage
from rag_lib.core.errors import ChunkingError
from rag_lib.corpus.structural_chunking import anchor_slug, chunk_page, parse_blocks, plain_heading

WORDS = st.sampled_from(
    ["secret", "wrangler", "binding", "R2", "环境变量", "`vars`", "deploy", "local", "the", "a", ".dev.vars", "#tag"]
)


def sentence(min_words: int = 1, max_words: int = 40) -> st.SearchStrategy[str]:
    return st.lists(WORDS, min_size=min_words, max_size=max_words).map(" ".join)


@st.composite
def block(draw: st.DrawFn) -> tuple[str, str]:
    """One Markdown block as (kind, text)."""
    kind = draw(st.sampled_from(["heading", "paragraph", "list", "table", "code", "details", "quote"]))
    if kind == "heading":
        return kind, "#" * draw(st.integers(2, 4)) + " " + draw(sentence(1, 5))
    if kind == "paragraph":
        lines = draw(st.lists(sentence(1, 60), min_size=1, max_size=4))
        return kind, "\n".join(line.lstrip("#>|-*+0123456789. ") or "text" for line in lines)
    if kind == "list":
        items = draw(st.lists(sentence(1, 30), min_size=1, max_size=3))
        return kind, "\n".join(f"- {item}" for item in items)
    if kind == "table":
        rows = draw(st.lists(st.tuples(sentence(1, 6), sentence(1, 40)), min_size=1, max_size=30))
        body = "\n".join(f"| {a} | {b} |" for a, b in rows)
        return kind, f"| Name | Value |\n| --- | --- |\n{body}"
    if kind == "code":
        # Code may hold lines that look like headings, lists or blank lines: none may split it.
        lines = draw(st.lists(st.sampled_from(["# not a heading", "", "- item", "key = 1", "| x |"]), max_size=80))
        return kind, "```toml\n" + "\n".join(lines) + "\n```"
    if kind == "details":
        return kind, "<details>\n<summary>More</summary>\n\n" + draw(sentence(1, 50)) + "\n\n</details>"
    return kind, "> **Note:** " + draw(sentence(1, 30))


@st.composite
def page(draw: st.DrawFn) -> tuple[NormalizedPage, list[tuple[str, int, int]]]:
    """A normalized page and the (kind, start, end) span of every generated block."""
    blocks = draw(st.lists(block(), min_size=1, max_size=25))
    parts: list[str] = []
    spans: list[tuple[str, int, int]] = []
    pos = 0
    for kind, text in blocks:
        spans.append((kind, pos, pos + len(text)))
        parts.append(text)
        pos += len(text) + 2
    markdown = "\n\n".join(parts) + "\n"
    return NormalizedPage(slug="t/page", path="p.mdx", title="T", url="https://x/t/", markdown=markdown), spans


MAX = 600  # small, so that generated pages are cut into several chunks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page())
def test_chunks_partition_the_page(generated: tuple[NormalizedPage, list[tuple[str, int, int]]]) -> None:
    doc, _ = generated
    chunks = chunk_page(doc, max_chars=MAX)
    cursor = 0
    for chunk in chunks:
        assert chunk.text == doc.markdown[chunk.start : chunk.end]
        assert doc.markdown[cursor : chunk.start].strip() == "", "text between chunks was lost"
        assert chunk.start >= cursor, "chunks overlap"
        cursor = chunk.end
    assert doc.markdown[cursor:].strip() == ""
    # Nothing lost, nothing duplicated: the chunks' text is the page's text, minus whitespace.
    assert "\n".join(c.text for c in chunks).split() == doc.markdown.split()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page())
def test_no_chunk_crosses_a_heading_and_tables_code_stay_whole(
    generated: tuple[NormalizedPage, list[tuple[str, int, int]]],
) -> None:
    doc, spans = generated
    chunks = chunk_page(doc, max_chars=MAX)
    for kind, start, end in spans:
        holders = [c for c in chunks if c.start <= start and end <= c.end]
        if kind in {"table", "code", "details"}:
            assert len(holders) == 1, f"{kind} block was split"
        if kind == "heading":
            assert len(holders) == 1 and holders[0].start == start, "a heading must open its chunk"
    for chunk in chunks:
        inner = [s for s in spans if s[0] == "heading" and chunk.start < s[1] < chunk.end]
        assert not inner, "chunk crosses a heading"
        if len(chunk.text) > MAX:
            body = [k for k in chunk.block_kinds if k != "heading"]
            assert chunk.oversized and len(body) == 1, "only a single unsplittable block may exceed the limit"


@settings(max_examples=60, deadline=None)
@given(page())
def test_ids_are_stable_and_follow_the_text(generated: tuple[NormalizedPage, list[tuple[str, int, int]]]) -> None:
    doc, _ = generated
    first = [c.id for c in chunk_page(doc, max_chars=MAX)]
    assert first == [c.id for c in chunk_page(doc, max_chars=MAX)]
    assert len(set(first)) == len(first)
    changed = NormalizedPage(**{**doc.__dict__, "markdown": doc.markdown.replace("secret", "SECRET")})
    if changed.markdown != doc.markdown:
        after = chunk_page(changed, max_chars=MAX)
        for old, new in zip(chunk_page(doc, max_chars=MAX), after, strict=True):
            assert (old.id == new.id) == (old.text == new.text)


def _doc(markdown: str) -> NormalizedPage:
    return NormalizedPage(slug="workers/configuration/secrets", path="x.mdx", title="Secrets",
                          url="https://developers.cloudflare.com/workers/configuration/secrets/", markdown=markdown)


def test_heading_is_bound_to_its_body_and_paths_follow_levels() -> None:
    md = (
        "Intro text.\n\n## Add secrets to your project\n\n### Via Wrangler\n\nRun `wrangler secret put`.\n\n"
        "```sh\nnpx wrangler secret put KEY\n```\n\n### Via the dashboard\n\n- Go to **Settings**.\n\n## Empty\n\n"
        "## Last\n\nDone.\n"
    )
    chunks = chunk_page(_doc(md), max_chars=MAX)
    assert [c.heading_path for c in chunks] == [
        (),
        ("Add secrets to your project",),
        ("Add secrets to your project", "Via Wrangler"),
        ("Add secrets to your project", "Via the dashboard"),
        ("Empty",),
        ("Last",),
    ]
    assert [c.embeddable for c in chunks] == [True, False, True, True, False, True]
    via_wrangler = chunks[2]
    assert via_wrangler.text.startswith("### Via Wrangler") and via_wrangler.text.endswith("```")
    assert via_wrangler.block_kinds == ("heading", "paragraph", "code")
    assert via_wrangler.url.endswith("/secrets/#via-wrangler")
    assert via_wrangler.embed_input.startswith("Secrets\nAdd secrets to your project > Via Wrangler\n\n### Via")
    assert via_wrangler.id.startswith("workers-configuration-secrets-002-")


def test_oversized_table_is_kept_whole_and_flagged() -> None:
    table = "| a | b |\n| --- | --- |\n" + "\n".join(f"| row {i} | value {i} |" for i in range(300))
    chunks = chunk_page(_doc(f"## Matrix\n\nBefore.\n\n{table}\n\nAfter.\n"), max_chars=500)
    big = [c for c in chunks if c.oversized]
    assert len(big) == 1 and big[0].text == table and big[0].block_kinds == ("table",)
    assert [c.block_kinds for c in chunks] == [("heading", "paragraph"), ("table",), ("paragraph",)]


def test_list_item_keeps_its_indented_code() -> None:
    md = "1. Create the file:\n\n   ```toml\n   [vars]\n\n   # comment\n   ```\n\n2. Deploy.\n"
    kinds = [(b.kind, md[b.start : b.end].splitlines()[0]) for b in parse_blocks(md)]
    assert kinds == [("list_item", "1. Create the file:"), ("list_item", "2. Deploy.")]


@pytest.mark.parametrize(
    "markdown, message",
    [("## A\n\n```js\nconst a = 1;\n", "never closed"), ("<details>\n<summary>x</summary>\n\ntext\n", "</details>")],
)
def test_unclosed_structures_raise_a_clear_error(markdown: str, message: str) -> None:
    with pytest.raises(ChunkingError, match=message) as info:
        chunk_page(_doc(markdown), max_chars=MAX)
    assert "workers/configuration/secrets" in str(info.value)


def test_anchor_slug_matches_the_docs_site() -> None:
    assert anchor_slug("Add secrets with `wrangler secret put`") == "add-secrets-with-wrangler-secret-put"
    assert anchor_slug("Compare secrets and environment variables") == "compare-secrets-and-environment-variables"
    assert anchor_slug("[Local development](/x/) with .dev.vars") == "local-development-with-devvars"
    assert plain_heading("Create a `_routes.json` file") == "Create a _routes.json file"
    assert plain_heading("An _emphasised_ **word**") == "An emphasised word"


def test_the_chunk_limit_has_one_home(monkeypatch) -> None:
    # config.yaml's chunking.max_chars reaches the corpus build and the structural chunker; no literal.
    from rag_lib.corpus import structural_chunking as chunking
    from rag_lib.corpus.chunkers import StructuralChunker

    monkeypatch.setattr("rag_lib.core.config.settings", lambda: {"chunking": {"max_chars": 1234}})
    assert chunking.max_chars_setting() == 1234 and StructuralChunker().max_chars == 1234
