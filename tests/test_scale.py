"""Corpus-size and approximate-search helpers on hand-made data with exact answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_lib.core.config import RESULTS_DIR
from rag_lib.core.documents import Chunk
from rag_lib.experiments import ann, corpus_size
from rag_lib.experiments.ann import gold_at, neighbour_recall
from rag_lib.experiments.corpus_size import distractor_kind, page_orders, restrict, text_key
from rag_lib.results.ann import AnnResult
from rag_lib.results.corpus_size import CorpusSizeResult
from rag_lib.retrieval import Ranking


def test_page_orders_are_nested_seeded_and_start_with_the_base_pages() -> None:
    base, every = ["r2/b", "r2/a"], [f"p{i}" for i in range(20)] + ["r2/a", "r2/b"]
    orders = page_orders(base, every, [0, 1])
    assert all(order[:2] == ["r2/a", "r2/b"] and sorted(order) == sorted(every) for order in orders.values())
    assert orders[0] != orders[1]
    assert page_orders(base, every, [0])[0] == orders[0]  # same seed, same order


def test_restricting_a_ranking_equals_exact_search_over_the_smaller_corpus() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(30, 8))
    ids = [f"c{i}" for i in range(30)]
    query = rng.normal(size=8)
    full = Ranking.from_scores(ids, vectors @ query)
    keep = [i for i in range(30) if i % 3]
    small = Ranking.from_scores([ids[i] for i in keep], vectors[keep] @ query)
    assert restrict(full, {ids[i] for i in keep}).ids == small.ids


def _chunk(page: str, text_hash: str) -> Chunk:
    return Chunk(id=f"{page.replace('/', '-')}-000-{text_hash}", page=page, ordinal=0, title="t", heading_path=(),
                 text="x", start=0, end=1, url="u", embeddable=True, oversized=False)


def test_distractor_kinds_follow_their_order() -> None:
    gold_pages = {"pages/functions/bindings"}
    copies = {"aaaaaaaa": {"workers/a", "pages/b"}, "bbbbbbbb": {"pages/c"}}
    assert distractor_kind(_chunk("pages/functions/bindings", "aaaaaaaa"), gold_pages, copies) == "same page as gold"
    assert distractor_kind(_chunk("workers/a", "aaaaaaaa"), gold_pages, copies) == "copy on another page"
    assert distractor_kind(_chunk("pages/c", "bbbbbbbb"), gold_pages, copies) == "same product, other page"
    assert distractor_kind(_chunk("d1/x", "cccccccc"), gold_pages, copies) == "other product"
    assert text_key(_chunk("d1/x", "cccccccc")) == "cccccccc"


def test_neighbour_recall_and_gold_count_only_what_the_index_returned() -> None:
    exact = Ranking(tuple(f"c{i}" for i in range(12)), tuple(float(-i) for i in range(12)))
    # The index returned 5 rows (c0, c2, c3, c4, c11); c1 and the rest follow unmatched, in chunk order.
    approx = Ranking(("c0", "c2", "c3", "c4", "c11", "c1", "c5", "c6", "c7", "c8", "c9", "c10"),
                     (1.0, 0.9, 0.8, 0.7, 0.6, *[float("-inf")] * 7), n_matched=5)
    assert neighbour_recall(approx, exact, k=10) == 0.4  # c0, c2, c3, c4 of the exact Top-10
    pieces = [frozenset({"c1"}), frozenset({"c4"})]
    assert gold_at(pieces, exact, "hit@5") == 1.0 and gold_at(pieces, exact, "coverage@10") == 1.0
    assert gold_at(pieces, approx, "coverage@10") == 0.5  # c1 sits in the unmatched tail: not found
    assert gold_at([frozenset({"c1"})], approx, "hit@5") == 0.0


# -- the committed results of notebooks 12 and 13 (not re-run by `make test`: they need the wide batch embedded)
CORPUS_SIZE = RESULTS_DIR / "12_corpus_size" / "results.json"
ANN = RESULTS_DIR / "13_ann" / "results.json"


@pytest.mark.skipif(not CORPUS_SIZE.is_file(), reason="run `python -m rag_lib.runner.reproduce 12_corpus_size` first")
def test_corpus_size_results_start_at_the_baseline_and_match_their_findings() -> None:
    stored = json.loads(CORPUS_SIZE.read_text(encoding="utf-8"))
    assert corpus_size.findings(CorpusSizeResult.from_json(stored)) == stored["findings"]  # generated from these
    # The smallest corpus is the labelled batch's pages: the bake-off's dense baseline, computed again.
    bakeoff = json.loads((RESULTS_DIR / "01_embedding_bakeoff" / "results.json").read_text(encoding="utf-8"))
    smallest = str(stored["sizes"][0])
    for lang in stored["languages"]:
        base = next(b for b in bakeoff["summary_rows"] if b["language"] == lang
                    and b["configuration"] == f"dense:{stored['provenance']['embedder']['model']}")
        assert stored["by_size"][lang][smallest]["hit@5"] == base["hit@5"]
        assert stored["by_size"][lang][smallest]["coverage@10"] == base["coverage@10"]
    for row in stored["change_rows"]:
        assert row["ci95"][0] <= row["change"] <= row["ci95"][1]


@pytest.mark.skipif(not ANN.is_file(), reason="run `python -m rag_lib.runner.reproduce 13_ann` first")
def test_ann_results_match_their_findings_and_exact_search_is_the_baseline() -> None:
    stored = json.loads(ANN.read_text(encoding="utf-8"))
    assert ann.findings(AnnResult.from_json(stored)) == stored["findings"]
    for row in stored["rows"]:
        assert row["lowest build"] <= row["recall@10 of exact"] <= row["highest build"] <= 1.0
        if row["lowest build"] == 1.0:  # every build returned the exact Top-10, ordered by the same cosine
            same = [c for c in stored["comparison_rows"]
                    if all(c[k] == row[k] for k in ("batch", "setting", "language"))]
            assert [c["hnsw − exact"] for c in same] == [0.0, 0.0]
    for row in stored["comparison_rows"]:
        assert row["ci95"][0] <= row["hnsw − exact"] <= row["ci95"][1]
