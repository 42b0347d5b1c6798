"""Command line for one-off questions on the default configuration.

    python -m rag_lib rank "怎么给 Pages Functions 配置 R2 绑定？"       # ranked evidence (+ gold pieces if labelled)
    python -m rag_lib rank q07 --lang en                               # a benchmark id: its gold pieces marked
    python -m rag_lib rank --list                                      # every benchmark id with its question
    python -m rag_lib ask  "How do I add a secret for production?"   # evidence, gate decision, cited answer
    python -m rag_lib corpus import DOCS/ --name NAME --source "…" --licence "…"  # your documents, a new batch

``ask`` exits 0 when answered (every citation verified), 3 when declined, 4 when the answer is
withheld because citations failed (support policy ``verified-citations-only``), 2 on an error.
LLM calls made here are recorded in a scratch folder (``.cache/llm_calls_adhoc``) unless
``--record-to-results``; recorded calls are replayed (marked REPLAYED) unless ``--live``.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from typing import Any

from rag_lib.core.errors import EXIT_ERROR, cli_errors, printable

EXIT_CODES = {"answered": 0, "error": EXIT_ERROR, "declined": 3, "withheld": 4}


def _say(text: str, err: bool = False) -> None:
    from rag_lib.core.redaction import redact_text

    print(printable(redact_text(text)[0]), file=sys.stderr if err else sys.stdout)


def first_embedding_note(wb: Any, key: str) -> str | None:
    """The line to show before the corpus is embedded for the first time (minutes on 2 cores); ``None``
    when its vectors are cached, the retriever embeds nothing, or ``RAG_PROGRESS=0``.

    The embedding store's bar follows on a terminal; this line also shows where stderr is a log.
    """
    from rag_lib.core.config import progress_bars, shown_path

    embedder_name = wb.resolve(key).embedder
    if embedder_name is None or not progress_bars():
        return None
    embedder = wb.embedder(embedder_name)
    if wb.store.path_for(embedder).is_file():
        return None
    computed = embedder.unpinned([c.embed_input for c in wb.embeddable], "document")
    if not computed:  # every vector is read from data/vectors: nothing to wait for
        return None
    total = len(wb.embeddable)
    return (f"first run: embedding {computed} of the corpus's {total} chunks with {embedder.name} (the rest are "
            f"pinned in data/vectors), once (minutes on 2 cores; cached in {shown_path(wb.store.root)}) …")


def _rank(args: argparse.Namespace) -> int:
    from rag_lib.pipeline.explain import benchmark_listing, explain
    from rag_lib.pipeline.workbench import Workbench

    if args.list:
        _say(benchmark_listing(Workbench(), args.lang))
        return 0
    if args.question is None:
        raise ValueError("rank needs a question (text, or a benchmark id such as q07); --list prints the ids.")
    if args.show is not None and args.show < 1:  # head(-380) would print all but 380 rows
        raise ValueError(f"--show must be a number of rows of 1 or more; got {args.show}.")
    wb = Workbench()
    note = first_embedding_note(wb, args.retriever)
    if note:
        _say(note, err=True)
    result = explain(printable(args.question), key=args.retriever, k=args.k, lang=args.lang, workbench=wb)
    _say(result.to_string(rows=args.show, width=None if args.wide else 100))
    return 0


def _ask(args: argparse.Namespace) -> int:
    from rag_lib.pipeline.answer import answer_question, build_answerer, cli_recorder
    from rag_lib.pipeline.explain import resolve_question
    from rag_lib.pipeline.workbench import Workbench

    wb = Workbench()
    config = wb.config  # the workbook's, read now (RunConfig.from_settings())
    question, _ = resolve_question(wb, printable(args.question), args.lang)
    # No --generator: the local model when it is installed (the narrowed pipeline), else extractive.
    name = args.generator or (None if config.generator == "extractive" else config.generator)
    backend = (name or config.llm_tasks.get("answer_narrowed", "")).partition(":")[0]
    kwargs: dict[str, Any] = {}
    if backend in {"openai", "llama_cpp"}:
        kwargs["recorder"] = cli_recorder(live=args.live, record_to_results=args.record_to_results)
    elif args.live or args.record_to_results:
        raise ValueError("--live and --record-to-results apply to --generator openai or llama_cpp only.")
    if args.timeout is not None:
        if backend != "openai":
            raise ValueError("--timeout applies to --generator openai only.")
        if not math.isfinite(args.timeout) or args.timeout <= 0:
            raise ValueError(f"--timeout must be a finite, positive number of seconds; got {args.timeout}.")
        kwargs["timeout_s"] = args.timeout
    generator, note = build_answerer(name, wb, args.pipeline, **kwargs)
    if note:
        _say(note, err=True)
    if args.retriever == "dense" and (embedding := first_embedding_note(wb, args.retriever)):
        _say(embedding, err=True)
    outcome = answer_question(question, key=args.retriever, k=args.k, generator=generator, workbench=wb,
                              max_evidence_tokens=args.max_evidence_tokens)
    _say(outcome.render_text())
    return EXIT_CODES[outcome.status]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["corpus", "import"]:  # `python -m rag_lib corpus import PATH --name NAME`: a new batch
        from rag_lib.corpus.importer import main as import_main

        return import_main(argv[2:])
    parser = argparse.ArgumentParser(prog="python -m rag_lib", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("rank", "show the ranked evidence"), ("ask", "answer with verified citations")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("question", nargs="?" if name == "rank" else None,
                       help="question text, or a benchmark id such as q07 (rank --list prints them)")
        p.add_argument("--retriever", default="dense", help="dense | bm25 | hybrid | dense:<embedder>")
        p.add_argument("--k", type=int, default=None,
                       help="evidence cut, 1..number of chunks (default: retrieval.top_k in config.yaml)")
        p.add_argument("--lang", choices=["zh", "en"], default=None,
                       help="language of a benchmark id (default zh; free text is asked as written)")
        if name == "rank":
            p.add_argument("--list", action="store_true", help="print every benchmark id with its question and exit")
            p.add_argument("--show", type=int, default=None, help="rows to print (default: down to the deepest piece)")
            p.add_argument("--wide", action="store_true", help="print full page and heading columns (default: 100 "
                                                               "columns)")
        else:
            p.add_argument("--generator", default=None,
                           help="extractive | llama_cpp[:MODEL] | openai (default: the answer_narrowed model of "
                                "config.yaml when it is installed, else extractive)")
            p.add_argument("--pipeline", choices=["claims", "narrowed", "chunks"], default="claims",
                           help="how an LLM is fed and answers: the Top-k's most relevant sentences with ids, "
                                "answered as claims each citing its own sentences (default: notebook 10's blind "
                                "check finds its shown answers the most often true), the same sentences answered "
                                "as one text, or whole chunks (the original prompt)")
            p.add_argument("--live", action="store_true", help="call the model even when a recorded call exists")
            p.add_argument("--record-to-results", action="store_true",
                           help="record calls into results/llm_calls/ (default: a scratch folder in .cache/)")
            p.add_argument("--timeout", type=float, default=None,
                           help="seconds per attempt (openai; default models.yaml)")
            p.add_argument("--max-evidence-tokens", type=int, default=None,
                           help="cap on the evidence sent to a paid endpoint (estimated tokens; default 8000)")
    args = parser.parse_args(argv)
    if args.k is None:  # retrieval.top_k of config.yaml, read when the command runs
        from rag_lib.core.config import RunConfig

        args.k = RunConfig.from_settings().k
    if args.command == "ask" and args.max_evidence_tokens is None:
        from rag_lib.pipeline.answer import MAX_EVIDENCE_TOKENS

        args.max_evidence_tokens = MAX_EVIDENCE_TOKENS
    elif args.command == "ask" and args.max_evidence_tokens < 1:  # every paid call would be refused "over the cap"
        from rag_lib.pipeline.answer import MAX_EVIDENCE_TOKENS

        parser.error(f"--max-evidence-tokens must be 1 or more estimated tokens (default {MAX_EVIDENCE_TOKENS}); "
                     f"got {args.max_evidence_tokens}.")
    # Retry notices of the LLM backends go to stderr, so a slow endpoint is never silent.
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        with cli_errors():
            return _rank(args) if args.command == "rank" else _ask(args)
    except SystemExit as exc:  # cli_errors already printed the message
        return int(exc.code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
