"""Typed results: the JSON codec on hand-made types, every committed results.json read back as its declared
type, and no field typed with ``Any`` (issue 30)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pytest

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.runs import declared_experiments, planned_runs
from rag_lib.results.store import MissingResult, result_type
from rag_lib.results.typed_json import ShapeError, decode, encode, json_key, optional_key, untyped_fields

RESULTS = Path(__file__).resolve().parents[1] / "results"

RESULT_TYPES = {e.notebook: e.result for e in declared_experiments() if e.result is not None}


@dataclass(frozen=True)
class _Cell:
    name: str
    rank: int | None
    score: float


@dataclass(frozen=True)
class _Row:
    label: str
    cells: list[_Cell]
    interval: tuple[float, float]
    by_lang: dict[str, int]
    top: int = field(metadata=json_key("in top 10"))


def test_a_typed_row_round_trips_through_json_under_its_declared_keys() -> None:
    row = _Row("a", [_Cell("C1", None, 0.5), _Cell("C2", 3, 1)], (0.25, 0.75), {"zh": 2}, top=4)
    stored = json.loads(json.dumps(encode(row)))
    assert stored == {"label": "a", "cells": [{"name": "C1", "rank": None, "score": 0.5},
                                              {"name": "C2", "rank": 3, "score": 1}],
                      "interval": [0.25, 0.75], "by_lang": {"zh": 2}, "in top 10": 4}
    assert decode(_Row, stored) == row


@dataclass(frozen=True)
class _Sparse:
    name: str
    failures: dict[str, int] = field(default_factory=dict, metadata=optional_key())
    model: str | None = field(default=None, metadata=optional_key("LLM model"))


def test_an_optional_key_is_stored_only_when_it_says_something_and_reads_back_as_its_default() -> None:
    assert encode(_Sparse("a")) == {"name": "a"} and decode(_Sparse, {"name": "a"}) == _Sparse("a")
    full = _Sparse("b", {"zh": 2}, "m")
    assert encode(full) == {"name": "b", "failures": {"zh": 2}, "LLM model": "m"}
    assert decode(_Sparse, encode(full)) == full
    with pytest.raises(ShapeError, match=r"^_Sparse: lacks name$"):
        decode(_Sparse, {"failures": {}})


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("in top 10"), r"^_Row: lacks in top 10$"),
    (lambda d: d.update(extra=1), r"has extra, which _Row does not declare"),
    (lambda d: d["cells"][1].update(rank="3"), r"cells\[1\]\.rank: .*'3'.*int"),
    (lambda d: d["by_lang"].update(en=True), r"by_lang\.en: True where an int is declared"),
    (lambda d: d.update(interval=[0.1]), r"interval: 1 values where 2 are declared"),
])
def test_a_stored_value_of_another_shape_is_named_by_its_path(change: Any, message: str) -> None:
    stored = encode(_Row("a", [_Cell("C1", None, 0.5), _Cell("C2", 3, 1.0)], (0.25, 0.75), {"zh": 2}, top=4))
    change(stored)
    with pytest.raises(ShapeError, match=message):
        decode(_Row, stored)


def test_every_committed_result_reads_back_typed_and_stores_the_same_json() -> None:
    for run in planned_runs():
        if run.notebook not in RESULT_TYPES:
            continue
        stored = json.loads((RESULTS / run.name / "results.json").read_text(encoding="utf-8"))
        typed = result_type(run.name).from_json(stored, run.name)
        again = json.loads(json.dumps(typed.to_json()))
        assert again == {k: v for k, v in stored.items() if k in again}, run.name


def test_a_result_of_another_shape_fails_naming_the_run_and_the_path() -> None:
    stored = json.loads((RESULTS / "05_q7_diagnosis" / "results.json").read_text(encoding="utf-8"))
    stored["cases"]["original"]["zh"]["piece_ranks"]["C1"] = "twenty"
    with pytest.raises(MissingResult, match=r"05_q7_diagnosis .*cases\.original\.zh\.piece_ranks\.C1.*re-run"):
        Q7DiagnosisResult.from_json(stored, "05_q7_diagnosis")


def test_no_result_field_is_typed_with_any() -> None:
    # Issue 30: every field of every result type, and of the dataclasses it holds, has a declared shape
    # (a row whose columns are named by data is dict[str, Scalar], never Any).
    seen: set[type] = set()
    assert [name for cls in RESULT_TYPES.values() for name in untyped_fields(cls, seen)] == []


def _reachable_result_classes() -> set[type]:
    seen: set[type] = set()
    for cls in RESULT_TYPES.values():
        untyped_fields(cls, seen)  # walks every dataclass a result holds
    return seen


def test_every_row_with_a_column_per_piece_declares_exactly_q7s_pieces_and_reads_them_through_one_mixin() -> None:
    reachable = _reachable_result_classes()
    piece_rows = {cls for cls in reachable if any(re.fullmatch(r"[Cc]\d+", f.name) for f in fields(cls))}
    assert len(piece_rows) >= 8, sorted(c.__name__ for c in piece_rows)  # the bake-off's, 06's, 11's, 12's, 13's, 08's
    for cls in piece_rows:
        assert issubclass(cls, PieceColumns), cls.__name__
        assert [f.name for f in fields(cls) if re.fullmatch(r"[Cc]\d+", f.name)] == list(Q7_PIECES), cls.__name__
    assert {cls for cls in reachable if issubclass(cls, PieceColumns)} == piece_rows


@dataclass(frozen=True)
class _PieceRow(PieceColumns[int | None]):
    label: str
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None


def test_piece_columns_read_a_row_by_piece_name() -> None:
    row = _PieceRow("a", 3, None, 1, 20)
    assert row.rank("C2") is None and row.rank("C4") == 20
    assert row.ranks == (3, None, 1, 20)
    assert row.by_piece() == {"C1": 3, "C2": None, "C3": 1, "C4": 20}
    with pytest.raises(KeyError, match="'label' is not one of Q7's pieces"):
        row.rank("label")
