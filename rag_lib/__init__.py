"""ragbench-workbook: a thin RAG pipeline for measuring where evidence ranks.

One module per pipeline stage; each stage has a small protocol and a registry of
backends. Configuration lives in :mod:`rag_lib.core.config`.
"""

__version__ = "0.1.0"
