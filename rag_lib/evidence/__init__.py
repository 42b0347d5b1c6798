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
>>> gate.decide(question, wb.evidence(ranking, 5), ranking)  # doctest: +SKIP
"""

from __future__ import annotations

from rag_lib.evidence.calibration import (
    GATE_PARTS,
    Case,
    GateScores,
    ScoredQuestion,
    candidates,
    choose,
    cross_validate,
    fit,
    floor_sweep,
    label_insufficient,
    score_cases,
    sweep,
)
from rag_lib.evidence.gates import (
    GATES,
    AllOf,
    AspectGate,
    Checklist,
    ChecklistGate,
    ChecklistItem,
    Gate,
    GateDecision,
    LLMJudgeGate,
    ScoreFloorGate,
    available_gates,
    get_gate,
)
from rag_lib.retrieval.terms import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, aspects, stem

__all__ = [
    "CHINESE_STOPWORDS", "ENGLISH_STOPWORDS", "GATES", "GATE_PARTS", "AllOf", "AspectGate", "Case",
    "Checklist", "ChecklistGate", "ChecklistItem", "Gate", "GateDecision", "GateScores", "LLMJudgeGate",
    "ScoreFloorGate", "ScoredQuestion", "aspects", "available_gates", "candidates", "choose",
    "cross_validate", "fit", "floor_sweep", "get_gate", "label_insufficient", "score_cases", "stem", "sweep",
]
