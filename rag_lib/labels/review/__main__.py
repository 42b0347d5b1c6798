"""A second, blind pass over the benchmark's label decisions (issue 27, item 2).

    python -m rag_lib.labels.review sheet        # writes data/benchmark/blind_review_sheet.yaml
    python -m rag_lib.labels.review agreement    # kappa per kind, disagreements, resolutions still missing
    python -m rag_lib.labels.review reread       # labels v4: the re-read sheet (rag_lib.labels.review.reread)
    python -m rag_lib.labels.review missed       # labels v4: a fresh sample to estimate the gold still missed

What the pass decides, and how it draws: :mod:`rag_lib.labels.review`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import yaml

from rag_lib.labels.review.decisions import all_decisions
from rag_lib.labels.review.reread import (
    MISSED_SHEET_PATH,
    REREAD_SHEET_PATH,
    candidates,
    load_selection_inputs,
    missed_sample,
    missed_sheet,
    reread_report,
    reread_sheet,
)
from rag_lib.labels.review.review import (
    RESOLUTIONS_PATH,
    REVIEW_PATH,
    agreement,
    load_review,
    recorded_first,
    table,
    unresolved,
)
from rag_lib.labels.review.sheet import SHEET_PATH, dump, sheet


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.labels.review", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sheet", help=f"write the blind sheet ({SHEET_PATH.name})")
    s.add_argument("--out", type=Path, default=SHEET_PATH)
    g = sub.add_parser("agreement", help="kappa per kind against the first decisions; the disagreements")
    g.add_argument("--sheet", type=Path, default=SHEET_PATH)
    g.add_argument("--review", type=Path, default=REVIEW_PATH)
    r = sub.add_parser("reread", help=f"write the labels-v4 re-read sheet ({REREAD_SHEET_PATH.name})")
    r.add_argument("--out", type=Path, default=REREAD_SHEET_PATH)
    r.add_argument("--report", action="store_true",
                   help="write nothing; print the readers' agreement, their majority and the missed-gold estimate")
    m = sub.add_parser("missed", help=f"write the missed-gold sample sheet ({MISSED_SHEET_PATH.name})")
    m.add_argument("--out", type=Path, default=MISSED_SHEET_PATH)
    args = parser.parse_args(argv)
    if args.command == "reread" and args.report:
        print(reread_report())
        return
    if args.command in ("reread", "missed"):
        decisions = all_decisions(with_context=False)
        selected = candidates(decisions, *load_selection_inputs())
        data = (reread_sheet(selected) if args.command == "reread"
                else missed_sheet(*missed_sample(decisions, [d for d, _ in selected])))
        args.out.write_text(dump(data), encoding="utf-8")
        print(f"wrote {args.out}: {len(data['items'])} items ({data['selection']})")
        return
    if args.command == "sheet":
        data = sheet(all_decisions())
        args.out.write_text(dump(data), encoding="utf-8")
        print(f"wrote {args.out}: " + ", ".join(f"{k} {v['sampled']} of {v['population']}"
                                                 for k, v in data["kinds"].items()))
        return
    items = (yaml.safe_load(args.sheet.read_text(encoding="utf-8")) or {})["items"]
    first = {d.ref: d for d in all_decisions(with_context=False)}
    rows, disagreements = agreement(items, load_review(args.review), first, recorded_first())
    print(table(rows))
    chunk = next(r for r in rows if r.kind == "chunk")
    if chunk.both_gold:
        print(f"\nchunk pairs both call gold: same pieces in {chunk.piece_agree} of {chunk.both_gold}")
    print(f"\n{len(disagreements)} disagreements:")
    print(dump(disagreements) if disagreements else "(none)")
    missing = unresolved(disagreements)
    print(f"unresolved (no entry in {RESOLUTIONS_PATH.name}): {', '.join(missing) or 'none'}")


if __name__ == "__main__":
    main()
