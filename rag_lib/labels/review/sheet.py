"""The blind sheet: the drawn decisions with their context only (never the first decision or its reason), the
instructions per kind, and the YAML it is written as."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import yaml

from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.labels.review.decisions import FRACTION, KINDS, SEED, LabelDecision, sample

SHEET_PATH = BENCHMARK_DIR / "blind_review_sheet.yaml"
# Fields that would give the first decision away; the sheet test checks none appears.
FORBIDDEN_FIELDS = frozenset({"first", "decision", "reason", "type", "answerable", "near_miss", "absent",
                              "notes", "locators", "compound", "gold", "answered", "casebook_ref", "checkable"})


INSTRUCTIONS = {
    "question": "Is the question answerable from this batch's pages? Search the normalized pages "
                "(data/snapshots/<batch>/normalized/); the BM25 hits are only a start. decision: answerable | "
                "unanswerable (the corpus truly lacks the fact; sections dropped by sections.yaml count as absent).",
    "chunk": "Is the chunk gold for a piece: could a reader state the piece from this chunk alone (every copy "
             "counts; pointers and partial statements do not)? decision: gold (with pieces: [C1, ...]) | not_gold.",
    "key_fact": "Must a complete answer to this piece state this fact, does any listed wording state it, and does "
                "the source chunk state it? decision: holds | fails.",
}


def sheet(decisions: Sequence[LabelDecision], fraction: float = FRACTION, seed: int = SEED) -> dict[str, Any]:
    """The blind sheet: per kind its population and sample size, and the drawn items with their context only."""
    drawn = sample(decisions, fraction, seed)
    population = Counter(d.kind for d in decisions)
    items = []
    for kind in KINDS:
        for i, d in enumerate(drawn.get(kind, []), 1):
            show = dict(d.show)
            if kind == "question":
                show.pop("question", None)  # its id (u03, n05) would give the decision away
            items.append({"id": f"{kind[0]}{i:03d}", "kind": kind, "ref": d.ref, **show})
    return {
        "seed": seed, "fraction": fraction,
        "how": "python -m rag_lib.labels.review sheet; judge into data/benchmark/blind_review.yaml by id",
        "instructions": INSTRUCTIONS,
        "kinds": {k: {"population": population.get(k, 0), "sampled": len(drawn.get(k, []))} for k in KINDS},
        "items": items,
    }


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, s: str) -> yaml.Node:
    # Multi-line texts as literal blocks, so the sheet reads like the pages.
    style = "|" if "\n" in s and all(ch == "\n" or ch >= " " for ch in s) and not s.endswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)


_Dumper.add_representer(str, _str)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=120)
