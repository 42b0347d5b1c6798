"""Findings are sentences generated from stored numbers: checked on small hand-made results, and every committed
report's Findings against the one rule for claims (a named metric and its adjusted interval)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from mechanism_fixtures import provenance, variants
from typed_results import blank, partial_result

from rag_lib.core.config import RESULTS_DIR
from rag_lib.evaluation.claims import bound_text
from rag_lib.evaluation.stats import PairedDifference, compare
from rag_lib.experiments import q9a, recovery, summary, topk
from rag_lib.experiments.summary.family import comparisons, failures, family_of, judgement
from rag_lib.experiments.summary.inputs import SummaryInputs
from rag_lib.experiments.summary.q7 import q7_every_phrasing
from rag_lib.experiments.summary.ranking import what_helps
from rag_lib.results.answer_rows import GenerationEval, GeneratorInfo
from rag_lib.results.gate_rows import JudgeTableRow
from rag_lib.results.mechanism import FailedCalls, MechanismResult, mechanism_metrics
from rag_lib.results.q9a import CorpusCheck, Q9aResult
from rag_lib.results.recovery import RecoveryCounts, RecoveryExperimentResult
from rag_lib.results.summary import Multiplicity, SummaryResult
from rag_lib.results.topk import CasebookQ8, CurvePoint, Q8Case, TopkResult


def _metric(moved: int, n: int = 40) -> PairedDifference:
    """A comparison in which ``moved`` of ``n`` questions go 0 → 1 (or 1 → 0)."""
    baseline = [1.0 if moved < 0 and i < -moved else 0.0 for i in range(n)]
    mechanism = [1.0 - b if i < abs(moved) else b for i, b in enumerate(baseline)]
    return compare(mechanism, baseline, n_boot=2000, seed=0)


def _mechanism(root: Path, name: str, given: list[dict]) -> None:
    """A stored run of a declared mechanism (the summary reads the runs config.yaml declares)."""
    folder = root / f"06_q7_mechanism-{name}"
    folder.mkdir()
    payload = partial_result(MechanismResult, mechanism=name, status="ran", variants=variants(*given, n_boot=2000),
                             provenance=provenance(k=5, n_answerable=58, n_boot=2000, seed=0))
    (folder / "results.json").write_text(json.dumps(payload.to_json()))


def test_what_helps_ranks_gains_first_losses_last_and_never_judges_a_failed_variant(tmp_path: Path) -> None:
    flat = {m: _metric(0) for m in mechanism_metrics(5)}
    _mechanism(tmp_path, "dedup_mmr", [
        {"name": "up", "benchmark": {"zh": {**flat, "coverage@evidence": _metric(20)}}},
        {"name": "down", "benchmark": {"zh": {**flat, "hit@5": _metric(-20)}}},
        {"name": "flat", "benchmark": {"zh": flat}},
        {"name": "noise", "benchmark": {"zh": {**flat, "mrr": _metric(1)}}},
    ])
    _mechanism(tmp_path, "reranker", [
        {"name": "llm", "benchmark": {"zh": {**flat, "coverage@evidence": _metric(20)}},
         "compared_on": {"zh": 1}, "failures": {"zh": FailedCalls(19, 20, {"replay_miss": 19})}},
    ])
    mechanisms = SummaryInputs.read(tmp_path).mechanisms
    compared = comparisons(mechanisms)
    rows = what_helps(compared, failures(mechanisms), k=5)
    assert [(r["mechanism"], r["verdict"]) for r in rows] == [
        ("dedup_mmr: up", "helps"), ("dedup_mmr: noise", "no clear effect"), ("dedup_mmr: flat", "nothing moved"),
        ("dedup_mmr: down", "hurts"), ("reranker: llm", "incomplete: 19 of 20 questions failed")]
    up = judgement(next(c for c in compared if c.variant == "dedup_mmr: up"
                        and c.metric == "coverage@evidence"))
    assert up.effect and rows[0]["coverage@evidence"] == up.cell(p_holm=False) and rows[0]["hit@5"] == (
        "no change (fixed)")
    # Only the 4 comparisons in which some question moved form the family; the 16 others are marked fixed.
    assert sum(c.in_family for c in compared) == 4 and all(c.p_holm is None for c in compared if not c.in_family)
    assert rows[0]["questions"] == 58 and rows[4]["questions"] == 1


def test_summary_findings_name_the_metric_that_earned_each_verdict_with_its_adjusted_interval(
        tmp_path: Path) -> None:
    flat = {m: _metric(0) for m in mechanism_metrics(5)}
    # The loss is earned on MRR alone: the sentence must quote MRR, not coverage@evidence or hit@5.
    _mechanism(tmp_path, "query_split", [{"name": "split", "benchmark": {"en": {**flat, "mrr": _metric(-20),
                                                                                 "hit@5": _metric(-1)}}}])
    mechanisms = SummaryInputs.read(tmp_path).mechanisms
    compared = comparisons(mechanisms)
    ranked = what_helps(compared, {}, k=5)
    family = family_of(compared)
    stored = partial_result(SummaryResult, comparisons=compared, what_helps=ranked, languages=[],
                            q7_every_phrasing=q7_every_phrasing(mechanisms),
                            multiplicity=Multiplicity(family.size, family.fixed, 0.05, 95, "", family.effects(), 1,
                                                      ""))
    lines = summary.findings(stored)
    mrr = family.get("query_split: split", "en", "mrr")
    assert f"Clear losses: query_split: split (en): {mrr.text(scoped=False)}." in lines
    assert mrr.text(scoped=False).startswith("mrr -0.500, adjusted [-") and "includes 0" not in mrr.text()
    assert lines[0].startswith("2 comparisons (variants × languages × metrics) form one Holm family, and 2 more")


def test_the_llm_judge_is_not_reported_as_a_result_while_its_calls_are_missing() -> None:
    judge = dataclasses.replace(blank(JudgeTableRow), gate="llm_judge (m)", lang="zh", judged=3, failed=88, n=3)
    generation = dataclasses.replace(blank(GenerationEval), gate="g", lang="en", answered=1, n=2,
                                     generator=GeneratorInfo("b", "x", None), citations_valid=1, citations_total=1,
                                     unanswerable_declined=1, unanswerable=1)
    result = partial_result(Q9aResult, corpus_check=CorpusCheck("KV", chunks=2, pages=1, absent={}, absent_found=0),
                            languages=[], k=5, llm_judge_rows=[judge], generation=generation)
    lines = q9a.findings(result)
    assert "decided 3 questions and 88 calls failed or have no record, so its rates are not a result yet" in lines[1]
    done = dataclasses.replace(judge, judged=90, failed=1, unanswerable_declined=20, unanswerable=33,
                               refusal_correctness=20 / 33, complete_declined=5, complete=45, false_refusal_rate=5 / 45)
    line = q9a.findings(dataclasses.replace(result, llm_judge_rows=[done]))[1]
    assert line.startswith("zh: the LLM judge (llm_judge (m)) declines 20/33 unanswerable questions (refusal "
                           "correctness 0.61) and 5/45 answerable ones") and "1 failed calls are left out" in line


def test_recovery_findings_give_no_after_count_while_calls_are_missing() -> None:
    counts = partial_result(RecoveryCounts, missing=4, n_questions=17)
    result = partial_result(RecoveryExperimentResult, k=5, languages=["zh"], q7={"zh": {}},
                            benchmark={"zh": {"llm": counts}})
    assert recovery.findings(result)[0] == ("zh · llm: 4 of 17 questions have no recorded LLM call yet, so there "
                                            "is no after-count for this source.")


def test_topk_findings_say_when_q8_never_completes() -> None:
    curve = {str(k): CurvePoint(coverage=0.5, full=0.5, chars=400.0 * k, tokens=100.0 * k) for k in (5, 10, 20)}
    q8 = Q8Case(question="q", piece_ranks={"C1": 12, "C2": None}, n_pieces=2, covered={}, first_full_k=None,
                covered_at_5="1/2", covered_at_6="1/2", testable=False)
    result = partial_result(TopkResult, languages=["zh"], max_k=20, n_compound=17, token_estimate="t",
                            casebook_q8=CasebookQ8("1/2", "2/2", "theirs"), late_complete_count={"zh": 0},
                            curve={"zh": curve}, q8={"id": "q08", "zh": q8})
    lines = topk.findings(result)
    assert lines[0] == ("Q8 (zh): 1/2 pieces at k = 5 and 1/2 at k = 6; it is still incomplete at k = 20 "
                        "(casebook, theirs: 1/2 at k = 5, 2/2 at k = 6).")
    assert "≈500 → ≈1000 evidence tokens (2.0×)" in lines[1]


def test_partial_results_name_a_misspelt_field() -> None:
    with pytest.raises(AssertionError, match="lnaguages"):
        partial_result(TopkResult, lnaguages=["zh"])


# --- One rule for claims (issue 27): every Findings sentence of every committed report ---------------------------
# The grammar is written here, not imported from rag_lib.evaluation.claims, so the test reads the reports as a
# reader would: a difference interval is a signed "[+a, -b]"; a claim is "<metric> <diff>, adjusted [lo, hi]",
# marked ", includes 0" when the adjusted interval does.
SIGNED_INTERVAL = re.compile(r"\[[+-]\d+(?:\.\d+)?, [+-]\d+(?:\.\d+)?\]")
CLAIM = re.compile(r"(?P<metric>[A-Za-z][\w@.\-]*)(?: \([^()]+\))? (?P<diff>[+-]\d+\.\d+), adjusted "
                   r"\[(?P<lo>[+-]\d+\.\d+), (?P<hi>[+-]\d+\.\d+)\](?P<includes>, includes 0)?")
# Words that state an effect: a sentence using them must cite an adjusted interval that excludes 0.
EFFECT_WORDS = re.compile(r"interval excludes 0 for|[Cc]lear (?:gains?|loss(?:es)?)\b|\bhelps\b|\bhurts\b|"
                          r"\bsignificant|structural (?:ahead|behind)")
REPORTS = sorted(p.parent.name for p in RESULTS_DIR.glob("*/report.md"))


def findings_sentences(report: str) -> list[str]:
    """The bullets of a report's ``## Findings`` section."""
    section = report.split("\n## Findings\n", 1)[1].split("\n## ", 1)[0] if "\n## Findings\n" in report else ""
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def stored_adjusted(node: object) -> set[tuple[str, str]]:
    """Every adjusted interval results.json stores (as the report prints it: 3 decimals, signed)."""
    out: set[tuple[str, str]] = set()
    if isinstance(node, dict):
        interval = node.get("adjusted")
        if isinstance(interval, list) and len(interval) == 2 and all(isinstance(v, int | float) for v in interval):
            out.add((bound_text(interval[0]), bound_text(interval[1])))
        for value in node.values():
            out |= stored_adjusted(value)
    elif isinstance(node, list):
        for value in node:
            out |= stored_adjusted(value)
    return out


def claim_problems(sentence: str, results: dict) -> list[str]:
    """What breaks the rule in one Findings sentence (empty when nothing does)."""
    problems = []
    claims = list(CLAIM.finditer(sentence))
    spans = [c.span() for c in claims]
    for m in SIGNED_INTERVAL.finditer(sentence):
        if not any(a <= m.start() and m.end() <= b for a, b in spans):
            problems.append(f"interval {m.group()} is not a named metric's adjusted interval")
    metrics, adjusted = json.dumps(results), stored_adjusted(results)
    for c in claims:
        lo, hi = float(c["lo"]), float(c["hi"])
        if f'"{c["metric"]}"' not in metrics:
            problems.append(f"{c['metric']!r} is not a metric of results.json")
        if (c["lo"], c["hi"]) not in adjusted:
            problems.append(f"adjusted [{c['lo']}, {c['hi']}] is not an adjusted interval results.json stores")
        if (lo > 0 or hi < 0) == bool(c["includes"]):
            problems.append(f"{c.group()!r}: whether it includes 0 is misstated")
    if EFFECT_WORDS.search(sentence) and not any(not c["includes"] for c in claims):
        problems.append("claims an effect without a metric's adjusted interval that excludes 0")
    return problems


@pytest.mark.parametrize("name", REPORTS)
def test_every_findings_sentence_names_its_metric_and_an_adjusted_interval_that_excludes_0_for_an_effect(
        name: str) -> None:
    folder = RESULTS_DIR / name
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    broken = {s[:160]: p for s in findings_sentences((folder / "report.md").read_text(encoding="utf-8"))
              if (p := claim_problems(s, results))}
    assert not broken, f"{name}: Findings break the claims rule:\n" + "\n".join(
        f"- {s}…\n    {'; '.join(p)}" for s, p in broken.items())


def test_the_claims_rule_reads_a_dedup_sentence_of_before_and_after_the_fix() -> None:
    stored = {"metric": "mrr", "adjusted": [0.0012, 0.0301]}
    before = ("dedup: en: hit@5 +0.017 [+0.000, +0.052], coverage@10 -0.009 [-0.026, +0.000] — no interval "
              "excludes 0: no effect is shown on this benchmark.")
    assert claim_problems(before, stored) == [
        "interval [+0.000, +0.052] is not a named metric's adjusted interval",
        "interval [-0.026, +0.000] is not a named metric's adjusted interval"]
    mmr_before = "mmr: en: coverage@10 -0.085 [-0.149, -0.030] — the 95% interval excludes 0 for coverage@10 en down."
    assert claim_problems(mmr_before, stored) == [
        "interval [-0.149, -0.030] is not a named metric's adjusted interval",
        "claims an effect without a metric's adjusted interval that excludes 0"]
    assert claim_problems("dedup: en helps: mrr (en) +0.008, adjusted [+0.001, +0.030].", stored) == []
    assert claim_problems("en: mrr +0.008, adjusted [+0.001, +0.030], includes 0.", stored) == [
        "'mrr +0.008, adjusted [+0.001, +0.030], includes 0': whether it includes 0 is misstated"]
    assert claim_problems("Clear gains: hit@5 +0.1, adjusted [+0.001, +0.030].", stored)[0] == (
        "'hit@5' is not a metric of results.json")
