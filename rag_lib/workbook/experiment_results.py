"""The stored shape of each experiment's ``results.json``: one frozen dataclass per experiment.

An experiment returns its class; ``report.write_experiment`` stores ``to_json()`` and computes
the findings from ``from_json`` of what it read back; other runs (the summary), ``ask`` and the
tests read a stored run back with ``<Class>.read(run name)``. They live here, below the
experiments, because experiments never import each other. Every mechanism run (06) has one shape,
:class:`~rag_lib.workbook.mechanism_results.MechanismResult`; the corpus notebook (00) builds its
:class:`CorpusResult` from the corpus figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.errors import WorkbookError
from rag_lib.workbook.mechanism_results import MechanismResult
from rag_lib.workbook.results import MECHANISM_NOTEBOOK, ExperimentResult, MissingResult, planned_runs


@dataclass(frozen=True)
class CorpusResult(ExperimentResult):
    """``00_corpus``: the default batch's figures (:func:`rag_lib.corpus.corpus_stats`), every batch side by side
    and the benchmark's labels checked on each.

    Built by :func:`rag_lib.experiments.corpus.corpus_result`.
    """

    batch: str
    pages: int
    partials: int
    raw_chars: int
    normalized_chars: int
    chunks: int
    embeddable_chunks: int
    heading_only_chunks: int
    median_chars: float
    max_chars: int
    max_chars_limit: int
    oversized: list[dict[str, Any]]
    chunks_per_page: dict[str, Any]
    removals_by_kind: dict[str, Any]
    removed_chars: int
    warnings: dict[str, Any]
    n_warnings: int
    unknown_components: list[str]
    dropped_expressions: int
    n_oversized: int
    n_removals: int
    casebook: dict[str, Any]
    batches: dict[str, Any]
    labels: dict[str, Any]


@dataclass(frozen=True)
class BakeoffResult(ExperimentResult):
    """``01_embedding_bakeoff``: means per configuration and language, Q7 piece ranks, layer counts.

    Returned by :func:`rag_lib.experiments.bakeoff.run_bakeoff`.
    """

    k: int
    languages: list[str]
    n_answerable: int
    configurations: list[str]
    configurations_text: str
    unavailable: dict[str, Any]
    unavailable_text: str
    provenance: dict[str, Any]
    summary_rows: list[dict[str, Any]]
    summary_table: str
    plot: dict[str, Any]
    q7_rows: list[dict[str, Any]]
    q7_table: str
    layers: dict[str, Any]
    per_question: dict[str, Any]  # "<configuration> [<lang>]" -> question id -> measure -> value (full precision)
    worst_ranks: dict[str, Any]  # "<configuration> [<lang>]" -> question id -> its worst piece's first rank (None: a
    # piece has no chunk)
    inputs_sha256: str  # the chunks and labels measured (Workbench.inputs_sha256), checked by runs that reuse them


@dataclass(frozen=True)
class Q5Result(ExperimentResult):
    """``02_q5_success``: Q5 end to end (Top-k, gate decisions, the answer and its citations, faults).

    Returned by :func:`rag_lib.experiments.q5.run_q5`.
    """

    casebook: dict[str, Any]
    question: dict[str, Any]
    k: int
    retriever: str
    provenance: dict[str, Any]
    generator: dict[str, Any]
    top: list[dict[str, Any]]
    top_table: str
    pieces: list[dict[str, Any]]
    gate_params: dict[str, Any]
    gate_used: str
    decisions: dict[str, Any]
    answer: dict[str, Any]
    citations: list[dict[str, Any]]
    citations_valid: int
    citations_total: int
    llm_answer: dict[str, Any]
    wrangler_r2: list[dict[str, Any]]
    wrangler_table: str
    wrangler_rank: dict[str, Any]
    faults: list[dict[str, Any]]
    faults_table: str
    faults_crashed: int
    key_facts: dict[str, Any]


@dataclass(frozen=True)
class Q9aResult(ExperimentResult):
    """``03_q9a_no_evidence``: the gates calibrated and validated, Q9a's decisions, generation behind the gate.

    Returned by :func:`rag_lib.experiments.q9a.run_q9a`.
    """

    casebook: dict[str, Any]
    question: dict[str, Any]
    languages: list[str]
    k: int
    retriever: str
    provenance: dict[str, Any]
    corpus_check: dict[str, Any]
    top: dict[str, Any]
    scores: dict[str, Any]
    overlap: dict[str, Any]
    best_scores: dict[str, Any]  # language -> {"answerable": [...], "unanswerable": [...]}
    calibration: dict[str, Any]
    floor_sweep: dict[str, Any]
    gates: dict[str, Any]
    gate_tables: dict[str, str]  # language → Markdown
    validation: dict[str, Any]
    validation_interval: str
    validation_tables: dict[str, str]  # language → Markdown
    near_miss: dict[str, Any]
    gated_decline: dict[str, Any]
    bypass: dict[str, Any]
    llm_judge: dict[str, Any]
    llm_judge_narrowed: dict[str, Any]  # the narrowed pipeline's part-by-part judge
    llm_judge_rows: list[dict[str, Any]]
    llm_judge_table: str
    generation: dict[str, Any]

    def calibrated_gate(self, lang: str) -> dict[str, float]:
        """The floor and aspect coverage chosen for ``lang`` (what ``ask`` applies)."""
        chosen = (self.calibration.get(lang) or {}).get("floor_aspects")
        if not chosen:
            raise MissingResult(f"03_q9a_no_evidence has no floor+aspects calibration for {lang!r} (it has "
                                f"{sorted(self.calibration)}); re-run it with that language.")
        return {"floor": float(chosen["floor"]), "min_coverage": float(chosen["min_coverage"])}

    def gate_quality(self, lang: str) -> dict[str, dict[str, tuple[int, int]]]:
        """floor+aspects on the benchmark in ``lang``, in-sample and leave-one-out: (declined, of) for the
        unanswerable questions and for the answerable ones whose Top-k holds every gold piece."""
        fitted = self.gates[lang]["floor_aspects"]
        held = self.validation[lang]["floor_aspects"]["leave_one_out"]
        return {"in-sample": {"unanswerable declined": (fitted["unanswerable_declined"], fitted["unanswerable"]),
                              "false refusals": (fitted["complete_declined"], fitted["complete"])},
                "leave-one-out": {"unanswerable declined": (held["refusal_correctness"]["k"],
                                                            held["refusal_correctness"]["n"]),
                                  "false refusals": (held["false_refusal_rate"]["k"], held["false_refusal_rate"]["n"])}}

    def chosen_floors(self, languages: Sequence[str]) -> dict[str, float]:
        """The floor gate's chosen threshold per language (the dotted line of 03's figures)."""
        return {lang: self.calibration[lang]["floor"]["floor"] for lang in languages}

    def operating_points(self, languages: Sequence[str]) -> list[dict[str, Any]]:
        """Each label-free gate with one setting, in-sample, as a point per language: aspects, floor+aspects
        and every LLM judge (``lang``, ``gate``, the rates), beside the floor's sweep in 03's trade-off figure."""
        return ([{"lang": lang, "gate": gate, **self.gates[lang][gate]}
                 for lang in languages for gate in ("aspects", "floor_aspects")]
                + [row for row in self.llm_judge_rows
                   if row["lang"] in languages and row["gate"].startswith("llm_judge")])


@dataclass(frozen=True)
class TopkResult(ExperimentResult):
    """``04_q8_topk``: the coverage curve over k, Q8's verdict, the late-complete questions.

    Returned by :func:`rag_lib.experiments.topk.run_topk`.
    """

    configuration: str
    provenance: dict[str, Any]
    languages: list[str]
    max_k: int
    n_answerable: int
    token_estimate: str
    q8: dict[str, Any]
    q8_table: str
    q8_testable: dict[str, bool]  # language → both pieces ranked
    q8_verdict: dict[str, str]  # language → the verdict sentence
    late_complete: dict[str, Any]
    late_complete_count: dict[str, int]  # language → questions
    late_complete_tables: dict[str, str]  # language → Markdown
    n_compound: int
    casebook_q8: dict[str, Any]
    curve: dict[str, Any]
    curve_rows: list[dict[str, Any]]
    curve_table: str
    plot: dict[str, Any]


@dataclass(frozen=True)
class TopChunk:
    """One chunk of a ranking's top (05): its rank, cosine, page, heading path and the pieces it covers."""

    rank: int
    score: float
    page: str
    heading: str
    covers: str  # "C1,C3", or "-" when it covers none
    chunk_id: str


@dataclass(frozen=True)
class Q7Case:
    """Q7 in one phrasing and language (05): its Top-10 and where each piece first ranks."""

    question: str
    top10: list[TopChunk]
    top10_table: str
    piece_ranks: dict[str, int | None]  # piece → first rank (None: no chunk of it was ranked)
    piece_layers: dict[str, str]  # piece → rag_lib.evaluation.metrics.Layer
    top10_margins: dict[str, float | None]  # piece → cosine margin to the Top-10 cut (positive: inside)
    top10_median_gap: float | None  # median gap between neighbouring Top-10 scores
    coverage_at_k: str  # "1/4"
    coverage_top10: str
    layer: str
    worst_rank: int | None


@dataclass(frozen=True)
class CasebookQ7:
    """The casebook's published Q7 figures (theirs: bge-m3 on their snapshot)."""

    piece_ranks: dict[str, int]
    coverage_top10: str
    note: str


@dataclass(frozen=True)
class Q7DiagnosisResult(ExperimentResult):
    """``05_q7_diagnosis``: Q7's Top-10, each piece's first rank and layer, per phrasing.

    Returned by :func:`rag_lib.experiments.q7_diagnosis.run_q7_diagnosis`.
    """

    configuration: str
    provenance: dict[str, Any]
    k: int
    languages: list[str]
    pieces: dict[str, str]  # piece id → what the piece is
    cases: dict[str, dict[str, Q7Case]]  # phrasing → language → case
    rank_rows: list[dict[str, str | int | None]]  # one row per phrasing and language: C1… first ranks, shares
    rank_table: str
    casebook: CasebookQ7


@dataclass(frozen=True)
class RecoveryExperimentResult(ExperimentResult):
    """``07_recovery_loop``: the recovery loop on Q7 and on the compound questions.

    Returned by :func:`rag_lib.experiments.recovery.run_recovery_experiment`.
    """

    k: int
    languages: list[str]
    retriever: str
    sources: dict[str, Any]
    unavailable: dict[str, Any]
    choice_rule: str
    count_rule: str
    count_meaning: dict[str, Any]
    compound_question_ids: list[str]
    q7_id: str
    q7: dict[str, Any]
    benchmark: dict[str, Any]
    benchmark_table: str
    per_question: dict[str, Any]
    casebook_published: dict[str, Any]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class SummaryResult(ExperimentResult):
    """``08_summary``: the casebook side by side, what helps, the headline, from the stored runs.

    Returned by :func:`rag_lib.experiments.summary.run_summary`.
    """

    local_llm: dict[str, Any] | None  # None when 10_local_llm has not run
    local_llm_text: str
    languages: list[str]
    missing_inputs: list[str]  # declared runs without results
    missing_text: str
    side_by_side: dict[str, Any]
    side_by_side_tables: dict[str, str]  # language → Markdown
    evidence_k: dict[str, Any]
    benchmark_rows: list[dict[str, Any]]
    benchmark_table: str
    comparisons: list[dict[str, Any]]  # every mechanism comparison with its judgement (rag_lib.evaluation.claims)
    q7_every_phrasing: dict[str, Any]  # Q7's mechanism rows of every phrasing that put all pieces in the Top-10
    multiplicity: dict[str, Any]
    what_helps: list[dict[str, Any]]
    what_helps_table: str
    relabel: dict[str, Any]
    halo_rows: list[dict[str, Any]]
    halo_table: str
    casebook_rows: list[dict[str, Any]]
    casebook_table: str
    headline_table: str
    headline_findings: list[dict[str, str]]  # the README's five findings (rag_lib.experiments.headline)


# How a gated answer run of 10 decided its questions (the suffix of its gate name): with parameters fitted on
# the same questions, each question by parameters fitted without it, or that followed by the narrowed judge.
IN_SAMPLE = " (in-sample)"
HELD_OUT = " (leave-one-out)"
THEN_JUDGE = " then judge"


@dataclass(frozen=True)
class LocalLLMResult(ExperimentResult):
    """``10_local_llm``: the local LLM's answers and judgements beside the gate, the model choice.

    Returned by :func:`rag_lib.experiments.llm_eval.run_local_llm`.
    """

    languages: list[str]
    k: int
    retriever: str
    provenance: dict[str, Any]
    tasks: dict[str, Any]
    models: dict[str, Any]
    model_choice: dict[str, Any] | None  # None when run without the model choice
    pick_rule: str  # how the model-choice rows pick a model per task
    model_picks: list[dict[str, Any]]  # the rule's pick per task beside the configured model
    answers: dict[str, Any]
    answer_rows: list[dict[str, Any]]
    answer_table: str
    judge: dict[str, Any]
    gate_beside_judge: dict[str, Any]
    judge_rows: list[dict[str, Any]]
    judge_table: str
    judge_narrowed: dict[str, Any]  # the narrowed pipeline's part-by-part judge
    narrowing: dict[str, Any]  # generation.narrowing: what the narrowed pipeline sends
    narrowing_choice: dict[str, Any]  # how that budget was chosen: one half of the questions, reported on the other
    narrowing_choice_table: str
    injection: dict[str, Any]  # the injection set (rag_lib.question_sweeps.injection)
    injection_summary: str
    before_after: list[dict[str, Any]]  # answer rates per archive (answers-v1 … -v3) → now
    before_after_table: str
    targets: list[dict[str, Any]]  # the narrowed pipeline against the answers issue's targets
    target_table: str
    hand_checks: list[dict[str, Any]]  # the key-fact measure's agreement with each hand-checked sample
    selective: dict[str, Any]  # per language: selective answering (cross-validated logistic), its curve
    funnel: list[dict[str, Any]]  # per language: key facts in the Top-k → in the units sent → in the shown answer
    funnel_table: str
    paired: list[dict[str, Any]]  # answer against answer per question (llm_eval.paired), Holm-adjusted
    paired_table: str
    paired_family: dict[str, Any]  # the Holm family's size, fixed cells and how it was adjusted
    answer_languages: list[dict[str, Any]]  # per answerer and language (ungated): shown answers in its language
    partly_checkable: list[dict[str, Any]]  # questions whose key facts check only part of what they ask

    def narrowed_rows(self, suffix: str) -> list[dict[str, Any]]:
        """The narrowed answerer's figures under the gate runs whose name ends with ``suffix``
        (``HELD_OUT``, ``THEN_JUDGE``), one row per language."""
        label = self.answers["narrowed"]["label"]
        return [r for r in self.answer_rows if r["generator"] == label and r["gate"].endswith(suffix)]


@dataclass(frozen=True)
class ChunkingResult(ExperimentResult):
    """``11_chunking``: each strategy against the structural baseline, and the context cut.

    Returned by :func:`rag_lib.experiments.chunking.run_chunking`.
    """

    tables: dict[str, Any]
    languages: list[str]
    strategies: list[dict[str, Any]]
    metric_rows: list[dict[str, Any]]
    comparison_rows: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    gold_span_differences: int
    n_answerable: int
    context_rows: list[dict[str, Any]]
    priced_model: str
    price: dict[str, Any]
    halo: dict[str, Any]
    provenance: dict[str, Any]

    @property
    def k(self) -> int:
        """The top-k the run compared at, as its stored hit rate names it (``"hit@5"``: 5).

        Raises
        ------
        MissingResult
            When the stored metric rows hold no single ``hit@<k>`` column.
        """
        hits = sorted({m for row in self.metric_rows for m in row if m.startswith("hit@")})
        if len(hits) != 1:
            raise MissingResult(f"the results of 11_chunking hold {hits or 'no'} hit@k column(s) in metric_rows, "
                                "not one; re-run 11_chunking.")
        return int(hits[0].removeprefix("hit@"))

    def context_cut(self, lang: str) -> tuple[dict[str, Any], dict[str, Any], float]:
        """The Top-5 and Top-20 context rows of ``lang`` and the share of tokens the Top-5 saves (read by
        11's findings and by the summary)."""
        small, large = (next(r for r in self.context_rows if r["language"] == lang and r["k"] == k) for k in (5, 20))
        return small, large, 1 - small["tokens per question"] / large["tokens per question"]


@dataclass(frozen=True)
class CorpusSizeResult(ExperimentResult):
    """``12_corpus_size``: retrieval as the corpus grows (nested sizes, seeded page orders).

    Returned by :func:`rag_lib.experiments.corpus_size.run_corpus_size`.
    """

    languages: list[str]
    sizes: list[int]
    seeds: list[int]
    batch: str
    base_batch: str
    n_answerable: int
    labels: dict[str, Any]
    size_rows: list[dict[str, Any]]
    label_rows: list[dict[str, Any]]
    curve: list[dict[str, Any]]
    change_rows: list[dict[str, Any]]
    by_size: dict[str, Any]
    runs: list[dict[str, Any]]
    q7_runs: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    slot_rows: list[dict[str, Any]]
    top_distractors: list[dict[str, Any]]
    q7_first: list[dict[str, Any]]
    gate: dict[str, Any]
    tables: dict[str, Any]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class AnnResult(ExperimentResult):
    """``13_ann``: HNSW recall and metric cost against exact search, per setting and batch.

    Returned by :func:`rag_lib.experiments.ann.run_ann`.
    """

    languages: list[str]
    settings: list[dict[str, Any]]
    batches: list[str]
    rows: list[dict[str, Any]]
    comparison_rows: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    by_setting: dict[str, Any]
    tables: dict[str, Any]
    provenance: dict[str, Any]


# Notebook → the type of its stored result (09_explore stores none).
RESULT_TYPES: dict[str, type[ExperimentResult]] = {
    "00_corpus": CorpusResult, "01_embedding_bakeoff": BakeoffResult, "02_q5_success": Q5Result,
    "03_q9a_no_evidence": Q9aResult, "04_q8_topk": TopkResult, "05_q7_diagnosis": Q7DiagnosisResult,
    MECHANISM_NOTEBOOK: MechanismResult, "07_recovery_loop": RecoveryExperimentResult, "08_summary": SummaryResult,
    "10_local_llm": LocalLLMResult, "11_chunking": ChunkingResult, "12_corpus_size": CorpusSizeResult,
    "13_ann": AnnResult,
}


def result_type(run: str) -> type[ExperimentResult]:
    """The declared type of run ``run``'s results (the notebook ``workbook.yaml`` runs it with)."""
    notebooks = {r.name: r.notebook for r in planned_runs()}
    if notebooks.get(run) not in RESULT_TYPES:
        stores = sorted(name for name, notebook in notebooks.items() if notebook in RESULT_TYPES)
        raise WorkbookError(f"no declared run {run!r} stores results; the runs that do are {', '.join(stores)} "
                            "(reproduce.notebooks in rag_lib/workbook.yaml).")
    return RESULT_TYPES[notebooks[run]]
