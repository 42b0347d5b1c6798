"""Progress on the long steps: model installs (one bar for all part packages, or a line per package off a
terminal) and ``make reproduce`` (a line per notebook with its elapsed time and an ETA from its last run here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rag_lib.generation.local_models import pip_install
from rag_lib.results.runs import NotebookRun
from rag_lib.runner import reproduce
from rag_lib.runner.reproduce import progress_line, remaining_note

# What `pip install --progress-bar raw` prints for two packages, the second from pip's cache.
PIP_OUTPUT = """Collecting fake-part1==1.0
  Downloading fake_part1-1.0-py3-none-any.whl (89.1 MB)
Progress 0 of 1000
Progress 500 of 1000
Progress 1000 of 1000
Collecting fake-part2==1.0
  Using cached fake_part2-1.0-py3-none-any.whl (89.1 MB)
Installing collected packages: fake-part2, fake-part1
Successfully installed fake-part1-1.0 fake-part2-1.0
"""


def _fake_python(tmp_path: Path, output: str, status: int = 0) -> str:
    """An executable that prints ``output`` and exits with ``status`` whatever its arguments (a stand-in for pip)."""
    (tmp_path / "pip_output.txt").write_text(output)
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\ncat {tmp_path / 'pip_output.txt'}\nexit {status}\n")
    script.chmod(0o755)
    return str(script)


def test_a_model_install_off_a_terminal_prints_a_line_per_package(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pip_install(["fake-part1==1.0", "fake-part2==1.0"], "fake", _fake_python(tmp_path, PIP_OUTPUT), progress=True)
    err = capsys.readouterr().err
    assert "fake: 1 of 2 packages downloaded in" in err and "s left)" in err
    assert "fake: 2 package file(s) downloaded in" in err and "installing" in err


def test_a_model_install_on_a_terminal_shows_one_bar_that_reaches_every_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    pip_install(["fake-part1==1.0", "fake-part2==1.0"], "fake", _fake_python(tmp_path, PIP_OUTPUT), progress=True)
    err = capsys.readouterr().err
    assert "fake: downloading" in err and "0.5/2 packages" in err, "a package counts by its bytes downloaded"
    assert "fake: installing" in err and "2.0/2 packages" in err


def test_rag_progress_off_silences_the_install_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pip_install(["fake-part1==1.0", "fake-part2==1.0"], "fake", _fake_python(tmp_path, PIP_OUTPUT), progress=False)
    assert capsys.readouterr().err == ""


def test_a_failed_install_shows_what_pip_said_and_raises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = "Collecting fake-part1==1.0\nERROR: No matching distribution found for fake-part1==1.0\n"
    with pytest.raises(subprocess.CalledProcessError):
        pip_install(["fake-part1==1.0"], "fake", _fake_python(tmp_path, output, status=1), progress=False)
    assert "No matching distribution found for fake-part1==1.0" in capsys.readouterr().err


@pytest.mark.parametrize(("elapsed", "expected", "says"), [
    (90, None, "(90 s; first run here: no estimate yet)"),
    (60, 600, "(60 s; about 9 min left: it took 10 min last time)"),
    (700, 600, "(12 min; over the 10 min it took last time)"),
])
def test_the_heartbeat_line_gives_an_eta_from_the_last_run(elapsed: float, expected: float | None, says: str) -> None:
    assert progress_line("[1/3] 01_x", elapsed, expected) == f"[1/3] 01_x  … still running {says}"


def test_each_notebook_line_says_what_the_runs_to_come_took_last_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    runs = [NotebookRun("00_a", "00_corpus"), NotebookRun("01_b", "00_corpus"), NotebookRun("02_c", "00_corpus")]
    monkeypatch.setattr(reproduce, "planned_runs", lambda **_: runs)
    def execute(run: NotebookRun, out_dir: Path, timeout: int) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{run.name}.ipynb").write_text("{}")

    monkeypatch.setattr(reproduce, "execute", execute)
    monkeypatch.setattr("rag_lib.presentation.readme.write_results_index", lambda *a, **k: None)
    embedded: list[bool] = []
    monkeypatch.setattr(reproduce, "embed_corpus_once", embedded.append)
    monkeypatch.setenv("RAG_PROGRESS", "1")
    assert reproduce.run_all(force=True, quiet=True) == 0
    assert embedded == [True], "the corpus is embedded once, here, with this terminal's progress setting"
    first = capsys.readouterr().out.splitlines()
    assert first[0].endswith("; 2 to go, 2 not timed here yet") and first[2].split("→")[1].strip() != ""
    assert all(reproduce.last_seconds(r) is not None for r in runs), "every finished run is timed"

    for run, seconds in zip(runs, ("300", "420", "not a number"), strict=True):
        (tmp_path / "cache" / "reproduce" / f"{run.name}.seconds").write_text(seconds)
    assert remaining_note(runs[1:]) == "; 2 to go, about 7 min if all run (their last time here), 1 not timed here yet"
    assert remaining_note([]) == ""

    # Every notebook unchanged: none runs, and nothing is embedded for them.
    monkeypatch.setenv("RAG_PROGRESS", "1")
    assert reproduce.run_all(quiet=True) == 0
    assert embedded == [True] and "skipped (inputs unchanged" in capsys.readouterr().out


# -- rank / ask: the first embedding and live model calls are announced ---------------------------------------------

def test_rank_and_ask_announce_the_first_embedding_of_the_corpus_only(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.__main__ import first_embedding_note
    from rag_lib.embedding.store import EmbeddingStore
    from rag_lib.pipeline.workbench import Workbench

    monkeypatch.setenv("RAG_PROGRESS", "1")
    wb = Workbench(store=EmbeddingStore(tmp_path / "embeddings"))
    monkeypatch.setattr(wb.embedder(), "pins", None)  # a corpus with no pinned vectors (the pinned case: test_cli.py)
    note = first_embedding_note(wb, "dense")
    assert note is not None and f"embedding {len(wb.embeddable)} of the corpus's {len(wb.embeddable)} chunks" in note
    assert first_embedding_note(wb, "bm25") is None, "BM25 embeds nothing"
    monkeypatch.setenv("RAG_PROGRESS", "0")
    assert first_embedding_note(wb, "dense") is None
    monkeypatch.setenv("RAG_PROGRESS", "1")
    cached = wb.store.path_for(wb.embedder())
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"")
    assert first_embedding_note(wb, "dense") is None, "cached: nothing to say"


def test_ask_says_when_it_makes_a_live_call_and_how_long_it_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from rag_lib.generation.call_records import LLMRequest, LLMResponse
    from rag_lib.pipeline.answer import AnnouncedRecorder

    request = LLMRequest("llama_cpp", "qwen2.5-coder-1.5b", ({"role": "user", "content": "Hi"},), {})

    def live(made: LLMRequest) -> LLMResponse:
        return LLMResponse(content="{}", completion_tokens=7)

    monkeypatch.setenv("RAG_PROGRESS", "1")
    AnnouncedRecorder(tmp_path / "a", mode="replay_or_live").call(request, live)
    err = capsys.readouterr().err
    assert "live call to llama_cpp:qwen2.5-coder-1.5b (its first call loads the model)" in err
    assert "answered in" in err and "7 tokens generated" in err
    AnnouncedRecorder(tmp_path / "a", mode="replay_or_live").call(request, live)
    assert capsys.readouterr().err == "", "a replayed call is not announced"
    monkeypatch.setenv("RAG_PROGRESS", "0")
    AnnouncedRecorder(tmp_path / "b", mode="replay_or_live").call(request, live)
    assert capsys.readouterr().err == ""
