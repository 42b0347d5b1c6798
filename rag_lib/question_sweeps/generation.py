"""Whole-benchmark generation figures, and the bad-input / backend-fault outcome table.

:func:`run_generation_eval` answers every benchmark question (one language, Top-k of one
retriever) behind a gate and counts: answered, declined by the gate, declined by the generator,
errors; citation validity (valid / total over every answer); refusal correctness (share of
unanswerable questions not answered). :func:`fault_outcomes` shows that bad input and backend
faults each end as a recorded, visible outcome, never a crash.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

from rag_lib.core.documents import Chunk
from rag_lib.evaluation.correctness import answer_correct
from rag_lib.evaluation.key_facts import KeyFacts
from rag_lib.evidence import Gate, label_insufficient
from rag_lib.evidence.gated import GatedGenerator, GatedResult
from rag_lib.generation import Generator
from rag_lib.generation.base import GenerationResult
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError
from rag_lib.generation.scripted import scripted_generator
from rag_lib.pipeline.answer import gated_answer
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.q5 import FaultRow
from rag_lib.verification.statements import checkable_statements, squash, states


def run_generation_eval(
    wb: Workbench, gate: Gate, generator: Generator, lang: str = "en", k: int | None = None, key: str = "dense",
    key_facts: KeyFacts | None = None,
) -> dict[str, Any]:
    """Answer every benchmark question behind ``gate``; return JSON-ready counts and per-question rows.
    ``key_facts`` (default: the development set's) decide which answers are correct."""
    k = wb.config.top_k(k)
    gated = GatedGenerator(generator, gate)
    rows = []
    for q in wb.benchmark:
        out, ranking = gated_answer(q.text(lang), wb, gated, key, k)
        evidence_ids = list(ranking.ids[:k]) if ranking else []
        cit = out.result.citations
        text = out.result.answer.answer if out.result.answer else ""
        # Correct = states every checkable key fact (data/benchmark/key_facts.yaml); only answered
        # answerable questions are judged, and a question without a checkable fact is None.
        correct = (answer_correct(q.id, text, key_facts).correct
                   if q.answerable and out.result.status == "answered" else None)
        evidence = [wb.by_id[c] for c in evidence_ids if c in wb.by_id]
        rows.append({
            "question": q.id, "answerable": q.answerable,
            "label": "insufficient" if label_insufficient(q, evidence_ids) else "sufficient",
            "gate": "sufficient" if out.decision and out.decision.sufficient else "insufficient",
            "status": out.result.status, "declined_by": _declined_by(out),
            "error_kind": out.result.error_kind,
            "citations_valid": cit.n_valid if cit else 0, "citations_total": cit.n_total if cit else 0,
            "correct": correct, "answer": text,
            **claim_fields(q.id, q.text(lang), q.answerable, out.result, evidence, key_facts),
        })
    answered = [r for r in rows if r["status"] == "answered"]
    unanswerable = [r for r in rows if not r["answerable"]]
    valid = sum(r["citations_valid"] for r in rows)
    total = sum(r["citations_total"] for r in rows)
    return {
        "lang": lang, "k": k, "retriever": key, "gate": gate.name,
        "generator": {"backend": generator.backend, "model": generator.model,
                      "model_version": generator.model_version},
        "n": len(rows),
        "answered": len(answered),
        "declined_by_gate": sum(r["declined_by"] == "gate" for r in rows),
        "declined_by_generator": sum(r["declined_by"] == "generator" for r in rows),
        "errors": sum(r["status"] == "error" for r in rows),
        "generator_calls": gated.calls,
        "citations_valid": valid, "citations_total": total,
        "citation_validity": round(valid / total, 4) if total else None,
        "unanswerable": len(unanswerable),
        "unanswerable_declined": sum(r["status"] == "insufficient" for r in unanswerable),
        "unanswerable_answered": sum(r["status"] == "answered" for r in unanswerable),
        "refusal_correctness": round(sum(r["status"] == "insufficient" for r in unanswerable) / len(unanswerable), 4)
        if unanswerable else None,
        "answered_with_complete_evidence": sum(r["label"] == "sufficient" for r in answered),
        "rows": rows,
    }


def claim_fields(question_id: str, question: str, answerable: bool, result: GenerationResult,
                 evidence: Sequence[Chunk], key_facts: KeyFacts | None = None) -> dict[str, Any]:
    """What the claim-level diagnosis reads of one answer (:mod:`rag_lib.evaluation.diagnosis`).

    ``stated``: the model's whole reply, before the verification stage dropped or withheld anything, states
    every checkable key fact (``None``: not answerable, no checkable fact, or no reply); ``claims`` /
    ``claims_supported``: the reply's claims and those its own quotes state; ``claims_ungrounded``: claims with
    a number, name or URL that no unit of the evidence states; ``kind_unmet`` / ``terms_named`` / ``terms_asked``:
    whether what would be shown states no quantity of the kind asked, and how many of the question's checkable
    terms its quotes name (:class:`rag_lib.verification.AskedCheck`; 0 of 0 when nothing was left to show).
    """
    reply = result.answer.answer if result.answer and result.status != "insufficient" else ""
    support = result.support
    claims = [c.text for c in support.claims] if support else ([reply] if reply else [])
    whole = "\n".join(claims) or reply
    stated = answer_correct(question_id, whole, key_facts) if answerable and whole else None
    sent = "\n".join(c.text for c in evidence)
    asked = squash(question)
    ungrounded = sum(any(squash(s.text) not in asked and not states(s, sent) for s in checkable_statements(c))
                     for c in claims)
    on_question = support.asked if support else None
    return {"stated": stated.correct if stated else None, "claims": len(claims),
            "claims_supported": sum(c.supported for c in support.claims) if support else 0,
            "claims_ungrounded": ungrounded, "kind_unmet": bool(on_question and on_question.kind_problem),
            "terms_named": len(on_question.named) if on_question else 0,
            "terms_asked": len(on_question.named) + len(on_question.unnamed) if on_question else 0}


def _declined_by(out: GatedResult) -> str | None:
    if out.result.status != "insufficient":
        return None
    return "gate" if not out.generator_called else "generator"


# ------------------------------------------------------------------------------ faults

def _answer_json(citations: Sequence[dict[str, str]] = ()) -> str:
    import json

    return json.dumps({"status": "answered", "answer": "An answer.", "citations": list(citations), "missing": []})


FAULTS: tuple[tuple[str, str, str | Exception], ...] = (
    # (case, what the backend replies (or raises), how it fails)
    ("backend times out", "timeout", LLMCallError("timeout", "timed out after 60 s (scripted)")),
    ("backend returns non-JSON", "non_json", "Sure! You configure it in the dashboard."),
    ("JSON fails the schema", "schema_invalid", '{"status": "answered", "text": "no answer field"}'),
    ("answer cites nothing", "no_citations", _answer_json()),
    ("citation with a made-up chunk id", "no_valid_citations",
     _answer_json([{"chunk_id": "made-up-000-00000000", "quote": "Redeploy your project"}])),
)

BAD_INPUTS: tuple[tuple[str, str], ...] = (
    ("empty question", ""),
    ("whitespace-only question", " \n\t "),
    ("100 KB question", "How do I configure R2? " * 4348),  # 100,004 characters
    ("question in Russian (unexpected language)", "Как настроить привязку R2 для Pages Functions?"),
)


def fault_outcomes(wb: Workbench, gate: Gate, generator: Generator, evidence_question: str,
                   key: str = "dense", k: int | None = None) -> list[FaultRow]:
    """One row per bad input and per scripted backend fault: where it stopped, status and error kind.

    Bad inputs go through the whole pipeline (retrieval, ``gate``, ``generator``). Backend faults
    use a scripted LLM backend (no model) behind the same gate, on the Top-``k`` of
    ``evidence_question``, which the gate accepts, so each fault reaches the backend. ``k`` (``None``: the
    workbench's ``config.k``) is passed on to :func:`gated_answer` and ``wb.evidence``, which resolve it.
    """
    rows = []
    for case, text in BAD_INPUTS:
        try:
            out, _ = gated_answer(text, wb, GatedGenerator(generator, gate), key, k)
        except Exception as exc:  # measured, not assumed: a crash is a row of its own
            rows.append(_crash_row(case, f"{len(text):,} characters", exc))
            continue
        rows.append(_fault_row(case, f"{len(text):,} characters", out))
    ranking = wb.rank(evidence_question, key)
    evidence = wb.evidence(ranking, k)
    for case, _, reply in FAULTS:
        try:
            with tempfile.TemporaryDirectory() as tmp:  # scripted replies are not worth keeping
                scripted = scripted_generator(reply, CallRecorder(tmp, mode="live"))
                out = GatedGenerator(scripted, gate).generate(evidence_question, evidence, ranking)
        except Exception as exc:
            rows.append(_crash_row(case, "scripted backend", exc))
            continue
        rows.append(_fault_row(case, "scripted backend", out))
    return rows


def _crash_row(case: str, given: str, exc: Exception) -> FaultRow:
    return FaultRow(case=case, input=given, stopped_at="crashed", status="crashed", error_kind=type(exc).__name__,
                    generator_called=None, message=str(exc)[:160])


def _fault_row(case: str, given: str, out: GatedResult) -> FaultRow:
    if out.decision is None:
        stage = "input check"
    elif not out.generator_called:
        stage = "gate"
    else:
        stage = "generator"
    return FaultRow(case=case, input=given, stopped_at=stage, status=out.result.status,
                    error_kind=out.result.error_kind or "", generator_called=out.generator_called,
                    message=(out.result.error or (out.result.warnings[0] if out.result.warnings else ""))[:160])
