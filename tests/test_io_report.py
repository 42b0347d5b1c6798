"""Atomic writes and reports whose figures come from results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_lib.core.io import atomic_open, read_jsonl, write_jsonl
from rag_lib.presentation import readme, report


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "chunks.jsonl"
    write_jsonl(target, [{"a": 1}])
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write('{"a": 2}\n{"half')
        raise RuntimeError("interrupted")
    assert read_jsonl(target) == [{"a": 1}]
    assert [p.name for p in tmp_path.iterdir()] == ["chunks.jsonl"]


def test_report_is_rendered_from_the_stored_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    results = {"q7": {"ranks": [52, 36]}, "mrr": 0.123456}
    stored = report.write_experiment("x", results, "C1 {{ q7[\"ranks\"][0] }}, MRR {{ mrr | fmt(\".3f\") }}")
    assert (tmp_path / "x" / "report.md").read_text() == f"C1 52, MRR 0.123\n\n{report.GLOSSARY_LINK}\n"
    assert json.loads((tmp_path / "x" / "results.json").read_text()) == stored
    with pytest.raises(KeyError, match=r"'missing' is undefined; it is not in results\.json"):
        report.write_experiment("y", {"a": 1}, "{{ missing }}")


def test_findings_are_computed_from_the_stored_json_and_kept_there(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    seen: list[dict] = []

    def findings(stored: dict) -> list[str]:
        seen.append(stored)
        return [f"hit@5 is {stored['hit']:.2f} ({type(stored['ranks']).__name__})"]

    stored = report.write_experiment("x", {"hit": 0.5, "ranks": (1, 2)}, "## Findings\n\n{{ findings_text }}",
                                     findings=findings)
    assert seen[0]["ranks"] == [1, 2]  # the JSON as read back (a tuple comes back as a list), not the input
    assert stored["findings"] == ["hit@5 is 0.50 (list)"]
    assert json.loads((tmp_path / "x" / "results.json").read_text())["findings"] == stored["findings"]
    assert (tmp_path / "x" / "report.md").read_text().startswith("## Findings\n\n- hit@5 is 0.50 (list)\n")


def test_markdown_table_escapes_pipes() -> None:
    table = report.markdown_table([{"a": "x|y", "b": 0.5}])
    assert table.splitlines() == ["| a | b |", "| --- | ---: |", "| x\\|y | 0.500 |"]


def test_placeholders_read_as_prose() -> None:
    data = {"ok": True, "none": None, "ids": ["u02", "u04"], "empty": [], "tasks": {"answer": "m"}, "x": 0.8586}
    template = "{{ ok }} {{ none }} {{ ids }} {{ empty }} {{ tasks }} {{ x }}"
    assert report.render(template, data) == "yes — u02, u04 none answer: m 0.8586"


def test_a_metric_name_with_at_sign_is_a_placeholder() -> None:
    # "hit@5" is a key in every results.json; a placeholder naming it must be filled, not left as text.
    data = {"closing": {"zh": {"hit@5": "0.845 → 0.914"}}}
    assert report.render('hit@5 {{ closing["zh"]["hit@5"] }}', data) == "hit@5 0.845 → 0.914"


def test_a_jinja_template_loops_over_the_results_and_fails_on_a_missing_name() -> None:
    data = {"languages": ["zh", "en"], "hit": {"zh": 0.91234, "en": 0.5}, "ok": False}
    template = "{% for lang in languages %}{{ lang }}: {{ hit[lang] | fmt('.3f') }}; {% endfor %}ok {{ ok }}"
    assert report.render(template, data) == "zh: 0.912; en: 0.500; ok no"
    with pytest.raises(KeyError, match=r"not in results\.json"):
        report.render("{{ missing }}", data)


def test_the_results_index_names_each_runs_question_first_finding_and_checks(tmp_path, monkeypatch) -> None:
    from rag_lib.results.runs import NotebookRun
    from rag_lib.runner import expected
    from rag_lib.runner.notebooks import notebook_question

    (tmp_path / "00_corpus").mkdir()
    (tmp_path / "00_corpus" / "results.json").write_text('{"findings": ["32 pages."]}')
    (tmp_path / "expected.yaml").write_text("figures: []\n")
    monkeypatch.setattr(expected, "verdicts", lambda root: [
        expected.Verdict("00_corpus", "pages", 32, 32, "OK"), expected.Verdict("00_corpus", "chunks", 1, 2, "FAIL")])
    checks = expected.check_counts(tmp_path)
    assert checks == {"00_corpus": "1 OK, 0 OKish, 1 FAIL"}
    assert expected.check_counts(tmp_path / "nowhere") == {}  # a scratch copy without expected.yaml
    run = NotebookRun("00_corpus", "00_corpus")
    assert notebook_question(run) == "What exactly does retrieval search over?"
    readme.write_results_index(tmp_path, [run], {}, checks, {"00_corpus": notebook_question(run)})
    index = (tmp_path / "README.md").read_text()
    assert "make check: 1 OK, 0 OKish, 1 FAIL; run time: cold not measured, warm not measured." in index
    assert "No full run has been timed yet." in index
    from rag_lib.results.run_times import record_run_times

    record_run_times(tmp_path, "warm", {"00_corpus": 12.0}, 20.0, 3.0, 0.5)
    readme.write_results_index(tmp_path, [run], {}, checks, {"00_corpus": notebook_question(run)})
    assert "run time: cold not measured, warm 12 s." in (tmp_path / "README.md").read_text()
    assert "  - Question: What exactly does retrieval search over?" in index
    assert "  - Answer: 32 pages." in index
    mechanism = NotebookRun("06_q7_mechanism-hybrid", "06_q7_mechanism", {"mechanism": "hybrid"})
    assert notebook_question(mechanism).startswith("For the mechanism `hybrid`: where do C1–C4 first appear")
    assert readme.one_line("Q7 stays incomplete: 20 / 28 (caveat: one question).") == "Q7 stays incomplete: 20 / 28."
    assert (tmp_path / "notebooks" / "glossary.html").read_text().count("<strong>RRF</strong>") == 1


def test_stored_rows_render_as_a_markdown_table_in_a_template() -> None:
    data = {"rows": [{"model": "a", "hit@5": 0.91234, "note": None}, {"model": "b", "hit@5": 0.5, "note": "x"}]}
    assert report.render('{{ rows | table(["model", "hit@5"], decimals=2) }}', data) == (
        "| model | hit@5 |\n| --- | ---: |\n| a | 0.91 |\n| b | 0.50 |")


def test_a_stored_mapping_renders_as_rows_in_the_order_given() -> None:
    # results.json sorts a mapping's keys: `order` (a stored list) puts the rows back in the order measured
    data = {"gates": {"floor": {"tp": 3}, "abstain": {"tp": 1}}, "gate_order": ["floor", "abstain"]}
    template = '{{ gates | table(["tp"], label="gate", order=gate_order) }}'
    assert report.render(template, data) == "| gate | TP |\n| --- | ---: |\n| floor | 3 |\n| abstain | 1 |"
    assert report.render('{{ gates | table(["tp"], label="gate") }}', data).endswith("| floor | 3 |\n| abstain | 1 |")
    with pytest.raises(KeyError, match="does not name the rows"):
        report.render('{{ gates | table(["tp"], order=["floor"]) }}', data)


def test_layout_names_reach_the_template_but_never_shadow_a_result() -> None:
    data = {"rows": [{"language": "zh", "k=1": "0/2", "k=10": "2/2", "k=2": "1/2"}]}
    columns = ["language", "k=1", "k=2", "k=10"]
    assert report.render("{{ rows | table(columns) }}", data, layout={"columns": columns}).splitlines()[0] == (
        "| language | k=1 | k=2 | k=10 |")
    with pytest.raises(KeyError, match=r"layout names \['rows'\] are also in results.json"):
        report.render("{{ rows | table(rows) }}", data, layout={"rows": columns})
