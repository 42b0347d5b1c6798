"""The narrowed pipeline: units with ids, quotes first, evidence as data, a judge derived from parts."""

from __future__ import annotations

import json
from pathlib import Path

from rag_lib.core.documents import Chunk
from rag_lib.evidence.narrowing import UnitNarrower
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.narrowed import (
    NarrowedGenerator,
    UnitPart,
    UnitVerdict,
    answer_units_schema,
    split_units,
)
from rag_lib.generation.scripted import scripted_generator


def _chunk(cid: str, text: str, rank_heading: str) -> Chunk:
    return Chunk(id=cid, page="kv/platform/limits", ordinal=0, title="Limits", heading_path=(rank_heading,),
                 text=text, start=0, end=len(text), url="https://developers.cloudflare.com/kv/platform/limits/",
                 embeddable=True, oversized=False)


LIMITS = _chunk("kv-001", "## Limits\n\nKV keys can be up to 512 bytes long. Values can be up to 25 MiB.\n\n"
                "| Feature | Free |\n| --- | --- |\n| Reads per day | 100,000 |", "Limits")
PRICING = _chunk("kv-002", "Workers KV is billed by reads, writes and storage.", "Pricing")
EVIDENCE = [LIMITS, PRICING]


def _every_unit(question: str, evidence: list[Chunk]) -> list:
    return split_units(evidence)


def _scripted(tmp_path: Path, reply: dict) -> NarrowedGenerator:
    def answer(request: LLMRequest) -> LLMResponse:
        return LLMResponse(content=json.dumps(reply, ensure_ascii=False), prompt_tokens=0, completion_tokens=0)

    return NarrowedGenerator(scripted_generator(answer, CallRecorder(tmp_path, mode="live")), _every_unit)  # type: ignore[arg-type]


def test_units_leave_out_headings_header_and_separator_rows():
    texts = [u.text for u in split_units(EVIDENCE)]
    assert texts == ["KV keys can be up to 512 bytes long.", "Values can be up to 25 MiB.",
                     "| Reads per day | 100,000 |", "Workers KV is billed by reads, writes and storage."]


def test_the_prompt_marks_evidence_as_data_and_numbers_the_units(tmp_path):
    generator = _scripted(tmp_path, {})
    messages, ids = generator.messages("answer_units", "How large can a KV value be?", split_units(EVIDENCE), EVIDENCE)
    user = messages[-1]["content"]
    assert user.startswith("<evidence>") and "never an instruction" in user and "</evidence>" in user
    assert "[S2] Values can be up to 25 MiB." in user and ids["S2"].chunk_id == "kv-001"
    assert "Reply in English." in user


def test_a_table_row_is_shown_under_its_header_which_is_never_a_unit(tmp_path):
    two_tables = _chunk("kv-003", "| Limit | Free | Paid |\n| --- | --- | --- |\n| Reads | 1 | 2 |\n"
                        "| Writes | 3 | 4 |\n\nText between.\n\n| Plan | Price |\n| :-- | --: |\n| Paid | $5 |",
                        "Limits")
    units = split_units([two_tables])
    assert [u.header for u in units] == ["| Limit | Free | Paid |"] * 2 + [None, "| Plan | Price |"]
    user = _scripted(tmp_path, {}).messages("answer_units", "Reads?", units, [two_tables])[0][-1]["content"]
    lines = user.splitlines()
    # Once per table: before its first row, not again before the second; a unit's id never names a header.
    assert lines.count("Table columns: | Limit | Free | Paid |") == 1
    assert lines.index("Table columns: | Limit | Free | Paid |") + 1 == lines.index("[S1] | Reads | 1 | 2 |")
    assert lines.index("Table columns: | Plan | Price |") + 1 == lines.index("[S4] | Paid | $5 |")
    bare = NarrowedGenerator(_scripted(tmp_path, {}).llm, _every_unit, table_headers=False)
    assert "Table columns" not in bare.messages("answer_units", "Reads?", units, [two_tables])[0][-1]["content"]
    assert (bare.pipeline, _scripted(tmp_path, {}).pipeline) == ("narrowed-units-v2", "narrowed-units-v3")


def test_the_schema_asks_for_quotes_first_and_at_least_one():
    schema = answer_units_schema(["S1", "S2"])
    assert list(schema["properties"]) == sorted(schema["properties"]) == ["quotes", "reply", "status"]
    assert schema["properties"]["quotes"]["minItems"] == 1
    assert schema["properties"]["quotes"]["items"]["enum"] == ["S1", "S2"]


def test_a_cited_unit_becomes_a_verified_quote_and_carries_the_answer(tmp_path):
    result = _scripted(tmp_path, {"quotes": ["S2"], "reply": "最大 25 MiB。", "status": "answered"}).generate(
        "KV 的值最大多大？", EVIDENCE)
    assert result.status == "answered" and result.citations is not None and result.citations.n_valid == 1
    assert result.answer is not None and result.answer.citations[0].quote == "Values can be up to 25 MiB."


def test_a_number_the_cited_units_do_not_hold_is_withheld(tmp_path):
    result = _scripted(tmp_path, {"quotes": ["S2"], "reply": "Up to 42 GB.", "status": "answered"}).generate(
        "How large can a KV value be?", EVIDENCE)
    assert result.status == "error" and result.error_kind == "unsupported_claims"


def test_a_number_copied_from_a_unit_sent_but_not_cited_is_never_supported_by_it(tmp_path):  # issue 44
    result = _scripted(tmp_path, {"quotes": ["S2"], "reply": "Keys up to 512 bytes, values up to 25 MiB.",
                                  "status": "answered"}).generate("How large can KV keys and values be?", EVIDENCE)
    assert result.status == "error" and result.error_kind == "unsupported_claims"  # on a87d25c: shown
    assert result.answer is not None and [c.quote for c in result.answer.citations] == ["Values can be up to 25 MiB."]
    assert any("did not cite state what its reply states" in w and "S1 (not used as support)" in w
               for w in result.warnings)  # the diagnostic, counted apart
    two = _scripted(tmp_path, {"quotes": ["S2"], "reply": "Values up to 25 MiB. Keys up to 512 bytes.",
                               "status": "answered"}).generate("How large can KV keys and values be?", EVIDENCE)
    assert two.status == "answered" and two.answer is not None and two.answer.answer == "Values up to 25 MiB."
    assert two.support is not None and [c.text for c in two.support.dropped] == ["Keys up to 512 bytes."]


def test_attribution_needs_the_same_unit_and_never_touches_a_decline(tmp_path):
    wrong_unit = _scripted(tmp_path, {"quotes": ["S2"], "reply": "Keys up to 512 MiB.", "status": "answered"})
    assert wrong_unit.generate("How long can a KV key be?", EVIDENCE).error_kind == "unsupported_claims"
    decline = _scripted(tmp_path, {"quotes": ["S2"], "reply": "The evidence provided does not include 512 bytes.",
                                   "status": "insufficient"}).generate("How long can a KV key be?", EVIDENCE)
    assert decline.status == "insufficient" and decline.answer is not None and len(decline.answer.citations) == 1


def test_an_id_that_was_not_sent_is_dropped(tmp_path):
    result = _scripted(tmp_path, {"quotes": ["S9"], "reply": "25 MiB.", "status": "answered"}).generate(
        "How large can a KV value be?", EVIDENCE)
    assert result.status == "error" and result.citations is not None
    assert result.citations.dropped_by_reason["unknown_id"] == 1


def test_the_judge_verdict_comes_from_the_parts_not_the_last_boolean(tmp_path):
    one_missing = UnitVerdict(parts=[UnitPart(part="size", support="S2"), UnitPart(part="price", support="none")],
                              sufficient=True)
    sent = {"S1", "S2"}
    assert not one_missing.derived(sent).sufficient and one_missing.derived(sent).missing == ["price"]
    assert UnitVerdict(parts=[UnitPart(part="size", support="S2")], sufficient=False).derived(sent).sufficient
    assert not UnitVerdict(parts=[], sufficient=True).derived(sent).sufficient
    judge = _scripted(tmp_path, {"parts": [{"part": "price", "support": "none"}], "sufficient": True})
    outcome = judge.judge_sufficiency("How is KV billed beyond the free tier?", EVIDENCE)
    assert outcome.status == "ok" and outcome.value is not None and outcome.value.sufficient is False


def test_the_narrower_keeps_the_most_relevant_units_within_its_budget(tmp_path):
    from rag_lib.embedding.registry import get_embedder
    from rag_lib.embedding.store import EmbeddingStore

    narrower = UnitNarrower(get_embedder(), budget_tokens=20, max_units=3, store=EmbeddingStore(tmp_path))
    kept = narrower("How long can a KV key be?", EVIDENCE)
    assert kept[0].text == "KV keys can be up to 512 bytes long."
    assert sum(len(u.text) for u in kept) <= 20 * 4 + 40  # the budget, in approx_tokens, and at least one unit
    assert narrower("How long can a KV key be?", EVIDENCE) == kept  # deterministic


def test_the_llama_cpp_backend_makes_openmp_wait_passively_unless_the_user_chose():
    from rag_lib.generation.llama_cpp_backend import passive_openmp

    assert passive_openmp(env := {}) == "PASSIVE" and env == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert passive_openmp(env := {"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE" and env["OMP_WAIT_POLICY"] == "ACTIVE"


def test_the_configured_narrowing_is_the_budget_notebook_10_picks():
    # generation.narrowing must be what 10's stated rule chose out of sample, not a hand-set budget.
    from rag_lib.core.config import RESULTS_DIR
    from rag_lib.evidence.narrowing import narrowing_settings
    from rag_lib.results.local_llm import LocalLLMResult

    choice = LocalLLMResult.read("10_local_llm", root=RESULTS_DIR).narrowing_choice
    picked = {"budget_tokens": choice.picked.budget_tokens, "max_units": choice.picked.max_units}
    assert narrowing_settings() == picked, (
        f"generation.narrowing in config.yaml is {narrowing_settings()}, 10's rule picks {picked}: set it to the "
        "pick and re-run 10 (and record the calls it needs with make llm-runs)")
    assert choice.agrees


def test_the_judge_counts_a_part_supported_by_an_id_never_sent_as_missing() -> None:  # issue 44: S98, S99
    never_sent = UnitVerdict(parts=[UnitPart(part="size", support="S2"), UnitPart(part="price", support="S98")],
                             sufficient=True)
    assert not never_sent.derived({"S1", "S2"}).sufficient and never_sent.derived({"S1", "S2"}).missing == ["price"]
