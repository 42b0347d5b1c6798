"""No committed result or notebook carries a machine's folders (a user's home, the checkout, /tmp).

Messages that end up in results show paths through :func:`rag_lib.core.config.shown_path`; this test
scans what is committed, so a new message that prints a raw path fails here, not in a reviewer's eyes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rag_lib.core.config import REPO_ROOT, shown_path

MACHINE_PATH = re.compile(r"(/root/|/home/[A-Za-z_]|/Users/[A-Za-z_]|(?<![\w.])/tmp/|[A-Za-z]:\\\\Users\\\\)")
SCANNED = ("results", "notebooks")


def committed_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", *SCANNED], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return [REPO_ROOT / line for line in out.stdout.splitlines()
            if line and not line.endswith((".png", ".svg", ".parquet", ".npy"))
            and (REPO_ROOT / line).is_file()]  # a tracked file deleted in the working tree is on its way out


def test_the_scan_finds_a_machine_path() -> None:
    assert MACHINE_PATH.search('"reason": "the Hugging Face cache /root/.cache/huggingface/hub"')
    assert MACHINE_PATH.search("Looked in: /home/ana/models/BAAI__bge-m3")
    assert not MACHINE_PATH.search("the Hugging Face cache ~/.cache/huggingface/hub; results/llm_calls")


def test_shown_paths_are_relative_to_the_repository_or_home() -> None:
    assert shown_path(REPO_ROOT / "results" / "llm_calls") == "results/llm_calls"
    assert shown_path(Path.home() / ".cache" / "huggingface" / "hub") == "~/.cache/huggingface/hub"
    assert shown_path(Path("$RAG_MODELS_DIR") / "BAAI__bge-m3") == "$RAG_MODELS_DIR/BAAI__bge-m3"


@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs the git checkout")
def test_no_committed_result_or_notebook_names_a_machine_path() -> None:
    root = str(REPO_ROOT.resolve())
    offenders = []
    for path in committed_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        match = MACHINE_PATH.search(text) or (re.search(re.escape(root), text) if root != "/" else None)
        if match:
            start = max(match.start() - 60, 0)
            offenders.append(f"{path.relative_to(REPO_ROOT)}: …{text[start:match.end() + 40]!r}…")
    assert not offenders, "machine paths in committed files (show them with rag_lib.core.config.shown_path):\n" + \
        "\n".join(offenders)
