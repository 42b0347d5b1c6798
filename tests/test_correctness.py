"""Answer correctness: one test per matching rule on hand-made facts, validation errors, and the real
key facts checked against questions.yaml and the snapshot's chunks."""

from __future__ import annotations

import math

import pytest

from rag_lib.benchmark import load_benchmark, parse_benchmark, resolve
from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.core.io import read_jsonl
from rag_lib.evaluation import answer_correct, correctness_summary, load_key_facts
from rag_lib.evaluation.fact_matching import find_alternative, normalize
from rag_lib.evaluation.key_facts import parse_key_facts, source_problems

REAL_CHUNKS = batch_dir() / "chunks.jsonl"


def chunk(cid: str, heading: str, text: str) -> Chunk:
    fields = {"page": "workers/platform/limits", "ordinal": 0, "title": "Limits", "url": "u", "oversized": False}
    return Chunk(id=cid, heading_path=(heading,), text=text, start=0, end=len(text), embeddable=True, **fields)


CHUNKS = [
    chunk("lim-1", "Memory", "Each isolate can consume up to **128 MB** of memory."),
    chunk("lim-2", "Daily requests", "A daily request limit of 100,000 requests. Cloudflare returns Error 1027."),
    chunk("lim-3", "Other", "Use `wrangler secret put` to add a secret."),
]

def loc(heading: str, phrase: str) -> dict:
    return {"page": "workers/platform/limits", "heading": [heading], "phrase": phrase}


QUESTIONS = {
    "questions": [
        {
            "id": "x1",
            "type": "answerable",
            "compound": True,
            "zh": "内存和每日请求上限？",
            "en": "Memory and daily request limits?",
            "pieces": [
                {"id": "C1", "what": "128 MB", "locators": [loc("Memory", "128 MB")]},
                {"id": "C2", "what": "100,000 / 1027", "locators": [loc("Daily requests", "100,000")]},
            ],
        },
        {
            "id": "x2",
            "type": "answerable",
            "compound": False,
            "zh": "哪个赢？",
            "en": "Which wins?",
            "pieces": [{"id": "C1", "what": "prose", "locators": [loc("Memory", "isolate")]}],
            "phrasings": [{"id": "terms", "zh": "哪个赢？", "en": "Which one wins?"}],
        },
        {"id": "u1", "type": "unanswerable", "compound": False, "zh": "无？", "en": "Nothing?"},
    ]
}
BENCH = parse_benchmark({**QUESTIONS, "snapshot": "snap-1"})


def facts_doc(**overrides: object) -> dict:
    x1 = {
        "id": "x1",
        "pieces": {
            "C1": [{"any": ["128 MB", "128MB"], "source": "lim-1"}],
            "C2": [{"any": ["100,000", "10万"], "source": "lim-2"}, {"any": ["1027"], "source": "lim-2"}],
        },
    }
    x2 = {"id": "x2", "pieces": {"C1": [{"checkable": False, "reason": "prose only", "source": "lim-1"}]}}
    doc = {"questions": [x1, x2]}
    doc.update(overrides)
    return doc


KF = parse_key_facts(facts_doc(), BENCH)


def stated(fact: str, answer: str) -> bool:
    return find_alternative([fact], answer) is not None


# ------------------------------------------------------------------------------ matching rules, one each
def test_nfkc_makes_full_width_letters_digits_and_punctuation_half_width():
    assert stated("128MB", "内存上限是１２８ＭＢ。")
    assert stated("(vars)", "普通配置（vars）")


def test_cjk_punctuation_without_nfkc_form_maps_to_ascii():
    assert stated('"vars"', "写在 “vars” 里")
    assert stated("[vars]", "写在【vars】段")
    assert stated("a.b", "a。b")


def test_case_is_folded():
    assert stated("OAuth", "uses OAUTH to log in")


def test_whitespace_runs_are_collapsed():
    assert stated("wrangler secret put", "run `wrangler  secret\n put`")


def test_whitespace_next_to_cjk_is_ignored():
    assert stated("10 万", "每天10万次")
    assert stated("10万", "每天 10 万 次")
    assert not stated("10 ms", "10ms")  # between Latin and digits a space still matters


def test_thousands_separators_are_dropped():
    assert stated("10,000", "up to 10000 subrequests")
    assert stated("10000", "up to 10,000 subrequests")
    assert stated("10,000", "最多１０，０００个")  # full-width comma, via NFKC
    assert stated("1,000,000", "1000000")
    assert normalize("1,00") == "1,00"  # not a thousands group


def test_letter_boundary_keeps_words_whole():
    assert not stated("env", "use environment variables")
    assert stated("env", "read it from env.API_KEY")
    assert stated("put", "调用 put() 上传")  # CJK is not an ASCII letter


def test_digit_boundary_keeps_numbers_whole():
    assert not stated("50", "500 subrequests")
    assert not stated("50", "150 subrequests")
    assert not stated("100", "2,100 redirects")
    assert stated("50", "50 个子请求")


def test_a_number_does_not_continue_as_a_decimal():
    assert not stated("$5", "$5.50 per month")
    assert not stated("64", "version 1.64")
    assert stated("$5", "costs $5.")  # a full stop is not a decimal


def test_boundaries_apply_only_where_the_fact_starts_or_ends_with_a_letter_or_digit():
    assert stated("-env", "wrangler secret put KEY --env production")
    assert stated(".dev.vars.", "create .dev.vars.staging")


def test_any_alternative_counts_and_the_matched_one_is_reported():
    r = answer_correct("x1", "128MB; 每天 10 万次; Error 1027", KF)
    assert r.correct is True
    assert [c.matched for c in r.checks] == ["128MB", "10万", "1027"]


# ------------------------------------------------------------------------------ results
def test_correct_needs_every_checkable_fact_and_lists_the_missing_ones():
    r = answer_correct("x1", "128 MB and 100,000 requests", KF)
    assert r.correct is False
    assert [f.alternatives[0] for f in r.missing] == ["1027"]
    assert [f.alternatives[0] for f in r.found] == ["128 MB", "100,000"]
    assert r.pieces == {"C1": True, "C2": False}


def test_a_question_without_checkable_facts_is_left_out():
    r = answer_correct("x2", "anything at all", KF)
    assert r.correct is None and not r.checkable
    assert [f.reason for f in r.not_checkable] == ["prose only"]
    assert r.pieces == {"C1": None}


def test_phrasings_share_their_questions_facts():
    assert answer_correct("x1:terms", "128 MB, 100,000, 1027", KF).correct is True


def test_a_question_without_an_entry_is_an_error_naming_it():
    kf = parse_key_facts({"questions": facts_doc()["questions"][:1]}, BENCH)
    with pytest.raises(BenchmarkError, match="question x2 has no key facts"):
        answer_correct("x2", "text", kf)


def test_summary_counts_correct_checked_and_not_checkable():
    answers = [("x1", "128 MB 100,000 1027"), ("x1", "128 MB"), ("x2", "…")]
    results = [answer_correct(qid, text, KF) for qid, text in answers]
    assert correctness_summary(results) == {"answers": 3, "checked": 2, "correct": 1, "not_checkable": 1, "rate": 0.5}
    assert math.isnan(correctness_summary([answer_correct("x2", "…", KF)])["rate"])


# ------------------------------------------------------------------------------ validation
FACT = {"any": ["1"], "source": "s"}


def one(qid: str, pieces: dict) -> dict:
    return {"questions": [{"id": qid, "pieces": pieces}]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (one("zz", {"C1": [FACT]}), "question zz: no such question"),
        (one("u1", {"C1": [FACT]}), "question u1: the question is unanswerable"),
        (one("x2", {"C1": []}), "question x2 piece C1: empty facts"),
        (one("x1", {"C1": [FACT]}), "gold piece C2 has no facts"),
        (one("x2", {"C3": [FACT]}), "piece 'C3' is not a gold piece"),
        (one("x2", {"C1": [{"checkable": False, "source": "s"}]}), "without a reason"),
        (one("x2", {"C1": [{"any": [], "source": "s"}]}), "has no alternatives"),
        (one("x2", {"C1": [{"any": [" "], "source": "s"}]}), "non-empty strings"),
        (one("x2", {"C1": [{"any": ["1"]}]}), "source is None"),
        (one("x2", {"C1": [{**FACT, "alts": 1}]}), "unknown field 'alts'"),
        (facts_doc(questions=facts_doc()["questions"] * 2), "question x1: listed more than once"),
        ({"facts": []}, "expected a mapping with a 'questions' list"),
        ({**facts_doc(), "snapshot": "other-2027"}, "written for snapshot 'other-2027'"),
    ],
)
def test_invalid_key_facts_name_the_question_and_the_fix(doc, message):
    with pytest.raises(BenchmarkError, match=message) as err:
        parse_key_facts(doc, BENCH)
    assert "Fix:" in str(err.value)


def test_source_problems_catch_a_wrong_source_and_a_fact_not_in_it():
    bench = resolve(BENCH, CHUNKS)
    assert source_problems(KF, bench, CHUNKS) == []
    doc = facts_doc()
    doc["questions"][0]["pieces"]["C1"] = [{"any": ["256 MB"], "source": "lim-1"}, {"any": ["put"], "source": "lim-3"}]
    problems = source_problems(parse_key_facts(doc, BENCH), bench, CHUNKS)
    assert len(problems) == 2
    assert "'256 MB' is not in source lim-1" in problems[0]
    assert "source 'lim-3' is not a gold chunk" in problems[1]


def test_source_problems_name_the_gold_chunks_that_do_state_the_fact():
    bench = resolve(BENCH, CHUNKS)
    doc = facts_doc()
    doc["questions"][0]["pieces"]["C1"] = [{"any": ["1027"], "source": "lim-1"}]
    (problem,) = source_problems(parse_key_facts(doc, BENCH), bench, CHUNKS)
    assert "gold chunks stating it: ['lim-2']" in problem


# ------------------------------------------------------------------------------ the real files
def test_every_answerable_question_has_key_facts():
    bench = load_benchmark()
    missing = load_key_facts(bench=bench).unlabelled(bench)
    assert not missing, (
        f"answerable questions without key facts: {missing}. Fix: add an entry for each to "
        "data/benchmark/key_facts.yaml (facts per gold piece; policy at the top of that file)."
    )


@pytest.mark.skipif(not REAL_CHUNKS.exists(), reason="chunks.jsonl not built (python -m rag_lib.corpus build)")
def test_every_key_fact_is_stated_in_a_gold_chunk_of_its_question():
    chunks = [Chunk.from_json(r) for r in read_jsonl(REAL_CHUNKS)]
    bench = load_benchmark(chunks=chunks)
    problems = source_problems(load_key_facts(bench=bench), bench, chunks)
    assert not problems, "key facts not backed by the corpus:\n- " + "\n- ".join(problems)


# Phrasings written to name the facts on purpose (the casebook's document-aligned Q7); see key_facts.yaml.
ECHO_ALLOWED = {("q07", "aligned")}


def test_no_question_states_its_own_checkable_facts():
    """A fact the question itself contains is passed by an answer that only repeats the question."""
    bench = load_benchmark()
    echoes = []
    for fact in load_key_facts(bench=bench).all_facts():
        q = bench[fact.question_id]
        texts = [(None, q.zh), (None, q.en)] + [(p.id, p.text(lang)) for p in q.phrasings for lang in ("zh", "en")]
        for phrasing, text in texts:
            hit = find_alternative(fact.alternatives, text) if fact.checkable else None
            if hit and (q.id, phrasing) not in ECHO_ALLOWED:
                echoes.append(f"{fact.describe()}: {hit!r} is in the question ({phrasing or 'zh/en'})")
    assert not echoes, (
        "facts an echo of the question passes:\n- " + "\n- ".join(echoes) + "\nFix: choose a token the question "
        "lacks, or mark the fact checkable: false with a reason."
    )


def test_real_key_facts_judge_a_bilingual_answer():
    zh = "单个文件最大 25 MiB；免费计划最多 20,000 个文件，Workers Paid 为 10 万个。"
    assert answer_correct("a39", zh).correct is True
    wrong = answer_correct("a39", "Pages 最多 20,000 个文件。")
    assert wrong.correct is False and wrong.pieces == {"C1": False, "C2": False}


# ---- key facts that almost any answer states (issue 44 item 7) ------------------------------------------------

def _plain_chunk(i: int, text: str) -> Chunk:
    return Chunk(id=f"c-{i:03d}", page="p", title="t", heading_path=(), text=text, start=0, end=len(text),
                 url="https://example.com/", ordinal=i, embeddable=True, oversized=False)


def test_a_key_fact_stated_by_too_many_chunks_is_refused_by_the_loader(tmp_path):
    from rag_lib.evaluation.key_facts import DEFAULT_PATH, MAX_CHUNK_SHARE, common_facts, default_key_facts

    facts = default_key_facts()  # the development set loads: none of its facts is that common
    a24 = next(f for f in facts["a24"] if "bucket_name" in f.alternatives)
    texts = ["Set bucket_name in the r2_buckets table."] * 2 + ["Something else entirely."] * 8
    chunks = [_plain_chunk(i, t) for i, t in enumerate(texts)]
    found = [(f.alternatives, share) for f, share in common_facts(facts, chunks) if f is a24]
    assert found == [(a24.alternatives, 0.2)]
    assert MAX_CHUNK_SHARE < 0.2
    weak = DEFAULT_PATH.read_text(encoding="utf-8").replace('- {any: ["bucket_name"]', '- {any: ["Wrangler"]')
    (tmp_path / "key_facts.yaml").write_text(weak, encoding="utf-8")
    real = [Chunk.from_json(r) for r in read_jsonl(batch_dir() / "chunks.jsonl")]
    with pytest.raises(BenchmarkError, match=r"a24 C1: Wrangler \(4\d%\).*Fix: give each a wording only a right"):
        load_key_facts(tmp_path / "key_facts.yaml", chunks=real)
