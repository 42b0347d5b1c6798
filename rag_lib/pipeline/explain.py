"""``explain(question)``: the full ranking with each gold piece marked, its score gap to the top-k
cut, and the layer diagnosis — the analyst's first look at why an answer is incomplete.

>>> explain("q07", lang="zh")                        # doctest: +SKIP
>>> explain("How do I add a secret?", key="hybrid")  # free text: no gold pieces to mark
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rag_lib.benchmark import Question
from rag_lib.core.errors import WorkbookError, shortened
from rag_lib.evaluation import Diagnosis, diagnose, piece_ranks
from rag_lib.generation.base import question_problem
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.tables import Table
from rag_lib.retrieval import Ranking


@dataclass
class Explanation:
    """One question ranked by one configuration, with its gold pieces located.

    ``str(result)`` (or :meth:`to_string`) is the plain-text view the CLI prints; in a notebook the
    HTML view shows the same: the question, each piece (what it is, its rank, in or below the cut),
    and the ranking with a line at the top-k cut.
    """

    question: str
    key: str
    k: int
    ranking: Ranking
    table: pd.DataFrame  # one row per ranked chunk: rank, score, piece, page, heading, chunk id
    pieces: list[dict[str, Any]] = field(default_factory=list)  # per gold piece: what, rank, score, gap to the cut
    diagnosis: Diagnosis | None = None
    question_id: str | None = None

    def default_rows(self) -> int:
        """Rows shown by default: down to the deepest gold piece, and at least ``2k``."""
        deepest = max((p["rank"] or 0 for p in self.pieces), default=0)
        return max(2 * self.k, deepest)

    def top(self, n: int | None = None) -> pd.DataFrame:
        """The first ``n`` rows (default: :meth:`default_rows`), indexed by rank."""
        return self.table.head(n or self.default_rows()).set_index("rank")

    def summary(self) -> str:
        """One line: the question (and its id), the configuration, each piece's rank, the diagnosis."""
        layer = self.diagnosis.layer.value if self.diagnosis else "no gold pieces (free-text question)"
        ranks = ", ".join(f"{p['piece']}@{p['rank']}" for p in self.pieces) or "—"
        asked = f"{self.question_id}: {self.question}" if self.question_id else self.question
        return f"{asked}\n{self.key} · k={self.k} · pieces: {ranks} · diagnosis: {layer}"

    def piece_rows(self) -> list[dict[str, Any]]:
        """Per gold piece: what it is, its first rank and score, and "in top-k" or its gap to the cut."""
        return [{"piece": p["piece"], "rank": p["rank"], "score": p["score"],
                 f"vs top-{self.k}": f"in top-{self.k}" if p["in_top_k"] else
                 ("not ranked" if p["rank"] is None else f"{p['gap_to_top_k_cut']:.4f} below the cut"),
                 "what": p["what"]} for p in self.pieces]

    def ranking_table(self, n: int | None = None, with_chunk_ids: bool = True, compact: bool = False) -> Table:
        rows = self.table.head(n or self.default_rows()).to_dict("records")
        columns = ["rank", "score", "piece", "page"]
        if not compact:
            columns += ["heading", *(["chunk"] if with_chunk_ids else [])]
        return Table(rows, columns, decimals=4, rule_after=self.k, rule_label=f"top-{self.k} cut")

    def to_string(self, rows: int | None = None, width: int | None = 100) -> str:
        """Plain text; ``width`` shortens the text columns and leaves out chunk ids (``None``: no limit)."""
        parts = [self.summary()]
        if self.pieces:
            parts.append(Table(self.piece_rows(), decimals=4).to_string(width))
        parts.append(self.ranking_table(rows, with_chunk_ids=width is None).to_string(width))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.to_string()

    def html(self, rows: int | None = None, compact: bool = False) -> str:
        """The HTML view with ``rows`` ranked chunks (default: :meth:`default_rows`). ``compact`` keeps the
        pieces' ranks and each chunk's page only (no piece descriptions, headings or chunk ids), narrow enough
        to stand beside another configuration's view."""
        first, second = (html.escape(line) for line in self.summary().split("\n", 1))
        columns = ["piece", "rank", "score", f"vs top-{self.k}", *([] if compact else ["what"])]
        pieces = Table(self.piece_rows(), columns, decimals=4).to_html() if self.pieces else ""
        return f"<p><b>{first}</b><br>{second}</p>{pieces}{self.ranking_table(rows, compact=compact).to_html()}"

    def _repr_html_(self) -> str:
        return self.html()


# What a benchmark id looks like ("q07", "q09a", "a12"): a word with a digit and no space.
_ID_LIKE = re.compile(r"^[a-z]+\d+[a-z0-9_]*$")


ID_LANGUAGE = "zh"  # a benchmark id without --lang: the language the workbook leads with


def benchmark_listing(wb: Workbench, lang: str | None = None) -> str:
    """Every benchmark id with its question (in ``lang``, default :data:`ID_LANGUAGE`) and its type,
    one per line: what ``rank --list`` prints."""
    return "\n".join(f"{q.id}  {q.type:<12}  {q.text(lang or ID_LANGUAGE)}" for q in wb.benchmark.questions())


def resolve_question(wb: Workbench, question: str | Question, lang: str | None) -> tuple[str, Question | None]:
    """The text to rank and the benchmark question it is (``None`` for free text).

    A benchmark id resolves to its wording in ``lang`` (default Chinese, the language the workbook
    leads with); text that equals a
    benchmark question's wording is matched to it.

    Raises
    ------
    WorkbookError
        When ``question`` looks like an id (``q999``) but no question has it; the message lists the
        nearest ids. When it is empty or over the length limit (before anything ranks or gates it,
        so ``ask`` never blames the gate, and never echoes 100 KB back).
    """
    if isinstance(question, Question):
        return question.text(lang or ID_LANGUAGE), question
    problem = question_problem(question)
    if problem:
        raise WorkbookError(problem[1])
    try:
        q = wb.benchmark[question]
        return q.text(lang or ID_LANGUAGE), q
    except KeyError:
        pass
    for q in wb.benchmark.questions():
        if question in {q.text("zh"), q.text("en")}:
            return question, q
    if _ID_LIKE.match(question.strip()):
        ids = [q.id for q in wb.benchmark]
        near = difflib.get_close_matches(question.strip(), ids, n=5, cutoff=0.5) or ids[:5]
        raise WorkbookError(f"no benchmark question has the id {shortened(question.strip())!r}; nearest ids: "
                            f"{', '.join(near)}. "
                            "Quote a full question to ask free text.")
    return question, None


def check_k(k: int, n_chunks: int) -> None:
    """Raise unless the evidence cut ``k`` is within 1..``n_chunks`` (the rankable chunks)."""
    if not 1 <= k <= n_chunks:
        raise WorkbookError(f"k must be between 1 and {n_chunks} (the number of rankable chunks); got {k}.")


def explain(
    question: str | Question, key: str = "dense", k: int | None = None, lang: str | None = None,
    workbench: Workbench | None = None,
) -> Explanation:
    """Rank ``question`` and locate its gold pieces.

    Parameters
    ----------
    question
        A benchmark id (``"q07"``), a :class:`Question`, or free text. Free text that equals a
        benchmark question's wording is matched to it, so its gold pieces are shown.
    key
        Retrieval configuration: ``"dense"``, ``"bm25"``, ``"hybrid"`` or ``"dense:<embedder>"``.
    k
        The evidence cut (casebook: Top-5).
    lang
        ``"zh"`` or ``"en"`` for a benchmark question (default :data:`ID_LANGUAGE`).
    """
    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    text, gold_question = resolve_question(wb, question, lang)
    if not text.strip():
        raise ValueError("explain() needs a non-empty question; pass a benchmark id like 'q07' or a question text.")
    problem = question_problem(text)
    if problem:  # ranking 100 KB of text would take minutes, only to show nothing useful
        raise WorkbookError(problem[1])
    check_k(k, len(wb.embeddable))
    ranking = wb.rank(text, key)
    marks: dict[str, str] = {}
    pieces: list[dict[str, Any]] = []
    diagnosis = None
    if gold_question is not None and gold_question.answerable:
        ids = [p.id for p in gold_question.gold] if hasattr(gold_question, "gold") else []
        for index, chunk_ids in enumerate(gold_question.pieces):
            name = ids[index] if index < len(ids) else f"C{index + 1}"
            for cid in chunk_ids:
                marks[cid] = f"{marks[cid]}+{name}" if cid in marks else name
        cut = ranking.scores[k - 1] if len(ranking) >= k else float("nan")
        whats = [p.what for p in gold_question.gold] if hasattr(gold_question, "gold") else []
        for index, (name, rank) in enumerate(zip(ids or [f"C{i + 1}" for i in range(len(gold_question.pieces))],
                                                 piece_ranks(gold_question.pieces, ranking), strict=True)):
            score = round(ranking.scores[rank - 1], 4) if rank else None
            inside = rank is not None and rank <= k
            pieces.append({"piece": name, "what": whats[index] if index < len(whats) else "", "rank": rank,
                           "score": score, "in_top_k": inside,
                           "gap_to_top_k_cut": None if inside or score is None else round(cut - score, 4)})
        diagnosis = diagnose(gold_question.pieces, ranking, k)
    rows = []
    for rank, (cid, score) in enumerate(ranking, 1):
        chunk = wb.by_id[cid]
        rows.append({"rank": rank, "score": round(score, 4), "piece": marks.get(cid, ""), "page": chunk.page,
                     "heading": " > ".join(chunk.heading_path), "chunk": cid})
    return Explanation(text, key, k, ranking, pd.DataFrame(rows), pieces, diagnosis,
                       gold_question.id if gold_question is not None else None)
