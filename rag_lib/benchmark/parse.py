"""Reading ``questions.yaml``: every field checked, each error naming the question, the field and the fix."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rag_lib.benchmark.questions import (
    CASEBOOK_REFS,
    DEFAULT_PATH,
    MAX_PHRASE_CHARS,
    TYPES,
    Benchmark,
    Locator,
    Phrasing,
    Piece,
    Question,
)
from rag_lib.benchmark.resolve import resolve
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError

_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_PIECE_RE = re.compile(r"^C[1-9][0-9]*$")
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$")
_QUESTION_KEYS = {"id", "type", "compound", "zh", "en", "pieces", "phrasings", "casebook_ref", "notes", "absent",
                  "near_miss"}
_PIECE_KEYS = {"id", "what", "locators"}
_LOCATOR_KEYS = {"page", "heading", "phrase"}
_PHRASING_KEYS = {"id", "zh", "en", "source"}



# --------------------------------------------------------------------------- loading
def _fail(where: str, field_name: str, problem: str, fix: str) -> BenchmarkError:
    return BenchmarkError(f"{where}, field {field_name!r}: {problem}. Fix: {fix}")


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, key, f"expected non-empty text, got {value!r}", f"write the {key} text")
    return value.strip()


def _no_extra(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise _fail(where, extra[0], "unknown field", f"use only {sorted(allowed)} (check the spelling)")


def _parse_locator(raw: Any, where: str) -> Locator:
    if not isinstance(raw, Mapping):
        raise _fail(where, "locators", f"a locator must be a mapping, got {raw!r}", "write page/heading/phrase")
    _no_extra(raw, _LOCATOR_KEYS, where)
    page = _text(raw, "page", where)
    if page.endswith((".mdx", "/index")) or page.startswith("/") or not _SLUG_RE.match(page):
        raise _fail(
            where,
            "page",
            f"{page!r} is not a page slug",
            "use the path under src/content/docs/ without '.mdx', '/index' or a leading slash, "
            "e.g. 'workers/configuration/secrets'",
        )
    heading = raw.get("heading", [])
    if isinstance(heading, str):
        heading = [heading]
    if not isinstance(heading, list) or not all(isinstance(h, str) and h.strip() for h in heading):
        raise _fail(
            where,
            "heading",
            f"expected a list of heading texts, got {heading!r}",
            "write the heading path outermost first, e.g. ['Secrets', 'Local development']",
        )
    phrase = _text(raw, "phrase", where)
    if len(phrase) > MAX_PHRASE_CHARS:
        raise _fail(
            where,
            "phrase",
            f"{len(phrase)} characters long",
            f"use a short distinctive phrase (at most {MAX_PHRASE_CHARS} characters)",
        )
    return Locator(page, tuple(h.strip() for h in heading), phrase)


def _parse_piece(raw: Any, where: str, expected_id: str) -> Piece:
    if not isinstance(raw, Mapping):
        raise _fail(where, "pieces", f"a piece must be a mapping, got {raw!r}", "write id/what/locators")
    _no_extra(raw, _PIECE_KEYS, where)
    pid = raw.get("id")
    if pid != expected_id or not _PIECE_RE.match(str(pid)):
        raise _fail(where, "pieces.id", f"got {pid!r}, expected {expected_id!r}", "number pieces C1, C2, … in order")
    here = f"{where} piece {pid}"
    what = _text(raw, "what", here)
    locs = raw.get("locators")
    if not isinstance(locs, list) or not locs:
        raise _fail(here, "locators", "no locators", "give at least one page/heading/phrase locator")
    return Piece(pid, what, tuple(_parse_locator(loc, f"{here} locator {i + 1}") for i, loc in enumerate(locs)))


def _parse_question(raw: Any, index: int) -> Question:
    if not isinstance(raw, Mapping):
        raise BenchmarkError(
            f"questions[{index}] is {type(raw).__name__}, not a mapping. Fix: write it as id/type/zh/en/…"
        )
    qid = raw.get("id")
    if not isinstance(qid, str) or not _ID_RE.match(qid):
        raise _fail(f"questions[{index}]", "id", f"got {qid!r}", "use a lower-case id such as 'q07' or 'u01'")
    where = f"question {qid}"
    _no_extra(raw, _QUESTION_KEYS, where)
    qtype = raw.get("type")
    if qtype not in TYPES:
        raise _fail(where, "type", f"got {qtype!r}", f"use one of {list(TYPES)}")
    compound = raw.get("compound")
    if not isinstance(compound, bool):
        raise _fail(where, "compound", f"got {compound!r}", "write true or false")
    zh, en = _text(raw, "zh", where), _text(raw, "en", where)
    ref = raw.get("casebook_ref")
    if ref is not None and ref not in CASEBOOK_REFS:
        raise _fail(where, "casebook_ref", f"got {ref!r}", f"use one of {list(CASEBOOK_REFS)} or leave it out")
    notes = raw.get("notes", "") or ""
    if not isinstance(notes, str):
        raise _fail(where, "notes", f"got {type(notes).__name__}", "write notes as one text block")

    raw_pieces = raw.get("pieces", []) or []
    if not isinstance(raw_pieces, list):
        raise _fail(where, "pieces", f"got {type(raw_pieces).__name__}", "write a list of pieces")
    pieces = tuple(_parse_piece(p, where, f"C{i + 1}") for i, p in enumerate(raw_pieces))
    if qtype == "answerable" and not pieces:
        raise _fail(
            where,
            "pieces",
            "an answerable question has no gold pieces",
            "add the pieces, or mark it type: unanswerable",
        )
    if qtype == "unanswerable" and pieces:
        raise _fail(
            where,
            "pieces",
            "an unanswerable question has gold pieces",
            "remove the pieces, or mark it type: answerable",
        )
    if qtype == "answerable" and compound and len(pieces) < 2:
        raise _fail(where, "compound", "compound but only one piece", "add the other pieces or set compound: false")
    if qtype == "answerable" and not compound and len(pieces) > 1:
        raise _fail(
            where,
            "compound",
            f"{len(pieces)} pieces but compound: false",
            "set compound: true, or merge alternatives into one piece's locators",
        )

    near_miss = raw.get("near_miss", False)
    if not isinstance(near_miss, bool):
        raise _fail(where, "near_miss", f"got {near_miss!r}", "write true or false")
    if near_miss and (qtype != "unanswerable" or not notes.strip()):
        raise _fail(where, "near_miss", "a near miss must be unanswerable and say why in 'notes'",
                    "set type: unanswerable and write in notes where the topic is and why the fact is not")

    absent = raw.get("absent", []) or []
    if not isinstance(absent, list) or not all(isinstance(a, str) and a.strip() for a in absent):
        raise _fail(where, "absent", f"got {absent!r}", "write a list of strings no chunk may contain")
    if absent and qtype == "answerable":
        raise _fail(where, "absent", "only unanswerable questions list absent strings", "remove 'absent'")

    phrasings = []
    for i, ph in enumerate(raw.get("phrasings", []) or []):
        here = f"{where} phrasing {i + 1}"
        if not isinstance(ph, Mapping):
            raise _fail(here, "phrasings", f"got {ph!r}", "write id/zh/en")
        _no_extra(ph, _PHRASING_KEYS, here)
        pid = ph.get("id")
        if not isinstance(pid, str) or not _ID_RE.match(pid):
            raise _fail(here, "id", f"got {pid!r}", "use a lower-case id such as 'terms'")
        phrasings.append(Phrasing(pid, _text(ph, "zh", here), _text(ph, "en", here), str(ph.get("source", ""))))
    dup = [k for k, n in Counter(p.id for p in phrasings).items() if n > 1]
    if dup:
        raise _fail(where, "phrasings", f"phrasing id {dup[0]!r} repeats", "give each phrasing its own id")

    return Question(
        qid, qtype, compound, zh, en, pieces, tuple(phrasings), ref, notes.strip(), tuple(a.strip() for a in absent),
        near_miss,
    )


def parse_benchmark(data: Any, path: Path | None = None) -> Benchmark:
    """Validate the parsed YAML document and build a :class:`Benchmark` (labels only, unresolved)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise BenchmarkError(
            f"{path or 'benchmark'}: expected a mapping with a 'questions' list. "
            "Fix: see data/benchmark/README.md for the file layout."
        )
    questions = tuple(_parse_question(raw, i) for i, raw in enumerate(data["questions"]))
    dup = [k for k, n in Counter(q.id for q in questions).items() if n > 1]
    if dup:
        raise BenchmarkError(f"question {dup[0]}, field 'id': used more than once. Fix: give each question its own id.")
    refs = [q.casebook_ref for q in questions if q.casebook_ref]
    dup_refs = [k for k, n in Counter(refs).items() if n > 1]
    if dup_refs:
        raise BenchmarkError(f"casebook_ref {dup_refs[0]} is on more than one question. Fix: keep it on one.")
    return Benchmark(questions, path, str(data.get("snapshot", "")))



def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML file at ``path``; a missing file or bad syntax raises :class:`BenchmarkError`
    naming ``what`` (e.g. "benchmark file") and the fix."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError as exc:
        raise BenchmarkError(f"{what} {path} does not exist. Fix: pass the right path.") from exc
    except yaml.YAMLError as exc:
        raise BenchmarkError(f"{path} is not valid YAML ({exc}). Fix: correct the syntax at that line.") from exc


def load_benchmark(path: str | Path | None = None, chunks: Sequence[Chunk] | None = None) -> Benchmark:
    """Load and validate the benchmark; with ``chunks``, also resolve its gold pieces to chunk ids.

    Parameters
    ----------
    path
        The YAML file; defaults to ``data/benchmark/questions.yaml``.
    chunks
        The chunk set the benchmark is scored against. Without it, ``Question.pieces`` is unavailable.

    Raises
    ------
    BenchmarkError
        The file is missing or malformed (the message names the question and field), or a
        locator resolves to nothing.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    bench = parse_benchmark(read_yaml(path, "benchmark file"), path)
    return resolve(bench, chunks) if chunks is not None else bench
