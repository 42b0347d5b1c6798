"""Q5 end to end, the casebook's success case: Top-k, gate, answer, checked citations, the rank-8 gap.

Casebook section 02: the rank-1 chunk covers the binding, the redeploy and ``context.env``;
the answer cited ranks 1–4 and every quote checked out; but "the chunk with the Wrangler
configuration syntax for Pages sits at rank 8, outside the Top-5". :func:`wrangler_r2_chunks`
finds both candidates for that chunk in our corpus and :func:`run_q5` reports their ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.core.casebook import published
from rag_lib.core.documents import Chunk
from rag_lib.evaluation.correctness import answer_correct
from rag_lib.evidence.gated import GatedGenerator, GatedResult
from rag_lib.generation import get_generator, get_task_generator
from rag_lib.pipeline.workbench import Workbench
from rag_lib.question_sweeps.gates import calibrate, chosen_gates, general_gate_key
from rag_lib.question_sweeps.generation import fault_outcomes
from rag_lib.results.answer_rows import DecisionRecord, GatedAnswerRecord, GeneratorInfo
from rag_lib.results.gate_rows import GateParameters
from rag_lib.results.provenance import retriever_provenance
from rag_lib.results.q5 import (
    CasebookQ5,
    KeyFacts,
    KeyFactsByAnswerer,
    LLMGatedAnswer,
    PieceRank,
    Q5Question,
    Q5Result,
    WranglerRank,
    WranglerRow,
)
from rag_lib.results.retrieval_rows import TopRow
from rag_lib.results.typed_json import decode

# The two places the "Wrangler configuration syntax" for an R2 binding can be: the Workers
# Wrangler reference (the casebook's benchmark note) and the Pages page on Wrangler configuration.
WRANGLER_R2_PAGES = ("workers/wrangler/configuration", "pages/functions/wrangler-configuration")
R2_HEADING = "R2 buckets"


def wrangler_r2_chunks(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    """Per candidate page, its chunks whose heading path ends with "R2 buckets"."""
    return {page: [c for c in chunks if c.page == page and c.heading_path and c.heading_path[-1] == R2_HEADING]
            for page in WRANGLER_R2_PAGES}


def wrangler_ranks(wb: Workbench, languages: Sequence[str], k: int, key: str = "dense") -> list[WranglerRow]:
    """The rank of every Wrangler R2-bucket chunk for Q5 in each language (casebook: 8), and whether it is
    in the Top-``k``."""
    q5 = wb.benchmark.by_casebook("Q5")
    rows = []
    for lang in languages:
        ranking = wb.rank(q5.text(lang), key)
        for page, found in wrangler_r2_chunks(wb.chunks).items():
            for chunk in found:
                rank = ranking.rank_of(chunk.id) if chunk.id in ranking else None
                rows.append(WranglerRow(lang=lang, page=page, chunk=chunk.id, heading=" > ".join(chunk.heading_path),
                                        rank=rank, in_top_k=rank is not None and rank <= k))
    return rows


def run_q5(wb: Workbench | None = None, lang: str = "zh", languages: Sequence[str] = ("zh", "en"), k: int | None = None,
           generator: str | None = None, key: str = "dense") -> Q5Result:
    """Everything notebook 02 shows."""
    wb = wb or Workbench()
    k = wb.config.top_k(k)
    q5 = wb.benchmark.by_casebook("Q5")
    question = q5.text(lang)
    ranking = wb.rank(question, key)
    evidence = wb.evidence(ranking, k)
    calibration = calibrate(wb, lang, key, k)
    gates = chosen_gates(calibration, wb)
    decisions = {name: decode(DecisionRecord, gate.decide(question, evidence, ranking).to_json())
                 for name, gate in gates.items()}
    gen = get_generator(generator)
    general = gates[general_gate_key(gates)]
    answered = GatedGenerator(gen, general).generate(question, evidence, ranking)
    answer = decode(GatedAnswerRecord, answered.to_json())
    citations = answer.result.citations.citations if answer.result.citations else []
    # The local LLM of the `answer` task behind the same gate (replayed from results/llm_calls).
    llm = get_task_generator("answer")
    llm_answered = GatedGenerator(llm, general).generate(question, evidence, ranking)
    pieces = [PieceRank(piece=p.id, what=p.what,
                        first_rank=min((ranking.rank_of(c) for c in ids if c in ranking), default=None))
              for p, ids in zip(q5.gold, q5.pieces, strict=True)]
    wrangler = wrangler_ranks(wb, languages, k, key)
    faults = fault_outcomes(wb, general, gen, question, key, k)
    return Q5Result(
        casebook=decode(CasebookQ5, published()["q5"]),  # THEIRS (bge-m3, qwen3.8-flash), printed beside ours
        question=Q5Question(id=q5.id, lang=lang, text=question),
        k=k, retriever=key, provenance=retriever_provenance(wb.provenance(key)),
        generator=GeneratorInfo(backend=gen.backend, model=gen.model, model_version=gen.model_version),
        top=[TopRow(**row) for row in wb.top_rows(question, key, k)],
        pieces=pieces,
        gate_params={n: GateParameters(floor=calibration[n]["floor"], min_coverage=calibration[n]["min_coverage"])
                     for n in ("floor", "aspects", "floor_aspects")},
        gate_used=general.name,
        decisions=decisions,
        answer=answer,
        citations=citations,
        citations_valid=sum(c.valid for c in citations),
        citations_total=len(citations),
        llm_answer=decode(LLMGatedAnswer, {"generator": {"backend": llm.backend, "model": llm.model,
                                                         "model_version": llm.model_version},
                                           **llm_answered.to_json()}),
        wrangler_r2=wrangler,
        wrangler_rank=WranglerRank(workers=_first_rank(wrangler, lang, WRANGLER_R2_PAGES[0]),
                                   pages=_first_rank(wrangler, lang, WRANGLER_R2_PAGES[1])),
        faults=faults,
        faults_crashed=sum(row.status == "crashed" for row in faults),
        key_facts=KeyFactsByAnswerer(extractive=_facts_stated(q5.id, answered), llm=_facts_stated(q5.id, llm_answered)),
    )


def _first_rank(rows: Sequence[WranglerRow], lang: str, page: str) -> int | None:
    """The rank of ``page``'s first R2-bucket chunk in ``lang`` (``None``: unranked, or the page has none)."""
    return next((r.rank for r in rows if r.lang == lang and r.page == page), None)


def _facts_stated(question_id: str, out: GatedResult) -> KeyFacts:
    """How many of the question's checkable key facts an answer states (none when it did not answer)."""
    if out.result.status != "answered" or out.result.answer is None:
        return KeyFacts(answered=False, stated=0, of=None, correct=None)
    check = answer_correct(question_id, out.result.answer.answer)
    return KeyFacts(answered=True, stated=len(check.found), of=len(check.checks), correct=check.correct)


def findings(result: Q5Result) -> list[str]:
    """Sentences generated from :func:`run_q5`'s stored numbers, with their caveats."""
    q, k = result.question, result.k
    ranks = ", ".join(f"{p.piece} at rank {p.first_rank}" for p in result.pieces)
    inside = all(p.first_rank is not None and p.first_rank <= k for p in result.pieces)
    out = [f"Q5 ({q.lang}) is the case that works: every gold piece is in the Top-{k} ({ranks})"
           if inside else f"Q5 ({q.lang}): not every gold piece is in the Top-{k} ({ranks})"]
    decision = result.answer.decision
    out[0] += (f", and the {result.gate_used} gate finds the evidence sufficient "
               f"({decision.reason if decision else 'no decision: refused before the gate'}).")
    answers = ((result.generator.model, result.answer, result.key_facts.extractive),
               (result.llm_answer.generator.model, result.llm_answer, result.key_facts.llm))
    for model, entry, facts in answers:
        cit = entry.result.citations
        if not facts.answered:
            support = entry.result.support
            why = (" its answer is not shown: it restates the question, adding nothing from its quotes"
                   if support and support.restates_question else
                   f" its answer is not shown: it states {', '.join(support.unsupported)}, which no verified "
                   "quote contains" if support and support.unsupported else "")
            error_kind = entry.result.error_kind
            out.append(f"{model} did not answer (status {entry.result.status}"
                       f"{', ' + error_kind if error_kind else ''});{why}.".replace(");.", ")."))
            continue
        out.append(f"{model} answered with {cit.n_valid if cit else 0}/{cit.n_total if cit else 0} valid citations "
                   f"and states {facts.stated} of {facts.of} key facts: a valid citation shows the quote exists in "
                   "the cited chunk, not that the answer is complete.")
    w = result.wrangler_rank
    out.append(f"The Workers Wrangler reference R2 chunk ranks {w.workers} (casebook: "
               f"{result.casebook.wrangler_config_chunk_rank}) and the Pages one {w.pages}.")
    out.append(f"All {len(result.faults)} bad-input and backend-fault cases end as a recorded outcome; "
               f"{result.faults_crashed} crashed.")
    out.append("Caveats: one question; the gate's parameters are fitted on this benchmark (03); the embedder is "
               "the offline default, not the casebook's bge-m3.")
    return out
