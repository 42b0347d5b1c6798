"""The blind claim-by-claim hand check's figures (issue 44 item 6) from two readers' judgements."""

from __future__ import annotations

import pytest
import yaml

from rag_lib.evaluation.claim_checks import agreement, draw_sheet, verdict

SHEET = [{"id": "zh:a01", "claims": [{"n": 1}, {"n": 2}]}, {"id": "en:a01", "claims": [{"n": 1}]},
         {"id": "en:a02", "claims": [{"n": 1}]}]


def test_yaml_booleans_are_read_as_verdicts_and_anything_else_is_refused() -> None:
    judged = yaml.safe_load("claims: {1: true, 2: false, 3: not_a_claim}")["claims"]
    assert [verdict(v) for v in judged.values()] == ["true", "false", "not_a_claim"]
    with pytest.raises(ValueError, match="maybe"):
        verdict("maybe")


def test_precision_of_shown_kappa_and_the_key_fact_measure() -> None:
    a = {"zh:a01": {"claims": {1: True, 2: False}, "answers": "no"},
         "en:a01": {"claims": {1: True}, "answers": "complete"}, "en:a02": {"claims": {1: True}, "answers": "complete"}}
    b = {"zh:a01": {"claims": {1: True, 2: False}, "answers": "no"},
         "en:a01": {"claims": {1: True}, "answers": "complete"}, "en:a02": {"claims": {1: False}, "answers": "no"}}
    figures = agreement(SHEET, a, b, {"zh:a01": True, "en:a01": True, "en:a02": None})
    assert figures.by_language == {"zh": (0, 1), "en": (1, 2)}  # a false claim by either reader: not accepted
    assert figures.claims_judged == 4 and figures.keyfact_precision == (1, 2) and figures.keyfact_recall == (1, 1)
    assert figures.lines()[0].startswith("precision of shown (zh): 0/1 = 0.00 [")


def test_the_sheet_holds_only_shown_answers_their_claims_and_questions() -> None:
    rows = {f"{lang}:ungated": {"rows": [
        {"question": "a01", "status": "answered", "answer": "It is 3 MB. It is free.", "correct": True},
        {"question": "a02", "status": "error", "answer": "", "correct": None}]} for lang in ("zh", "en")}
    sheet = draw_sheet({"answers": {"narrowed": {"runs": rows}}}, {("zh", "a01"): "多大？", ("en", "a01"): "How big?"})
    assert sorted(e["id"] for e in sheet) == ["en:a01", "zh:a01"]
    assert set(sheet[0]) == {"id", "question", "answer", "claims"}  # no key facts, no verdicts
    assert [c["claim"] for c in sheet[0]["claims"]] == ["It is 3 MB.", "It is free."]
