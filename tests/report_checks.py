"""Shared checks for experiment outputs: every number a report.md states must be in its results.json."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rag_lib.core.config import RESULTS_DIR

NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def load_results(name: str) -> tuple[dict[str, Any], str]:
    """``results/<name>/results.json`` (parsed) and ``report.md``; skip when not generated yet."""
    folder = RESULTS_DIR / name
    if not (folder / "results.json").is_file():
        pytest.skip(f"{folder}/results.json not generated yet: run `python -m rag_lib.runner.reproduce {name}`")
    return json.loads((folder / "results.json").read_text()), (folder / "report.md").read_text()


def numbers_in(node: Any) -> set[str]:
    """Every number in the JSON, as written and in the formats a report uses (also inside strings)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            out |= numbers_in(key) | numbers_in(value)
    elif isinstance(node, list):
        for value in node:
            out |= numbers_in(value)
    elif isinstance(node, bool) or node is None:
        pass
    elif isinstance(node, int | float):
        out |= {str(node), f"{node:.3f}", f"{node:.2f}", f"{node:.0f}", f"{node:+.3f}", f"{node:,}"}
    elif isinstance(node, str):
        out |= set(NUMBER.findall(node))
    return out


def report_numbers_not_in_json(results: dict[str, Any], report: str, allowed: frozenset[str] = frozenset()) -> set[str]:
    """Numbers stated in report.md (the title line, which carries the notebook number, aside) that
    results.json does not hold."""
    body = report.split("\n", 1)[1]
    return set(NUMBER.findall(body)) - numbers_in(results) - set(allowed)
