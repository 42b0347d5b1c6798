"""Chunking strategies (rag_lib.corpus.chunkers) and gold spans (rag_lib.evaluation.gold_spans): exact answers on
hand-made pages, properties on random ones, and the span rule against the benchmark's own labels."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_lib.core.config import RESULTS_DIR
from rag_lib.core.documents import Chunk, NormalizedPage
from rag_lib.core.errors import WorkbookError
from rag_lib.corpus import load_chunks, load_pages
from rag_lib.corpus.chunkers import FixedTokenChunker, SemanticChunker, TokenCounter, get_chunker
from rag_lib.corpus.structural_chunking import chunk_pages
from rag_lib.evaluation.gold_spans import Span, covering, phrase_offsets, piece_spans, resolve_by_span
from rag_lib.experiments.chunking import findings
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.chunking import ChunkingResult


class FakeEmbedder:
    """Tokens: one per 3 characters of a word (+3 special); vectors: topic "alpha" vs anything else."""

    class spec:  # mirrors EmbedderSpec's attribute access
        max_tokens = 512

    def token_lengths(self, texts: list[str], kind: str) -> list[int]:
        return [3 + sum(-(-len(w) // 3) for w in t.split()) for t in texts]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "alpha" in t else [0.0, 1.0] for t in texts], dtype=np.float32)


def page(markdown: str, slug: str = "p") -> NormalizedPage:
    return NormalizedPage(slug=slug, path=f"{slug}.mdx", title="T", url=f"https://x/{slug}/", markdown=markdown)


COUNTER = TokenCounter(FakeEmbedder())  # type: ignore[arg-type]


# -- fixed-size --------------------------------------------------------------------------------------
def test_fixed_windows_exact() -> None:
    # words of 3 characters = 1 token each; an input = 3 special + 1 ("T", the title) + 4 words = 8 tokens
    text = " ".join(f"w{i:02d}" for i in range(10))
    chunks = FixedTokenChunker(COUNTER, max_tokens=8).chunk([page(text)])
    assert [c.text for c in chunks] == ["w00 w01 w02 w03", "w04 w05 w06 w07", "w08 w09"]
    assert all(COUNTER.input(c.embed_input) <= 8 for c in chunks)
    overlapping = FixedTokenChunker(COUNTER, max_tokens=8, overlap=1).chunk([page(text)])
    assert [c.text for c in overlapping] == ["w00 w01 w02 w03", "w03 w04 w05 w06", "w06 w07 w08 w09"]


def test_fixed_chunks_carry_the_section_they_start_in() -> None:
    text = "## First\n\naaa bbb ccc\n\n## Second\n\nddd eee fff"
    chunks = FixedTokenChunker(COUNTER, max_tokens=10).chunk([page(text)])
    second = next(c for c in chunks if c.start >= text.index("## Second"))
    assert second.heading_path == ("Second",) and second.url == "https://x/p/#second"
    assert chunks[0].heading_path == ("First",)


words = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(words, st.integers(6, 60), st.integers(0, 20), st.sampled_from([" ", "\n", "  ", "\n\n"]))
def test_fixed_loses_nothing_and_overlaps_as_declared(ws: list[str], size: int, overlap: int, sep: str) -> None:
    overlap = min(overlap, size - 1)
    text = sep.join(ws)
    chunks = FixedTokenChunker(COUNTER, max_tokens=size, overlap=overlap).chunk([page(text)])
    covered = np.zeros(len(text), dtype=bool)
    for c in chunks:
        assert c.text == text[c.start:c.end]
        assert COUNTER.input(c.embed_input) <= size or len(c.text.split()) == 1  # one over-long word may exceed it
        covered[c.start:c.end] = True
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))  # every word is in some chunk
    longest = max(COUNTER.text(w) for w in ws)
    for a, b in itertools.pairwise(chunks):
        shared = COUNTER.text(text[b.start:a.end]) if b.start < a.end else 0
        a_words = list(re.finditer(r"\S+", a.text))
        if overlap == 0 or len(a_words) == 1:
            assert b.start >= a.end  # nothing repeated
        else:  # the declared overlap, or as much as a window allows while still moving forward
            assert shared >= overlap or b.start == a.start + a_words[1].start()
            assert shared < overlap + longest


def test_bad_fixed_settings_are_named() -> None:
    with pytest.raises(WorkbookError, match="overlap < max_tokens"):
        FixedTokenChunker(COUNTER, max_tokens=10, overlap=10)


# -- semantic ----------------------------------------------------------------------------------------
def test_semantic_cuts_where_the_topic_changes() -> None:
    text = "alpha one. alpha two. alpha three. beta one. beta two. alpha again."
    chunker = SemanticChunker(FakeEmbedder(), COUNTER, percentile=50, min_tokens=1, max_tokens=100)  # type: ignore[arg-type]
    chunks = chunker.chunk([page(text)])
    assert [c.text for c in chunks] == ["alpha one. alpha two. alpha three.", "beta one. beta two.", "alpha again."]
    # an input of 9 tokens holds one sentence ("alpha one." = 4 tokens + 3 special + 1 title), not two
    capped = SemanticChunker(FakeEmbedder(), COUNTER, percentile=50, min_tokens=1, max_tokens=9)  # type: ignore[arg-type]
    assert [c.text for c in capped.chunk([page(text)])] == [s.strip() + "." for s in text.split(".") if s.strip()]
    held = SemanticChunker(FakeEmbedder(), COUNTER, percentile=50, min_tokens=100, max_tokens=200)  # type: ignore[arg-type]
    assert [c.text for c in held.chunk([page(text)])] == [text]  # below min_tokens: no cut


# -- registry ----------------------------------------------------------------------------------------
def test_unknown_strategy_lists_the_declared_ones() -> None:
    with pytest.raises(WorkbookError, match=r"declared in config\.yaml: structural, fixed-512"):
        get_chunker("fixed-1024")


def test_every_declared_strategy_has_a_known_kind_and_an_unknown_kind_names_its_strategy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.corpus import chunkers

    assert {d["kind"] for d in chunkers.strategies().values()} <= set(chunkers.CHUNKER_KINDS)
    assert all(callable(chunkers.CHUNKER_KINDS.load(kind)) for kind in chunkers.CHUNKER_KINDS)
    monkeypatch.setattr(chunkers, "strategies", lambda: {"odd": {"kind": "recursive", "description": "x"}})
    with pytest.raises(WorkbookError, match=r"'odd' has kind 'recursive'; known kinds: structural, fixed, semantic"):
        get_chunker("odd")


# -- gold spans --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("phrase", "text", "expected"), [
    ("attach encrypted text", "you attach encrypted text here", (4, 25)),
    ("are a type of binding that allow you to attach encrypted",
     "[Secrets](/s/) are a type of binding that allow you to [attach encrypted](/c/#s) text", (15, 72)),
    ("use wrangler secret put", "use `wrangler secret put` now", (0, 24)),
    ("absent phrase", "nothing here", None),
])
def test_phrase_offsets_exact(phrase: str, text: str, expected: tuple[int, int] | None) -> None:
    assert phrase_offsets(phrase, text) == expected


def _chunk(cid: str, start: int, end: int) -> Chunk:
    return Chunk(id=cid, page="p", ordinal=0, title="T", heading_path=(), text="x" * (end - start), start=start,
                 end=end, url="u", embeddable=True, oversized=False)


def test_covering_rule_whole_span_else_largest_part() -> None:
    a, b, c = _chunk("a", 0, 100), _chunk("b", 80, 200), _chunk("c", 200, 300)
    assert covering(Span("p", 85, 95), [a, b, c]) == {"a", "b"}  # inside both overlapping chunks
    assert covering(Span("p", 190, 230), [a, b, c]) == {"c"}  # cut: 10 chars in b, 30 in c
    assert covering(Span("p", 180, 220), [b, c]) == {"b", "c"}  # an exact half each


def test_spans_reproduce_the_benchmark_labels_on_the_structural_chunks() -> None:
    wb = Workbench()
    spans = piece_spans(wb.benchmark, wb.chunks)
    again = resolve_by_span(wb.benchmark, spans, wb.chunks)
    assert [q.resolved for q in again.items] == [q.resolved for q in wb.benchmark.items]


def test_pages_rebuild_the_committed_chunks() -> None:
    assert chunk_pages(load_pages(), 2400) == load_chunks()


# -- results.json of notebook 11 (the committed results) ---------------------------------------------
CHUNKING = RESULTS_DIR / "11_chunking" / "results.json"
BAKEOFF = RESULTS_DIR / "01_embedding_bakeoff" / "results.json"


@pytest.mark.skipif(not CHUNKING.is_file(), reason="run `python -m rag_lib.runner.reproduce 11_chunking` first")
def test_chunking_results_agree_with_the_bakeoff_and_their_findings() -> None:
    stored = json.loads(CHUNKING.read_text(encoding="utf-8"))
    assert stored["gold_span_differences"] == 0
    assert findings(ChunkingResult.from_json(stored)) == stored["findings"]  # generated from these numbers
    # structural + dense + default embedder is the bake-off's baseline: the same figures, computed twice
    bakeoff = json.loads(BAKEOFF.read_text(encoding="utf-8"))["summary_rows"]
    for row in (r for r in stored["metric_rows"] if r["strategy"] == "structural"):
        base = next(b for b in bakeoff if b["language"] == row["language"]
                    and b["configuration"] == f"dense:{stored['provenance']['embedder']['model']}")
        assert (row["hit@5"], row["coverage@10"], row["mrr"]) == (base["hit@5"], base["coverage@10"], base["mrr"])
    for c in stored["comparison_rows"]:
        assert c["structural − strategy"] == pytest.approx(c["structural"] - c["strategy_value"], abs=1e-3)
        assert c["ci95"][0] <= c["structural − strategy"] <= c["ci95"][1]


def test_equal_token_evidence_keeps_the_leading_chunks_that_fit_and_at_least_one() -> None:
    from types import SimpleNamespace

    from rag_lib.experiments.chunking import fitting
    from rag_lib.retrieval import Ranking

    by_id = {"a": SimpleNamespace(text="x" * 400), "b": SimpleNamespace(text="x" * 800), "c": SimpleNamespace(text="x")}
    wb = SimpleNamespace(by_id=by_id)  # fitting() reads only the chunks' texts (400 chars ≈ 100 tokens)
    ranking = Ranking(("a", "b", "c"), (0.9, 0.8, 0.7))
    assert fitting(wb, ranking, 100) == 1 and fitting(wb, ranking, 299) == 1 and fitting(wb, ranking, 301) == 3
    assert fitting(wb, ranking, 10) == 1  # the first chunk is always sent
