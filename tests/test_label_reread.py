"""Labels v4's re-read selection: which not-gold decisions of the key-fact rule are read again, blind."""

from __future__ import annotations

import yaml

from rag_lib.evaluation.readers import MissedGold, NewGold, majority_gold
from rag_lib.labels.review.decisions import LabelDecision
from rag_lib.labels.review.reread import (
    apply_gold,
    candidates,
    locator_phrases,
    phrase_share,
    reread_sheet,
    rule_reasons,
)
from rag_lib.labels.review.sheet import FORBIDDEN_FIELDS

POOL = [
    {"question": "a01", "piece": "*", "chunk": "c1", "decision": "not_gold",
     "reason": "about d1/platform/limits; C1 partial: states '100,000' but not '1027'"},
    {"question": "a01", "piece": "*", "chunk": "c2", "decision": "not_gold",
     "reason": "about d1/worker-api; C1: none of its key facts ('100,000', '1027')"},
    {"question": "a01", "piece": "*", "chunk": "c3", "decision": "not_gold",
     "reason": "about d1/get-started; C1: none of its key facts ('100,000', '1027')"},
    {"question": "a01", "piece": "*", "chunk": "c4", "decision": "not_gold", "reason": "read by hand: a pointer"},
]
PHRASES = locator_phrases([{"question": "a01", "phrase": "Maximum number of columns per table is limited"}])


def _decision(chunk: str, text: str, first: str = "not_gold") -> LabelDecision:
    show = {"question": "a01", "en": "How many columns?", "pieces": [{"piece": "C1", "what": "100 columns"}],
            "chunk": chunk, "text": text}
    return LabelDecision("chunk", f"a01|{chunk}", first, "pool", show)


def test_partial_and_phrase_decisions_of_the_rule_are_selected_and_hand_reads_are_not():
    decisions = [_decision("c1", "Rows read per day: 100,000."),
                 _decision("c2", "The maximum number of columns per table is limited by the engine."),
                 _decision("c3", "Create a database with wrangler."),
                 _decision("c4", "Maximum number of columns per table is limited."),  # decided by hand
                 _decision("c5", "Maximum number of columns per table is limited.", first="gold")]
    chosen = {d.key: why for d, why in candidates(decisions, rule_reasons(POOL), PHRASES)}
    assert chosen == {"a01|c1": "partial", "a01|c2": "phrase"}


def test_phrase_share_needs_most_of_a_phrases_words():
    assert phrase_share("the maximum number of columns", ["Maximum number of columns per table is limited"]) < 0.75
    assert phrase_share("anything", ["a b"]) == 0.0  # a phrase of fewer than three content words counts for nothing


def test_the_reread_sheet_gives_no_decision_away():
    sheet = reread_sheet([(_decision("c1", "Rows read per day: 100,000."), "partial")])
    assert sheet["items"][0]["id"] == "r001"
    assert not FORBIDDEN_FIELDS & set(sheet["items"][0])


ITEM = {"id": "r001", "question": "a01", "chunk": "c1", "batch": "b", "page": "d1/platform/limits",
        "heading": "Limits > Columns", "text": "A table can have at most 100 columns."}


def test_gold_needs_two_readers_naming_the_same_piece_and_a_phrase_in_the_chunk():
    gold = {"decision": "gold", "pieces": ["C1"], "phrase": "at most 100 columns"}
    no = {"decision": "not_gold"}
    assert majority_gold([ITEM], [{"r001": gold}, {"r001": no}]) == []
    found = majority_gold([ITEM], [{"r001": gold}, {"r001": no}, {"r001": gold}])
    assert [(g.piece, g.heading, g.phrase, g.votes) for g in found] == [("C1", ("Limits", "Columns"),
                                                                         "at most 100 columns", 2)]
    other_piece = {**gold, "pieces": ["C2"]}
    assert majority_gold([ITEM], [{"r001": gold}, {"r001": other_piece}]) == []
    invented = {**gold, "phrase": "up to 100 columns"}  # not in the chunk: no locator could resolve
    assert majority_gold([ITEM], [{"r001": invented}, {"r001": invented}]) == []


def test_the_missed_gold_caveat_gives_the_share_its_exact_interval_and_the_population():
    text = MissedGold(found=1, n=150, population=4605).caveat()
    assert "1 of 150" in text and "0.7%" in text and "[0.02%, 3.7%]" in text and "of the 4,605" in text
    assert MissedGold(0, 150, 4605).interval[0] == 0.0


def test_applying_a_new_gold_turns_its_decision_and_adds_a_locator(tmp_path):
    (tmp_path / "batches").mkdir()
    (tmp_path / "pool_decisions.yaml").write_text(
        "decisions:\n- question: a01\n  piece: '*'\n  chunk: c1\n  decision: not_gold\n  reason: 'about x'\n"
        "- question: a02\n  piece: '*'\n  chunk: c1\n  decision: not_gold\n  reason: r\n", encoding="utf-8")
    (tmp_path / "audit_decisions.yaml").write_text("decisions: []\n", encoding="utf-8")
    (tmp_path / "questions.yaml").write_text(
        "questions:\n- id: a01\n  pieces:\n  - id: C1\n    what: w\n    locators:\n"
        "    - {page: p, heading: [], phrase: \"old\"}\n", encoding="utf-8")
    gold = NewGold("r001", "a01", "C1", "c1", "lab", "d1/platform/limits", ("Columns",), 'at most "100" columns', 2)
    done = apply_gold([gold], {"r001": "labels v4 (test)"}, "lab", folder=tmp_path)
    assert len(done) == 2
    decisions = yaml.safe_load((tmp_path / "pool_decisions.yaml").read_text(encoding="utf-8"))["decisions"]
    assert decisions[0] == {"question": "a01", "piece": "C1", "chunk": "c1", "decision": "gold",
                            "reason": "labels v4 (test)"}
    assert decisions[1]["question"] == "a02" and decisions[1]["decision"] == "not_gold"
    pieces = yaml.safe_load((tmp_path / "questions.yaml").read_text(encoding="utf-8"))["questions"][0]["pieces"]
    assert pieces[0]["locators"][-1] == {"page": "d1/platform/limits", "heading": ["Columns"],
                                         "phrase": 'at most "100" columns'}
