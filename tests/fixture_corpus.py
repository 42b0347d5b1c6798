"""A fixture corpus for orchestration tests: Q7's pages only, so a whole experiment runs in seconds."""

from __future__ import annotations

from pathlib import Path

import yaml

from rag_lib.benchmark import load_benchmark
from rag_lib.benchmark.parse import DEFAULT_PATH
from rag_lib.corpus import load_chunks
from rag_lib.pipeline.workbench import Workbench


def q7_pages_workbench(folder: Path) -> Workbench:
    """The seven pages Q7's gold is on (about 100 chunks, not 391) and the answerable questions whose
    gold lies on them alone, resolved to those chunks; the reduced question file is written to ``folder``."""
    full = Workbench()
    pages = set(full.benchmark.by_casebook("Q7").pages)
    keep = {q.id for q in full.benchmark.questions(answerable=True) if set(q.pages) <= pages}
    data = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    data["questions"] = [q for q in data["questions"] if q["id"] in keep]
    path = folder / "questions.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    chunks = [c for c in load_chunks() if c.page in pages]
    return Workbench.over(chunks, load_benchmark(path, chunks=chunks))
