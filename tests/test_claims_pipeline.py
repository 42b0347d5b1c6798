"""narrowed-claims-v4: each claim cites its own units and is checked against them alone; the answer is the
claims that pass. A question in another language than the evidence also gets a reply, never the answer: it stands
beside the claims as their rendering only when it says what they say (numbers, names, commands, negation)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rag_lib.core.documents import Chunk
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.narrowed import (
    DECLINE_TEXT,
    NarrowedGenerator,
    answer_claims_schema,
    evidence_language,
    split_units,
)
from rag_lib.generation.scripted import scripted_generator
from rag_lib.verification import CitedUnit, reply_problem, verify_claims


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(id=cid, page="kv/platform/limits", ordinal=0, title="Limits", heading_path=("Limits",),
                 text=text, start=0, end=len(text), url="https://developers.cloudflare.com/kv/platform/limits/",
                 embeddable=True, oversized=False)


EVIDENCE = [_chunk("kv-001", "KV keys can be up to 512 bytes long. Values can be up to 25 MiB.\n\n"
                   "Builds will timeout after 20 minutes."),
            _chunk("kv-002", "The `wrangler secret list` command lists the names of the secrets. "
                   "Secret values are not shown.")]
# S1 keys 512 bytes, S2 values 25 MiB, S3 builds 20 minutes, S4 secret list, S5 values not shown


def _generator(tmp_path: Path, reply: dict) -> tuple[NarrowedGenerator, list[LLMRequest]]:
    asked: list[LLMRequest] = []

    def answer(request: LLMRequest) -> LLMResponse:
        asked.append(request)
        return LLMResponse(content=json.dumps(reply, ensure_ascii=False), prompt_tokens=0, completion_tokens=0)

    llm = scripted_generator(answer, CallRecorder(tmp_path, mode="live"))
    return NarrowedGenerator(llm, lambda q, e: split_units(e), claims=True), asked  # type: ignore[arg-type]


def test_the_schema_asks_for_claims_with_their_own_quotes_and_a_reply_only_across_languages():
    same, other = answer_claims_schema(["S1", "S2"], False), answer_claims_schema(["S1", "S2"], True)
    assert list(same["properties"]) == ["claims", "status"]
    assert list(other["properties"]) == sorted(other["properties"]) == ["claims", "reply", "status"]
    claim = same["properties"]["claims"]["items"]
    assert list(claim["properties"]) == ["quotes", "text"]  # ids first: llama.cpp writes keys in this order
    assert claim["properties"]["quotes"]["items"]["enum"] == ["S1", "S2"]
    # English evidence: the decoder cannot write a claim in Chinese, nor an unescaped quote that ends it early
    latin = re.compile(claim["properties"]["text"]["pattern"])
    assert latin.match('Values can be up to 25 MiB; import from \\"cloudflare:workers\\".')
    assert not latin.match("值最大 25 MiB") and not latin.match('from "cloudflare') and not latin.match("x" * 301)
    chinese_evidence = answer_claims_schema(["S1"], False, "zh")["properties"]["claims"]["items"]
    assert "pattern" not in chinese_evidence["properties"]["text"]


def test_the_claims_schema_compiles_to_a_llama_cpp_grammar():
    gbnf = pytest.importorskip("llama_cpp.llama_grammar")
    assert "claims-kv" in gbnf.json_schema_to_gbnf(json.dumps(answer_claims_schema(["S1", "S2"], True)))


def test_the_prompt_names_the_evidence_language_and_asks_for_a_reply_only_for_another(tmp_path):
    generator, _ = _generator(tmp_path, {})
    units = split_units(EVIDENCE)
    assert evidence_language(units) == "en"
    en = generator.messages("answer_claims", "How large can a KV value be?", units, EVIDENCE)[0][0]["content"]
    zh = generator.messages("answer_claims", "KV 的值最大可以多大？", units, EVIDENCE)[0][0]["content"]
    assert "short plain sentence in English" in en and '"reply"' not in en and "$" not in en
    assert '"reply": the answer written in Chinese' in zh
    assert generator.pipeline == "narrowed-claims-v4"


def test_each_claim_is_checked_against_its_own_quotes_not_the_answers(tmp_path):
    # "20 files" is carried by S3's digits only; cited for the first claim, S3 would not help it here either.
    generator, _ = _generator(tmp_path, {"claims": [
        {"quotes": ["S2"], "text": "Values can be up to 25 MiB."},
        {"quotes": ["S2"], "text": "Builds will timeout after 20 minutes."}], "status": "answered"})
    result = generator.generate("How large can a KV value be?", EVIDENCE)
    assert result.status == "answered"
    assert result.answer.answer == "Values can be up to 25 MiB."  # the second claim's own quote is S2
    assert [c.supported for c in result.support.claims] == [True, False]


def test_a_claim_resting_on_another_claims_quote_is_dropped_though_the_answer_cites_it(tmp_path):
    # Under narrowed-units-v3 both claims are checked against S2 and S3 together.
    generator, _ = _generator(tmp_path, {"claims": [
        {"quotes": ["S3"], "text": "Builds will timeout after 20 minutes."},
        {"quotes": ["S3"], "text": "Values can be up to 25 MiB."}], "status": "answered"})
    result = generator.generate("What are the limits?", EVIDENCE)
    assert [c.supported for c in result.support.claims] == [True, False]
    assert "25 MiB" not in result.answer.answer


def test_claims_in_the_evidence_language_get_the_word_checks_a_chinese_reply_escapes(tmp_path):
    # For a Chinese question the claim is written in English, so its own words are compared with its quote's;
    # the same statement written only in Chinese would share no words with it (coverage is None across
    # languages).
    claim = "The `wrangler secret list` command prints every secret with its value and its creation date."
    generator, _ = _generator(tmp_path, {"claims": [{"quotes": ["S4"], "text": claim}],
                                         "reply": "`wrangler secret list` 会显示每个 secret 的值和创建日期。",
                                         "status": "answered"})
    result = generator.generate("`wrangler secret list` 会显示什么？", EVIDENCE)
    assert result.status != "answered"
    assert any("own words" in p for p in result.support.claims[0].problems)
    assert any("'every'" in p for p in result.support.claims[0].problems)


def test_a_chinese_reply_stands_beside_the_verified_claims_when_it_says_what_they_say(tmp_path):
    generator, asked = _generator(tmp_path, {"claims": [{"quotes": ["S2"], "text": "Values can be up to 25 MiB."}],
                                             "reply": "KV 的值最大可以是 25 MiB。", "status": "answered"})
    result = generator.generate("KV 的值最大可以多大？", EVIDENCE)
    # The answer is the verified claim; the reply is its rendering, never checked word for word.
    assert result.status == "answered" and result.answer.answer == "Values can be up to 25 MiB."
    assert result.support.rendering == "KV 的值最大可以是 25 MiB。" and result.support.reply_problem is None
    assert '"reply"' in asked[0].messages[0]["content"]


@pytest.mark.parametrize("reply, problem", [
    ("KV 的值最大可以是 25 MB。", "states 25 MB, which no verified claim states"),
    ("KV 的值有大小限制。", "leaves out 25 MiB"),
    ("KV 的值不能超过 25 MiB，也不能是空的。", "it negates what its claims state"),
])
def test_a_reply_that_does_not_say_what_its_claims_say_is_left_out(tmp_path, reply, problem):
    generator, _ = _generator(tmp_path, {"claims": [{"quotes": ["S2"], "text": "Values can be up to 25 MiB."}],
                                         "reply": reply, "status": "answered"})
    result = generator.generate("KV 的值最大可以多大？", EVIDENCE)
    assert result.status == "answered" and result.answer.answer == "Values can be up to 25 MiB."
    assert result.support.rendering is None and problem in result.support.reply_problem
    assert any(problem in w for w in result.warnings)


def test_a_reply_whose_claims_state_nothing_checkable_is_left_out(tmp_path):
    # A reply with no number, name or command agrees vacuously with claims that have none: it is not shown.
    generator, _ = _generator(tmp_path, {"claims": [
        {"quotes": ["S5"], "text": "Secret values are not shown."}],
        "reply": "Node.js 兼容模式是加密的，适合存 KV。", "status": "answered"})
    result = generator.generate("secret 的值会显示出来吗？", EVIDENCE)
    assert result.answer.answer == "Secret values are not shown."
    assert result.support.rendering is None and "no number, name or command" in result.support.reply_problem


def test_when_a_claim_is_dropped_the_reply_is_not_shown_only_the_claims_that_pass(tmp_path):
    generator, _ = _generator(tmp_path, {"claims": [
        {"quotes": ["S2"], "text": "Values can be up to 25 MiB."},
        {"quotes": ["S1"], "text": "Keys can be up to 1024 bytes long."}],
        "reply": "值最大 25 MiB，键最长 1024 字节。", "status": "answered"})
    result = generator.generate("KV 的键和值有多大？", EVIDENCE)
    assert result.answer.answer == "Values can be up to 25 MiB." and result.support.rendering is None
    assert "1024" in result.support.dropped[0].text


def test_a_decline_without_a_reply_says_so_and_unknown_ids_are_dropped(tmp_path):
    generator, _ = _generator(tmp_path, {"claims": [{"quotes": ["S1"], "text": "KV keys can be up to 512 bytes long."}],
                                         "status": "insufficient"})
    result = generator.generate("How much does KV cost per GB?", EVIDENCE)
    assert result.status == "insufficient" and result.answer.answer == DECLINE_TEXT


def test_a_claim_citing_only_an_id_never_sent_is_not_shown():
    assert verify_claims("How large?", "Values can be up to 25 MiB.",
                         [("Values can be up to 25 MiB.", [])]).shown is None


def test_reply_problem_ignores_what_the_question_states():
    claims = ["Values can be up to 25 MiB."]
    assert reply_problem("512 字节的键可以存 25 MiB 的值。", claims, "512 bytes 的键？") is None
    units = [CitedUnit("Values can be up to 25 MiB.")]
    assert verify_claims("多大？", "值有限制。", [("Values can be up to 25 MiB.", units)]).reply_problem
