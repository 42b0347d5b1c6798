"""Each casebook experiment's ``report.md``, written by a tested function of its typed result and its Findings
(:data:`rag_lib.presentation.report.ReportFunction`): one module per experiment, named as its result module in
:mod:`rag_lib.results`, holding ``EXPERIMENT`` (imported from there) and ``report_markdown``. Notebooks hold no
template; ``tests/test_report_functions.py`` checks every module against the reports its runs wrote.
"""
