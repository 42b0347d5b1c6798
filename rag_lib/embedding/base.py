"""The embedding stage's protocol, its per-model spec, and the shared part of every backend."""

from __future__ import annotations

import dataclasses
import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
import yaml

from rag_lib.core.errors import ModelUnavailableError

if TYPE_CHECKING:
    from rag_lib.embedding.pinned import PinnedVectors, VectorRecorder

Kind = Literal["query", "document"]


@dataclass(frozen=True)
class EmbedderSpec:
    """One model as data, read from ``specs.yaml``.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"bge-m3"``.
    hf_id : str
        Hugging Face repository of the weights.
    backend : str
        ``"onnx"`` or ``"e5-fast"``.
    pooling : str
        ``"cls"`` or ``"mean"``.
    max_tokens : int
        The model's window, special tokens included.
    long_inputs : str
        ``"truncate"`` or ``"window"``: what happens to inputs longer than ``max_tokens``.
    files : dict
        ``model``, ``tokenizer`` and ``extra`` paths inside the repository (Hub models).
    package : dict
        Module names that ship the files (offline models).
    """

    name: str
    hf_id: str
    backend: str
    pooling: str
    dimension: int
    max_tokens: int
    revision: str = "main"
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True
    long_inputs: str = "truncate"
    files: dict[str, Any] = field(default_factory=dict)
    package: dict[str, str] = field(default_factory=dict)
    paper: bool = False
    pinned: bool = True  # look inputs up in data/vectors first (false: compute every vector, to compare engines)

    def __post_init__(self) -> None:
        # Fail at load time on a typo in specs.yaml rather than with odd vectors later.
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"{self.name}: pooling must be 'cls' or 'mean' (specs.yaml): {self.pooling!r}")
        if self.long_inputs not in ("truncate", "window"):
            raise ValueError(f"{self.name}: long_inputs must be 'truncate' or 'window' (specs.yaml)")
        if self.max_tokens < 3:
            raise ValueError(f"{self.name}: max_tokens must leave room for the special tokens (>= 3)")

    def prefix(self, kind: Kind) -> str:
        """The text prepended to a query or a document before tokenisation."""
        if kind == "query":
            return self.query_prefix
        if kind == "document":
            return self.document_prefix
        raise ValueError(f"kind must be 'query' or 'document', not {kind!r}")

    def replace(self, **changes: Any) -> EmbedderSpec:
        """A copy with some fields changed (e.g. a tiny ``max_tokens`` in a test)."""
        return dataclasses.replace(self, **changes)


@cache
def load_specs() -> dict[str, EmbedderSpec]:
    """All model specs from ``rag_lib/embedding/specs.yaml``, by registry name."""
    text = resources.files("rag_lib.embedding").joinpath("specs.yaml").read_text(encoding="utf-8")
    return {name: EmbedderSpec(name=name, **row) for name, row in yaml.safe_load(text).items()}


def get_spec(name: str) -> EmbedderSpec:
    """The spec registered as ``name``; raises with the list of known names otherwise."""
    specs = load_specs()
    if name not in specs:
        raise ModelUnavailableError(
            f"No embedder is registered as {name!r}. Use one of {sorted(specs)} "
            "or add an entry to rag_lib/embedding/specs.yaml."
        )
    return specs[name]


def input_hash(text: str) -> str:
    """sha256 of the exact text the model sees (prefix included): the embedding cache key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@runtime_checkable
class Embedder(Protocol):
    """What every embedding backend offers.

    Vectors are ``float32`` arrays of shape ``(len(texts), spec.dimension)``, L2-normalised when
    ``spec.normalize`` is true. ``provenance`` names the model, backend, version and file checksum
    so every stored vector can say where it came from.
    """

    spec: EmbedderSpec
    last_truncated: int
    last_overlong: int

    @property
    def name(self) -> str: ...

    @property
    def provenance(self) -> dict[str, str]: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embedding_inputs(self, texts: list[str], kind: Kind) -> list[str]: ...

    def token_lengths(self, texts: list[str], kind: Kind) -> list[int]: ...

    def describe(self) -> dict[str, Any]: ...


class BaseEmbedder(ABC):
    """Shared behaviour: prefixes, normalisation, output checks, provenance.

    A backend implements :meth:`_encode` (raw texts plus kind to vectors, setting the two
    counters), :meth:`token_lengths` and :attr:`provenance`.
    """

    def __init__(self, spec: EmbedderSpec) -> None:
        self.spec = spec
        #: inputs of the last call whose tail was cut off at ``spec.max_tokens``
        self.last_truncated = 0
        #: inputs of the last call longer than ``spec.max_tokens`` (truncated or windowed)
        self.last_overlong = 0
        self._query_vectors: dict[str, np.ndarray] = {}  # query text → vector (see embed_queries)
        #: the pinned artefact of this embedder's vector key (:mod:`~rag_lib.embedding.pinned`), set by get_embedder
        self.pins: PinnedVectors | None = None
        #: where every returned vector is also written, when the artefact is being made (``RAG_RECORD_VECTORS``)
        self.recorder: VectorRecorder | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    @abstractmethod
    def backend_provenance(self) -> dict[str, str]:
        """``model``, ``hf_id``, ``backend``, ``version``, ``revision`` and ``checksum`` (sha256) of what computes."""

    @property
    def provenance(self) -> dict[str, str]:
        """The backend's provenance, plus the pinned vectors read before it computes (``pinned_vectors``)."""
        if self.pins is None:
            return self.backend_provenance
        return {**self.backend_provenance, "pinned_vectors": self.pins.describe()}

    def vector_description(self) -> dict[str, Any]:
        """What decides this embedder's vectors (their address in :mod:`~rag_lib.embedding.pinned`: model file,
        tokenizer, pooling, window, normalisation), and what computes them (``made_by``, provenance only)."""
        spec, prov = self.spec, self.backend_provenance
        return {"model": spec.name, "hf_id": spec.hf_id, "checksum": prov["checksum"], "tokenizer": self.tokenizer_id,
                "pooling": spec.pooling, "max_tokens": spec.max_tokens, "long_inputs": spec.long_inputs,
                "normalize": spec.normalize, "dimension": spec.dimension,
                "made_by": {k: prov[k] for k in ("backend", "engine", "version") if k in prov}}

    @property
    def tokenizer_id(self) -> str:
        """What tokenizes the inputs, as part of the vector key: the vocabulary inside the model file unless a
        backend reads a separate tokenizer file (then its sha256)."""
        return "the model file's vocabulary"

    @abstractmethod
    def _encode(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Vectors for raw ``texts``; the backend applies ``spec.prefix(kind)``."""

    @abstractmethod
    def token_lengths(self, texts: list[str], kind: Kind) -> list[int]:
        """Untruncated token count of each embedding input, special tokens included."""

    def embedding_inputs(self, texts: list[str], kind: Kind) -> list[str]:
        """The exact strings the model sees: ``spec.prefix(kind) + text``."""
        prefix = self.spec.prefix(kind)
        return [prefix + t for t in texts]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Embed search queries (with the model's query prefix).

        Each distinct query is embedded once per embedder: experiments ask the same question of several
        stages (retrieval, narrowing, the judge), and the model is deterministic.
        """
        if isinstance(texts, str):
            raise TypeError("pass a list of strings, not a single string")
        missing = [t for t in dict.fromkeys(texts) if t not in self._query_vectors]
        if missing:
            self._query_vectors.update(zip(missing, self._embed(missing, "query"), strict=True))
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        return np.stack([self._query_vectors[t] for t in texts])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed passages (with the model's document prefix)."""
        return self._embed(texts, "document")

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("pass a list of strings, not a single string")
        texts = list(texts)
        self.last_truncated = self.last_overlong = 0
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        hashes = [input_hash(t) for t in self.embedding_inputs(texts, kind)]
        found = self._pinned(hashes)
        todo = list(dict.fromkeys(h for h in hashes if h not in found))
        if todo:
            first = {h: i for i, h in reversed(list(enumerate(hashes)))}
            found.update(zip(todo, self._compute([texts[first[h]] for h in todo], kind), strict=True))
        vectors = np.stack([found[h] for h in hashes])
        if self.recorder is not None:
            self.recorder.add(self.vector_description(), hashes, vectors)
        return vectors

    def _pinned(self, hashes: list[str]) -> dict[str, np.ndarray]:
        return self.pins.lookup(hashes) if self.pins is not None else {}

    def unpinned(self, texts: list[str], kind: Kind) -> int:
        """How many distinct inputs of ``texts`` have no pinned vector, i.e. would be computed."""
        hashes = {input_hash(t) for t in self.embedding_inputs(texts, kind)}
        return len(hashes) - len(self._pinned(list(hashes)))

    def _compute(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Run the model on ``texts`` (none of them pinned): checked shape, normalised."""
        vectors = np.ascontiguousarray(self._encode(texts, kind), dtype=np.float32)
        if vectors.shape != (len(texts), self.spec.dimension):
            raise ModelUnavailableError(
                f"{self.name} returned vectors of shape {vectors.shape}, expected "
                f"({len(texts)}, {self.spec.dimension}): the model files do not match the spec. "
                "Check the files in RAG_MODELS_DIR or the dimension in rag_lib/embedding/specs.yaml."
            )
        if self.spec.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.maximum(norms, np.float32(1e-12))
        return vectors.astype(np.float32, copy=False)

    def describe(self) -> dict[str, Any]:
        """Provenance plus the settings that shape the vectors (for results files)."""
        return {
            **self.provenance,
            "pooling": self.spec.pooling,
            "query_prefix": self.spec.query_prefix,
            "document_prefix": self.spec.document_prefix,
            "normalize": self.spec.normalize,
            "max_tokens": self.spec.max_tokens,
            "long_inputs": self.spec.long_inputs,
            "dimension": self.spec.dimension,
        }

    def __repr__(self) -> str:
        prov = self.provenance
        return f"{type(self).__name__}({self.name!r}, version={prov['version']!r})"
