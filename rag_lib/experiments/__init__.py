"""One module per experiment: the logic behind each notebook, returning its typed result
(:mod:`rag_lib.workbook.experiment_results`).

Notebooks stay thin (parameters, a call into one of these modules, display); everything that
computes a figure lives here, where it is tested.
"""
