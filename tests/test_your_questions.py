"""Your questions on your corpus (issue 49, item 3): the documented file format and BEIR's queries + qrels,
checked on load with errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.corpus.build import load_chunks
from rag_lib.corpus.importer import import_corpus
from rag_lib.corpus.importing.stage import SourceSpec
from rag_lib.evaluation.your_questions import load_beir_questions, load_questions

LIMITS = ("Workers on the free plan get 10 ms of CPU time per request. Paid plans raise the limit to 30 s. "
          "Requests that exceed it fail with error 1102.")
SECRETS = "Secrets are encrypted values. Add one with wrangler secret put NAME, then redeploy."

QUESTIONS = """\
corpus: mine
languages: [en, zh]
questions:
  - id: p01
    type: answerable
    en: What is the CPU limit on the free plan?
    zh: 免费版的 CPU 时间上限是多少？
    pieces:
      - what: 10 ms of CPU time per request
        locators:
          - {page: limits, heading: [], phrase: "10 ms of CPU time per request"}
        key_facts: ["10 ms", "10ms"]
  - id: p02
    type: answerable
    en: How do I add a secret, and what happens to paid limits?
    zh: 怎么添加 secret？付费版的上限是多少？
    pieces:
      - what: wrangler secret put
        locators: [{page: secrets, phrase: "wrangler secret put NAME"}]
      - what: paid plans allow 30 s
        locators: [{page: limits, phrase: "raise the limit to 30 s"}]
  - id: p03
    type: unanswerable
    en: How much does a Durable Object cost?
    zh: Durable Object 多少钱？
"""


@pytest.fixture(scope="module")
def chunks(tmp_path_factory: pytest.TempPathFactory) -> list[Chunk]:
    root = tmp_path_factory.mktemp("corpus")
    docs = root / "docs"
    docs.mkdir()
    (docs / "limits.md").write_text(f"# Limits\n\n{LIMITS}\n", encoding="utf-8")
    (docs / "secrets.md").write_text(f"# Secrets\n\n{SECRETS}\n", encoding="utf-8")
    batch = import_corpus(docs, "mine", SourceSpec("tests", "CC0-1.0"), root=root / "snapshots", quiet=True)
    return load_chunks(root=batch.root)


def _write(tmp_path: Path, text: str, name: str = "questions.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_questions_file_resolves_on_the_corpus_with_its_key_facts(tmp_path: Path, chunks: list[Chunk]) -> None:
    yours = load_questions(_write(tmp_path, QUESTIONS), chunks)
    bench = yours.benchmark
    assert [q.id for q in bench] == ["p01", "p02", "p03"] and yours.languages == ("en", "zh")
    assert bench["p02"].compound and len(bench["p02"].pieces) == 2 and not bench["p03"].answerable
    assert all(piece for q in bench.questions(answerable=True) for piece in q.pieces)
    assert [f.alternatives for f in yours.key_facts["p01"]] == [("10 ms", "10ms")]
    assert yours.lines == {"p01": 4, "p02": 13, "p03": 22}
    assert yours.summary() == "3 questions on mine (en, zh): 2 answerable, 1 unanswerable, 1 key facts"


def test_the_same_questions_as_jsonl(tmp_path: Path, chunks: list[Chunk]) -> None:
    import yaml

    data = yaml.safe_load(QUESTIONS)
    lines = [json.dumps({"corpus": "mine", "languages": ["en"], **{k: v for k, v in q.items() if k != "zh"}})
             for q in data["questions"]]
    yours = load_questions(_write(tmp_path, "\n".join(lines) + "\n", "questions.jsonl"), chunks)
    assert [q.id for q in yours.benchmark] == ["p01", "p02", "p03"] and yours.languages == ("en",)
    with pytest.raises(BenchmarkError, match=r"are in \['en'\], not 'zh'. Fix: --lang en"):
        yours.check_language("zh")


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.replace('phrase: "10 ms of CPU time per request"', 'phrase: "15 ms of CPU time"'),
     r"(?s)questions\.yaml, line 4: .*question p01 piece C1 locator 1 .* matches no chunk; chunks on that page"),
    (lambda t: t.replace("id: p03", "id: p01"), r"line 22: question id 'p01' is already used on line 4"),
    (lambda t: t.replace("    zh: 免费版的 CPU 时间上限是多少？\n", ""),
     r"line 4: no zh text, which the file's languages \['en', 'zh'\] require"),
    (lambda t: t.replace("    type: unanswerable\n", "    type: unanswerable\n    answer: none\n"),
     r"line 22: unknown field\(s\) \['answer'\]"),
    (lambda t: t.replace("languages: [en, zh]", "languages: [fr]"), r"languages \['fr'\]. Fix: a list of one or both"),
    (lambda t: t.replace("{page: secrets,", "{page: secret,"),
     r"(?s)line 13: .*no chunk has page 'secret'; closest pages: \['secrets'\]"),
    (lambda t: t + "  - [not, a, question]\n", r"line 26: a question must be a mapping"),
])
def test_a_bad_questions_file_names_the_line_and_the_fix(tmp_path: Path, chunks: list[Chunk], change, message) -> None:
    with pytest.raises(BenchmarkError, match=message):
        load_questions(_write(tmp_path, change(QUESTIONS)), chunks)


def test_beir_queries_and_qrels_become_questions_marked_where_gold_is_a_whole_document(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    long_text = " ".join(f"Section {i}. " + LIMITS for i in range(40))  # several chunks
    corpus = root / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in (
        {"_id": "doc-1", "title": "Secrets", "text": SECRETS},
        {"_id": "doc-2", "title": "Limits", "text": "\n\n".join(long_text[i:i + 700] for i in range(0, 5000, 700))},
    )) + "\n", encoding="utf-8")
    batch = import_corpus(corpus, "beir", SourceSpec("tests", "CC0-1.0"), root=tmp_path / "snapshots", quiet=True)
    chunks = load_chunks(root=batch.root)
    assert sum(c.page == "doc-2" for c in chunks) > 1
    queries = _write(tmp_path, "\n".join(json.dumps(q) for q in (
        {"_id": "q1", "text": "How do I add a secret?"}, {"_id": "q2", "text": "What is the CPU limit?"},
        {"_id": "q3", "text": "What does a Durable Object cost?"})) + "\n", "queries.jsonl")
    qrels = _write(tmp_path, "query-id\tcorpus-id\tscore\nq1\tdoc-1\t1\nq2\tdoc-2\t1\n", "test.tsv")
    yours = load_beir_questions(queries, qrels, chunks)
    bench = yours.benchmark
    assert [(q.id, q.answerable) for q in bench] == [("q1", True), ("q2", True), ("q3", False)]
    assert bench["q1"].pieces == [frozenset(c.id for c in chunks if c.page == "doc-1")]  # compiled: one chunk
    assert bench["q2"].pieces == [frozenset(c.id for c in chunks if c.page == "doc-2")]  # the whole document
    assert yours.document_level == {"q2"} and "1 with document-level gold" in yours.summary()
    bad = _write(tmp_path, "query-id\tcorpus-id\tscore\nq1\tdoc-9\t1\n", "bad.tsv")
    with pytest.raises(BenchmarkError, match=r"query q1 judges documents \['doc-9'\] relevant that are not pages"):
        load_beir_questions(queries, bad, chunks)
    header = _write(tmp_path, "q1\tdoc-1\t1\n", "noheader.tsv")
    with pytest.raises(BenchmarkError, match=r"noheader\.tsv, line 1: a BEIR qrels file starts with the header"):
        load_beir_questions(queries, header, chunks)


def test_a_ranking_of_your_questions_on_your_corpus_is_diagnosed_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag_lib.exchange.__main__ import main

    monkeypatch.setattr("rag_lib.core.config.SNAPSHOTS_DIR", tmp_path / "snapshots")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.md").write_text(f"# Limits\n\n{LIMITS}\n", encoding="utf-8")
    (docs / "secrets.md").write_text(f"# Secrets\n\n{SECRETS}\n", encoding="utf-8")
    import_corpus(docs, "mine", SourceSpec("tests", "CC0-1.0"), root=tmp_path / "snapshots", quiet=True)
    questions = _write(tmp_path, QUESTIONS)
    common = ["--batch", "mine", "--questions", str(questions), "--lang", "en"]
    assert main(["run", str(tmp_path / "bm25.trec"), "--retriever", "bm25", *common]) == 0
    assert main(["diagnose", str(tmp_path / "bm25.trec"), "--k", "1", *common]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "2 answerable questions diagnosed" in out
    assert "p01      in_top_k" in out and "p02      just_outside" in out  # its two pieces, on two pages, at k = 1
