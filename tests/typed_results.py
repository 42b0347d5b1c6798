"""Hand-made typed results for tests: only the fields a test reads, the others ``None``."""

from __future__ import annotations

import dataclasses
from typing import Any

from rag_lib.workbook.results import ExperimentResult


def partial_result(cls: type[ExperimentResult], **given: Any) -> Any:
    """A ``cls`` holding ``given`` and ``None`` elsewhere; a misspelt field fails."""
    names = {f.name for f in dataclasses.fields(cls)}
    assert set(given) <= names, sorted(set(given) - names)
    return cls(**{name: given.get(name) for name in names})
