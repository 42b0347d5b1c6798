"""What the runs store, typed: one frozen dataclass per experiment, written as ``results.json`` and read back.

``store``
    The one reader of a run's ``results.json``, and :class:`~rag_lib.results.store.ExperimentResult`
    (typed by :mod:`~rag_lib.results.typed_json`).
``runs``
    :class:`~rag_lib.results.runs.Experiment`, the declaration each experiment module holds as ``EXPERIMENT``
    (notebook, reads, result type, parameters, checked figures), and the runs they declare, in an order
    that respects their reads.
``corpus``, ``bakeoff``, ``q5``, ``q9a``, ``topk``, ``q7_diagnosis``, ``mechanism``, ``recovery``,
``summary``, ``local_llm``, ``chunking``, ``corpus_size``, ``ann``
    One module per experiment: its result type (the module names follow :mod:`rag_lib.experiments`);
    10's is split over ``local_llm``, ``local_llm_judge`` (selective answering) and ``local_llm_choice``.
``provenance``, ``retrieval_rows``, ``gate_rows``, ``answer_rows``, ``comparisons``
    Stored shapes several experiments share: what produced a ranking, which LLM, a Holm family; a Top-k
    row; the gates' figures on the benchmark and the LLM judge's; gate decisions and generation outcomes;
    a judged comparison row (11, 12).
``baseline``
    The baseline as 01 measured it (what the mechanism runs compare against), and its Q7 ranks as
    01, 05 and the mechanism runs stored them, and where they disagree.
``run_times``
    Each notebook's measured run time, cold and warm (``results/run_times.json``).
"""
