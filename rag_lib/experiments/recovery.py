"""The recovery loop (casebook section 06) on Q7 and on every compound benchmark question.

Suggestion sources, each labelled in the results:

``llm``
    The local LLM of the ``recovery`` task (``generation.llm_tasks`` in config.yaml), one
    recorded call per question and language, replayed on later runs. A question whose call has no
    record yet is counted as ``missing`` and the source's "after" counts are left empty until every
    call is recorded: a partial run is never shown as if the loop had recovered nothing.
``rule``
    :class:`~rag_lib.generation.recovery.RuleDecomposer`, a deterministic baseline with no model.
``casebook``
    Q7 only: the casebook's own S1–S3 (qwen3.8-flash's, verbatim; English = the casebook's
    translations), replayed on OUR retriever.

The chosen suggestion is an oracle choice from the gold labels, standing in for the user's pick.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from rag_lib.core.casebook import published
from rag_lib.core.errors import ModelUnavailableError
from rag_lib.generation import get_generator, task_generator_name
from rag_lib.generation.llm_calls import CallMode, CallRecorder
from rag_lib.generation.recovery import (
    Decomposer,
    FixedSuggestions,
    LLMDecomposer,
    RecoveryResult,
    run_recovery,
)
from rag_lib.generation.rule_decomposer import RuleDecomposer
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.figures import piece_ranks_of
from rag_lib.results.answer_rows import GenerationRecord
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.recovery import (
    AnswerModel,
    BeforeAfter,
    CasebookRecovery,
    CasebookRecoveryFigures,
    CountMeaning,
    Q7Recovery,
    QuestionRecovery,
    RankRow,
    RecoveryCounts,
    RecoveryExperimentResult,
    RecoveryLLM,
    RecoveryProvenance,
    RuleSource,
    StoredLoop,
)
from rag_lib.results.typed_json import decode

# Casebook section 06, verbatim (Chinese), with the casebook's own English translations.
CASEBOOK_Q7_SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "zh": (
        "在 Cloudflare Workers 中，如何区分设置普通环境变量（vars）和敏感信息（secrets）？",
        "线上部署时，如何通过 Wrangler CLI 或 Dashboard 为 Worker 添加 secrets？",
        "本地开发和线上部署在加载 .dev.vars/.env 文件与生产环境配置时有何具体区别？",
    ),
    "en": (
        "In Cloudflare Workers, how do I set plain environment variables (vars) and sensitive values (secrets) "
        "separately?",
        "For a production deployment, how do I add secrets to a Worker through the Wrangler CLI or the Dashboard?",
        "When loading .dev.vars/.env files and production configuration, what exactly differs between local "
        "development and a production deployment?",
    ),
}
CASEBOOK_Q7_REASON = {
    "zh": "原问题同时询问了环境变量、secret和普通配置的设置方法，以及本地与线上部署的区别，"
          "涉及多个独立主题且当前证据主要聚焦于本地开发中的 secret 处理。",
    "en": "The original question asks at once how to set environment variables, secrets and plain configuration, "
          "and how local and production deployments differ: several separate topics, while the current evidence "
          "is mainly about handling secrets in local development.",
}
# The counts of each source (after language and source).
COUNT_KEYS = ("pieces_total", "missing", "failed", "in_top5_before", "in_top5_after_first", "in_top5_after_random",
              "in_top5_after_best", "in_top5_after_union", "in_top10_before", "in_top10_after_first",
              "in_top10_after_random", "in_top10_after_best", "in_top10_after_union")
# What each "after" count is; the first two use no labels, the last two are upper bounds.
COUNT_MEANING = CountMeaning(
    after_first="original + the first suggestion (no labels; a user who always takes S1)",
    after_random="original + one suggestion picked uniformly at random, expected count (no labels)",
    after_best="ORACLE upper bound: original + the suggestion the gold labels rank best",
    after_union="POOLED upper bound: original + every suggestion's Top-k at once (k × (1 + suggestions) chunks)",
)


def decomposers(llm: str | None, llm_mode: CallMode | None) -> tuple[dict[str, Decomposer], dict[str, str]]:
    """The ``llm`` and ``rule`` sources; an LLM whose model is not here is reported, not replaced."""
    out: dict[str, Decomposer] = {}
    unavailable: dict[str, str] = {}
    name = llm or task_generator_name("recovery")
    try:
        out["llm"] = LLMDecomposer(get_generator(name, recorder=CallRecorder(mode=llm_mode)))  # type: ignore[arg-type]
    except ModelUnavailableError as exc:
        unavailable["llm"] = str(exc)
    out["rule"] = RuleDecomposer()
    return out, unavailable


def q7_entry(result: RecoveryResult) -> Q7Recovery:
    """The Q7 view of one loop: suggestions, their ranks, the baseline and the chosen answer."""
    return Q7Recovery(
        suggestions=list(result.suggestions.questions),
        reason=result.suggestions.reason,
        status=result.suggestions.status,
        ranks=result.rows(),
        baseline=dict(zip(result.piece_ids, result.baseline_ranks, strict=True)),
        chosen=result.chosen,
        chosen_question=None if result.chosen is None else result.runs[result.chosen].question,
        # the generation layer's own JSON, read as the stored shape (a mismatch fails here, naming the field)
        answer=None if result.answer is None else decode(GenerationRecord, result.answer.to_json()),
        loop=decode(StoredLoop, result.to_json()),
    )


def q7_rank_rows(entry: Q7Recovery) -> list[RankRow]:
    """Q7's rank table of one source (the report's): the original question's ranks, then each suggestion's."""
    return [{"suggestion": "(original question)", **entry.baseline}, *entry.ranks]


def ranks_figure(q7: Mapping[str, Q7Recovery], lang: str, path: Path) -> Path:
    """Q7's first ranks in one language: per source, the original question and each suggestion (numbered as in
    the tables above), with the Top-5 and Top-10 cuts drawn."""
    rows = [{**row, "source": source, "asked": "original" if i == 0 else f"suggestion {i}"}
            for source, entry in q7.items() for i, row in enumerate(q7_rank_rows(entry))]
    return piece_ranks_of(rows, ("source", "asked"), path, title=f"Q7 ({lang}): first rank of each piece per question")


def summarise(results: Sequence[RecoveryResult]) -> RecoveryCounts:
    """Piece counts in the Top-5 / Top-10 before and after, summed over questions."""
    counts = {
        "pieces_total": sum(len(r.piece_ids) for r in results),
        **{f"in_top{k}_{name}": value for k in (5, 10) for name, value in (
            ("before", sum(r.covered(k, "before") for r in results)),
            ("after_first", sum(r.covered(k, "first") for r in results)),
            ("after_random", round(sum(r.covered_random(k) for r in results), 2)),
            ("after_best", sum(r.covered(k, "chosen") for r in results)),
            ("after_union", sum(r.covered(k, "union") for r in results)))},
    }
    suggestions = [q for r in results for q in (*r.suggestions.questions, *r.suggestions.copied)]
    answers = [r.answer.status for r in results if r.answer is not None]
    statuses = Counter(r.suggestions.status for r in results)
    missing = statuses.get("replay_miss", 0)
    if missing:  # not measured yet: no "after" figure, rather than one that equals "before"
        counts = {key: (None if "_after_" in key else value) for key, value in counts.items()}
    return RecoveryCounts(
        **counts,
        missing=missing,
        # A recorded failure (e.g. a reply that failed the schema) is a real outcome: that question got
        # no suggestions, so its "after" equals its "before"; the count says how often.
        failed=sum(n for status, n in statuses.items() if status not in ("ok", "no_split", "replay_miss")),
        n_questions=len(results),
        n_with_suggestions=sum(1 for r in results if r.runs),
        n_suggestions=len(suggestions),
        n_echoing_prompt=sum(len(r.suggestions.copied) for r in results),
        status_counts=dict(sorted(Counter(r.suggestions.status for r in results).items())),
        answer_status_counts=dict(sorted(Counter(answers).items())),
    )


def question_row(result: RecoveryResult) -> QuestionRecovery:
    """A compact per-question record (the full loop is kept for Q7 only)."""
    return QuestionRecovery(
        question_id=result.question_id, status=result.suggestions.status,
        suggestions=list(result.suggestions.questions), call_keys=list(result.suggestions.call_keys),
        baseline=dict(zip(result.piece_ids, result.baseline_ranks, strict=True)),
        ranks=result.rows(), chosen=result.chosen,
        before_top5=result.covered(5, "before"), after_first_top5=result.covered(5, "first"),
        after_best_top5=result.covered(5, "chosen"),
        after_union_top5=result.covered(5, "union"), before_top10=result.covered(10, "before"),
        after_best_top10=result.covered(10, "chosen"), after_union_top10=result.covered(10, "union"),
        answer_status=None if result.answer is None else result.answer.status,
        answer_cited=[] if result.answer is None or result.answer.citations is None
        else [c.chunk_id for c in result.answer.citations.valid],
    )


def run_recovery_experiment(
    languages: Sequence[str] = ("zh", "en"),
    k: int | None = None,
    retriever: str = "dense",
    llm: str | None = None,
    llm_mode: CallMode | None = None,
    workbench: Workbench | None = None,
) -> RecoveryExperimentResult:
    """The loop on Q7 (three sources) and on every compound question (LLM and rule sources).

    The result holds ``q7``, ``benchmark``, ``per_question``, ``casebook_published``
    (theirs) and ``provenance``; see the module docstring for the sources.
    """
    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    sources, unavailable = decomposers(llm, llm_mode)
    answerer = get_generator()
    # Unanswerable compound questions (Q9a) have no pieces to recover: they are not counted.
    questions = wb.benchmark.questions(compound=True, answerable=True)
    q7 = wb.benchmark.by_casebook("Q7")
    q7_out: dict[str, dict[str, Q7Recovery]] = {}
    bench_out: dict[str, dict[str, RecoveryCounts]] = {}
    per_question: dict[str, dict[str, list[QuestionRecovery]]] = {}
    for lang in languages:
        q7_out[lang], bench_out[lang], per_question[lang] = {}, {}, {}
        for source, decomposer in sources.items():
            results = [run_recovery(wb, q, lang, decomposer, k=k, retriever=retriever, generator=answerer)
                       for q in questions]
            bench_out[lang][source] = summarise(results)
            per_question[lang][source] = [question_row(r) for r in results]
            q7_out[lang][source] = q7_entry(next(r for r in results if r.question_id == q7.id))
        casebook = FixedSuggestions(CASEBOOK_Q7_SUGGESTIONS[lang], CASEBOOK_Q7_REASON[lang], name="casebook")
        q7_out[lang]["casebook"] = q7_entry(run_recovery(wb, q7, lang, casebook, k=k, retriever=retriever,
                                                         generator=answerer))
    theirs = published()
    llm_source = sources.get("llm")
    return RecoveryExperimentResult(
        k=k,
        languages=list(languages),
        retriever=retriever,
        sources={
            "llm": "the local LLM of the recovery task (generation.llm_tasks), one recorded call per question "
                   "and language",
            "rule": "RuleDecomposer: clause/conjunction split + enumeration aspects, no model (baseline)",
            "casebook": "the casebook's own S1-S3 for Q7 (qwen3.8-flash's), replayed on our retriever",
        },
        unavailable=unavailable,
        choice_rule=(
            "oracle: the suggestion that brings the most pieces missing from the original Top-5 into its own "
            "Top-5 (tie: the first); it uses the gold labels and stands in for the user's pick"),
        count_rule=("pieces of the answerable compound questions with a chunk at rank <= 5 (or 10) in the "
                    "original ranking (before) or, after, also in the suggestion rankings named below"),
        count_meaning=COUNT_MEANING,
        compound_question_ids=[q.id for q in questions],
        q7_id=q7.id,
        q7=q7_out,
        benchmark=bench_out,
        per_question=per_question,
        casebook_published=CasebookRecovery(
            whose="THEIRS: " + str(theirs["source"]) + "; bge-m3 + qwen3.8-flash, not measured here",
            q7_piece_ranks=dict(theirs["q7"]["piece_ranks"]),
            recovery=CasebookRecoveryFigures(s1=dict(theirs["recovery"]["s1"]),
                                             s2_c3_rank=BeforeAfter(**theirs["recovery"]["s2_c3_rank"])),
            user_pick="S2",
        ),
        provenance=RecoveryProvenance(
            retriever=RetrieverProvenance(**wb.provenance(retriever)),
            llm=None if llm_source is None else RecoveryLLM(
                backend=llm_source.generator.backend, model=llm_source.generator.model,
                model_version=llm_source.generator.model_version,
                calls="results/llm_calls/<call_key>.json (recorded once, replayed after)",
                quality_note="a small local model standing in for the casebook's qwen3.8-flash; the "
                             "prompt-echo counts below measure how often it copies the prompt's example",
            ),
            rule=RuleSource(decomposer="RuleDecomposer", max_questions=3),
            answer=AnswerModel(backend=answerer.backend, model=answerer.model, model_version=answerer.model_version),
        ),
    )


def findings(result: RecoveryExperimentResult) -> list[str]:
    """Sentences generated from :func:`run_recovery_experiment`'s stored numbers, with their caveats."""
    out: list[str] = []
    k = result.k
    for lang in result.languages:
        casebook = result.q7[lang].get("casebook")  # None: the run did not replay the casebook's suggestions
        if casebook and casebook.ranks:
            before = casebook.baseline
            best = {p: min(r[p] for r in casebook.ranks if r[p] is not None) for p in before}
            moved = [f"{p} {before[p]} → {best[p]}" for p in before if best[p] < before[p]]
            inside = sum(best[p] <= k for p in before)
            gain = (f"; pieces that a narrower question ranks higher than the original: {', '.join(moved)}"
                    if moved else "; no suggestion ranks any piece higher than the original question")
            out.append(f"{lang}: on our retriever {inside} of {len(before)} Q7 pieces are in the Top-{k} of at least "
                       f"one of the casebook's S1–S3{gain}.")
        for source, c in result.benchmark[lang].items():
            if c.missing:
                out.append(f"{lang} · {source}: {c.missing} of {c.n_questions} questions have no recorded LLM "
                           "call yet, so there is no after-count for this source.")
                continue
            echo = (f"; {c.n_echoing_prompt} of its {c.n_suggestions} suggestions copy the prompt's example"
                    if c.n_echoing_prompt else "")
            failed = f"; {c.failed} questions got no usable suggestion" if c.failed else ""
            out.append(
                f"{lang} · {source}: pieces of the {c.n_questions} compound questions in the Top-{k}: "
                f"{c.in_top5_before}/{c.pieces_total} before; {c.in_top5_after_first} with the first "
                f"suggestion and {c.in_top5_after_random:.1f} expected with a random one (what a system without "
                f"labels gets); at most {c.in_top5_after_best} with the best one (oracle){echo}{failed}.")
    out.append("Caveats: the counts are pieces over one small set of compound questions with this benchmark's "
               "labels and no interval; 'best' and 'union' use the labels or pool every suggestion and bound "
               "what a user could get; the LLM is a small local model standing in for the casebook's qwen3.8-flash.")
    return out


def casebook_rows(published: CasebookRecovery) -> list[dict[str, str]]:
    """The casebook's recovery figures (THEIRS) as labelled rows, for a table a reader can read."""
    q7, recovery = published.q7_piece_ranks, published.recovery
    return [
        {"figure": "Q7: first rank of C1 / C2 / C3",
         "casebook (theirs)": " / ".join(str(q7[p]) for p in ("C1", "C2", "C3"))},
        {"figure": "S1: first rank of C1 / C2",
         "casebook (theirs)": f"{recovery.s1['C1']} / {recovery.s1['C2']}"},
        {"figure": "S2: rank of C3, before → after",
         "casebook (theirs)": f"{recovery.s2_c3_rank.before} → {recovery.s2_c3_rank.after}"},
        {"figure": "the suggestion the casebook's user picked", "casebook (theirs)": published.user_pick},
    ]
