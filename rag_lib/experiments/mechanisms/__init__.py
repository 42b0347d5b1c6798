"""Q7 mechanisms (casebook section 05): one retrieval mechanism against the dense baseline.

Every mechanism is a set of **variants**; a variant turns a question text into a full ranking
(and says how many chunks go to generation: ``evidence_k``). For each variant we report

* where Q7's pieces C1–C4 first appear, for its three phrasings and each language;
* its effect on the answerable benchmark questions (hit@5, coverage@10, MRR, and coverage at
  the variant's own evidence size against the baseline's coverage@5), as paired differences
  against the baseline with bootstrap 95% intervals over questions.

The baseline is dense retrieval with the default embedder and k = ``retrieval.top_k`` (``config.yaml``), measured
once, by 01: a mechanism run pairs its variants with 01's stored per-question values
(:class:`~rag_lib.results.baseline.BaselineMeasures`), after checking they come from the same model
and inputs. The result has one uniform shape for every mechanism (see :func:`run_mechanism`), which the summary
notebook reads.

A mechanism is declared once, with its parameters written out (:func:`mechanism`); they go into
each run's provenance, ``python -m rag_lib.runner --list`` prints them, and an undeclared
name is an error. Adding a mechanism = one module in :mod:`.catalog` (an ``@mechanism`` builder) + one
run line in ``config.yaml``.

Layout: :mod:`.registry` (variants, the declaration and the baseline), :mod:`.catalog` (the
mechanisms), :mod:`.run` (measuring one mechanism), :mod:`.report` (its findings and tables).
"""

from __future__ import annotations

from rag_lib.experiments.mechanisms import catalog  # noqa: F401  (registers every declared mechanism)
from rag_lib.experiments.mechanisms.registry import (
    MECHANISM_REGISTRY,
    BaselineDense,
    BuildContext,
    FromSettings,
    LLMQueries,
    MechanismSpec,
    RankFailed,
    Variant,
    get_mechanism,
    mechanism,
)
from rag_lib.experiments.mechanisms.report import findings
from rag_lib.experiments.mechanisms.run import q7_piece_ranks, run_mechanism
from rag_lib.results.mechanism import mechanism_metrics

MECHANISMS = tuple(name for name, spec in MECHANISM_REGISTRY.items() if spec.casebook)  # those 06 runs

__all__ = ["MECHANISMS", "MECHANISM_REGISTRY", "BaselineDense", "BuildContext", "FromSettings",
           "LLMQueries", "MechanismSpec", "RankFailed", "Variant", "findings", "get_mechanism", "mechanism",
           "mechanism_metrics", "q7_piece_ranks", "run_mechanism"]
