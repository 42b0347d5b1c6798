"""The sealed test set (data/test_set/, issue #46 item 2): intact, large enough, bilingual, and its labels hold
on the wide batch.

Only the project's loader and validator are used (``load_benchmark`` resolves every locator and checks every
``absent`` string; ``load_key_facts`` and ``source_problems`` check the key facts). Nothing here retrieves,
ranks or answers a question: the set is evaluated once per pipeline version, by hand-started runs recorded in
data/test_set/README.md, never by the test suite.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

from rag_lib.benchmark import LANGS, Benchmark, load_benchmark
from rag_lib.core.config import DATA_DIR, batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.io import read_jsonl
from rag_lib.evaluation.fact_matching import find_alternative
from rag_lib.evaluation.key_facts import KeyFacts, load_key_facts, source_problems

TEST_SET = DATA_DIR / "test_set"
QUESTIONS = TEST_SET / "questions.yaml"
KEY_FACTS = TEST_SET / "key_facts.yaml"
DRAWN = TEST_SET / "drawn_pages.txt"
SUMS = TEST_SET / "SHA256SUMS"
WIDE_BATCH = "cloudflare-docs-wide-2026-11-30"
WIDE_CHUNKS = batch_dir(WIDE_BATCH) / "chunks.jsonl"
SEALED_FILES = ("questions.yaml", "key_facts.yaml", "drawn_pages.txt")
MIN_QUESTIONS = 60
MIN_UNANSWERABLE_SHARE = 0.30

needs_chunks = pytest.mark.skipif(not WIDE_CHUNKS.exists(), reason=f"{WIDE_CHUNKS} not built")


@cache
def wide_chunks() -> tuple[Chunk, ...]:
    return tuple(Chunk.from_json(r) for r in read_jsonl(WIDE_CHUNKS))


@cache
def labels() -> Benchmark:
    """The test set, parsed and validated (not resolved)."""
    return load_benchmark(QUESTIONS)


@cache
def resolved() -> Benchmark:
    """The test set resolved on the wide batch: raises BenchmarkError if a locator matches no chunk or an
    ``absent`` string occurs in a chunk."""
    return load_benchmark(QUESTIONS, wide_chunks())


@cache
def key_facts() -> KeyFacts:
    return load_key_facts(KEY_FACTS, labels())


def _draw_module():
    spec = importlib.util.spec_from_file_location("sealed_test_set_draw", TEST_SET / "draw.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------ sealed
def test_sealed_files_match_their_sha256sums():
    lines = [ln for ln in SUMS.read_text(encoding="utf-8").splitlines() if ln.strip()]
    recorded = {}
    for ln in lines:
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](\S+)", ln)
        assert m, f"SHA256SUMS line is not in sha256sum format: {ln!r}"
        recorded[m.group(2)] = m.group(1)
    assert set(recorded) == set(SEALED_FILES), f"SHA256SUMS must list exactly {SEALED_FILES}"
    for name, digest in recorded.items():
        actual = hashlib.sha256((TEST_SET / name).read_bytes()).hexdigest()
        assert actual == digest, (
            f"data/test_set/{name} changed after sealing (sha256 {actual}, sealed {digest}). The test set is "
            "sealed: do not relabel it to fit a run; see data/test_set/README.md."
        )


def test_the_set_is_on_the_wide_batch():
    assert labels().snapshot == WIDE_BATCH


# ------------------------------------------------------------------------------------------ size and shape
def test_at_least_60_questions():
    assert len(labels()) >= MIN_QUESTIONS


def test_at_least_30_percent_unanswerable():
    bench = labels()
    unanswerable = bench.questions(answerable=False)
    assert len(unanswerable) / len(bench) >= MIN_UNANSWERABLE_SHARE


def test_every_question_has_both_languages():
    for q in labels():
        for lang in LANGS:
            assert q.text(lang).strip(), f"{q.id} has no {lang} text"
        assert re.search(r"[\u4e00-\u9fff]", q.zh), f"{q.id}: zh text has no Chinese"
        assert not re.search(r"[\u4e00-\u9fff]", q.en), f"{q.id}: en text has Chinese"


def test_ids_are_t_numbered_in_order():
    ids = [q.id for q in labels()]
    assert ids == [f"t{i:02d}" for i in range(1, len(ids) + 1)]


def test_unanswerable_questions_say_why():
    for q in labels().questions(answerable=False):
        assert q.notes, f"{q.id}: an unanswerable question needs notes (where the topic is, why the fact is not)"
        assert q.absent or q.near_miss, f"{q.id}: give absent strings or mark it near_miss"


# ------------------------------------------------------------------------------------------ labels hold
@needs_chunks
def test_every_locator_resolves_and_every_absent_string_is_absent():
    bench = resolved()  # raises BenchmarkError listing each failure
    for q in bench.questions(answerable=True):
        assert all(q.pieces), f"{q.id}: a piece resolved to no chunk"
    assert sum(len(q.absent) for q in bench) > 0


@needs_chunks
def test_every_answerable_question_has_key_facts_stated_in_its_gold_chunks():
    facts = key_facts()
    assert facts.unlabelled(labels()) == []
    assert source_problems(facts, resolved(), wide_chunks()) == []


def test_no_question_states_its_own_checkable_facts():
    bench = labels()
    for fact in key_facts().all_facts():
        if not fact.checkable:
            continue
        q = bench[fact.question_id]
        for lang in LANGS:
            hit = find_alternative(fact.alternatives, q.text(lang))
            assert hit is None, f"{fact.describe()}: {hit!r} already occurs in the {lang} question"


# ------------------------------------------------------------------------------------------ the draw
def test_drawn_pages_follow_the_seeded_order():
    draw = _draw_module()
    rows = [ln.split() for ln in DRAWN.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
    pages = [r[3] for r in rows]
    assert len(pages) == draw.N_DRAWN == len(labels())
    for position, role, prefix, page in rows:
        assert draw.key(page).startswith(prefix), f"{page}: key prefix {prefix} is not sha256('{draw.SEED}|{page}')"
        assert role == ("answerable" if int(position) <= draw.N_ANSWERABLE else "unanswerable")
    assert [draw.key(p) for p in pages] == sorted(draw.key(p) for p in pages)


def test_question_types_follow_the_drawn_roles():
    draw = _draw_module()
    for i, q in enumerate(labels(), 1):
        assert q.answerable == (i <= draw.N_ANSWERABLE), f"{q.id}: position {i} has the other role"


def test_drawn_pages_are_still_outside_the_development_labels():
    """Re-runs the draw. It fails if the development benchmark's labels now name a drawn page (or if the wide
    batch changed): then the sealed set overlaps the development set, and that has to be decided, not
    hidden."""
    draw = _draw_module()
    drawn, _ = draw.draw()
    listed = [ln.split()[3] for ln in DRAWN.read_text(encoding="utf-8").splitlines()
              if ln and not ln.startswith("#")]
    assert drawn == listed, (
        "data/test_set/draw.py no longer reproduces drawn_pages.txt: a development locator now names a drawn "
        f"page, or the wide batch changed. Pages that differ: {sorted(set(drawn) ^ set(listed))}"
    )


def test_every_recorded_overlap_is_a_development_locator_on_a_drawn_page():
    """overlaps.yaml may only excuse pages a development locator names now and the draw drew: a stale entry
    would let a later overlap through unnoticed."""
    draw = _draw_module()
    listed = {ln.split()[3] for ln in DRAWN.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")}
    for page in draw.later_overlaps():
        assert page in draw.dev_locator_pages() and page in listed, f"overlaps.yaml: {page} is no overlap; remove it"


def test_answerable_gold_sits_on_its_drawn_page():
    """Each answerable question is about its drawn page: at least one locator of its first piece is on it."""
    draw = _draw_module()
    listed = [ln.split()[3] for ln in DRAWN.read_text(encoding="utf-8").splitlines()
              if ln and not ln.startswith("#")]
    for q, page in zip(labels().questions(answerable=True), listed[: draw.N_ANSWERABLE], strict=True):
        assert page in q.pages, f"{q.id}: no locator on its drawn page {page}"


def test_unanswerable_notes_name_their_drawn_page():
    draw = _draw_module()
    listed = [ln.split()[3] for ln in DRAWN.read_text(encoding="utf-8").splitlines()
              if ln and not ln.startswith("#")]
    for q, page in zip(labels().questions(answerable=False), listed[draw.N_ANSWERABLE:], strict=True):
        assert page in q.notes, f"{q.id}: notes do not name its drawn page {page}"


def test_path_constants_point_into_the_repository():
    assert Path(QUESTIONS).is_file() and Path(KEY_FACTS).is_file() and Path(DRAWN).is_file()
