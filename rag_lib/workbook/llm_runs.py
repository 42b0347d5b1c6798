"""``make llm-runs``: fill the missing LLM call records, live, resumably.

``make reproduce`` never calls a model: every LLM task replays ``results/llm_calls/``. This job
finds the calls that have no record and makes them:

1. **collect** — execute the notebooks into a scratch folder with ``RAG_LLM_MODE=replay_only`` and
   ``RAG_LLM_MISSES`` set, so every replay miss writes its exact request to a list;
2. **fill** — make each missing call live with the backend and model the request names, recording
   it the moment it completes (an interrupt loses at most the call in flight);
3. repeat while new misses appear (a rewritten question's retrieval feeds a later call).

A progress bar shows calls done and the ETA; the end prints tokens/s and total time. Re-running
the command resumes where it stopped. ``--max-calls`` bounds one sitting; ``--dry-run`` only
lists what is missing.
"""

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.config import results_dir
from rag_lib.errors import SettingError, WorkbookError
from rag_lib.generation.llm_calls import (
    MISSES_ENV,
    MODE_ENV,
    USED_ENV,
    CallRecorder,
    LLMCallError,
    LLMRequest,
    LLMResponse,
    request_from_json,
)


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
    from rag_lib.workbook.reproduce import run_all

    with tempfile.TemporaryDirectory(prefix="llm-runs-") as scratch:
        # The stored results first: a run may read an earlier one (06 compares against 01's baseline).
        shutil.copytree(results_dir(), scratch, dirs_exist_ok=True, ignore=shutil.ignore_patterns("llm_calls"))
        misses, asked = Path(scratch) / "misses.jsonl", Path(scratch) / "used.txt"
        saved = {k: os.environ.get(k) for k in (MODE_ENV, MISSES_ENV, USED_ENV, "RAG_RESULTS_DIR")}
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


@dataclass
class FillReport:
    """What one fill pass did."""

    made: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    by_model: Counter[str] = field(default_factory=Counter)
    recovered: int = 0  # records an interrupted run had left complete in a temporary file
    stopped: str | None = None  # why the pass ended early

    def lines(self) -> list[str]:
        out = [f"{self.made} call(s) recorded, {sum(self.failed.values())} failed {dict(self.failed) or ''}".rstrip()]
        if self.recovered:
            out.append(f"{self.recovered} record(s) an interrupted run had written were completed (not called again)")
        if self.stopped:
            out.append(f"stopped early: {self.stopped}")
        if self.model_seconds > 0:
            out.append(f"{self.prompt_tokens:,} prompt + {self.completion_tokens:,} generated tokens in "
                       f"{self.model_seconds:.0f} s of model time "
                       f"({(self.prompt_tokens + self.completion_tokens) / self.model_seconds:.1f} tokens/s overall)")
        out += [f"  {model}: {n} call(s)" for model, n in sorted(self.by_model.items())]
        return out


def executor_for(request: LLMRequest, cache: dict[tuple[str, str], object]) -> Callable[[LLMRequest], LLMResponse]:
    """The live call of the backend and model ``request`` names (one loaded model per pair).

    Raises
    ------
    WorkbookError
        When the model here is not the version the request was built for (a record must never
        claim a model that did not answer it).
    """
    from rag_lib.generation import get_generator

    pair = (request.backend, request.model)
    if pair not in cache:
        cache[pair] = get_generator(f"{request.backend}:{request.model}", recorder=CallRecorder(mode="live"))
    generator = cache[pair]
    version = getattr(generator, "model_version", None)
    if request.model_version and version and request.model_version != version:
        raise WorkbookError(f"{request.backend}:{request.model} here is {version}, but the request was built for "
                            f"{request.model_version}; unset RAG_GGUF_PATH or re-run the collect step.")
    return generator._complete  # type: ignore[attr-defined]


def check_max_calls(max_calls: int | None) -> None:
    """Raise unless ``max_calls`` is ``None`` (no bound) or a count of 0 or more.

    Raises
    ------
    SettingError
        For a negative number (``[:-1]`` would silently make all calls but one).
    """
    if max_calls is not None and max_calls < 0:
        raise SettingError(f"MAX_CALLS (--max-calls) must be 0 or more live calls (0 makes none; leave it unset for "
                           f"no bound); got {max_calls}.")


def fill(requests: Iterable[LLMRequest], recorder: CallRecorder, max_calls: int | None = None,
         progress: bool = True) -> FillReport:
    """Make and record each request that still has no record.

    Parameters
    ----------
    max_calls
        Live calls at most; ``0`` makes none, ``None`` no bound; a negative number is a
        :class:`~rag_lib.errors.SettingError`.
    """
    from tqdm.auto import tqdm

    check_max_calls(max_calls)
    report = FillReport()
    report.recovered = len(recorder.recover_interrupted()[0])  # a resume never repeats a completed call
    todo = [r for r in requests if recorder.load(r.key) is None]
    if max_calls is not None:  # 0 is a bound too (``or None`` made it unlimited)
        todo = todo[:max_calls]
    cache: dict[tuple[str, str], object] = {}
    bar = tqdm(total=len(todo), unit="call", desc="LLM calls", disable=not progress, file=sys.stderr)
    try:
        for request in todo:
            try:
                record = recorder.call(request, executor_for(request, cache))
            except LLMCallError as exc:
                report.failed[exc.kind] += 1
            else:
                if not record.written:  # the warning names the file; the next calls would be lost the same way
                    report.failed["not_recorded"] += 1
                    report.stopped = (f"the record of call {request.key[:12]} could not be written to "
                                      f"{recorder.directory}; free space there and run the same command again")
                    break
                report.made += 1
                report.prompt_tokens += record.response.prompt_tokens or 0
                report.completion_tokens += record.response.completion_tokens or 0
                report.model_seconds += record.latency_s
                report.by_model[f"{request.backend}:{request.model}"] += 1
            bar.update(1)
            bar.set_postfix_str(f"{request.model}")
    finally:
        bar.close()
    return report


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _rounds(args: argparse.Namespace) -> None:
    """The collect/fill rounds of :func:`main`."""
    recorder = CallRecorder(results_dir() / "llm_calls", mode="replay_or_live")
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
        report = fill(missing, recorder, budget)
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
    parser = argparse.ArgumentParser(prog="python -m rag_lib.workbook.llm_runs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="notebook runs to collect from (default: every planned run)")
    parser.add_argument("--max-calls", type=int, default=None,
                        help="stop after this many live calls (0: none, only list what is missing; default: no bound)")
    parser.add_argument("--rounds", type=int, default=3, help="collect/fill rounds at most (default 3)")
    parser.add_argument("--dry-run", action="store_true", help="list the missing calls, make none")
    parser.add_argument("--prune", action="store_true",
                        help="delete records no notebook asks for (needs every run: give no RUNS)")
    args = parser.parse_args(argv)
    try:
        check_max_calls(args.max_calls)
    except SettingError as exc:
        parser.error(str(exc))
    if args.prune and args.runs:
        parser.error("--prune needs every notebook run (a record unused by some runs may serve another)")
    # SIGTERM ends the job like Ctrl-C: scratch folders are removed, and a record being written is
    # finished first (CallRecorder holds both signals while it writes).
    signal.signal(signal.SIGTERM, _terminate)
    try:
        _rounds(args)
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}); every completed call is recorded, run the same command again to "
              "resume.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
