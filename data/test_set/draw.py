"""Draw the pages of the sealed test set (issue #46 item 2) from the wide snapshot batch.

Run from the repository root:

    .venv/bin/python data/test_set/draw.py > data/test_set/drawn_pages.txt

Procedure (deterministic; no library state, no Python ``random``, so any Python version gives the
same list):

1. The population is every page of the wide batch (``kind: page`` in ``raw/manifest.json``, slug =
   path under ``src/content/docs/`` without ``.mdx`` and a trailing ``/index``) that has at least one
   chunk in the batch's ``chunks.jsonl`` (a page without chunks cannot carry a locator) and at least
   ``MIN_CHARS`` characters of chunk text in all: shorter pages are index pages that only list their
   children (``workers/configuration``, ``workers/runtime-apis/handlers``) or one-line API stubs
   (``workers/runtime-apis/nodejs/zlib``), with nothing a developer would ask about.
2. Excluded: the pages of the labelled (development) batch ``cloudflare-docs-2026-11-30``, and every
   page a development locator names (``data/benchmark/questions.yaml`` and
   ``data/benchmark/batches/<wide batch>.yaml``). The pipeline was built and tuned on those pages and
   their questions; the sealed set asks about the rest of the wide batch. (A fact that is also stated
   on an excluded page still gets a locator there: every copy counts.)
3. Each eligible page gets the key ``sha256(f"{SEED}|{page}")``; pages are ordered by that key
   (ascending hex) and the first ``N_DRAWN`` are drawn. Positions 1..N_ANSWERABLE give the pages the
   answerable questions are about (one question each, ``t01``…); the following N_UNANSWERABLE positions
   give the pages next to whose topics the unanswerable questions are written (``t45``…).

The output lists the population counts and each drawn page with its position, role and key prefix.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import yaml

SEED = 20261205
WIDE_BATCH = "cloudflare-docs-wide-2026-11-30"
DEV_BATCH = "cloudflare-docs-2026-11-30"
N_ANSWERABLE = 44
N_UNANSWERABLE = 22
N_DRAWN = N_ANSWERABLE + N_UNANSWERABLE
MIN_CHARS = 700

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "data" / "snapshots"
BENCHMARK = ROOT / "data" / "benchmark"


def slug(path: str) -> str:
    s = path.removeprefix("src/content/docs/").removesuffix(".mdx")
    return s.removesuffix("/index")


def manifest_pages(batch: str) -> list[str]:
    manifest = json.loads((SNAPSHOTS / batch / "raw" / "manifest.json").read_text(encoding="utf-8"))
    return sorted(slug(f["path"]) for f in manifest["files"] if f["kind"] == "page")


def chunk_chars(batch: str) -> dict[str, int]:
    """Characters of chunk text per page (pages with at least one chunk)."""
    chars: dict[str, int] = {}
    with open(SNAPSHOTS / batch / "chunks.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                chars[row["page"]] = chars.get(row["page"], 0) + len(row["text"])
    return chars


def dev_locator_pages() -> set[str]:
    pages: set[str] = set()
    questions = yaml.safe_load((BENCHMARK / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    for q in questions:
        for piece in q.get("pieces") or []:
            pages.update(loc["page"] for loc in piece["locators"])
    extra = yaml.safe_load((BENCHMARK / "batches" / f"{WIDE_BATCH}.yaml").read_text(encoding="utf-8"))
    pages.update(loc["page"] for loc in extra.get("locators") or [])
    return pages


def later_overlaps() -> set[str]:
    """Pages the development labels named only after the seal, with a recorded decision (overlaps.yaml)."""
    path = Path(__file__).with_name("overlaps.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return {o["page"] for o in (data or {}).get("overlaps") or []}


def key(page: str) -> str:
    return hashlib.sha256(f"{SEED}|{page}".encode()).hexdigest()


def draw() -> tuple[list[str], dict[str, int]]:
    wide = manifest_pages(WIDE_BATCH)
    chars = chunk_chars(WIDE_BATCH)
    dev_batch = set(manifest_pages(DEV_BATCH))
    dev_locators = dev_locator_pages() - later_overlaps()  # as the development labels were at the draw
    excluded = dev_batch | dev_locators
    eligible = [p for p in wide if chars.get(p, 0) >= MIN_CHARS and p not in excluded]
    counts = {
        "wide batch pages": len(wide),
        "without chunks": sum(p not in chars for p in wide),
        f"with chunks but under {MIN_CHARS} characters (outside the excluded pages)":
            sum(0 < chars.get(p, 0) < MIN_CHARS and p not in excluded for p in wide),
        "development batch pages": len(dev_batch),
        "pages named by development locators (outside the development batch)":
            len(dev_locators - dev_batch),
        "eligible": len(eligible),
    }
    return sorted(eligible, key=key)[:N_DRAWN], counts


def main() -> None:
    drawn, counts = draw()
    out = sys.stdout
    out.write(f"# sealed test set: pages drawn from {WIDE_BATCH} by data/test_set/draw.py\n")
    out.write(f"# seed {SEED}; order = sha256('{SEED}|<page>') ascending; first {N_DRAWN} drawn\n")
    for name, n in counts.items():
        out.write(f"# {name}: {n}\n")
    out.write("# position  role          key       page\n")
    for i, page in enumerate(drawn, 1):
        role = "answerable" if i <= N_ANSWERABLE else "unanswerable"
        out.write(f"{i:>3}  {role:<12}  {key(page)[:8]}  {page}\n")


if __name__ == "__main__":
    main()
