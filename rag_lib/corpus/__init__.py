"""The corpus stage: raw snapshot → normalized pages → chunks.

``snapshot``
    A batch of raw Cloudflare docs pages, its manifest and checksums (read only).
``normalize``
    MDX/Markdown → plain Markdown pages, with every removal and warning recorded.
``chunking``
    The structure-aware chunker (headings, code blocks, tables kept whole).
``chunkers``
    The chunking strategies compared in ``11_chunking`` (fixed, recursive, sentence, semantic).
``build``
    The pipeline over a batch (``python -m rag_lib.corpus build``) and the verified loaders
    (:func:`load_chunks`, :func:`load_pages`) that everything downstream reads through.
"""

from rag_lib.corpus.build import (
    DERIVED_FILE,
    Corpus,
    batch_summary,
    build_corpus,
    corpus_stats,
    load_chunks,
    load_pages,
    verify_derived,
    write_corpus,
)

__all__ = ["DERIVED_FILE", "Corpus", "batch_summary", "build_corpus", "corpus_stats", "load_chunks", "load_pages",
           "verify_derived", "write_corpus"]
