"""The ecosystem's formats, out and in: what an analyst's other tools read, and a ranking they made.

``beir``
    BEIR's layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``) for one language's questions
    over one chunking: what BEIR, ir_datasets, ranx and pytrec_eval read.
``trec``
    TREC run files (``qid Q0 docid rank score tag``): written per configuration, read back with errors that
    name the line.
``answers``
    Recorded answers as a Ragas ``EvaluationDataset`` (JSONL) and a RAGChecker input (JSON), for their
    LLM judges.
``diagnosis``
    Someone else's ranking (a TREC run over the exported corpus) diagnosed against the workbook's gold:
    which layer fails, per question.

``python -m rag_lib.exchange --help`` lists the commands.
"""
