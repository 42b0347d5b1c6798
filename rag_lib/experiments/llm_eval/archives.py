"""10's archived answers: the answer rows copied before a change of what they mean, read back beside today's
(before → after, and the paired comparison against the last archive that differs)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_lib.core.config import RESULTS_DIR, results_dir
from rag_lib.core.io import write_json
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.local_llm import IN_SAMPLE, AnswerRow, BeforeAfterRow, TargetRow
from rag_lib.results.store import RESULTS_FILE

# Answers as 10 reported them before a change of what they mean (copied from its results.json by
# :func:`archive_answer_rows`), shown beside the current figures as "before → after", oldest first:
# v1 before the support check, v2 with the narrowing budget before it was chosen out of sample, v3 before
# table rows were shown under their header row (narrowed-units-v3), v4 before the narrowed judge showed them
# so too (only the judged cascade moves: the answers are the same).
ANSWER_ARCHIVES = tuple(RESULTS_DIR / "archive" / f"answers-v{n}.json" for n in (1, 2, 3, 4))
# The last archive whose answers differ from today's: the paired before → after is against it (v4 holds the
# same answers, so a comparison with it could not move and would only widen the Holm family).
PAIRED_ARCHIVE = ANSWER_ARCHIVES[2]
BEFORE_AFTER = ("answer_rate", "answer_correctness", "correct_gold_in_top_k", "shown_wrong", "refusal_correctness",
                "citation_validity")


def archive_answer_rows(archive: Path, what_changes: str, source: Path | None = None) -> Path:
    """Copy 10's current answer rows into ``archive`` before ``what_changes`` changes what they mean, with
    each answerer's ungated per-question outcomes (for paired before → after comparisons)."""
    source = source or results_dir() / LOCAL_LLM.name / RESULTS_FILE
    stored = json.loads(source.read_text(encoding="utf-8"))
    kept = ("question", "answerable", "status", "correct", "error_kind")
    questions = {name: {run.partition(":")[0]: [{k: r[k] for k in kept} for r in block["rows"]]
                        for run, block in answerer["runs"].items() if run.endswith(":ungated")}
                 for name, answerer in stored["answers"].items()}
    write_json(archive, {"source": f"{LOCAL_LLM.name}/{RESULTS_FILE}, answer_rows, before {what_changes}",
                         "rows": stored["answer_rows"], "questions": questions})
    return archive


def archived_outcomes(archive: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """An archive's per-question ungated outcomes (answerer → language → rows); empty when it kept none."""
    if not archive.is_file():
        return {}
    return json.loads(archive.read_text("utf-8")).get("questions", {})


def before_after_rows(rows: Sequence[AnswerRow], archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[BeforeAfterRow]:
    """Each archived row's rates beside the current row of the same answerer (:func:`archived_row`), one
    block per archive that exists; a row whose figures all stayed the same is left out (that answerer did
    not change since the archive)."""
    out = []
    for stem, before in archived_rows(archives):
        for row in rows:
            old = archived_row(before, row)
            shown = {m: arrow(old.get(m), getattr(row, m)) for m in BEFORE_AFTER} if old is not None else {}
            if any(" → " in value for value in shown.values()):
                out.append(BeforeAfterRow(archive=stem, generator=row.generator, lang=row.lang, gate=row.gate,
                                          **shown))
    return out


def archived_rows(archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[tuple[str, dict[tuple[str, str, str], Any]]]:
    """Each existing archive's name and its answer rows by (answerer without version, language, gate)."""
    return [(a.stem, {(unversioned(r["generator"]), r["lang"], r["gate"]): r
                      for r in json.loads(a.read_text("utf-8"))["rows"]}) for a in archives if a.is_file()]


def archived_row(before: dict[tuple[str, str, str], Any], row: AnswerRow) -> dict[str, Any] | None:
    """The archived row of ``row``'s answerer at any pipeline version (``+narrowed-units-v2`` is
    ``+narrowed-units-v3`` before a change), language and gate; an older archive names an in-sample gate
    without its suffix."""
    key = (unversioned(row.generator), row.lang)
    return before.get((*key, row.gate)) or before.get((*key, row.gate.removesuffix(IN_SAMPLE)))


def unversioned(label: str) -> str:
    """An answerer's label without its pipeline's version suffix (``-v3``)."""
    return re.sub(r"-v\d+$", "", label)


def arrow(before: Any, after: Any) -> str:
    shown = [shown_value(before), shown_value(after)]
    return shown[1] if shown[0] == shown[1] else f"{shown[0]} → {shown[1]}"


def shown_value(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


# The answers issue's targets for the narrowed pipeline (one row per language and gate).
TARGETS = (("correct_gold_in_top_k", ">=", 0.50), ("shown_wrong", "<=", 0.15), ("refusal_correctness", ">=", 0.90))
# A target is met only when its paired constraint holds too: declining by refusing everything meets nothing.
PAIRED = {"refusal_correctness": ("false_refusal", "<=", 0.20)}


def _gap(value: float, op: str, goal: float) -> float:
    """How far ``value`` is on the right side of ``goal`` (negative: missed)."""
    return value - goal if op == ">=" else goal - value


def target_rows(answer_rows: Sequence[AnswerRow], label: str,
                archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[TargetRow]:
    """Each target against the figure of answerer ``label`` (the narrowed pipeline): met, or missed by how
    much, and what was tried: the same figure before each archived change (``answers-vN``; — where that
    version had no such row)."""
    stored = archived_rows(archives)
    rows = []
    for row in (r for r in answer_rows if r.generator == label):
        olds = [(stem, archived_row(before, row) or {}) for stem, before in stored]
        for metric, op, goal in TARGETS:
            value = getattr(row, metric)
            pair = PAIRED.get(metric)
            paired = getattr(row, pair[0]) if pair else None
            if value is None:
                verdict = "no figure (calls not recorded)"
            elif _gap(value, op, goal) < 0:
                verdict = f"missed by {abs(_gap(value, op, goal)):.3f}"
            elif pair and (paired is None or _gap(paired, pair[1], pair[2]) < 0):
                verdict = (f"not met: {pair[0].replace('_', ' ')} {shown_value(paired)} "
                           f"{getattr(row, f'{pair[0]}_ci')} is not {pair[1]} {pair[2]:.2f}")
            else:
                verdict = "met"
            target = f"{op} {goal:.2f}" + (f" and {pair[0].replace('_', ' ')} {pair[1]} {pair[2]:.2f}" if pair else "")
            before = " · ".join(f"{stem} {shown_value(old.get(metric))}" for stem, old in olds)
            rows.append(TargetRow(lang=row.lang, gate=row.gate, metric=metric, target=target,
                                  measured=value, ci=getattr(row, f"{metric}_ci"), recorded=row.n - row.missing,
                                  verdict=verdict, before=before or "—"))
    return rows
