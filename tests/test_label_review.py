"""The blind second pass (rag_lib.labels.review): the seeded sample, the blindness of the sheet, Cohen's kappa."""

from __future__ import annotations

import pytest
import yaml

from rag_lib.labels.review.decisions import FRACTION, LABELS, SEED, LabelDecision, sample
from rag_lib.labels.review.review import agreement, cohen_kappa, load_review, recorded_first
from rag_lib.labels.review.sheet import FORBIDDEN_FIELDS, SHEET_PATH, dump, sheet


def _decisions(n_chunk: int = 100, n_question: int = 37, n_fact: int = 12) -> list[LabelDecision]:
    out = [LabelDecision("chunk", f"a{i % 9:02d}|chunk-{i:04d}", "gold" if i % 7 == 0 else "not_gold", "pool",
                         {"question": f"a{i % 9:02d}", "en": "q?", "zh": "问？", "text": f"text {i}"},
                         "C1" if i % 7 == 0 else "") for i in range(n_chunk)]
    out += [LabelDecision("question", f"batch|{'u' if i % 3 else 'a'}{i:02d}",
                          "unanswerable" if i % 3 else "answerable", "questions.yaml",
                          {"question": f"{'u' if i % 3 else 'a'}{i:02d}", "batch": "batch", "en": f"q{i}", "zh": "问"})
            for i in range(n_question)]
    out += [LabelDecision("key_fact", f"a{i:02d}|C1|1", "holds", "key_facts.yaml",
                          {"question": f"a{i:02d}", "fact_any_of": [f"fact {i}"]}) for i in range(n_fact)]
    return out


# ------------------------------------------------------------------------------------- sample
def test_sample_is_deterministic_and_a_fifth_of_each_kind() -> None:
    decisions = _decisions()
    first, again = sample(decisions), sample(list(reversed(decisions)))
    assert {k: [d.key for d in v] for k, v in first.items()} == {k: [d.key for d in v] for k, v in again.items()}
    assert {k: len(v) for k, v in first.items()} == {"chunk": 20, "question": 7, "key_fact": 2}
    other = sample(decisions, seed=SEED + 1)
    assert [d.key for d in other["chunk"]] != [d.key for d in first["chunk"]]


def test_an_added_decision_moves_the_sample_only_at_its_edge() -> None:
    # Drawn by hash, not by a shuffled list: one more decision cannot reshuffle the whole sample.
    decisions = _decisions()
    before = {d.key for d in sample(decisions)["chunk"]}
    after = {d.key for d in sample([*decisions, LabelDecision("chunk", "a99|new-chunk", "not_gold", "pool")])["chunk"]}
    assert len(before & after) >= len(before) - 1


def test_a_key_enumerated_twice_is_refused() -> None:
    d = LabelDecision("chunk", "a01|x", "gold", "locator")
    with pytest.raises(ValueError, match="twice"):
        sample([d, d])


# -------------------------------------------------------------------------------------- sheet
def test_the_sheet_holds_no_first_decision_reason_or_revealing_id() -> None:
    decisions = _decisions()
    data = sheet(decisions)
    for item in data["items"]:
        assert not set(item) & FORBIDDEN_FIELDS, item
        if item["kind"] == "question":
            assert "question" not in item  # u03 / a12 would give the decision away
    text = dump(data)
    assert "pool" not in text and "questions.yaml" not in text and "key_facts.yaml" not in text  # origins
    labels = {label for pair in LABELS.values() for label in pair}
    assert not any(isinstance(v, str) and v in labels for it in data["items"] for v in it.values())
    assert data["kinds"]["chunk"] == {"population": 100, "sampled": 20}


def test_committed_sheet_is_blind_and_a_fifth_per_kind() -> None:
    data = yaml.safe_load(SHEET_PATH.read_text(encoding="utf-8"))
    assert data["seed"] == SEED and data["fraction"] == FRACTION
    for kind, counts in data["kinds"].items():
        assert counts["sampled"] == round(FRACTION * counts["population"]), kind
        assert sum(it["kind"] == kind for it in data["items"]) == counts["sampled"]
    for item in data["items"]:
        assert not set(item) & FORBIDDEN_FIELDS, item["id"]
        assert item["kind"] != "question" or "question" not in item, item["id"]


def test_committed_review_judges_sheet_items_with_known_labels() -> None:
    ids = {it["id"]: it["kind"] for it in yaml.safe_load(SHEET_PATH.read_text(encoding="utf-8"))["items"]}
    review = load_review()
    assert review and all(ids.get(i) == row["kind"] for i, row in review.items())


# -------------------------------------------------------------------------------------- kappa
def test_kappa_on_a_hand_computed_table() -> None:
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no. p_o = 35/50 = 0.7;
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    first = ["y"] * 25 + ["n"] * 25
    second = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(first, second) == pytest.approx(0.4)
    assert cohen_kappa(["y", "n", "y"], ["y", "n", "y"]) == pytest.approx(1.0)
    assert cohen_kappa(["y", "n"], ["n", "y"]) == pytest.approx(-1.0)


def test_kappa_with_one_label_throughout() -> None:
    assert cohen_kappa(["holds"] * 4, ["holds"] * 4) is None  # 0/0: chance agreement is 1
    assert cohen_kappa(["holds"] * 4, ["holds"] * 3 + ["fails"]) == pytest.approx(0.0)
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["y"], [])


def test_agreement_lists_label_and_piece_disagreements() -> None:
    decisions = [LabelDecision("chunk", "a01|x", "gold", "locator", detail="C1"),
                 LabelDecision("chunk", "a01|y", "not_gold", "pool"),
                 LabelDecision("chunk", "a02|z", "gold", "audit", detail="C2"),
                 LabelDecision("question", "b|u01", "unanswerable", "questions.yaml")]
    items = [{"id": f"c{i}", "kind": d.kind, "ref": d.ref} for i, d in enumerate(decisions)]
    review = {"c0": {"decision": "gold", "pieces": ["C1"]}, "c1": {"decision": "gold", "pieces": ["C1"]},
              "c2": {"decision": "gold", "pieces": ["C1"]}}  # c3 not judged
    rows, disagreements = agreement(items, review, {d.ref: d for d in decisions})
    chunk = next(r for r in rows if r.kind == "chunk")
    assert (chunk.judged, chunk.agree, chunk.both_gold, chunk.piece_agree) == (3, 2, 2, 1)
    assert chunk.kappa == pytest.approx(0.0)  # p_o = 2/3, p_e = (2/3 * 1) = 2/3
    assert [d["id"] for d in disagreements] == ["c1", "c2"]
    assert next(r for r in rows if r.kind == "question").judged == 0


def test_a_corrected_item_is_compared_with_its_recorded_first_decision(tmp_path) -> None:
    # c1's disagreement was resolved and the label corrected to gold: the files now agree with the second pass.
    decisions = [LabelDecision("chunk", "a01|x", "gold", "locator", detail="C1"),
                 LabelDecision("chunk", "a01|y", "gold", "locator", detail="C1")]
    items = [{"id": f"c{i}", "kind": "chunk", "ref": d.ref} for i, d in enumerate(decisions)]
    review = {"c0": {"decision": "gold", "pieces": ["C1"]}, "c1": {"decision": "gold", "pieces": ["C1"]}}
    resolutions = tmp_path / "resolutions.yaml"
    resolutions.write_text("resolutions:\n- {id: c1, kind: chunk, first_decision: not_gold, right: second}\n"
                           "- {id: c9, kind: chunk, right: first}\n")  # no recorded first decision: not used
    assert recorded_first(resolutions) == {"c1": ("not_gold", "")}
    rows, disagreements = agreement(items, review, {d.ref: d for d in decisions}, recorded_first(resolutions))
    chunk = next(r for r in rows if r.kind == "chunk")
    assert (chunk.judged, chunk.agree) == (2, 1) and [d["id"] for d in disagreements] == ["c1"]
    assert disagreements[0]["first"] == "not_gold"
    rows, _ = agreement(items, review, {d.ref: d for d in decisions})  # without it the correction reads as agreement
    assert next(r for r in rows if r.kind == "chunk").agree == 2
