"""Orchestration: running the notebooks and checking what they stored (the top of the library, below the
command lines).

``reproduce``
    Executes every declared run headless into ``results/`` (``make reproduce``), each with provenance,
    in the order of the runs it reads.
``inputs``
    What a run depends on (its data, code closure, parameters, the results it reads) and whether it must
    execute again (its stamp).
``execution``
    One notebook executed headless (papermill) and written as ``.ipynb`` and ``.html``, volatile metadata stripped.
``notebooks``
    A notebook's source read as a notebook, and its parameters cell (with its declaration's overrides).
``expected``
    ``make check``: the latest results against ``results/expected.yaml`` (OK / OKish / FAIL).
``llm_runs``
    ``make llm-runs``: fills the missing LLM call records of the notebooks, resumably.
``llm_fill``
    The fill step of ``llm_runs``: each missing call made live (N in flight) and recorded as it completes.

What runs store is declared in :mod:`rag_lib.results`; how it is shown, in :mod:`rag_lib.presentation`.
"""
