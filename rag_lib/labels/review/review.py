"""The reviewer's calls (``blind_review.yaml``) against the first decisions: Cohen's kappa and raw agreement per
kind, the disagreements, and which of them still lack a resolution (``blind_review_resolutions.yaml``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.labels.review.decisions import KINDS, LABELS, LabelDecision

REVIEW_PATH = BENCHMARK_DIR / "blind_review.yaml"
RESOLUTIONS_PATH = BENCHMARK_DIR / "blind_review_resolutions.yaml"


# ------------------------------------------------------------------------------------- kappa
def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items; ``None`` when chance agreement is 1
    (both raters used one and the same label throughout, so kappa is 0/0).

    kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement, p_e = sum over labels of the product of
    the two raters' marginal proportions.
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first labels against {len(second)} second ones")
    n = len(first)
    if n == 0:
        return None
    p_o = sum(a == b for a, b in zip(first, second, strict=True)) / n
    c1, c2 = Counter(first), Counter(second)
    p_e = sum(c1[label] * c2[label] for label in set(c1) | set(c2)) / (n * n)
    if p_e == 1:
        return None
    return (p_o - p_e) / (1 - p_e)


# --------------------------------------------------------------------------------- agreement
@dataclass(frozen=True)
class KindAgreement:
    """Agreement on one kind over the judged items."""

    kind: str
    sampled: int
    judged: int
    agree: int
    kappa: float | None
    first_counts: Mapping[str, int]
    second_counts: Mapping[str, int]
    piece_agree: int | None = None  # chunk kind: among pairs both call gold, how many name the same pieces
    both_gold: int | None = None

    @property
    def raw(self) -> float | None:
        return self.agree / self.judged if self.judged else None


def load_review(path: Path = REVIEW_PATH) -> dict[str, dict[str, Any]]:
    """The blind judgments by sheet item id."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = {}
    for row in data.get("judgments") or []:
        if row["id"] in out:
            raise ValueError(f"{path}: item {row['id']} judged twice")
        if row["decision"] not in LABELS[row["kind"]]:
            raise ValueError(f"{path}: item {row['id']}: decision {row['decision']!r} not in {LABELS[row['kind']]}")
        out[row["id"]] = row
    return out


def recorded_first(path: Path = RESOLUTIONS_PATH) -> dict[str, tuple[str, str]]:
    """Item id → the first decision as its resolution recorded it (``first_decision``, ``first_pieces``),
    before the correction was applied to the label files."""
    data = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.is_file() else {}
    return {r["id"]: (r["first_decision"], ",".join(r.get("first_pieces") or []))
            for r in data.get("resolutions") or [] if "first_decision" in r}


def agreement(sheet_items: Sequence[Mapping[str, Any]], review: Mapping[str, Mapping[str, Any]],
              first: Mapping[str, LabelDecision],
              resolved: Mapping[str, tuple[str, str]] | None = None,
              ) -> tuple[list[KindAgreement], list[dict[str, Any]]]:
    """Per kind agreement over the judged sheet items, and the disagreements.

    ``first`` maps an item's ``ref`` to its first decision (from the files now); an item whose decision no
    longer exists (relabelled away) is reported as ``gone`` in the disagreements list, never compared.
    ``resolved`` (item id → decision and pieces, :func:`recorded_first`) holds the first decision of items
    whose disagreement was resolved and corrected in the files: they are compared with that recorded first
    decision, so an applied correction does not turn a disagreement into an agreement.
    """
    resolved = resolved or {}
    rows: list[KindAgreement] = []
    disagreements = []
    for kind in KINDS:
        items = [it for it in sheet_items if it["kind"] == kind]
        a, b, pieces_same, both_gold = [], [], 0, 0
        for it in items:
            judged = review.get(it["id"])
            if judged is None:
                continue
            d = first.get(it["ref"])
            if d is None and it["id"] not in resolved:
                disagreements.append({"id": it["id"], "kind": kind, "ref": it["ref"], "first": "gone",
                                      "second": judged["decision"], "second_reason": judged.get("reason", "")})
                continue
            decision, detail = resolved.get(it["id"]) or (d.first, d.detail)  # type: ignore[union-attr]
            a.append(decision)
            b.append(judged["decision"])
            piece_mismatch = False
            if kind == "chunk" and decision == judged["decision"] == "gold":
                both_gold += 1
                same = set(detail.split(",")) == set(judged.get("pieces") or [])
                pieces_same += same
                piece_mismatch = not same
            if decision != judged["decision"] or piece_mismatch:
                disagreements.append({
                    "id": it["id"], "kind": kind, "key": d.key if d else it["ref"],
                    "origin": d.origin if d else "resolved",
                    "first": decision + (f" {detail}" if detail else ""),
                    "second": judged["decision"] + (f" {','.join(judged.get('pieces') or [])}"
                                                    if judged.get("pieces") else ""),
                    "second_reason": judged.get("reason", "")})
        rows.append(KindAgreement(kind, len(items), len(a), sum(x == y for x, y in zip(a, b, strict=True)),
                                  cohen_kappa(a, b), dict(Counter(a)), dict(Counter(b)),
                                  pieces_same if kind == "chunk" else None, both_gold if kind == "chunk" else None))
    return rows, disagreements


def table(rows: Sequence[KindAgreement]) -> str:
    """The Markdown kappa table of data/benchmark/README.md."""
    out = ["| kind | sampled | judged | raw agreement | Cohen's kappa | first pass | second pass |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        kappa = "undefined" if r.kappa is None else f"{r.kappa:.3f}"
        raw = "—" if r.raw is None else f"{r.agree}/{r.judged} = {r.raw:.3f}"
        fc = ", ".join(f"{k} {v}" for k, v in sorted(r.first_counts.items()))
        sc = ", ".join(f"{k} {v}" for k, v in sorted(r.second_counts.items()))
        out.append(f"| {r.kind} | {r.sampled} | {r.judged} | {raw} | {kappa} | {fc} | {sc} |")
    return "\n".join(out)


def unresolved(disagreements: Sequence[Mapping[str, Any]], path: Path = RESOLUTIONS_PATH) -> list[str]:
    """Disagreement ids with no entry in the resolutions file."""
    done = set()
    if path.is_file():
        done = {r["id"] for r in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("resolutions") or []}
    return [d["id"] for d in disagreements if d["id"] not in done]
