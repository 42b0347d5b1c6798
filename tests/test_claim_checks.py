"""The blind claim-by-claim hand check's figures (issue 44 item 6) from two readers' judgements."""

from __future__ import annotations

import pytest
import yaml

from rag_lib.evaluation.claim_checks import agreement, answer_claims, asked_rows, draw_sheet, verdict

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
    assert figures.answering_by_language == {"zh": (0, 1), "en": (1, 2)}  # accepted and answering, of shown


def test_the_off_question_check_is_sorted_by_the_readers_answers_verdicts_at_each_share() -> None:
    sheet = [{"id": f"en:a0{i}", "answer": "x"} for i in range(1, 5)]
    says = {"en:a01": "complete", "en:a02": "no", "en:a03": "partial", "en:a04": "no"}
    readers = {key: {"claims": {}, "answers": verdict} for key, verdict in says.items()}
    shown = {"status": "answered", "answer": "x", "error_kind": None, "kind_unmet": False}
    off = {"status": "error", "answer": "x", "error_kind": "off_question", "kind_unmet": False}
    rows = {"en:a01": {**shown, "terms_named": 3, "terms_asked": 4},  # 0.75: shown at 0.5, not at 1.0
            "en:a02": {**off, "terms_named": 1, "terms_asked": 4},  # 0.25: withheld at 0.5
            "en:a03": {**shown, "terms_named": 0, "terms_asked": 0},  # nothing checkable: always shown
            "en:a04": {**off, "kind_unmet": True, "terms_named": 4, "terms_asked": 4}}  # the quantity rule
    got = {row.min_share: (row.answering_shown, row.answering, row.off_shown, row.off)
           for row in asked_rows(sheet, readers, readers, rows, (0.0, 0.5, 1.0))}
    assert got == {0.0: (2, 2, 1, 2), 0.5: (2, 2, 0, 2), 1.0: (1, 2, 0, 2)}
    stale = {**rows, "en:a02": {**shown, "terms_named": 1, "terms_asked": 4}}  # shown though below half: stale
    with pytest.raises(ValueError, match="en:a02"):
        asked_rows(sheet, readers, readers, stale, (0.5,))


def test_the_sheet_holds_only_shown_answers_their_claims_and_questions() -> None:
    rows = {f"{lang}:ungated": {"rows": [
        {"question": "a01", "status": "answered", "answer": "It is 3 MB. It is free.", "correct": True},
        {"question": "a02", "status": "error", "answer": "", "correct": None}]} for lang in ("zh", "en")}
    sheet = draw_sheet({"answers": {"narrowed": {"runs": rows}}}, {("zh", "a01"): "多大？", ("en", "a01"): "How big?"})
    assert sorted(e["id"] for e in sheet) == ["en:a01", "zh:a01"]
    assert set(sheet[0]) == {"id", "question", "answer", "claims"}  # no key facts, no verdicts
    assert [c["claim"] for c in sheet[0]["claims"]] == ["It is 3 MB.", "It is free."]


def test_a_draw_per_language_does_not_depend_on_the_other_language() -> None:
    def runs(en_answers: int) -> dict:
        rows = {"zh:ungated": {"rows": [{"question": f"a{i:02d}", "status": "answered", "answer": f"答案 {i}。"}
                                        for i in range(10)]},
                "en:ungated": {"rows": [{"question": f"a{i:02d}", "status": "answered", "answer": f"Answer {i}."}
                                        for i in range(en_answers)]}}
        return {"answers": {"claims": {"runs": rows}}}

    questions = {(lang, f"a{i:02d}"): "?" for lang in ("zh", "en") for i in range(10)}
    zh_only = draw_sheet(runs(0), questions, generator="claims", per_language=4, languages=("zh",))
    both = draw_sheet(runs(10), questions, generator="claims", per_language=4)
    assert [e["id"] for e in zh_only] == [e["id"] for e in both[:4]]  # the zh draw is the same with en added
    assert [e["id"][:2] for e in both] == ["zh"] * 4 + ["en"] * 4
    assert len({e["id"] for e in both}) == 8


def test_the_claims_pipeline_keeps_its_own_claims_on_the_sheet() -> None:
    answer = "Only change its bindings (i.e. a variable) without reloading code.\nSecrets are encrypted."
    assert answer_claims(answer, "claims") == ["Only change its bindings (i.e. a variable) without reloading code.",
                                               "Secrets are encrypted."]
    assert len(answer_claims(answer, "narrowed")) != 2  # the sentence split cuts at "i.e.": not the model's claims


@pytest.mark.parametrize("check", ["narrowed", "claims"])
def test_each_committed_check_judges_every_claim_of_its_sheet(check: str) -> None:
    from rag_lib.evaluation.claim_checks import ANSWER_VERDICTS, CHECKS

    _, folder, _ = CHECKS[check]
    sheet = yaml.safe_load((folder / "sheet.yaml").read_text(encoding="utf-8"))["answers"]
    for reader in ("a", "b"):
        judged = yaml.safe_load((folder / f"reader_{reader}.yaml").read_text(encoding="utf-8"))["answers"]
        assert set(judged) == {entry["id"] for entry in sheet}, f"{check} reader {reader}: ids differ from the sheet"
        for entry in sheet:
            mine = judged[entry["id"]]
            assert set(mine["claims"]) == {c["n"] for c in entry["claims"]}, f"{check} {reader} {entry['id']}"
            assert mine["answers"] in ANSWER_VERDICTS
            false = {n for n, v in mine["claims"].items() if verdict(v) == "false"}
            assert false <= set(mine.get("why") or {}), f"{check} {reader} {entry['id']}: a false claim has no reason"
