"""The formats out and in (issue 49, item 5): BEIR and TREC files that ranx scores as the workbook does, someone
else's run diagnosed against the workbook's gold, Ragas and RAGChecker inputs that match their schemas."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from rag_lib.core.errors import WorkbookError
from rag_lib.evaluation.metrics import HitAt, NDCGAt, diagnose
from rag_lib.evaluation.your_questions import read_qrels
from rag_lib.exchange.beir import write_beir
from rag_lib.exchange.diagnosis import LAYERS, diagnose_run, layer_shares, unranked
from rag_lib.exchange.trec import RunFileError, read_run, write_run
from rag_lib.pipeline.workbench import Workbench

SCHEMAS = Path(__file__).parent / "schemas"


@pytest.fixture(scope="module")
def wb() -> Workbench:
    return Workbench()


def _ranx_means(qrels_path: Path, run_path: Path) -> dict[str, float]:
    import ranx

    qrels = read_qrels(qrels_path)
    run = {q: docs for q, docs in ranx.Run.from_file(str(run_path), kind="trec").to_dict().items() if q in qrels}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        means = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["hit_rate@5", "ndcg@10"])
    return {name: float(value) for name, value in means.items()}


@pytest.mark.parametrize(("lang", "retriever", "scores"), [("en", "bm25", "rank"), ("zh", "dense", "rank"),
                                                           ("en", "dense", "retriever")])
def test_exported_beir_and_trec_give_the_workbooks_own_hit_and_ndcg_in_ranx(
    wb: Workbench, tmp_path: Path, lang: str, retriever: str, scores: str
) -> None:
    questions = wb.benchmark.questions()
    files = write_beir(tmp_path / "beir", wb.chunks, questions, lang)
    rankings = wb.run(retriever, questions, lang)
    write_run(tmp_path / "run.trec", rankings, "x", depth=100, scores=scores)  # type: ignore[arg-type]
    ours = wb.evaluate(rankings, (HitAt(5), NDCGAt(10))).mean(skipna=True)
    theirs = _ranx_means(files.qrels, tmp_path / "run.trec")
    assert theirs["hit_rate@5"] == ours["hit@5"] and math.isclose(theirs["ndcg@10"], ours["ndcg@10"], abs_tol=1e-12)
    # the same figures notebook 01 stored (rounded there to 4 places)
    stored = json.loads((Path("results") / "01_embedding_bakeoff" / "results.json").read_text(encoding="utf-8"))
    label = wb.resolve(retriever).label
    [row] = [r for r in stored["summary_rows"] if r["configuration"] == label and r["language"] == lang]
    assert (round(theirs["hit_rate@5"], 4), round(theirs["ndcg@10"], 4)) == (row["hit@5"], row["ndcg@10"])
    corpus = [json.loads(line) for line in files.corpus.read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in files.queries.read_text(encoding="utf-8").splitlines()]
    assert len(corpus) == len(wb.embeddable) and {"_id", "title", "text"} <= corpus[0].keys()
    assert len(queries) == len(questions) and queries[0]["text"] == questions[0].text(lang)


def test_a_run_made_by_bm25s_outside_the_pipeline_gets_its_layer_diagnosis(wb: Workbench, tmp_path: Path) -> None:
    """bm25s ranks the exported corpus directly; its TREC file (written here, not by the workbook) is read
    back and every answerable question gets a layer; the workbook's own run diagnoses as its ranking does."""
    import bm25s

    questions = wb.benchmark.questions()
    files = write_beir(tmp_path / "beir", wb.chunks, questions, "en")
    corpus = [json.loads(line) for line in files.corpus.read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in files.queries.read_text(encoding="utf-8").splitlines()]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([f"{d['title']} {d['text']}" for d in corpus], stopwords="en", show_progress=False),
                    show_progress=False)
    found, scores = retriever.retrieve(bm25s.tokenize([q["text"] for q in queries], stopwords="en",
                                                      show_progress=False), k=50, show_progress=False)
    lines = [f"{q['_id']} Q0 {corpus[d]['_id']} {r + 1} {s:.4f} bm25s"
             for q, docs, ss in zip(queries, found, scores, strict=True) for r, (d, s) in enumerate(zip(docs, ss,
                                                                                                         strict=True))]
    (tmp_path / "bm25s.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = read_run(tmp_path / "bm25s.trec")
    documents = {c.id for c in wb.embeddable}
    rows = diagnose_run(run, questions, 5, documents)
    answerable = [q.id for q in questions if q.answerable]
    assert [r.question for r in rows] == answerable and unranked(run, questions) == []
    assert {r.layer for r in rows} <= set(LAYERS) and len({r.layer for r in rows}) >= 2
    assert sum(s.count for s in layer_shares(rows)) == len(rows)
    # the workbook's own dense run, exported and read back, is diagnosed as its full ranking is
    rankings = wb.run("dense", questions, "en")
    write_run(tmp_path / "dense.trec", rankings, "dense", depth=100)
    mine = {r.question: r for r in diagnose_run(read_run(tmp_path / "dense.trec"), questions, 5, documents)}
    for q in questions:
        if q.answerable:
            expected = diagnose(q.pieces, rankings[q.id], 5)
            assert mine[q.id].layer == expected.layer.value, q.id
            assert mine[q.id].piece_ranks == tuple(r if r is not None and r <= 100 else None
                                                   for r in expected.piece_ranks), q.id


def test_a_shallow_run_says_beyond_depth_instead_of_guessing(wb: Workbench, tmp_path: Path) -> None:
    questions = wb.benchmark.questions()
    q7 = wb.benchmark.by_casebook("Q7")
    write_run(tmp_path / "shallow.trec", {q7.id: wb.rank(q7.text("zh"))}, "d", depth=8)
    [row] = diagnose_run(read_run(tmp_path / "shallow.trec"), questions, 5, {c.id for c in wb.embeddable})
    assert row.layer == "beyond_depth" and None in row.piece_ranks  # Q7's pieces rank past 8


@pytest.mark.parametrize(("text", "message"), [
    ("q05 Q0 a 1 0.5\n", r"bad\.trec, line 1: 5 fields"),
    ("q05 Q0 a 1 0.5 t\n\nq05 Q0 b one 0.4 t\n", r"line 3: rank 'one' and score '0.4'"),
    ("q05 Q0 a 1 0.5 t\nq05 Q0 a 2 0.4 t\n", r"line 2: document a is listed twice for query q05"),
    ("q05 Q0 a 1 0.5 t\nq06 Q0 a 1 0.5 u\n", r"mixes run tags \['t', 'u'\]"),
    ("\n", r"holds no run lines"),
])
def test_a_bad_run_file_is_refused_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.trec").write_text(text, encoding="utf-8")
    with pytest.raises(RunFileError, match=message):
        read_run(tmp_path / "bad.trec")


def test_a_run_over_another_corpus_or_other_queries_is_refused(wb: Workbench, tmp_path: Path) -> None:
    questions = wb.benchmark.questions()
    (tmp_path / "other.trec").write_text("q05 Q0 doc-of-another-corpus 1 1.0 x\n", encoding="utf-8")
    with pytest.raises(WorkbookError, match="1 documents that are not chunks of this corpus"):
        diagnose_run(read_run(tmp_path / "other.trec"), questions, 5, {c.id for c in wb.embeddable})
    (tmp_path / "queries.trec").write_text("nq-17 Q0 x 1 1.0 x\n", encoding="utf-8")
    with pytest.raises(WorkbookError, match=r"ranks queries \['nq-17'\] that are not questions"):
        diagnose_run(read_run(tmp_path / "queries.trec"), questions, 5, {c.id for c in wb.embeddable})
    (tmp_path / "latin1.trec").write_bytes("q05 Q0 caf\xe9 1 1.0 x\n".encode("latin-1"))
    with pytest.raises(RunFileError, match="is not UTF-8 text"):
        read_run(tmp_path / "latin1.trec")


def _answers(name: str, lang: str, tmp_path: Path) -> tuple[Path, str]:
    from rag_lib.exchange.__main__ import main

    out = tmp_path / f"{name}-{lang}.{'jsonl' if name == 'ragas' else 'json'}"
    assert main([name, str(out), "--lang", lang]) == 0
    return out, out.read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_ragas_export_matches_its_schema_and_holds_only_shown_answers(
    tmp_path: Path, lang: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import jsonschema

    from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
    from rag_lib.results.local_llm import LocalLLMResult

    _, text = _answers("ragas", lang, tmp_path)
    rows = [json.loads(line) for line in text.splitlines()]
    schema = json.loads((SCHEMAS / "ragas_single_turn_sample.schema.json").read_text(encoding="utf-8"))
    for row in rows:
        jsonschema.validate(row, schema)
    stored = LocalLLMResult.read(LOCAL_LLM.name)
    shown = [r for r in stored.answers["claims"].runs[f"{lang}:ungated"].rows if r.status == "answered"]
    assert [r["response"] for r in rows] == [r.answer for r in shown] and len(rows) >= 10
    assert all(len(r["retrieved_contexts"]) == stored.k and r["reference"] for r in rows)
    assert "left out (not shown to a reader)" in capsys.readouterr().out


def test_ragas_itself_reads_the_export(tmp_path: Path) -> None:
    ragas = pytest.importorskip("ragas")  # not a dependency: where it is absent, the schema above is the check
    out, text = _answers("ragas", "en", tmp_path)
    assert len(ragas.EvaluationDataset.from_jsonl(str(out))) == len(text.splitlines())


def test_the_ragchecker_export_matches_its_schema(tmp_path: Path) -> None:
    import jsonschema

    _, text = _answers("ragchecker", "en", tmp_path)
    payload = json.loads(text)
    jsonschema.validate(payload, json.loads((SCHEMAS / "ragchecker_input.schema.json").read_text(encoding="utf-8")))
    assert payload["results"] and all(r["retrieved_context"][0]["doc_id"] for r in payload["results"])


def test_ragchecker_itself_reads_the_export(tmp_path: Path) -> None:
    container = pytest.importorskip("ragchecker.container")  # not a dependency (it needs spaCy and refchecker)
    _, text = _answers("ragchecker", "en", tmp_path)
    assert len(container.RAGResults.from_json(text).results) == len(json.loads(text)["results"])


def test_the_schema_files_reject_what_the_projects_would_reject() -> None:
    """A schema that accepts anything checks nothing: a misspelt field or a missing one fails."""
    import jsonschema

    ragas = json.loads((SCHEMAS / "ragas_single_turn_sample.schema.json").read_text(encoding="utf-8"))
    checker = json.loads((SCHEMAS / "ragchecker_input.schema.json").read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"user_input": "q", "contexts": ["a"]}, ragas)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"results": [{"query_id": "1", "query": "q", "response": "r", "retrieved_context": []}]},
                            checker)
