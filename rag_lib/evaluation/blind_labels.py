"""A second, blind labeller's pass over a workbook's questions, compared with the labels in use.

The second labeller saw the questions only (re-numbered in a seeded order: ``sheet.yaml``, with the mapping
back in ``ids.json``), never the first labeller's gold, and wrote for each question its type and, when
answerable, its pieces with the chunk ids stating each (``reader_b.yaml``). Compared:

* answerability: agreement and Cohen's kappa over every question;
* gold, on the questions both call answerable: for how many the second labeller's chunks include at least
  one gold chunk of *every* piece of the labels in use (the Top-k could then be judged complete by either), and
  the share of the labels' gold chunks the second labeller also marked.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag_lib.benchmark.questions import Benchmark
from rag_lib.core.errors import BenchmarkError
from rag_lib.evaluation.hand_check_agreement import cohen_kappa


@dataclass(frozen=True)
class BlindAgreement:
    questions: int
    same_type: int
    kappa: float | None  # None: one class only, kappa undefined
    both_answerable: int
    every_piece_found: int  # of both_answerable: the second labeller marked a gold chunk of each piece
    gold_chunks: int  # the labels' gold chunks on those questions
    gold_chunks_marked: int  # of them, marked by the second labeller too
    disagreements: list[str]  # "py12: answerable / unanswerable", "py05: piece C2 not found"


def load_blind_pass(folder: Path) -> tuple[dict[str, str], dict[str, dict]]:
    """``ids.json`` (sheet id → question id) and ``reader_b.yaml`` keyed by question id."""
    ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
    data = yaml.safe_load((folder / "reader_b.yaml").read_text(encoding="utf-8"))
    answers = {ids[q["id"]]: q for q in data["questions"]}
    missing = sorted(set(ids.values()) - set(answers))
    if missing:
        raise BenchmarkError(f"{folder / 'reader_b.yaml'} has no entry for {missing}; the blind pass covers every "
                             "question of the sheet")
    return ids, answers


def blind_agreement(bench: Benchmark, folder: Path) -> BlindAgreement:
    _, answers = load_blind_pass(folder)
    table: dict[tuple[bool, bool], int] = {}
    disagreements = []
    both = found = gold = marked = 0
    for q in bench:
        theirs = answers[q.id]
        b_answerable = theirs.get("type") == "answerable"
        table[(q.answerable, b_answerable)] = table.get((q.answerable, b_answerable), 0) + 1
        if q.answerable != b_answerable:
            disagreements.append(f"{q.id}: {q.type} / {theirs.get('type')}")
            continue
        if not q.answerable:
            continue
        both += 1
        chunks = {c for piece in theirs.get("pieces") or [] for c in piece.get("chunks") or []}
        missed = [f"C{i}" for i, piece in enumerate(q.pieces, 1) if not piece & chunks]
        found += not missed
        disagreements += [f"{q.id}: piece {m} not found by the second labeller" for m in missed]
        gold += len(q.gold_chunks)
        marked += len(q.gold_chunks & chunks)
    same = table.get((True, True), 0) + table.get((False, False), 0)
    kappa = cohen_kappa(table)
    return BlindAgreement(len(bench), same, None if math.isnan(kappa) else round(kappa, 4), both, found, gold, marked,
                          disagreements)
