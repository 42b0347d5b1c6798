"""The corpus stage: raw snapshot → normalized pages → chunks.

``snapshot``
    A batch of raw source files (the Cloudflare docs' MDX, or imported documents), its manifest and checksums.
``normalize``
    MDX/Markdown → plain Markdown pages, with every removal and warning recorded.
``chunking``
    The structure-aware chunker (headings, code blocks, tables kept whole).
``chunkers``
    The chunking strategies compared in ``11_chunking`` (fixed, recursive, sentence, semantic).
``build``
    The pipeline over a batch (``python -m rag_lib.corpus build``) and the verified loaders
    (:func:`load_chunks`, :func:`load_pages`) that everything downstream reads through.
``importing``, ``importer``
    Your documents as a new batch (``python -m rag_lib corpus import``): a reader per format, the parser's
    warnings, the staged raw layer.
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
