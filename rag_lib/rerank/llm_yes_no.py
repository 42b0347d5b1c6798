"""Pointwise LLM reranking: relevance = P("yes") from a chat model's next-token logits.

The instruction follows Qwen3-Reranker's format (a fixed system line, then ``<Instruct>``,
``<Query>`` and ``<Document>``; the score is the softmax of the "yes" and "no" logits at the first
answer position). The query comes before the document, so the 20 candidates of one question
share a prompt prefix and llama.cpp evaluates it once. No cross-encoder ships offline; this is the
workbook's offline reranker, while bge-reranker-v2-m3 stays the paper path.

Every score is one recorded call (:class:`~rag_lib.generation.llm_calls.CallRecorder`), so a re-run replays
the scores without loading the model. A missing record raises
:class:`~rag_lib.generation.llm_calls.ReplayMissError`: a reranking with holes is a failed reranking.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_lib.generation.call_records import LLMRequest
from rag_lib.generation.llama_cpp_backend import YES_NO_OPERATION, LlamaCppGenerator
from rag_lib.generation.llm_calls import CallRecorder, ReplayMissError
from rag_lib.generation.prompts import clip_text
from rag_lib.rerank.base import BaseReranker, RerankerSpec

SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')
INSTRUCTION = "Given a question about a product's documentation, judge whether this passage helps answer it"


def yes_no_messages(query: str, document: str, instruction: str = INSTRUCTION) -> tuple[dict[str, str], ...]:
    """The chat messages of one (query, document) judgement."""
    user = f"<Instruct>: {instruction}\n<Query>: {query.strip()}\n<Document>: {document}"
    return ({"role": "system", "content": SYSTEM}, {"role": "user", "content": user})


class LLMYesNoReranker(BaseReranker):
    """Relevance P("yes") from a local chat model, one recorded call per (query, passage).

    Parameters
    ----------
    spec : RerankerSpec
        ``files.local_model`` names the model in ``generation/models.yaml``; ``max_length`` is the
        passage length in characters sent to the model.
    recorder : CallRecorder, optional
        Where the judgements are recorded and replayed from (default: ``results/llm_calls``).
    """

    def __init__(self, spec: RerankerSpec, *, recorder: CallRecorder | None = None, **_: Any) -> None:
        self.spec = spec
        self.generator = LlamaCppGenerator(model=str(spec.files["local_model"]), recorder=recorder)
        self.calls: list[str] = []

    @property
    def provenance(self) -> dict[str, Any]:
        g = self.generator
        return {"model": self.spec.name, "hf_id": self.spec.hf_id, "backend": self.spec.backend,
                "version": g.model_version, "revision": g.model, "checksum": g.model_version,
                "local_model": g.describe()["spec"], "instruction": INSTRUCTION,
                "max_passage_chars": self.spec.max_length}

    def request(self, query: str, passage: str) -> LLMRequest:
        """The recorded request of one judgement."""
        g = self.generator
        return LLMRequest(backend=g.backend, model=g.model, model_version=g.model_version,
                          messages=yes_no_messages(query, clip_text(passage, self.spec.max_length)),
                          params={"operation": YES_NO_OPERATION, "n_ctx": g.n_ctx})

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """P("yes") per passage; raises ``ReplayMissError`` / ``LLMCallError`` when a judgement is missing."""
        out = np.empty(len(passages), dtype=np.float64)
        first_miss: ReplayMissError | None = None
        for i, passage in enumerate(passages):
            try:
                record = self.generator.recorder.call(self.request(query, passage), self.generator.complete)
            except ReplayMissError as miss:
                # Ask for every passage before failing, so one collecting pass lists all missing judgements.
                first_miss = first_miss or miss
                continue
            self.calls.append(record.key)
            out[i] = float(json.loads(record.response.content)["p_yes"])
        if first_miss is not None:
            raise first_miss
        return out
