"""Shared test settings."""

from __future__ import annotations

import importlib.util
import os

import pytest

# The local-LLM runtime (llama-cpp-python and its server) is installed by `make llm-runtime`, not by `make test`,
# which only replays recorded calls. A test that loads a model carries @pytest.mark.llm_runtime: skipped, with
# the reason, where the runtime is absent; under CI (which installs it first) its absence is a failure instead.
LLM_RUNTIME_MISSING = ("needs the local-LLM runtime (llama-cpp-python), which `make test` does not install: "
                       "run `make llm-runtime` (CI does)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("llm_runtime") and importlib.util.find_spec("llama_cpp") is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run this test: it {LLM_RUNTIME_MISSING}", pytrace=False)
        pytest.skip(LLM_RUNTIME_MISSING)


@pytest.fixture(autouse=True)
def own_recordings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make test` sets RAG_LLM_MODE=replay_only so that nothing replays into a model load; a test
    that records into its own temporary folder tests the recorder's modes itself (a fake backend,
    no model), so that setting is cleared for it."""
    if "tmp_path" in request.fixturenames:
        monkeypatch.delenv("RAG_LLM_MODE", raising=False)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Re-run the executed notebooks (nbval) in the order `make reproduce` runs them, after the tests:
    a notebook reads the results of the ones before it (08's summary reads 10's), and file-name order
    is not that order."""
    from pathlib import Path

    from rag_lib.results.runs import planned_runs

    order = {run.name: i for i, run in enumerate(planned_runs())}

    def key(item: pytest.Item) -> tuple[int, int]:
        path = Path(str(item.path))
        if path.suffix == ".ipynb" and path.parent.name == "notebooks" and path.parent.parent.name == "results":
            return (1, order.get(path.stem, len(order)))
        return (0, 0)

    items.sort(key=key)  # stable: tests keep their order, and each notebook's cells theirs
