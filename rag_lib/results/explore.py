"""``09_explore``: the interactive explorer, which stores no result of its own."""

from __future__ import annotations

from rag_lib.results.runs import Experiment

EXPERIMENT = Experiment(
    "09_explore", None,
    reads=("10_local_llm",),  # where each benchmark question"s answer was lost
    # Headless: no live widget (nbclient can hang on a cell that displays one, jupyter/nbclient#312).
    parameters={"live": False},
)
