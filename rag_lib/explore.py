"""An ipywidgets explorer: type a question, switch embedder / retriever / k, watch ranks move."""

from __future__ import annotations

from typing import Any

from rag_lib.config import TOP_K
from rag_lib.embedding import available_embedders
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.errors import WorkbookError
from rag_lib.explain import explain
from rag_lib.workbench import Workbench


def retrieval_keys() -> list[str]:
    """Every configuration that can run here: dense per available embedder, BM25, hybrid."""
    dense = [f"dense:{name}" for name, ok in available_embedders().items() if ok is True]
    return [*dense, "bm25", f"hybrid:{default_embedder_name()}"]


def question_choices(wb: Workbench, lang: str) -> list[tuple[str, str]]:
    """The picker's options: free text, then every benchmark question labelled in ``lang``."""
    return [("(free text)", "")] + [(f"{q.id}: {q.text(lang)}", q.id) for q in wb.benchmark.questions()]


def build_explorer(workbench: Workbench | None = None, question: str = "q07", lang: str = "zh", k: int = TOP_K) -> Any:
    """A widget box: benchmark question picker or free text, configuration, k, language, rows.

    Returns the ``ipywidgets.VBox``; display it in JupyterLab. A change re-ranks with
    :func:`rag_lib.explain.explain` (text and sliders only when released or submitted) and shows the
    pieces and the ranking, with a line at the top-k cut, down to the deepest piece by default.
    """
    import ipywidgets as w
    from IPython.display import HTML, display

    wb = workbench or Workbench()
    wide = w.Layout(width="95%")
    picker = w.Dropdown(options=question_choices(wb, lang), value=question, description="benchmark", layout=wide)
    text = w.Text(placeholder="…or type a question (Chinese or English) and press Enter", description="question",
                  layout=wide, continuous_update=False)
    key = w.Dropdown(options=retrieval_keys(), value=f"dense:{default_embedder_name()}", description="retrieval")
    cut = w.IntSlider(value=k, min=1, max=20, description="k", continuous_update=False)
    language = w.ToggleButtons(options=["zh", "en"], value=lang, description="language")
    deepest = w.Checkbox(value=True, description="rows down to the deepest piece")
    rows = w.IntSlider(value=20, min=5, max=200, step=5, description="rows", continuous_update=False, disabled=True)
    out = w.Output()

    def relabel(*_: Any) -> None:  # the picker speaks the chosen language
        chosen = picker.value
        picker.options = question_choices(wb, language.value)
        picker.value = chosen

    def refresh(*_: Any) -> None:
        rows.disabled = deepest.value
        question = text.value.strip() or picker.value
        with out:
            out.clear_output(wait=True)
            if not question:
                print("Pick a benchmark question or type one.")
                return
            try:
                result = explain(question, key=key.value, k=cut.value, lang=language.value, workbench=wb)
            except (WorkbookError, ValueError) as exc:  # a typed id that does not exist, a 100 KB paste …
                print(f"error: {exc}")
                return
            shown = result.default_rows() if deepest.value else rows.value
            display(HTML(result.html(shown)))

    language.observe(relabel, names="value")
    for control in (picker, text, key, cut, language, deepest, rows):
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([picker, text, w.HBox([key, cut]), language, w.HBox([deepest, rows]), out])
