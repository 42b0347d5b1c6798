"""The reranking stage: one base class, per-model specs as data, and model-file lookup.

A reranker re-scores the top ``top_n`` chunks of a full :class:`~rag_lib.retrieval.Ranking`
and keeps the rest of the ranking below them in their original order, so every chunk still has
a rank after reranking.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rag_lib.core.config import shown_path
from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.hub_files import locate_hub_files
from rag_lib.core.io import file_sha256
from rag_lib.retrieval.base import Ranking


@dataclass(frozen=True)
class RerankerSpec:
    """One reranker model as data (an entry of ``rag_lib/rerank/specs.yaml``)."""

    name: str
    hf_id: str
    backend: str
    files: Mapping[str, Any]
    max_length: int = 512
    activation: str = "sigmoid"
    batch_size: int = 8
    pad_token: str = "<pad>"
    revision: str = "main"
    paper: bool = False

    def __post_init__(self) -> None:
        if self.activation not in ("sigmoid", "none"):
            raise ValueError(
                f"{self.name}: activation must be 'sigmoid' or 'none' (specs.yaml), got {self.activation!r}"
            )
        if self.max_length < 3 or self.batch_size < 1:
            raise ValueError(f"{self.name}: max_length must be >= 3 and batch_size >= 1 (specs.yaml)")

    def replace(self, **changes: Any) -> RerankerSpec:
        return replace(self, **changes)

    @property
    def required_files(self) -> list[str]:
        return [self.files["tokenizer"], self.files["model"], *self.files.get("extra", [])]


def load_specs() -> dict[str, RerankerSpec]:
    """All reranker specs from ``rag_lib/rerank/specs.yaml``, by registry name."""
    text = resources.files("rag_lib.rerank").joinpath("specs.yaml").read_text(encoding="utf-8")
    return {name: RerankerSpec(name=name, **row) for name, row in yaml.safe_load(text).items()}


def get_spec(name: str) -> RerankerSpec:
    """The spec registered as ``name``."""
    specs = load_specs()
    if name not in specs:
        raise ValueError(f"No reranker is registered as {name!r}. Use one of {sorted(specs)} or add it to specs.yaml.")
    return specs[name]


@dataclass(frozen=True)
class RerankerFiles:
    """Resolved local files of one reranker and where they came from."""

    model: Path
    tokenizer: Path
    source: str  # "RAG_MODELS_DIR" or "huggingface-cache"
    revision: str
    checksum: str  # sha256 over the graph and its extra files
    extra: tuple[Path, ...] = field(default=())


def resolve_files(spec: RerankerSpec, folder: str | os.PathLike[str] | None = None) -> RerankerFiles:
    """Find ``spec``'s files in ``<RAG_MODELS_DIR>/<hf-id with / → __>/``, then the HF cache.

    Nothing is downloaded. Missing files raise :class:`~rag_lib.core.errors.ModelUnavailableError`
    naming the model, where we looked, and ``make models``.
    """
    found = locate_hub_files(spec.hf_id, spec.revision, spec.required_files, folder)
    if found.paths:
        return _files(spec, found.paths, found.source, found.revision)
    raise ModelUnavailableError(
        f"Reranker {spec.name!r} ({spec.hf_id}) is not on this machine. Looked in: {'; '.join(found.tried)}. "
        f"Fix: run `make models` where the Hugging Face Hub is reachable, or put "
        f"{', '.join(spec.required_files)} into {shown_path(found.target)}/. No other reranker is substituted."
    )


def _files(spec: RerankerSpec, paths: Mapping[str, Path | None], source: str, revision: str) -> RerankerFiles:
    model, tokenizer = paths[spec.files["model"]], paths[spec.files["tokenizer"]]
    assert model is not None and tokenizer is not None
    extra = tuple(p for rel in spec.files.get("extra", []) if (p := paths[rel]) is not None)
    return RerankerFiles(model, tokenizer, source, revision, file_sha256(model, *extra), extra)


class BaseReranker(ABC):
    """Scores (query, passage) pairs; :meth:`rerank` turns scores into a new full ranking."""

    spec: RerankerSpec

    @property
    @abstractmethod
    def provenance(self) -> dict[str, str]:
        """``model``, ``hf_id``, ``backend``, ``version``, ``revision``, ``checksum``."""

    @abstractmethod
    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (float64, higher is more relevant)."""

    def rerank(self, query: str, ranking: Ranking, texts: Mapping[str, str], top_n: int = 20) -> Ranking:
        """Re-order the top ``top_n`` of ``ranking`` by :meth:`score`; keep the rest below, unchanged.

        Parameters
        ----------
        query : str
            The question.
        ranking : Ranking
            A full ranking (e.g. dense); its top ``top_n`` are the candidates.
        texts : mapping of chunk id to str
            What the reranker reads for each candidate (e.g. ``Chunk.embed_input``).
        top_n : int
            Candidates to re-score (``config.yaml`` ``retrieval.rerank_candidates``).

        Returns
        -------
        Ranking
            Candidates by descending reranker score (ties keep their retrieval order) with the
            reranker scores, then every other chunk in its original order with its original score.
        """
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        head = ranking.ids[:top_n]
        missing = [cid for cid in head if cid not in texts]
        if missing:
            raise KeyError(f"no text for candidate {missing[0]!r}; pass texts for every chunk of the ranking")
        scores = self.score(query, [texts[cid] for cid in head])
        order = np.argsort(-scores, kind="stable")
        ids = tuple(head[i] for i in order) + ranking.ids[len(head) :]
        new_scores = tuple(float(scores[i]) for i in order) + ranking.scores[len(head) :]
        return Ranking(ids, new_scores, source=f"rerank({ranking.source},{self.spec.name},n={len(head)})")
