"""Retrieval: Ranking, tokenizer, dense, BM25, RRF (checked against ranx), MMR and dedup.

Hand-made chunks and vectors only; no real model is loaded.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from doubles import FixedEmbedder, Matrix  # tests/doubles.py (pytest puts tests/ on the path)

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import IndexMismatchError
from rag_lib.retrieval import Ranking, Retriever, available_retrievers, get_retriever
from rag_lib.retrieval.bm25 import BM25Retriever
from rag_lib.retrieval.dense import DenseRetriever, cosine_scores
from rag_lib.retrieval.diversity import demote_near_duplicates, jaccard, mmr, shingles
from rag_lib.retrieval.hybrid import HybridRetriever, rrf
from rag_lib.retrieval.tokenize import Tokenizer


def chunk(cid: str, text: str, *, title: str = "Doc", heading: tuple[str, ...] = (), embeddable: bool = True) -> Chunk:
    return Chunk(
        id=cid, page="p", ordinal=0, title=title, heading_path=heading, text=text, start=0, end=len(text),
        url="https://example.com/p", embeddable=embeddable, oversized=False,
    )




# ---------------------------------------------------------------- Ranking


def test_ranking_rank_of_top_and_ties_by_chunk_order() -> None:
    r = Ranking.from_scores(["a", "b", "c", "d"], np.array([0.1, 0.5, 0.5, 0.9]), source="t")
    assert r.ids == ("d", "b", "c", "a")  # b before c: tie keeps chunk order
    assert [r.rank_of(c) for c in "abcd"] == [4, 2, 3, 1]
    assert r.top(2) == [("d", 0.9), ("b", 0.5)]
    assert r.top(0) == [] and len(r.top(99)) == 4
    assert "a" in r and "z" not in r
    with pytest.raises(KeyError, match="'z' is not in this t ranking"):
        r.rank_of("z")


def test_ranking_rejects_repeated_ids_and_misaligned_scores() -> None:
    with pytest.raises(ValueError, match="unique"):
        Ranking(("a", "a"), (1.0, 0.5))
    with pytest.raises(ValueError, match="one score per id"):
        Ranking(("a", "b"), (1.0,))


# ---------------------------------------------------------------- tokenizer


def test_chinese_is_segmented_into_words() -> None:
    tokens = Tokenizer()("环境变量和secret怎么设置")
    assert {"环境变量", "环境", "变量", "secret", "怎么", "设置"} <= set(tokens)
    assert tokens == Tokenizer()("环境变量和secret怎么设置")  # deterministic


@pytest.mark.parametrize(
    ("text", "whole", "parts"),
    [
        ("edit wrangler.toml.", "wrangler.toml", ["wrangler", "toml"]),
        ("put it in .dev.vars", ".dev.vars", ["dev", "vars"]),
        ("error ERR_4021 here", "err_4021", ["err", "4021"]),
        ("wrangler deploy --secrets-file x", "--secrets-file", ["secrets", "file"]),
        ("read context.env now", "context.env", ["context", "env"]),
        ("use env.MY_BUCKET.get()", "env.my_bucket.get", ["env", "my", "bucket", "get"]),
    ],
)
def test_identifiers_stay_whole_and_emit_parts(text: str, whole: str, parts: list[str]) -> None:
    tokens = Tokenizer()(text)
    i = tokens.index(whole)
    assert tokens[i + 1 : i + 1 + len(parts)] == parts
    assert whole in Tokenizer(identifier_parts=False)(text)
    assert not set(parts) & set(Tokenizer(identifier_parts=False, stopwords=None)(whole))


def test_lowercase_stopwords_and_punctuation() -> None:
    assert Tokenizer()("The Binding, of R2！") == ["binding", "r2"]
    assert Tokenizer(stopwords=None)("The Binding") == ["the", "binding"]
    assert Tokenizer()("，。！？") == []


# ---------------------------------------------------------------- dense


def test_dense_ranks_every_chunk_by_cosine_with_chunk_order_ties() -> None:
    ids = ["c0", "c1", "c2", "c3"]
    vectors = np.array([[1, 0], [0, 1], [1, 1], [0, 1]], dtype=np.float32)
    retriever = DenseRetriever(Matrix(ids, vectors), FixedEmbedder({"q": [0.0, 2.0]}))
    ranking = retriever.rank("q")
    assert ranking.ids == ("c1", "c3", "c2", "c0")  # c1 and c3 tie at 1.0: chunk order
    np.testing.assert_allclose(ranking.scores, [1.0, 1.0, np.sqrt(0.5), 0.0], atol=1e-6)
    assert ranking.rank_of("c0") == 4 and ranking.source == "dense"
    assert isinstance(retriever, Retriever)


def test_dense_rejects_a_query_from_another_model() -> None:
    retriever = DenseRetriever(Matrix(["a"], np.ones((1, 2))), FixedEmbedder({"q": [1.0, 0.0, 0.0]}))
    with pytest.raises(IndexMismatchError, match="3 dimensions but the chunk vectors have 2"):
        retriever.rank("q")


def test_dense_calls_the_matrix_model_check() -> None:
    class Checked(Matrix):
        def check_embedder(self, embedder: object) -> None:
            raise IndexMismatchError("made by another model")

    with pytest.raises(IndexMismatchError):
        DenseRetriever(Checked(["a"], np.ones((1, 2))), FixedEmbedder({}))


# ---------------------------------------------------------------- BM25

CHUNKS = [
    chunk("kv", "KV namespaces store keys and values.", title="KV"),
    chunk("heading", "## Secrets", embeddable=False),
    chunk("zh", "在 Cloudflare Workers 中，环境变量和 secret 可以在控制台设置。", title="环境变量"),
    chunk("toml", "Add vars to wrangler.toml and local secrets to .dev.vars.", title="Config"),
    chunk("r2", "R2 buckets are bound with env.MY_BUCKET.", title="R2"),
]


def test_bm25_full_ranking_over_embeddable_chunks_only() -> None:
    ranking = BM25Retriever(CHUNKS).rank("wrangler")
    assert set(ranking.ids) == {"kv", "zh", "toml", "r2"}  # heading-only chunk left out
    assert ranking.ids[0] == "toml"  # "wrangler" matches the part of wrangler.toml
    assert ranking.n_matched == 1
    assert ranking.ids[1:] == ("kv", "zh", "r2")  # zero scores follow in chunk order
    assert ranking.scores[1:] == (0.0, 0.0, 0.0)


def test_bm25_chinese_query_finds_the_chinese_chunk() -> None:
    ranking = BM25Retriever(CHUNKS).rank("环境变量怎么设置？")
    assert ranking.ids[0] == "zh" and ranking.n_matched == 1 and ranking.scores[0] > 0


def test_bm25_exact_identifier_beats_its_parts() -> None:
    retriever = BM25Retriever(
        [chunk("parts", "the dev server reads vars"), chunk("whole", "create a .dev.vars file")]
    )
    ranking = retriever.rank(".dev.vars")
    assert ranking.ids == ("whole", "parts") and ranking.n_matched == 2


def test_bm25_unknown_query_keeps_chunk_order() -> None:
    ranking = BM25Retriever(CHUNKS).rank("xyzzy 量子")
    assert ranking.ids == ("kv", "zh", "toml", "r2") and ranking.n_matched == 0


def test_bm25_scores_match_bm25s_retrieve() -> None:
    retriever = BM25Retriever(CHUNKS)
    query = retriever.tokenizer("secrets wrangler.toml 环境变量")
    docs, scores = retriever.model.retrieve([query], k=len(retriever.ids), show_progress=False)
    expected = {retriever.ids[int(d)]: float(s) for d, s in zip(docs[0], scores[0], strict=True)}
    got = dict(retriever.rank("secrets wrangler.toml 环境变量"))
    assert got == pytest.approx(expected)


# ---------------------------------------------------------------- hybrid (RRF)


def test_rrf_matches_ranx_fuse() -> None:
    import ranx

    dense = Ranking(("a", "b", "c", "d", "e"), (0.9, 0.8, 0.7, 0.6, 0.5), source="dense")
    bm25 = Ranking(("c", "e", "a", "b", "d"), (5.0, 3.0, 0.0, 0.0, 0.0), n_matched=2, source="bm25")
    fused = rrf([dense, bm25], k=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ranx.fuse(
            [ranx.Run({"q": dict(dense)}), ranx.Run({"q": dict(zip(bm25.matched_ids, bm25.scores, strict=False))})],
            method="rrf", params={"k": 60},
        ).to_dict()["q"]
    assert dict(fused) == pytest.approx(expected)
    # c: 1/63 + 1/61; a: 1/61; e: 1/65 + 1/62; b: 1/62; d: 1/64
    assert fused.ids == ("c", "e", "a", "b", "d")
    assert fused.rank_of("c") == 1 and fused.source == "rrf(dense,bm25)"


def test_rrf_ties_keep_first_ranking_order() -> None:
    one = Ranking(("a", "b"), (1.0, 0.5), source="x")
    two = Ranking(("b", "a"), (1.0, 0.5), source="y")
    assert rrf([one, two], k=60).ids == ("a", "b")


def test_hybrid_retriever_and_registry() -> None:
    ids = [c.id for c in CHUNKS if c.embeddable]
    vectors = np.eye(4, dtype=np.float32)
    embedder = FixedEmbedder({"wrangler": [0, 0, 0, 1]})  # dense likes r2, bm25 likes toml
    hybrid = get_retriever("hybrid", chunks=CHUNKS, matrix=Matrix(ids, vectors), embedder=embedder, k=60)
    assert isinstance(hybrid, HybridRetriever)
    ranking = hybrid.rank("wrangler")
    # dense: r2, kv, zh, toml (ties in chunk order); bm25 matched: toml
    # toml: 1/64 + 1/61 > r2: 1/61 > kv: 1/62 > zh: 1/63
    assert ranking.ids == ("toml", "r2", "kv", "zh")
    assert available_retrievers() == ["bm25", "dense", "hybrid"]
    assert isinstance(get_retriever("bm25", chunks=CHUNKS), BM25Retriever)
    with pytest.raises(ValueError, match="unknown retriever 'sparse'"):
        get_retriever("sparse")


# ---------------------------------------------------------------- diversity


def test_mmr_lambda_one_is_relevance_and_candidates_bound_the_reordering() -> None:
    index = Matrix(["a", "b", "c"], np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float64))
    q = np.array([1.0, 0.0])
    ranking = Ranking(("a", "b", "c"), (1.0, 0.8, 0.0), source="dense")
    assert mmr(ranking, index, q, lambda_=1.0).ids == ("a", "b", "c")
    # λ = 0 after a: b redundancy 0.8, c redundancy 0 → c first among the rest
    assert mmr(ranking, index, q, lambda_=0.0).ids == ("a", "c", "b")
    head = mmr(ranking, index, q, lambda_=0.0, candidates=2)  # only a, b re-ordered
    assert head.ids == ("a", "b", "c") and head.scores[2] == 0.0
    with pytest.raises(ValueError, match="lambda_"):
        mmr(ranking, index, q, lambda_=1.5)


def test_mmr_exact_small_case() -> None:
    # a2 is a near copy of a; after picking a, the orthogonal b beats it.
    index = Matrix(["a", "a2", "b"], np.array([[1, 0], [1, -0.001], [0, 1]], dtype=np.float64))
    q = np.array([1.0, 0.5])
    ranking = Ranking(("a", "a2", "b"), (0.89, 0.89, 0.45))
    out = mmr(ranking, index, q, lambda_=0.5)
    assert out.ids == ("a", "b", "a2")
    # a: 0.5·cos(q,a) = 0.5·2/√5; b: 0.5·1/√5 − 0.5·0
    assert out.scores[:2] == pytest.approx((1 / np.sqrt(5), 0.5 / np.sqrt(5)))


def test_demote_near_duplicates_by_cosine_keeps_a_full_ranking() -> None:
    index = Matrix(["a", "b", "c", "d"], np.array([[1, 0], [1, 0.01], [0, 1], [0.01, 1]], dtype=np.float64))
    ranking = Ranking(("a", "b", "c", "d"), (4.0, 3.0, 2.0, 1.0), source="dense")
    out = demote_near_duplicates(ranking, index=index, threshold=0.99)
    assert out.ids == ("a", "c", "b", "d") and out.demoted == ("b", "d")
    assert out.scores == (4.0, 2.0, 3.0, 1.0)
    assert out.rank_of("b") == 3  # a demoted gold chunk still has a rank
    dropped = demote_near_duplicates(ranking, index=index, threshold=0.99, drop=True)
    assert dropped.ids == ("a", "c") and "b" not in dropped
    shallow = demote_near_duplicates(ranking, index=index, threshold=0.99, depth=2)
    assert shallow.ids == ("a", "c", "d", "b")


def test_demote_near_duplicates_by_shingles() -> None:
    texts = {
        "a": "set a secret with wrangler secret put",
        "b": "set a secret with wrangler secret put now",
        "c": "bind an R2 bucket",
    }
    assert jaccard(shingles(texts["a"]), shingles(texts["b"])) == pytest.approx(5 / 6)
    ranking = Ranking(("a", "b", "c"), (3.0, 2.0, 1.0))
    assert demote_near_duplicates(ranking, texts=texts, threshold=0.8).ids == ("a", "c", "b")
    assert demote_near_duplicates(ranking, texts=texts, threshold=0.9).ids == ("a", "b", "c")
    with pytest.raises(ValueError, match="exactly one"):
        demote_near_duplicates(ranking)


# -- exact identifiers (the hybrid-on-identifiers subset) -----------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Why add a _routes.json file, and what does wrangler secret put do?", ["_routes.json", "wrangler secret put"]),
    ("Set compatibility_date in wrangler.toml; read env.MY_BUCKET with --env staging.",
     ["compatibility_date", "wrangler.toml", "env.MY_BUCKET", "--env"]),
    ("Keep .dev.vars and .env apart; serve from r2.dev; call batch() in onRequestGet.",
     [".dev.vars", ".env", "r2.dev", "batch()", "onRequestGet"]),
    ("本地开发时 .dev.vars 和 wrangler login 有什么区别？", [".dev.vars", "wrangler login"]),
    ("Is Workers KV read-only? How large can a D1 database be? Use the Wrangler configuration file.", []),
])
def test_identifiers_are_exact(text: str, expected: list[str]) -> None:
    from rag_lib.core.text import identifiers

    assert identifiers(text) == expected


def test_cosine_scores_on_hand_made_vectors() -> None:
    """A query (3, 4) against unit rows: cosines 0.6, 0.8 and -0.6, the query scaled to unit length
    first; BLAS keeps its thread setting after the single-threaded product."""
    from threadpoolctl import threadpool_info

    before = [lib["num_threads"] for lib in threadpool_info()]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(cosine_scores(vectors, np.array([3.0, 4.0])), [0.6, 0.8, -0.6], rtol=1e-6)
    assert [lib["num_threads"] for lib in threadpool_info()] == before
    with pytest.raises(IndexMismatchError, match="3 dimensions but the stored vectors have 2"):
        cosine_scores(vectors, np.ones(3))
