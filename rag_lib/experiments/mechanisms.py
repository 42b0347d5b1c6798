"""Q7 mechanisms (casebook section 05): one retrieval mechanism against the dense baseline.

Every mechanism is a set of **variants**; a variant turns a question text into a full ranking
(and says how many chunks go to generation: ``evidence_k``). For each variant we report

* where Q7's pieces C1–C4 first appear, for its three phrasings and each language;
* its effect on the answerable benchmark questions (hit@5, coverage@10, MRR, and coverage at
  the variant's own evidence size against the baseline's coverage@5), as paired differences
  against the baseline with bootstrap 95% intervals over questions.

The baseline is dense retrieval with the default embedder and k = 5 (``workbook.yaml``). The
result has one uniform shape for every mechanism (see :func:`run_mechanism`), which the summary
notebook reads.

A mechanism is declared once, with its parameters written out (:func:`mechanism`); they go into
each run's provenance, ``python -m rag_lib.experiments --list`` prints them, and an undeclared
name is an error. Adding a mechanism = one ``@mechanism`` builder + one run line in ``workbook.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_lib.benchmark import Q7_PHRASINGS, Question
from rag_lib.config import RRF_K, TOP_K, run_config, settings
from rag_lib.embedding import available_embedders
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.errors import WorkbookError
from rag_lib.evaluation import MRR, HitAt, PieceCoverage, compare, effect_text, piece_ranks
from rag_lib.evaluation.stats import no_question_changed
from rag_lib.generation import get_task_generator
from rag_lib.llm_calls import LLMCallError, ReplayMissError
from rag_lib.query_ops import LLM_MAX_TOKENS, QueryLLM, QueryOutcome, RuleSplitter, fuse
from rag_lib.report import markdown_table
from rag_lib.rerank import available_rerankers, get_reranker
from rag_lib.retrieval import Ranking
from rag_lib.retrieval.diversity import demote_near_duplicates, mmr
from rag_lib.text import identifiers
from rag_lib.workbench import RunKey, Workbench

METRICS = ("hit@5", "coverage@10", "mrr", "coverage@evidence")
RERANKER = "bge-reranker-v2-m3"


class RankFailed(WorkbookError):
    """A variant could not rank a question (an LLM call failed or has no record): reported as failed,
    never replaced by the baseline's ranking."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Variant:
    """One way a mechanism changes retrieval.

    ``rank`` maps a question text to a full ranking; ``evidence_k`` is how many chunks of it go
    to generation; ``languages`` limits the benchmark comparison (``None``: every language run);
    ``q7_phrasings`` are the Q7 phrasings it is applied to.
    """

    name: str
    description: str
    rank: Callable[[str], Ranking]
    evidence_k: int = TOP_K
    languages: tuple[str, ...] | None = None
    q7_phrasings: tuple[str | None, ...] = Q7_PHRASINGS
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    llm: LLMQueries | None = None
    question_ids: frozenset[str] | None = None  # a stated subset of the benchmark (None: every question)


class LLMQueries:
    """Turns a question into queries with an LLM task, remembering every outcome (for the report).

    A failed call (non-JSON, schema-invalid, backend error, no record) raises :class:`RankFailed`:
    the question is reported as failed for this variant, never ranked as the original question.
    """

    def __init__(self, qllm: QueryLLM, task: str) -> None:
        self.qllm = qllm
        self.task = task
        self.outcomes: dict[str, QueryOutcome] = {}

    def __call__(self, text: str) -> list[str]:
        if text not in self.outcomes:
            self.outcomes[text] = self.qllm.run(self.task, text)
        outcome = self.outcomes[text]
        if outcome.status != "ok":
            raise RankFailed(str(outcome.error_kind), str(outcome.error))
        return list(outcome.queries)

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for o in self.outcomes.values():
            key = "ok" if o.status == "ok" else str(o.error_kind)
            kinds[key] = kinds.get(key, 0) + 1
        return {"calls": len(self.outcomes), "by_status": dict(sorted(kinds.items()))}

    def outputs(self, texts: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The outcome of each of ``texts`` that was asked, as JSON.

        ``replayed`` is left out: it says how this run got the reply, not what the reply was, and
        keeping it would make a replayed re-run differ from the recording run.
        """
        return {t: {k: v for k, v in self.outcomes[t].to_json().items() if k != "replayed"}
                for t in dict.fromkeys(texts) if t in self.outcomes}


# --------------------------------------------------------------------------- declared mechanisms
@dataclass(frozen=True)
class FromSettings:
    """A mechanism parameter read from ``workbook.yaml`` when the mechanism runs (``"retrieval.rrf_k"``)."""

    path: str

    def resolve(self) -> Any:
        node: Any = settings()
        for part in self.path.split("."):
            node = node[part]
        return node


@dataclass
class BuildContext:
    """What a mechanism's builder gets: the workbench, the baseline, and where to note provenance."""

    wb: Workbench
    base: BaselineDense
    use_llm: bool
    llm_languages: Sequence[str]
    provenance: dict[str, Any]


Builder = Callable[..., tuple[list["Variant"], dict[str, str]]]


@dataclass(frozen=True)
class MechanismSpec:
    """A declared mechanism: its builder and the parameters it is built with (recorded in provenance)."""

    name: str
    description: str
    build: Builder
    parameters: dict[str, Any]

    def resolved_parameters(self) -> dict[str, Any]:
        """The parameters with settings read and tuples as lists (as they appear in ``results.json``)."""
        return {k: (v.resolve() if isinstance(v, FromSettings) else list(v) if isinstance(v, tuple) else v)
                for k, v in self.parameters.items()}

    def variants(self, ctx: BuildContext) -> tuple[list[Variant], dict[str, str]]:
        """The variants that can run here, and the reason for each model that cannot."""
        params = {k: (v.resolve() if isinstance(v, FromSettings) else v) for k, v in self.parameters.items()}
        return self.build(ctx, **params)


MECHANISM_REGISTRY: dict[str, MechanismSpec] = {}


def mechanism(name: str, description: str, **parameters: Any) -> Callable[[Builder], Builder]:
    """Declare a mechanism: ``build(ctx, **parameters)`` returns its variants and, per model that is
    not on this machine, why. The parameters are explicit here and go into each run's provenance.

    >>> @mechanism("toy", "the baseline under another name", k=5)       # doctest: +SKIP
    ... def toy(ctx, k): return [Variant("same", "baseline", ctx.base, evidence_k=k)], {}
    """
    def register(build: Builder) -> Builder:
        if name in MECHANISM_REGISTRY:
            raise WorkbookError(f"mechanism {name!r} is declared twice; pick another name.")
        MECHANISM_REGISTRY[name] = MechanismSpec(name, description, build, dict(parameters))
        return build
    return register


def get_mechanism(name: str) -> MechanismSpec:
    """The declared mechanism ``name``; an unknown name is an error that lists the declared ones."""
    try:
        return MECHANISM_REGISTRY[name]
    except KeyError:
        raise WorkbookError(f"unknown mechanism {name!r}; declared: {', '.join(MECHANISM_REGISTRY)}. "
                            "Declare it with @mechanism in rag_lib/experiments/mechanisms.py.") from None


# --------------------------------------------------------------------------- variants per mechanism
class BaselineDense:
    """The baseline (dense, default embedder), with each question's vector and ranking kept.

    Every variant starts from the same few hundred question texts; embedding each once keeps a
    mechanism run to seconds (the rankings are identical either way).
    """

    def __init__(self, wb: Workbench) -> None:
        self.retriever = wb.retriever("dense")
        self.embedder = wb.embedder()
        self._vectors: dict[str, np.ndarray] = {}
        self._rankings: dict[str, Ranking] = {}

    def vector(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            self._vectors[text] = np.asarray(self.embedder.embed_queries([text]), dtype=np.float32).reshape(-1)
        return self._vectors[text]

    def __call__(self, text: str) -> Ranking:
        if text not in self._rankings:
            scores = self.retriever.scores_of_vector(self.vector(text))
            self._rankings[text] = Ranking.from_scores(self.retriever.ids, scores, source=self.retriever.name)
        return self._rankings[text]


def topk_variants(base: BaselineDense, ks: Sequence[int] = (10, 20)) -> list[Variant]:
    """Same ranking, more evidence: the top k chunks go to generation instead of the top 5."""
    return [Variant(f"k={k}", f"dense baseline ranking, top {k} as evidence instead of top 5", base, evidence_k=k)
            for k in ks]


def dedup_mmr_variants(wb: Workbench, base: BaselineDense, candidates: int = 50, threshold: float = 0.95,
                       text_threshold: float = 0.8, lambda_: float = 0.5) -> list[Variant]:
    """Near-duplicate demotion (by chunk vectors, or by chunk text) and MMR over the baseline's top ``candidates``."""
    index = wb.matrix()
    texts = {c.id: c.text for c in wb.embeddable}

    def dedup(text: str) -> Ranking:
        return demote_near_duplicates(base(text), index=index, threshold=threshold, depth=candidates)

    def dedup_text(text: str) -> Ranking:
        return demote_near_duplicates(base(text), texts=texts, threshold=text_threshold, depth=candidates)

    def with_mmr(text: str, ranking: Ranking | None = None) -> Ranking:
        return mmr(ranking or base(text), index, base.vector(text), lambda_=lambda_, candidates=candidates)

    return [
        Variant("dedup", f"near-duplicates (chunk-vector cosine > {threshold}) in the top {candidates} moved to "
                         "the end", dedup),
        Variant("dedup-text", f"near-duplicates (word-trigram Jaccard > {text_threshold}) in the top {candidates} "
                              "moved to the end", dedup_text),
        Variant("mmr", f"MMR (lambda={lambda_}) re-orders the top {candidates}", with_mmr),
        Variant("dedup+mmr", "near-duplicate demotion, then MMR, over the same candidates",
                lambda text: with_mmr(text, dedup(text))),
    ]


def _recorded_rank(rerank: Callable[[str], Ranking]) -> Callable[[str], Ranking]:
    """A reranking whose scores are recorded LLM calls: a missing or failed call fails the question."""
    def rank(text: str) -> Ranking:
        try:
            return rerank(text)
        except ReplayMissError as exc:
            raise RankFailed("replay_miss", str(exc)) from exc
        except LLMCallError as exc:
            raise RankFailed(exc.kind, str(exc)) from exc
    return rank


def benchmark_subset(questions: Sequence[Question], size: int, seed: int = 0) -> frozenset[str]:
    """A seeded subset of ``size`` questions, stratified by compound / single-piece (sorted ids)."""
    rng = np.random.default_rng(seed)
    groups = [sorted(q.id for q in questions if q.compound == c) for c in (True, False)]
    total = sum(len(g) for g in groups)
    picked: list[str] = []
    for group in groups:
        share = round(size * len(group) / total) if total else 0
        picked += list(rng.choice(group, size=min(share, len(group)), replace=False)) if group else []
    return frozenset(picked)


def reranker_variants(wb: Workbench, base: BaselineDense, name: str = RERANKER,
                      candidates: int | None = None, subset: int | None = None) -> list[Variant]:
    """Reranker ``name`` over the baseline's top candidates (``retrieval.rerank_candidates``).

    ``subset`` limits the whole-benchmark comparison to a seeded, stratified subset of that many
    answerable questions (an LLM reranker costs minutes per question here); Q7 always runs.
    """
    n = int(candidates or run_config().rerank_candidates)
    reranker = get_reranker(name)
    texts = {c.id: c.embed_input for c in wb.embeddable}
    ids = benchmark_subset(wb.benchmark.questions(answerable=True), subset) if subset else None
    notes = [f"Whole-benchmark comparison on a seeded (seed 0), stratified subset of {len(ids)} answerable questions "
             "(runtime of the LLM reranker on 2 cores); Q7 on every phrasing."] if ids else []
    return [Variant(f"{name} top-{n}", f"{name} re-scores the dense top {n}",
                    _recorded_rank(lambda text: reranker.rerank(text, base(text), texts, top_n=n)),
                    provenance={"reranker": reranker.provenance, "subset": sorted(ids) if ids else None},
                    question_ids=ids, notes=notes)]


def _split_rank(base: BaselineDense, split: Callable[[str], list[str]], fusion: str,
                rrf_k: int) -> Callable[[str], Ranking]:
    return lambda text: fuse([base(part) for part in split(text)], fusion, k=rrf_k)


def query_split_variants(base: BaselineDense, qllm: QueryLLM | None, llm_languages: Sequence[str] = ("zh", "en"),
                         fusions: Sequence[str] = ("rrf", "round_robin"), rrf_k: int = RRF_K) -> list[Variant]:
    """Rule-based splitting (sentences; sentences + clauses), fused by each of ``fusions``; LLM splitting (RRF)."""
    variants = []
    for splitter in (RuleSplitter(), RuleSplitter(clauses=True)):
        for fusion in fusions:
            variants.append(Variant(f"{splitter.name}+{fusion}",
                                    f"{splitter.name} parts, each ranked densely, merged by {fusion}",
                                    _split_rank(base, splitter.split, fusion, rrf_k)))
    if qllm is not None:
        queries = LLMQueries(qllm, "split")
        variants.append(Variant("llm-split+rrf", "the configured LLM splits the question; parts merged by RRF",
                                _split_rank(base, queries, "rrf", rrf_k), languages=tuple(llm_languages),
                                provenance={"llm": qllm.describe()}, llm=queries))
    return variants


def query_rewrite_variants(base: BaselineDense, qllm: QueryLLM | None, llm_languages: Sequence[str]) -> list[Variant]:
    """LLM rewriting of the question, and the casebook's hand-written document-aligned phrasing of Q7."""
    variants = []
    if qllm is not None:
        queries = LLMQueries(qllm, "rewrite")
        variants.append(Variant("llm-rewrite", "the configured LLM rewrites the question into one search query",
                                lambda text: base(queries(text)[0]), languages=tuple(llm_languages),
                                provenance={"llm": qllm.describe()}, llm=queries))
    variants.append(Variant(
        "casebook-aligned", "the casebook's hand-written document-aligned phrasing (Q7 only)", base,
        languages=(), q7_phrasings=("aligned",),
        notes=["Only Q7 has a hand-written document-aligned phrasing, so this variant has no whole-benchmark "
               "comparison; its Q7 ranks are the baseline's ranks for the `aligned` phrasing."]))
    return variants


def embedding_variants(wb: Workbench, status: dict[str, bool | str]) -> list[Variant]:
    """Every other available embedder, dense, in place of the default."""
    default = default_embedder_name()
    out = []
    for name, ok in status.items():
        if ok is True and name != default:
            key = RunKey("dense", name)
            out.append(Variant(f"dense:{name}", f"dense retrieval with {name} instead of {default}",
                               wb.retriever(key).rank, provenance=wb.provenance(key)))
    return out


def identifier_question_ids(questions: Sequence[Question]) -> frozenset[str]:
    """Questions that contain an exact identifier (:func:`rag_lib.text.identifiers`, on either language)."""
    return frozenset(q.id for q in questions if identifiers(q.en) or identifiers(q.zh))


def hybrid_variants(wb: Workbench, rrf_k: int) -> list[Variant]:
    """BM25 + dense (default embedder) fused by RRF (the workbench's hybrid retriever, whose constant is
    ``rrf_k``), on every question; then hybrid and BM25 alone on the questions with an exact
    identifier and on the rest (Halo: hybrid helps "far more" there)."""
    key = RunKey("hybrid", default_embedder_name())
    variants = [Variant("hybrid", f"BM25 + dense RRF (k={rrf_k})", wb.retriever(key).rank,
                        provenance=wb.provenance(key))]
    answerable = wb.benchmark.questions(answerable=True)
    tagged = identifier_question_ids(answerable)
    rest = frozenset(q.id for q in answerable) - tagged
    rule = ("Identifier questions: those whose text (zh or en) contains an exact identifier — a file or host name, "
            "a config key, a flag, a method call, a camelCase handler or a `wrangler` command "
            f"(rag_lib.text.identifiers): {len(tagged)} of {len(answerable)} answerable questions "
            f"({', '.join(sorted(tagged))}).")
    for retriever in ("hybrid", "bm25"):
        run_key = key if retriever == "hybrid" else RunKey("bm25")
        for label, ids in (("identifier questions", tagged), ("other questions", rest)):
            variants.append(Variant(f"{retriever} · {label}", f"{run_key.label} on the {label} only",
                                    wb.retriever(run_key).rank, q7_phrasings=(), question_ids=ids, notes=[rule],
                                    provenance={**wb.provenance(run_key), "subset": sorted(ids)}))
    return variants


# --------------------------------------------------------------------------- measuring
def q7_piece_ranks(q7: Question, rank: Callable[[str], Ranking], phrasings: Sequence[str | None],
                   languages: Sequence[str], failures: dict[str, dict[str, str]] | None = None,
                   ) -> dict[str, dict[str, dict[str, int | None]]]:
    """``{phrasing: {lang: {"C1": rank, …}}}`` (first rank of each piece).

    A phrasing the variant fails to rank gets no ranks (``None``), and its error kind goes into
    ``failures[phrasing][lang]``: a failure is never shown as the baseline's ranks.
    """
    out: dict[str, dict[str, dict[str, int | None]]] = {}
    for phrasing in phrasings:
        for lang in languages:
            try:
                ranks = piece_ranks(q7.pieces, rank(q7.text(lang, phrasing)))
            except RankFailed as exc:
                ranks = [None] * len(q7.pieces)
                if failures is not None:
                    failures.setdefault(phrasing or "original", {})[lang] = exc.kind
            out.setdefault(phrasing or "original", {})[lang] = {f"C{i + 1}": r for i, r in enumerate(ranks)}
    return out


def _rank_all(rank: Callable[[str], Ranking], questions: Sequence[Question], lang: str,
              ) -> tuple[dict[str, Ranking], dict[str, int]]:
    """Each question's ranking, and how many failed per error kind (left out of the rankings)."""
    runs: dict[str, Ranking] = {}
    failed: dict[str, int] = {}
    for q in questions:
        try:
            runs[q.id] = rank(q.text(lang))
        except RankFailed as exc:
            failed[exc.kind] = failed.get(exc.kind, 0) + 1
    return runs, failed


def _variant_status(entry: dict[str, Any], langs: Sequence[str], questions: Sequence[Question]) -> str:
    """``ran``; ``partial`` when some calls failed; ``failed`` when nothing could be ranked."""
    q7_total = sum(len(by_lang) for by_lang in entry["q7"].values())
    q7_failed = sum(len(by_lang) for by_lang in entry.get("q7_failures", {}).values())
    bench_failed = sum(f["failed"] for f in entry.get("failures", {}).values())
    if not q7_failed and not bench_failed:
        return "ran"
    if q7_failed == q7_total and bench_failed == len(langs) * len(questions):
        return "failed"
    return "partial"


def _scores(wb: Workbench, rankings: dict[str, Ranking], evidence_k: int) -> dict[str, list[float]]:
    measures = (HitAt(TOP_K), PieceCoverage(10), MRR(), PieceCoverage(evidence_k))
    table = wb.evaluate(rankings, measures)
    cols = {"hit@5": "hit@5", "coverage@10": "coverage@10", "mrr": "mrr", "coverage@evidence": f"coverage@{evidence_k}"}
    return {metric: [float(v) for v in table[col]] for metric, col in cols.items()}


def run_mechanism(
    mechanism: str,
    languages: Sequence[str] = ("zh", "en"),
    llm_languages: Sequence[str] = ("zh", "en"),
    use_llm: bool = True,
    n_boot: int = 10000,
    seed: int = 0,
    workbench: Workbench | None = None,
) -> dict[str, Any]:
    """Run every variant of ``mechanism`` and compare it with the baseline.

    Parameters
    ----------
    mechanism : str
        A declared mechanism (:func:`mechanism`; :data:`MECHANISM_REGISTRY`).
    languages : sequence of str
        Benchmark languages.
    llm_languages : sequence of str
        Languages in which LLM-based variants run on the whole benchmark (they always run on Q7's
        three phrasings in every language); fewer languages keep runtime modest.
    use_llm : bool
        Build the LLM variants (rewrite, LLM split) with ``generation.llm`` from workbook.yaml.

    Returns
    -------
    dict
        ``{"mechanism", "status": "ran"|"unavailable", "reason", "variants": [{"name", "description",
        "evidence_k", "benchmark_languages", "q7": {phrasing: {lang: {"C1": rank, …}}},
        "benchmark": {lang: {metric: {"baseline", "mechanism", "diff", "ci95"}}}, …}],
        "baseline": {...}, "provenance": {...}}`` plus report tables.
    """
    get_mechanism(mechanism)  # an unknown name fails here, before anything is embedded
    wb = workbench or Workbench()
    q7 = wb.benchmark.by_casebook("Q7")
    questions = wb.benchmark.questions(answerable=True)
    base_rank = BaselineDense(wb)
    base_key = RunKey("dense", default_embedder_name())
    provenance: dict[str, Any] = {"baseline": {**wb.provenance(base_key), "k": TOP_K}, "n_boot": n_boot, "seed": seed,
                                  "ci_percent": 95, "n_answerable": len(questions), "languages": list(languages)}
    result: dict[str, Any] = {"mechanism": mechanism, "status": "ran", "reason": "", "variants": []}
    base_runs = {lang: {q.id: base_rank(q.text(lang)) for q in questions} for lang in languages}
    base_scores = {lang: _scores(wb, base_runs[lang], TOP_K) for lang in languages}
    result["baseline"] = {
        "q7": q7_piece_ranks(q7, base_rank, Q7_PHRASINGS, languages),
        "benchmark": {lang: {m: round(float(np.mean(v)), 4) for m, v in s.items()} for lang, s in base_scores.items()},
    }

    spec = get_mechanism(mechanism)
    provenance["parameters"] = spec.resolved_parameters()
    variants, unavailable = spec.variants(BuildContext(wb, base_rank, use_llm, llm_languages, provenance))
    result["unavailable"] = unavailable
    if not variants:
        result["status"] = "unavailable"
        result["reason"] = "; ".join(unavailable.values()) or "no variant of this mechanism can run on this machine"
    for v in variants:
        langs = [lang for lang in languages if v.languages is None or lang in v.languages]
        q7_failures: dict[str, dict[str, str]] = {}
        entry: dict[str, Any] = {
            "name": v.name, "description": v.description, "evidence_k": v.evidence_k,
            "benchmark_languages": langs, "notes": list(v.notes),
            "q7": q7_piece_ranks(q7, v.rank, v.q7_phrasings, languages, q7_failures),
            "benchmark": {},
        }
        if q7_failures:
            entry["q7_failures"] = q7_failures
        asked = [q for q in questions if v.question_ids is None or q.id in v.question_ids]
        for lang in langs:
            runs, failed = _rank_all(v.rank, asked, lang)
            if failed:
                entry.setdefault("failures", {})[lang] = {"failed": sum(failed.values()), "of": len(asked),
                                                          "by_kind": dict(sorted(failed.items()))}
            if not runs:
                continue  # every question failed: nothing to compare, and nothing shown as if it ran
            # Paired comparison on the questions the variant ranked (all of them, unless some failed).
            same = len(runs) == len(questions)
            baseline = base_scores[lang] if same else _scores(wb, {q: base_runs[lang][q] for q in runs}, TOP_K)
            scores = _scores(wb, runs, v.evidence_k)
            entry["benchmark"][lang] = {m: compare(scores[m], baseline[m], n_boot, seed) for m in METRICS}
            if not same:
                entry.setdefault("compared_on", {})[lang] = len(runs)
        entry["status"] = _variant_status(entry, langs, asked)
        if v.llm is not None:
            entry["llm_calls"] = v.llm.summary()
            entry["q7_llm_outputs"] = v.llm.outputs([q7.text(lang, ph) for ph in Q7_PHRASINGS for lang in languages])
            if langs and not set(languages) <= set(langs):
                entry["notes"].append(
                    f"LLM variant compared on the whole benchmark in {', '.join(langs) or 'no language'} only "
                    f"(runtime); Q7 in every language.")
        if v.provenance:
            entry["provenance"] = v.provenance
        result["variants"].append(entry)
    result["provenance"] = provenance
    result.update(_tables(result, languages))
    return result


@mechanism("topk", "same dense ranking, more chunks sent to generation", ks=(10, 20))
def _topk(ctx: BuildContext, ks: Sequence[int]) -> tuple[list[Variant], dict[str, str]]:
    return topk_variants(ctx.base, ks), {}


@mechanism("dedup_mmr", "near-duplicate demotion and MMR over the dense top candidates",
           candidates=50, threshold=0.95, text_threshold=0.8, lambda_=0.5)
def _dedup_mmr(ctx: BuildContext, **params: Any) -> tuple[list[Variant], dict[str, str]]:
    return dedup_mmr_variants(ctx.wb, ctx.base, **params), {}


@mechanism("reranker", "a reranker re-scores the dense top candidates: the paper's cross-encoder when its files "
           "are here, and always the offline LLM reranker (replayed)", paper=RERANKER,
           offline=FromSettings("retrieval.offline_reranker"), candidates=FromSettings("retrieval.rerank_candidates"),
           offline_subset=FromSettings("retrieval.offline_reranker_subset"))
def _reranker(ctx: BuildContext, paper: str, offline: str, candidates: int,
              offline_subset: int) -> tuple[list[Variant], dict[str, str]]:
    status = available_rerankers()
    ctx.provenance["rerankers"] = {name: ok is True for name, ok in status.items()}
    missing = {name: str(ok) for name, ok in status.items() if ok is not True}
    variants = reranker_variants(ctx.wb, ctx.base, paper, candidates) if status.get(paper) is True else []
    if status.get(offline) is True:
        variants += reranker_variants(ctx.wb, ctx.base, offline, candidates, subset=int(offline_subset))
    return variants, missing


@mechanism("embedding", "every other available embedder in place of the default")
def _embedding(ctx: BuildContext) -> tuple[list[Variant], dict[str, str]]:
    status = available_embedders()
    return embedding_variants(ctx.wb, status), {name: str(ok) for name, ok in status.items() if ok is not True}


@mechanism("hybrid", "BM25 + dense fused by RRF; hybrid and BM25 alone on identifier questions and the rest",
           rrf_k=FromSettings("retrieval.rrf_k"))
def _hybrid(ctx: BuildContext, rrf_k: int) -> tuple[list[Variant], dict[str, str]]:
    return hybrid_variants(ctx.wb, rrf_k), {}


def _query_llm(ctx: BuildContext, task: str, max_tokens: int) -> QueryLLM | None:
    if not ctx.use_llm:
        return None
    qllm = QueryLLM(get_task_generator(task, max_tokens=max_tokens))  # type: ignore[arg-type]
    ctx.provenance["llm"] = {**qllm.describe(), "max_tokens": max_tokens, "temperature": qllm.generator.temperature}
    return qllm


@mechanism("query_split", "the question split into parts (rules, or the LLM), each ranked, the rankings fused",
           fusions=("rrf", "round_robin"), rrf_k=FromSettings("retrieval.rrf_k"), llm_max_tokens=LLM_MAX_TOKENS)
def _query_split(ctx: BuildContext, fusions: Sequence[str], rrf_k: int,
                 llm_max_tokens: int) -> tuple[list[Variant], dict[str, str]]:
    qllm = _query_llm(ctx, "split", llm_max_tokens)
    return query_split_variants(ctx.base, qllm, ctx.llm_languages, fusions, rrf_k), {}


@mechanism("query_rewrite", "the question rewritten into one search query by the LLM; the casebook's aligned "
           "phrasing of Q7", llm_max_tokens=LLM_MAX_TOKENS)
def _query_rewrite(ctx: BuildContext, llm_max_tokens: int) -> tuple[list[Variant], dict[str, str]]:
    qllm = _query_llm(ctx, "rewrite", llm_max_tokens)
    return query_rewrite_variants(ctx.base, qllm, ctx.llm_languages), {}


MECHANISMS = tuple(MECHANISM_REGISTRY)


FINDING_METRICS = ("hit@5", "coverage@10")


def kinds_text(failure: dict[str, Any]) -> str:
    """``{"by_kind": {"replay_miss": 19}}`` → ``"replay_miss 19"``: failed calls by error kind."""
    return ", ".join(f"{kind} {n}" for kind, n in failure["by_kind"].items())


def _q7_findings(result: dict[str, Any], within: int = 10) -> list[str]:
    """Per variant, Q7's original phrasing: pieces in the Top-``within`` before → after, and the pieces that moved."""
    base = result.get("baseline", {}).get("q7", {}).get("original", {})
    order = list(result.get("provenance", {}).get("languages") or [])
    out = []
    for v in result["variants"]:
        after = v.get("q7", {}).get("original", {})
        parts = []
        for lang in sorted(after, key=lambda x: order.index(x) if x in order else len(order)):
            ranks = after[lang]
            before = base.get(lang)
            if not before or all(r is None for r in ranks.values()):
                continue
            inside = [sum(r is not None and r <= within for r in side.values()) for side in (before, ranks)]
            moved = ", ".join(f"{p} {before[p]} → {r}" for p, r in ranks.items() if r != before.get(p))
            parts.append(f"{lang} {inside[0]}/{len(ranks)} → {inside[1]}/{len(ranks)} in the Top-{within}"
                         + (f" ({moved})" if moved else " (no piece moved)"))
        if parts:
            out.append(f"{v['name']} on Q7 (original phrasing): {'; '.join(parts)}.")
    return out


def findings(result: dict[str, Any]) -> list[str]:
    """Sentences generated from a mechanism's numbers: per variant, its effect on hit@5 and
    coverage@10 (and coverage@evidence when it sends more evidence) per language with the interval,
    whether any interval excludes 0, and the questions it failed on."""
    if result["status"] == "unavailable":
        return [f"Not run: {result['reason'] or 'no variant is available on this machine'}"]
    order = list(result["provenance"].get("languages") or [])
    out: list[str] = []
    for v in result["variants"]:
        failures = v.get("failures", {})
        if not v["benchmark"] and not failures:
            continue  # Q7-only variants (e.g. the casebook's aligned phrasing) have no benchmark figure
        metrics_shown = FINDING_METRICS + (("coverage@evidence",) if v["evidence_k"] != 5 else ())
        parts, clear = [], []
        for lang in sorted(set(v["benchmark"]) | set(failures), key=lambda x: order.index(x) if x in order else 9):
            failure, metrics = failures.get(lang), v["benchmark"].get(lang)
            if metrics is None:
                parts.append(f"{lang}: failed on all {failure['of']} questions ({kinds_text(failure)}), no figure")
                continue
            n = v.get("compared_on", {}).get(lang)
            note = f" (on the {n} questions it ranked; {failure['failed']} failed: {kinds_text(failure)})" if failure \
                else (f" ({n} questions)" if n else "")
            parts.append(f"{lang}{note}: " + ", ".join(f"{m} {effect_text(metrics[m])}" for m in metrics_shown
                                                       if m in metrics))
            clear += [f"{m} {lang} {'up' if metrics[m]['diff'] > 0 else 'down'}" for m in metrics_shown
                      if m in metrics and (metrics[m]["ci95"][0] > 0 or metrics[m]["ci95"][1] < 0)]
        if not v["benchmark"]:
            verdict = "the variant failed, so there is no result"
        elif clear:
            verdict = f"the 95% interval excludes 0 for {', '.join(clear)}"
        else:
            verdict = "no interval excludes 0: no effect is shown on this benchmark"
        out.append(f"{v['name']}: " + "; ".join(parts) + f" — {verdict}.")
    out += _q7_findings(result)
    if out:
        out.append("Intervals are paired bootstrap 95% intervals over questions, one per comparison and not "
                   "adjusted for the many comparisons made (08 adds Holm-adjusted p-values); labels are this "
                   "benchmark's, and the embedder is the offline default, not the casebook's bge-m3.")
    return out


def _tables(result: dict[str, Any], languages: Sequence[str]) -> dict[str, Any]:
    """Markdown tables (and flat rows) for the report, built from the result itself."""
    q7_rows = []
    sources = [("baseline", result["baseline"]["q7"], TOP_K, {})]
    sources += [(v["name"], v["q7"], v["evidence_k"], v.get("q7_failures", {})) for v in result["variants"]]
    for name, q7, evidence_k, failures in sources:
        for phrasing, by_lang in q7.items():
            for lang, ranks in by_lang.items():
                failed = failures.get(phrasing, {}).get(lang)
                in10 = sum(r is not None and r <= 10 for r in ranks.values())
                in_evidence = sum(r is not None and r <= evidence_k for r in ranks.values())
                row = {"variant": name, "phrasing": phrasing, "language": lang, **ranks,
                       "in top 10": f"{in10}/{len(ranks)}", "evidence k": evidence_k,
                       "in evidence": f"{in_evidence}/{len(ranks)}"}
                if failed:
                    row.update({"in top 10": f"failed ({failed})", "in evidence": f"failed ({failed})"})
                q7_rows.append(row)
    bench_rows = []
    for v in result["variants"]:
        for lang, failure in v.get("failures", {}).items():
            bench_rows.append({"variant": v["name"], "language": lang, "metric": "failed calls",
                               "baseline": None, "mechanism": None, "diff": None,
                               "95% CI": f"{failure['failed']}/{failure['of']} questions failed "
                                         f"({kinds_text(failure)})"})
        for lang, metrics in v["benchmark"].items():
            subset = v.get("compared_on", {}).get(lang)
            for metric, c in metrics.items():
                bench_rows.append({"variant": v["name"] + (f" ({subset} questions)" if subset else ""),
                                   "language": lang, "metric": metric,
                                   "baseline": c["baseline"], "mechanism": c["mechanism"], "diff": c["diff"],
                                   "95% CI": "no question changed" if no_question_changed(c) else
                                   f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]"})
    return {
        "q7_rows": q7_rows,
        "q7_table": markdown_table(q7_rows),
        "benchmark_rows": bench_rows,
        "benchmark_table": markdown_table(bench_rows),
        "variants_text": ", ".join(v["name"] for v in result["variants"]) or "none",
    }
