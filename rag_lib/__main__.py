"""Command line for one-off questions on the default configuration.

    python -m rag_lib rank "怎么给 Pages Functions 配置 R2 绑定？"       # ranked evidence (+ gold pieces if labelled)
    python -m rag_lib ask  "How do I add a secret for production?"   # evidence, gate decision, cited answer
"""

from __future__ import annotations

import argparse
import sys

from rag_lib.errors import WorkbookError


def _rank(args: argparse.Namespace) -> int:
    from rag_lib.explain import explain

    result = explain(args.question, key=args.retriever, k=args.k, lang=args.lang)
    print(result.summary())
    if result.pieces:
        for piece in result.pieces:
            print(f"  {piece['piece']}: rank {piece['rank']}, score {piece['score']}, "
                  f"gap to the top-{args.k} cut {piece['gap_to_top_k_cut']}")
    shown = result.top(args.show) if args.show else result.top()
    print(shown[["rank", "score", "piece", "page", "heading"]].to_string(index=False))
    return 0


def _ask(args: argparse.Namespace) -> int:
    from rag_lib.answer import answer_question

    outcome = answer_question(args.question, key=args.retriever, k=args.k, generator=args.generator)
    print(outcome.render_text())
    return 2 if outcome.gated.result.status == "error" else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("rank", "show the ranked evidence"), ("ask", "answer with verified citations")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("question", help="question text, or a benchmark id such as q07")
        p.add_argument("--retriever", default="dense", help="dense | bm25 | hybrid | dense:<embedder>")
        p.add_argument("--k", type=int, default=5, help="evidence cut (default 5, as in the casebook)")
        if name == "rank":
            p.add_argument("--lang", choices=["zh", "en"], default=None, help="language of a benchmark id")
            p.add_argument("--show", type=int, default=0, help="rows to print (default: down to the deepest piece)")
        else:
            p.add_argument("--generator", default=None, help="extractive | llama_cpp | openai (default: workbook.yaml)")
    args = parser.parse_args(argv)
    try:
        return _rank(args) if args.command == "rank" else _ask(args)
    except (WorkbookError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
