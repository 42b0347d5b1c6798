"""Grounded generation: answer from ranked evidence chunks, cite them, or decline.

Backends (imported lazily, so the extractive baseline needs neither ``openai`` nor llama.cpp):

``openai``
    Any OpenAI-compatible endpoint (the casebook's qwen3.8-flash on Model Studio).
``llama_cpp`` or ``llama_cpp:MODEL``
    A local GGUF model, JSON-schema constrained (offline default: Qwen2.5-Coder-Instruct; the
    models are listed in ``models.yaml`` → ``local_models``).
``extractive``
    No LLM: quotes the best-matching evidence sentences, declines below a floor.

Example
-------
>>> from rag_lib.generation import get_generator
>>> result = get_generator("extractive").generate("How do I add a secret?", chunks)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from rag_lib.core.config import RunConfig
from rag_lib.core.errors import WorkbookError
from rag_lib.core.registry import LazyRegistry
from rag_lib.generation.base import ERROR_KINDS, GenerationResult, Generator, LLMGenerator, LLMOutcome
from rag_lib.generation.schema import Answer, Citation, RecoverySuggestions, SchemaLimits, SufficiencyVerdict

GENERATORS = LazyRegistry("generator", {
    "openai": "rag_lib.generation.openai_backend:OpenAIGenerator",
    "llama_cpp": "rag_lib.generation.llama_cpp_backend:LlamaCppGenerator",
    "extractive": "rag_lib.generation.extractive:ExtractiveGenerator",
}, WorkbookError)


def task_generator_name(task: str) -> str:
    """The generator configured for an LLM task (``generation.llm_tasks`` in ``config.yaml``)."""
    tasks = RunConfig.from_settings().llm_tasks
    if task not in tasks:
        raise WorkbookError(f"generation.llm_tasks in config.yaml has no entry {task!r}; it has {sorted(tasks)}.")
    return str(tasks[task])


def get_task_generator(task: str, **kwargs: Any) -> Generator:
    """:func:`get_generator` for the model configured for ``task`` (``answer``, ``judge``, ``rewrite`` …)."""
    return get_generator(task_generator_name(task), **kwargs)


def available_generators() -> list[str]:
    """Names accepted by :func:`get_generator`."""
    return GENERATORS.names()


def get_generator(name: str | None = None, **kwargs: Any) -> Generator:
    """Build a generator by name (default: ``generation.default`` in ``config.yaml``).

    Parameters
    ----------
    name
        One of :func:`available_generators`, optionally with a model after a colon
        (``llama_cpp:qwen2.5-coder-0.5b``, ``openai:qwen-flash``).
    **kwargs
        Passed to the backend's constructor (e.g. ``recorder=CallRecorder(mode="replay_only")``).
    """
    name = name or RunConfig.from_settings().generator
    backend, _, model = name.partition(":")
    if backend not in GENERATORS:
        raise WorkbookError(f"Unknown generator {name!r}; use one of {', '.join(available_generators())} "
                            "(llama_cpp and openai take a model after a colon).")
    if model:
        if backend == "extractive":
            raise WorkbookError(f"The extractive generator takes no model ({name!r}); use 'extractive'.")
        kwargs["model"] = model
    return GENERATORS.load(backend)(**kwargs)


__all__ = [
    "ERROR_KINDS", "GENERATORS", "Answer", "Citation", "GenerationResult", "Generator", "LLMGenerator",
    "LLMOutcome", "RecoverySuggestions", "SchemaLimits", "SufficiencyVerdict", "available_generators",
    "get_generator", "get_task_generator", "task_generator_name",
]
