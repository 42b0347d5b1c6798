"""The verification stage (issue 44): each claim must be stated by the units its own model cited.

The cases are the ones found from outside on a87d25c, where each of these answers was shown: a number
bound to digits but not to its unit or what it counts, a Paid figure for a Free question, a true quote
carrying a false claim, a Chinese question answered in English, and support the workbook added.
"""

from __future__ import annotations

from rag_lib.verification import (
    CitedUnit,
    absent_names,
    asked_check,
    asked_kind_problem,
    claims_of,
    verify,
    verify_claims,
)
from rag_lib.verification.rules import (
    claim_problems,
    coverage,
    identifier_problems,
    number_problems,
    plans_in,
    polarity_problems,
)

TIMEOUT = CitedUnit("Builds will timeout after 20 minutes.")
SIZE = CitedUnit("The maximum file size for a single asset is 25 MiB.")
LIMITS_HEADER = "| Feature | Workers Free | Workers Paid |"
SCRIPT_SIZE = CitedUnit("| Worker size | 3 MB | 10 MB |", LIMITS_HEADER)
SECRET_LIST = CitedUnit("`wrangler secret list`")
SECRET_VALUES = CitedUnit("Secret values are not visible within Wrangler or Cloudflare dashboard after you define "
                          "them.")


def test_a_number_without_a_unit_never_matches_a_number_with_one() -> None:
    problems = number_problems("Pages uploads up to 20 files at once.", [TIMEOUT], "How many files can I upload?")
    assert problems == ["'20' with no unit is stated by none of its cited units"]
    assert not verify("How many files can I upload?", "Up to 20 files.", [TIMEOUT]).supported


def test_a_number_with_another_unit_or_count_noun_is_unsupported() -> None:
    assert number_problems("A project holds up to 25 files.", [SIZE], "How many files?")
    assert number_problems("Each request may read 20 keys.", [CitedUnit("You can read 20 values per request.")],
                           "How many keys?") == ["'20' counts 'keys' in the claim, but its cited units count "
                                                 "something else"]
    assert not number_problems("A single asset can be up to 25 MiB.", [SIZE], "How large can an asset be?")


def test_a_free_question_answered_with_the_paid_column_is_unsupported() -> None:
    question = "How large can a Worker be on the Free plan?"
    problems = number_problems("A Worker can be up to 10 MB.", [SCRIPT_SIZE], question)
    assert problems == ["'10 MB' is the paid figure in its cited units, not the free one the question names"]
    assert not number_problems("A Worker can be up to 3 MB.", [SCRIPT_SIZE], question)
    assert number_problems("On the Paid plan a Worker can be 3 MB.", [SCRIPT_SIZE], question)  # the claim's plan
    assert plans_in("免费计划下 Worker 最大多少？") == {"free"}
    assert number_problems("Worker 最大 10 MB。", [SCRIPT_SIZE], "免费计划下 Worker 最大多少？")


def test_a_true_quote_does_not_carry_a_false_claim() -> None:
    claim = "`wrangler secret list` prints the names and the values of every secret."
    problems = claim_problems(claim, [SECRET_LIST], "How do I see my secrets?")
    assert any("'every'" in p for p in problems) and any("own words" in p for p in problems)
    assert polarity_problems("Wrangler shows the secret values after you define them.", [SECRET_VALUES], "?") == [
        "its closest cited unit negates what it states"]
    asset = "There is no size limit for a single asset; 25 MiB is only a recommendation."
    assert not verify("Is there a size limit for an asset?", asset, [SIZE]).supported


def test_names_and_commands_must_be_in_the_claims_own_units() -> None:
    assert identifier_problems("Run `wrangler secret put` then `--https-key-path`.",
                               [CitedUnit("Run `wrangler secret put <KEY>` to add a secret.")], "?") == [
        "'--https-key-path' occurs in none of its cited units"]


def test_the_claims_that_pass_are_shown_and_the_others_listed() -> None:
    units = [SIZE, CitedUnit("Assets are cached at the edge.")]
    checked = verify("How large can an asset be?",
                     "A single asset can be up to 25 MiB. Assets are cached for 30 days.", units)
    assert checked.shown == "A single asset can be up to 25 MiB."
    assert [c.text for c in checked.dropped] == ["Assets are cached for 30 days."]
    assert "30 days" in (checked.problem or "")


def test_a_reply_in_another_language_than_the_question_is_labelled() -> None:
    checked = verify("单个资源最大多大？", "A single asset can be up to 25 MiB.", [SIZE])
    assert checked.language_problem == ("the answer is in English, not in Chinese, the language of the "
                                        "question")
    assert verify("单个资源最大多大？", "单个资源最大 25 MiB。", [SIZE]).language_problem is None


def test_coverage_is_measured_in_one_language_only() -> None:
    assert coverage("A single asset can be up to 25 MiB.", [SIZE], "How large?") == 1.0
    assert coverage("单个资源最大 25 MiB。", [SIZE], "多大？") is None  # across languages: not comparable
    assert claims_of("First claim. Second one; 第三。") == ["First claim.", "Second one; 第三。"]


def test_the_recorded_replies_cut_by_their_own_quote_are_repaired_or_refused() -> None:
    import json
    from pathlib import Path

    from rag_lib.verification import CUT_NOTE, repair_cut

    fixture = json.loads((Path(__file__).parent / "fixtures" / "cut_replies.json").read_text(encoding="utf-8"))
    assert len(fixture["replies"]) == 7
    for row in fixture["replies"]:
        repaired, note = repair_cut(row["reply"], 600)
        assert note == CUT_NOTE, row["question"]
        assert row["reply"].startswith(repaired) and len(repaired) < len(row["reply"].rstrip())
        assert repaired.count("`") % 2 == 0 and not repaired.rstrip().endswith(("=", "from"))
    a18 = next(r for r in fixture["replies"] if r["question"] == "a18")
    assert repair_cut(a18["reply"], 600) == ("", CUT_NOTE)  # nothing whole is left: refused as truncated
    assert repair_cut("The limit is 3 MB.", 600) == ("The limit is 3 MB.", None)


def test_claims_drop_enumerators_and_repeats_but_keep_numbers() -> None:
    text = "具体步骤如下：1. 在配置文件中添加绑定；2. 在代码中访问。Steps: 1. Do it. Do it. The limit is 2."
    assert claims_of(text) == ["具体步骤如下：", "在配置文件中添加绑定；", "在代码中访问。", "Steps:", "Do it.",
                               "The limit is 2."]


def test_a_lettered_name_must_be_in_the_claims_units_even_when_the_question_names_it() -> None:
    question = "R2 的 Class A 和 Class B 操作分别包括哪些？"
    units = [CitedUnit("Class B Operations include `HeadBucket`, `HeadObject`, `GetObject`.")]
    assert identifier_problems("R2 的 Class A 操作包括 `HeadBucket`。", units, question) == [
        "'Class A' occurs in none of its cited units"]
    assert not identifier_problems("R2 的 Class B 操作包括 `HeadBucket`。", units, question)


def test_a_duration_or_size_question_is_not_answered_by_another_kind_of_number() -> None:  # ask, 2026-12-05
    limits = [CitedUnit("| Maximum database size | 10 GB |"), CitedUnit("| Maximum SQL query duration | 30 seconds |")]
    off = verify("D1 的单个 SQL 查询最长可以执行多久？", "D1 的单个 SQL 查询最长可以执行 10 GB 的数据。", limits)
    assert off.shown is None and off.unasked == "the question asks for a duration and no shown claim states one"
    assert verify("D1 的单个 SQL 查询最长可以执行多久？", "最长 30 秒。", limits).shown == "最长 30 秒。"
    assert asked_kind_problem("How large can a D1 database be?", "It can be large.") == (
        "the question asks for a size and no shown claim states one")
    assert asked_kind_problem("How do I create a database?", "Run the create command.") is None


def test_a_count_is_answered_by_a_number_without_a_measurement_unit() -> None:  # claims check, en:n13
    question = "How many tables can a single D1 database contain at most?"
    assert asked_kind_problem(question, "Each D1 database can store up to 10 GB of data.") == (
        "the question asks for a count and no shown claim states one")
    assert asked_kind_problem(question, "A D1 database can hold up to 100,000 tables.") is None
    assert asked_kind_problem("一次 D1 batch() 调用最多可以包含多少条语句？", "D1 operates in auto-commit.") == (
        "the question asks for a count and no shown claim states one")


def test_a_quantity_asked_in_one_clause_of_several_does_not_withhold_an_answer_to_another() -> None:  # en:a13
    question = "How can I upload secrets together with my Worker code, and how many can one bulk request hold?"
    assert asked_kind_problem(question, "Use the `--secrets-file` flag on `wrangler deploy`.") is None
    assert asked_kind_problem("How many rows can D1 read per day? How many can it write?", "Reads are billed.") == (
        "the question asks for a count and no shown claim states one")


def test_an_answer_whose_quotes_are_about_something_else_is_not_shown() -> None:  # ask, 2026-12-05, question 10
    question = "Durable Objects 可以在 Workers 免费计划上使用吗？"
    pricing = "workers/platform/pricing > Pricing > Workers"
    units = [CitedUnit("By default, users have access to the Workers Free plan.", context=pricing),
             CitedUnit("The Workers Free plan includes limited usage of Workers, Pages Functions, Workers KV and "
                       "Hyperdrive.", context=pricing)]
    out = verify_claims(question, "By default, users have access to the Workers Free plan.",
                        [("By default, users have access to the Workers Free plan.", units)])
    assert out.shown is None
    assert out.unasked == ("its quotes name 1 of the question's 3 terms (not durable, objects): they are about "
                           "something else")
    plan = CitedUnit("Durable Objects are available on the Workers Free plan.", context=pricing)
    assert verify_claims(question, plan.text, [(plan.text, [plan])]).shown == plan.text


def test_a_quote_is_read_with_its_page_title_and_headings_to_decide_what_it_is_about() -> None:
    quote = "Object size is 5 TiB per object."
    question = "How large can an R2 object be?"
    on_its_page = asked_check(question, quote, [CitedUnit(quote, context="r2/platform/limits > Limits")])
    assert on_its_page.problem is None and on_its_page.named == ("r2", "object")
    assert asked_check(question, quote, [CitedUnit(quote)]).problem == (
        "its quotes name 1 of the question's 3 terms (not large, r2): they are about something else")


def test_a_figure_from_a_table_that_gives_each_plan_its_own_must_name_its_plan() -> None:  # claims check, zh:a02
    header = "| Feature | Workers Free | Workers Paid |"
    cpu = CitedUnit("| [CPU time](#cpu-time) | 10 ms | 5 min (default: 30 seconds) |", header)
    both = "Workers 免费版和付费版每个 HTTP 请求的 CPU 时间上限分别是多少？"
    assert number_problems("CPU time per HTTP request is 10 ms.", [cpu], both) == [
        "'10 ms' is the free figure of a table that gives each plan its own, and the claim names no plan"]
    assert number_problems("On Workers Free, CPU time per HTTP request is 10 ms.", [cpu], both) == []
    assert number_problems("CPU time per HTTP request is 10 ms.", [cpu], "免费版每个请求的 CPU 时间上限是多少？") == []
    same = CitedUnit("| Maximum database size | 10 GB | 10 GB |", header)  # one value for every plan
    assert number_problems("A database can hold 10 GB.", [same], "How large can a D1 database be?") == []


def test_a_name_from_the_question_that_the_evidence_never_mentions_is_unsupported() -> None:  # claims check, en:u09
    question = "How do I manage Worker secrets and environment variables with Terraform?"
    sent = [CitedUnit("Secrets can be added with `wrangler secret put`.",
                      context="workers/configuration/secrets > Secrets")]
    claim = "Terraform can manage secrets and environment variables for Workers."
    assert absent_names(claim, question, sent) == ["terraform"]
    out = verify(question, claim, sent, sent)
    assert out.shown is None and "it names terraform, which no unit of the evidence names" in out.claims[0].problems
    assert absent_names("Run `wrangler secret put`.", "How do I add a secret with Wrangler?", sent) == []
    assert absent_names(claim, question, []) == []  # without the evidence nothing is checked
