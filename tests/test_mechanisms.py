"""Query operations (splitting, fusion, recorded LLM rewriting) and experiment 06's results."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fixture_corpus import q7_pages_workbench
from mechanism_fixtures import provenance, variants
from typed_results import partial_result

from rag_lib.core.config import RESULTS_DIR, RunConfig
from rag_lib.core.errors import WorkbookError
from rag_lib.evaluation.stats import PairedDifference, compare
from rag_lib.experiments.bakeoff import run_bakeoff
from rag_lib.experiments.mechanisms import (
    MECHANISM_REGISTRY,
    MECHANISMS,
    LLMQueries,
    RankFailed,
    mechanism_metrics,
    q7_piece_ranks,
)
from rag_lib.generation.base import LLMGenerator
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.query_ops import QueryLLM, RuleSplitter, fuse, round_robin
from rag_lib.results.baseline import BaselineMeasures
from rag_lib.results.mechanism import FailedCalls, LLMCalls, MechanismResult, QueryOutput, RetrieverVariant
from rag_lib.results.typed_json import ShapeError, decode
from rag_lib.retrieval import Ranking

Q7_ZH = "环境变量、secret 和普通配置应该分别怎么设置？本地开发和线上部署有什么区别？"
Q7_EN = ("How should environment variables, secrets and plain configuration each be set? "
         "What is the difference between local development and a production deployment?")


# --------------------------------------------------------------------------- rule-based splitting
def test_sentence_split_chinese_and_english() -> None:
    assert RuleSplitter().split(Q7_ZH) == [
        "环境变量、secret 和普通配置应该分别怎么设置？", "本地开发和线上部署有什么区别？"]
    assert RuleSplitter().split(Q7_EN) == [
        "How should environment variables, secrets and plain configuration each be set?",
        "What is the difference between local development and a production deployment?",
    ]


def test_clause_split_at_marks_and_conjunctions() -> None:
    assert RuleSplitter(clauses=True).split(Q7_ZH) == [
        "环境变量", "secret", "普通配置应该分别怎么设置？", "本地开发", "线上部署有什么区别？"]
    assert RuleSplitter(clauses=True).split("Add vars, add secrets, and use .dev.vars files.") == [
        "Add vars", "add secrets", "use .dev.vars files."]


def test_split_keeps_file_names_and_unsplittable_text() -> None:
    assert RuleSplitter().split("Where does wrangler.toml go? And .dev.vars?") == [
        "Where does wrangler.toml go?", "And .dev.vars?"]
    assert RuleSplitter(clauses=True).split("R2 绑定") == ["R2 绑定"]
    assert RuleSplitter(clauses=True, min_chars=3).split("A、BC 和 DEF") == ["A BC", "DEF"]


# --------------------------------------------------------------------------- fusion
def _ranking(ids: str, source: str) -> Ranking:
    return Ranking(tuple(ids), tuple(float(len(ids) - i) for i in range(len(ids))), source=source)


def test_round_robin_interleaves_and_keeps_first_slot() -> None:
    merged = round_robin([_ranking("abcd", "p1"), _ranking("cbda", "p2")])
    assert merged.ids == ("a", "c", "b", "d")
    assert merged.scores == (1.0, 0.5, 1 / 3, 0.25)


def test_fuse_rrf_and_single_part() -> None:
    one = _ranking("abc", "p1")
    assert fuse([one], k=60) is one
    fused = fuse([_ranking("abc", "p1"), _ranking("cba", "p2")], "rrf", k=60)
    # a and c tie at 1/61 + 1/63 = 0.032266 (the first ranking breaks the tie); b has 2/62 = 0.032258
    assert fused.ids == ("a", "c", "b")
    assert fuse([_ranking("abc", "p1"), _ranking("cba", "p2")], "round_robin", k=60).ids == ("a", "c", "b")
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([one, one], "max", k=60)


# --------------------------------------------------------------------------- recorded LLM query operations
class CannedGenerator(LLMGenerator):
    """An LLM backend whose live call returns canned replies in order, counting calls."""

    backend = "canned"

    def __init__(self, replies: list[str], recorder: CallRecorder) -> None:
        super().__init__("canned-model", recorder=recorder)
        self.replies = list(replies)
        self.temperature = 0.0
        self.calls = 0

    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        return {"temperature": 0, "schema": json_schema}

    def _complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return LLMResponse(content=self.replies.pop(0))


def test_query_llm_records_then_replays(tmp_path: Path) -> None:
    recorder = CallRecorder(tmp_path)
    gen = CannedGenerator(['{"query": "wrangler secret put production"}'], recorder)
    first = QueryLLM(gen).rewrite("How do I add a secret?")
    assert (first.status, first.queries, first.replayed) == ("ok", ("wrangler secret put production",), False)
    assert (tmp_path / f"{first.call_key}.json").is_file()
    replay_gen = CannedGenerator([], CallRecorder(tmp_path, mode="replay_only"))
    again = QueryLLM(replay_gen).rewrite("How do I add a secret?")
    assert (again.queries, again.replayed, replay_gen.calls) == (first.queries, True, 0)


def test_query_llm_failures_are_named_and_fail_the_question(tmp_path: Path) -> None:
    gen = CannedGenerator(["1.1.1.1", '{"questions": []}', '{"questions": ["a?", " ", "b?"]}'], CallRecorder(tmp_path))
    qllm = QueryLLM(gen)
    bad = qllm.rewrite("q1")
    assert (bad.status, bad.error_kind, bad.queries) == ("error", "non_json", ())
    assert qllm.split("q2").error_kind == "schema_invalid"  # fewer than one part
    assert qllm.split("q3").queries == ("a?", "b?")
    assert qllm.run("split", "   ").error_kind == "empty_question"
    queries = LLMQueries(QueryLLM(CannedGenerator(["oops"], CallRecorder(tmp_path / "x"))), "rewrite")
    with pytest.raises(RankFailed, match="not JSON") as failed:  # never the question itself
        queries("original question")
    assert failed.value.kind == "non_json"
    assert queries.summary() == LLMCalls(calls=1, by_status={"non_json": 1})
    assert queries.outputs(["original question", "never asked"]) == {"original question": QueryOutput(
        task="rewrite", question="original question", status="error", queries=[],
        call_key=queries.outcomes["original question"].call_key, raw_output="oops",
        error_kind="non_json", error=queries.outcomes["original question"].error)}
    with pytest.raises(TypeError, match="LLM backend"):
        QueryLLM(object())  # type: ignore[arg-type]


def test_compare_paired_difference() -> None:
    c = compare([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0], n_boot=2000, seed=0)
    assert (c.baseline, c.mechanism, c.diff, c.diffs) == (0.5, 0.75, 0.25, (1.0, 0.0, 0.0, 0.0))
    # binary outcomes, one question gained: McNemar's exact p is 1 and its inverted interval spans 0
    assert c.p == 1.0 and c.ci95 == (-0.2375, 0.25) and c.interval_text == "[-0.237, +0.250]"
    assert not c.no_question_changed
    # continuous outcomes: the paired bootstrap, whose order-statistic interval excludes 0 exactly when p < 0.05
    gain = compare([0.5, 1.0, 0.33, 1.0, 0.5, 1.0], [0.25, 0.5, 0.33, 0.5, 0.25, 0.5], n_boot=2000, seed=0)
    assert gain.p < 0.05 and gain.ci95[0] > 0
    same = compare([0.5, 0.5], [0.5, 0.5], n_boot=100, seed=0)
    assert same.ci95 == (0.0, 0.0) and same.no_question_changed


def test_a_stored_paired_difference_decodes_typed_and_a_missing_field_is_named() -> None:
    c = compare([1.0, 0.0, 1.0], [0.0, 0.0, 1.0], n_boot=500, seed=3)
    stored = json.loads(json.dumps(c.stored()))
    assert list(stored) == ["baseline", "mechanism", "diff", "ci95", "p", "diffs"]  # the order results.json keeps
    assert decode(PairedDifference, stored) == c
    del stored["diffs"]
    with pytest.raises(ShapeError, match=r"^PairedDifference: lacks diffs$"):
        decode(PairedDifference, stored)


# --------------------------------------------------------------------------- results of 06_q7_mechanism-*
_NUMBER = re.compile(r"(?<![\w.+-])[+-]?\d+(?:[.,]\d+)*(?![\w])")


def _numbers(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_numbers(k) | _numbers(v) for k, v in node.items())) if node else set()
    if isinstance(node, list):
        return set().union(*(_numbers(v) for v in node)) if node else set()
    if isinstance(node, bool) or node is None:
        return set()
    if isinstance(node, int | float):
        return {str(node), f"{node:.3f}", f"{node:+.3f}", f"{node:.2f}"}
    return set(_NUMBER.findall(str(node)))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_mechanism_results(mechanism: str) -> None:
    folder = RESULTS_DIR / f"06_q7_mechanism-{mechanism}"
    if not (folder / "results.json").is_file():
        pytest.skip(f"{folder}/results.json not generated yet: python -m rag_lib.runner.reproduce {folder.name}")
    results = json.loads((folder / "results.json").read_text())
    report = (folder / "report.md").read_text()
    assert results["mechanism"] == mechanism and results["status"] in {"ran", "unavailable"}
    assert isinstance(results["provenance"], dict) and "baseline" in results["provenance"]
    if results["status"] == "unavailable":
        assert results["variants"] == [] and results["reason"], "an unavailable mechanism says why"
        assert results["reason"] in report
    else:
        assert results["variants"]
    for variant in results["variants"]:
        assert {"name", "q7", "benchmark"} <= set(variant)
        for by_lang in variant["q7"].values():
            for ranks in by_lang.values():
                assert list(ranks) == ["C1", "C2", "C3", "C4"]
                assert all(r is None or r >= 1 for r in ranks.values())
        for metrics in variant["benchmark"].values():
            assert set(metrics) == set(mechanism_metrics(results["provenance"]["baseline"]["k"]))
            for c in metrics.values():
                assert c["diff"] == pytest.approx(c["mechanism"] - c["baseline"], abs=1e-3)
                assert c["ci95"][0] <= c["diff"] + 1e-9 and c["diff"] <= c["ci95"][1] + 1e-9
    if mechanism == "topk":  # same ranking: every rank-based metric is unchanged, only the evidence grows
        for variant in results["variants"]:
            assert variant["q7"] == {p: results["baseline"]["q7"][p] for p in variant["q7"]}
            for metrics in variant["benchmark"].values():
                assert metrics["hit@5"]["diff"] == metrics["mrr"]["diff"] == 0.0
                assert metrics["coverage@evidence"]["diff"] >= 0.0
    missing = set(_NUMBER.findall(report.split("\n", 1)[1])) - _numbers(results)
    assert not missing, f"report.md states numbers that results.json does not hold: {sorted(missing)}"


def test_a_phrasing_the_variant_cannot_rank_is_reported_failed_not_as_baseline() -> None:
    from rag_lib.benchmark import Question

    q7 = Question(id="q07", type="answerable", compound=True, zh="问?", en="Q?", resolved=())

    def rank(text: str) -> Ranking:
        if text == "问?":
            raise RankFailed("replay_miss", "no record")
        return Ranking(("c1",), (1.0,))

    failures: dict[str, dict[str, str]] = {}
    ranks = q7_piece_ranks(q7, rank, (None,), ("zh", "en"), failures)
    assert failures == {"original": {"zh": "replay_miss"}} and ranks["original"]["zh"] == {}


def test_findings_judge_every_metric_after_holm_and_never_turn_a_failure_into_no_effect() -> None:
    from rag_lib.experiments.mechanisms import findings
    from rag_lib.experiments.mechanisms.report import stored_family

    def c(moved: int, n: int = 30) -> PairedDifference:  # ``moved`` questions go 0 -> 1
        return compare([1.0] * moved + [0.0] * (n - moved), [0.0] * n, n_boot=1000, seed=0)

    judged = variants(
        # zh: only coverage@evidence moves enough to survive the run's Holm adjustment; en: nothing moves
        {"name": "up", "benchmark": {
            "en": {"hit@5": c(0), "coverage@10": c(0)},
            "zh": {"hit@5": c(2), "coverage@10": c(1), "coverage@evidence": c(15)}}},
        {"name": "broken", "failures": {"zh": FailedCalls(3, of=3, by_kind={"replay_miss": 3})}},
        {"name": "aligned"},
    )
    result = partial_result(MechanismResult, status="ran", reason="", provenance=provenance(languages=["zh", "en"]),
                            variants=judged)
    family = stored_family(result)
    lines = findings(result)
    earned = family.get("up", "zh", "coverage@evidence")
    assert earned.effect and not family.get("up", "zh", "hit@5").effect
    assert lines[0] == (f"up: zh: helps: {earned.text(scoped=False)}; en: no question changed on any metric.")
    assert lines[1] == ("broken: zh: failed on all 3 questions (replay_miss 3), no figure; "
                        "the variant failed, so there is no result.")
    assert len(lines) == 3 and lines[2].startswith("Adjusted: Holm over the 3 comparisons of this run")
    unavailable = partial_result(MechanismResult, status="unavailable", reason="no files", variants=[])
    assert findings(unavailable) == ["Not run: no files"]


def test_an_unknown_mechanism_is_an_error_that_names_the_declared_ones() -> None:
    from rag_lib.experiments.mechanisms import run_mechanism

    with pytest.raises(WorkbookError, match=r"unknown mechanism 'nope'; declared: dedup_mmr, embedding, flagged_"):
        run_mechanism("nope")


def test_every_declared_mechanism_has_a_run_and_every_mechanism_run_is_declared() -> None:
    from rag_lib.runner.__main__ import conditions

    runs = {str(row["parameters"]["mechanism"]) for row in conditions() if "mechanism" in row["parameters"]}
    assert runs == set(MECHANISMS)
    assert set(MECHANISM_REGISTRY) - set(MECHANISMS) == {"flagged_pages"}  # for imported corpora (workbooks) only


def test_the_list_shows_each_runs_notebook_parameters_with_the_workbooks_overrides(capsys) -> None:
    from rag_lib.results.runs import NotebookRun
    from rag_lib.runner.__main__ import main
    from rag_lib.runner.notebooks import notebook_parameters

    explore = notebook_parameters(NotebookRun("09_explore", "09_explore", {"live": False}))
    assert explore["live"] == "False" and explore["k"] == "None" and explore["question"] == "'q07'"
    assert notebook_parameters(NotebookRun("01", "01_embedding_bakeoff"))["languages"] == "['zh', 'en']"
    with pytest.raises(WorkbookError, match=r"parameter\(s\) \['lives'\] that the parameters cell of "
                                            r"notebooks/09_explore.py does not declare"):
        notebook_parameters(NotebookRun("09_explore", "09_explore", {"lives": False}))
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert f"    k = {RunConfig.from_settings().k}\n" in out  # the run configuration, from config.yaml
    assert ("09_explore  (09_explore)  reads: 10_local_llm\n    question='q07', key='dense', k=None, lang='zh', "
            "live=False\n") in out


def test_a_declared_toy_mechanism_runs_end_to_end_with_its_parameters_in_provenance(monkeypatch, tmp_path) -> None:
    from rag_lib.core.io import write_json
    from rag_lib.experiments import mechanisms as m
    from rag_lib.experiments.mechanisms import registry

    monkeypatch.setattr(registry, "MECHANISM_REGISTRY", dict(registry.MECHANISM_REGISTRY))  # the toy is not kept

    @m.mechanism("toy", "the dense baseline with seven chunks as evidence", k=7)
    def toy(ctx: m.BuildContext, k: int) -> tuple[list[m.Variant], dict[str, str]]:
        return [m.Variant(f"k={k}", "baseline ranking, top k", ctx.base, evidence_k=k)], {}

    # On a fixture corpus, with the baseline measured as 01 measures it: nothing read from the committed results.
    wb = q7_pages_workbench(tmp_path)
    assert 5 <= len(wb.benchmark.questions(answerable=True)) < 20 and len(wb.embeddable) < 150
    bakeoff = run_bakeoff([wb.config.embedder], languages=("en",), workbench=wb)
    baseline = BaselineMeasures.from_bakeoff(bakeoff)
    result = m.run_mechanism("toy", languages=("en",), use_llm=False, n_boot=200, workbench=wb, baseline=baseline)
    assert result.status == "ran" and result.provenance.parameters == {"k": 7}
    variant = result.variants[0]
    assert variant.name == "k=7" and variant.evidence_k == 7
    assert variant.q7 == result.baseline.q7  # the same ranking: Q7's ranks cannot move
    metrics = variant.benchmark["en"]
    assert metrics["hit@5"].diff == metrics["mrr"].diff == 0.0
    assert metrics["coverage@evidence"].diff >= 0.0
    # What 08 reads back: the stored JSON through the typed reader.
    write_json(tmp_path / "06_q7_mechanism-toy" / "results.json", result.to_json())
    stored = MechanismResult.read("06_q7_mechanism-toy", tmp_path)
    assert stored == result  # what was written reads back as the same typed result
    assert stored.ran and stored.mechanism == "toy" and stored.n_answerable == result.provenance.n_answerable
    assert [(v.label(stored.mechanism), v.evidence_k) for v in stored.variants] == [("toy: k=7", 7)]
    assert stored.variants[0].benchmark["en"]["hit@5"].diff == 0.0

    # And the summary (08) over these two runs alone, with the toy declared as a mechanism run.
    from rag_lib.experiments.summary import run_summary
    from rag_lib.results import mechanism as mechanism_results
    from rag_lib.results.runs import Experiment

    write_json(tmp_path / "01_embedding_bakeoff" / "results.json", bakeoff.to_json())
    toy_only = Experiment(mechanism_results.EXPERIMENT.notebook, MechanismResult, varies=("mechanism", ("toy",)))
    monkeypatch.setattr(mechanism_results, "EXPERIMENT", toy_only)
    summary = run_summary(("en",), tmp_path)
    assert summary.missing_inputs == ["05_q7_diagnosis", "07_recovery_loop", "10_local_llm", "11_chunking"]
    baseline_row, toy_row = summary.side_by_side["en"]
    assert baseline_row.row.startswith("baseline") and toy_row.row == "toy: k=7"
    assert {p: toy_row.rank(p) for p in ("C1", "C2", "C3", "C4")} == result.baseline.q7["original"]["en"]
    assert summary.evidence_k == {}  # 7 chunks is not more than the Top-10 the tables mark
    [ranked] = summary.what_helps
    assert (ranked["mechanism"], ranked["language"], ranked["hit@5"]) == ("toy: k=7", "en", "no change (fixed)")
    assert ranked["questions"] == stored.n_answerable
    # one variant, one language, each metric: in the Holm family, or left out where no question changed
    assert summary.multiplicity.comparisons + summary.multiplicity.fixed == len(metrics)
    assert summary.multiplicity.fixed >= 1  # a larger k leaves hit@5 as it was


def test_the_hybrid_mechanisms_declared_rrf_k_reaches_the_fusion() -> None:
    from rag_lib.experiments.mechanisms.catalog.hybrid import hybrid_variants
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench()
    question = wb.benchmark["q07"].text("zh")
    default = wb.retriever("hybrid").rank(question)
    steep = hybrid_variants(wb, rrf_k=1)
    assert isinstance(steep[0].provenance, RetrieverVariant) and steep[0].provenance.rrf_k == 1
    assert "k=1" in steep[0].description
    assert steep[0].rank(question).ids != default.ids  # another constant, another fusion
    assert steep[0].rank(question).ids == wb.retriever("hybrid", rrf_k=1).rank(question).ids
    assert hybrid_variants(wb, rrf_k=wb.config.rrf_k)[0].rank(question).ids == default.ids


def test_a_stratified_sample_is_weighted_back_to_every_answerable_question() -> None:
    stored = MechanismResult.find("06_q7_mechanism-reranker", RESULTS_DIR)
    if stored is None:
        pytest.skip("results/06_q7_mechanism-reranker not written")
    n = stored.provenance.n_answerable
    sampled = [v for v in stored.variants if v.weighted_back(n)]
    assert sampled, "the reranker runs on a stratified sample"
    for v in sampled:
        strata = v.provenance.strata
        ids = sorted(strata.misses + strata.sample)
        weight = (n - len(strata.misses)) / len(strata.sample)
        for row in v.weighted_back(n):
            diffs = v.benchmark[row["language"]][row["metric"]].diffs
            by_hand = (sum(d for q, d in zip(ids, diffs, strict=True) if q in strata.misses)
                       + weight * sum(d for q, d in zip(ids, diffs, strict=True) if q in strata.sample)) / n
            assert row[f"weighted back to {n}"] == pytest.approx(by_hand, abs=1e-4)
            assert row["diff on the sample"] == pytest.approx(sum(diffs) / len(diffs), abs=1e-4)
    every = MechanismResult.find("06_q7_mechanism-topk", RESULTS_DIR)
    assert every is None or all(v.weighted_back(n) == [] for v in every.variants)  # run on every question
