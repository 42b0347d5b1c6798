"""Pooled relabelling: the union of every configuration's Top-k per question, with each chunk's sources."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_lib.benchmark import Benchmark, parse_benchmark, resolve
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.labels.audit import Decision, audit, load_decisions, render, unapplied
from rag_lib.labels.pool import Configuration, Pool, Source, build_pool, load_pool, merge
from rag_lib.retrieval import Ranking


def chunk(cid: str, page: str, text: str) -> Chunk:
    return Chunk(id=cid, page=page, ordinal=0, title="T", heading_path=("H",), text=text, start=0, end=len(text),
                 url="u", embeddable=True, oversized=False)


CHUNKS = [chunk(c, f"p/{c}", f"text of {c} with limit 10 GB") for c in ("g1", "g2", "a", "b", "c", "d", "e")]
DOC = {"snapshot": "t", "questions": [
    {"id": "q1", "type": "answerable", "compound": True, "zh": "一？", "en": "One?",
     "phrasings": [{"id": "terms", "zh": "一 terms？", "en": "One, terms?", "source": "test"}],
     "pieces": [{"id": "C1", "what": "first", "locators": [{"page": "p/g1", "heading": [], "phrase": "text of g1"}]},
                {"id": "C2", "what": "second", "locators": [{"page": "p/g2", "heading": [], "phrase": "text of g2"}]}]},
    {"id": "q2", "type": "answerable", "compound": False, "zh": "二？", "en": "Two?",
     "pieces": [{"id": "C1", "what": "only", "locators": [{"page": "p/g2", "heading": [], "phrase": "text of g2"}]}]},
]}


def _bench() -> Benchmark:
    return resolve(parse_benchmark(DOC), CHUNKS)


def ranker(orders: dict[str, tuple[str, ...]]) -> Callable[[str], Ranking]:
    """A toy configuration: a fixed order per question text; an unknown text fails like a replay miss."""
    def rank(text: str) -> Ranking:
        if text not in orders:
            raise KeyError(text)
        ids = orders[text]
        return Ranking(ids, tuple(1.0 - i / 10 for i in range(len(ids))))
    return rank


def _pool() -> Pool:
    bench = _bench()
    dense = Configuration("dense", "b1", ranker({
        "One?": ("a", "g1", "b", "c"), "一？": ("g1", "a", "d", "c"), "One, terms?": ("e", "a", "g1", "c"),
        "一 terms？": ("a", "g1", "b", "c"), "Two?": ("g2", "b", "c", "a"), "二？": ("b", "g2", "c", "a")}))
    # bm25 fails on Q1's phrasing, and is only run on q2 in English: both limits must hold.
    bm25 = Configuration("bm25", "b1", ranker({"Two?": ("d", "g2", "c", "a")}), languages=("en",),
                         question_ids=frozenset({"q2"}))
    return build_pool([dense, bm25], bench.questions(answerable=True), depth=2,
                      not_pooled={"chunker X": "not cached"})


def test_pool_is_the_union_of_each_sources_top_k_with_every_source_recorded() -> None:
    pool = _pool()
    cands = pool.candidates("q1")
    # depth 2: b, c and d are below the cut of every source of q1.
    assert set(cands) == {"a", "g1", "e"}
    assert [(h.source.lang, h.source.phrasing, h.rank) for h in cands["e"]] == [("en", "terms", 1)]
    assert len(cands["a"]) == 4 and cands["a"][0].rank == 1  # four sources, best rank first
    assert set(pool.candidates("q2")) == {"g2", "b", "d"}
    assert [h.source.configuration for h in pool.candidates("q2")["d"]] == ["bm25"]
    assert pool.sizes() == {"q1": 3, "q2": 3}
    assert pool.not_pooled == {"chunker X": "not cached"} and pool.failed == {}


def test_a_failed_ranking_is_counted_never_replaced() -> None:
    bench = _bench()
    flaky = Configuration("llm", "b1", ranker({"One?": ("c", "d")}))
    pool = build_pool([flaky], bench.questions(answerable=True), depth=2)
    assert pool.failed == {"llm|b1": {"KeyError": 5}}  # q1 zh, both phrasings; q2 zh and en
    assert set(pool.candidates("q1")) == {"c", "d"} and pool.candidates("q2") == {}


def test_pool_round_trips_through_its_file_and_merges_batches(tmp_path: Path) -> None:
    pool = _pool()
    path = pool.save(tmp_path / "pool.json")
    again = load_pool(path)
    assert again == pool
    assert load_pool(tmp_path / "missing.json") is None
    other = build_pool([Configuration("dense", "b2", ranker({"One?": ("x", "y")}), languages=("en",))],
                       _bench().questions(answerable=True), depth=2)
    both = merge([pool, other])
    assert set(both.candidates("q1")) == {"a", "g1", "e", "x", "y"}
    assert set(both.configurations) == {"b1", "b2"}
    assert Source.parse("dense|b2|en|original") in both.sources()
    with pytest.raises(BenchmarkError, match="configuration\\|batch"):
        Source.parse("dense|en")


def test_audit_lists_pooled_candidates_with_sources_gold_decided_and_undecided() -> None:
    bench = _bench()
    decisions = {("q1", "*", "a"): Decision("q1", "*", "a", "not_gold", "about something else"),
                 ("q2", "C1", "b"): Decision("q2", "C1", "b", "not_gold", "a pointer only")}
    result = audit(bench, CHUNKS, decisions=decisions, pool=_pool())
    by = {(r["question"], r["chunk"]): r for r in result["pool"]}
    assert by["q1", "g1"]["status"] == "gold" and by["q1", "g1"]["pieces"] == ["C1"]
    assert by["q1", "a"]["status"] == "decided" and by["q1", "a"]["reason"] == "about something else"
    assert by["q1", "e"]["status"] == "undecided" and by["q1", "e"]["sources"] == ["dense b1 en:terms #1"]
    # q2 has one piece, so a decision for C1 covers every piece
    assert by["q2", "b"]["status"] == "decided"
    assert by["q2", "d"]["status"] == "undecided" and by["q2", "d"]["sources"] == ["bm25 b1 en #1"]
    assert result["pool_undecided"] == 2
    text = render(result, bench)
    assert "q1 pool: 3 candidate(s): 1 gold by locators, 1 decided not gold, 1 undecided" in text
    assert "pool  e: 1 source(s): dense b1 en:terms #1 [UNDECIDED]" in text
    assert audit(bench, CHUNKS, decisions=decisions)["pool"] == []  # without a pool, no pool rows


def test_a_not_gold_for_every_piece_decision_is_checked(tmp_path: Path) -> None:
    bench = _bench()
    wrong = {("q1", "*", "g1"): Decision("q1", "*", "g1", "not_gold", "x"),
             ("q1", "*", "zz"): Decision("q1", "*", "p-zz-000-ffffffff", "not_gold", "x")}
    problems = unapplied(bench, wrong, [c.id for c in CHUNKS])
    assert problems == ["q1 * g1: decided not_gold for every piece, but a locator of C1 resolves to it"]
    path = tmp_path / "d.yaml"
    path.write_text("decisions:\n- {question: q1, piece: '*', chunk: a, decision: gold, reason: r}\n")
    with pytest.raises(BenchmarkError, match="gold for piece"):
        load_decisions(path)
    first, second = tmp_path / "v2.yaml", tmp_path / "v3.yaml"
    first.write_text("decisions:\n- {question: q1, piece: C1, chunk: a, decision: not_gold, reason: r}\n")
    second.write_text("decisions:\n- {question: q1, piece: '*', chunk: b, decision: not_gold, reason: r}\n")
    assert set(load_decisions([first, second])) == {("q1", "C1", "a"), ("q1", "*", "b")}
    with pytest.raises(BenchmarkError, match="decided twice"):
        load_decisions([first, first])


def test_every_pooled_configuration_is_scored_under_both_label_versions(tmp_path: Path) -> None:
    from rag_lib.presentation.label_archive import archive_pool, pooled_relabel, pooled_relabel_rows

    pool = _pool()
    before = {"b1": {"q1": [["g1"], ["g2"]], "q2": [["g2"]]}}
    after = {"b1": {"q1": [["g1"], ["g2", "e"]], "q2": [["g2", "d"]]}}  # e and d decided gold
    rows = {(r["configuration"], r["language"]): r for r in pooled_relabel_rows(pool, before, after)}
    # dense en: q1's Top-2 (a, g1) hits C1 under both; q2's (g2, b) hits. e is only in the terms phrasing.
    assert rows["dense", "en"]["hit@5"] == "1.000" and rows["dense", "en"]["n"] == 2
    assert rows["dense", "en"]["coverage@10 before"] == 0.75 and rows["dense", "en"]["coverage@10 change"] == 0.0
    # bm25 ran on q2 (en) only: its Top-2 (d, g2) covers C1 either way; d becomes gold, g2 already was.
    assert rows["bm25", "en"]["n"] == 1 and rows["bm25", "en"]["hit@5"] == "1.000"
    terms = {(r["configuration"], r["language"]): r for r in pooled_relabel_rows(pool, before, after, "terms")}
    # on Q1's terms phrasing the Top-2 is (e, a): no gold before; e, new gold of C2, makes it a hit
    assert terms["dense", "en"]["coverage@10"] == "0.000 → 0.500" and terms["dense", "en"]["hit@5"] == "0.000 → 1.000"
    assert ("bm25", "en") not in terms
    v2, v3 = tmp_path / "labels-v2.json", tmp_path / "labels-v3.json"
    v2.write_text(json.dumps({"gold": before}))
    archive_pool(pool, after, "abc", "test", {"new": 2}, out=v3)
    shown = pooled_relabel(v2, v3)
    assert shown["available"] and shown["decisions"] == {"new": 2}
    assert {"batch": "b1", "configuration": "dense", "language": "en", "n": 2} in [
        {c: r[c] for c in ("batch", "configuration", "language", "n")} for r in shown["rows"]]
    assert "table" not in shown  # rows are stored; 08's report renders them
    missing = pooled_relabel(tmp_path / "none.json", v3)
    assert not missing["available"] and missing["rows"] == [] and "none.json" in missing["why"]


WIDE = "cloudflare-docs-wide-2026-11-30"


@pytest.mark.skipif(not load_pool(), reason="no pool built (python -m rag_lib.labels.pool)")
@pytest.mark.parametrize("batch", [None, WIDE])
def test_every_pooled_candidate_is_decided_and_every_decision_applied(batch: str | None) -> None:
    from rag_lib.benchmark import load_benchmark
    from rag_lib.benchmark.batch_labels import benchmark_for
    from rag_lib.core.config import batch_dir
    from rag_lib.corpus import load_chunks

    if not (batch_dir(batch) / "chunks.jsonl").exists():
        pytest.skip(f"chunks of {batch} not built")
    chunks = load_chunks(batch)
    bench = benchmark_for(batch, chunks).benchmark if batch else load_benchmark(chunks=chunks)
    decisions = load_decisions()
    result = audit(bench, chunks, decisions=decisions, pool=load_pool())
    assert result["pool"], "the pool has no candidate on this batch"
    assert [(r["question"], r["chunk"]) for r in result["pool"] if r["status"] == "undecided"] == []
    assert unapplied(bench, decisions, [c.id for c in chunks]) == []


def test_configurations_of_one_batch_merge_in_order_and_queries_are_embedded_once() -> None:
    import numpy as np

    from rag_lib.labels.pool import _memoise_queries

    bench = _bench()
    one = build_pool([Configuration("dense", "b1", ranker({"One?": ("a",)}))], bench.questions(answerable=True))
    two = build_pool([Configuration("bm25", "b1", ranker({"One?": ("b",)}))], bench.questions(answerable=True))
    assert merge([one, two]).configurations == {"b1": ("dense", "bm25")}

    calls: list[list[str]] = []

    class Model:
        def embed_queries(self, texts: list[str]) -> np.ndarray:
            calls.append(list(texts))
            return np.ones((len(texts), 2), dtype=np.float32) * len(calls)

    class Bench:
        model = Model()

        def embedder(self, name: str | None = None) -> Model:
            return self.model

    wb = Bench()
    _memoise_queries(wb)
    first = wb.embedder().embed_queries(["x", "y"])
    again = wb.embedder("same").embed_queries(["y", "x", "z"])
    assert calls == [["x", "y"], ["z"]]  # x and y are not embedded twice
    assert again.tolist() == [first[1].tolist(), first[0].tolist(), [2.0, 2.0]]
