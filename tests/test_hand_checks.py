"""Hand-checked answers: agreement figures on hand-made 2×2 tables with known kappa, the draw rule,
refused entries, stale hashes, and the committed sample checked against the results it names."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from rag_lib.benchmark import read_yaml
from rag_lib.core.config import BENCHMARK_DIR, SNAPSHOTS_DIR
from rag_lib.core.errors import BenchmarkError
from rag_lib.evaluation.hand_check_agreement import agreement, cohen_kappa
from rag_lib.evaluation.hand_check_draw import draw_sample
from rag_lib.evaluation.hand_checks import (
    DEFAULT_PATHS,
    JUDGEMENTS,
    HandCheck,
    answer_rows,
    answer_sha256,
    load_hand_checks,
    parse_hand_checks,
    results_at_commit,
)
from rag_lib.evaluation.stats import wilson

COMMIT = "0" * 40


def row(q: str, answer: str, correct: bool | None, lang: str = "en", generator: str = "llm", **kw) -> dict:
    return {"question": q, "answer": answer, "correct": correct, "lang": lang, "generator": generator,
            "answerable": True, "status": "answered", **kw}


def check(q: str, answer: str, judgement: str, lang: str = "en", generator: str = "llm") -> HandCheck:
    return HandCheck(q, lang, generator, answer_sha256(answer), judgement, f"reason for {q}")


def entry(**over) -> dict:
    base = {"question": "a01", "lang": "en", "generator": "llm", "answer_sha256": answer_sha256("x"),
            "judgement": "correct", "reason": "128 MB, workers/platform/limits"}
    return {**base, **over}


def doc(*entries: dict) -> dict:
    return {"results_commit": COMMIT, "results_path": "results/10_local_llm/results.json", "checks": list(entries)}


# ---------------------------------------------------------------- kappa and agreement, exact


def test_kappa_textbook_table():
    # Rater A yes/B yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    table = {(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15}
    assert cohen_kappa(table) == pytest.approx(0.4, abs=1e-12)


def test_kappa_perfect_chance_and_undefined():
    assert cohen_kappa({(True, True): 3, (False, False): 7}) == pytest.approx(1.0)
    # Agreement no better than chance: both raters split 50/50 independently.
    assert cohen_kappa({(True, True): 1, (True, False): 1, (False, True): 1, (False, False): 1}) == pytest.approx(0.0)
    # Every item in one class for both raters: chance agreement is 1, kappa undefined.
    assert math.isnan(cohen_kappa({(False, False): 5}))
    assert math.isnan(cohen_kappa({}))


def test_agreement_small_table():
    # Hand correct & key facts True: 2; hand correct & False: 1; hand not & True: 1; hand not & False: 4.
    data = [("q1", "correct", True), ("q2", "correct", True), ("q3", "correct", False), ("q4", "partial", True),
            ("q5", "wrong", False), ("q6", "no_answer", False), ("q7", "partial", False), ("q8", "wrong", False)]
    rows = [row(q, f"answer {q}", kf) for q, _, kf in data]
    checks = [check(q, f"answer {q}", j) for q, j, _ in data]
    a = agreement(checks, rows)
    assert a.n == 8
    assert a.table == {(True, True): 2, (True, False): 1, (False, True): 1, (False, False): 4}
    assert a.percent == pytest.approx(75.0)
    assert a.interval == wilson(6, 8)
    # p_o = 6/8; p_e = (3·3 + 5·5)/64 = 34/64; kappa = (48/64 − 34/64)/(30/64) = 14/30.
    assert a.kappa == pytest.approx(14 / 30)
    assert [(d.check.question, d.key_fact_correct) for d in a.disagreements] == [("q3", False), ("q4", True)]
    assert "reason for q3" in a.disagreements[0].describe()
    assert a.stale == a.missing == a.not_checkable == ()
    assert a.as_dict()["key_facts_only"] == 1


def test_stale_missing_and_not_checkable_are_reported_not_compared():
    rows = [row("q1", "new text", True), row("q2", "same", False), row("q3", "x", None)]
    checks = [check("q1", "old text", "wrong"), check("q2", "same", "wrong"), check("q3", "x", "correct"),
              check("q9", "gone", "correct")]
    a = agreement(checks, rows)
    assert [c.question for c in a.stale] == ["q1"]
    assert [c.question for c in a.not_checkable] == ["q3"]
    assert [c.question for c in a.missing] == ["q9"]
    assert a.n == 1 and a.table[(False, False)] == 1 and a.disagreements == ()
    assert a.as_dict()["stale"] == ["en/llm/q1"]


def test_same_question_other_language_or_generator_is_another_answer():
    rows = [row("q1", "a", True, lang="zh"), row("q1", "a", False, lang="en", generator="extractive")]
    a = agreement([check("q1", "a", "correct", lang="zh"), check("q1", "a", "correct", generator="extractive")], rows)
    assert a.table[(True, True)] == 1 and a.table[(True, False)] == 1


# ---------------------------------------------------------------- parsing


def test_parse_valid_and_optional_note():
    hc = parse_hand_checks(doc(entry(), entry(question="a02", key_fact_note="OAuth in other words")))
    assert len(hc) == 2 and hc.checks[1].key_fact_note == "OAuth in other words"
    assert hc.counts() == {("en", "llm"): 2} and hc.seed == 0 and hc.per_language == 24


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (entry(question="a02", judgement="right"),
         ["checks[1]", "en/llm/a02", "'right'", "correct, partial, wrong or no_answer"]),
        (entry(question="a02", reason=""), ["checks[1]", "missing ['reason']", "Fix"]),
        (entry(question="a02", verdict="ok"), ["unknown key", "verdict"]),
        (entry(question="a02", answer_sha256="abc"), ["answer_sha256", "answer_sha256(answer)"]),
        (entry(question="a02", lang="fr"), ["lang 'fr'", "zh or en"]),
        (entry(question="a02", generator="gpt"), ["generator 'gpt'"]),
        (entry(question="a02", judgement=True), ["judgement is True", "quote"]),
        (entry(), ["checks[1]", "duplicates", "one judgement per question"]),  # same key as the first
        ("just text", ["checks[1]", "not a mapping"]),
    ],
)
def test_malformed_entry_is_refused_naming_it(bad, words):
    with pytest.raises(BenchmarkError) as err:
        parse_hand_checks(doc(entry(), bad))
    for w in words:
        assert w in str(err.value)


def test_generators_key_sets_what_entries_may_name():
    hc = parse_hand_checks({**doc(entry(generator="narrowed")), "generators": ["narrowed"]})
    assert hc.generators == ("narrowed",) and hc.counts() == {("en", "narrowed"): 1}
    assert parse_hand_checks(doc(entry())).generators == ("extractive", "llm")  # the default
    with pytest.raises(BenchmarkError, match="generator 'llm' is not one of \\['narrowed'\\]"):
        parse_hand_checks({**doc(entry()), "generators": ["narrowed"]})
    with pytest.raises(BenchmarkError, match="not a list"):
        parse_hand_checks({**doc(entry(generator="narrowed")), "generators": "narrowed"})
    with pytest.raises(BenchmarkError, match=r"\['gpt'\] are not among"):
        parse_hand_checks({**doc(entry()), "generators": ["gpt"]})


def test_answer_rows_skip_an_answerer_the_results_lack():
    run = {"runs": {f"{lang}:ungated": {"rows": [{"question": "a01", "answer": lang}]} for lang in ("zh", "en")}}
    rows = answer_rows({"answers": {"llm": run}})
    assert [(r["lang"], r["generator"]) for r in rows] == [("zh", "llm"), ("en", "llm")]


def test_bad_header_is_refused():
    with pytest.raises(BenchmarkError, match="results_commit"):
        parse_hand_checks({**doc(entry()), "results_commit": "HEAD"})
    with pytest.raises(BenchmarkError, match="checks is missing or empty"):
        parse_hand_checks({**doc(), "checks": []})


# ---------------------------------------------------------------- the draw


def pool() -> list[dict]:
    rows = [row(f"a{i:02d}", f"t{i}", i % 3 == 0, lang=lang, generator=g)
            for lang in ("zh", "en") for g in ("extractive", "llm") for i in range(10)]
    rows += [row("u01", "t", None, lang="en"), row("x01", "t", True, lang="en", answerable=False),
             row("x02", "t", True, lang="en", status="insufficient")]
    # zh/extractive has only 2 scored rows: the other 8 are unscored.
    return [r for r in rows if not (r["lang"] == "zh" and r["generator"] == "extractive" and r["question"] > "a01")]


def test_draw_is_stratified_fills_shortfall_and_skips_unscored():
    drawn = draw_sample(pool(), seed=0, per_language=8)
    counts = Counter((r["lang"], r["generator"]) for r in drawn)
    assert counts == {("zh", "extractive"): 2, ("zh", "llm"): 6, ("en", "extractive"): 4, ("en", "llm"): 4}
    assert not {r["question"] for r in drawn} & {"u01", "x01", "x02"}


def test_draw_is_reproducible_order_free_and_seeded():
    rows = pool()
    first = draw_sample(rows, seed=0, per_language=8)
    assert draw_sample(list(reversed(rows)), seed=0, per_language=8) == first
    assert draw_sample(rows, seed=1, per_language=8) != first
    # Sorted output: language order, then generator, then question id.
    keys = [(("zh", "en").index(r["lang"]), r["generator"], r["question"]) for r in first]
    assert keys == sorted(keys)


def test_draw_smaller_pool_takes_all():
    assert len(draw_sample(pool(), per_language=100)) == 2 + 10 + 10 + 10


# ---------------------------------------------------------------- the committed sample


@pytest.fixture(scope="module", params=DEFAULT_PATHS, ids=lambda p: p.stem)
def committed(request):
    checks = load_hand_checks(request.param)
    try:
        results = results_at_commit(checks.results_commit, checks.results_path)
    except BenchmarkError as exc:  # an export or shallow clone has no history to read the results from
        pytest.skip(str(exc))
    return checks, answer_rows(results, checks.run, checks.generators)


def test_committed_file_size_and_languages(committed):
    checks, _ = committed
    assert len(checks) >= 40
    langs = Counter(c.lang for c in checks)
    assert langs["zh"] >= 20 and langs["en"] >= 20
    assert {c.generator for c in checks} == set(checks.generators)
    assert {c.judgement for c in checks} <= set(JUDGEMENTS)


def test_committed_entries_are_the_draw(committed):
    checks, rows = committed
    drawn = draw_sample(rows, seed=checks.seed, per_language=checks.per_language, generators=checks.generators)
    assert [c.key for c in checks] == [(r["lang"], r["generator"], r["question"]) for r in drawn]
    assert [c.answer_sha256 for c in checks] == [answer_sha256(r["answer"]) for r in drawn]
    a = agreement(checks, rows)
    assert a.n == len(checks) and not (a.stale or a.missing or a.not_checkable)


@pytest.mark.parametrize("path", DEFAULT_PATHS, ids=lambda p: p.stem)
def test_committed_reasons_name_a_snapshot_page(path):
    snapshot = read_yaml(BENCHMARK_DIR / "questions.yaml", "benchmark file")["snapshot"]
    normalized = SNAPSHOTS_DIR / snapshot / "normalized"
    for c in load_hand_checks(path):
        pages = re.findall(r"[a-z0-9-]+(?:/[a-z0-9-]+)+", c.reason)
        assert any((normalized / f"{p}.md").is_file() for p in pages), f"{c.key}: reason names no page: {c.reason}"
