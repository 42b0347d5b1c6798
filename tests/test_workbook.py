"""A workbook (issue 49, item 4): a named corpus + questions + configurations, checked on load; the generic
diagnosis on it, stored long and derived when rendered; its runs and inputs kept apart from the casebook's."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_lib.core.config import RunConfig
from rag_lib.core.errors import SettingError
from rag_lib.corpus.importer import import_corpus
from rag_lib.corpus.importing.stage import SourceSpec
from rag_lib.pipeline import workbook as workbooks
from rag_lib.presentation import workbook as view

LIMITS = ("Workers on the free plan get 10 ms of CPU time per request. Paid plans raise the limit to 30 s. "
          "Requests that exceed it fail with error 1102.")
SECRETS = "Secrets are encrypted values. Add one with wrangler secret put NAME, then redeploy."
QUESTIONS = """\
corpus: tiny
languages: [en]
questions:
  - {id: p01, type: answerable, en: "What is the CPU limit on the free plan?",
     pieces: [{what: 10 ms, locators: [{page: limits, phrase: "10 ms of CPU time per request"}]}]}
  - {id: p02, type: answerable, en: "How do I add a secret and what is the paid limit?",
     pieces: [{what: secret put, locators: [{page: secrets, phrase: "wrangler secret put NAME"}]},
              {what: 30 s, locators: [{page: limits, phrase: "raise the limit to 30 s"}]}]}
  - {id: p03, type: unanswerable, en: "How much does a Durable Object cost?"}
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> workbooks.Workbook:
    monkeypatch.setattr("rag_lib.core.config.SNAPSHOTS_DIR", tmp_path / "snapshots")
    monkeypatch.setattr(workbooks, "WORKBOOKS_DIR", tmp_path / "workbooks")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.md").write_text(f"# Limits\n\n{LIMITS}\n", encoding="utf-8")
    (docs / "secrets.md").write_text(f"# Secrets\n\n{SECRETS}\n", encoding="utf-8")
    import_corpus(docs, "tiny-docs", SourceSpec("tests", "CC0-1.0"), root=tmp_path / "snapshots", quiet=True)
    folder = tmp_path / "workbooks" / "tiny"
    folder.mkdir(parents=True)
    (folder / "questions.yaml").write_text(QUESTIONS, encoding="utf-8")
    (folder / "workbook.yaml").write_text("title: A tiny corpus\nbatch: tiny-docs\nquestions: questions.yaml\n"
                                          "languages: [en]\nk: 1\nconfigurations: [bm25]\n", encoding="utf-8")
    return workbooks.load_workbook("tiny")


def test_the_diagnosis_runs_on_any_workbook_and_is_derived_from_long_rows(tiny: workbooks.Workbook) -> None:
    from rag_lib.experiments.workbook import run_diagnosis
    from rag_lib.results.workbook import WorkbookDiagnosisResult

    result = run_diagnosis(workbooks.open_workbook(tiny, RunConfig.from_settings()))
    assert WorkbookDiagnosisResult.from_json(result.to_json()) == result  # stored and read back typed
    assert (result.corpus.pages, result.questions.questions, result.questions.answerable) == (2, 3, 2)
    assert {(r.question, tuple(r.ranks)) for r in result.ranks} == {("p01", (1,)), ("p02", (1, 2))}
    assert {(m.question, m.measure, m.value) for m in result.measurements if m.measure == "hit@1"} == {
        ("p01", "hit@1", 1.0), ("p02", "hit@1", 1.0)}
    [summary] = view.summary_rows(result)
    assert summary["every piece in the Top-1"].startswith("1/2 ") and summary["hit@1"].startswith("2/2 ")
    assert [(r.stage, r.questions) for r in view.layer_rows(result)] == [
        ("in_top_k", 1), ("just_outside", 1), ("ranked_deep", 0), ("not_in_corpus", 0)]
    assert view.findings(result)[0].startswith("English questions on A tiny corpus: bm25 puts every gold piece in the "
                                               "Top-1 for 1/2 [")
    report = view.report_markdown(result, view.findings(result))
    assert "| bm25 | en | 1/2 [" in report and "no model (lexical)" in report
    [depth] = view.topk_rows(result, ks=(1, 2))  # p01 complete at 1, p02 at 2
    assert depth["Top-1"].startswith("1/2 ") and depth["Top-2"].startswith("2/2 ")
    # k = 1 over 2 questions: p01 ranks the limits page first, p02 the secrets page
    assert sorted((c.page, c.slots, c.of) for c in result.crowding) == [("limits", 1, 2), ("secrets", 1, 2)]
    assert [r["place"] for r in view.crowding_rows(result, per=5)] == [1, 2]


def test_a_layer_is_its_worst_pieces() -> None:
    assert [view.layer_of(r, 5) for r in ([5], [1, 6], [10], [11], [1, None], [])] == [
        "in_top_k", "just_outside", "just_outside", "ranked_deep", "not_in_corpus", "not_in_corpus"]


def test_a_bad_workbook_names_its_file_field_and_fix(tiny: workbooks.Workbook) -> None:
    path = tiny.folder / "workbook.yaml"
    with pytest.raises(SettingError, match=r"no workbook 'nope' .*the workbooks are \['tiny'\]"):
        workbooks.load_workbook("nope")
    path.write_text(path.read_text(encoding="utf-8").replace("k: 1", "k: 0"), encoding="utf-8")
    with pytest.raises(SettingError, match=r"workbook\.yaml, field 'k': got 0\. Fix: a whole number"):
        workbooks.load_workbook("tiny")
    path.write_text(path.read_text(encoding="utf-8").replace("k: 0", "k: 1\ntop_k: 3"), encoding="utf-8")
    with pytest.raises(SettingError, match=r"field 'top_k': unknown field"):
        workbooks.load_workbook("tiny")


def test_a_workbooks_runs_and_inputs_are_apart_from_the_casebooks() -> None:
    from rag_lib.results.runs import planned_runs
    from rag_lib.runner.inputs import input_files as _input_files

    casebook = planned_runs()
    generic = planned_runs(workbook="python-docs")
    names = ["W1_diagnosis", "W2_compare", "W3_gates", "W4_mechanisms", "W5_answers"]
    assert not set(names) & {r.name for r in casebook}
    assert [(r.name, r.parameters) for r in generic] == [(name, {"workbook": "python-docs"}) for name in names]
    repo = Path(__file__).parent.parent
    mine = {p.relative_to(repo).as_posix() for p in _input_files()}
    assert not any(p.startswith(("data/workbooks/", "data/snapshots/python-docs")) for p in mine)
    theirs = {p.relative_to(repo).as_posix() for p in _input_files(workbooks.load_workbook("python-docs"))}
    assert "data/workbooks/python-docs/questions.yaml" in theirs
    assert not any(p.startswith(("data/benchmark/", "data/snapshots/cloudflare")) for p in theirs)


def test_newcombes_interval_matches_the_published_example() -> None:
    """Newcombe (1998), method 10: 56/70 − 48/80 = 0.200, 95% interval 0.0524 to 0.3339."""
    from rag_lib.presentation.compare import newcombe
    from rag_lib.results.compare import LayerCount

    diff, low, high = newcombe(LayerCount("a", "x", "en", "in_top_k", 56, 70),
                               LayerCount("b", "x", "en", "in_top_k", 48, 80), 1.959964)
    assert (round(diff, 4), round(low, 4), round(high, 4)) == (0.2, 0.0524, 0.3339)


def test_two_workbooks_compared_with_adjusted_intervals() -> None:
    from rag_lib.presentation import compare
    from rag_lib.results.compare import LayerCount, WorkbookComparisonResult

    def counts(workbook: str, lang: str, top: int, of: int) -> list[LayerCount]:
        return [LayerCount(workbook, "dense", lang, layer, n, of)
                for layer, n in zip(view.LAYERS, (top, of - top, 0, 0), strict=True)]

    result = WorkbookComparisonResult(["py", "cf"], {"py": "Python docs", "cf": "Cloudflare docs"}, 5,
                                      counts("py", "en", 20, 40) + counts("cf", "en", 52, 58)
                                      + counts("py", "zh", 30, 40) + counts("cf", "zh", 45, 58))
    rows = {r["language"]: r for r in compare.difference_rows(result)}
    assert rows["en"]["py − cf"] == "-0.397" and rows["en"]["differs"] and not rows["zh"]["differs"]
    low, high = (float(x) for x in rows["en"]["adjusted 95% interval"].strip("[]").split(", "))
    wider = compare.newcombe(result.counts[0], result.counts[4], 1.959964)  # unadjusted: narrower
    assert low < wider[1] and high > wider[2]
    found = compare.findings(result)
    assert found[0].startswith("dense, English questions: every gold piece reaches the Top-5 less often on Python "
                               "docs (20/40 [") and "Bonferroni over 2 differences" in found[0]
    assert "about as often (the interval includes 0) on Python docs (30/40 [" in found[1]
    assert " as on Cloudflare docs (45/58 [" in found[1]


def test_a_blind_second_pass_is_compared_with_the_labels(tiny: workbooks.Workbook, tmp_path: Path) -> None:
    import json

    import yaml

    from rag_lib.evaluation.blind_labels import blind_agreement

    bench = workbooks.open_workbook(tiny, RunConfig.from_settings()).benchmark
    [limits] = [c for c in bench["p01"].pieces[0]]
    [secrets] = [c for c in bench["p02"].pieces[0]]
    folder = tmp_path / "blind_review"
    folder.mkdir()
    (folder / "ids.json").write_text(json.dumps({"b1": "p02", "b2": "p01", "b3": "p03"}), encoding="utf-8")
    (folder / "reader_b.yaml").write_text(yaml.safe_dump({"questions": [
        {"id": "b1", "type": "answerable", "pieces": [{"what": "secret put", "chunks": [secrets]}]},  # misses C2
        {"id": "b2", "type": "answerable", "pieces": [{"what": "10 ms", "chunks": [limits]}]},
        {"id": "b3", "type": "answerable", "pieces": [{"what": "?", "chunks": []}]},  # the labels: unanswerable
    ]}), encoding="utf-8")
    agreement = blind_agreement(bench, folder)
    assert (agreement.questions, agreement.same_type, agreement.both_answerable, agreement.every_piece_found) == (
        3, 2, 2, 1)
    assert (agreement.gold_chunks, agreement.gold_chunks_marked) == (3, 2)  # p01: 1, p02: 2 (secrets + limits)
    assert agreement.disagreements == ["p02: piece C2 not found by the second labeller",
                                       "p03: unanswerable / answerable"]
