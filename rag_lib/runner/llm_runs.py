"""``make llm-runs``: fill the missing LLM call records, live, resumably.

``make reproduce`` never calls a model: every LLM task replays ``results/llm_calls/``. This job
finds the calls that have no record and makes them:

1. **collect** — execute the notebooks into a scratch folder with ``RAG_LLM_MODE=replay_only`` and
   ``RAG_LLM_MISSES`` set, so every replay miss writes its exact request to a list;
2. **fill** — make each missing call live with the backend and model the request names, recording
   it the moment it completes (an interrupt waits for the calls in flight and records them too);
3. repeat while new misses appear (a rewritten question's retrieval feeds a later call).

A progress bar shows calls done and the ETA; the end prints tokens/s and total time. Re-running
the command resumes where it stopped. ``--max-calls`` bounds one sitting; ``--dry-run`` only
lists what is missing.

Past one process: ``--server URL`` (``LLM_SERVER``) sends the local models' calls to an
OpenAI-compatible server (llama.cpp's, vLLM, a hosted endpoint) that serves the same GGUF files
under the workbook's model names, and ``--concurrency N`` (``LLM_CONCURRENCY``) keeps N calls in
flight. Each call is recorded under its own request's key as it completes, whatever the order;
yes/no judgements (next-token logits) and calls without a server are made in this process, one at
a time. The key of a server, if it needs one, is read from ``RAG_LLM_SERVER_API_KEY`` only.
"""
# This docstring is the command's --help. The collect step, the rounds and the command line are here; the
# fill step (fill, FillReport, CallPool, executor_for, route, check_max_calls, check_concurrency) is in
# rag_lib.runner.llm_fill.

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rag_lib.core.config import progress_bars, results_dir
from rag_lib.core.errors import SettingError, cli_errors
from rag_lib.generation.call_records import LLMRequest, request_from_json
from rag_lib.generation.llm_calls import MISSES_ENV, MODE_ENV, USED_ENV, CallRecorder
from rag_lib.generation.llm_server import ServerExecutor
from rag_lib.runner.llm_fill import check_concurrency, check_max_calls, fill, fill_lock


def read_misses(path: Path) -> list[LLMRequest]:
    """The distinct missing requests logged in ``path``, in first-seen order."""
    seen: dict[str, LLMRequest] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                seen.setdefault(row["key"], request_from_json(row["request"]))
    return list(seen.values())


def collect_misses(runs: list[str] | None, used: set[str] | None = None) -> tuple[list[LLMRequest], int]:
    """Execute ``runs`` (default: every planned notebook) in replay-only mode into a scratch copy of the
    results; return the requests that had no record and the number of runs that failed (a failed run
    asked for only some of its calls). ``used`` receives every key asked for."""
    from rag_lib.runner.reproduce import run_all

    with tempfile.TemporaryDirectory(prefix="llm-runs-") as scratch:
        # The stored results first: a run may read an earlier one (06 compares against 01's baseline).
        shutil.copytree(results_dir(), scratch, dirs_exist_ok=True, ignore=shutil.ignore_patterns("llm_calls"))
        misses, asked = Path(scratch) / "misses.jsonl", Path(scratch) / "used.txt"
        # RAG_PROGRESS too: the notebook runs turn bars off for their kernels, not for the fill after them.
        saved = {k: os.environ.get(k) for k in (MODE_ENV, MISSES_ENV, USED_ENV, "RAG_RESULTS_DIR", "RAG_PROGRESS")}
        os.environ.update({MODE_ENV: "replay_only", MISSES_ENV: str(misses), USED_ENV: str(asked),
                           "RAG_RESULTS_DIR": scratch})
        try:
            failed = run_all(runs, force=True, quiet=True)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        if used is not None and asked.is_file():
            used.update(line.strip() for line in asked.read_text(encoding="utf-8").splitlines() if line.strip())
        return read_misses(misses), failed


def orphans(recorder: CallRecorder, used: set[str]) -> list[Path]:
    """Records that no notebook asks for any more (an old prompt, model or setting); a recorded failure
    (``<key>.failed.json``) of a key still asked for is kept, since replaying it is the run's outcome."""
    return sorted(p for p in recorder.directory.glob("*.json")
                  if p.name.removesuffix(".json").removesuffix(".failed") not in used)


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _rounds(args: argparse.Namespace) -> None:
    """The collect/fill rounds of :func:`main`, with the calls folder held for all of them (a second
    ``make llm-runs`` into the same folder is refused before it collects anything)."""
    recorder = CallRecorder(results_dir() / "llm_calls", mode="replay_or_live")
    with fill_lock(recorder.directory):
        _held_rounds(args, recorder)


def _held_rounds(args: argparse.Namespace, recorder: CallRecorder) -> None:
    server = ServerExecutor(args.server, kind=args.server_kind) if args.server else None
    progress = progress_bars()
    if server is not None:
        print(f"local-model calls go to the {server.kind} server at {server.shown_url}, {args.concurrency} at a time "
              "(yes/no judgements stay in this process)", flush=True)
    elif args.concurrency > 1:
        print(f"--concurrency {args.concurrency}: endpoint calls run {args.concurrency} at a time; local-model calls "
              "run in this process one at a time (set LLM_SERVER to send them to a server)", flush=True)
    completed, removed = recorder.recover_interrupted()  # before collecting: a completed call is not a miss
    if completed or removed:
        print(f"{len(completed)} record(s) an interrupted run left were completed, {len(removed)} partial file(s) "
              "removed", flush=True)
    started = time.perf_counter()
    budget = args.max_calls
    for round_no in range(1, args.rounds + 1):
        print(f"round {round_no}: collecting missing calls (notebooks in replay-only mode) …", flush=True)
        used: set[str] = set()
        missing, failed = collect_misses(args.runs or None, used)
        if failed:
            print(f"  {failed} notebook run(s) failed (see the lines above): their calls are collected only up "
                  "to the failure" + ("; nothing is pruned" if args.prune else ""), flush=True)
        if args.prune and not failed:
            stale = orphans(recorder, used)
            for path in stale:
                path.unlink()
            print(f"  pruned {len(stale)} record(s) that no notebook asks for", flush=True)
        by_model = Counter(f"{r.backend}:{r.model}" for r in missing)
        print(f"  {len(missing)} missing: {dict(by_model) or 'none'}", flush=True)
        if not missing or args.dry_run or budget == 0:
            if budget == 0 and missing:
                print("  --max-calls 0: no live call made; run without MAX_CALLS (or with a positive one) to make "
                      "them.")
            break
        report = fill(missing, recorder, budget, progress, concurrency=args.concurrency, server=server, locked=True)
        for line in report.lines():
            print("  " + line, flush=True)
        if report.stopped:
            break
        if budget is not None:
            budget -= report.made + sum(report.failed.values())
            if budget <= 0:
                print("  --max-calls reached; run the same command again to continue.")
                break
    print(f"done in {time.perf_counter() - started:.0f} s. Now `make reproduce` replays the records; "
          f"commit results/llm_calls/.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.runner.llm_runs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="notebook runs to collect from (default: every planned run)")
    parser.add_argument("--max-calls", type=int, default=None,
                        help="stop after this many live calls (0: none, only list what is missing; default: no bound)")
    parser.add_argument("--rounds", type=int, default=3, help="collect/fill rounds at most (default 3)")
    parser.add_argument("--dry-run", action="store_true", help="list the missing calls, make none")
    parser.add_argument("--prune", action="store_true",
                        help="delete records no notebook asks for (needs every run: give no RUNS)")
    parser.add_argument("--server", default=os.environ.get("LLM_SERVER") or None,
                        help="OpenAI-compatible base URL that serves the local models under their workbook names "
                             "(default: LLM_SERVER; its key, if any, from RAG_LLM_SERVER_API_KEY only)")
    parser.add_argument("--server-kind", default=os.environ.get("LLM_SERVER_KIND") or None,
                        choices=["llama.cpp", "openai"],
                        help="llama.cpp (default) or openai (vLLM, SGLang, hosted: OpenAI's json_schema format); "
                             "default LLM_SERVER_KIND")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="live calls in flight at most (default: LLM_CONCURRENCY, else 1)")
    args = parser.parse_args(argv)
    try:
        if args.concurrency is None:
            text = os.environ.get("LLM_CONCURRENCY", "").strip() or "1"
            try:
                args.concurrency = int(text)
            except ValueError:
                raise SettingError(f"LLM_CONCURRENCY must be a whole number of calls in flight; "
                                   f"got {text!r}.") from None
        check_max_calls(args.max_calls)
        check_concurrency(args.concurrency)
        if args.rounds < 1:  # no round would run: the job would exit 0 having done nothing
            raise SettingError(f"--rounds must be 1 or more collect/fill rounds (default 3); got {args.rounds}.")
    except SettingError as exc:
        parser.error(str(exc))
    if args.prune and args.runs:
        parser.error("--prune needs every notebook run (a record unused by some runs may serve another)")
    # SIGTERM ends the job like Ctrl-C: scratch folders are removed, and a record being written is
    # finished first (CallRecorder holds both signals while it writes).
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with cli_errors("llm-runs"):  # a server that is down or lacks a model: one line, not a traceback
            _rounds(args)
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}); every completed call is recorded, run the same command again to "
              "resume.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
