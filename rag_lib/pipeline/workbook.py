"""A workbook: the diagnosis's corpus, questions, languages, Top-k and configurations, as one value.

Read from ``data/workbooks/<name>/workbook.yaml`` (layout: ``data/workbooks/README.md``) at an entry point (a
notebook's first cell, the runner) and passed down; :func:`open_workbook` builds its workbench over the batch,
scored with its questions. A batch that is not committed is fetched and imported first (:func:`ensure_corpus`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from rag_lib.benchmark.questions import LANGS, Benchmark
from rag_lib.core.config import DATA_DIR, RunConfig, batch_dir, cache_dir
from rag_lib.core.errors import SettingError
from rag_lib.corpus.build import load_chunks
from rag_lib.evaluation.your_questions import YourQuestions, load_questions
from rag_lib.generation import available_generators
from rag_lib.pipeline.workbench import Workbench

WORKBOOKS_DIR = DATA_DIR / "workbooks"
BENCHMARK = "benchmark"  # `questions: benchmark`: the workbook's own labelled benchmark
_KEYS = {"title", "batch", "questions", "languages", "k", "configurations", "corpus", "compare_with", "generator"}
DEFAULT_GENERATOR = "extractive"  # answers without an LLM: runs everywhere in seconds, and records no call


@dataclass(frozen=True)
class DebianSource:
    url: str
    sha256: str
    folder: str


@dataclass(frozen=True)
class Workbook:
    name: str
    title: str
    batch: str
    questions: Path | None  # None: the labelled benchmark
    languages: tuple[str, ...]
    k: int
    configurations: tuple[str, ...]
    source: str = ""
    licence: str = ""
    base_url: str | None = None
    deb: DebianSource | None = None
    compare_with: tuple[str, ...] = ()  # other workbooks whose W1 results W2 sets beside this one's
    generator: str = DEFAULT_GENERATOR  # who answers in W5: extractive, llama_cpp:MODEL or openai:MODEL

    @property
    def folder(self) -> Path:
        return WORKBOOKS_DIR / self.name


def workbook_names() -> list[str]:
    return sorted(p.parent.name for p in WORKBOOKS_DIR.glob("*/workbook.yaml"))


def load_workbook(name: str) -> Workbook:
    """``data/workbooks/<name>/workbook.yaml``, checked.

    Raises
    ------
    SettingError
        Naming the file, the field and the fix; an unknown workbook lists the known ones.
    """
    path = WORKBOOKS_DIR / name / "workbook.yaml"
    if not path.is_file():
        raise SettingError(f"no workbook {name!r} ({path} does not exist); the workbooks are {workbook_names()}")
    raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise SettingError(f"{path} must be a mapping of {sorted(_KEYS)}")

    def fail(field: str, problem: str, fix: str) -> SettingError:
        return SettingError(f"{path}, field {field!r}: {problem}. Fix: {fix}")

    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise fail(unknown[0], "unknown field", f"use only {sorted(_KEYS)}")
    for field in ("title", "batch", "questions"):
        if not isinstance(raw.get(field), str) or not raw[field].strip():
            raise fail(field, f"got {raw.get(field)!r}", f"write the {field} (see data/workbooks/README.md)")
    languages = raw.get("languages")
    if not isinstance(languages, list) or not languages or any(lang not in LANGS for lang in languages):
        raise fail("languages", f"got {languages!r}", f"a list of one or both of {list(LANGS)}")
    k = raw.get("k")
    if not isinstance(k, int) or k < 1:
        raise fail("k", f"got {k!r}", "a whole number of chunks, 1 or more")
    configurations = raw.get("configurations")
    if not isinstance(configurations, list) or not configurations:
        raise fail("configurations", f"got {configurations!r}", "a list such as [bm25, dense, hybrid]")
    corpus = raw.get("corpus") or {}
    deb = corpus.get("deb")
    compare_with = raw.get("compare_with") or []
    unknown_workbooks = sorted(set(map(str, compare_with)) - set(workbook_names()))
    if not isinstance(compare_with, list) or unknown_workbooks:
        raise fail("compare_with", f"got {compare_with!r}", f"a list of other workbooks: {workbook_names()}")
    generator = raw.get("generator", DEFAULT_GENERATOR)
    if not isinstance(generator, str) or generator.partition(":")[0] not in available_generators():
        raise fail("generator", f"got {generator!r}",
                   f"one of {available_generators()}, llama_cpp and openai with a model after a colon")
    questions = None if raw["questions"] == BENCHMARK else path.parent / raw["questions"]
    if questions is not None and not questions.is_file():
        raise fail("questions", f"{questions} does not exist", "write the questions file beside workbook.yaml")
    return Workbook(name, raw["title"], raw["batch"], questions, tuple(languages), k, tuple(map(str, configurations)),
                    str(corpus.get("source", "")), str(corpus.get("licence", "")), corpus.get("base_url"),
                    DebianSource(deb["url"], deb["sha256"], deb["folder"]) if deb else None, tuple(compare_with),
                    generator)


def ensure_corpus(workbook: Workbook, quiet: bool = False) -> None:
    """Fetch and import the workbook's batch when it is not there yet (its pinned Debian package)."""
    if (batch_dir(workbook.batch) / "chunks.jsonl").is_file():
        return
    if workbook.deb is None:
        raise SettingError(f"batch {workbook.batch} of workbook {workbook.name} is not in data/snapshots and the "
                           "workbook says no source to fetch it from; import it with `python -m rag_lib corpus import`")
    from rag_lib.corpus.importer import import_corpus
    from rag_lib.corpus.importing.debian import extract, fetch
    from rag_lib.corpus.importing.stage import SourceSpec

    downloads = cache_dir() / "debs"
    deb = fetch(workbook.deb.url, workbook.deb.sha256, downloads / workbook.deb.url.rsplit("/", 1)[-1])
    folder = extract(deb, workbook.deb.folder, downloads / f"{workbook.batch}-files")
    batch = import_corpus(folder, workbook.batch, SourceSpec(workbook.source, workbook.licence, workbook.base_url),
                          quiet=quiet)
    if not quiet:
        print(batch.summary())


@dataclass(frozen=True)
class OpenWorkbook:
    """A workbook ready to measure: its workbench over the batch, and the questions it is scored with."""

    workbook: Workbook
    workbench: Workbench
    questions: YourQuestions | None  # None: the labelled benchmark

    @property
    def benchmark(self) -> Benchmark:
        return self.workbench.benchmark

    def model(self, configuration: str) -> str:
        """A configuration's embedder as the page names it (:func:`described`)."""
        return described(self.workbench.provenance(configuration).get("embedder"))


def described(embedder: Mapping[str, Any] | None) -> str:
    """An embedder's provenance as a page names it: model (backend, version); "" for none (BM25)."""
    return "" if not embedder else f"{embedder['model']} ({embedder['backend']}, {embedder['version']})"


def questions_workbench(batch: str | None, path: Path,
                        config: RunConfig | None = None) -> tuple[Workbench, YourQuestions]:
    """The batch's workbench, scored with the questions file at ``path`` instead of the labelled benchmark."""
    chunks = load_chunks(batch)
    questions = load_questions(path, chunks)
    wb = Workbench.over(chunks, questions.benchmark, config=config)
    wb.batch = batch
    return wb, questions


def open_workbook(workbook: Workbook, config: RunConfig) -> OpenWorkbook:
    """The workbench of ``workbook`` (its batch, its k; everything else from ``config``)."""
    config = replace(config, batch=workbook.batch, k=workbook.k)
    if workbook.questions is None:
        return OpenWorkbook(workbook, Workbench(workbook.batch, config=config), None)
    wb, questions = questions_workbench(workbook.batch, workbook.questions, config)
    missing = sorted(set(workbook.languages) - set(questions.languages))
    if missing:
        raise SettingError(f"workbook {workbook.name} asks in {list(workbook.languages)}, but {workbook.questions} "
                           f"has no {missing} text; list only its languages in workbook.yaml")
    return OpenWorkbook(workbook, wb, questions)

