"""Selective answering (Joren et al., ICLR 2025) on 10's narrowed answers: a cross-validated logistic model of
"showing the output is right" over the gate's signals and the judge's verdict, and its reliability."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_lib.evaluation.reliability import expected_calibration_error, reliability_bins
from rag_lib.evaluation.selective import selective_answering
from rag_lib.evidence.calibration import ScoredQuestion
from rag_lib.presentation.llm_eval import RELIABILITY_BINS
from rag_lib.results.gate_rows import LLMJudge
from rag_lib.results.local_llm import Answerer
from rag_lib.results.local_llm_judge import Selective, SelectiveNotRun
from rag_lib.results.typed_json import decode

SELECTIVE_FEATURES = ("best_score", "aspect_coverage", "judge_sufficient", "model_answered")


def selective_rows(scored: Sequence[ScoredQuestion], answers: Mapping[str, Answerer], judge: LLMJudge,
                   lang: str) -> tuple[list[dict[str, float | None]], list[int], list[str]]:
    """Per question: the gate's signals, the judge's verdict and whether the narrowed model answered
    (features), and whether showing its output is right (y: a shown answer stating every key fact, or
    an unanswerable question not answered). Questions without a recorded call have a missing feature."""
    verdicts = {r.question: r.judge == "sufficient" for r in judge.by_lang[lang].rows}
    rows = {r.question: r for r in answers["narrowed"].runs[f"{lang}:ungated"].rows}
    features, y, ids = [], [], []
    for question in scored:
        row = rows[question.question_id]
        recorded = row.error_kind != "replay_miss"
        features.append({"best_score": question.best_score, "aspect_coverage": question.aspect_coverage,
                         "judge_sufficient": float(verdicts[question.question_id])
                         if question.question_id in verdicts else None,
                         "model_answered": float(row.status == "answered") if recorded else None})
        right = row.correct is True if question.answerable else row.status != "answered"
        y.append(int(right))
        ids.append(question.question_id)
    return features, y, ids


def selective_run(scored: dict[str, Sequence[ScoredQuestion]], answers: Mapping[str, Answerer],
                  judge: LLMJudge) -> dict[str, Selective]:
    """Joren et al.'s selective answering per language: a cross-validated logistic model of "showing the
    narrowed pipeline's output is right" over the gate's signals and the judge's verdict, and its
    accuracy-versus-coverage curve. A language with fewer than 4 recorded questions has no model yet."""
    out: dict[str, Selective] = {}
    for lang, questions in scored.items():
        features, y, ids = selective_rows(questions, answers, judge, lang)
        usable = sum(all(v is not None for v in f.values()) for f in features)
        if usable < 4:
            out[lang] = SelectiveNotRun(usable, f"only {usable} questions have every signal recorded "
                                                "(the narrowed answers and judgements); `make llm-runs` fills them")
            continue
        block = selective_answering(features, y, list(SELECTIVE_FEATURES), ids=ids)
        bins = reliability_bins(block["scored"], RELIABILITY_BINS)
        out[lang] = decode(Selective, {**block, "reliability": bins, "ece": expected_calibration_error(bins)})
    return out
