"""Label audit: chunks a reviewer should look at before trusting a gold piece.

For every gold piece of every answerable question the audit lists three kinds of candidate,
none of them gold yet:

``copy``
    A chunk whose plain text is (near-)identical to a gold chunk's (a partial rendered on several
    pages, a paragraph repeated). Similarity is difflib's ratio on the plain text.
``phrase``
    A chunk anywhere in the corpus that contains a locator's phrase (page and heading ignored).
``above``
    With rankings: a chunk ranked above the piece's first gold chunk (within ``max_rank``) that
    shares at least half of the piece's key terms (content terms of its ``what`` line and its
    locator phrases, light-stemmed as in the aspect gate).

``pool``
    With a pool (:mod:`rag_lib.labels.pool`, labels v3): every chunk in the Top-10 of any reported
    configuration (retriever, embedder, mechanism variant, phrasing, batch), shown with its pool sources.
    It is settled when a locator makes it gold for a piece, or a decision covers every piece.

A candidate is only a prompt for a decision. Decisions are recorded in
``data/benchmark/audit_decisions.yaml`` (labels v2) and ``data/benchmark/pool_decisions.yaml`` (labels
v3, the pool's candidates): question, piece, chunk, ``gold`` or ``not_gold``, reason; piece ``*`` with
``not_gold`` means not gold for any piece of the question. The audit shows each candidate's decision,
flags undecided ones, and flags a decision the labels do not carry out (a ``gold`` chunk the locators
do not resolve to, or a ``not_gold`` one they do).

Run it: ``python -m rag_lib.labels audit`` (``--question q07`` for one question,
``--no-rank`` to skip the retrieval part, which needs the default embedder).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag_lib.benchmark import LANGS, Benchmark, Piece, Question, plain_text
from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.corpus.structural_chunking import chunk_id_slug

DECISIONS_PATH = BENCHMARK_DIR / "audit_decisions.yaml"
POOL_DECISIONS_PATH = BENCHMARK_DIR / "pool_decisions.yaml"
DECISIONS_PATHS = (DECISIONS_PATH, POOL_DECISIONS_PATH)
ANY_PIECE = "*"  # a not_gold decision for every piece of the question (a pooled chunk that states none)
DECISIONS = ("gold", "not_gold")
COPY_SIMILARITY = 0.9
MAX_RANK = 20
MIN_SHARED = 0.5

_TERM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*|\d[\d,.]*")
# Words too common in this corpus to tell one fact from another (beyond the aspect gate's stopwords).
_GENERIC = frozenset({"worker", "workers", "cloudflare", "via", "file", "page", "project", "value", "values",
                      "configuration", "e.g", "per", "like", "any", "only", "once", "unlike"})


@dataclass(frozen=True)
class Decision:
    """A reviewer's call on one candidate chunk for one piece."""

    question: str
    piece: str
    chunk: str
    decision: str
    reason: str


@dataclass(frozen=True)
class Candidate:
    """One chunk the audit asks a reviewer to look at for one piece."""

    question: str
    piece: str
    chunk: str
    kind: str  # "copy" | "phrase" | "above"
    detail: str
    lang: str | None = None
    rank: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "piece": self.piece, "chunk": self.chunk, "kind": self.kind,
                "detail": self.detail, "lang": self.lang, "rank": self.rank}


# ----------------------------------------------------------------------------- decisions

def load_decisions(path: str | Path | Sequence[str | Path] = DECISIONS_PATHS) -> dict[tuple[str, str, str], Decision]:
    """The recorded decisions, keyed by ``(question, piece, chunk)``; several files are read as one.

    Raises
    ------
    BenchmarkError
        A malformed entry (the message names it and the fix), a ``*`` piece decided gold, or one key
        decided twice (in one file or across files).
    """
    if not isinstance(path, (str, Path)):
        merged: dict[tuple[str, str, str], Decision] = {}
        for one in path:
            for key, d in load_decisions(one).items():
                if key in merged:
                    raise BenchmarkError(f"{one}: {key} is decided twice (also in an earlier file). Fix: keep one.")
                merged[key] = d
        return merged
    path = Path(path)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    rows = data.get("decisions", []) if isinstance(data, Mapping) else None
    if not isinstance(rows, list):
        raise BenchmarkError(f"{path}: expected a mapping with a 'decisions' list. Fix: see the file's header.")
    out: dict[tuple[str, str, str], Decision] = {}
    for i, row in enumerate(rows):
        fields = ("question", "piece", "chunk", "decision", "reason")
        if not isinstance(row, Mapping) or any(not isinstance(row.get(f), str) or not row[f].strip() for f in fields):
            raise BenchmarkError(f"{path}: decision {i + 1} needs non-empty {', '.join(fields)}; got {row!r}. "
                                 "Fix: write every field.")
        if row["decision"] not in DECISIONS:
            raise BenchmarkError(f"{path}: decision {i + 1} is {row['decision']!r}. Fix: use one of {DECISIONS}.")
        if row["piece"] == ANY_PIECE and row["decision"] != "not_gold":
            raise BenchmarkError(f"{path}: decision {i + 1} is gold for piece '*'. Fix: name the piece it is gold for.")
        key = (row["question"], row["piece"], row["chunk"])
        if key in out:
            raise BenchmarkError(f"{path}: {key} is decided twice. Fix: keep one entry.")
        out[key] = Decision(*(str(row[f]).strip() for f in fields))
    return out


def unapplied(bench: Benchmark, decisions: Mapping[tuple[str, str, str], Decision],
              chunk_ids: Iterable[str]) -> list[str]:
    """Decisions the labels do not carry out, or that name an unknown question, piece or chunk.

    A decision about a chunk of a page this chunk set does not have belongs to another batch (the
    decisions file serves every batch) and is skipped here.
    """
    known = set(chunk_ids)
    pages = {chunk_id_slug(cid) for cid in known}
    problems = []
    for (qid, pid, cid), d in sorted(decisions.items()):
        if chunk_id_slug(cid) not in pages:
            continue
        try:
            q = bench[qid]
        except KeyError:
            problems.append(f"{qid} {pid} {cid}: no question {qid}")
            continue
        pieces = {p.id: ids for p, ids in zip(q.gold, q.pieces, strict=True)}
        if pid == ANY_PIECE:
            gold_for = [p for p, ids in pieces.items() if cid in ids]
            if cid not in known:
                problems.append(f"{qid} {pid} {cid}: no such chunk (chunk ids change with the chunker; re-audit)")
            elif gold_for:
                problems.append(f"{qid} {pid} {cid}: decided not_gold for every piece, but a locator of "
                                f"{', '.join(gold_for)} resolves to it")
        elif pid not in pieces:
            problems.append(f"{qid} {pid} {cid}: {qid} has no piece {pid}")
        elif cid not in known:
            problems.append(f"{qid} {pid} {cid}: no such chunk (chunk ids change with the chunker; re-audit)")
        elif d.decision == "gold" and cid not in pieces[pid]:
            problems.append(f"{qid} {pid} {cid}: decided gold, but no locator of {pid} resolves to it (add one)")
        elif d.decision == "not_gold" and cid in pieces[pid]:
            problems.append(f"{qid} {pid} {cid}: decided not_gold, but a locator of {pid} resolves to it")
    return problems


# ----------------------------------------------------------------------------- candidates

def key_terms(piece: Piece) -> list[str]:
    """Light-stemmed content terms of a piece's ``what`` line and locator phrases (each once)."""
    from rag_lib.evidence import ENGLISH_STOPWORDS, stem

    text = " ".join([piece.what, *(loc.phrase for loc in piece.locators)])
    out: list[str] = []
    for match in _TERM.finditer(plain_text(text)):
        word = match.group().lower().rstrip(".,")
        if len(word) < 2 or word in ENGLISH_STOPWORDS or word in _GENERIC:
            continue
        term = stem(word)
        if term not in out:
            out.append(term)
    return out


def _stems(chunk: Chunk) -> set[str]:
    from rag_lib.evidence import stem

    words = {m.group().lower().rstrip(".,") for m in _TERM.finditer(plain_text(chunk.embed_input))}
    return {stem(w) for w in words} | words


def copies(gold: Chunk, chunks: Sequence[Chunk], exclude: set[str],
           threshold: float = COPY_SIMILARITY) -> list[tuple[Chunk, float]]:
    """Chunks (not in ``exclude``) whose plain text is at least ``threshold`` similar to ``gold``'s."""
    target = plain_text(gold.text)
    out = []
    for chunk in chunks:
        if chunk.id in exclude or chunk.id == gold.id:
            continue
        other = plain_text(chunk.text)
        if not other or min(len(target), len(other)) / max(len(target), len(other)) < threshold:
            continue
        matcher = difflib.SequenceMatcher(None, target, other, autojunk=False)
        if matcher.real_quick_ratio() >= threshold and matcher.quick_ratio() >= threshold:
            ratio = matcher.ratio()
            if ratio >= threshold:
                out.append((chunk, round(ratio, 3)))
    return out


def piece_candidates(q: Question, piece: Piece, gold_ids: frozenset[str], chunks: Sequence[Chunk],
                     rankings: Mapping[str, Any] | None = None, max_rank: int = MAX_RANK) -> list[Candidate]:
    """Every candidate (copy, phrase, above) for one piece; one entry per (chunk, kind, language)."""
    by_id = {c.id: c for c in chunks}
    out: list[Candidate] = []
    seen: set[tuple[str, str]] = set()

    def add(cand: Candidate) -> None:
        key = (cand.chunk, cand.lang or "")  # a copy that also contains the phrase is listed once
        if key not in seen:
            seen.add(key)
            out.append(cand)

    for gid in sorted(gold_ids):
        for chunk, ratio in copies(by_id[gid], chunks, set(gold_ids)):
            add(Candidate(q.id, piece.id, chunk.id, "copy", f"similarity {ratio} to gold {gid}"))
    for loc in piece.locators:
        for chunk in chunks:
            if chunk.id not in gold_ids and loc.in_text(chunk):
                add(Candidate(q.id, piece.id, chunk.id, "phrase", f"contains {loc.phrase!r}"))
    terms = key_terms(piece) if rankings else []
    for lang, ranking in (rankings or {}).items():
        gold_ranks = [ranking.rank_of(cid) for cid in gold_ids if cid in ranking]
        first = min(gold_ranks) if gold_ranks else None
        limit = min(first - 1, max_rank) if first is not None else max_rank
        for rank, cid in enumerate(ranking.ids[:limit], 1):
            shared = [t for t in terms if t in _stems(by_id[cid])]
            if terms and len(shared) >= 2 and len(shared) / len(terms) >= MIN_SHARED:
                add(Candidate(q.id, piece.id, cid, "above", f"first gold rank {first}; shares "
                              f"{len(shared)}/{len(terms)} key terms: {', '.join(shared)}", lang, rank))
    return out


def pool_status(q: Question, cid: str, decisions: Mapping[tuple[str, str, str], Decision]
                ) -> tuple[str, list[str], Decision | None]:
    """How a pooled chunk stands for question ``q``: ``("gold", pieces, None)`` when locators resolve
    to it, ``("decided", [], decision)`` when a ``*`` decision or one per piece covers it, else
    ``("undecided", pieces decided so far, None)``."""
    gold = [p.id for p, ids in zip(q.gold, q.pieces, strict=True) if cid in ids]
    if gold:
        return "gold", gold, None
    if (q.id, ANY_PIECE, cid) in decisions:
        return "decided", [], decisions[q.id, ANY_PIECE, cid]
    per_piece = [decisions[q.id, p.id, cid] for p in q.gold if (q.id, p.id, cid) in decisions]
    if per_piece and len(per_piece) == len(q.gold):
        return "decided", [], per_piece[0]
    return "undecided", [d.piece for d in per_piece], None


def pool_rows(bench: Benchmark, pool: Any, decisions: Mapping[tuple[str, str, str], Decision],
              chunk_ids: Iterable[str], questions: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One row per pooled chunk of this chunk set (batch) per answerable question, with its pool sources.

    ``pool`` is a :class:`rag_lib.labels.pool.Pool`; chunks of another batch's pages are left out here.
    """
    known = set(chunk_ids)
    rows = []
    for q in bench.questions(answerable=True):
        if questions and q.id not in questions:
            continue
        for cid, hits in pool.candidates(q.id).items():
            if cid not in known:
                continue
            status, pieces, decided = pool_status(q, cid, decisions)
            rows.append({"question": q.id, "chunk": cid, "status": status, "pieces": pieces,
                         "decision": decided.decision if decided else None,
                         "reason": decided.reason if decided else None,
                         "best_rank": hits[0].rank, "n_sources": len(hits),
                         "sources": [f"{h.source.short()} #{h.rank}" for h in hits]})
    return rows


def audit(bench: Benchmark, chunks: Sequence[Chunk], rankings: Mapping[str, Mapping[str, Any]] | None = None,
          questions: Sequence[str] | None = None, decisions: Mapping[tuple[str, str, str], Decision] | None = None,
          max_rank: int = MAX_RANK, pool: Any = None) -> dict[str, Any]:
    """The audit of ``bench`` (resolved) as JSON-ready data.

    Parameters
    ----------
    rankings
        ``rankings[question_id][lang]`` is that question's full :class:`~rag_lib.retrieval.Ranking`;
        without it, ``above`` candidates are not looked for.
    questions
        Question ids to audit (default: every answerable question).
    decisions
        Recorded decisions (default: :func:`load_decisions`).
    pool
        A :class:`rag_lib.labels.pool.Pool`: its candidates are listed too (``pool`` rows), each with
        its sources; ``None`` leaves them out.
    """
    decisions = load_decisions() if decisions is None else decisions
    embeddable = [c for c in chunks if c.embeddable]
    wanted = set(questions) if questions else None
    unknown = sorted(wanted - {q.id for q in bench}) if wanted else []
    if unknown:
        raise BenchmarkError(f"no question {unknown[0]!r} in the benchmark. Fix: pass ids such as q07 or a18.")
    rows = []
    for q in bench.questions(answerable=True):
        if wanted is not None and q.id not in wanted:
            continue
        for piece, gold_ids in zip(q.gold, q.pieces, strict=True):
            for cand in piece_candidates(q, piece, gold_ids, embeddable, (rankings or {}).get(q.id), max_rank):
                decided = decisions.get((q.id, piece.id, cand.chunk)) or decisions.get((q.id, ANY_PIECE, cand.chunk))
                rows.append({**cand.to_json(), "decision": decided.decision if decided else None,
                             "reason": decided.reason if decided else None})
    pooled = [] if pool is None else pool_rows(bench, pool, decisions, (c.id for c in chunks), questions)
    return {"candidates": rows, "undecided": sum(r["decision"] is None for r in rows),
            "unapplied": unapplied(bench, decisions, (c.id for c in chunks)),
            "ranked": rankings is not None, "max_rank": max_rank,
            "pool": pooled, "pool_undecided": sum(r["status"] == "undecided" for r in pooled),
            "pooled": pool is not None}


def render(result: Mapping[str, Any], bench: Benchmark, pool_sources_shown: int = 4) -> str:
    """The audit as text, grouped by question and piece; pooled candidates per question, each with its
    first ``pool_sources_shown`` sources (best rank first)."""
    lines: list[str] = []
    by_piece: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in result["candidates"]:
        by_piece.setdefault((row["question"], row["piece"]), []).append(row)
    for (qid, pid), rows in by_piece.items():
        piece = next(p for p in bench[qid].gold if p.id == pid)
        lines.append(f"{qid} {pid} ({piece.what})")
        for r in rows:
            where = f" {r['lang']} rank {r['rank']}" if r["rank"] is not None else ""
            verdict = f"[{r['decision']}: {r['reason']}]" if r["decision"] else "[UNDECIDED]"
            lines.append(f"  {r['kind']:<6}{where} {r['chunk']}: {r['detail']} {verdict}")
    lines.append(f"{len(result['candidates'])} candidate(s), {result['undecided']} undecided"
                 + ("" if result["ranked"] else " (rankings skipped: --no-rank)"))
    by_question: dict[str, list[Mapping[str, Any]]] = {}
    for row in result.get("pool", []):
        by_question.setdefault(row["question"], []).append(row)
    for qid, rows in by_question.items():
        gold = sum(r["status"] == "gold" for r in rows)
        lines.append(f"{qid} pool: {len(rows)} candidate(s): {gold} gold by locators, "
                     f"{sum(r['status'] == 'decided' for r in rows)} decided not gold, "
                     f"{sum(r['status'] == 'undecided' for r in rows)} undecided")
        for r in rows:
            shown = ", ".join(r["sources"][:pool_sources_shown])
            extra = len(r["sources"]) - pool_sources_shown
            more = f" (+{extra} more)" if extra > 0 else ""
            if r["status"] == "gold":
                verdict = f"[gold: {', '.join(r['pieces'])}]"
            elif r["status"] == "decided":
                verdict = f"[{r['decision']}: {r['reason']}]"
            else:
                verdict = "[UNDECIDED" + (f"; decided for {', '.join(r['pieces'])}]" if r["pieces"] else "]")
            lines.append(f"  pool  {r['chunk']}: {r['n_sources']} source(s): {shown}{more} {verdict}")
    if result.get("pooled"):
        lines.append(f"pool: {len(result['pool'])} candidate(s), {result['pool_undecided']} undecided")
    if result["unapplied"]:
        lines.append("decisions the labels do not carry out:")
        lines.extend(f"  {p}" for p in result["unapplied"])
    return "\n".join(lines)


def rankings_for(bench: Benchmark, question_ids: Iterable[str], key: str = "dense",
                 languages: Sequence[str] = LANGS, batch: str | None = None) -> dict[str, dict[str, Any]]:
    """Full rankings of each question's own wording per language (default embedder, dense) on ``batch``."""
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench(batch)
    return {qid: {lang: wb.rank(bench[qid].text(lang), key) for lang in languages} for qid in question_ids}
