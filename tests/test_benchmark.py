"""The benchmark loader: validation errors, locator resolution, failure messages, the real file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from rag_lib.benchmark import load_benchmark, parse_benchmark, plain_text
from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.core.io import read_jsonl

REAL_CHUNKS = batch_dir() / "chunks.jsonl"


def chunk(cid: str, page: str, heading: tuple[str, ...], text: str) -> Chunk:
    return Chunk(
        id=cid,
        page=page,
        ordinal=0,
        title="T",
        heading_path=heading,
        text=text,
        start=0,
        end=len(text),
        url="u",
        embeddable=True,
        oversized=False,
    )


CHUNKS = [
    chunk(
        "sec-1",
        "workers/configuration/secrets",
        ("Background",),
        "## Background\n\nSecrets are a type of binding that allow you to attach **encrypted** text values.",
    ),
    chunk(
        "sec-2",
        "workers/configuration/secrets",
        ("Secrets on deployed Workers", "Adding secrets to your project", "Via Wrangler"),
        "#### Via Wrangler\n\nSecrets can be added through [`wrangler secret put`](/x) commands.",
    ),
    chunk(
        "sec-3",
        "workers/configuration/secrets",
        ("Secrets on deployed Workers", "Delete secrets from your project", "Via Wrangler"),
        "#### Via Wrangler\n\nSecrets can be deleted through `wrangler secret delete`.",
    ),
    chunk(
        "dev-0",
        "workers/development-testing/environment-variables",
        (),
        "Create a `.dev.vars` file   in the root\nof your project.",
    ),
]

GOOD = {
    "snapshot": "test",
    "questions": [
        {
            "id": "q1",
            "type": "answerable",
            "compound": True,
            "zh": "中文",
            "en": "English",
            "pieces": [
                {
                    "id": "C1",
                    "what": "encrypted",
                    "locators": [
                        {
                            "page": "workers/configuration/secrets",
                            "heading": ["background"],
                            "phrase": "attach encrypted text values",
                        }
                    ],
                },
                {
                    "id": "C2",
                    "what": "put",
                    "locators": [
                        {
                            "page": "workers/configuration/secrets",
                            "heading": ["Adding secrets to your project", "Via Wrangler"],
                            "phrase": "Secrets can be added through wrangler secret put",
                        },
                        {
                            "page": "workers/development-testing/environment-variables",
                            "heading": [],
                            "phrase": "Create a .dev.vars file in the root of your project",
                        },
                    ],
                },
            ],
            "phrasings": [{"id": "terms", "zh": "术语", "en": "terms"}],
        },
        {"id": "u1", "type": "unanswerable", "compound": False, "zh": "无", "en": "none", "absent": ["KV pricing"]},
    ],
}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_resolves_pieces_to_chunk_ids(tmp_path: Path) -> None:
    bench = load_benchmark(write(tmp_path, GOOD), CHUNKS)
    q = bench["q1"]
    # heading suffix picks "Adding … > Via Wrangler" and not "Delete … > Via Wrangler";
    # Markdown (bold, link, backticks) and line breaks inside the chunk do not block the phrase.
    assert q.pieces == [frozenset({"sec-1"}), frozenset({"sec-2", "dev-0"})]
    assert q.covered(["sec-2"]) == [False, True]
    assert q.gold_chunks == frozenset({"sec-1", "sec-2", "dev-0"})
    assert bench["u1"].pieces == []
    assert not bench["u1"].answerable


def test_question_texts_phrasings_and_filters(tmp_path: Path) -> None:
    bench = load_benchmark(write(tmp_path, GOOD))
    q = bench["q1"]
    assert (q.text("zh"), q.text("en"), q.text("zh", "terms")) == ("中文", "English", "术语")
    assert [x.id for x in bench.questions(answerable=False)] == ["u1"]
    assert [x.id for x in bench.questions(compound=True)] == ["q1"]
    assert [x.id for x in bench.questions(page="workers/development-testing/environment-variables")] == ["q1"]
    assert [(x.id, x.text) for x in bench.queries("zh", phrasings=True)] == [
        ("q1", "中文"),
        ("q1:terms", "术语"),
        ("u1", "无"),
    ]
    assert bench.summary()["per_page"] == {
        "workers/configuration/secrets": 1,
        "workers/development-testing/environment-variables": 1,
    }
    with pytest.raises(BenchmarkError, match="not resolved"):
        _ = q.pieces
    with pytest.raises(BenchmarkError, match="unknown language 'fr'"):
        q.text("fr")


def test_phrase_is_case_sensitive(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    data["questions"][0]["pieces"][0]["locators"][0]["phrase"] = "ATTACH encrypted text values"
    with pytest.raises(BenchmarkError) as err:
        load_benchmark(write(tmp_path, data), CHUNKS)
    msg = str(err.value)
    assert "question q1 piece C1 locator 1" in msg
    assert "chunks on that page containing the phrase: none" in msg
    assert "chunks under that heading: sec-1 ['Background']" in msg


def test_unresolved_locator_names_candidates_with_the_phrase(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    data["questions"][0]["pieces"][1]["locators"][0]["heading"] = ["Via the dashboard"]
    with pytest.raises(BenchmarkError) as err:
        load_benchmark(write(tmp_path, data), CHUNKS)
    msg = str(err.value)
    assert msg.startswith("1 benchmark label(s) do not hold against 4 chunks")
    assert "question q1 piece C2 locator 1" in msg
    assert (
        "chunks on that page containing the phrase: sec-2 ['Secrets on deployed Workers', "
        "'Adding secrets to your project', 'Via Wrangler']"
    ) in msg


def test_unknown_page_suggests_close_slug(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    data["questions"][0]["pieces"][0]["locators"][0]["page"] = "workers/configuration/secret"
    with pytest.raises(BenchmarkError, match=r"closest pages: \['workers/configuration/secrets'\]"):
        load_benchmark(write(tmp_path, data), CHUNKS)


def test_absent_string_present_in_a_chunk_fails(tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    data["questions"][1]["absent"] = ["SECRETS CAN BE DELETED"]
    with pytest.raises(BenchmarkError, match=r"question u1 \(unanswerable\).*\['sec-3'\]"):
        load_benchmark(write(tmp_path, data), CHUNKS)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("type",), "maybe", r"question q1, field 'type': got 'maybe'"),
        (("compound",), "yes", r"question q1, field 'compound'"),
        (("en",), "", r"question q1, field 'en': expected non-empty text"),
        (("casebook_ref",), "Q99", r"question q1, field 'casebook_ref'"),
        (("pieces", 0, "id"), "C2", r"field 'pieces.id': got 'C2', expected 'C1'"),
        (
            ("pieces", 0, "locators", 0, "page"),
            "workers/configuration/secrets.mdx",
            r"question q1 piece C1 locator 1, field 'page'.*not a page slug",
        ),
        (("pieces", 0, "locators", 0, "heading"), [""], r"piece C1 locator 1, field 'heading'"),
        (("pieces", 0, "locators", 0, "colour"), "red", r"locator 1, field 'colour': unknown field"),
        (("pieces",), [], r"question q1, field 'pieces': an answerable question has no gold pieces"),
    ],
)
def test_validation_errors_name_question_and_field(tmp_path: Path, path: tuple, value: object, expected: str) -> None:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    target = data["questions"][0]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(BenchmarkError, match=expected):
        load_benchmark(write(tmp_path, data))


def test_structural_rules(tmp_path: Path) -> None:
    one_piece = yaml.safe_load(yaml.safe_dump(GOOD))
    one_piece["questions"][0]["pieces"].pop()
    with pytest.raises(BenchmarkError, match="question q1, field 'compound': compound but only one piece"):
        parse_benchmark(one_piece)
    dup = yaml.safe_load(yaml.safe_dump(GOOD))
    dup["questions"][1]["id"] = "q1"
    with pytest.raises(BenchmarkError, match="question q1, field 'id': used more than once"):
        parse_benchmark(dup)
    unans = yaml.safe_load(yaml.safe_dump(GOOD))
    unans["questions"][1]["pieces"] = GOOD["questions"][0]["pieces"]
    with pytest.raises(BenchmarkError, match="question u1, field 'pieces': an unanswerable question has gold pieces"):
        parse_benchmark(unans)
    with pytest.raises(BenchmarkError, match="does not exist"):
        load_benchmark(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(textwrap.dedent("questions: [ {id: q1, zh: a"), encoding="utf-8")
    with pytest.raises(BenchmarkError, match="not valid YAML"):
        load_benchmark(bad)


def test_plain_text_strips_inline_markdown_only() -> None:
    assert plain_text("Use [`wrangler dev`](/x) **now** _here_ <sup>1</sup> {/* c */}") == "Use wrangler dev now here 1"
    assert plain_text("keep r2_buckets and pages_build_output_dir") == "keep r2_buckets and pages_build_output_dir"


def test_real_benchmark_meets_the_brief() -> None:
    bench = load_benchmark()
    s = bench.summary()
    assert s["total"] >= 50 and s["unanswerable"] >= 12
    assert len(bench.questions(answerable=True, compound=True)) >= 10
    assert {q.casebook_ref for q in bench if q.casebook_ref} == {"Q5", "Q7", "Q8", "Q9a"}
    q7 = bench.by_casebook("Q7")
    assert [p.id for p in q7.gold] == ["C1", "C2", "C3", "C4"] and len(q7.phrasings) == 2
    assert bench.by_casebook("Q9a").text("zh") == "Workers KV 的免费额度是多少？超出后如何计费？"
    assert not bench.by_casebook("Q9a").answerable


@pytest.mark.skipif(not REAL_CHUNKS.exists(), reason=f"{REAL_CHUNKS} not built yet (run the chunker first)")
def test_real_benchmark_resolves_against_real_chunks() -> None:
    chunks = [Chunk.from_json(r) for r in read_jsonl(REAL_CHUNKS)]
    bench = load_benchmark(chunks=chunks)
    assert all(all(piece) for q in bench for piece in q.pieces)


def test_near_miss_must_be_unanswerable_with_notes() -> None:
    base = {"id": "n1", "type": "unanswerable", "compound": False, "zh": "问", "en": "Q?", "near_miss": True}
    with pytest.raises(BenchmarkError, match="near_miss"):
        parse_benchmark({"questions": [base]})
    with pytest.raises(BenchmarkError, match="near_miss"):
        parse_benchmark({"questions": [{**base, "near_miss": "yes", "notes": "why"}]})
    bench = parse_benchmark({"questions": [{**base, "notes": "topic on page X, fact absent"}]})
    assert bench.questions(near_miss=True)[0].id == "n1" and bench.summary()["near_miss"] == 1


def test_q7_constants_name_the_pieces_questions_yaml_gives_q07() -> None:
    from rag_lib.benchmark.questions import DEFAULT_PATH, Q7_ID, Q7_PIECES

    entries = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))["questions"]
    q7 = next(e for e in entries if e["id"] == Q7_ID)
    assert tuple(p["id"] for p in q7["pieces"]) == Q7_PIECES
