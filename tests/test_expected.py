"""The OK / OKish / FAIL comparison of expected figures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typed_results import blank, partial_result

from rag_lib.core.errors import WorkbookError
from rag_lib.results.corpus import CasebookCorpus, CorpusResult
from rag_lib.results.q5 import Q5Result
from rag_lib.results.runs import Experiment
from rag_lib.results.store import result_type
from rag_lib.runner.expected import check_expected, freeze, verdicts


def _declare(monkeypatch: pytest.MonkeyPatch, *experiments: Experiment) -> None:
    monkeypatch.setattr("rag_lib.runner.expected.declared_experiments", lambda: experiments)
    monkeypatch.setattr("rag_lib.results.runs.declared_experiments", lambda: experiments)


def test_ok_okish_fail_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    casebook = dataclasses.replace(blank(CasebookCorpus), median_chars=0.52)
    corpus = partial_result(CorpusResult, pages=10, median_chars=0.52, batch="x", casebook=casebook)
    (tmp_path / "00_corpus").mkdir()
    (tmp_path / "00_corpus" / "results.json").write_text(json.dumps(corpus.to_json()))
    _declare(monkeypatch,
             Experiment("00_corpus", CorpusResult, checked={"pages": 0, "casebook.median_chars": 0.05,
                                                            "median_chars": 0.05, "batch": 0, "nope": 0,
                                                            "not_recorded": 0}),
             Experiment("02_q5_success", Q5Result, checked={"k": 0}))
    (tmp_path / "expected.yaml").write_text(
        "figures:\n"
        "- {experiment: 00_corpus, path: pages, value: 10}\n"
        "- {experiment: 00_corpus, path: casebook.median_chars, value: 0.50}\n"
        "- {experiment: 00_corpus, path: median_chars, value: 0.40}\n"
        "- {experiment: 00_corpus, path: batch, value: y}\n"
        "- {experiment: 00_corpus, path: nope, value: 1}\n"
        "- {experiment: 02_q5_success, path: k, value: 1}\n"
        "- {experiment: 00_corpus, path: no_longer_declared, value: 1}\n"  # ignored: nothing declares it
    )
    assert [v.status for v in verdicts(tmp_path)] == ["OK", "OKish", "FAIL", "FAIL", "FAIL", "FAIL", "FAIL"]
    assert [repr(v.actual) for v in verdicts(tmp_path)][4:] == ["<missing>", "<missing>", "<no results.json>"]
    assert repr(verdicts(tmp_path)[5].expected).startswith("<not recorded in expected.yaml")
    assert check_expected(tmp_path) == 5
    with pytest.raises(ValueError, match="cannot freeze 00_corpus:nope"):
        freeze(tmp_path)
    _declare(monkeypatch, Experiment("00_corpus", CorpusResult, checked={
        "pages": 0, "casebook.median_chars": 0.05, "median_chars": 0.05, "batch": 0}))
    freeze(tmp_path)
    assert [v.status for v in verdicts(tmp_path)] == ["OK", "OK", "OK", "OK"]
    assert "no_longer_declared" not in (tmp_path / "expected.yaml").read_text()


def test_figures_are_read_through_the_runs_declared_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A results.json another version of the experiment wrote fails every figure, saying why; a run
    no experiment declares is an error, not a FAIL."""
    (tmp_path / "00_corpus").mkdir()
    (tmp_path / "00_corpus" / "results.json").write_text(json.dumps({"pages": 10}))
    (tmp_path / "expected.yaml").write_text("figures:\n- {experiment: 00_corpus, path: pages, value: 10}\n")
    _declare(monkeypatch, Experiment("00_corpus", CorpusResult, checked={"pages": 0}))
    [verdict] = verdicts(tmp_path)
    assert verdict.status == "FAIL"
    assert repr(verdict.actual).startswith("<not a CorpusResult: results of 00_corpus lack")
    with pytest.raises(WorkbookError, match="no experiment declares a run '99_gone'; the declared runs are 00_corpus"):
        result_type("99_gone")


def test_every_committed_figure_is_declared_and_every_declared_figure_recorded() -> None:
    from rag_lib.core.config import RESULTS_DIR
    from rag_lib.runner.expected import checked_figures, load_expected

    recorded = load_expected(RESULTS_DIR)
    declared = {(run, path) for run, path, _ in checked_figures()}
    assert declared == set(recorded) and len(declared) >= 80


def test_a_selector_names_the_row_by_its_condition() -> None:
    from rag_lib.presentation.report import lookup

    rows = {"rows": [{"model": "a", "lang": "zh", "hit": 0.5}, {"model": "a", "lang": "en", "hit": 0.9},
                     {"model": "b.v1.5", "lang": "zh", "hit": 0.1}]}
    assert lookup(rows, "rows[model=a,lang=en].hit") == 0.9
    assert lookup(rows, "rows[model=b.v1.5].hit") == 0.1  # a dot inside the brackets is part of the value
    with pytest.raises(KeyError, match=r"\[model=a\] matches 2 rows"):
        lookup(rows, "rows[model=a].hit")
    with pytest.raises(KeyError, match=r"\[model=c\] matches 0 rows"):
        lookup(rows, "rows[model=c].hit")
    with pytest.raises(KeyError, match="field=value pairs"):
        lookup(rows, "rows[a].hit")


def test_committed_expected_figures_name_conditions_not_list_positions() -> None:
    """A path that indexes a list by position silently checks another condition when rows are added."""
    import yaml

    from rag_lib.core.config import RESULTS_DIR
    from rag_lib.presentation.report import lookup, path_parts

    figures = yaml.safe_load((RESULTS_DIR / "expected.yaml").read_text(encoding="utf-8"))["figures"]
    positional = []
    for figure in figures:
        results = json.loads((RESULTS_DIR / figure["experiment"] / "results.json").read_text(encoding="utf-8"))
        parts = path_parts(figure["path"])
        for i, part in enumerate(parts):
            if part.isdigit() and isinstance(lookup(results, ".".join(parts[:i])) if i else results, list):
                positional.append(f"{figure['experiment']}:{figure['path']}")
    assert positional == []
