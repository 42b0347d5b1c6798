"""Cross-encoder reranking with ONNX Runtime and a Hugging Face ``tokenizer.json``.

Each (query, passage) pair is encoded as one sequence by the tokenizer's own pair template
(for bge-reranker-v2-m3: ``<s> query </s></s> passage </s>``), cut longest-first to
``spec.max_length``, padded per batch, and run through the graph; the single output logit goes
through ``spec.activation`` (sigmoid for bge-reranker-v2-m3).
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Sequence

import numpy as np

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.rerank.base import BaseReranker, RerankerSpec, resolve_files


class OnnxCrossEncoder(BaseReranker):
    """A cross-encoder exported to ONNX (inputs ``input_ids``, ``attention_mask`` and optionally
    ``token_type_ids``; one logit per pair).

    Parameters
    ----------
    spec : RerankerSpec
        The model as data (files, max length, activation, batch size).
    models_dir : path, optional
        Folder holding ``<hf-id with / → __>/``; default ``$RAG_MODELS_DIR``, then the HF cache.
    threads : int, optional
        ONNX Runtime intra-op threads (``None``: ONNX Runtime's default).
    batch_size : int, optional
        Overrides ``spec.batch_size``.
    """

    def __init__(
        self,
        spec: RerankerSpec,
        *,
        models_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        batch_size: int | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.spec = spec if batch_size is None else spec.replace(batch_size=batch_size)
        self.files = resolve_files(self.spec, models_dir)
        self.tokenizer = Tokenizer.from_file(str(self.files.tokenizer))
        pad_id = self.tokenizer.token_to_id(self.spec.pad_token)
        if pad_id is None:
            raise ModelUnavailableError(
                f"{spec.name}: pad token {spec.pad_token!r} is not in {self.files.tokenizer}; "
                "fix pad_token in rag_lib/rerank/specs.yaml or replace the tokenizer file"
            )
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.spec.max_length, strategy="longest_first")
        self.tokenizer.enable_padding(pad_id=pad_id, pad_token=self.spec.pad_token)
        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(self.files.model), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self.session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self._input_names:
            raise ModelUnavailableError(
                f"{spec.name}: {self.files.model} takes inputs {sorted(self._input_names)}, not "
                "input_ids + attention_mask; use a cross-encoder ONNX export"
            )

    @property
    def provenance(self) -> dict[str, str]:
        return {
            "model": self.spec.name,
            "hf_id": self.spec.hf_id,
            "backend": f"onnxruntime {importlib.metadata.version('onnxruntime')}",
            "version": self.files.revision,
            "revision": self.files.revision,
            "checksum": self.files.checksum,
            "source": self.files.source,
        }

    def logits(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """The raw logit of every (query, passage) pair, in batches of ``spec.batch_size``."""
        out: list[np.ndarray] = []
        for start in range(0, len(passages), self.spec.batch_size):
            batch = [(query, p) for p in passages[start : start + self.spec.batch_size]]
            encodings = self.tokenizer.encode_batch(batch)
            feed = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            if "token_type_ids" in self._input_names:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            (logits,) = self.session.run(None, feed)[:1]
            out.append(np.asarray(logits, dtype=np.float64).reshape(len(batch), -1)[:, 0])
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float64)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage: ``sigmoid(logit)`` (or the raw logit if activation is none)."""
        logits = self.logits(query, passages)
        return 1.0 / (1.0 + np.exp(-logits)) if self.spec.activation == "sigmoid" else logits
