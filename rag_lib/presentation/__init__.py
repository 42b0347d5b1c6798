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
``side_by_side``
    08's Q7 side-by-side rows with their marks (bold inside the Top-10, ``≈`` for a tie at the cut), rendered
    from the stored rows for its report, its notebook and the README's headline.
"""
