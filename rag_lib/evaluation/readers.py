"""Blind readers' judgments of label decisions (labels v4, issue 46 item 4): their majority, and what a fresh
blind sample says about the gold the labels still miss (:func:`missed_gold`, the caveat every hit@k and
coverage figure carries). The sheets and the files are written and applied by :mod:`rag_lib.labels.review`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.config import BENCHMARK_DIR

REREAD_DIR = BENCHMARK_DIR / "reread_v4"  # the sheets and each blind reader's judgments


# ------------------------------------------------------------------------------ the readers' majority
@dataclass(frozen=True)
class NewGold:
    """A pair the blind readers call gold (a majority of at least two, naming the same piece)."""

    item: str  # the sheet's id (r087, m024)
    question: str
    piece: str
    chunk: str
    batch: str
    page: str
    heading: tuple[str, ...]
    phrase: str  # a reader's verbatim span of the chunk: the new locator's phrase
    votes: int


def load_judgments(path: Path) -> dict[str, Mapping[str, Any]]:
    """Item id → one reader's judgment."""
    return {j["id"]: j for j in (yaml.safe_load(path.read_text(encoding="utf-8")) or {})["judgments"]}


def majority_gold(items: Sequence[Mapping[str, Any]], readers: Sequence[Mapping[str, Mapping[str, Any]]],
                  ) -> list[NewGold]:
    """Each (item, piece) at least two readers call gold. A third reader judges only the items the first two
    decided differently, so two votes are a majority wherever they occur."""
    out = []
    for item in items:
        votes: dict[str, list[str]] = {}
        for reader in readers:
            j = reader.get(item["id"])
            if j is not None and j["decision"] == "gold":
                for piece in j.get("pieces", []):
                    votes.setdefault(piece, []).append(j.get("phrase", ""))
        for piece, phrases in sorted(votes.items()):
            found = [p for p in phrases if p and p in item["text"]]
            if len(phrases) >= 2 and found:
                heading = tuple(h for h in item["heading"].split(" > ") if h)
                out.append(NewGold(item["id"], item["question"], piece, item["chunk"], item["batch"], item["page"],
                                   heading, found[0], len(phrases)))
    return out


# ------------------------------------------------------------------------------------- what is still missed
@dataclass(frozen=True)
class MissedGold:
    """The blind missed-gold sample: ``found`` of ``n`` sampled not-gold pairs both readers call gold, drawn
    from ``population`` pairs nobody re-read; the share and its exact interval estimate the gold still missed."""

    found: int
    n: int
    population: int

    @property
    def interval(self) -> tuple[float, float]:
        from rag_lib.evaluation.stats import clopper_pearson

        return clopper_pearson(self.found, self.n)

    def caveat(self) -> str:
        """The sentence every hit@k and coverage caveat carries."""
        low, high = self.interval
        return (f"the labels may still miss gold: two blind readers call {self.found} of {self.n} sampled not-gold "
                f"pairs gold ({self.found / self.n:.1%}, Clopper-Pearson 95% [{low:.2%}, {high:.1%}]), about "
                f"{round(self.found / self.n * self.population)} [{round(low * self.population)}, "
                f"{round(high * self.population)}] of the {self.population:,} not-gold pairs, so hit@k and coverage "
                "are lower bounds")


@cache  # read once per process: every hit@k caveat of a run prints it
def missed_gold(folder: Path = REREAD_DIR) -> MissedGold:
    """The missed-gold sample as its sheet and its two readers' files record it."""
    sheet = yaml.safe_load((folder / "missed_sheet.yaml").read_text(encoding="utf-8"))
    first, second = (load_judgments(folder / f"missed_reader{i}.yaml") for i in (1, 2))
    found = len({g.item for g in majority_gold(sheet["items"], [first, second])})
    return MissedGold(found, len(sheet["items"]), int(sheet["population"]))
