"""Evidence-sufficiency gates: exact decisions on hand-made chunks, and the gate measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_lib.benchmark import parse_benchmark, resolve
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError, WorkbookError
from rag_lib.evidence import (
    AllOf,
    AspectGate,
    Case,
    ChecklistGate,
    LLMJudgeGate,
    ScoredQuestion,
    ScoreFloorGate,
    aspects,
    choose,
    cross_validate,
    fit,
    get_gate,
    score_cases,
    stem,
    sweep,
)
from rag_lib.evidence.calibration import held_out_parameters
from rag_lib.evidence.gated import GatedGenerator
from rag_lib.generation.llm_calls import LLMCallError
from rag_lib.generation.scripted import CountingRecorder, scripted_generator
from rag_lib.retrieval import Ranking


def _chunk(cid: str, page: str, heading: str, text: str) -> Chunk:
    return Chunk(id=cid, page=page, ordinal=0, title=page.split("/")[-1].title(), heading_path=(heading,),
                 text=text, start=0, end=len(text), url=f"https://example.test/{page}/", embeddable=True,
                 oversized=False)


BINDING = _chunk("bind", "pages/functions/bindings", "R2 buckets",
                 "Redeploy your project for the binding to take effect. Access it on context.env.")
WRANGLER = _chunk("wr", "workers/wrangler/configuration", "R2 buckets", "Configure r2_buckets in wrangler.toml.")
PRICING = _chunk("price", "workers/platform/pricing", "Pricing", "Workers Free includes 100,000 requests per day.")
CHUNKS = [BINDING, WRANGLER, PRICING]

BENCH = resolve(parse_benchmark({"questions": [
    {"id": "q05", "type": "answerable", "compound": True, "zh": "怎么配置 R2？", "en": "How do I configure R2?",
     "pieces": [
         {"id": "C1", "what": "redeploy after adding the binding",
          "locators": [{"page": "pages/functions/bindings", "heading": ["R2 buckets"], "phrase": "Redeploy your"}]},
         {"id": "C2", "what": "the Wrangler syntax",
          "locators": [{"page": "workers/wrangler/configuration", "phrase": "r2_buckets"}]}]},
    {"id": "q09a", "type": "unanswerable", "compound": False, "zh": "KV 免费额度？", "en": "KV free allowance?",
     "absent": ["1,000 / day"]},
]}), CHUNKS)


def _ranking(*pairs: tuple[str, float]) -> Ranking:
    return Ranking(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), source="dense")


# -- checklist --------------------------------------------------------------------------------------

def test_checklist_lists_the_missing_pieces_by_what() -> None:
    gate = ChecklistGate(BENCH)
    partial = gate.decide("How do I configure R2?", [BINDING, PRICING])
    assert (partial.sufficient, partial.missing) == (False, ("the Wrangler syntax",))
    assert dict(partial.scores) == {"pieces": 2, "covered": 1}
    full = gate.decide("怎么配置 R2？", [WRANGLER, BINDING])  # either language
    assert (full.sufficient, full.missing) == (True, ())
    unanswerable = gate.decide("KV free allowance?", CHUNKS)
    assert not unanswerable.sufficient and "unanswerable" in unanswerable.reason
    with pytest.raises(BenchmarkError, match="label-free gate"):
        gate.decide("Some other question?", CHUNKS)


# -- floor ------------------------------------------------------------------------------------------

def test_floor_compares_the_best_score_and_refuses_another_scale() -> None:
    gate = ScoreFloorGate(0.85, source="dense")
    assert gate.decide("q", [BINDING], _ranking(("bind", 0.85), ("wr", 0.2))).sufficient  # at the floor: pass
    low = gate.decide("q", [BINDING], _ranking(("bind", 0.8499)))
    assert not low.sufficient and dict(low.scores) == {"best_score": 0.8499, "floor": 0.85}
    with pytest.raises(WorkbookError, match="different scales"):
        gate.decide("q", [BINDING], Ranking(("bind",), (3.2,), source="bm25"))
    with pytest.raises(WorkbookError, match="ranking="):
        gate.decide("q", [BINDING])


# -- aspects ----------------------------------------------------------------------------------------

def test_aspects_of_english_chinese_and_identifiers() -> None:
    assert aspects("How do I configure the R2 binding in wrangler.toml?") == ["configure", "r2", "binding",
                                                                              "wrangler.toml"]
    assert aspects("怎么给 Pages 配置 R2 绑定？") == ["pages", "配置", "r2", "绑定"]
    assert (stem("configuration"), stem("configure"), stem("billed"), stem("r2")) == ("configur", "configur",
                                                                                      "bill", "r2")


def test_aspect_gate_exact_decisions() -> None:
    gate = AspectGate()
    matched, unmatched, unchecked = gate.check("How do I configure the R2 binding and redeploy?", [BINDING, WRANGLER])
    assert (matched, unmatched, unchecked) == (["configure", "r2", "binding", "redeploy"], [], [])
    kv = gate.decide("What is the KV free allowance?", [PRICING])
    assert kv.sufficient is False and kv.missing == ("kv", "allowance")
    assert kv.scores["aspect_coverage"] == pytest.approx(1 / 3)
    assert AspectGate(min_coverage=0.3).decide("What is the KV free allowance?", [PRICING]).sufficient
    zh = gate.decide("怎么给 R2 配置绑定？", [BINDING])  # Chinese words cannot be checked on English text
    assert zh.sufficient and (zh.scores["matched"], zh.scores["unchecked"]) == (1, 2)
    nothing = gate.decide("绑定？", [BINDING])
    assert not nothing.sufficient and "nothing to check" in nothing.reason


# -- LLM judge, combination, registry --------------------------------------------------------------

def _judge(tmp_path: Path, reply: str | Exception) -> tuple[LLMJudgeGate, CountingRecorder]:
    recorder = CountingRecorder(tmp_path, mode="live")
    return LLMJudgeGate(scripted_generator(reply, recorder)), recorder  # type: ignore[arg-type]


def test_llm_judge_records_calls_and_fails_closed(tmp_path: Path) -> None:
    judge, recorder = _judge(tmp_path, json.dumps({"sufficient": False, "missing": ["the Wrangler syntax"]}))
    decision = judge.decide("How do I configure R2?", [BINDING])
    assert (decision.sufficient, decision.missing, len(decision.calls), recorder.requests) == (
        False, ("the Wrangler syntax",), 1, 1)
    broken, _ = _judge(tmp_path / "t", LLMCallError("timeout", "timed out"))
    failed = broken.decide("How do I configure R2?", [BINDING])
    assert not failed.sufficient and "timeout" in failed.reason
    with pytest.raises(WorkbookError, match="LLM generator"):
        LLMJudgeGate(object())  # type: ignore[arg-type]


def test_all_of_stops_before_the_judge_when_the_floor_declines(tmp_path: Path) -> None:
    judge, recorder = _judge(tmp_path, json.dumps({"sufficient": True, "missing": []}))
    gate = AllOf(ScoreFloorGate(0.9), judge)
    declined = gate.decide("q?", [BINDING], _ranking(("bind", 0.5)))
    assert (declined.sufficient, declined.gate, recorder.requests) == (False, "floor+llm_judge", 0)
    passed = gate.decide("q?", [BINDING], _ranking(("bind", 0.95)))
    assert passed.sufficient and recorder.requests == 1 and passed.scores["floor.best_score"] == 0.95


def test_registry_routes_keywords_and_names_mistakes() -> None:
    gate = get_gate("floor+aspects", floor=0.8, min_coverage=0.5)
    assert isinstance(gate, AllOf) and gate.name == "floor+aspects"
    assert [type(g).__name__ for g in gate.gates] == ["ScoreFloorGate", "AspectGate"]
    assert isinstance(get_gate("checklist", benchmark=BENCH), ChecklistGate)
    with pytest.raises(WorkbookError, match="Unknown gate 'flor'"):
        get_gate("flor")
    with pytest.raises(WorkbookError, match="no argument 'flor'"):
        get_gate("floor", floor=0.8, flor=1)


# -- gated generation -------------------------------------------------------------------------------

def test_gated_generator_declines_without_calling_the_generator(tmp_path: Path) -> None:
    recorder = CountingRecorder(tmp_path, mode="live")
    reply = json.dumps({"status": "answered", "answer": "a", "citations": [], "missing": []})
    gated = GatedGenerator(scripted_generator(reply, recorder), ScoreFloorGate(0.9))
    out = gated.generate("What is the KV free allowance?", [PRICING], _ranking(("price", 0.6)))
    assert (out.result.status, out.generator_called, gated.calls, recorder.requests) == (
        "insufficient", False, 0, 0)
    assert out.result.answer is not None and out.result.answer.answer.startswith("The evidence provided does not")
    assert out.result.call_keys == ()
    empty = gated.generate("  ", [PRICING], _ranking(("price", 0.95)))
    assert (empty.decision, empty.result.error_kind, recorder.requests) == (None, "empty_question", 0)
    passed = gated.generate("What is the KV free allowance?", [PRICING], _ranking(("price", 0.95)))
    assert passed.generator_called and passed.result.error_kind == "no_citations" and recorder.requests == 1


# -- measurement ------------------------------------------------------------------------------------

def test_precision_recall_on_a_hand_made_confusion() -> None:
    cases = [
        Case("u1", False, True, True),    # unanswerable, declined: TP
        Case("u2", False, True, False),   # unanswerable, answered: FN
        Case("a1", True, True, True),     # gold piece outside the Top-k, declined: TP
        Case("a2", True, False, True),    # complete evidence, declined: FP (a false refusal)
        Case("a3", True, False, False),   # complete evidence, answered: TN
        Case("a4", True, False, False),   # TN
    ]
    s = score_cases(cases)
    assert (s.tp, s.fp, s.fn, s.tn) == (2, 1, 1, 2)
    assert (s.precision, s.recall) == (2 / 3, 2 / 3)
    assert (s.refusal_correctness, s.false_refusal_rate) == (0.5, 1 / 3)
    assert score_cases([Case("a", True, False, False)]).precision is None  # nothing declined: no ratio


def test_sweep_is_exhaustive_and_choose_maximises_youden_j() -> None:
    rows = [ScoredQuestion("u1", False, True, 0.80, 1.0), ScoredQuestion("u2", False, True, 0.86, 0.5),
            ScoredQuestion("a1", True, False, 0.88, 1.0), ScoredQuestion("a2", True, False, 0.84, 1.0)]
    floors = sweep(rows, floors=None)
    assert [r["floor"] for r in floors] == [0.8, 0.84, 0.86, 0.88, 0.8801]
    assert [(r["refusal_correctness"], r["false_refusal_rate"]) for r in floors] == [
        (0.0, 0.0), (0.5, 0.0), (0.5, 0.5), (1.0, 0.5), (1.0, 1.0)]
    best = choose(floors)
    assert (best["floor"], best["youden_j"]) == (0.84, 0.5)  # ties (0.84 vs 0.88) go to fewer declines
    both = choose(sweep(rows, floors=None, coverages=None))
    # together they separate: the floor catches u1, the aspect coverage u2
    assert (both["floor"], both["min_coverage"], both["youden_j"]) == (0.84, 1.0, 1.0)


def test_case_json_is_stable() -> None:
    payload: dict[str, Any] = score_cases([Case("u", False, True, True)]).to_json()
    assert payload == {"tp": 1, "fp": 0, "fn": 0, "tn": 0, "n": 1, "precision": 1.0, "recall": 1.0,
                       "refusal_correctness": 1.0, "false_refusal_rate": None, "unanswerable": 1,
                       "unanswerable_declined": 1, "complete": 0, "complete_declined": 0}


def _toy_rows() -> list[ScoredQuestion]:
    import random

    rnd = random.Random(3)
    rows = []
    for i in range(30):
        answerable = i % 3 != 0
        rows.append(ScoredQuestion(f"q{i}", answerable, not answerable or i % 7 == 0,
                                   round(rnd.uniform(0.8, 0.95), 4),
                                   None if i % 11 == 0 else round(rnd.choice([0.5, 0.6667, 0.75, 1.0]), 4)))
    return rows


def test_fit_matches_choose_over_the_exhaustive_sweep() -> None:
    rows = _toy_rows()
    for gate, kwargs in (("floor", {"floors": None}), ("aspects", {"coverages": None}),
                         ("floor_aspects", {"floors": None, "coverages": None})):
        chosen = choose(sweep(rows, **kwargs))
        assert fit(rows, gate) == {"floor": chosen["floor"], "min_coverage": chosen["min_coverage"]}
    with pytest.raises(WorkbookError, match="unknown gate"):
        fit(rows, "judge")


def test_cross_validation_decides_each_fold_with_parameters_fitted_without_it() -> None:
    # u1's score is the only one that lets a floor separate it; left out, the floor fitted on the rest cannot.
    rows = [ScoredQuestion("u1", False, True, 0.80), ScoredQuestion("u2", False, True, 0.82),
            ScoredQuestion("a1", True, False, 0.90), ScoredQuestion("a2", True, False, 0.91)]
    assert fit(rows, "floor")["floor"] == 0.9  # in-sample: both unanswerable refused, no false refusal
    loo = cross_validate(rows, "floor")
    # a1 held out: the candidates are the other scores (0.80, 0.82, 0.91, …); 0.91 refuses both unanswerable
    # questions with no false refusal among the three, so it is chosen, and it refuses a1 (0.90) out of sample.
    assert loo["folds"] == 4 and loo["declined"] == {"u1": True, "u2": True, "a1": True, "a2": False}
    assert loo["scores"]["false_refusal_rate"] == 0.5 and loo["parameters"]["floor_range"] == [0.9, 0.91]
    # Grouped: a1 and a2 form one fold, fitted on the unanswerable questions alone (floor just above 0.82).
    grouped = cross_validate(rows, "floor", {"a1": "page", "a2": "page"})
    assert grouped["folds"] == 3 and not grouped["declined"]["a1"] and not grouped["declined"]["a2"]
    assert grouped["scores"]["refusal_correctness"] == 1.0
    # Each question's held-out parameters are the ones its fold was decided with (12 applies them to other corpora).
    chosen, fits = held_out_parameters(rows, "floor")
    assert len(fits) == 4 and chosen["a1"]["floor"] == 0.91 and chosen["a2"]["floor"] == 0.9
    assert all(r.declined(chosen[r.question_id]["floor"], None) == loo["declined"][r.question_id] for r in rows)


def test_wilson_and_holm() -> None:
    from rag_lib.evaluation import holm, paired_bootstrap_p, wilson

    lo, hi = wilson(16, 17)
    assert (round(lo, 2), round(hi, 2)) == (0.73, 0.99)
    assert wilson(0, 8)[0] == 0.0 and wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(5, 4)
    assert holm([0.01, 0.04, 0.03, 0.5]) == [0.04, 0.09, 0.09, 0.5]
    assert paired_bootstrap_p([1.0, 0.0], [1.0, 0.0]) == 1.0  # identical scores: no evidence of a change
    assert paired_bootstrap_p([1.0] * 20, [0.0] * 20) == 0.0


def test_a_chinese_decline_names_what_is_missing_in_chinese() -> None:
    from rag_lib.evidence.gated import decline_text
    from rag_lib.evidence.gates import FLOOR_MISSING

    zh = decline_text("怎么配置 R2 绑定？", [FLOOR_MISSING])
    assert zh == "提供的证据中未包含回答该问题所需的信息（相关度高于阈值的段落）。"
    assert "floor" not in zh  # one language per sentence
    assert FLOOR_MISSING in decline_text("How do I bind R2?", [FLOOR_MISSING])


def test_each_candidate_threshold_lets_its_own_value_pass() -> None:
    """A coverage of 2/3 is a candidate that accepts 2/3 (rounded to 0.6667 it would decline it, and no candidate
    would be "at least 2/3")."""
    from rag_lib.evidence.calibration import candidates

    got = candidates([2 / 3, 0.75, None, 1 / 3, 0.8582449])
    assert got == [0.3333, 0.6666, 0.75, 0.8582, 0.8583]
    assert all(any(c <= v and v - c < 1e-4 for c in got) for v in (2 / 3, 0.75, 1 / 3, 0.8582449))
