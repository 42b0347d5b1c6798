"""A documents batch's files parsed into pages, and the import's report (what the parser may have damaged).

``python -m rag_lib.corpus build`` calls :func:`document_pages` for a batch whose manifest says
``"format": "documents"``: each file is read again from ``raw/`` (checked against its sha256 first) by its
format's reader. The report, ``import_report.json`` and ``parse_sample.html`` at the batch's root, lists the
warnings of every file and shows a sample of parsed documents beside their source.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from rag_lib.core.documents import NormalizedPage
from rag_lib.core.io import write_json, write_text
from rag_lib.corpus.importing.checks import ParseWarning, corpus_warnings, document_warnings
from rag_lib.corpus.importing.readers import ParsedDocument, decode, parse_beir, parse_file
from rag_lib.corpus.snapshot import Snapshot

SAMPLE_SIZE = 6


def parse_snapshot(snapshot: Snapshot, progress: Callable[[int, int], None] | None = None) -> list[ParsedDocument]:
    """Every document of a documents batch, in manifest order; slugs made unique (``a`` and ``a.pdf``)."""
    docs: list[ParsedDocument] = []
    for i, f in enumerate(snapshot.files, 1):
        data = (snapshot.raw_dir / f.path).read_bytes()
        relative = f.path.removeprefix("files/")
        kind = f.format or ""
        docs.extend(parse_beir(data, relative) if kind == "beir" else [parse_file(data, relative, kind)])
        if progress:
            progress(i, len(snapshot.files))
    seen: Counter[str] = Counter()
    unique = []
    for doc in docs:  # the source named as the manifest names it (files/…), the slug made unique
        seen[doc.slug] += 1
        slug = doc.slug if seen[doc.slug] == 1 else f"{doc.slug}-{seen[doc.slug]}"
        unique.append(replace(doc, source=f"files/{doc.source}", slug=slug))
    return unique


def parsed_pages(snapshot: Snapshot, progress: Callable[[int, int], None] | None = None
                 ) -> tuple[list[ParsedDocument], list[ParseWarning], list[NormalizedPage]]:
    """A documents batch read, checked and made into pages: what the build uses and the import also reports."""
    docs = parse_snapshot(snapshot, progress)
    warnings = all_warnings(docs)
    return docs, warnings, document_pages(snapshot, docs, warnings)


def document_pages(snapshot: Snapshot, docs: Sequence[ParsedDocument],
                   warnings: Sequence[ParseWarning] = ()) -> list[NormalizedPage]:
    urls = {f.path: f.url or "" for f in snapshot.files}
    by_doc: dict[str, list[str]] = {}
    for w in warnings:
        by_doc.setdefault(w.document, []).append(f"{w.check}: {w.detail}")
    return [NormalizedPage(slug=d.slug, path=d.source, title=d.title,
                           url=urls.get(d.source.split("#")[0], d.slug), markdown=d.markdown,
                           warnings=tuple(by_doc.get(d.source, ())))
            for d in docs]


def all_warnings(docs: Sequence[ParsedDocument]) -> list[ParseWarning]:
    return [w for d in docs for w in document_warnings(d)] + corpus_warnings(docs)


def write_report(root: Path, docs: Sequence[ParsedDocument], warnings: Sequence[ParseWarning]) -> Path:
    """``import_report.json`` (counts, every warning) and ``parse_sample.html`` (source beside parsed text for
    the documents with the most warnings, then the first ones); returns the sample page."""
    counts = Counter(w.check for w in warnings)
    write_json(root / "import_report.json", {
        "documents": len(docs), "formats": dict(Counter(d.format for d in docs)),
        "warnings_by_check": dict(sorted(counts.items())),
        "warnings": [{"document": w.document, "check": w.check, "detail": w.detail} for w in warnings]})
    per_doc = Counter(w.document for w in warnings)
    sample = sorted(docs, key=lambda d: -per_doc[d.source])[:SAMPLE_SIZE // 2]
    sample += [d for d in docs if d not in sample][:SAMPLE_SIZE - len(sample)]
    sections = []
    for d in sample:
        raw_path = d.source.split("#")[0]
        if d.format in ("html", "pdf"):  # the file itself, as a browser shows it (sandboxed: no scripts run)
            left = f"<iframe sandbox src='raw/{html.escape(raw_path)}'></iframe>"
        else:
            raw = root / "raw" / raw_path
            left = f"<pre>{html.escape(decode(raw.read_bytes(), d.source)[:6000] if raw.is_file() else '')}</pre>"
        notes = "".join(f"<li>{html.escape(w.check)}: {html.escape(w.detail)}</li>"
                        for w in warnings if w.document == d.source) or "<li>no warning</li>"
        sections.append(f"<h2>{html.escape(d.source)} ({d.format})</h2><ul>{notes}</ul><div class='pair'>"
                        f"{left}<pre>{html.escape(d.markdown[:6000])}</pre></div>")
    page = ("<!doctype html><meta charset='utf-8'><title>Parsed documents beside their source</title><style>"
            "body{font-family:sans-serif;margin:1em}.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}"
            "pre,iframe{background:#f6f6f6;height:40em;border:1px solid #ddd}pre{white-space:pre-wrap;padding:.5em;"
            "overflow:auto;font-size:12px;margin:0}iframe{width:100%}"
            "</style><h1>Parsed documents beside their source</h1><p>Left: the source file as a browser shows it "
            "(HTML, PDF) or as written; right: the Markdown the chunker reads. Every warning: import_report.json.</p>"
            + "".join(sections))
    write_text(root / "parse_sample.html", page)
    return root / "parse_sample.html"
