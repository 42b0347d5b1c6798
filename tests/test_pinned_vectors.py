"""Pinned vectors: recorded once, looked up by (vector key, input sha256), checked against their sha256 on load."""

from __future__ import annotations

import numpy as np
import pytest

from rag_lib.core.errors import WorkbookError
from rag_lib.embedding import get_embedder
from rag_lib.embedding.pinned import MANIFEST, PINS_DIR, PinnedVectors, VectorRecorder, manifest, pin, vector_key

TEXTS = ["Secrets are encrypted environment variables.", "Use wrangler secret put to add one.", "如何添加密钥？"]


@pytest.fixture
def minilm():
    return get_embedder("all-minilm-l6-v2-int8", pins=False)


def _recorded_and_pinned(minilm, tmp_path):
    minilm.recorder = VectorRecorder(tmp_path / "recorded")
    docs, queries = minilm.embed_documents(TEXTS[:2]), minilm.embed_queries(TEXTS[2:])
    minilm.recorder = None
    pin(tmp_path / "recorded", tmp_path / "pins")
    return docs, queries


def test_pinned_vectors_are_returned_byte_for_byte_without_running_the_model(minilm, tmp_path, monkeypatch):
    docs, queries = _recorded_and_pinned(minilm, tmp_path)
    fresh = get_embedder("all-minilm-l6-v2-int8", pins=False)
    fresh.pins = PinnedVectors.load(vector_key(fresh.vector_description()), tmp_path / "pins")
    monkeypatch.setattr(fresh, "_encode", lambda texts, kind: pytest.fail(f"computed {texts} instead of reading pins"))
    assert fresh.embed_documents(TEXTS[:2]).tobytes() == docs.tobytes()
    assert fresh.embed_queries(TEXTS[2:]).tobytes() == queries.tobytes()


def test_an_input_not_pinned_is_computed_and_kept_in_its_place(minilm, tmp_path):
    docs, _ = _recorded_and_pinned(minilm, tmp_path)
    fresh = get_embedder("all-minilm-l6-v2-int8", pins=False)
    fresh.pins = PinnedVectors.load(vector_key(fresh.vector_description()), tmp_path / "pins")
    mixed = fresh.embed_documents([TEXTS[1], "A passage nobody pinned.", TEXTS[0]])
    assert mixed[0].tobytes() == docs[1].tobytes() and mixed[2].tobytes() == docs[0].tobytes()
    expected = minilm.embed_documents(["A passage nobody pinned."])[0]
    assert np.allclose(mixed[1], expected, atol=1e-6)


def test_a_changed_artefact_is_an_error_that_names_the_fix(minilm, tmp_path):
    _recorded_and_pinned(minilm, tmp_path)
    key = vector_key(minilm.vector_description())
    entry = manifest(tmp_path / "pins")[key]
    path = tmp_path / "pins" / entry["vectors"]["file"]
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(WorkbookError, match=r"do not match their sha256.*git checkout -- data/vectors"):
        PinnedVectors.load(key, tmp_path / "pins")


def test_one_input_recorded_with_two_vectors_is_refused(minilm, tmp_path):
    recorder = VectorRecorder(tmp_path / "recorded")
    vectors = minilm.embed_documents(TEXTS[:1])
    recorder.add(minilm.vector_description(), ["a" * 64], vectors)
    recorder.add(minilm.vector_description(), ["a" * 64], vectors + np.float32(1e-3))
    with pytest.raises(WorkbookError, match="two different vectors"):
        pin(tmp_path / "recorded", tmp_path / "pins")
    assert not (tmp_path / "pins" / MANIFEST).exists()


def test_the_key_holds_what_shapes_a_vector_and_not_the_engine(minilm, monkeypatch):
    key = vector_key(minilm.vector_description())
    shorter = get_embedder("all-minilm-l6-v2-int8", pins=False, max_tokens=64)
    assert vector_key(shorter.vector_description()) != key
    other_engine = {**minilm.backend_provenance, "backend": "another runtime", "engine": "another build"}
    monkeypatch.setattr(type(minilm), "backend_provenance", property(lambda self: other_engine))
    assert vector_key(minilm.vector_description()) == key
    assert minilm.vector_description()["made_by"]["engine"] == "another build"


def test_every_committed_artefact_matches_itsmanifest():
    entries = manifest(PINS_DIR)
    assert entries, "data/vectors/pins.yaml lists no pinned vectors"
    for key, entry in entries.items():
        pinned = PinnedVectors.load(key)
        assert pinned is not None and len(pinned.rows) == entry["rows"]
        assert np.allclose(np.linalg.norm(pinned.matrix, axis=1), 1.0, atol=1e-5)
