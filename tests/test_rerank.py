"""Reranking: a tiny ONNX cross-encoder built here checks loading, pair encoding, truncation,
batching, sigmoid and re-ordering exactly. No real reranker is needed (or faked)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.rerank import available_rerankers, get_reranker, get_spec
from rag_lib.rerank.base import RerankerSpec
from rag_lib.rerank.onnx_cross_encoder import OnnxCrossEncoder
from rag_lib.retrieval import Ranking

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "secret": 4, "put": 5, "wrangler": 6, "r2": 7}
# One number per token; the model's logit is the masked mean of these values minus 1.
VALUE = {"secret": 4.0, "put": 2.0}


def build_model(folder: Path) -> None:
    """tokenizer.json (WordLevel, BERT-style pair template) and an ONNX graph:
    logit = mean(E[input_ids] over attention_mask) · W + b, with E = VALUE, W = 1, b = -1."""
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))

    table = np.zeros((len(VOCAB), 1), dtype=np.float32)
    for word, value in VALUE.items():
        table[VOCAB[word], 0] = value
    init = [
        helper.make_tensor("E", TensorProto.FLOAT, table.shape, table.ravel().tolist()),
        helper.make_tensor("W", TensorProto.FLOAT, [1, 1], [1.0]),
        helper.make_tensor("b", TensorProto.FLOAT, [1], [-1.0]),
        helper.make_tensor("ax1", TensorProto.INT64, [1], [1]),
        helper.make_tensor("ax2", TensorProto.INT64, [1], [2]),
    ]
    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["emb"]),  # [B, L, 1]
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),  # [B, L]
        helper.make_node("Unsqueeze", ["m", "ax2"], ["m3"]),  # [B, L, 1]
        helper.make_node("Mul", ["emb", "m3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "ax1"], ["total"], keepdims=0),  # [B, 1]
        helper.make_node("ReduceSum", ["m", "ax1"], ["count"], keepdims=1),  # [B, 1]
        helper.make_node("Div", ["total", "count"], ["mean"]),
        helper.make_node("MatMul", ["mean", "W"], ["mw"]),
        helper.make_node("Add", ["mw", "b"], ["logits"]),  # [B, 1]
    ]
    graph = helper.make_graph(
        nodes, "tiny-cross-encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["B", "L"]) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["B", 1])],
        init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "onnx" / "model.onnx"))


SPEC = RerankerSpec(
    name="tiny-ce", hf_id="test/tiny-ce", backend="onnx_cross_encoder",
    files={"model": "onnx/model.onnx", "tokenizer": "tokenizer.json", "extra": []},
    max_length=16, activation="sigmoid", batch_size=2, pad_token="[PAD]",
)


@pytest.fixture(scope="module")
def models_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    build_model(root / "test__tiny-ce")
    return root


@pytest.fixture
def reranker(models_root: Path) -> OnnxCrossEncoder:
    return OnnxCrossEncoder(SPEC, models_dir=models_root, threads=1)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_scores_are_sigmoid_of_hand_computed_logits(reranker: OnnxCrossEncoder) -> None:
    passages = ["wrangler secret put", "r2", "secret secret"]
    # [CLS] secret [SEP] wrangler secret put [SEP]: (4 + 4 + 2) / 7 − 1 = 3/7
    # [CLS] secret [SEP] r2 [SEP]: 4 / 5 − 1 = −1/5
    # [CLS] secret [SEP] secret secret [SEP]: 12 / 6 − 1 = 1
    expected_logits = [3 / 7, -1 / 5, 1.0]
    np.testing.assert_allclose(reranker.logits("secret", passages), expected_logits, rtol=1e-6)
    np.testing.assert_allclose(reranker.score("secret", passages), [sigmoid(x) for x in expected_logits], rtol=1e-6)


def test_batching_and_padding_do_not_change_scores(models_root: Path, reranker: OnnxCrossEncoder) -> None:
    passages = ["wrangler secret put", "r2", "secret secret", "put", "wrangler r2 r2 r2 r2"]
    calls: list[int] = []
    run = reranker.session.run

    def counting_run(outputs, feed):  # type: ignore[no-untyped-def]
        calls.append(len(feed["input_ids"]))
        return run(outputs, feed)

    reranker.session.run = counting_run  # type: ignore[method-assign]
    batched = reranker.score("secret", passages)
    assert calls == [2, 2, 1]  # batch_size 2 from the spec
    single = OnnxCrossEncoder(SPEC, models_dir=models_root, batch_size=5).score("secret", passages)
    np.testing.assert_allclose(batched, single, rtol=1e-6)


def test_pairs_are_truncated_longest_first(models_root: Path) -> None:
    short = OnnxCrossEncoder(SPEC.replace(max_length=6), models_dir=models_root)
    # 3 specials + "secret" leave 2 passage tokens: [CLS] secret [SEP] put put [SEP] → 8/6 − 1
    np.testing.assert_allclose(short.logits("secret", ["put put put put put"]), [1 / 3], rtol=1e-6)


def test_rerank_reorders_the_top_n_and_keeps_the_rest(reranker: OnnxCrossEncoder) -> None:
    ranking = Ranking(("r", "w", "s", "x", "y"), (0.9, 0.8, 0.7, 0.6, 0.5), source="dense")
    texts = {"r": "r2", "w": "wrangler secret put", "s": "secret secret", "x": "secret", "y": "put"}
    out = reranker.rerank("secret", ranking, texts, top_n=3)
    assert out.ids == ("s", "w", "r", "x", "y")
    assert out.scores[:3] == pytest.approx((sigmoid(1.0), sigmoid(3 / 7), sigmoid(-1 / 5)))
    assert out.scores[3:] == (0.6, 0.5)
    assert out.source == "rerank(dense,tiny-ce,n=3)"
    with pytest.raises(KeyError, match="no text for candidate"):
        reranker.rerank("secret", ranking, {"r": "r2"}, top_n=2)


def test_ties_keep_retrieval_order(reranker: OnnxCrossEncoder) -> None:
    ranking = Ranking(("b", "a"), (0.9, 0.8))
    assert reranker.rerank("r2", ranking, {"a": "put", "b": "put"}).ids == ("b", "a")


def test_provenance_and_flat_folder_layout(tmp_path: Path, models_root: Path) -> None:
    folder = tmp_path / "test__tiny-ce"
    folder.mkdir()
    for name in ("tokenizer.json", "onnx/model.onnx"):
        (folder / Path(name).name).write_bytes((models_root / "test__tiny-ce" / name).read_bytes())
    reranker = get_reranker(SPEC, models_dir=tmp_path)
    prov = reranker.provenance
    assert prov["source"] == "RAG_MODELS_DIR" and prov["model"] == "tiny-ce"
    assert prov["checksum"] == hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    assert prov["backend"].startswith("onnxruntime ")


@pytest.fixture
def empty_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAG_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_missing_model_names_the_model_and_make_models(empty_places: Path) -> None:
    with pytest.raises(ModelUnavailableError) as err:
        get_reranker("bge-reranker-v2-m3")
    message = str(err.value)
    assert "bge-reranker-v2-m3" in message and "BAAI/bge-reranker-v2-m3" in message
    assert "make models" in message and "BAAI__bge-reranker-v2-m3" in message
    assert "No other reranker is substituted" in message


def test_registry_reports_the_real_reranker_unavailable(empty_places: Path) -> None:
    status = available_rerankers()
    assert set(status) == {"bge-reranker-v2-m3", "qwen2.5-coder-0.5b-yes-no", "qwen2.5-coder-1.5b-yes-no"}
    assert isinstance(status["bge-reranker-v2-m3"], str) and "make models" in status["bge-reranker-v2-m3"]
    # The LLM rerankers' scores are recorded calls: they replay without model files.
    assert status["qwen2.5-coder-0.5b-yes-no"] is True and status["qwen2.5-coder-1.5b-yes-no"] is True


def test_spec_is_data() -> None:
    spec = get_spec("bge-reranker-v2-m3")
    assert (spec.hf_id, spec.max_length, spec.activation, spec.backend) == (
        "BAAI/bge-reranker-v2-m3", 512, "sigmoid", "onnx_cross_encoder"
    )
    assert spec.required_files == ["tokenizer.json", "onnx/model.onnx"]
    with pytest.raises(ValueError, match="No reranker is registered as 'nope'"):
        get_spec("nope")
    with pytest.raises(ValueError, match="activation"):
        SPEC.replace(activation="softmax")
