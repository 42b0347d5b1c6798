"""12_corpus_size's Findings, generated from the stored result (:func:`findings`), and the metrics it names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_lib.evaluation import hit_name
from rag_lib.evaluation.readers import missed_gold
from rag_lib.results.corpus_size import CorpusSizeResult, RefusalChange
from rag_lib.results.provenance import model_name
from rag_lib.results.typed_json import Scalar


def size_metrics(k: int) -> tuple[str, ...]:
    """The metrics measured per corpus size at top-``k``: ``("hit@5", "coverage@10")`` at k = 5."""
    return (hit_name(k), "coverage@10")


def result_metrics(result: CorpusSizeResult) -> tuple[str, ...]:
    """:func:`size_metrics` at the k a stored run measured at (``provenance.top``)."""
    return size_metrics(result.provenance.top)


def _span(first: Mapping[str, Scalar], last: Mapping[str, Scalar], key: str) -> str:
    """``first[key] → last[key]`` as percentages."""
    return f"{first[key]:.0%} → {last[key]:.0%}"


def _refusal(result: CorpusSizeResult, lang: str, gate: str) -> RefusalChange:
    return next(r for r in result.refusal_changes if (r.language, r.gate) == (lang, gate))


def _by(rows: Sequence[dict[str, Scalar]], pages: int, lang: str) -> dict[str, Scalar]:
    """The row of a table keyed by metrics (``curve``, ``runs``) for ``pages`` and ``lang``."""
    return next(r for r in rows if r["pages"] == pages and r["language"] == lang)


def findings(result: CorpusSizeResult) -> list[str]:
    """Sentences from the stored results: the curve's ends, the change with its interval, Q7, the distractors."""
    out = []
    small, large = result.sizes[0], result.sizes[-1]
    family = result.family()
    for lang in result.languages:
        a, b = _by(result.curve, small, lang), _by(result.curve, large, lang)
        parts = [f"{m} {a[m]:.3f} → {b[m]:.3f} ({family.get(str(large), lang, m).text(scoped=False)})"
                 for m in result_metrics(result)]
        refusal = "".join(
            f" Of the {r.unanswerable} unanswerable questions, the gate with {label} declined {r.smallest} "
            f"{r.smallest_ci} → {r.whole} {r.whole_ci} (paired: {r.newly_declined} newly declined, "
            f"{r.no_longer_declined} no longer; McNemar's exact p {r.p_exact:.3g}), beside false refusal of "
            f"answerable questions with complete evidence {_span(a, b, 'false refusal rate' + suffix)}."
            for r, label, suffix in (
                (_refusal(result, lang, "in-sample"), "03's parameters (in-sample)", ""),
                (_refusal(result, lang, "leave-one-out"), "each question's parameters fitted without it "
                 "(leave-one-out)", " (held out)")))
        out.append(f"{lang}: from {small} to {large} pages, {'; '.join(parts)}; the gate declined "
                   f"{a['declined (answerable)']:g} → {b['declined (answerable)']:g} answerable questions.{refusal}")
    for lang in result.languages:
        a, b = (next(r for r in result.q7_rows if r.pages == pages and r.language == lang) for pages in (small, large))
        out.append(f"Q7 ({lang}) first ranks C1/C2/C3/C4: {'/'.join(a.ranks)} with "
                   f"{small} pages, {'/'.join(b.ranks)} with {large}.")
    for lang in result.languages:
        added = [r for r in result.q7_first if r.language == lang and r.added_page]
        if added:
            out.append(f"Q7 ({lang}) with {large} pages: " + "; ".join(
                f"{r.piece}'s first chunk (rank {r.rank}) is on an added page, {r.page}" for r in added)
                + " (gold through the wide batch's own labels: it states the piece).")
    for lang in result.languages:
        row = next(r for r in result.slot_rows if r.pages == large and r.language == lang)
        kinds = ", ".join(f"{k} {share:.0%}" for k, share in row.by_kind.items())
        out.append(f"Top-{result.provenance.top} slots not holding gold ({lang}, {large} pages): {kinds}; "
                   f"{row.from_added:.0%} of them come from the pages added to the labelled batch.")
    left = ", ".join(result.labels.left_out) or "none"
    out.append(f"Caveats: {result.n_answerable} answerable questions written for the {small}-page batch, so the "
               "added pages are distractors by construction unless they state a piece (they are then gold through "
               "the wide batch's own labels); intervals are bootstrap intervals over questions of the seed-averaged "
               f"values, with {len(result.seeds)} page orders; one offline embedder "
               f"({model_name(result.provenance.embedder)}); gate "
               f"parameters tuned on the labelled batch; unanswerable questions left out on the wide batch: {left}; "
               f"{missed_gold().caveat()}.")
    out.append(family.describe())
    return out
