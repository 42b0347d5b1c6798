"""What reviewers read, generated from the numbers of a run.

``report``
    Writes a run's ``results.json`` and ``report.md`` (findings from the stored figures), the results index,
    the README's headline block and the glossary.
``tables`` / ``figures`` / ``page``
    Rank tables, plots and the notebook page's sections.
``headline``
    The README's five findings, each one sentence from one run's stored results.
``label_archive``
    The label-dependent figures of an earlier label version, shown beside the current ones (08).
"""
