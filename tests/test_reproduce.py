"""The runner: fingerprints that decide whether a notebook is up to date, and volatile-field stripping."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from rag_lib.results.runs import Experiment, NotebookRun
from rag_lib.runner.execution import strip_volatile
from rag_lib.runner.reproduce import fingerprint


def test_fingerprint_follows_inputs_parameters_and_earlier_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    code = tmp_path / "code.py"
    code.write_text("x = 1\n")
    first, second = NotebookRun("00_a", "00_corpus"), NotebookRun("01_b", "00_corpus", {"k": 5})
    base = fingerprint(second, [first], [code])
    assert base == fingerprint(second, [first], [code])
    assert base != fingerprint(NotebookRun("01_b", "00_corpus", {"k": 6}), [first], [code])
    (tmp_path / "00_a").mkdir()
    (tmp_path / "00_a" / "results.json").write_text("{}")
    with_result = fingerprint(second, [first], [code])
    assert with_result != base, "a result of an earlier run is an input"
    code.write_text("x = 2\n")
    assert fingerprint(second, [first], [code]) != with_result


def test_strip_volatile_numbers_cells_and_widgets() -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.metadata["papermill"] = {"duration": 1.5}
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "f00", "version_major": 2}})]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
    nb.metadata["papermill"] = {"start_time": "now", "parameters": {"k": 5}}
    out = strip_volatile(nb)
    assert [c["id"] for c in out.cells] == ["cell-00", "cell-01"]
    assert out.metadata["papermill"] == {"parameters": {"k": 5}}
    assert "papermill" not in out.cells[1].metadata
    assert out.cells[1].outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == "widget-1"


def test_a_misspelt_parameter_stops_reproduce_before_any_notebook_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_lib.core.errors import WorkbookError
    from rag_lib.runner import reproduce

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(reproduce, "planned_runs", lambda **_: [
        NotebookRun("08_summary", "08_summary"), NotebookRun("09_explore", "09_explore", {"lang_": "en"})])
    executed: list[str] = []
    monkeypatch.setattr(reproduce, "execute", lambda run, out_dir, timeout: executed.append(run.name))
    with pytest.raises(WorkbookError, match=r"run 09_explore gives parameter\(s\) \['lang_'\]"):
        reproduce.run_all(force=True, quiet=True)
    assert executed == []  # not even the run before it


def test_a_rendered_page_is_titled_by_the_notebook_s_first_heading() -> None:
    import nbformat

    from rag_lib.runner.execution import notebook_title

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_markdown_cell("Intro\n# 05 · Q7 diagnosis\n## More")])
    assert notebook_title(nb, "05_q7_diagnosis") == "05 · Q7 diagnosis"
    assert notebook_title(nbformat.v4.new_notebook(), "05_q7_diagnosis") == "05_q7_diagnosis"


def _declare(monkeypatch: pytest.MonkeyPatch, *experiments: Experiment) -> None:
    monkeypatch.setattr("rag_lib.results.runs.declared_experiments", lambda: experiments)


def test_runs_execute_after_what_they_read_and_only_declared_reads_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_lib.results.runs import planned_runs, reads_of

    _declare(monkeypatch,
             Experiment("08_summary", None, reads=("01_embedding_bakeoff", "06_q7_mechanism")),
             Experiment("01_embedding_bakeoff", None),
             Experiment("06_q7_mechanism", None, reads=("01_embedding_bakeoff",), varies=("mechanism", ("x", "y"))),
             Experiment("02_q5_success", None))
    planned = planned_runs()
    assert [r.name for r in planned] == ["01_embedding_bakeoff", "06_q7_mechanism-x", "06_q7_mechanism-y",
                                         "08_summary", "02_q5_success"]
    assert planned[1].parameters == {"mechanism": "x"}
    summary = planned[3]
    assert [r.name for r in reads_of(summary, planned)] == [  # a notebook: all its runs
        "01_embedding_bakeoff", "06_q7_mechanism-x", "06_q7_mechanism-y"]
    # Touching 01's results re-runs 01's dependents, not 02 (its fingerprint reads only what it declares).
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    before = {r.name: fingerprint(r, reads_of(r, planned), []) for r in planned}
    (tmp_path / "01_embedding_bakeoff").mkdir()
    (tmp_path / "01_embedding_bakeoff" / "results.json").write_text("{}")
    after = {r.name: fingerprint(r, reads_of(r, planned), []) for r in planned}
    assert sorted(name for name in before if before[name] != after[name]) == [
        "06_q7_mechanism-x", "06_q7_mechanism-y", "08_summary"]


def test_a_read_that_is_not_declared_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.core.errors import WorkbookError
    from rag_lib.results.runs import RUN_ENV, check_declared_read, planned_runs
    from rag_lib.results.store import find_result

    _declare(monkeypatch, Experiment("01_embedding_bakeoff", None),
             Experiment("06_q7_mechanism", None, reads=("01_embedding_bakeoff",), varies=("mechanism", ("x",))),
             Experiment("02_q5_success", None))
    monkeypatch.setenv(RUN_ENV, "06_q7_mechanism-x")
    check_declared_read("01_embedding_bakeoff")  # declared
    check_declared_read("06_q7_mechanism-x")  # its own
    with pytest.raises(WorkbookError, match="06_q7_mechanism-x reads the results of 02_q5_success, which it does not "
                                            "declare: add 02_q5_success's declaration to the reads of 06_q7_mechanism"):
        find_result("02_q5_success")
    monkeypatch.delenv(RUN_ENV)
    find_result("02_q5_success")  # outside make reproduce (ask, make check, a notebook in JupyterLab): no check
    _declare(monkeypatch, Experiment("01_embedding_bakeoff", None, reads=("02_x",)))
    with pytest.raises(WorkbookError, match=r"01_embedding_bakeoff declares reads \['02_x'\], which name no declared"):
        planned_runs()
    _declare(monkeypatch, Experiment("01_embedding_bakeoff", None, reads=("02_q5_success",)),
             Experiment("02_q5_success", None, reads=("01_embedding_bakeoff",)))
    with pytest.raises(WorkbookError, match="go in a circle"):
        planned_runs()
    _declare(monkeypatch, Experiment("99_nowhere", None))
    with pytest.raises(WorkbookError, match=r"99_nowhere is declared but .*99_nowhere\.py does not exist"):
        planned_runs()


def test_every_declared_run_and_read_is_consistent() -> None:
    from rag_lib.results.runs import planned_runs, reads_of

    planned = planned_runs()  # raises on an unknown read or a circle
    position = {r.name: i for i, r in enumerate(planned)}
    assert all(position[o.name] < position[r.name] for r in planned for o in reads_of(r, planned))
    assert {o.name for o in reads_of(next(r for r in planned if r.name == "08_summary"), planned)} >= {
        "01_embedding_bakeoff", "10_local_llm", "06_q7_mechanism-hybrid"}


def test_a_runs_code_input_is_the_import_closure_of_its_notebook() -> None:
    """Editing one experiment's module re-runs the runs that reach it, not every notebook."""
    from rag_lib.core.config import PACKAGE_DIR
    from rag_lib.results.runs import planned_runs
    from rag_lib.runner.closure import closure

    runs = {r.name: r for r in planned_runs()}
    reach = {name: {p.relative_to(PACKAGE_DIR).as_posix() for p in closure([runs[name].source])}
             for name in ("01_embedding_bakeoff", "13_ann", "06_q7_mechanism-hybrid")}
    assert "experiments/ann.py" in reach["13_ann"] and "experiments/ann.py" not in reach["01_embedding_bakeoff"]
    assert "experiments/bakeoff.py" in reach["01_embedding_bakeoff"] and "experiments/bakeoff.py" not in reach["13_ann"]
    for files in reach.values():  # what every run imports, and the __init__ of each package on the way
        assert {"__init__.py", "core/__init__.py", "core/config.py"} <= files
    # a backend the lazy registry names as "rag_lib.embedding.e5_fast_backend:E5FastEmbedder" is reached
    assert "embedding/e5_fast_backend.py" in reach["01_embedding_bakeoff"]
    # the mechanism catalog imports all its modules itself: every one is reached
    catalog_dir = PACKAGE_DIR / "experiments/mechanisms/catalog"
    catalog = {p.relative_to(PACKAGE_DIR).as_posix() for p in catalog_dir.glob("*.py")}
    assert catalog <= reach["06_q7_mechanism-hybrid"]


def test_no_library_code_names_a_run_outside_its_declaration() -> None:
    """A run is named through its declaration (``EXPERIMENT.name``), so renaming or adding one touches only it;
    docstrings may mention runs, and the declarations themselves name their notebooks."""
    import ast
    import re

    from rag_lib.core.config import PACKAGE_DIR
    from rag_lib.results.runs import declared_experiments

    names = sorted(e.notebook for e in declared_experiments())
    assert len(names) >= 15
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?!\w)")
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed: set[int] = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant):
                allowed.add(id(body[0].value))  # a docstring
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPERIMENT"
                                                    for t in node.targets):
                allowed.update(id(sub) for sub in ast.walk(node))
        found += [f"{path.relative_to(PACKAGE_DIR)}:{node.lineno}: {node.value[:60]!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in allowed
                  and pattern.search(node.value)]
    assert found == []
