"""Your documents as a snapshot batch: files in any common format → raw copy with checksums → Markdown pages.

``readers``
    One reader per format (Markdown/MDX, HTML, plain text, PDF, BEIR ``corpus.jsonl``).
``html``
    HTML → Markdown (main content only; headings, lists, code, pipe tables).
``checks``
    Warnings per document about what silently hurts retrieval (empty, near-duplicate, flattened tables,
    interleaved columns, glued words, page furniture).
``stage``
    The raw layer of a new batch: files copied byte for byte, ``manifest.json`` with sha256, ``README.md``
    with source and licence.
``pages``
    A documents batch's files parsed into the pages the chunker reads (``python -m rag_lib.corpus build``
    runs it for such a batch), and the import's report: warnings per file and a sample of parsed documents
    beside their source.

:func:`rag_lib.corpus.importer.import_corpus` runs them in order (``python -m rag_lib corpus import``).
"""
