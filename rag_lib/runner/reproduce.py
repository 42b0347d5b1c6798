"""``make reproduce``: execute every notebook headless into ``results/``.

Each notebook is authored as a jupytext percent script (``notebooks/NN_name.py``), paired with
its ``.ipynb``. It is executed with papermill on the project's kernel, with the parameters
its experiment declares (``EXPERIMENT`` in :mod:`rag_lib.results`), and written to
``results/notebooks/<name>.ipynb`` and ``.html``.
Volatile metadata (timings, papermill bookkeeping) is stripped, so an unchanged run is
byte-identical. A failing notebook is reported with its error and the others still run; the
command exits non-zero at the end if any failed. ``make check`` (:mod:`rag_lib.runner.expected`) then
compares the figures in the experiments' ``results.json`` with ``results/expected.yaml``.

Executing one notebook (papermill, the volatile metadata stripped, the HTML export) is
:mod:`rag_lib.runner.execution`; here: which runs execute (a run whose inputs are unchanged is
skipped), the lock, the progress lines and the summary, and the command line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_lib.core.config import (
    REPO_ROOT,
    RESULTS_DIR,
    cache_dir,
    progress_bars,
    results_dir,
    settings,
    shown_path,
)
from rag_lib.core.errors import WorkbookError, cli_errors
from rag_lib.core.io import exclusive_lock, write_text
from rag_lib.generation.llm_calls import MISSES_ENV, MODE_ENV
from rag_lib.pipeline.workbook import Workbook, ensure_corpus, load_workbook
from rag_lib.results.run_times import cache_state, duration, record_run_times
from rag_lib.results.runs import RUN_ENV, NotebookRun, planned_runs, reads_of
from rag_lib.runner.execution import RUNNING_PREFIX, RUNNING_SUFFIX, execute
from rag_lib.runner.inputs import fingerprint, input_files, last_seconds, stale, stamp_path, timing_path
from rag_lib.runner.notebooks import notebook_parameters, notebook_question

LOCK_NAME = ".reproduce.lock"


def remaining_note(later: list[NotebookRun]) -> str:
    """What the runs still to come took last time here (an upper bound: unchanged ones are skipped)."""
    if not later:
        return ""
    known = [t for t in (last_seconds(r) for r in later) if t is not None]
    untimed = len(later) - len(known)
    note = f"; {len(later)} to go"
    if known:
        note += f", about {duration(sum(known))} if all run (their last time here)"
    if untimed:
        note += f", {untimed} not timed here yet"
    return note


def run_all(only: list[str] | None = None, force: bool = False, quiet: bool = False,
            workbook: str | None = None) -> int:
    """Execute the planned notebooks (the casebook's, or the generic ones on ``workbook``, into
    ``results/<workbook>/``); return the number that failed.

    A run whose inputs (:func:`fingerprint`) are unchanged since its last successful execution
    on this machine, and whose executed notebook is still there, is reported up to date and not
    executed again; ``force`` executes everything. The stamps live in the (uncommitted) cache, so a
    fresh clone executes every notebook.
    """
    progress = progress_bars()  # this terminal's setting, for the first embedding made here
    opened = None
    if workbook is not None:
        opened = load_workbook(workbook)
        ensure_corpus(opened, quiet=quiet)  # fetched and imported once, before anything runs
        os.environ["RAG_RESULTS_DIR"] = str(RESULTS_DIR / workbook)  # kernels inherit it
    os.environ["RAG_PROGRESS"] = "0"  # kernels inherit it: no progress bars in executed notebooks
    with reproduce_lock(results_dir()):
        return _run_all(only, force, quiet, progress, opened)


def embed_corpus_once(progress: bool) -> None:
    """Embed the default batch with the default embedder, before the notebooks, into the cache they read.

    The first embedding takes minutes; inside a notebook's kernel it shows no bar (bars stay out of the
    executed notebooks), here it shows one with an ETA. It runs ``python -m rag_lib.runner.embed_corpus`` in its
    own process (the embedder sits in a layer above this one), which embeds only what the cache lacks,
    with the store and embedder the notebooks use. A failure is reported there and left to the notebooks.
    """
    import subprocess

    subprocess.run([sys.executable, "-m", "rag_lib.runner.embed_corpus", *(["--progress"] if progress else [])],
                   check=False)


class ReproduceBusyError(WorkbookError):
    """Another ``make reproduce`` writes into the same results folder."""


@contextmanager
def reproduce_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``root`` for one reproduce run; refuse a second one at once.

    Leftover scratch notebooks of a killed run are removed once the lock is held.
    """
    def busy(holder: str) -> ReproduceBusyError:
        return ReproduceBusyError(f"another `make reproduce` (pid {holder}) is writing into {root}; wait for it to "
                                  f"finish. (If no such process exists, delete {root / LOCK_NAME}.)")

    with exclusive_lock(root / LOCK_NAME, busy):
        for leftover in (root / "notebooks").glob(f"{RUNNING_PREFIX}*{RUNNING_SUFFIX}"):
            leftover.unlink(missing_ok=True)
        yield


def failure_cause(exc: BaseException) -> str:
    """``"Type: message"`` with the real cause: a notebook's own exception name and value, not
    papermill's empty first line."""
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"{type(exc).__name__}: {ename}: {evalue}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else repr(exc)}"


def _run_all(only: list[str] | None, force: bool, quiet: bool, progress: bool = False,
             workbook: Workbook | None = None) -> int:
    # Kernels inherit these too: replay recorded LLM calls only (never load a model), and log misses.
    os.environ.setdefault(MODE_ENV, "replay_only")
    misses_log = Path(os.environ.setdefault(MISSES_ENV, str(cache_dir() / "reproduce" / "llm-misses.jsonl")))
    misses_log.parent.mkdir(parents=True, exist_ok=True)
    misses_log.unlink(missing_ok=True)
    planned = planned_runs(workbook=workbook.name if workbook else None)
    unknown = sorted(set(only or ()) - {r.name for r in planned} - {r.notebook for r in planned})
    if unknown:
        raise SystemExit(f"unknown notebook run(s) {unknown}; planned: {[r.name for r in planned]} "
                         "(a new experiment is declared as EXPERIMENT beside its result type in rag_lib/results/)")
    runs = _selected(planned, only)
    for run in runs:  # before anything runs: a misspelt parameter would be ignored, not refused
        notebook_parameters(run)
    out_dir = results_dir() / "notebooks"
    cell_timeout = int(settings()["reproduce"]["cell_timeout_s"])
    failures: dict[str, str] = {}
    skipped: list[str] = []
    took_s: dict[str, float] = {}
    state, load_at_start, embed_s = cache_state(), os.getloadavg()[0], 0.0
    started = time.perf_counter()
    files = input_files(workbook)
    width = max(len(r.name) for r in runs) if runs else 0
    embedded = False
    for i, run in enumerate(runs, 1):
        head = f"[{i:>{len(str(len(runs)))}}/{len(runs)}] {run.name:<{width}}"
        t0 = time.perf_counter()
        inputs = fingerprint(run, reads_of(run, planned), files)
        stamp = stamp_path(run)
        if not force and stale(run, inputs, out_dir) is None:
            skipped.append(run.name)
            rerun = f"python -m rag_lib.runner.reproduce --force {run.name}"
            print(f"{head}  skipped (inputs unchanged; `{rerun}` re-runs it)", flush=True)
            continue
        if not embedded and workbook is None:  # before the first notebook that runs (none needs it if all skip)
            embed_corpus_once(progress)
            embedded = True
            embed_s = time.perf_counter() - t0
            t0 = time.perf_counter()
        try:
            stamp.unlink(missing_ok=True)
            os.environ[RUN_ENV] = run.name  # the kernel inherits it: a read it does not declare is refused
            try:
                with heartbeat(head, expected_s=last_seconds(run)):
                    execute(run, out_dir, cell_timeout)
            finally:
                os.environ.pop(RUN_ENV, None)
            write_text(stamp, inputs)
            took = time.perf_counter() - t0
            write_text(timing_path(run), f"{took:.1f}\n")
            took_s[run.name] = took
            shown = shown_path(out_dir / f"{run.name}.html")
            print(f"{head}  ok in {took:.0f} s → {shown}{remaining_note(runs[i:])}", flush=True)
        except Exception as exc:  # one failing notebook must not stop the others
            failures[run.name] = failure_cause(exc)
            elapsed = time.perf_counter() - t0
            print(f"{head}  FAILED in {elapsed:.0f} s\n{_indent(traceback.format_exc(limit=2))}", flush=True)
    from rag_lib.presentation.readme import update_readme_headline, write_results_index
    from rag_lib.runner.expected import check_counts

    total = time.perf_counter() - started
    if set(took_s) == {r.name for r in planned}:  # a forced run of every notebook, none failed: a full timing
        record_run_times(results_dir(), state, took_s, total, embed_s, load_at_start)
    questions = {run.name: notebook_question(run) for run in planned}
    write_results_index(results_dir(), planned, failures, check_counts(results_dir()), questions)  # every planned run
    if results_dir() == RESULTS_DIR:  # the README shows the committed results only
        update_readme_headline(REPO_ROOT / "README.md", RESULTS_DIR)
    ran = len(runs) - len(skipped) - len(failures)
    print(f"{ran} ok, {len(skipped)} skipped (unchanged), {len(failures)} failed, of {len(runs)} notebooks, in "
          f"{total:.0f} s; index: {shown_path(results_dir() / 'README.md')}")
    for name, error in failures.items():
        print(f"FAILED {name}: {error.splitlines()[0][:300]}")
    missing = _count_lines(misses_log)
    if missing and not quiet:
        print(f"{missing} LLM call(s) have no record and are reported as failed (replay_miss) in the results; "
              "fill them with `make llm-runs` (resumable), then `make reproduce` again.")
    return len(failures)


def _selected(planned: list[NotebookRun], only: list[str] | None) -> list[NotebookRun]:
    """The planned runs ``only`` names (a run name or a notebook), all of them when it names none."""
    return [r for r in planned if not only or r.name in only or r.notebook in only]


def plan(only: list[str] | None = None, workbook: str | None = None) -> list[tuple[str, str]]:
    """What ``make reproduce`` would do with each planned run, executing nothing: ``(run, why)``, where
    why is "inputs changed", "never ran here", "unchanged", or "after <runs> (re-runs if their results
    change)" for an unchanged run that reads one that will run (its input is their results.json)."""
    opened = load_workbook(workbook) if workbook else None
    planned, files = planned_runs(workbook=workbook), input_files(opened)
    out_dir = (RESULTS_DIR / workbook if workbook else results_dir()) / "notebooks"
    will_run: set[str] = set()
    out: list[tuple[str, str]] = []
    for run in _selected(planned, only):
        why = stale(run, fingerprint(run, reads_of(run, planned), files), out_dir)
        if why is None:
            upstream = [o.name for o in reads_of(run, planned) if o.name in will_run]
            why = f"after {', '.join(upstream)} (re-runs if their results change)" if upstream else "unchanged"
        if why != "unchanged":
            will_run.add(run.name)
        out.append((run.name, why))
    return out


def progress_line(head: str, elapsed_s: float, expected_s: float | None) -> str:
    """``head … still running (elapsed; ETA)``, the ETA from the run's last time on this machine."""
    if expected_s is None:
        eta = "first run here: no estimate yet"
    elif elapsed_s < expected_s:
        eta = f"about {duration(expected_s - elapsed_s)} left: it took {duration(expected_s)} last time"
    else:
        eta = f"over the {duration(expected_s)} it took last time"
    return f"{head}  … still running ({duration(elapsed_s)}; {eta})"


@contextmanager
def heartbeat(head: str, every_s: float = 60.0, expected_s: float | None = None) -> Iterator[None]:
    """Print :func:`progress_line` every ``every_s`` seconds while the block runs, so a long first
    embedding or LLM replay does not look hung, and says how long it should still take."""
    import threading

    done = threading.Event()
    started = time.perf_counter()

    def beat() -> None:
        while not done.wait(every_s):
            print(progress_line(head, time.perf_counter() - started, expected_s), flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _count_lines(path: Path) -> int:
    keys = {json.loads(line)["key"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()} \
        if path.is_file() else set()
    return len(keys)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()[-12:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rag_lib.runner.reproduce", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Execute every notebook headless into results/ (what `make reproduce` runs). A notebook whose "
                    "inputs are unchanged since its last run here is skipped.",
        epilog="runs, in order:\n" + "\n".join(f"  {r.name}" for r in planned_runs()))
    parser.add_argument("names", nargs="*", help="run only these notebooks (run names or notebook stems)")
    parser.add_argument("--force", action="store_true", help="execute even the notebooks whose inputs are unchanged")
    parser.add_argument("--plan", action="store_true", help="say which runs would execute and why; execute nothing")
    parser.add_argument("--workbook", help="run the generic notebooks on data/workbooks/NAME into results/NAME/")
    args = parser.parse_args(argv)
    if args.plan:
        with cli_errors():
            rows = plan(args.names, args.workbook)
        width = max((len(name) for name, _ in rows), default=0)
        print("\n".join(f"{name:<{width}}  {why}" for name, why in rows))
        return 0
    # SIGTERM ends the run like Ctrl-C, so `finally` blocks remove scratch files and release the lock.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with cli_errors():
            return 1 if run_all(args.names, force=args.force, workbook=args.workbook) else 0
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}); finished notebooks are kept, nothing is half-written.",
              file=sys.stderr)
        return 130


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
