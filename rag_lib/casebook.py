"""The casebook's published figures (theirs, not ours), read from ``data/casebook/published.yaml``."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from rag_lib.config import DATA_DIR


@cache
def published() -> dict[str, Any]:
    """The casebook's reference numbers, to print *beside* ours, clearly marked as theirs."""
    with open(DATA_DIR / "casebook" / "published.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)
