"""The local LLM on the whole benchmark: cited answers (gated and ungated) and the LLM judge as a gate.

Every call is replayed from ``results/llm_calls``; a call without a record is counted as
``missing`` (fill it with ``make llm-runs``) and left out of every rate, never counted as a decline
or an error of the model. Each figure names the model that produced it. Notebook 10's model choice
(which local model for which task, on a fixed sample) is :mod:`.model_choice`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rag_lib.benchmark_runs.gates import (
    calibrate,
    chosen_gates,
    general_gate_key,
    llm_judge_rows,
    measure_gates,
    measure_llm_judge,
)
from rag_lib.benchmark_runs.generation import run_generation_eval
from rag_lib.config import TOP_K, run_config
from rag_lib.evaluation.correctness import answer_correct
from rag_lib.evidence import Gate, GateDecision
from rag_lib.experiments.llm_eval.model_choice import run_model_choice
from rag_lib.generation import Generator, get_generator, get_task_generator, task_generator_name
from rag_lib.generation.local_models import local_models
from rag_lib.retrieval import Ranking
from rag_lib.workbench import Workbench
from rag_lib.workbook.experiment_results import LocalLLMResult
from rag_lib.workbook.report import markdown_table

ANSWER_COLUMNS = ["generator", "lang", "gate", "n", "missing", "answer_rate", "answer_correctness",
                  "correct_when_answered", "refusal_correctness", "citation_validity", "citations_valid",
                  "citations_total", "errors"]


class Ungated:
    """A gate that lets everything through: the generator alone decides (the "ungated" rows)."""

    name = "ungated"

    def decide(self, question: str, evidence: Sequence[Any], ranking: Ranking | None = None) -> GateDecision:
        return GateDecision(True, self.name, "no gate: the generator decides")


def answer_figures(result: dict[str, Any], recorded: set[str] | None = None) -> dict[str, Any]:
    """Rates of one :func:`run_generation_eval` result over the questions whose calls are recorded.

    ``answer_rate`` is answered / answerable; ``answer_correctness`` is answers stating every key
    fact / answerable questions with a checkable fact (not answering counts as not correct);
    ``correct_when_answered`` the same over answered ones; ``refusal_correctness`` declined /
    unanswerable; ``citation_validity`` valid / cited. Questions whose call has no record are left
    out (``missing``). ``recorded`` restricts the rates to those questions (the ones whose ungated call is
    recorded), so that a gated run is not measured over mostly gate-declined questions while the
    calls it let through are still missing.
    """
    rows = [r for r in result["rows"] if r["error_kind"] != "replay_miss"
            and (recorded is None or r["question"] in recorded)]
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    valid = sum(r["citations_valid"] for r in rows)
    total = sum(r["citations_total"] for r in rows)
    errors = Counter(r["error_kind"] for r in rows if r["status"] == "error")
    checkable = [r for r in answerable if answer_correct_checkable(r["question"])]
    correct = sum(r["correct"] is True for r in checkable)
    answered_checkable = [r for r in checkable if r["status"] == "answered"]
    return {
        "lang": result["lang"], "gate": result["gate"], "model": result["generator"]["model"],
        "backend": result["generator"]["backend"], "n": result["n"], "missing": result["n"] - len(rows),
        "answerable": len(answerable), "answered": sum(r["status"] == "answered" for r in answerable),
        "answer_rate": _rate(sum(r["status"] == "answered" for r in answerable), len(answerable)),
        "correct": correct, "answer_correctness": _rate(correct, len(checkable)),
        "correct_when_answered": _rate(correct, len(answered_checkable)),
        "unanswerable": len(unanswerable),
        "refusal_correctness": _rate(sum(r["status"] == "insufficient" for r in unanswerable), len(unanswerable)),
        "citations_valid": valid, "citations_total": total, "citation_validity": _rate(valid, total),
        "errors": dict(sorted(errors.items())),
    }


def answer_correct_checkable(question_id: str) -> bool:
    """Whether the question has a checkable key fact (else it is left out of correctness)."""
    return answer_correct(question_id, "").checkable


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def run_llm_answers(wb: Workbench, gate: Gate, generator: Generator | None = None,
                    languages: Sequence[str] = ("zh", "en"), k: int = TOP_K, key: str = "dense") -> dict[str, Any]:
    """Answers to every benchmark question, ungated and behind ``gate``, per language.

    The gated run reuses the ungated run's recorded calls wherever the gate lets a question through
    (the request is the same), so it costs no extra model time.
    """
    generator = generator or get_task_generator("answer")
    out: dict[str, Any] = {"model": task_generator_name("answer"), "k": k, "retriever": key, "runs": {}}
    for lang in languages:
        recorded: set[str] | None = None
        for gated in (Ungated(), gate):
            result = run_generation_eval(wb, gated, generator, lang, k, key)
            out["runs"][f"{lang}:{gated.name}"] = {"figures": answer_figures(result, recorded), "rows": result["rows"]}
            if recorded is None:  # the gated run is measured on the questions the ungated run has answers for
                recorded = {r["question"] for r in result["rows"] if r["error_kind"] != "replay_miss"}
    return out


def run_local_llm(wb: Workbench | None = None, languages: Sequence[str] = ("zh", "en"), k: int = TOP_K,
                  key: str = "dense", with_model_choice: bool = True) -> LocalLLMResult:
    """Everything notebook 10 shows: the model choice, answers (Qwen and extractive, gated and
    ungated) and the LLM judge beside the calibrated floor+aspects gate, per language."""
    wb = wb or Workbench()
    gates = {lang: chosen_gates(calibrate(wb, lang, key, k), wb) for lang in languages}
    general = {lang: g[general_gate_key(g)] for lang, g in gates.items()}
    answers: dict[str, Any] = {}
    for name, generator in (("llm", get_task_generator("answer")), ("extractive", get_generator("extractive"))):
        runs = {}
        for lang in languages:
            runs.update(run_llm_answers(wb, general[lang], generator, (lang,), k, key)["runs"])
        answers[name] = {"model": generator.model, "backend": generator.backend, "runs": runs}
    judge = measure_llm_judge(wb, None, languages, k, key)
    beside = {lang: measure_gates(wb, {general[lang].name: general[lang]}, lang, key, k) for lang in languages}
    rows = [{"generator": f"{a['backend']}:{a['model']}", **run["figures"]}
            for a in answers.values() for run in a["runs"].values()]
    judge_rows = llm_judge_rows(judge, beside)
    return LocalLLMResult(
        languages=list(languages), k=k, retriever=key, provenance=wb.provenance(key),
        tasks=dict(run_config().llm_tasks),
        models={name: spec.provenance() for name, spec in local_models().items()},
        model_choice=run_model_choice(wb, k=k, languages=languages) if with_model_choice else None,
        answers=answers, answer_rows=rows, answer_table=markdown_table(rows, ANSWER_COLUMNS),
        judge=judge, gate_beside_judge=beside, judge_rows=judge_rows,
        judge_table=markdown_table(judge_rows),
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def findings(result: LocalLLMResult) -> list[str]:
    """Sentences generated from :func:`run_local_llm`'s numbers, each with its caveat."""
    out: list[str] = []
    by_key = {(r["generator"], r["lang"], r["gate"]): r for r in result.answer_rows}
    llm = next(f"{a['backend']}:{a['model']}" for name, a in result.answers.items() if name == "llm")
    extractive = next(f"{a['backend']}:{a['model']}" for name, a in result.answers.items() if name == "extractive")
    for lang in result.languages:
        for gate in sorted({g for (_, lg, g) in by_key if lg == lang}):
            mine, base = by_key.get((llm, lang, gate)), by_key.get((extractive, lang, gate))
            if not mine or not base:
                continue
            judged = mine["n"] - mine["missing"]
            if judged == 0:
                out.append(f"{lang}, {gate}: no answer of {llm} is recorded yet ({mine['missing']} missing), so "
                           "there is no figure for it; `make llm-runs` fills them.")
                continue
            caveat = (f" Only {judged} of {mine['n']} questions have a recorded answer; the rest are missing, not "
                      "failed, and the rates are over the recorded ones." if mine["missing"] else "")
            out.append(
                f"{lang}, {gate}: {llm} answered {_pct(mine['answer_rate'])} of the answerable questions "
                f"(extractive {_pct(base['answer_rate'])}); answers stating every key fact: "
                f"{_pct(mine['answer_correctness'])} vs {_pct(base['answer_correctness'])}; unanswerable questions "
                f"declined: {_pct(mine['refusal_correctness'])} vs {_pct(base['refusal_correctness'])}; citations "
                f"valid: {_pct(mine['citation_validity'])} (quotes are constrained to evidence sentences, so "
                f"validity says the quote exists, not that it supports the answer).{caveat}")
    for row in result.judge_rows:
        if row["gate"].startswith("llm_judge") and row["judged"]:
            declined = row["tp"] + row["fp"]
            quality = (f"{declined} declines, precision {row['precision']:.3f} and recall {row['recall']:.3f} for "
                       "insufficient evidence" if declined else
                       f"no decline at all (it judged every evidence set sufficient, so it catches none of the "
                       f"{row['unanswerable']} unanswerable questions)")
            out.append(f"{row['lang']}: the LLM judge ({row['gate']}) over {row['judged']} judged questions "
                       f"({row['failed']} without a record): {quality}.")
    return out
