"""One module per experiment: the logic behind each notebook, returning its typed result
(one module per experiment in :mod:`rag_lib.results`).

Notebooks stay thin (parameters, a call into one of these modules, display); everything that
computes a figure lives here, where it is tested.
"""
