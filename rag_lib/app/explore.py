"""An ipywidgets explorer: type a question, switch embedder / retriever / k, watch ranks move."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.core.errors import WorkbookError
from rag_lib.embedding import available_embedders
from rag_lib.pipeline.explain import Explanation, explain
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.store import find_result

ANSWERS_RUN = LOCAL_LLM.name  # whose recorded answers say where each benchmark question's answer was lost


def retrieval_keys(default: str) -> list[str]:
    """Every configuration that can run here: dense per available embedder, BM25, hybrid (with ``default``,
    the workbench's default embedder)."""
    dense = [f"dense:{name}" for name, ok in available_embedders().items() if ok is True]
    return [*dense, "bm25", f"hybrid:{default}"]


def question_choices(wb: Workbench, lang: str) -> list[tuple[str, str]]:
    """The picker's options: free text, then every benchmark question labelled in ``lang``."""
    return [("(free text)", "")] + [(f"{q.id}: {q.text(lang)}", q.id) for q in wb.benchmark.questions()]


# Shown with a BM25 ranking: its scores are not on the cosine scale of the dense rows beside it.
BM25_SCALE_NOTE = ("BM25 scores are sums of term weights (unbounded, here often 10–40), not cosine similarities: "
                   "compare ranks across configurations, not scores.")


def rank_moves(first: Explanation, second: Explanation) -> list[dict[str, Any]]:
    """What moves between two rankings of one question: each gold piece's first rank in both (a benchmark
    question), else where the first ranking's top-k chunks land in the second (free text)."""
    if first.pieces:
        ranks = {p["piece"]: p["rank"] for p in second.pieces}
        return [{"item": p["piece"], "first": p["rank"], "second": ranks.get(p["piece"])} for p in first.pieces]
    return [{"item": f"#{i}", "first": i, "second": second.ranking.rank_of(cid) if cid in second.ranking.ids else None}
            for i, cid in enumerate(first.ranking.ids[:first.k], 1)]


@cache
def _stages(root: Path | None) -> tuple[dict[str, Any], ...]:
    stored = find_result(ANSWERS_RUN, root)
    return tuple(stored.data.get("question_failures", [])) if stored is not None else ()


def answer_stages(question_id: str, lang: str, root: Path | None = None) -> list[dict[str, Any]]:
    """Notebook 10's where-it-failed row of one benchmark question in one language: per answerer and gate, the
    stage that lost its answer ("answered": shown and stating every key fact). Empty for a question 10 does not
    diagnose (free text, an unanswerable question, no checkable key fact) or when 10 has not run."""
    return [r for r in _stages(root) if r["question"] == question_id and r["lang"] == lang]


def answer_stages_html(question_id: str, lang: str, root: Path | None = None) -> str:
    """:func:`answer_stages` as a small table, with what it was measured on (or why there is none)."""
    rows = answer_stages(question_id, lang, root)
    if not rows:
        return (f"<p><i>No where-it-failed row for {html.escape(question_id)} ({lang}): notebook 10 diagnoses "
                "answerable benchmark questions with a checkable key fact, from its recorded answers.</i></p>")
    body = "".join(f"<tr><td>{html.escape(r['answerer'])}</td><td>{html.escape(r['gate'])}</td>"
                   f"<td><b>{html.escape(r['stage'])}</b></td></tr>" for r in rows)
    return (f"<p><b>Where its answer was lost</b> (notebook 10's recorded answers: dense retrieval with the default "
            f"embedder, Top-5, whatever is chosen above):</p><table><tr><th>answerer</th><th>gate</th>"
            f"<th>stage</th></tr>{body}</table>")


def side_by_side(left: str, right: str) -> str:
    """Two HTML views next to each other (each keeps its own width; the pair scrolls sideways on a narrow page)."""
    cell = '<div style="flex:0 0 auto">{}</div>'
    return f'<div style="display:flex;gap:2em;align-items:flex-start;overflow-x:auto">{cell.format(left)}' \
           f"{cell.format(right)}</div>"


def build_explorer(workbench: Workbench | None = None, question: str = "q07", lang: str = "zh",
                   k: int | None = None) -> Any:
    """A widget box: benchmark question picker or free text, configuration, a second configuration to
    compare with, k (default: the workbench's ``config.k``), language, rows.

    Returns the ``ipywidgets.VBox``; display it in JupyterLab. A change re-ranks with
    :func:`rag_lib.pipeline.explain.explain` (text and sliders only when released or submitted) and shows the
    question being asked, its pieces and the ranking, with a line at the top-k cut, down to the
    deepest piece by default; with a second configuration, a slope chart of how each piece's rank moves; for
    a benchmark question, where notebook 10's answers to it were lost (:func:`answer_stages_html`).
    """
    import ipywidgets as w
    from IPython.display import HTML, Image, display

    from rag_lib.presentation.figures.ranks import figure_png, rank_moves_figure

    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    wide = w.Layout(width="95%")
    label = {"description_width": "initial"}  # full labels, never cut to "rows down to the d…"
    picker = w.Dropdown(options=question_choices(wb, lang), value=question, description="benchmark question",
                        layout=wide, style=label)
    text = w.Text(placeholder="…or type a question (Chinese or English) and press Enter", description="your question",
                  layout=wide, continuous_update=False, style=label)
    keys = retrieval_keys(wb.config.embedder)
    key = w.Dropdown(options=keys, value=f"dense:{wb.config.embedder}", description="retrieval", style=label)
    other = w.Dropdown(options=[("(none)", ""), *((k_, k_) for k_ in keys)], value="", description="compare with",
                       style=label)
    cut = w.IntSlider(value=k, min=1, max=20, description="k", continuous_update=False, style=label)
    language = w.ToggleButtons(options=["zh", "en"], value=lang, description="language", style=label)
    deepest = w.Checkbox(value=True, description="rows down to the deepest piece", style=label)
    rows = w.IntSlider(value=20, min=5, max=200, step=5, description="rows", continuous_update=False, disabled=True,
                       style=label)
    # The view scrolls inside its own box, so the controls above stay on screen beside a long ranking.
    out = w.Output(layout=w.Layout(max_height="720px", overflow="auto", border="1px solid #ddd"))
    quiet = {"on": False}  # set while one control is updated from another, so the view refreshes once

    def relabel(*_: Any) -> None:  # the picker speaks the chosen language
        chosen = picker.value
        quiet["on"] = True
        picker.options = question_choices(wb, language.value)
        picker.value = chosen
        quiet["on"] = False

    def follow(change: dict[str, Any]) -> None:  # typed text and the picker never disagree on the question
        quiet["on"] = True
        if change["owner"] is text and text.value.strip():
            picker.value = ""  # "(free text)": the picker no longer claims q07
        elif change["owner"] is picker and picker.value:
            text.value = ""
        quiet["on"] = False

    def refresh(change: dict[str, Any] | None = None) -> None:
        if quiet["on"]:
            return
        if change is not None and change["owner"] in (text, picker):
            follow(change)
        rows.disabled = deepest.value
        question = text.value.strip() or picker.value
        with out:
            out.clear_output(wait=True)
            if not question:
                print("Pick a benchmark question or type one.")
                return
            try:
                result = explain(question, key=key.value, k=cut.value, lang=language.value, workbench=wb)
                compared = (explain(question, key=other.value, k=cut.value, lang=language.value, workbench=wb)
                            if other.value else None)
            except (WorkbookError, ValueError) as exc:  # a typed id that does not exist, a 100 KB paste …
                print(f"error: {exc}")
                return
            shown = result.default_rows() if deepest.value else rows.value
            if compared is None:
                display(HTML(result.html(shown)))
            else:  # the two rankings side by side, and the slope chart of how the pieces move between them
                display(HTML(side_by_side(result.html(shown, compact=True), compared.html(shown, compact=True))))
                figure = rank_moves_figure(rank_moves(result, compared), key.value, other.value, cut.value)
                # As PNG bytes: a Figure object reaches the page only where the inline backend registered its
                # formatter, and the workbook renders with Agg (in JupyterLab it arrived as "<Figure ...>").
                display(Image(data=figure_png(figure), format="png"))
            if question in {q.id for q in wb.benchmark.questions()}:
                display(HTML(answer_stages_html(question, language.value)))
            if "bm25" in (key.value, other.value):
                display(HTML(f"<p><i>{BM25_SCALE_NOTE}</i></p>"))

    language.observe(relabel, names="value")
    for control in (picker, text, key, other, cut, language, deepest, rows):
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([picker, text, w.HBox([key, other, cut]), language, w.HBox([deepest, rows]), out])
