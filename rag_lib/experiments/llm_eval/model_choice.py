"""Which local model for which LLM task: both Qwen2.5-Coder models on one fixed, seeded sample.

For each candidate model and each task (cited answer, sufficiency judgement, query rewrite, yes/no
relevance for reranking) the same sample is run through the workbook's own code path, every call
recorded, and the result reports seconds per call and tokens per second (from the records) beside a
quality signal the labels allow:

* answer: answered / declined / failed, citations valid, reply in the question's language;
* judge: agreement with the benchmark's sufficiency label of the Top-k;
* rewrite: a usable query came back;
* rerank: mean P("yes") of gold chunks minus that of other chunks in the Top-k (higher separates
  better), and how often a gold chunk outscores every non-gold one.

The sample is small (the models take seconds to minutes per call on 2 cores), so its figures pick a
model per task; they are not the findings. The choice itself is data (``generation.llm_tasks`` in
``config.yaml``) and the notebook states it beside these figures.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.core.text import language_of
from rag_lib.evidence import LLMJudgeGate, label_insufficient
from rag_lib.generation import get_generator
from rag_lib.generation.base import WITHHELD_KINDS
from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator
from rag_lib.generation.llm_calls import CallRecorder, ReplayMissError
from rag_lib.generation.query_ops import LLM_MAX_TOKENS, QueryLLM
from rag_lib.pipeline.workbench import Workbench
from rag_lib.rerank import get_reranker
from rag_lib.rerank.base import get_spec
from rag_lib.results.local_llm_choice import ChoiceDetail, ChoiceRow, ModelChoice, ModelPick

CANDIDATES = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
TASKS = ("answer", "judge", "rewrite", "rerank")


# Drawn once, with seed 0, from the labels-v1 benchmark by :func:`draw_sample` (Q5, one more answerable
# question, one unanswerable one), then fixed: the benchmark grew since, and a redraw would orphan the
# recorded calls of the sample.
SAMPLE_IDS = ("q05", "a55", "u12")


def draw_sample(wb: Workbench, n_answerable: int = 2, n_unanswerable: int = 1, seed: int = 0,
                always: Sequence[str] = ("Q5",)) -> list[Question]:
    """A seeded, stratified sample: the casebook questions in ``always``, then answerable and
    unanswerable questions drawn at random (sorted ids, fixed seed)."""
    rng = random.Random(seed)
    fixed = [wb.benchmark.by_casebook(ref) for ref in always]
    rest = [q for q in wb.benchmark if q not in fixed]
    answerable = sorted((q for q in rest if q.answerable), key=lambda q: q.id)
    unanswerable = sorted((q for q in rest if not q.answerable), key=lambda q: q.id)
    picked = rng.sample(answerable, n_answerable - sum(q.answerable for q in fixed))
    picked += rng.sample(unanswerable, n_unanswerable - sum(not q.answerable for q in fixed))
    return fixed + sorted(picked, key=lambda q: q.id)


def sample_questions(wb: Workbench, ids: Sequence[str] = SAMPLE_IDS) -> list[Question]:
    """The fixed model-choice sample (:data:`SAMPLE_IDS`)."""
    return [wb.benchmark[qid] for qid in ids]


def _timing(records: Sequence[Any]) -> dict[str, Any]:  # ChoiceRow's calls … completion_tokens
    seconds = [r.latency_s for r in records]
    prompt = sum(r.response.prompt_tokens or 0 for r in records)
    completion = sum(r.response.completion_tokens or 0 for r in records)
    total = sum(seconds)
    return {"calls": len(records), "s_per_call": round(total / len(records), 1) if records else None,
            "tokens_per_s": round((prompt + completion) / total, 1) if total else None,
            "prompt_tokens": prompt, "completion_tokens": completion}


def _records(recorder: CallRecorder, keys: Sequence[str]) -> list[Any]:
    return [r for k in keys if (r := recorder.load(k)) is not None]


def run_model_choice(wb: Workbench | None = None, models: Sequence[str] = CANDIDATES, k: int | None = None,
                     languages: Sequence[str] = ("zh", "en"), seed: int = 0, rerank_questions: int = 1,
                     ) -> ModelChoice:
    """Every task of :data:`TASKS` with every model on :func:`sample_questions`."""
    wb = wb or Workbench()
    k = wb.config.top_k(k)
    sample = sample_questions(wb)
    rows: list[ChoiceRow] = []
    details: list[ChoiceDetail] = []
    for model in models:
        recorder = CallRecorder()
        generator: LlamaCppGenerator = get_generator(f"llama_cpp:{model}", recorder=recorder)  # type: ignore[assignment]
        judge = LLMJudgeGate(generator)
        qllm = QueryLLM(get_generator(f"llama_cpp:{model}", recorder=recorder, max_tokens=LLM_MAX_TOKENS))  # type: ignore[arg-type]
        keys: dict[str, list[str]] = {t: [] for t in TASKS}
        quality: dict[str, list[float]] = {t: [] for t in TASKS}
        failures: dict[str, int] = {t: 0 for t in TASKS}
        missing: dict[str, int] = {t: 0 for t in TASKS}
        for q in sample:
            for lang in languages:
                text = q.text(lang)
                ranking = wb.rank(text, "dense")
                evidence = wb.evidence(ranking, k)
                answer = generator.generate(text, evidence)
                keys["answer"] += list(answer.call_keys)
                reply = answer.answer.answer if answer.answer else ""
                # A withheld answer (not carried by its quotes) is a reply all the same: the call worked.
                ok = answer.status != "error" or answer.error_kind in WITHHELD_KINDS
                missing["answer"] += answer.error_kind == "replay_miss"
                failures["answer"] += not ok and answer.error_kind != "replay_miss"
                if ok:
                    quality["answer"].append(float(language_of(reply) == lang))
                details.append(ChoiceDetail(model, "answer", q.id, lang, answer.status, answer.error_kind,
                                            f"{answer.citations.n_valid}/{answer.citations.n_total}"
                                            if answer.citations else "0/0", reply[:240]))
                decision = judge.decide(text, evidence, ranking)
                keys["judge"] += list(decision.calls)
                judged = decision.scores.get("judge_ok") == 1
                missing["judge"] += "replay_miss" in decision.reason
                failures["judge"] += not judged and "replay_miss" not in decision.reason
                if judged:
                    quality["judge"].append(float(decision.sufficient != label_insufficient(q, ranking.ids[:k])))
                rewrite = qllm.rewrite(text)
                keys["rewrite"] += [rewrite.call_key] if rewrite.call_key else []
                if rewrite.error_kind == "replay_miss":
                    missing["rewrite"] += 1
                else:
                    failures["rewrite"] += rewrite.status != "ok"
                    quality["rewrite"].append(float(rewrite.status == "ok"))
                details.append(ChoiceDetail(model, "rewrite", q.id, lang, rewrite.status, rewrite.error_kind, "",
                                            " | ".join(rewrite.queries)[:240]))
        separation = _rerank_separation(wb, model, sample[:rerank_questions], languages, k, keys["rerank"])
        if separation is None:
            missing["rerank"] += 1
        for task in TASKS:
            timing = _timing(_records(recorder, keys[task]))
            signal = separation if task == "rerank" else (
                round(float(np.mean(quality[task])), 3) if quality[task] else None)
            rows.append(ChoiceRow(model=model, task=task, **timing, missing=missing[task], failed=failures[task],
                                  quality=signal))
    return ModelChoice(sample=[q.id for q in sample], languages=list(languages), k=k, seed=seed,
                       quality_signal={"answer": "share of non-failed answers written in the question's language",
                                       "judge": "share of verdicts agreeing with the Top-k sufficiency label",
                                       "rewrite": "share of calls returning a usable query",
                                       "rerank": "mean P(yes) of gold minus non-gold chunks in the Top-k"},
                       rows=rows, details=details)


def _rerank_separation(wb: Workbench, model: str, questions: Sequence[Question], languages: Sequence[str],
                       k: int, keys: list[str]) -> float | None:
    """Mean P(yes) of gold chunks minus non-gold chunks over the Top-``k`` (``None`` if a call is missing)."""
    reranker = get_reranker(get_spec(f"{model}-yes-no"))
    gold, other = [], []
    try:
        for q in questions:
            for lang in languages:
                ids = wb.rank(q.text(lang), "dense").ids[:k]
                scores = reranker.score(q.text(lang), [wb.by_id[c].embed_input for c in ids])
                for cid, s in zip(ids, scores, strict=True):
                    (gold if cid in q.gold_chunks else other).append(float(s))
    except ReplayMissError:
        return None
    finally:
        keys += reranker.calls  # type: ignore[attr-defined]
    if not gold or not other:
        return None
    return round(float(np.mean(gold) - np.mean(other)), 3)


PICK_RULE = "the highest quality signal; a tie (to 3 decimals) goes to fewer seconds per call"
# Which configured task each model-choice task decides (the narrowed pipeline's tasks follow the
# answer and judge rows; the reranker is retrieval.offline_reranker).
DECIDES = {"answer": "answer_narrowed", "judge": "judge_narrowed", "rewrite": "rewrite", "rerank": "offline_reranker"}


def pick_models(rows: Sequence[ChoiceRow]) -> dict[str, str]:
    """Each task's model by :data:`PICK_RULE`, from the model-choice rows (tasks with a failed or
    missing call are not decided)."""
    picks: dict[str, str] = {}
    for task in sorted({r.task for r in rows}):
        usable = [r for r in rows if r.task == task and not r.failed and not r.missing and r.quality is not None]
        if usable:
            best = min(usable, key=lambda r: (-round(r.quality, 3), r.s_per_call))  # type: ignore[arg-type]
            picks[task] = best.model
    return picks


def pick_rows(rows: Sequence[ChoiceRow], configured: dict[str, str]) -> list[ModelPick]:
    """The rule's pick per task beside the model configured for the task it decides."""
    out = []
    for task, model in pick_models(rows).items():
        target = DECIDES.get(task, task)
        chosen = configured.get(target, "").partition(":")[2] or configured.get(target, "")
        out.append(ModelPick(task=task, picked_by_rule=model, configures=target, configured=chosen or "—",
                             agrees=chosen.startswith(model) if chosen else False))
    return out
