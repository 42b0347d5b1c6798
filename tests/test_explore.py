"""The explorer widget of 09 (headless runs do not build it, so it is tested here, without a kernel)."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.display import HTML, Image

from rag_lib.app import explore
from rag_lib.presentation.figures import ranks as explore_figures


@pytest.fixture(scope="module")
def workbench() -> Any:
    from rag_lib.pipeline.workbench import Workbench

    return Workbench()


def test_the_explorer_reranks_when_a_control_changes(monkeypatch, capsys, workbench) -> None:
    calls: list[dict[str, Any]] = []
    real = explore.explain

    def recorded(question: str, **kw: Any) -> Any:
        calls.append({"question": question, **{k: v for k, v in kw.items() if k != "workbench"}})
        return real(question, **kw)

    monkeypatch.setattr(explore, "explain", recorded)
    box = explore.build_explorer(workbench, question="q07", lang="zh", k=5)
    picker, text, (key, _, cut), language, (deepest, rows), _ = (
        box.children[0], box.children[1], box.children[2].children, box.children[3], box.children[4].children,
        box.children[5])
    assert calls[-1] == {"question": "q07", "key": key.value, "k": 5, "lang": "zh"}  # the first view
    assert len(calls) == 1  # ranked once on opening
    cut.value = 7
    language.value = "en"
    assert calls[-1] == {"question": "q07", "key": key.value, "k": 7, "lang": "en"}
    assert picker.value == "q07"  # relabelled in English, still the same question
    deepest.value = False
    assert not rows.disabled
    text.value = "q999"  # a typed id that does not exist: an error line, not a traceback
    assert "error:" in capsys.readouterr().out
    assert picker.value == ""  # the picker no longer claims q07 once a question is typed
    text.value = "  "
    assert calls[-1]["question"] == "q999"  # blank text and a free-text picker: nothing new is ranked
    picker.value = "q05"
    assert text.value == "" and calls[-1]["question"] == "q05"


def test_the_explorer_compares_two_configurations(monkeypatch, workbench) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objs: shown.extend(objs))
    figures: list[Any] = []
    real = explore_figures.rank_moves_figure
    monkeypatch.setattr(explore_figures, "rank_moves_figure", lambda *a: figures.append(real(*a)) or figures[-1])
    box = explore.build_explorer(workbench, question="q07", lang="zh", k=5)
    key, other, _ = box.children[2].children
    other.value = "bm25"
    figure = figures[-1]
    assert figure.axes[0].get_title() == "how the ranks move"
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == [key.value, "bm25"]
    # What reaches the page is a PNG (a Figure object showed as "<Figure size ...>" text in JupyterLab) ...
    images = [obj for obj in shown if isinstance(obj, Image)]
    assert len(images) == 1 and images[0].data.startswith(b"\x89PNG")
    # ... beside both rankings: the compared configuration's table is on the page too.
    tables = next(obj.data for obj in shown if isinstance(obj, HTML) and "display:flex" in obj.data)
    assert tables.count("<table") >= 4 and "bm25" in tables
    assert any(explore.BM25_SCALE_NOTE in getattr(obj, "data", "") for obj in shown if isinstance(obj, HTML))


def test_rank_moves_follow_the_gold_pieces_or_the_top_k(workbench) -> None:
    from rag_lib.pipeline.explain import explain

    dense = explain("q07", key="dense", k=5, lang="zh", workbench=workbench)
    bm25 = explain("q07", key="bm25", k=5, lang="zh", workbench=workbench)
    moves = explore.rank_moves(dense, bm25)
    assert [m["item"] for m in moves] == ["C1", "C2", "C3", "C4"]
    assert [m["first"] for m in moves] == [p["rank"] for p in dense.pieces]
    free = explore.rank_moves(explain("How do I add a secret?", key="dense", k=3, workbench=workbench),
                              explain("How do I add a secret?", key="dense", k=3, workbench=workbench))
    assert [(m["first"], m["second"]) for m in free] == [(1, 1), (2, 2), (3, 3)]
