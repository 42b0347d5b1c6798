"""Shared test settings."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def own_recordings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make test` sets RAG_LLM_MODE=replay_only so that nothing replays into a model load; a test
    that records into its own temporary folder tests the recorder's modes itself (a fake backend,
    no model), so that setting is cleared for it."""
    if "tmp_path" in request.fixturenames:
        monkeypatch.delenv("RAG_LLM_MODE", raising=False)
