"""The explorer widget of 09 (headless runs do not build it, so it is tested here, without a kernel)."""

from __future__ import annotations

from typing import Any

import pytest

from rag_lib import explore


@pytest.fixture(scope="module")
def workbench() -> Any:
    from rag_lib.workbench import Workbench

    return Workbench()


def test_the_explorer_reranks_when_a_control_changes(monkeypatch, capsys, workbench) -> None:
    calls: list[dict[str, Any]] = []
    real = explore.explain

    def recorded(question: str, **kw: Any) -> Any:
        calls.append({"question": question, **{k: v for k, v in kw.items() if k != "workbench"}})
        return real(question, **kw)

    monkeypatch.setattr(explore, "explain", recorded)
    box = explore.build_explorer(workbench, question="q07", lang="zh", k=5)
    picker, text, (key, cut), language, (deepest, rows), _ = (
        box.children[0], box.children[1], box.children[2].children, box.children[3], box.children[4].children,
        box.children[5])
    assert calls[-1] == {"question": "q07", "key": key.value, "k": 5, "lang": "zh"}  # the first view
    cut.value = 7
    language.value = "en"
    assert calls[-1] == {"question": "q07", "key": key.value, "k": 7, "lang": "en"}
    assert picker.value == "q07"  # relabelled in English, still the same question
    deepest.value = False
    assert not rows.disabled
    text.value = "q999"  # a typed id that does not exist: an error line, not a traceback
    assert "error:" in capsys.readouterr().out
    text.value = "  "
    assert calls[-1]["question"] == "q07"  # blank text falls back to the picker
