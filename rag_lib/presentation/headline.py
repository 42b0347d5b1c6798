"""The README's first screen: five findings, each one sentence generated from one run's stored results,
naming its metric and interval, with its caveat, and linking to the notebook that measured it.

08 stores them (its ``headline_findings``, from :func:`headline_findings`) using what it already reads
plus 03 and 04; ``make reproduce`` copies them into the README. A run without results gives no
sentence, never a guessed one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.evaluation.readers import missed_gold
from rag_lib.evaluation.stats import count_of, count_text, interval_text, signed_text
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.local_llm import HELD_OUT, THEN_JUDGE, AnswerRow, LocalLLMResult
from rag_lib.results.q9a import EXPERIMENT as GATE
from rag_lib.results.q9a import Q9aResult, Rate
from rag_lib.results.summary import EXPERIMENT as SUMMARY
from rag_lib.results.summary import ComparisonRow, Q7Ranks, SideBySideRow
from rag_lib.results.test_set import EXPERIMENT as TEST_SET
from rag_lib.results.test_set import FITTED_ON_DEV, TestSetResult
from rag_lib.results.topk import EXPERIMENT as TOPK
from rag_lib.results.topk import TopkResult

# {"run": notebook run name, "short": the README's sentence (no interval), "sentence": the same with its figures,
# intervals and caveats (results/README.md)}
Finding = dict[str, str]


def q7_sentence(rows: Sequence[SideBySideRow], inside: Sequence[str], embedder: str, lang: str = "zh") -> Finding:
    """Q7's baseline ranks (dense retrieval with ``embedder``, as prose names it) and how many mechanism or
    recovery rows bring C1–C3 into the Top-10."""
    baseline = rows[0]
    first = [baseline.rank(p) if isinstance(baseline, Q7Ranks) else None for p in Q7_PIECES]
    ranks = " / ".join("—" if rank is None else str(rank) for rank in first)
    others = [r for r in inside if not r.startswith("baseline")]
    return {"run": SUMMARY.name, "short": (
        f"Q7 stays incomplete: the baseline ranks C1–C4 at {ranks} ({lang}), and {len(others)} of {len(rows) - 1} "
        "mechanism and recovery rows bring C1–C3 into the Top-10."), "sentence": (
        f"Q7, asked in {'Chinese' if lang == 'zh' else 'English'}, stays incomplete: the baseline ranks its four "
        f"pieces C1–C4 at {ranks}, and {len(others)} of {len(rows) - 1} mechanism and recovery rows bring all of "
        f"C1–C3 into the Top-10 (caveat: one question, the offline {embedder}, not the casebook's bge-m3; "
        f"{missed_gold().caveat()}).")}


def mechanisms_sentence(ranked: Sequence[Mapping[str, Any]], family_size: int) -> Finding:
    """How the ranked mechanism rows (08's, without the top-k "more context" rows) split by verdict under
    the Holm-adjusted intervals of a family of ``family_size`` comparisons."""
    count = {v: sum(r["verdict"] == v for r in ranked) for v in ("helps", "hurts", "mixed")}
    sizes = Counter(int(r["questions"] or 0) for r in ranked)
    n = max(sizes, default=0)
    fewer = ", ".join(f"{rows} rows on {size}" for size, rows in sorted(sizes.items()) if size != n)
    return {"run": SUMMARY.name, "short": (
        f"No mechanism helps across the benchmark: of {len(ranked)} mechanism × language rows, {count['helps']} "
        f"gain and {count['hurts']} lose beyond their Holm-adjusted intervals."), "sentence": (
        f"Across the benchmark's answerable questions, of {len(ranked)} mechanism × language rows {count['helps']} "
        f"show a gain that survives Holm adjustment over {family_size} comparisons, {count['hurts']} a clear "
        f"loss and {len(ranked) - sum(count.values())} no clear effect (caveat: {n} questions per language per row"
        + (f", except {fewer} (a stated sample, see 08's `questions` column)" if fewer else "")
        + f", so an interval that includes 0 is not evidence of no effect; {missed_gold().caveat()}).")}


def topk_sentence(topk: TopkResult, comparisons: Sequence[ComparisonRow], lang: str = "zh") -> Finding:
    """Coverage bought by k = 10 over k = 5, its token cost, and 08's adjusted interval for it."""
    low, high = topk.curve[lang]["5"], topk.curve[lang]["10"]
    tested = next((c for c in comparisons if c.variant == "topk: k=10" and c.language == lang
                   and c.metric == "coverage@evidence"), None)
    interval = (f" (coverage@evidence {signed_text(tested.diff)}, Holm-adjusted "
                f"{interval_text(tested.adjusted)})" if tested and tested.adjusted else "")
    return {"run": TOPK.name, "short": (
        f"More context costs: k = 10 instead of 5 raises mean piece coverage ({lang}) {low.coverage:.3f} → "
        f"{high.coverage:.3f} for {high.tokens / low.tokens:.1f}× the tokens."), "sentence": (
        f"More context completes more answers at a price: from k = 5 to 10 mean piece coverage ({lang}) rises "
        f"{low.coverage:.3f} → {high.coverage:.3f}{interval} while the evidence grows "
        f"{high.tokens / low.tokens:.1f}× in estimated tokens (caveat: tokens are estimated, not counted "
        f"by a tokenizer; {missed_gold().caveat()}).")}


def gate_sentence(q9a: Q9aResult, lang: str = "zh") -> Finding:
    """The floor+aspects gate leave-one-out: unanswerable questions declined, answerable ones wrongly declined."""
    held_out = q9a.validation[lang]["floor_aspects"].leave_one_out
    declined, wrong = held_out.refusal_correctness, held_out.false_refusal_rate

    def rate(x: Rate) -> str:
        if x.rate is None or x.wilson95 is None:
            return f"{x.k}/{x.n}"
        return f"{x.k}/{x.n} = {x.rate:.2f} [{x.wilson95[0]:.2f}, {x.wilson95[1]:.2f}]"

    return {"run": GATE.name, "short": (
        f"No score separates answerable from unanswerable: the gate declines {declined.k}/{declined.n} unanswerable "
        f"{lang} questions, beside false refusal of {wrong.k}/{wrong.n} answerable ones with complete evidence."),
        "sentence": (
        f"No score separates what the corpus can answer from what it cannot: the floor+aspects gate, fitted "
        f"leave-one-out, declines {rate(declined)} unanswerable {lang} questions but also wrongly declines "
        f"{rate(wrong)} answerable ones whose evidence is complete (Wilson 95% intervals; caveat: "
        f"{declined.n} unanswerable questions, labelled here).")}


def answers_sentence(local: LocalLLMResult, test: TestSetResult | None = None) -> Finding | None:
    """The narrowed local answerer behind the gate on the development set (leave-one-out gate), one denominator
    per sentence; then, when 14 has run, the same pipeline on the sealed test set (out of sample)."""
    rows = local.narrowed_rows(HELD_OUT)
    if not rows:
        return None

    def rates(rows: Sequence[AnswerRow], metric: str, counts: str | None = None) -> str:
        return ", ".join(f"{r.lang} {getattr(r, metric):.0%} {getattr(r, f'{metric}_ci')}"
                         + (f" of {getattr(r, counts)}" if counts else "") for r in rows)

    judged = local.narrowed_rows(THEN_JUDGE)
    check = local.claim_check.agreement
    sentences = [
        f"Local answers are not yet trustworthy: on the development set (the {rows[0].n} questions the prompts and "
        "models were "
        f"chosen on; the gate leave-one-out), the narrowed {rows[0].model} behind the gate states every key fact for "
        f"{rates(rows, 'correct_gold_in_top_k', 'gold_in_top_k')} answerable questions whose gold is in the "
        f"Top-{local.k}.",
        f"It shows an answer missing a key fact for {rates(rows, 'shown_wrong')} of the answerable questions with a "
        "checkable key fact.",
        f"Both figures use the key-fact measure, whose 'correct' has precision {_rate(*check.keyfact_precision)} and "
        f"recall {_rate(*check.keyfact_recall)} against two blind readers, LLM helpers (answers both "
        "call true and complete)."]
    check = local.claims_check
    claims, order = check.agreement, [lang for lang in local.languages if lang in check.agreement.by_language]
    sentences.append(
        "The claims pipeline, where each claim is checked against the quotes the model cited for it and an answer off "
        f"the question is withheld, still shows {check.compared} of the {check.drawn} answers the readers judged "
        "(ungated); every claim both readers accept in "
        + ", ".join(f"{lang} {_rate(*claims.by_language[lang])}" for lang in order)
        + "; every claim accepted and answering what was asked (completely or in part): "
        + ", ".join(f"{lang} {_rate(*claims.answering_by_language[lang])}" for lang in order)
        + f" (the readers' kappa on claims {claims.kappa_claims:.2f}).")
    if judged:
        sentences.append(
            f"With the LLM judge after the gate, unanswerable questions declined rise from "
            f"{rates(rows, 'refusal_correctness', 'unanswerable')} to {rates(judged, 'refusal_correctness')}, beside "
            f"false refusal (answerable questions with their gold in the Top-{local.k} declined) rising from "
            f"{rates(rows, 'false_refusal', 'complete_evidence')} to {rates(judged, 'false_refusal')}.")
    def test_set_rows(pipeline: str) -> list[AnswerRow]:  # behind the gate fitted on the development set
        return [r for r in (test.rows if test else []) if r.gate.endswith(FITTED_ON_DEV) and r.n > r.missing
                and r.generator == test.answerers.get(pipeline)]

    held = test_set_rows("narrowed")
    if held:
        sentences.append(
            f"On the sealed test set ({held[0].n} new questions per language, out of sample; "
            f"[{TEST_SET.name}](results/notebooks/{TEST_SET.name}.html)), behind the gate fitted on the development "
            "set, it "
            f"states every key fact for {rates(held, 'correct_gold_in_top_k', 'gold_in_top_k')} answerable questions "
            f"whose gold is in the Top-{local.k}"
            + (f" ({', '.join(f'{r.lang} {r.missing} of {r.n} calls still missing' for r in held if r.missing)})"
               if any(r.missing for r in held) else "") + ".")
    claims_held = test_set_rows("claims")
    if claims_held:
        sentences.append(
            f"The claims pipeline, on the same test set behind the same gate, states every key fact for "
            f"{rates(claims_held, 'correct_gold_in_top_k', 'gold_in_top_k')}, declines "
            f"{rates(claims_held, 'refusal_correctness', 'unanswerable')} unanswerable questions beside false refusal "
            f"{rates(claims_held, 'false_refusal', 'complete_evidence')}.")
    sentences.append("(95% Wilson intervals; caveat: a small local coding model on CPU, not the casebook's LLM.)")
    where = ("on the sealed test set (out of sample), behind the gate, the claims pipeline" if claims_held else
             "on the development set, behind the gate, the narrowed pipeline")
    short = (f"Local answers are rarely complete: {where} states every key fact for "
             + ", ".join(f"{r.lang} {count_of(r.correct_gold_in_top_k, r.gold_in_top_k)}/{r.gold_in_top_k}"
                         for r in claims_held or rows)
             + f" answerable questions with their gold in the Top-{local.k}.")
    return {"run": LOCAL_LLM.name, "short": short, "sentence": " ".join(sentences)}


def _rate(k: int, n: int) -> str:
    return count_text(k, n) if n else "0/0"


def headline_findings(side_by_side: Mapping[str, Sequence[SideBySideRow]], inside: Sequence[str],
                      ranked: Sequence[Mapping[str, Any]], family_size: int,
                      comparisons: Sequence[ComparisonRow], local: LocalLLMResult | None, embedder: str | None,
                      root: Path | None = None) -> list[Finding]:
    """The five headline findings, in reading order; a sentence whose run has no results is left out.
    ``embedder``: the baseline's embedder as prose names it (:func:`rag_lib.results.provenance.model_name`), from
    01's results (``None`` without them: then no Q7 sentence, whose baseline ranks are 01's)."""
    out = [q7_sentence(side_by_side["zh"], inside, embedder)] if side_by_side.get("zh") and embedder else []
    if ranked:
        out.append(mechanisms_sentence(ranked, family_size))
    topk = TopkResult.find(TOPK.name, root)
    if topk is not None:
        out.append(topk_sentence(topk, comparisons))
    q9a = Q9aResult.find(GATE.name, root)
    if q9a is not None:
        out.append(gate_sentence(q9a))
    answers = answers_sentence(local, TestSetResult.find(TEST_SET.name, root)) if local is not None else None
    return out + ([answers] if answers else [])
