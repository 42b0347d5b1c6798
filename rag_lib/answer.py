"""One question end to end on the default configuration: evidence, gate decision, cited answer.

The gate is the general ``floor+aspects`` gate with the parameters that notebook 03 chose and
stored in ``results/03_q9a_no_evidence/results.json`` (calibrated on the benchmark, per language);
``python -m rag_lib ask`` says which parameters it used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rag_lib.config import RESULTS_DIR
from rag_lib.errors import WorkbookError
from rag_lib.evidence import get_gate
from rag_lib.experiments.generation_eval import answer_question as gated_answer
from rag_lib.generation import get_generator
from rag_lib.generation.gated import GatedGenerator, GatedResult
from rag_lib.workbench import Workbench

_CJK = re.compile(r"[\u3400-\u9fff]")
# Said with every gate decision: the parameters are tuned on the benchmark, so their in-sample rates overstate.
FITTED_NOTE = ("fitted on all benchmark questions (notebook 03, in-sample); out-of-sample refusal and "
               "false-refusal rates: results/03_q9a_no_evidence/report.md")


def language_of(question: str) -> str:
    """``"zh"`` when the question contains Chinese characters, else ``"en"``."""
    return "zh" if _CJK.search(question) else "en"


def calibrated_gate_parameters(lang: str) -> dict[str, float]:
    """The floor and aspect coverage notebook 03 chose for ``lang``."""
    path = RESULTS_DIR / "03_q9a_no_evidence" / "results.json"
    if not path.is_file():
        raise WorkbookError(f"{path} is missing: the gate's parameters come from notebook 03; run `make reproduce`.")
    chosen = json.loads(path.read_text(encoding="utf-8"))["calibration"][lang]["floor_aspects"]
    return {"floor": float(chosen["floor"]), "min_coverage": float(chosen["min_coverage"])}


@dataclass
class AskOutcome:
    """What ``ask`` shows: the evidence, the gate's decision and the generator's result."""

    question: str
    key: str
    gate_parameters: dict[str, float]
    evidence: list[dict[str, Any]]
    gated: GatedResult

    def render_text(self) -> str:
        result = self.gated.result
        lines = [f"question: {self.question}", f"retrieval: {self.key}; evidence (Top-{len(self.evidence)}):"]
        lines += [f"  [{e['rank']}] {e['score']:.4f}  {e['page']} > {e['heading']}  ({e['id']})" for e in self.evidence]
        decision = self.gated.decision
        if decision is not None:
            verdict = "sufficient" if decision.sufficient else "insufficient"
            lines.append(f"gate floor+aspects {self.gate_parameters}: {verdict} ({decision.reason})")
            lines.append(f"  parameters {FITTED_NOTE}")
        lines.append(f"generator: {result.backend} {result.model} ({result.model_version}); "
                     f"called: {self.gated.generator_called}; status: {result.status}")
        lines.append("")
        lines.append(result.answer.answer if result.answer else (result.error or ""))
        if result.citations is not None:
            lines.append("")
            lines.append(f"citations: {result.citations.n_valid}/{result.citations.n_total} valid")
            for c in result.citations.valid:
                lines.append(f"  {c.chunk_id}: \"{c.quote[:100]}\"\n    {c.deep_link}")
        return "\n".join(lines)


def answer_question(
    question: str, key: str = "dense", k: int = 5, generator: str | None = None, workbench: Workbench | None = None
) -> AskOutcome:
    """Rank, gate and answer one question with the workbook's defaults."""
    if key != "dense":
        raise WorkbookError(f"ask uses the gate calibrated on dense scores of the default embedder; got {key!r}. "
                            "Use --retriever dense, or `rank` to compare retrievers.")
    wb = workbench or Workbench()
    params = calibrated_gate_parameters(language_of(question))
    gated = GatedGenerator(get_generator(generator), get_gate("floor+aspects", **params))
    outcome, ranking = gated_answer(question, wb, gated, key=key, k=k)
    evidence = []
    for rank, (cid, score) in enumerate(ranking.top(k) if ranking else (), 1):
        chunk = wb.by_id[cid]
        evidence.append({"rank": rank, "score": score, "page": chunk.page,
                         "heading": " > ".join(chunk.heading_path), "id": cid})
    return AskOutcome(question, key, params, evidence, outcome)
