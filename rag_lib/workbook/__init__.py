"""The workbook around the pipeline: running notebooks, their stored results, and what reviewers read.

``reproduce``
    Executes every notebook headless into ``results/`` (``make reproduce``), each with provenance.
``results``
    The one reader of a run's ``results.json`` (typed views for what other runs and ``ask`` read).
``report`` / ``tables`` / ``figures``
    Report text, rank tables and plots, generated from the numbers of a run.
``expected``
    ``make check``: the latest results against ``results/expected.yaml`` (OK / OKish / FAIL).
``llm_runs``
    ``make llm-runs``: fills the missing LLM call records of the notebooks, resumably.
"""
