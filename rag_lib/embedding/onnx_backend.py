"""ONNX Runtime + Hugging Face ``tokenizers``: any BERT-like encoder exported to ONNX."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.io import file_sha256
from rag_lib.embedding.base import BaseEmbedder, EmbedderSpec, Kind
from rag_lib.embedding.files import ModelFiles, package_version, resolve

# Output names that hold per-token states, in order of preference; a 2-D output is taken as pooled.
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")


class OnnxEmbedder(BaseEmbedder):
    """Embed with an ONNX graph and its ``tokenizer.json``.

    Inputs are sorted by token length and batched, so a batch pads to similar lengths; the
    output keeps the input order. Inputs over ``spec.max_tokens`` are truncated and counted
    (:attr:`last_truncated`).

    Parameters
    ----------
    spec : EmbedderSpec
        The model (``backend: onnx``).
    models_dir : str or PathLike, optional
        Folder holding ``<hf-id with / as __>/``; defaults to ``$RAG_MODELS_DIR``.
    batch_size : int
        Inputs per forward pass.
    threads : int, optional
        ONNX Runtime intra-op threads (default: the runtime's choice).
    """

    def __init__(
        self,
        spec: EmbedderSpec,
        *,
        models_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 16,
        threads: int | None = None,
    ) -> None:
        super().__init__(spec)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.files: ModelFiles = resolve(spec, models_dir)
        if self.files.tokenizer is None:
            raise ModelUnavailableError(f"{spec.name}: no tokenizer.json found; add one next to the model.")
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(self.files.tokenizer))
        # We pad ourselves per batch and count truncation from untruncated lengths.
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._pad_id = self._find_pad_id()
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(
            str(self.files.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self._input_names:
            raise ModelUnavailableError(
                f"{self.files.model} takes inputs {sorted(self._input_names)}, not input_ids/attention_mask: "
                "it is not an encoder export this backend can run. Use the repository's onnx/model.onnx."
            )
        self._output = self._pick_output()
        self._ort_version = ort.__version__

    @property
    def tokenizer_id(self) -> str:
        """The sha256 of the tokenizer file (it is read apart from the model file)."""
        assert self.files.tokenizer is not None  # checked when the embedder was built
        return file_sha256(self.files.tokenizer)

    @property
    def backend_provenance(self) -> dict[str, str]:
        return {
            "model": self.spec.name,
            "hf_id": self.spec.hf_id,
            "backend": f"onnx (onnxruntime {self._ort_version})",
            # Package versions for shipped models; the snapshot commit (or "local folder") otherwise.
            "version": self.files.revision,
            "source": self.files.source,
            "model_file": self.files.model.name,
            "checksum": self.files.checksum,
            "tokenizers": package_version("tokenizers"),
        }

    def _find_pad_id(self) -> int:
        padding = self._tokenizer.padding
        if padding and "pad_id" in padding:
            return int(padding["pad_id"])
        for token in ("[PAD]", "<pad>"):
            token_id = self._tokenizer.token_to_id(token)
            if token_id is not None:
                return token_id
        return 0

    def _pick_output(self) -> str:
        outputs = {o.name: o for o in self._session.get_outputs()}
        for name in _TOKEN_OUTPUTS:
            if name in outputs:
                return name
        return next(iter(outputs))

    def _encode_ids(self, texts: list[str], kind: Kind) -> list[list[int]]:
        return [enc.ids for enc in self._tokenizer.encode_batch(self.embedding_inputs(texts, kind))]

    def token_lengths(self, texts: list[str], kind: Kind) -> list[int]:
        return [len(ids) for ids in self._encode_ids(list(texts), kind)]

    def _truncate(self, ids: list[int]) -> list[int]:
        # Keep the head and the closing special token ([SEP] / </s>), as the tokenizer would.
        limit = self.spec.max_tokens
        return ids if len(ids) <= limit else [*ids[: limit - 1], ids[-1]]

    def _encode(self, texts: list[str], kind: Kind) -> np.ndarray:
        all_ids = self._encode_ids(texts, kind)
        overlong = sum(len(ids) > self.spec.max_tokens for ids in all_ids)
        self.last_overlong = self.last_truncated = overlong
        all_ids = [self._truncate(ids) for ids in all_ids]
        # Longest first: the first batch shows a memory problem at once; stable sort keeps ties in order.
        order = sorted(range(len(all_ids)), key=lambda i: -len(all_ids[i]))
        out = np.empty((len(all_ids), self.spec.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._forward([all_ids[i] for i in batch])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feed: dict[str, Any] = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        states = self._session.run([self._output], feed)[0]
        if states.ndim == 2:  # the graph pools itself
            return states
        if self.spec.pooling == "cls":
            return states[:, 0]
        weights = mask[:, :, None].astype(np.float32)
        return (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
