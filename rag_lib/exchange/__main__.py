"""``python -m rag_lib.exchange``: the workbook's corpus, questions, rankings and answers in the ecosystem's
formats, and someone else's ranking diagnosed against the workbook's gold.

    python -m rag_lib.exchange beir OUT --lang en                 # corpus.jsonl, queries.jsonl, qrels/test.tsv
    python -m rag_lib.exchange run OUT.trec --retriever bm25     # a TREC run of one configuration
    python -m rag_lib.exchange ragas OUT.jsonl --answerer claims # shown answers as a Ragas EvaluationDataset
    python -m rag_lib.exchange ragchecker OUT.json               # the same as RAGChecker's input
    python -m rag_lib.exchange diagnose RUN.trec --lang en       # which layer fails, per question
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag_lib.core.config import shown_path
from rag_lib.core.errors import cli_errors

if TYPE_CHECKING:
    from rag_lib.pipeline.workbench import Workbench


def _workbench(args: argparse.Namespace) -> Workbench:
    """The batch's workbench, scored with the questions file when one is given (your corpus, your questions)."""
    from rag_lib.pipeline.workbench import Workbench  # imported when a command runs: --help stays quick

    questions = getattr(args, "questions", None)
    if questions is None:
        return Workbench(getattr(args, "batch", None))
    from rag_lib.pipeline.workbook import questions_workbench

    wb, yours = questions_workbench(args.batch, Path(questions))
    yours.check_language(args.lang)
    return wb


def _beir(args: argparse.Namespace) -> str:
    from rag_lib.exchange.beir import write_beir

    wb = _workbench(args)
    files = write_beir(Path(args.out), wb.chunks, wb.benchmark.questions(), args.lang)
    return (f"wrote {shown_path(files.corpus)}, {shown_path(files.queries)} and {shown_path(files.qrels)} "
            f"({wb.batch or wb.config.batch}, {args.lang}; qrels compiled for this batch's chunking)")


def _run(args: argparse.Namespace) -> str:
    from rag_lib.exchange.trec import write_run

    wb = _workbench(args)
    key = wb.resolve(args.retriever)
    rankings = wb.run(key, wb.benchmark.questions(), args.lang)
    tied = write_run(Path(args.out), rankings, args.tag or key.label.replace(":", "_"), args.depth, args.scores)
    note = (f"; retriever scores tie inside the depth for {len(tied)} queries (other tools break ties their own "
            "way; --scores rank keeps the workbook's order)" if tied else "")
    return f"wrote {shown_path(Path(args.out))}: {len(rankings)} queries, {key.label}, depth {args.depth}{note}"


def _answers(args: argparse.Namespace) -> str:
    from rag_lib.core.io import write_json, write_jsonl
    from rag_lib.exchange.answers import answer_samples, ragas_rows, ragchecker_input
    from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
    from rag_lib.results.local_llm import LocalLLMResult

    stored = LocalLLMResult.read(LOCAL_LLM.name, needed_by="the answers to export")
    if args.answerer not in stored.answers:
        raise ValueError(f"no answerer {args.answerer!r} in {LOCAL_LLM.name}; it has {sorted(stored.answers)}")
    runs = stored.answers[args.answerer].runs
    run = f"{args.lang}:{args.gate}"
    if run not in runs:
        gates = sorted(name.partition(":")[2] for name in runs if name.startswith(f"{args.lang}:"))
        raise ValueError(f"{args.answerer} has no run {run!r}; its {args.lang} gates are {gates}")
    wb = _workbench(args)
    retriever = stored.retriever

    export = answer_samples(runs[run].rows, wb.benchmark.questions(), args.lang,
                            lambda text: wb.evidence(wb.rank(text, retriever), stored.k), lambda cid: wb.by_id[cid])
    out = Path(args.out)
    if args.command == "ragas":
        write_jsonl(out, ragas_rows(export.samples))
    else:
        write_json(out, ragchecker_input(export.samples))
    return (f"wrote {shown_path(out)}: {args.answerer}, {run}, Top-{stored.k} of {retriever} as retrieved "
            f"context; {export.note()}")


def _diagnose(args: argparse.Namespace) -> str:
    from rag_lib.evaluation.stats import wilson_text
    from rag_lib.exchange.diagnosis import diagnose_run, layer_shares, unranked
    from rag_lib.exchange.trec import read_run

    wb = _workbench(args)
    run = read_run(Path(args.run))
    k = wb.config.top_k(args.k)
    questions = wb.benchmark.questions()
    rows = diagnose_run(run, questions, k, {c.id for c in wb.embeddable})
    lines = [f"{shown_path(run.path)} (tag {run.tag}, depth {run.depth}) against the gold of "
             f"{wb.batch or wb.config.batch}, k = {k}: {len(rows)} answerable questions diagnosed"]
    lines += [f"  {r.question:<8} {r.layer:<14} piece ranks " + " ".join("—" if x is None else str(x)
                                                                        for x in r.piece_ranks) for r in rows]
    lines += ["layer shares (Wilson 95%):"]
    lines += [f"  {s.layer:<14} {s.count}/{s.n} {wilson_text(s.count, s.n)}" for s in layer_shares(rows)]
    missing = unranked(run, questions)
    if missing:
        lines.append(f"not ranked by the run (not diagnosed): {', '.join(missing)}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rag_lib.exchange", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--lang", choices=("zh", "en"), default="en", help="which language's questions")
        return cmd

    beir = command("beir", "write corpus.jsonl, queries.jsonl and qrels/test.tsv under OUT")
    beir.add_argument("out", metavar="OUT")
    run = command("run", "write one configuration's rankings of the benchmark as a TREC run file")
    run.add_argument("out", metavar="OUT.trec")
    run.add_argument("--retriever", default="dense", help="a configuration: dense[:EMBEDDER], bm25, hybrid[:EMBEDDER]")
    run.add_argument("--depth", type=int, default=100, help="documents per query (default 100)")
    run.add_argument("--scores", choices=("rank", "retriever"), default="rank",
                     help="rank-derived scores (default: every tool keeps the workbook's order) or the retriever's")
    run.add_argument("--tag", help="the run tag (default: the configuration)")
    for name in ("ragas", "ragchecker"):
        answers = command(name, f"write notebook 10's shown answers as {name}'s input")
        answers.add_argument("out", metavar="OUT")
        answers.add_argument("--answerer", default="claims", help="claims (default), narrowed, llm or extractive")
        answers.add_argument("--gate", default="ungated", help="which of the answerer's runs (default ungated)")
    diagnose = command("diagnose", "diagnose a TREC run over the exported corpus: which layer fails, per question")
    diagnose.add_argument("run", metavar="RUN.trec")
    diagnose.add_argument("--k", type=int, help="the Top-k (default retrieval.top_k)")
    for cmd in (beir, run, diagnose):
        cmd.add_argument("--batch", help="a snapshot batch (default snapshot.batch)")
        cmd.add_argument("--questions", metavar="FILE", help="your questions file (YAML or JSONL) on --batch, instead "
                                                             "of the benchmark")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handlers = {"beir": _beir, "run": _run, "ragas": _answers, "ragchecker": _answers, "diagnose": _diagnose}
    with cli_errors():
        print(handlers[args.command](args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
