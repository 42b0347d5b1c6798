"""The workbook around the pipeline: running notebooks, their stored results, and what reviewers read.

``reproduce``
    Executes every notebook headless into ``results/`` (``make reproduce``), each with provenance.
``notebooks``
    A notebook's source read as a notebook, and its parameters cell (with ``workbook.yaml``'s overrides).
``results``
    The one reader of a run's ``results.json``, and :class:`~rag_lib.workbook.results.ExperimentResult`.
``experiment_results`` / ``mechanism_results``
    Each experiment's result as a frozen dataclass: stored as ``results.json``, read back typed.
``baseline``
    The baseline as 01 measured it (what the mechanism runs compare against), and its Q7 ranks as
    01, 05 and the mechanism runs stored them, and where they disagree.
``label_archive``
    The label-dependent figures of an earlier label version, shown beside the current ones (08).
``report`` / ``tables`` / ``figures``
    Report text, rank tables and plots, generated from the numbers of a run.
``expected``
    ``make check``: the latest results against ``results/expected.yaml`` (OK / OKish / FAIL).
``llm_runs``
    ``make llm-runs``: fills the missing LLM call records of the notebooks, resumably.
"""
