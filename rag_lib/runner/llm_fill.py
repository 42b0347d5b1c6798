"""The fill step of ``make llm-runs`` (:mod:`rag_lib.runner.llm_runs`): make each missing LLM call live
and record it the moment it completes.

:mod:`rag_lib.runner.llm_runs` holds the collect step, the collect/fill rounds
and the command line. Here: :func:`fill` and what it reports (:class:`FillReport`), the live call a
request names (:func:`executor_for`, :func:`route`: a server's when one can make it, else this
process's backend), the threads that keep N calls in flight (:class:`CallPool`) and the checks of
``--max-calls`` and ``--concurrency``. An interrupt waits for the calls in flight and records them too.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rag_lib.core.errors import SettingError, WorkbookError
from rag_lib.core.io import exclusive_lock
from rag_lib.generation.call_records import LOCAL_BACKENDS, LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError
from rag_lib.generation.llm_server import ServerExecutor


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
    wall_seconds: float = 0.0  # the pass's own time (with N calls in flight, less than the model time)
    concurrency: int = 1

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
        if self.made and self.wall_seconds > 0:
            out.append(f"{self.made / self.wall_seconds * 60:.1f} calls/min over {self.wall_seconds:.0f} s "
                       f"with {self.concurrency} call(s) in flight at most")
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


def check_concurrency(concurrency: int) -> None:
    """Raise unless ``concurrency`` is 1 or more.

    Raises
    ------
    SettingError
        For 0 or a negative number (no call could ever be made).
    """
    if concurrency < 1:
        raise SettingError(f"LLM_CONCURRENCY (--concurrency) must be 1 or more calls in flight; got {concurrency}.")


_IN_PROCESS = threading.Lock()  # one loaded model answers one call at a time (llama.cpp is not reentrant)


def route(request: LLMRequest, cache: dict[tuple[str, str], object],
          server: ServerExecutor | None = None) -> tuple[Callable[[LLMRequest], LLMResponse], bool]:
    """The live call for ``request``, and whether it must run alone: the server's when it can make it,
    else this process's backend (a local model one call at a time, an endpoint's client as many as asked)."""
    if server is not None and server.can_serve(request):
        return server, False
    return executor_for(request, cache), request.backend in LOCAL_BACKENDS


@dataclass
class _Done:
    """A finished live call: its response or the exception it raised, and its latency."""

    request: LLMRequest
    response: LLMResponse | None
    error: BaseException | None
    latency_s: float


class CallPool:
    """``workers`` threads that make live calls; :meth:`next_done` hands them back as they complete.

    The threads only make the calls; the caller records each in its own (main) thread, where a
    record's write holds Ctrl-C and SIGTERM until it is whole. Daemon threads: a second Ctrl-C
    leaves without waiting for a call that is still running.
    """

    def __init__(self, workers: int, clock: Callable[[], float] = time.perf_counter) -> None:
        self._jobs: queue.Queue[tuple[LLMRequest, Callable[[LLMRequest], LLMResponse], bool] | None] = queue.Queue()
        self._done: queue.Queue[_Done] = queue.Queue()
        self._clock = clock
        self.in_flight = 0
        self._threads = [threading.Thread(target=self._work, daemon=True, name=f"llm-call-{i}") for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            request, live, alone = job
            # The lock is taken before the clock starts: a record's latency is the call's, not the wait.
            with _IN_PROCESS if alone else contextlib.nullcontext():
                started = self._clock()
                try:
                    response = live(request)
                except BaseException as exc:  # handed to the main thread, which decides
                    self._done.put(_Done(request, None, exc, self._clock() - started))
                else:
                    self._done.put(_Done(request, response, None, self._clock() - started))

    def submit(self, request: LLMRequest, live: Callable[[LLMRequest], LLMResponse], alone: bool = False) -> None:
        """Start ``live(request)`` on a free thread; ``alone``: never beside another such call."""
        self.in_flight += 1
        self._jobs.put((request, live, alone))

    def next_done(self) -> _Done:
        """The next call to complete (waits in short steps, so Ctrl-C is seen at once)."""
        while True:
            try:
                done = self._done.get(timeout=0.2)
            except queue.Empty:
                continue
            self.in_flight -= 1
            return done

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


FILL_LOCK_NAME = ".fill.lock"  # in the calls folder: one fill at a time writes into it


class FillBusyError(WorkbookError):
    """Another fill (``make llm-runs``) is making calls into the same calls folder."""


@contextmanager
def fill_lock(directory: Path) -> Iterator[None]:
    """Hold the calls folder for one fill; another process's fill into it is refused at once, naming its pid.

    Two fills side by side would both see a call as missing and both make it (a paid call made twice).
    """
    def busy(holder: str) -> FillBusyError:
        return FillBusyError(f"another fill (pid {holder}) is making calls into {directory}; wait for it to finish "
                             "(its calls are recorded as they complete), then run the same command again: it "
                             "resumes and makes only what is still missing.")

    with exclusive_lock(directory / FILL_LOCK_NAME, busy):
        yield


def fill(requests: Iterable[LLMRequest], recorder: CallRecorder, max_calls: int | None = None,
         progress: bool = True, *, concurrency: int = 1, server: ServerExecutor | None = None,
         cache: dict[tuple[str, str], object] | None = None, locked: bool = False) -> FillReport:
    """Make and record each request that still has no record.

    Parameters
    ----------
    max_calls
        Live calls at most; ``0`` makes none, ``None`` no bound; a negative number is a
        :class:`~rag_lib.core.errors.SettingError`.
    progress
        Show a bar (calls done, ETA) on stderr.
    concurrency
        Live calls in flight at most (1: one after the other). Calls are started in the order of
        ``requests``; each is recorded under its own request's key as it completes.
    server
        Make the local models' chat calls through this OpenAI-compatible server (checked first: it
        must serve every model asked for under its workbook name).
    cache
        In-process generators by ``(backend, model)`` to reuse (:func:`executor_for` fills it), so that
        a caller making several passes loads each model once.
    locked
        The caller already holds :func:`fill_lock` on ``recorder.directory`` (``make llm-runs`` holds it
        for all its rounds); otherwise it is held for this pass.

    Raises
    ------
    ModelUnavailableError
        When ``server`` cannot be reached or lacks a model.
    FillBusyError
        When another process fills the same calls folder.
    KeyboardInterrupt
        After the calls in flight have completed and been recorded (a second one does not wait).
    """
    check_max_calls(max_calls)
    check_concurrency(concurrency)
    if not locked:
        with fill_lock(recorder.directory):
            return _fill(requests, recorder, max_calls, progress, concurrency, server, cache)
    return _fill(requests, recorder, max_calls, progress, concurrency, server, cache)


def _fill(requests: Iterable[LLMRequest], recorder: CallRecorder, max_calls: int | None, progress: bool,
          concurrency: int, server: ServerExecutor | None, cache: dict[tuple[str, str], object] | None) -> FillReport:
    """:func:`fill`'s pass, with the calls folder held."""
    from tqdm.auto import tqdm

    report = FillReport(concurrency=concurrency)
    report.recovered = len(recorder.recover_interrupted()[0])  # a resume never repeats a completed call
    todo = [r for r in requests if recorder.load(r.key) is None]
    if max_calls is not None:  # 0 is a bound too (``or None`` made it unlimited)
        todo = todo[:max_calls]
    if server is not None and todo:
        served = sorted({r.model for r in todo if server.can_serve(r)})
        if served:
            server.check_models(served)
    cache = {} if cache is None else cache
    bar = tqdm(total=len(todo), unit="call", desc="LLM calls", disable=not progress, file=sys.stderr)
    pool = CallPool(min(concurrency, max(len(todo), 1)), clock=recorder._clock)  # latency as call() measures it
    waiting = iter(todo)
    started = time.perf_counter()

    def feed() -> None:
        while report.stopped is None and pool.in_flight < concurrency:
            request = next(waiting, None)
            if request is None:
                return
            pool.submit(request, *route(request, cache, server))

    def record(done: _Done) -> None:
        if done.error is not None:
            if not isinstance(done.error, LLMCallError):
                raise done.error  # Ctrl-C in a call, or a bug: after the calls in flight (below)
            recorder.record_failure(done.request, done.error)
            report.failed[done.error.kind] += 1
        else:
            assert done.response is not None
            try:
                written = recorder.record(done.request, done.response, done.latency_s)
            except LLMCallError as exc:  # refused as it is recorded (a reply over the size cap): already recorded
                report.failed[exc.kind] += 1  # as a small failure; the fill goes on
                bar.update(1)
                return
            if not written.written:  # the warning names the file; the next calls would be lost the same way
                report.failed["not_recorded"] += 1
                report.stopped = (f"the record of call {done.request.key[:12]} could not be written to "
                                  f"{recorder.directory}; free space there and run the same command again")
            else:
                report.made += 1
                report.prompt_tokens += written.response.prompt_tokens or 0
                report.completion_tokens += written.response.completion_tokens or 0
                report.model_seconds += written.latency_s
                report.by_model[f"{done.request.backend}:{done.request.model}"] += 1
        bar.update(1)
        flight = f", {pool.in_flight} in flight" if concurrency > 1 else ""
        bar.set_postfix_str(f"{done.request.model}{flight}")

    try:
        feed()
        while pool.in_flight:
            done = pool.next_done()
            try:
                record(done)
            except BaseException:
                report.stopped = report.stopped or "interrupted"
                raise
            feed()
    except BaseException:
        if pool.in_flight:  # completed calls are never lost: the ones in flight are recorded too
            print(f"\nwaiting for the {pool.in_flight} call(s) in flight to complete and be recorded (Ctrl-C again "
                  "drops them) …", file=sys.stderr, flush=True)
            report.stopped = report.stopped or "interrupted"
            while pool.in_flight:
                done = pool.next_done()
                if done.error is None or isinstance(done.error, LLMCallError):
                    record(done)
        raise
    finally:
        pool.close()
        bar.close()
        report.wall_seconds = time.perf_counter() - started
    return report
