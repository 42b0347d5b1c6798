"""``02_q5_success``'s report: Q5 end to end, from its Top-k and the gate's decision to the answer and the faults."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.answer_rows import DecisionRecord
from rag_lib.results.q5 import EXPERIMENT, Q5Result

__all__ = ["EXPERIMENT", "report_markdown"]

TOP_COLUMNS = ["rank", "chunk", "page", "heading", "score"]
WRANGLER_COLUMNS = ["lang", "page", "chunk", "heading", "rank", "in_top_k"]
FAULT_COLUMNS = ["case", "input", "stopped_at", "status", "error_kind", "generator_called"]


def sufficient(decision: DecisionRecord | None) -> str:
    """A gate's verdict as the report words it (a dash when the question never reached the gate)."""
    return prose(decision.sufficient if decision is not None else None)


def report_markdown(result: Q5Result, findings: Sequence[str]) -> str:
    question = result.question
    embedder = result.provenance.embedder or {}
    generator = result.generator
    gate = result.gate_params["floor_aspects"]
    llm = result.llm_answer
    return f"""# 02 · Q5 end to end

Question ({question.lang}): {question.text}
Retrieval: dense, {prose(embedder["model"])} ({prose(embedder["backend"])}, {prose(embedder["version"])}); \
k = {result.k}.
Generator: {generator.backend} / {generator.model} ({prose(generator.model_version)}).

Top-{result.k}:

{markdown_table(result.top, TOP_COLUMNS)}

Gold pieces: C1 first at rank {prose(result.pieces[0].first_rank)}, C2 first at rank \
{prose(result.pieces[1].first_rank)}.

Gate `{result.gate_used}` (floor {prose(gate.floor)}, aspect coverage ≥ {prose(gate.min_coverage)}):
sufficient = {sufficient(result.answer.decision)}; checklist (oracle): sufficient = \
{sufficient(result.decisions["checklist"])}.

Answer status: {result.answer.result.status}; citations valid {result.citations_valid} / {result.citations_total}.

Local LLM ({llm.generator.model}) behind the same gate: status {llm.result.status}
(error: {prose(llm.result.error_kind)}).

Wrangler R2-bucket chunks (casebook: rank {result.casebook.wrangler_config_chunk_rank}):

{markdown_table(result.wrangler_r2, WRANGLER_COLUMNS)}

In {question.lang}, the Workers Wrangler reference R2 chunk ranks {prose(result.wrangler_rank.workers)} and the Pages
Wrangler-configuration R2 chunk ranks {prose(result.wrangler_rank.pages)}.

Bad input and faults ({result.faults_crashed} of them crashed; a crash would be a row with status `crashed`):

{markdown_table(result.faults, FAULT_COLUMNS)}

## Findings

{bullets(findings)}
"""
