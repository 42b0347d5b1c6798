"""The seeds' published figures (theirs, not ours): the casebook's ``data/casebook/published.yaml``
and Halo's ``data/casebook/halo.yaml``."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from rag_lib.core.config import DATA_DIR


def _read(name: str) -> dict[str, Any]:
    with open(DATA_DIR / "casebook" / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@cache
def published() -> dict[str, Any]:
    """The casebook's reference numbers, to print *beside* ours, clearly marked as theirs."""
    return _read("published.yaml")


@cache
def halo() -> dict[str, Any]:
    """Halo's claims (the second seed), quoted, to print beside ours, clearly marked as theirs."""
    return _read("halo.yaml")
