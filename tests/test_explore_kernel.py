"""The explorer in a real IPython kernel, as JupyterLab runs it (issue 47): changing "compare with" must put an
inline PNG on the page (a figure that reaches the page as text/plain "<Figure size …>" fails)."""

from __future__ import annotations

from typing import Any

import pytest

CODE = """
from rag_lib.app import explore
from rag_lib.pipeline.workbench import Workbench
box = explore.build_explorer(Workbench(), question="q07", lang="zh", k=5)
display(box)
key, other, _ = box.children[2].children
other.value = "bm25"
"""


def run_in_kernel(code: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Every IOPub message ``code`` produced in a fresh kernel of this interpreter, until the kernel is idle."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(code)
        messages = []
        while True:
            msg = kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_comparing_two_configurations_shows_an_inline_png_in_a_kernel() -> None:
    messages = run_in_kernel(CODE)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert not errors, errors
    shown = [m["content"]["data"] for m in messages if m["msg_type"] in ("display_data", "execute_result")]
    assert any("image/png" in data for data in shown), [sorted(d) for d in shown]
    assert not any(data.get("text/plain", "").startswith("<Figure size") and "image/png" not in data
                   for data in shown)
