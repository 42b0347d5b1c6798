"""The one registry style of the pipeline's families (retrievers, embedders, rerankers, generators, stores,
gates, chunker kinds): a keyword names ``"module:attribute"``, imported on first use.

Importing a backend pulls in its runtime (ONNX Runtime, llama.cpp, psycopg), so a registry holds
only strings until a backend is asked for: a missing optional package never breaks the rest
(the pattern of AnswerDotAI's ``rerankers``). The attribute may be dotted (``Class.classmethod``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any


class LazyRegistry(Mapping[str, str]):
    """Keywords of one kind of backend, each naming ``"module:attribute"``.

    Parameters
    ----------
    kind
        What the keywords name, for the error message ("retriever", "embedding backend" …).
    entries
        keyword → ``"module:attribute"``.
    error
        The exception an unknown keyword raises (the stage's own error type).
    """

    def __init__(self, kind: str, entries: Mapping[str, str], error: type[Exception] = ValueError) -> None:
        self.kind, self.error = kind, error
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """The keywords, sorted."""
        return sorted(self._entries)

    def load(self, name: str) -> Any:
        """Import and return what ``name`` names; an unknown keyword raises ``error`` listing the known ones."""
        if name not in self._entries:
            raise self.error(f"unknown {self.kind} {name!r}; choose one of {self.names()}")
        module_name, _, attribute = self._entries[name].partition(":")
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
        return target
