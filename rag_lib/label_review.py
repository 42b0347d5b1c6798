"""A second, blind pass over the benchmark's label decisions (issue 27, item 2).

Every label decision is enumerated by kind, a seeded random 20% of each kind is drawn, and the sample
is written as a **blind sheet**: what a reviewer needs to decide each item (question texts, piece
descriptions, the chunk or key fact to judge), never the first decision or its reason. The reviewer's
calls go into ``blind_review.yaml``; ``agreement`` compares them with the first decisions (Cohen's kappa
per kind, raw agreement, n) and lists the disagreements, each to be resolved in
``blind_review_resolutions.yaml``.

Kinds and their units
---------------------
``chunk``
    One (question, chunk) pair that the labels decide: a chunk a locator of some piece resolves to (on
    the labelled or the wide batch) is ``gold``; a chunk with only ``not_gold`` decisions
    (``audit_decisions.yaml``, ``pool_decisions.yaml``) is ``not_gold``. The pair, not (question, piece,
    chunk), is the unit, because most decisions are ``*`` (gold for no piece); the piece a reviewer
    names is compared separately among pairs both call gold.
``question``
    One question on one batch: ``answerable`` or ``unanswerable`` (``questions.yaml`` on the labelled
    batch; on the wide batch, each ``absent_review`` of the batch file: answered or still unanswerable).
``key_fact``
    One checkable fact of ``key_facts.yaml`` (one entry under a piece, with its alternatives): the first
    pass claims "a complete answer to this piece must state this, and any of these wordings states it;
    the source chunk states it" (``holds``). A reviewer says ``holds`` or ``fails``. Facts with
    ``checkable: false`` are a different decision (no string can check the piece) that cannot be shown
    without revealing it (they have no wording), so they are not sampled. Every first decision of this
    kind is ``holds``, so its kappa is 0 or undefined by construction; raw agreement is the figure.

Sampling: an item is drawn when its hash ``sha256(SEED|kind|key)`` is among the lowest
``round(FRACTION * n)`` of its kind; the sheet lists them in hash order, which is random. Hashing (not
a shuffled list) keeps an item's draw independent of which other items exist, so a relabelling that
adds or removes decisions changes the sample only at its edges. Sheet items carry ``ref`` (the hash) and
an opaque id, never the question id of a question item (``u03``/``n05`` would reveal the decision).

    python -m rag_lib.label_review sheet        # writes data/benchmark/blind_review_sheet.yaml
    python -m rag_lib.label_review agreement    # kappa per kind, disagreements, resolutions still missing
"""

from __future__ import annotations

import argparse
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag_lib.config import BENCHMARK_DIR

SEED = 20261202
FRACTION = 0.2
KINDS = ("question", "chunk", "key_fact")  # the sheet's order: questions first, so chunk items cannot hint them
LABELS = {"chunk": ("gold", "not_gold"), "question": ("answerable", "unanswerable"), "key_fact": ("holds", "fails")}
SHEET_PATH = BENCHMARK_DIR / "blind_review_sheet.yaml"
REVIEW_PATH = BENCHMARK_DIR / "blind_review.yaml"
RESOLUTIONS_PATH = BENCHMARK_DIR / "blind_review_resolutions.yaml"
CONTEXT_HITS = 5  # BM25 hits shown with a question item (a start for the reviewer, who may grep the pages)
# Fields that would give the first decision away; the sheet test checks none appears.
FORBIDDEN_FIELDS = frozenset({"first", "decision", "reason", "type", "answerable", "near_miss", "absent",
                              "notes", "locators", "compound", "gold", "answered", "casebook_ref", "checkable"})


@dataclass(frozen=True)
class LabelDecision:
    """One first-pass decision: its kind, a stable key, the label, where it comes from, and what to show.

    ``show`` holds the blind context (never the label); ``origin`` and ``detail`` are only for agreement.
    """

    kind: str
    key: str
    first: str
    origin: str
    show: Mapping[str, Any] = field(default_factory=dict)
    detail: str = ""

    @property
    def ref(self) -> str:
        return draw_hash(self.kind, self.key)


def draw_hash(kind: str, key: str, seed: int = SEED) -> str:
    """The item's draw position: ``sha256(seed|kind|key)``, first 12 hex digits."""
    return hashlib.sha256(f"{seed}|{kind}|{key}".encode()).hexdigest()[:12]


def sample(decisions: Iterable[LabelDecision], fraction: float = FRACTION,
           seed: int = SEED) -> dict[str, list[LabelDecision]]:
    """The drawn decisions per kind, in draw (random) order: ``round(fraction * n)`` of each kind's n."""
    by_kind: dict[str, list[LabelDecision]] = {}
    for d in decisions:
        by_kind.setdefault(d.kind, []).append(d)
    out = {}
    for kind, items in by_kind.items():
        keys = [d.key for d in items]
        dup = [k for k, n in Counter(keys).items() if n > 1]
        if dup:
            raise ValueError(f"{kind} decision {dup[0]!r} is enumerated twice")
        ordered = sorted(items, key=lambda d: (draw_hash(d.kind, d.key, seed), d.key))
        out[kind] = ordered[:round(fraction * len(items))]
    return out


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


# ------------------------------------------------------------------------------- enumeration
def _question_show(q: Any) -> dict[str, Any]:
    return {"zh": q.zh, "en": q.en}


def _pieces_show(q: Any) -> list[dict[str, str]]:
    return [{"piece": p.id, "what": p.what} for p in q.gold]


def _chunk_show(c: Any, batch: str) -> dict[str, Any]:
    return {"chunk": c.id, "batch": batch, "page": c.page, "heading": " > ".join(c.heading_path), "text": c.text}


def chunk_decisions(benches: Mapping[str, Any], chunks: Mapping[str, Mapping[str, Any]],
                    decided: Mapping[tuple[str, str, str], Any],
                    decided_in: Mapping[tuple[str, str, str], str]) -> list[LabelDecision]:
    """(question, chunk) decisions: gold where a locator resolves to the chunk on some batch, else not_gold.

    Parameters
    ----------
    benches
        Batch → the benchmark resolved on it (labelled batch first).
    chunks
        Batch → chunk id → chunk.
    decided, decided_in
        The recorded decisions (``load_decisions``) and the file each came from (``audit`` / ``pool``).
    """
    gold: dict[tuple[str, str], set[str]] = {}
    where: dict[str, str] = {}
    questions: dict[str, Any] = {}
    for batch, bench in benches.items():
        for q in bench:
            questions.setdefault(q.id, q)
            if not q.answerable:
                continue
            for piece, ids in zip(q.gold, q.pieces, strict=True):
                for cid in ids:
                    gold.setdefault((q.id, cid), set()).add(piece.id)
                    where.setdefault(cid, batch)
    origins: dict[tuple[str, str], set[str]] = {}
    for (qid, _pid, cid), _d in decided.items():
        origins.setdefault((qid, cid), set()).add(decided_in[(qid, _pid, cid)])
    out = []
    for qid, cid in sorted(set(gold) | set(origins)):
        batch = where.get(cid) or next((b for b in chunks if cid in chunks[b]), None)
        if batch is None:
            continue  # a decision about a chunk no batch has (the unapplied check reports it)
        q = questions[qid]
        label = "gold" if (qid, cid) in gold else "not_gold"
        origin = "+".join(sorted(origins.get((qid, cid), set()))) or "locator"
        show = {"question": qid, **_question_show(q), "pieces": _pieces_show(q),
                **_chunk_show(chunks[batch][cid], batch)}
        detail = ",".join(sorted(gold.get((qid, cid), set())))
        out.append(LabelDecision("chunk", f"{qid}|{cid}", label, origin, show, detail))
    return out


def question_decisions(bench: Any, labelled_batch: str,
                       reviews: Mapping[str, Mapping[str, Any]]) -> list[LabelDecision]:
    """Every question on the labelled batch, and each batch's ``absent_review`` (batch → question → review)."""
    out = [LabelDecision("question", f"{labelled_batch}|{q.id}", "answerable" if q.answerable else "unanswerable",
                         "questions.yaml", {"batch": labelled_batch, **_question_show(q)}) for q in bench]
    for batch, by_q in reviews.items():
        for qid, review in sorted(by_q.items()):
            out.append(LabelDecision("question", f"{batch}|{qid}", "answerable" if review.answered else "unanswerable",
                                     "batch absent_review", {"batch": batch, **_question_show(bench[qid])}))
    return out


def key_fact_decisions(bench: Any, facts: Any, chunks: Mapping[str, Any]) -> list[LabelDecision]:
    """Each checkable fact, keyed ``question|piece|n`` (n counts the piece's facts from 1, all of them)."""
    out = []
    seen: Counter[tuple[str, str]] = Counter()
    for f in facts.all_facts():
        seen[(f.question_id, f.piece)] += 1
        if not f.checkable:
            continue
        q = bench[f.question_id]
        what = next(p.what for p in q.gold if p.id == f.piece)
        src = chunks.get(f.source)
        show = {"question": q.id, **_question_show(q), "piece": f.piece, "what": what,
                "fact_any_of": list(f.alternatives), "source_chunk": f.source,
                "source_text": src.text if src is not None else "(not in the labelled batch)"}
        out.append(LabelDecision("key_fact", f"{f.question_id}|{f.piece}|{seen[(f.question_id, f.piece)]}",
                                 "holds", "key_facts.yaml", show))
    return out


def all_decisions(with_context: bool = True) -> list[LabelDecision]:
    """Every label decision of the benchmark, from the files as they are now.

    ``with_context`` adds BM25 hits to question items (slower: builds a BM25 index per batch).
    """
    from rag_lib.benchmark.batch_labels import load_batch_labels
    from rag_lib.config import default_batch
    from rag_lib.evaluation.key_facts import load_key_facts
    from rag_lib.label_audit import DECISIONS_PATH, POOL_DECISIONS_PATH, load_decisions
    from rag_lib.workbench import Workbench

    labelled = default_batch()
    wide = sorted(p.stem for p in (BENCHMARK_DIR / "batches").glob("*.yaml"))
    wbs = {labelled: Workbench(labelled), **{b: Workbench(b) for b in wide}}
    benches = {b: wb.benchmark for b, wb in wbs.items()}
    chunks = {b: wb.by_id for b, wb in wbs.items()}
    decided: dict[tuple[str, str, str], Any] = {}
    decided_in: dict[tuple[str, str, str], str] = {}
    for name, path in (("audit", DECISIONS_PATH), ("pool", POOL_DECISIONS_PATH)):
        for key, d in load_decisions(path).items():
            decided[key] = d
            decided_in[key] = name
    bench = benches[labelled]
    reviews = {b: dict(load_batch_labels(b).absent_review) for b in wide}
    questions = question_decisions(bench, labelled, reviews)
    if with_context:
        questions = [_with_hits(d, wbs[d.show["batch"]]) for d in questions]
    return [*questions, *chunk_decisions(benches, chunks, decided, decided_in),
            *key_fact_decisions(bench, load_key_facts(bench=bench), chunks[labelled])]


def _with_hits(d: LabelDecision, wb: Any) -> LabelDecision:
    ranking = wb.rank(d.show["en"], "bm25")
    hits = [{"chunk": cid, "heading": " > ".join(wb.by_id[cid].heading_path), "text": wb.by_id[cid].text[:1200]}
            for cid in ranking.ids[:CONTEXT_HITS]]
    return LabelDecision(d.kind, d.key, d.first, d.origin, {**d.show, "bm25_hits_en": hits}, d.detail)


# ------------------------------------------------------------------------------------- sheet
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
        "how": "python -m rag_lib.label_review sheet; judge into data/benchmark/blind_review.yaml by id",
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.label_review", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sheet", help=f"write the blind sheet ({SHEET_PATH.name})")
    s.add_argument("--out", type=Path, default=SHEET_PATH)
    g = sub.add_parser("agreement", help="kappa per kind against the first decisions; the disagreements")
    g.add_argument("--sheet", type=Path, default=SHEET_PATH)
    g.add_argument("--review", type=Path, default=REVIEW_PATH)
    args = parser.parse_args(argv)
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
