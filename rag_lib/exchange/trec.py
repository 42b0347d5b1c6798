"""TREC run files: ``qid Q0 docid rank score tag`` per line, best first within a query.

Written by :func:`write_run` from the workbook's rankings, read by :func:`read_run` from any retriever.
trec_eval and ranx order a query's documents by score, not by the rank column, and break ties their
own way; so by default the score written is rank-derived (``depth − rank + 1``), which keeps the
workbook's order, ties included, in every tool (``scores="retriever"`` writes the retriever's own scores
instead, and says when two of them tie).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rag_lib.core.errors import WorkbookError
from rag_lib.core.io import read_utf8, write_text
from rag_lib.retrieval.base import Ranking


class RunFileError(WorkbookError):
    """A TREC run file that cannot be read as one; the message names the file and the line."""


@dataclass(frozen=True)
class RunFile:
    """A run read back: each query's document ids, best first, and how deep the deepest query goes."""

    path: Path
    ranked: dict[str, tuple[str, ...]]
    tag: str

    @property
    def depth(self) -> int:
        return max((len(ids) for ids in self.ranked.values()), default=0)


def run_lines(rankings: Mapping[str, Ranking], tag: str, depth: int = 100,
              scores: Literal["rank", "retriever"] = "rank") -> tuple[list[str], list[str]]:
    """The lines of a run over ``rankings`` (query id → ranking), each cut at ``depth``, and the queries whose
    written retriever scores tie inside that depth (empty with rank-derived scores)."""
    if depth < 1:
        raise ValueError(f"depth must be 1 or more, got {depth}")
    if not tag or any(ch.isspace() for ch in tag):
        raise ValueError(f"the run tag {tag!r} must be one word (TREC separates fields by whitespace)")
    lines: list[str] = []
    tied: list[str] = []
    for qid in sorted(rankings):
        top = rankings[qid].top(depth)
        if scores == "retriever" and len({score for _, score in top}) < len(top):
            tied.append(qid)
        for rank, (doc, score) in enumerate(top, 1):
            written = float(depth - rank + 1) if scores == "rank" else score
            lines.append(f"{qid} Q0 {doc} {rank} {written:.6f} {tag}")
    return lines, tied


def write_run(path: Path, rankings: Mapping[str, Ranking], tag: str, depth: int = 100,
              scores: Literal["rank", "retriever"] = "rank") -> list[str]:
    """Write the run (atomically: never half a file); return the queries whose retriever scores tie."""
    lines, tied = run_lines(rankings, tag, depth, scores)
    write_text(path, "\n".join(lines) + "\n")
    return tied


def read_run(path: Path) -> RunFile:
    """A TREC run file, each query's documents ordered by score (highest first; ties by the rank column).

    Raises
    ------
    RunFileError
        Naming the file and line: a line without six fields, a rank or score that is not a number, a
        document listed twice for one query, two run tags in one file, or an empty file.
    """
    text = read_utf8(path, "run file", RunFileError)
    entries: dict[str, dict[str, tuple[float, int]]] = {}
    tags: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 6:
            raise RunFileError(f"{path}, line {number}: {len(fields)} fields, a TREC run line has 6 "
                               f"(qid Q0 docid rank score tag): {line[:80]!r}")
        qid, _, doc, rank, score, tag = fields
        try:
            value, position = float(score), int(rank)
        except ValueError as exc:
            raise RunFileError(f"{path}, line {number}: rank {rank!r} and score {score!r} must be an integer "
                               "and a number") from exc
        if doc in entries.setdefault(qid, {}):
            raise RunFileError(f"{path}, line {number}: document {doc} is listed twice for query {qid}")
        entries[qid][doc] = (value, position)
        tags.add(tag)
    if not entries:
        raise RunFileError(f"{path} holds no run lines")
    if len(tags) > 1:
        raise RunFileError(f"{path} mixes run tags {sorted(tags)}; write one run per file")
    ranked = {qid: tuple(sorted(docs, key=lambda d: (-docs[d][0], docs[d][1]))) for qid, docs in entries.items()}
    return RunFile(path, ranked, tags.pop())
