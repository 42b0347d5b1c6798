"""Per-backend defaults and local models, read from ``models.yaml`` (data, not code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

MODELS_YAML = Path(__file__).resolve().parent / "models.yaml"


@cache
def models_yaml() -> dict[str, Any]:
    """The parsed ``models.yaml``."""
    with open(MODELS_YAML, encoding="utf-8") as fh:
        return dict(yaml.safe_load(fh))


def backend_defaults(name: str) -> dict[str, Any]:
    """The ``models.yaml`` section of one backend (``openai``, ``llama_cpp``, ``extractive``)."""
    return dict(models_yaml()[name])
