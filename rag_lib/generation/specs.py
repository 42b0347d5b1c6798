"""Per-backend defaults, read from ``models.yaml`` (data, not code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

MODELS_YAML = Path(__file__).resolve().parent / "models.yaml"


@cache
def backend_defaults(name: str) -> dict[str, Any]:
    """The ``models.yaml`` section of one backend (``openai``, ``llama_cpp``, ``extractive``)."""
    with open(MODELS_YAML, encoding="utf-8") as fh:
        return dict(yaml.safe_load(fh)[name])
