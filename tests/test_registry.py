"""The lazy registry every stage uses: strings until asked, an unknown keyword named with the known ones."""

from __future__ import annotations

import pytest

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.registry import LazyRegistry


def test_a_keyword_imports_its_attribute_only_when_loaded() -> None:
    registry = LazyRegistry("thing", {"path": "os.path:join", "nested": "pathlib:Path.cwd", "gone": "no_such_module:X"})
    assert registry.names() == ["gone", "nested", "path"] and "path" in registry and len(registry) == 3
    import os.path
    import pathlib

    assert registry.load("path") is os.path.join and registry.load("nested") == pathlib.Path.cwd
    with pytest.raises(ModuleNotFoundError):  # only when asked for: building the registry imported nothing
        registry.load("gone")


def test_an_unknown_keyword_raises_the_stage_error_listing_the_known_ones() -> None:
    registry = LazyRegistry("embedding backend", {"onnx": "os:getcwd"}, ModelUnavailableError)
    with pytest.raises(ModelUnavailableError, match=r"unknown embedding backend 'onxx'; choose one of \['onnx'\]"):
        registry.load("onxx")


def test_every_stage_registry_names_a_rag_lib_module_and_attribute() -> None:
    from rag_lib.embedding.registry import BACKENDS as EMBEDDERS
    from rag_lib.evidence.gates import GATES
    from rag_lib.generation import GENERATORS
    from rag_lib.index import BACKENDS as STORES
    from rag_lib.rerank import BACKENDS as RERANKERS
    from rag_lib.retrieval import RETRIEVERS

    for registry in (EMBEDDERS, GATES, GENERATORS, STORES, RERANKERS, RETRIEVERS):
        for name in registry:
            module, _, attribute = registry[name].partition(":")
            assert module.startswith("rag_lib.") and attribute, (registry.kind, name)
