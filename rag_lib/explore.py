"""An ipywidgets explorer: type a question, switch embedder / retriever / k, watch ranks move."""

from __future__ import annotations

from typing import Any

from rag_lib.embedding import available_embedders
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.errors import WorkbookError
from rag_lib.explain import explain
from rag_lib.workbench import Workbench


def retrieval_keys() -> list[str]:
    """Every configuration that can run here: dense per available embedder, BM25, hybrid."""
    dense = [f"dense:{name}" for name, ok in available_embedders().items() if ok is True]
    return [*dense, "bm25", f"hybrid:{default_embedder_name()}"]


def build_explorer(workbench: Workbench | None = None, rows: int = 15) -> Any:
    """A widget box: benchmark question picker or free text, configuration, k, language.

    Returns the ``ipywidgets.VBox``; display it in JupyterLab. Each change re-ranks with
    :func:`rag_lib.explain.explain` and shows the ranking with gold pieces marked.
    """
    import ipywidgets as w
    from IPython.display import display

    wb = workbench or Workbench()
    choices = [("(free text)", "")] + [(f"{q.id}: {q.text('en')[:70]}", q.id) for q in wb.benchmark.questions()]
    picker = w.Dropdown(options=choices, value="q07", description="benchmark")
    text = w.Text(placeholder="…or type a question (Chinese or English)", description="question",
                  layout=w.Layout(width="90%"))
    key = w.Dropdown(options=retrieval_keys(), value=f"dense:{default_embedder_name()}", description="retrieval")
    k = w.IntSlider(value=5, min=1, max=20, description="k")
    lang = w.ToggleButtons(options=["zh", "en"], value="zh", description="language")
    out = w.Output()

    def refresh(*_: Any) -> None:
        question = text.value.strip() or picker.value
        with out:
            out.clear_output(wait=True)
            if not question:
                print("Pick a benchmark question or type one.")
                return
            try:
                result = explain(question, key=key.value, k=k.value, lang=lang.value, workbench=wb)
            except (WorkbookError, ValueError) as exc:  # a typed id that does not exist, a 100 KB paste …
                print(f"error: {exc}")
                return
            print(result.summary())
            display(result.top(max(rows, k.value)))

    for control in (picker, text, key, k, lang):
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([picker, text, w.HBox([key, k]), lang, out])
