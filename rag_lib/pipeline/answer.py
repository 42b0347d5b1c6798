"""One question end to end on the default configuration: evidence, gate decision, cited answer.

The gate is the general ``floor+aspects`` gate with the parameters that notebook 03 chose and
stored in ``results/03_q9a_no_evidence/results.json`` (calibrated on the benchmark, per language);
``python -m rag_lib ask`` says which parameters it used.

Support policy (``verified-citations-only``): the generator's answer text is shown only when
every citation it gives passes the check (:mod:`rag_lib.generation.citations`: a meaningful span
of the cited chunk) and the verification stage (:mod:`rag_lib.verification`) finds claims its own
quotes state (claims they do not state are dropped and listed). Otherwise its text is withheld, the
verified quotes (verbatim evidence) are shown instead, and each dropped citation is listed with its
reason. A decline shows the workbook's own decline sentence and verified quotes,
never the model's text. ``ask`` exits 0 answered, 3 declined,
4 withheld, 2 error.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_lib.core.config import cache_dir, progress_bars
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import SettingError, WorkbookError
from rag_lib.core.text import LANGUAGE_NAMES, absolute_links, approx_tokens, language_of
from rag_lib.evidence import get_gate
from rag_lib.evidence.gated import GatedGenerator, GatedResult
from rag_lib.generation import Generator, get_generator
from rag_lib.generation.base import WITHHELD_KINDS, GenerationResult, question_problem, result_fields
from rag_lib.generation.call_records import DEFAULT_CALLS_DIR, LOCAL_BACKENDS, CallRecord, LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallMode, CallRecorder, default_mode
from rag_lib.pipeline.explain import check_k
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.q9a import EXPERIMENT as GATE
from rag_lib.results.q9a import Q9aResult
from rag_lib.retrieval import Ranking

SUPPORT_POLICY = "verified-citations-only"
ASK_STATUSES = ("answered", "declined", "withheld", "error")
MAX_EVIDENCE_TOKENS = 8000  # default cap on what a paid endpoint is sent (estimated tokens)


class EvidenceCap:
    """A :class:`Generator` that refuses evidence over ``max_tokens`` before a paid call is made."""

    def __init__(self, generator: Generator, max_tokens: int) -> None:
        self.generator = generator
        self.max_tokens = max_tokens
        self.backend, self.model = generator.backend, generator.model

    @property
    def model_version(self) -> str | None:
        return self.generator.model_version

    def generate(self, question: str, evidence: Sequence[Chunk]) -> GenerationResult:
        tokens = sum(approx_tokens(c.text) for c in evidence) + approx_tokens(question)
        if tokens > self.max_tokens:
            fields, _ = result_fields(self, question, evidence)
            return GenerationResult(
                status="error", error_kind="evidence_too_large", **fields,
                error=f"The prompt would carry about {tokens} tokens of evidence, over the cap of {self.max_tokens} "
                      f"for the paid {self.backend} endpoint; nothing was sent. Lower --k or raise "
                      "--max-evidence-tokens.",
            )
        return self.generator.generate(question, evidence)
GATE_PARAMETER_NAMES = {"floor": "score floor", "min_coverage": "aspect coverage at least"}
# What each kind of answerer is, so a reader of `ask` knows what "answered" means.
_ANSWERER_NOTES = {
    "extractive": "a baseline without a model: it copies the evidence sentences that share the most words with "
                  "the question, so 'answered' means such sentences exist, not that they answer it",
    "llama_cpp": "a local model (llama.cpp); its quotes are checked against the evidence, and each claim of its "
                 "answer is shown only when the quotes it cited state it (numbers with their unit and plan, names "
                 "verbatim, the same polarity)",
    "openai": "a model behind an OpenAI-compatible endpoint; its quotes are checked against the evidence, and each "
              "claim of its answer is shown only when the quotes it cited state it",
}


def answerer_description(backend: str, model: str, version: str | None) -> str:
    """One plain sentence: which answerer ran, which version, and what its answers mean."""
    note = _ANSWERER_NOTES.get(backend, f"the {backend} backend")
    shown_version = f", {version[:19]}…" if version and len(version) > 20 else (f", {version}" if version else "")
    return f"{model} ({backend}{shown_version}): {note}."


def calibrated_gate_parameters(lang: str) -> dict[str, float]:
    """The floor and aspect coverage notebook 03 chose for ``lang``."""
    stored = Q9aResult.read(GATE.name, needed_by="the gate's parameters")  # honours RAG_RESULTS_DIR
    return stored.calibrated_gate(lang)


def check_calibration(calibration: Q9aResult, k: int, embedder: str) -> None:
    """Refuse gate parameters fitted for another call: the aspect coverage 03 fitted is over its Top-k, and
    the score floor is on its embedder's scores."""
    fitted = calibration.provenance.embedder["model"] if calibration.provenance.embedder else None
    if calibration.k != k:
        raise WorkbookError(
            f"the gate's parameters were fitted by notebook 03 at k = {calibration.k}, and this call asks for "
            f"k = {k}: its aspect coverage over another Top-k is not what 03 measured. Fix: leave --k out (or set "
            f"retrieval.top_k: {calibration.k}), or calibrate at k = {k}: set retrieval.top_k: {k} in config.yaml "
            f"and run `make reproduce RUNS={GATE.name}`.")
    if fitted != embedder:
        raise WorkbookError(
            f"the gate's score floor was fitted by notebook 03 on {fitted} scores, and this call ranks with "
            f"{embedder}. Fix: use embedding.default: {fitted}, or calibrate for {embedder}: set embedding.default "
            f"in config.yaml and run `make reproduce RUNS={GATE.name}`.")


def gate_quality_note(stored: Q9aResult, lang: str) -> str:
    """Said with every gate decision: the parameters are tuned on the benchmark, so its in-sample rates overstate;
    the leave-one-out rates beside them (03's, ``stored``) are what a new question can expect."""
    quality = stored.gate_quality(lang)

    def said(part: dict[str, tuple[int, int]]) -> str:
        return (f"declines {'/'.join(map(str, part['unanswerable declined']))} unanswerable questions and "
                f"{'/'.join(map(str, part['false refusals']))} answerable ones with complete evidence")

    return (f"Its parameters were fitted on all benchmark questions (notebook 03): in-sample it "
            f"{said(quality['in-sample'])} ({lang}); out of sample (leave-one-out), which is what a new question "
            f"can expect, it {said(quality['leave-one-out'])}.")


@dataclass
class AskOutcome:
    """What ``ask`` shows: the evidence, the gate's decision and the generator's result."""

    question: str
    key: str
    gate_parameters: dict[str, float]
    gate_note: str  # the gate's in-sample and leave-one-out figures on the benchmark (gate_quality_note)
    evidence: list[dict[str, Any]]
    gated: GatedResult
    answerer: str = ""  # the generator behind the gate (answerer_description), named even when it was not asked

    @property
    def status(self) -> str:
        """``answered`` (every citation verified), ``declined``, ``withheld`` (the model answered but
        some or all of its citations failed: see the support policy) or ``error``."""
        result = self.gated.result
        if result.status == "insufficient":
            return "declined"
        if result.status == "answered":
            return "answered" if result.citations is not None and not result.citations.dropped else "withheld"
        return "withheld" if result.error_kind in WITHHELD_KINDS else "error"

    def render_text(self) -> str:
        result = self.gated.result
        lines = [f"question: {self.question}", f"retrieval: {self.key}; evidence (Top-{len(self.evidence)}):"]
        lines += [f"  [{e['rank']}] {e['score']:.4f}  {e['page']}{' > ' + e['heading'] if e['heading'] else ''}  "
                  f"({e['id']})" for e in self.evidence]
        decision = self.gated.decision
        if decision is not None:
            verdict = "enough evidence" if decision.sufficient else "not enough evidence"
            params = ", ".join(f"{GATE_PARAMETER_NAMES.get(n, n)} {v}" for n, v in self.gate_parameters.items())
            shown = f"floor+aspects; {params}" if params else "floor+aspects"
            lines.append(f"gate ({shown}): {verdict}. {decision.reason.rstrip('.')}.")
            lines.append(f"  {self.gate_note}")
        # When the gate declines first, the result is the gate's: name the answerer that would have answered.
        answerer = self.answerer or answerer_description(result.backend, result.model, result.model_version)
        lines.append(f"answerer: {answerer}")
        called = ("it was asked" if self.gated.generator_called else
                  "it was not asked (the gate declined first)" if decision is not None else
                  "it was not asked (the question was refused before retrieval)")
        lines.append(f"  {called}; outcome: {self.status}.")
        if result.call_keys:
            lines.append(f"call: {'REPLAYED from a recorded call' if result.replayed else 'live'} "
                         f"({', '.join(k[:12] for k in result.call_keys)})")
        lines.append("")
        lines += self._body()
        if result.citations is not None and result.citations.checked:
            lines.append("")
            lines.append(f"citations: {result.citations.n_valid}/{result.citations.n_total} valid")
            for c in result.citations.valid:
                lines.append(f"  {c.chunk_id}: \"{c.quote[:100]}\"\n    {c.deep_link}")
            for c in result.citations.dropped:
                lines.append(f"  DROPPED ({c.reason}) {c.chunk_id or '<no id>'}: \"{c.quote[:100]}\"")
        for warning in result.warnings:
            lines.append(f"warning: {warning}")
        text = "\n".join(lines)
        # Quotes and answers keep the docs' site-relative links; on a terminal they must open as they are.
        return absolute_links(text, self.evidence[0]["url"]) if self.evidence else text

    def _body(self) -> list[str]:
        result = self.gated.result
        status = self.status
        verified = result.citations.valid if result.citations is not None else ()
        if status == "answered" and result.answer is not None:
            rendering = result.support.rendering if result.support is not None else None
            if not rendering:
                return [result.answer.answer]
            if language_of(self.question) == "zh":
                return [result.answer.answer,
                        f"中文（模型对上述说法的转述；其中的数字、名称和命令已与说法核对，措辞未核对）：{rendering}"]
            return [result.answer.answer, f"in {LANGUAGE_NAMES[language_of(self.question)]} (the model's rendering of "
                    f"the claims above; its numbers, names and commands are checked against them, its wording is "
                    f"not): {rendering}"]
        if status == "declined":
            # The model's own decline text is not verified: show ours, then only verified quotes.
            body = [decline_sentence(self.question)]
            body += [f"  the evidence does say: \"{c.quote}\" ({c.chunk_id})" for c in verified]
            return body
        if status == "withheld":
            body = [withheld_sentence(self.question, result)]
            body += [f"  supported: \"{c.quote}\" ({c.chunk_id})" for c in verified]
            return body
        return [f"error ({result.error_kind}): {result.error or ''}"]


# Why an answer is withheld, for a question asked in Chinese (the English reason is the result's own ``error``).
WITHHELD_ZH = {
    "no_citations": "回答没有引用任何证据", "no_valid_citations": "回答的引用都未通过核对",
    "unsupported_claims": "回答中的说法没有得到其所引原文的支持", "restates_question": "回答只是复述了问题",
    "echoes_prompt": "回答重复了提示中的内容", "off_question": "回答没有回答所问的问题",
    "fragment": "回答只是一个不完整的片段",
}


def withheld_sentence(question: str, result: GenerationResult) -> str:
    """Why ``ask`` withholds the answer, in the question's language: one language per message."""
    if language_of(question) == "zh":
        why = WITHHELD_ZH.get(result.error_kind or "", "部分引用未通过核对")
        return f"答案未显示（{SUPPORT_POLICY} 规则）：{why}。下面只列出经过核对、有证据支持的原文。"
    reason = (result.error or "Some citations failed the check").rstrip(".") + "."
    return (f"answer withheld ({SUPPORT_POLICY} policy): {reason} Only the verified quotes below are supported by "
            "the evidence.")


def decline_sentence(question: str) -> str:
    """The decline ``ask`` shows, in the question's language (never the model's unverified text)."""
    if language_of(question) == "zh":
        return "提供的证据中未包含回答该问题所需的全部信息。"
    return "The evidence provided does not include everything needed to answer this question."


def gated_answer(
    question: str, wb: Workbench, gated: GatedGenerator, key: str = "dense", k: int | None = None
) -> tuple[GatedResult, Ranking | None]:
    """Retrieve the Top-``k`` (default: ``wb.config.k``), gate, and generate; an unusable question is refused
    before retrieval.

    Returns the outcome and the ranking it was drawn from (``None`` when nothing was retrieved).
    """
    if question_problem(question):  # do not embed 100 KB of text only to refuse it afterwards
        return gated.generate(question, []), None
    ranking = wb.rank(question, key)
    evidence = wb.evidence(ranking, k)
    return gated.generate(question, evidence, ranking), ranking


def answer_question(
    question: str, key: str = "dense", k: int | None = None, generator: str | Generator | None = None,
    workbench: Workbench | None = None, max_evidence_tokens: int = MAX_EVIDENCE_TOKENS,
) -> AskOutcome:
    """Rank, gate and answer one question with the workbook's defaults.

    ``generator`` is a name (default: ``config.yaml``) or a built :class:`Generator`; a paid
    endpoint (any backend that is not local) is sent at most ``max_evidence_tokens`` of evidence. ``k``
    defaults to the workbench's ``config.k``.

    Raises
    ------
    SettingError
        When ``max_evidence_tokens`` is below 1 (no call to a paid endpoint could be made).
    WorkbookError
        When notebook 03 fitted the gate at another k or with another embedder than this call's
        (:func:`check_calibration`).
    """
    if max_evidence_tokens < 1:  # every call to a paid endpoint would be refused as over the cap
        raise SettingError(f"max_evidence_tokens must be 1 or more estimated tokens (default {MAX_EVIDENCE_TOKENS}); "
                           f"got {max_evidence_tokens}.")
    if key != "dense":
        raise WorkbookError(f"ask uses the gate calibrated on dense scores of the default embedder; got {key!r}. "
                            "Use --retriever dense, or `rank` to compare retrievers.")
    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    check_k(k, len(wb.embeddable))
    lang = language_of(question)
    calibration = Q9aResult.read(GATE.name, needed_by="the gate's parameters")  # honours RAG_RESULTS_DIR
    check_calibration(calibration, k, wb.config.embedder)
    params = calibration.calibrated_gate(lang)
    chosen = generator if generator is not None and not isinstance(generator, str) else get_generator(generator)
    if chosen.backend not in LOCAL_BACKENDS:
        chosen = EvidenceCap(chosen, max_evidence_tokens)
    gated = GatedGenerator(chosen, get_gate("floor+aspects", **params))
    outcome, ranking = gated_answer(question, wb, gated, key=key, k=k)
    evidence = []
    for rank, (cid, score) in enumerate(ranking.top(k) if ranking else (), 1):
        chunk = wb.by_id[cid]
        evidence.append({"rank": rank, "score": score, "page": chunk.page, "url": chunk.url,
                         "heading": " > ".join(chunk.heading_path), "id": cid})
    return AskOutcome(question, key, params, gate_quality_note(calibration, lang), evidence, outcome,
                      answerer_description(chosen.backend, chosen.model, chosen.model_version))


# How an LLM answerer is fed and answers: narrowed units answered as claims each citing its own units
# (narrowed-claims-v4, the default of `ask`), the same units answered as one text, or whole chunks (the original
# prompt).
PIPELINES = ("claims", "narrowed", "chunks")
NO_LOCAL_MODEL_NOTE = ("note: the local model ({model}) is not installed ({why}); showing the extractive baseline. "
                       "Install it with `make llm-models MODELS={model}` to answer with it.")


def local_model_missing(model: str) -> str | None:
    """Why local model ``model`` cannot answer here (``None``: its runtime and file are installed)."""
    import importlib.util

    from rag_lib.generation.local_models import local_model_spec, models_folder

    if importlib.util.find_spec("llama_cpp") is None:
        return "no llama-cpp-python"
    spec = local_model_spec(model)
    if (models_folder() / spec.file).is_file() or all(part.locate() is not None for part in spec.parts):
        return None
    return "its model packages are missing"


def build_answerer(name: str | None, wb: Workbench, pipeline: str = "claims",
                   **kwargs: Any) -> tuple[Generator, str | None]:
    """The answerer ``ask`` uses, and a note to show with it (``None`` when there is nothing to say).

    ``name`` ``None``: the ``answer_narrowed`` model on narrowed units, answering as claims (``pipeline`` claims,
    the default) or as one text (any other), when that local model is installed, else the extractive baseline
    with a note saying how to install it. An LLM backend named explicitly is fed through ``pipeline``
    (``claims``, ``narrowed`` or ``chunks``, the original prompt).
    """
    from rag_lib.evidence.narrowing import narrowed, narrowed_generator
    from rag_lib.generation import task_generator_name

    if pipeline not in PIPELINES:
        raise WorkbookError(f"unknown pipeline {pipeline!r}; use one of {', '.join(PIPELINES)}.")
    if name is None:
        backend, _, model = task_generator_name("answer_narrowed").partition(":")
        why = local_model_missing(model) if backend == "llama_cpp" else None
        if why is not None:
            return get_generator("extractive"), NO_LOCAL_MODEL_NOTE.format(model=model, why=why)
        return narrowed_generator("answer_narrowed", wb.embedder(), pipeline == "claims", **kwargs), None
    generator = get_generator(name, **kwargs)
    if pipeline == "chunks" or generator.backend == "extractive":
        return generator, None
    return narrowed(generator, wb.embedder(), pipeline == "claims"), None  # type: ignore[arg-type]


ADHOC_CALLS_DIR = "llm_calls_adhoc"  # under cache_dir(): where ad-hoc `ask` calls are recorded


class AnnouncedRecorder(CallRecorder):
    """A recorder that says on stderr when it makes a live call and how long it took: a local model's
    answer takes from seconds to minutes on 2 cores (``RAG_PROGRESS=0`` silences it)."""

    def call(self, request: LLMRequest, live: Callable[[LLMRequest], LLMResponse]) -> CallRecord:
        if not progress_bars():
            return super().call(request, live)

        def announced(made: LLMRequest) -> LLMResponse:
            loads = " (its first call loads the model)" if made.backend in LOCAL_BACKENDS else ""
            print(f"live call to {made.backend}:{made.model}{loads} …", file=sys.stderr, flush=True)
            started = time.perf_counter()
            response = live(made)
            print(f"… answered in {time.perf_counter() - started:.0f} s ({response.completion_tokens or 0} tokens "
                  "generated)", file=sys.stderr, flush=True)
            return response

        return super().call(request, announced)


class AdhocRecorder(AnnouncedRecorder):
    """Records into a scratch folder, and also replays the committed records of ``results/``.

    Ad-hoc questions must not add files to the committed ``results/llm_calls/``; they may still
    reuse what is recorded there.
    """

    def __init__(self, directory: Path, mode: CallMode | None = None, committed: Path = DEFAULT_CALLS_DIR) -> None:
        super().__init__(directory, mode)
        self.committed = CallRecorder(committed, mode)

    def load(self, key: str) -> CallRecord | None:
        return super().load(key) or self.committed.load(key)


def cli_recorder(live: bool = False, record_to_results: bool = False) -> CallRecorder:
    """The recorder of ``python -m rag_lib ask``: scratch folder unless ``record_to_results``;
    ``live`` calls the model even when a record exists."""
    mode: CallMode = "live" if live else default_mode()  # RAG_LLM_MODE, else replay_or_live
    if record_to_results:
        return AnnouncedRecorder(DEFAULT_CALLS_DIR, mode)
    return AdhocRecorder(cache_dir() / ADHOC_CALLS_DIR, mode)
