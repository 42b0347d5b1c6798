"""Grounded generation: answer from ranked evidence chunks, cite them, or decline.

Backends (imported lazily, so the extractive baseline needs neither ``openai`` nor llama.cpp):

``openai``
    Any OpenAI-compatible endpoint (the casebook's qwen3.8-flash on Model Studio).
``llama_cpp``
    A local GGUF model, JSON-schema constrained (offline default: SmolLM2-135M-Instruct).
``extractive``
    No LLM: quotes the best-matching evidence sentences, declines below a floor.

Example
-------
>>> from rag_lib.generation import get_generator
>>> result = get_generator("extractive").generate("How do I add a secret?", chunks)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

from rag_lib.config import settings
from rag_lib.errors import WorkbookError
from rag_lib.generation.base import ERROR_KINDS, GenerationResult, Generator, LLMGenerator, LLMOutcome
from rag_lib.generation.schema import Answer, Citation, RecoverySuggestions, SchemaLimits, SufficiencyVerdict

GENERATORS: dict[str, str] = {
    "openai": "rag_lib.generation.openai_backend:OpenAIGenerator",
    "llama_cpp": "rag_lib.generation.llama_cpp_backend:LlamaCppGenerator",
    "extractive": "rag_lib.generation.extractive:ExtractiveGenerator",
}


def available_generators() -> list[str]:
    """Names accepted by :func:`get_generator`."""
    return sorted(GENERATORS)


def get_generator(name: str | None = None, **kwargs: Any) -> Generator:
    """Build a generator by name (default: ``generation.default`` in ``workbook.yaml``).

    Parameters
    ----------
    name
        One of :func:`available_generators`.
    **kwargs
        Passed to the backend's constructor (e.g. ``recorder=CallRecorder(mode="replay_only")``).
    """
    name = name or str(settings()["generation"]["default"])
    if name not in GENERATORS:
        raise WorkbookError(f"Unknown generator {name!r}; use one of {', '.join(available_generators())}.")
    module_name, class_name = GENERATORS[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)(**kwargs)


__all__ = [
    "ERROR_KINDS", "GENERATORS", "Answer", "Citation", "GenerationResult", "Generator", "LLMGenerator",
    "LLMOutcome", "RecoverySuggestions", "SchemaLimits", "SufficiencyVerdict", "available_generators",
    "get_generator",
]
