"""``04_q8_topk``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar, json_key


@dataclass(frozen=True)
class Q8Case:
    """Q8 asked in one language: its piece ranks and how many pieces each k covers."""

    question: str
    piece_ranks: dict[str, int | None]  # piece → first rank (None: no chunk of it was ranked)
    n_pieces: int
    covered: dict[str, int]  # k → pieces within the top k
    first_full_k: int | None  # the smallest k covering every piece
    covered_at_5: str  # "1/2"
    covered_at_6: str
    testable: bool  # can it test "a larger k completes it" (its last piece enters between k + 1 and 10)


@dataclass(frozen=True)
class CasebookQ8:
    """The casebook's published Q8 coverage (theirs: bge-m3 on their snapshot)."""

    k5: str
    k6: str
    note: str


@dataclass(frozen=True)
class CurvePoint:
    """Means over the answerable questions at one k: piece coverage, the share fully covered, and the size of
    the top-k evidence."""

    coverage: float
    full: float
    chars: float
    tokens: float  # approximate (rag_lib.core.text.approx_tokens)


@dataclass(frozen=True)
class CurveRow:
    """One row of the coverage@k table: a :class:`CurvePoint` under the report's column names."""

    language: str
    k: int
    coverage: float = field(metadata=json_key("coverage@k"))
    full: float = field(metadata=json_key("all pieces@k"))
    chars: float
    tokens: float = field(metadata=json_key("≈tokens"))


@dataclass(frozen=True)
class TopkResult(ExperimentResult):
    """``04_q8_topk``: the coverage curve over k, Q8's verdict, the late-complete questions.

    Returned by :func:`rag_lib.experiments.topk.run_topk`.
    """

    configuration: str
    provenance: RetrieverProvenance
    languages: list[str]
    max_k: int
    n_answerable: int
    token_estimate: str
    q8: dict[str, Q8Case | str]  # "id" → Q8's benchmark id; language → Q8 in that language
    q8_rows: list[dict[str, str]]  # one row per language: "language", then "k=1" … "k=<max_k>" → "covered/pieces"
    q8_testable: dict[str, bool]  # language → both pieces ranked
    q8_verdict: dict[str, str]  # language → the verdict sentence
    # language → the compound questions completed only between k + 1 and 10: "question", "text", "first_full_k"
    # and one column per piece (C1, C2, … as many as the question has)
    late_complete: dict[str, list[dict[str, Scalar]]]
    late_complete_count: dict[str, int]  # language → questions
    n_compound: int
    casebook_q8: CasebookQ8
    curve: dict[str, dict[str, CurvePoint]]  # language → k → point
    curve_rows: list[CurveRow]
    plot: dict[str, dict[str, dict[str, float]]]  # "coverage" → language → k → mean coverage

    def q8_case(self, lang: str) -> Q8Case:
        """Q8 as asked in ``lang``."""
        case = self.q8[lang]
        if not isinstance(case, Q8Case):
            raise KeyError(f"q8[{lang!r}] is {case!r}, not a language's case")
        return case


EXPERIMENT = Experiment(
    "04_q8_topk", TopkResult,
    checked={
        "q8_testable.zh": 0,
        "late_complete_count.zh": 1,
    },
)
