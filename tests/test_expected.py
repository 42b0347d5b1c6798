"""The OK / OKish / FAIL comparison of expected figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_lib.expected import check_expected, freeze, verdicts


def test_ok_okish_fail_and_missing(tmp_path: Path) -> None:
    (tmp_path / "e1").mkdir()
    (tmp_path / "e1" / "results.json").write_text(json.dumps({"a": 10, "b": {"c": 0.52}, "d": "x"}))
    (tmp_path / "expected.yaml").write_text(
        "figures:\n"
        "- {experiment: e1, path: a, value: 10, tolerance: 0}\n"
        "- {experiment: e1, path: b.c, value: 0.50, tolerance: 0.05}\n"
        "- {experiment: e1, path: b.c, value: 0.40, tolerance: 0.05}\n"
        "- {experiment: e1, path: d, value: y}\n"
        "- {experiment: e1, path: nope, value: 1}\n"
        "- {experiment: e2, path: a, value: 1}\n"
    )
    assert [v.status for v in verdicts(tmp_path)] == ["OK", "OKish", "FAIL", "FAIL", "FAIL", "FAIL"]
    assert check_expected(tmp_path) == 4
    with pytest.raises(ValueError, match="cannot freeze e1:nope"):
        freeze(tmp_path)
    lines = (tmp_path / "expected.yaml").read_text().splitlines()
    (tmp_path / "expected.yaml").write_text("\n".join(lines[:5]) + "\n")
    freeze(tmp_path)
    assert [v.status for v in verdicts(tmp_path)] == ["OK", "OK", "OK", "OK"]
