"""The two READMEs and the glossary, rewritten by ``make reproduce``: the repository's README opens with Q7 and
the five findings in short sentences (their figures in the index), ``results/README.md`` indexes every run (its
question, its answer in one line, its ``make check`` figures and run time), and the glossary page lists the terms
and how a table's headers map to results.json keys."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rag_lib.core.io import read_json, write_text
from rag_lib.presentation.report import q7_pieces_lines
from rag_lib.presentation.tables import Table, header_rules
from rag_lib.results.ann import EXPERIMENT as ANN
from rag_lib.results.chunking import EXPERIMENT as CHUNKING
from rag_lib.results.corpus_size import EXPERIMENT as CORPUS_SIZE
from rag_lib.results.run_times import load_run_times, run_time_text, totals_text
from rag_lib.results.store import RESULTS_FILE
from rag_lib.results.summary import EXPERIMENT as SUMMARY
from rag_lib.results.test_set import EXPERIMENT as TEST_SET

if TYPE_CHECKING:
    from rag_lib.results.runs import NotebookRun


def replace_block(text: str, name: str, body: str) -> str | None:
    """``text`` with the generated block ``<!-- name:start -->…<!-- name:end -->`` holding ``body``;
    ``None`` when ``text`` has no such block."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        return None
    before, rest = text.split(start, 1)
    return f"{before}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"


def q7_lines() -> list[str]:
    """Q7's question and its four gold pieces, in two lines (the README's opening)."""
    from rag_lib.benchmark import load_benchmark

    q7 = load_benchmark().by_casebook("Q7")
    return [f"**Q7**, the casebook's incomplete answer: “{q7.zh}” ({q7.en})", "",
            "Its four gold pieces: " + "; ".join(f"{p.id} {p.what}" for p in q7.gold) + "."]


def findings_block(root: Path, prefix: str = "", short: bool = False) -> str | None:
    """The opening findings (``headline_findings`` of 08's results), each linking to the rendered notebook
    that measured it, then Q7's picture; links start with ``prefix`` (``"results/"`` from the repository's
    README, nothing from ``results/README.md``). ``short``: the README's one sentence each and a link to the index,
    where a table gives each beside its figures and intervals. ``None`` before 08 has run."""
    path = root / SUMMARY.name / RESULTS_FILE
    if not path.is_file():
        return None
    stored = json.loads(path.read_text(encoding="utf-8"))
    found = stored.get("headline_findings", [])
    if short:  # the README: Q7 in two lines, one short sentence each, their figures in the index's table
        lines = [*q7_lines(), ""]
        lines += [f"- {f.get('short') or f['sentence']} ([{f['run']}]({prefix}notebooks/{f['run']}.html))"
                  for f in found]
        lines += ["", f"Each with its figures, intervals, denominators and caveats: [{prefix}README.md]"
                      f"({prefix}README.md#what-the-workbook-found)."]
    else:  # the index: the short sentence beside its full statement
        lines = [Table([{"finding": f.get("short") or "", "its figures, intervals and caveats": f["sentence"],
                         "notebook": f"[{f['run']}]({prefix}notebooks/{f['run']}.html)"} for f in found]).to_markdown()]
    picture = root / SUMMARY.name / "q7_ranks_zh.png"
    if picture.is_file():
        lines += ["", f"![Q7: first rank of each piece per configuration, Top-5 and Top-10 cuts marked]"
                      f"({prefix}{SUMMARY.name}/{picture.name})"]
    return "\n".join(lines) if lines else None


# The runs `make test` does not re-run under nbval (the Makefile's --ignore list; tests/test_pages.py checks it).
NOT_RETESTED = (CHUNKING.name, CORPUS_SIZE.name, ANN.name, TEST_SET.name)


def skipped_run_times(root: Path) -> str | None:
    """The README's sentence on the runs `make test` does not re-run, with their times from ``run_times.json``."""
    times = load_run_times(root)
    if not times:
        return None

    def took(run: str) -> str:
        parts = [f"{label} {block['runs'][run]} s" for label, block in times.items() if run in block.get("runs", {})]
        return ", ".join(parts) or "not timed yet"

    measured = "; ".join(f"{label}: {block.get('measured', '?')}, {block.get('cpus', '?')} cores"
                         for label, block in times.items())
    return ("`make test` re-runs every notebook except " + ", ".join(f"`{run}` ({took(run)})" for run in NOT_RETESTED)
            + f", whose committed results are checked by their own tests instead (times from "
            f"`results/run_times.json`, {measured}).")


def update_readme_headline(readme: Path, root: Path) -> bool:
    """Replace the README's generated blocks: the opening findings and the Q7 picture (from 08's
    ``results.json``) and the headline table (``08_summary/headline.md``), where both exist."""
    headline = root / SUMMARY.name / "headline.md"
    if not headline.is_file() or not readme.is_file():
        return False
    text = readme.read_text(encoding="utf-8")
    findings = findings_block(root, f"{root.name}/", short=True)  # the README sits beside results/
    if findings is not None:
        text = replace_block(text, "findings", findings) or text
    skipped = skipped_run_times(root)
    if skipped is not None:
        text = replace_block(text, "skipped-runs", skipped) or text
    body = (
        "Q7 (question in Chinese): first rank of each of its four gold pieces, per configuration, mechanism and\n"
        "recovery suggestion; **bold** = inside the Top-10 (or inside the evidence of a top-k row that sends more);\n"
        "≈ = a tie at the Top-10 cut (closer to it than the ranking's median gap between neighbouring scores;\n"
        "checked for the baseline and the mechanism rows, not the recovery rows). From\n"
        f"`results/{SUMMARY.name}/{RESULTS_FILE}`. Q7's pieces:\n\n" + q7_pieces_lines() + "\n\n"
        + headline.read_text(encoding="utf-8").strip()
    )
    replaced = replace_block(text, "headline", body)
    if replaced is None:
        return False
    write_text(readme, replaced)
    return True


_GLOSSARY = {
    "piece (C1, C2, …)": "one thing a complete answer needs, labelled per question in "
                         "`data/benchmark/questions.yaml`; any chunk a piece's locators name covers it. "
                         "The casebook questions' pieces are listed below.",
    "first rank of a piece": "the best rank of any chunk that covers it (1 = top); — = not ranked.",
    "hit@k": "1 when any gold chunk of a question (of any of its pieces) is in the Top-k, else 0 (ranx's "
             "hit_rate); averaged over questions. Every piece in the Top-k is the stricter layer in_top_k.",
    "coverage@k": "the share of a question's pieces covered in the Top-k, averaged over questions.",
    "coverage@evidence": "coverage at the number of chunks a variant sends to generation (5, or k for a top-k "
                         "variant), compared with the baseline's coverage@5.",
    "recall@5, MRR, nDCG@10": "chunk-level ranking metrics over the gold chunks (standard definitions, "
                              "`rag_lib.evaluation`).",
    "layer": "where retrieval fails, judged by a question's worst piece at k: in_top_k (every piece within k), "
             "just_outside (worst piece within 2k), ranked_deep (deeper), not_in_corpus (a piece has no chunk).",
    "gate": "decides before generation whether the evidence is enough: checklist (an oracle from the gold labels), "
            "floor (best score above a threshold), aspects (the question's key terms found in the evidence), "
            "floor+aspects (both), llm_judge (a local LLM reads question and evidence).",
    "refusal correctness": "the share of unanswerable questions a gate or generator declines.",
    "false-refusal rate": "the share of answerable questions with complete evidence that a gate declines.",
    "answer correctness": "an answer states every checkable key fact of its question "
                          "(`data/benchmark/key_facts.yaml`).",
    "citation validity": "the share of cited quotes found word for word in the chunk they cite; it says the "
                         "quote exists, not that it supports the answer.",
    "95% CI, p_Holm": "paired interval over questions (McNemar's exact test for binary outcomes, else a bootstrap "
                      "whose "
                      "resamples and seed each report states); "
                      "Holm-adjusted p over the report's family of comparisons (each report names it; 08's is "
                      "every mechanism comparison), those in which no question changed left out and marked fixed.",
    "adjusted interval": "the comparison's own interval (McNemar's exact test inverted for binary outcomes, a paired "
                         "bootstrap otherwise) at level α·p/p_Holm, so it excludes 0 exactly when p_Holm < 0.05; "
                         "every Findings sentence that claims an effect quotes it "
                         "(`rag_lib/evaluation/claims.py`).",
    "phrasing": "another wording of a benchmark question with the same gold pieces (`phrasings:` in "
                "`data/benchmark/questions.yaml`); Q7's runs report each phrasing separately.",
    "RRF": "reciprocal rank fusion: a chunk's fused score is the sum over rankings of 1 / (rrf_k + rank) "
           "(`retrieval.rrf_k` in `config.yaml`); used by the hybrid retriever and by query splitting.",
    "round-robin": "a fusion that takes the first chunk of each ranking in turn, then the second, skipping chunks "
                   "already taken.",
    "MMR": "maximal marginal relevance: re-orders the top chunks so each next one is relevant to the question "
           "and unlike those above it (`rag_lib/retrieval/diversity.py`).",
    "near-miss": "an unanswerable question whose topic is in the corpus but whose asked fact is not "
                 "(`near_miss: true`; its notes say where the topic is and why the fact is absent).",
    "oracle": "a choice made with the gold labels (the checklist gate, the recovery loop's best suggestion): "
              "an upper bound for what a real, label-free choice can reach, never a result.",
    "Wilson interval": "the 95% interval of a rate k/n that stays inside [0, 1] and is honest for small n "
                       "(`rag_lib.evaluation.stats.wilson`).",
    "copied_example": "a recovery run in which every suggested sub-question copies the prompt's worked example; "
                      "reported as a failure, never scored.",
    "THEIRS": "a figure published by the casebook (bge-m3, qwen3.8-flash, its own 26-page snapshot), never "
              "measured here.",
}


def glossary_lines() -> list[str]:
    """The glossary section of ``results/README.md``: terms, then the pieces of the casebook questions."""
    from rag_lib.benchmark import load_benchmark

    lines = ["## Glossary", "", *(f"- **{term}**: {meaning}" for term, meaning in _GLOSSARY.items()), "",
             "**Column headers** and the results.json keys they show:", "",
             *(f"- {rule}" for rule in header_rules()), ""]
    bench = load_benchmark()
    for question in bench.questions(casebook=True):
        if question.gold:
            lines.append(f"**{question.casebook_ref}** (`{question.id}`): {question.en}")
            lines += [f"- {piece.id}: {piece.what}" for piece in question.gold]
            lines.append("")
    return lines


def one_line(finding: str, max_words: int = 45) -> str:
    """A finding's claim without its caveats and figures in brackets, in at most ``max_words`` words (the index's
    one-line answer; the notebook has the whole sentence)."""
    claim = re.split(r" \((?:caveat|Wilson|95%|the |leave-one-out|in-sample)", finding, maxsplit=1)[0].rstrip(" .;:")
    words = claim.split()
    return " ".join(words[:max_words]) + ("…" if len(words) > max_words else ".")


def write_results_index(root: Path, runs: Sequence[NotebookRun], failures: dict[str, str],
                        checks: Mapping[str, str] | None = None, questions: Mapping[str, str] | None = None) -> Path:
    """``results/README.md``: every run with its question (``questions``: run → the notebook's
    question), first finding, ``make check`` status (``checks``: run → "5 OK, 1 OKish, 0 FAIL") and
    links; the headline table; every report and figure."""
    lines = [
        "# Results",
        "",
        "Generated by `make reproduce`; do not edit by hand. Each experiment folder holds `results.json`",
        "(the figures), `report.md` (read from that JSON) and its plots; executed notebooks are in",
        "`notebooks/` with an HTML rendering beside each.",
        "",
    ]
    findings = findings_block(root)
    if findings is not None:
        lines += ["## What the workbook found", "", findings, ""]
    headline = root / SUMMARY.name / "headline.md"
    if headline.is_file():
        lines += ["## Headline", "", headline.read_text(encoding="utf-8").strip(), ""]
    times = load_run_times(root)
    lines += ["## Notebooks", "", "Each run: the question its notebook asks, its answer in one line (its first "
              "finding without the caveats and figures in brackets), the `make check` figures it holds, its status and "
              "how long it took. "
              f"{totals_text(times)}", ""]
    for run in sorted(runs, key=lambda r: r.name):  # in notebook order (they run in dependency order)
        if run.name in failures:
            cause = " ".join(line.strip() for line in failures[run.name].splitlines() if line.strip())
            status = f"FAILED: {cause[:200]}"
        else:
            status = "ok" if (root / "notebooks" / f"{run.name}.ipynb").is_file() else "not run yet"
        params = f" `{json.dumps(run.parameters, sort_keys=True)}`" if run.parameters else ""
        stored = root / run.name / "results.json"
        run_findings = read_json(stored).get("findings") if stored.is_file() else None
        lines += [f"- **{run.name}**{params} ([html](notebooks/{run.name}.html), [ipynb](notebooks/{run.name}.ipynb)"
                  f"): {status}; make check: {(checks or {}).get(run.name, 'no expected figures')}; "
                  f"run time: {run_time_text(times, run.name)}.",
                  f"  - Question: {(questions or {}).get(run.name, 'not read')}"]
        lines.append(f"  - Answer: {one_line(run_findings[0]) if run_findings else 'it states no findings'}")
    lines += ["", "## Experiments", ""]
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and (p / "results.json").is_file()):
        figures = sorted(f.name for f in folder.iterdir() if f.suffix in {".png", ".svg"})
        links = ", ".join(f"[{f}]({folder.name}/{f})" for f in figures) or "no figures"
        lines.append(f"- **{folder.name}**: [report]({folder.name}/report.md), "
                     f"[results.json]({folder.name}/results.json); figures: {links}")
    lines += ["", *glossary_lines()]
    target = root / "README.md"
    write_text(target, "\n".join(lines))
    write_glossary_page(root / "notebooks" / "glossary.html")
    return target


def write_glossary_page(target: Path) -> Path:
    """The glossary as an HTML page beside the rendered notebooks, which link it from their Findings
    (a link to ``README.md`` would open raw Markdown in a browser)."""
    import mistune

    body = mistune.html("\n".join(glossary_lines()))
    write_text(target, '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Glossary</title>'
               '<style>body{font-family:sans-serif;max-width:52em;margin:2em auto;line-height:1.5}</style>'
               f"</head><body>\n{body}</body></html>\n")
    return target
