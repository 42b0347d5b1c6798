"""Load and soak (issue #45, item 4): three bounded scenarios, on loopback (127.0.0.1) only.

Every loop is bounded in count and time, every child process is killed and every scratch folder is
removed when the script ends, also on Ctrl-C or SIGTERM. The committed ``results/`` is only read: a
sha256 manifest of the whole folder is taken before and after each scenario and compared.

``ask`` (8 workers x 300 s)
    Each of ``--workers`` workers runs ``python -m rag_lib ask <id> --lang <zh|en> --generator G``
    over a rotating set of benchmark questions, starting a new process when its last one ends, for
    ``--duration`` seconds (no new process after that; one still running is waited for, up to
    ``--ask-timeout``). Replay only: ``RAG_LLM_MODE=replay_only``, ``RAG_LLM_MISSES`` names a scratch
    file (a miss is counted), ``RAG_CACHE_DIR`` is a scratch copy of ``.cache/`` (without the model
    files, which replay does not read), so the shared cache is not written either. ``ask`` reads
    ``results/`` (the gate's parameters, ``results/llm_calls/``) and writes nothing there.

    The generator is ``llama_cpp:qwen2.5-coder-1.5b`` (the narrowed pipeline): the ``answer_narrowed``
    model that a plain ``ask`` uses when the model is installed. Where it is not installed a plain
    ``ask`` falls back to the extractive baseline, which makes no LLM call at all, so the generator is
    named explicitly (replay needs neither the model file nor llama.cpp). Every benchmark question
    replays without a miss with it (checked zh and en, 2026-12-05).

    Figures: answers completed; answers lost (exit status not that of the printed outcome, no outcome
    line, no answer / withheld / decline body, outcome ``error``, a call not REPLAYED, a kill on
    timeout); answers that differ from the first answer to the same question (replay is deterministic);
    replay misses; records of ``results/llm_calls/`` that do not parse, changed, appeared or vanished;
    each ask process's peak RSS (``ru_maxrss`` from ``os.wait4``: exact, per process) and whether the
    median of the processes started in the first minute and of those started in the last minute
    differ by less than 10 %.

``fill`` (60 requests, 4 in flight)
    :func:`rag_lib.runner.llm_fill.fill` with a :class:`~rag_lib.generation.llm_server.ServerExecutor`
    against a fake llama.cpp server started here on 127.0.0.1 (``GET /v1/models``, ``POST
    /v1/chat/completions``), recording into a scratch folder. The requests are the first ``--requests``
    distinct local-model chat requests recorded in ``results/llm_calls/`` (what the collect step builds:
    ``LLMRequest`` with the model's chat messages, JSON schema and sampling parameters). The server
    answers in ``--base-latency`` s for ``--normal-s`` s, then 10x slower for ``--slow-s`` s, then HTTP
    503 for ``--error-s`` s, then recovers. A second pass (a resume, as ``make llm-runs`` does when run
    again) fills what failed. With the default stretches most calls are still held by the slow stretch when
    the 503 one starts, so few meet a 503 and each gets through on a retry (2 s, then 4 s of back-off);
    ``--error-s 20`` outlasts the three attempts, and calls fail as ``server_error``.
    Figures: calls recorded, failures by kind, request bodies the server
    answered 200 more than once (must be 0), retries, wall time, calls/min per phase, records whose
    reply is not the one the server sent for their body. Then two fill processes at once into one
    scratch folder against one server: the second must be refused (``FillBusyError``) and every body
    answered once.

``reproduce``
    ``python -m rag_lib.runner.reproduce --force RUN`` (default ``05_q7_diagnosis``: the lightest run,
    two seconds of notebook; ``00_corpus`` rewrites the derived corpus files under ``data/``, outside
    the results folder, so it is not the default) with ``RAG_RESULTS_DIR`` on a scratch copy of
    ``results/`` and ``RAG_CACHE_DIR`` on a scratch copy of ``.cache/``; once it holds the folder's lock
    a second, identical command starts. Figures: the second's exit status, time and message
    (refused by name, or waited), the first's exit status and whether its results are whole.

Commands (``--json PATH`` also writes the figures as JSON)::

    .venv/bin/python benchmarks/soak.py --scenario ask        # 8 workers x 300 s
    .venv/bin/python benchmarks/soak.py --scenario fill       # 60 requests, concurrency 4
    .venv/bin/python benchmarks/soak.py --scenario reproduce  # two reproduce runs on one scratch folder
    .venv/bin/python benchmarks/soak.py --scenario all --json /tmp/soak.json
    .venv/bin/python benchmarks/soak.py --scenario ask --duration 60 --workers 2   # a short check
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
CALLS = RESULTS / "llm_calls"
LOOPBACK = "127.0.0.1"
PYTHON = sys.executable
ASK_GENERATOR = "llama_cpp:qwen2.5-coder-1.5b"
# Benchmark questions (id, language) whose narrowed answer call is recorded: answered and withheld, zh and en.
ASK_QUESTIONS = ("q05:zh", "q07:zh", "a01:zh", "a02:zh", "a03:zh", "a20:zh", "a29:zh", "n03:zh",
                 "q05:en", "q07:en", "q09a:en", "a01:en", "a05:en", "a15:en", "a16:en", "a53:en")
EXIT_OF = {"answered": 0, "declined": 3, "withheld": 4}
SCRATCH_CACHE_SKIP = ("models", "reproduce", "llm_calls_adhoc")


# --------------------------------------------------------------------------------------------- common


class Children:
    """Every child process started here; :meth:`kill_all` ends each one's process group."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()

    def start(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        with self._lock:
            proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
            self._procs.append(proc)
            return proc

    def kill_all(self) -> None:
        with self._lock:
            procs = [p for p in self._procs if p.returncode is None]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            alive = [p for p in procs if _alive(p)]
            for proc in alive:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
            deadline = time.monotonic() + 5
            while any(_alive(p) for p in alive) and time.monotonic() < deadline:
                time.sleep(0.1)


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    if proc.returncode is not None:
        return False
    try:
        return proc.poll() is None
    except ChildProcessError:
        return False


CHILDREN = Children()


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").is_file() else "n/a"


def manifest(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by relative path."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def unparsable_records(folder: Path) -> list[str]:
    """The ``*.json`` files of a calls folder that are not a JSON object with a key."""
    bad = []
    for path in sorted(folder.glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(row, dict) or "key" not in row:
                bad.append(path.name)
        except (OSError, ValueError):
            bad.append(path.name)
    return bad


def compare(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    return {"added": sorted(set(after) - set(before)), "removed": sorted(set(before) - set(after)),
            "changed": sorted(k for k in set(before) & set(after) if before[k] != after[k])}


def results_check(before: dict[str, str]) -> dict[str, Any]:
    """The committed results/ against ``before``, and the records of results/llm_calls/ that do not parse."""
    diff = compare(before, manifest(RESULTS))
    return {"files": len(before), **{k: v[:20] for k, v in diff.items()},
            "n_added": len(diff["added"]), "n_removed": len(diff["removed"]), "n_changed": len(diff["changed"]),
            "unparsable_llm_calls": unparsable_records(CALLS)}


def scratch_cache(root: Path) -> Path:
    """A copy of ``.cache/`` (embeddings, the embedder's files) without model files or run stamps."""
    source = Path(os.environ.get("RAG_CACHE_DIR") or REPO / ".cache")
    target = root / "cache"
    if source.is_dir():
        shutil.copytree(source, target, ignore=lambda d, names: [n for n in names if Path(d) == source
                                                                 and n in SCRATCH_CACHE_SKIP])
    else:
        target.mkdir()
    return target


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------------------------------------ ask


@dataclass
class AskRun:
    worker: int
    question: str
    started_s: float
    wall_s: float
    returncode: int
    maxrss_mib: float
    outcome: str | None
    problem: str | None  # why the answer is lost (None: completed)
    stdout: str
    stderr_tail: str


def check_ask_output(stdout: str, returncode: int) -> tuple[str | None, str | None]:
    """``(outcome, problem)``: the printed outcome, and why the answer counts as lost (``None``: it does not)."""
    found = re.search(r"outcome: (answered|declined|withheld|error)\.", stdout)
    if found is None:
        return None, f"no outcome line (exit {returncode})"
    outcome = found[1]
    if outcome == "error":
        return outcome, f"outcome error (exit {returncode})"
    if returncode != EXIT_OF[outcome]:
        return outcome, f"exit {returncode} for outcome {outcome}"
    body = stdout.split("\n\n", 1)[1] if "\n\n" in stdout else ""
    if not body.strip():
        return outcome, "no answer body"
    if outcome == "withheld" and "answer withheld (" not in body:
        return outcome, "withheld without its line"
    if "it was asked" in stdout and "call: REPLAYED" not in stdout:
        return outcome, "the model call was not replayed"
    return outcome, None


def ask_worker(index: int, questions: list[str], env: dict[str, str], out_dir: Path, t0: float, deadline: float,
               max_runs: int, generator: str, runs: list[AskRun], lock: threading.Lock, stop: threading.Event,
               running: dict[int, tuple[int, float]]) -> None:
    """One worker: a new ask process as soon as its last one ends, until ``deadline`` or ``max_runs``."""
    n = 0
    while not stop.is_set() and time.monotonic() < deadline and n < max_runs:
        qid, _, lang = questions[(index + n) % len(questions)].partition(":")
        n += 1
        out, err = out_dir / f"w{index}.out", out_dir / f"w{index}.err"
        started = time.monotonic()
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = CHILDREN.start([PYTHON, "-m", "rag_lib", "ask", qid, "--lang", lang, "--generator", generator],
                                  stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env, cwd=REPO)
            with lock:
                running[index] = (proc.pid, started)
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except ChildProcessError:  # reaped by the cleanup after Ctrl-C
                usage = None
                proc.returncode = proc.returncode if proc.returncode is not None else -signal.SIGKILL
            else:
                proc.returncode = os.waitstatus_to_exitcode(status)
        with lock:
            running.pop(index, None)
        wall = time.monotonic() - started
        stdout = out.read_text(encoding="utf-8", errors="replace")
        stderr = err.read_text(encoding="utf-8", errors="replace")
        outcome, problem = check_ask_output(stdout, proc.returncode)
        if proc.returncode < 0:
            problem = f"killed by signal {-proc.returncode}" + (" (ask timeout)" if not stop.is_set() else "")
        rss = usage.ru_maxrss / 1024 if usage is not None else float("nan")  # KiB on Linux
        with lock:
            runs.append(AskRun(index, f"{qid}:{lang}", started - t0, wall, proc.returncode, rss, outcome, problem,
                               stdout, "\n".join(stderr.strip().splitlines()[-3:])))


def scenario_ask(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    questions = [q.strip() for q in args.questions.split(",") if q.strip()]
    out_dir = scratch / "ask"
    out_dir.mkdir()
    cache = scratch_cache(scratch)
    misses = scratch / "ask-misses.jsonl"
    env = {**os.environ, "RAG_LLM_MODE": "replay_only", "RAG_PROGRESS": "0", "RAG_CACHE_DIR": str(cache),
           "RAG_LLM_MISSES": str(misses)}
    env.pop("RAG_RESULTS_DIR", None)  # ask reads the committed results; the manifest shows it writes none
    before = manifest(RESULTS)
    before_cache = manifest(cache)
    print(f"[ask] {args.workers} workers x {args.duration:.0f} s, {len(questions)} questions, generator "
          f"{args.generator}; load average {loadavg()}", flush=True)
    runs: list[AskRun] = []
    lock = threading.Lock()
    stop = threading.Event()
    running: dict[int, tuple[int, float]] = {}
    t0 = time.monotonic()
    deadline = t0 + args.duration
    threads = [threading.Thread(target=ask_worker, daemon=True, name=f"ask-{i}",
                                args=(i, questions, env, out_dir, t0, deadline, args.max_runs, args.generator,
                                      runs, lock, stop, running)) for i in range(args.workers)]
    load_samples: list[float] = []
    killed_on_timeout = 0
    try:
        for thread in threads:
            thread.start()
        hard_stop = deadline + args.ask_timeout + 30
        last_note = t0
        while any(t.is_alive() for t in threads) and time.monotonic() < hard_stop:
            time.sleep(1)
            now = time.monotonic()
            load_samples.append(os.getloadavg()[0])
            with lock:
                stuck = [pid for pid, started in running.values() if now - started > args.ask_timeout]
            for pid in stuck:  # bounded: one ask may not run past --ask-timeout
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                    killed_on_timeout += 1
            if now - last_note >= 60:
                last_note = now
                with lock:
                    done, lost = len(runs), sum(1 for r in runs if r.problem)
                print(f"[ask] {now - t0:.0f} s: {done} finished, {lost} lost, load {loadavg()}", flush=True)
    finally:
        stop.set()
        if any(t.is_alive() for t in threads):
            CHILDREN.kill_all()
        for thread in threads:
            thread.join(timeout=10)
    wall = time.monotonic() - t0
    first: dict[str, AskRun] = {}
    differ = 0
    differ_detail: list[dict[str, Any]] = []
    for run in sorted(runs, key=lambda r: r.started_s):
        if run.problem is None:
            earlier = first.setdefault(run.question, run)
            if earlier.stdout != run.stdout:
                differ += 1
                changed = [line for line in difflib.unified_diff(earlier.stdout.splitlines(), run.stdout.splitlines(),
                                                                 lineterm="", n=0) if line[:1] in "+-"][2:8]
                differ_detail.append({"question": run.question, "first_started_s": round(earlier.started_s, 1),
                                      "started_s": round(run.started_s, 1), "diff": changed})
    completed = [r for r in runs if r.problem is None]
    lost = [r for r in runs if r.problem is not None]
    window = min(60.0, args.duration / 2)
    early = [r.maxrss_mib for r in runs if r.started_s < window]
    late = [r.maxrss_mib for r in runs if r.started_s >= args.duration - window]
    early_med, late_med = median(early), median(late)
    change = (late_med - early_med) / early_med * 100 if early_med and late_med is not None else None
    miss_keys = {json.loads(line)["key"] for line in misses.read_text(encoding="utf-8").splitlines()
                 if line.strip()} if misses.is_file() else set()
    walls = [r.wall_s for r in runs]
    cache_diff = compare(before_cache, manifest(cache))
    return {
        "workers": args.workers, "duration_s": args.duration, "generator": args.generator, "questions": questions,
        "wall_s": round(wall, 1), "processes": len(runs), "completed": len(completed),
        "outcomes": dict(Counter(r.outcome or "none" for r in completed)),
        "lost": len(lost), "lost_reasons": dict(Counter(r.problem for r in lost)),
        "lost_detail": [{"question": r.question, "returncode": r.returncode, "why": r.problem,
                                            "stderr": r.stderr_tail} for r in lost[:10]],
        "killed_on_timeout": killed_on_timeout, "answers_differing_from_first": differ,
        "differing_detail": differ_detail[:10],
        "replay_misses": len(miss_keys),
        "ask_wall_s": {"median": median(walls), "p90": pct(walls, 0.9), "max": max(walls, default=None)},
        "rss_mib": {"first_minute_n": len(early), "first_minute_median": early_med,
                    "last_minute_n": len(late), "last_minute_median": late_med,
                    "change_pct": change, "flat_within_10pct": change is not None and abs(change) < 10,
                    "min": min((r.maxrss_mib for r in runs), default=None),
                    "max": max((r.maxrss_mib for r in runs), default=None)},
        "load_1min": {"median": median(load_samples), "max": max(load_samples, default=None)},
        "results": results_check(before), "scratch_cache_written": {k: v[:10] for k, v in cache_diff.items()},
    }


def print_ask(r: dict[str, Any]) -> None:
    rss = r["rss_mib"]

    def mib(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.0f}"

    res = r["results"]
    lost_example = ""
    if r["lost_detail"]:
        first = r["lost_detail"][0]
        lost_example = f"\n  e.g.             {first['question']}: {first['stderr'].splitlines()[-1:] or ''}"
    print(f"""
== ask: {r['workers']} workers x {r['duration_s']:.0f} s ({r['generator']}, replay only) ==
ask processes      {r['processes']} in {r['wall_s']:.0f} s wall; per ask median {_s(r['ask_wall_s']['median'])}, \
p90 {_s(r['ask_wall_s']['p90'])}, max {_s(r['ask_wall_s']['max'])}
answers completed  {r['completed']}  {r['outcomes']}
answers lost       {r['lost']}  {r['lost_reasons'] or ''}{lost_example}
killed on timeout  {r['killed_on_timeout']}
differ from first  {r['answers_differing_from_first']} (same question, same replayed call)
replay misses      {r['replay_misses']}
results/ records   {res['files']} files: {res['n_added']} added, {res['n_changed']} changed, {res['n_removed']} \
removed; {len(res['unparsable_llm_calls'])} llm_calls record(s) unparsable
peak RSS (MiB)     first minute median {mib(rss['first_minute_median'])} (n={rss['first_minute_n']}), last \
minute median {mib(rss['last_minute_median'])} (n={rss['last_minute_n']}), change \
{'n/a' if rss['change_pct'] is None else format(rss['change_pct'], '+.1f') + ' %'}: \
{'flat (within 10 %)' if rss['flat_within_10pct'] else 'NOT flat within 10 %'}; range {mib(rss['min'])}..\
{mib(rss['max'])}
load (1-min)       median {_f(r['load_1min']['median'])}, max {_f(r['load_1min']['max'])}
scratch cache      {sum(len(v) for v in r['scratch_cache_written'].values())} file(s) written \
{ {k: v for k, v in r['scratch_cache_written'].items() if v} or ''}""")


def _s(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} s"


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


# --------------------------------------------------------------------------------------------- fill


@dataclass
class Phases:
    """What the fake server does, by seconds since :meth:`FakeServer.begin`."""

    base_latency_s: float = 1.0
    normal_s: float = 6.0
    slow_s: float = 12.0
    slow_factor: float = 10.0
    error_s: float = 10.0

    def at(self, t: float) -> str:
        if t < self.normal_s:
            return "normal"
        if t < self.normal_s + self.slow_s:
            return "slow"
        if t < self.normal_s + self.slow_s + self.error_s:
            return "503"
        return "recovered"

    def window(self, phase: str, end: float) -> tuple[float, float]:
        edges = {"normal": (0.0, self.normal_s), "slow": (self.normal_s, self.normal_s + self.slow_s),
                 "503": (self.normal_s + self.slow_s, self.normal_s + self.slow_s + self.error_s)}
        return edges.get(phase, (self.normal_s + self.slow_s + self.error_s, end))


@dataclass
class ServerLog:
    posts: int = 0
    answered: Counter[str] = field(default_factory=Counter)  # body sha256 -> HTTP 200 replies
    refused: Counter[str] = field(default_factory=Counter)  # body sha256 -> HTTP 503 replies
    done_200: list[tuple[float, str]] = field(default_factory=list)  # (seconds, phase at arrival)
    model_lists: int = 0
    bad_requests: int = 0


class FakeServer:
    """A llama.cpp-like OpenAI-compatible server on 127.0.0.1 with scripted latency and outages.

    It lists ``models``, answers each chat completion with a JSON reply that names the sha256 of the
    request body (so a record can be matched to the reply the server sent for its body), and logs
    every reply by body.
    """

    def __init__(self, models: list[str], phases: Phases) -> None:
        self.models = models
        self.phases = phases
        self.log = ServerLog()
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self._send(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
                    return
                with server._lock:
                    server.log.model_lists += 1
                self._send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "llamacpp"} for m in server.models]})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
                    return
                digest = hashlib.sha256(raw).hexdigest()
                arrived = time.monotonic() - server._t0
                phase = server.phases.at(arrived)
                try:
                    body = json.loads(raw)
                    model = str(body["model"])
                except (ValueError, KeyError):
                    with server._lock:
                        server.log.bad_requests += 1
                    self._send(400, {"error": {"code": 400, "message": "bad request", "type": "invalid_request_error"}})
                    return
                with server._lock:
                    server.log.posts += 1
                if phase == "503":
                    with server._lock:
                        server.log.refused[digest] += 1
                    self._send(503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
                    return
                latency = server.phases.base_latency_s * (server.phases.slow_factor if phase == "slow" else 1.0)
                time.sleep(latency)
                content = json.dumps({"answer": f"soak reply to {digest[:12]}", "citations": [],
                                      "body_sha256": digest})
                with server._lock:
                    server.log.answered[digest] += 1
                    server.log.done_200.append((time.monotonic() - server._t0, phase))
                self._send(200, {
                    "id": f"chatcmpl-{digest[:16]}", "object": "chat.completion", "created": int(time.time()),
                    "model": model, "system_fingerprint": "soak",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": 20,
                              "total_tokens": len(raw) // 4 + 20}})

        self._httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="fake-llm-server")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._httpd.server_address[1]}/v1"

    def begin(self) -> None:
        """Start the phase clock now."""
        self._t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._t0

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def recorded_requests(n: int) -> tuple[list[Any], int]:
    """The first ``n`` local-model chat requests recorded in results/llm_calls/ whose wire bodies differ
    (two requests that differ only in ``n_ctx`` or the model version send the same body), and how many
    such duplicates were passed over."""
    from rag_lib.generation.call_records import request_from_json

    chosen: list[Any] = []
    bodies: set[str] = set()
    skipped = 0
    for path in sorted(CALLS.glob("*.json")):
        if path.name.endswith(".failed.json"):
            continue
        row = json.loads(path.read_text(encoding="utf-8"))
        request = request_from_json(row["request"])
        if request.backend != "llama_cpp" or request.params.get("operation"):
            continue
        wire = json.dumps([request.model, [dict(m) for m in request.messages],
                           {k: v for k, v in request.params.items() if k != "n_ctx"}], sort_keys=True)
        if wire in bodies:
            skipped += 1
            continue
        bodies.add(wire)
        chosen.append(request)
        if len(chosen) >= n:
            break
    return chosen, skipped


def check_records(folder: Path, server: FakeServer) -> dict[str, int]:
    """Each record in ``folder`` must hold the reply the server sent for one body, no two the same one."""
    seen: Counter[str] = Counter()
    foreign = unreadable = 0
    for path in folder.glob("*.json"):
        if path.name.endswith(".failed.json"):
            continue
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
            digest = json.loads(row["response"]["content"])["body_sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            unreadable += 1
            continue
        seen[digest] += 1
        if digest not in server.log.answered:
            foreign += 1
    return {"records": sum(seen.values()), "unreadable": unreadable, "not_a_server_reply": foreign,
            "reply_in_two_records": sum(1 for c in seen.values() if c > 1)}


def run_fill_pass(requests: list[Any], recorder: Any, server: FakeServer, concurrency: int) -> dict[str, Any]:
    from rag_lib.generation.llm_server import ServerExecutor
    from rag_lib.runner.llm_fill import fill

    executor = ServerExecutor(server.url, kind="llama.cpp", environ={})
    started = time.monotonic()
    error = None
    try:
        report = fill(requests, recorder, progress=False, concurrency=concurrency, server=executor)
    except Exception as exc:  # a finding, reported by name
        report, error = None, f"{type(exc).__name__}: {exc}"
    wall = time.monotonic() - started
    records = [json.loads(p.read_text(encoding="utf-8")) for p in recorder.directory.glob("*.json")
               if not p.name.endswith(".failed.json")]
    return {"wall_s": round(wall, 1), "error": error,
            "made": report.made if report else None, "failed": dict(report.failed) if report else None,
            "stopped": report.stopped if report else None, "lines": report.lines() if report else [],
            "client_retries_in_records": sum(int(r["response"].get("attempts", 1)) - 1 for r in records)}


def scenario_fill(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    from rag_lib.generation.llm_calls import CallRecorder

    before = manifest(RESULTS)
    requests, dup_bodies = recorded_requests(args.requests)
    models = sorted({r.model for r in requests})
    phases = Phases(args.base_latency, args.normal_s, args.slow_s, args.slow_factor, args.error_s)
    print(f"[fill] {len(requests)} requests ({models}), concurrency {args.concurrency}; phases normal "
          f"{phases.normal_s:.0f} s, slow x{phases.slow_factor:.0f} {phases.slow_s:.0f} s, 503 {phases.error_s:.0f} s, "
          f"then recovered; base latency {phases.base_latency_s} s; load average {loadavg()}", flush=True)
    server = FakeServer(models, phases)
    try:
        recorder = CallRecorder(scratch / "calls", mode="replay_or_live")
        server.begin()
        first = run_fill_pass(requests, recorder, server, args.concurrency)
        end_first = server.now()
        posts_first = server.log.posts
        per_phase = {}
        for phase in ("normal", "slow", "503", "recovered"):
            lo, hi = phases.window(phase, end_first)
            n = sum(1 for t, _ in server.log.done_200 if lo <= t < hi)
            span = max(hi - lo, 1e-9) if hi > lo else 0.0
            per_phase[phase] = {"window_s": round(max(hi - lo, 0.0), 1), "answered_200": n,
                                "arrived_in_phase_answered_200": sum(1 for t, p in server.log.done_200
                                                                     if p == phase and t < end_first),
                                "calls_per_min": round(n / span * 60, 1) if span else None,
                                "503_sent": sum(server.log.refused.values()) if phase == "503" else 0}
        resume = run_fill_pass(requests, recorder, server, args.concurrency) if args.resume else None
        missing = sum(1 for r in requests if recorder.load(r.key) is None)
        twice = {d: c for d, c in server.log.answered.items() if c > 1}
        main = {
            "requests": len(requests), "models": models, "duplicate_bodies_passed_over": dup_bodies,
            "concurrency": args.concurrency, "phases": phases.__dict__, "first_pass": first,
            "calls_per_phase": per_phase, "resume_pass": resume,
            "server": {"posts": server.log.posts, "posts_first_pass": posts_first,
                       "distinct_bodies": len(set(server.log.answered) | set(server.log.refused)),
                       "answered_200": sum(server.log.answered.values()), "sent_503": sum(server.log.refused.values()),
                       "retries_seen": server.log.posts - len(set(server.log.answered) | set(server.log.refused)),
                       "bodies_answered_200_more_than_once": len(twice), "model_lists": server.log.model_lists,
                       "bad_requests": server.log.bad_requests},
            "records": check_records(recorder.directory, server), "still_missing": missing,
            "unparsable_records": unparsable_records(recorder.directory),
        }
    finally:
        server.close()
    main["two_fills"] = two_fills(args, scratch, requests[:args.lock_requests])
    main["results"] = results_check(before)
    return main


def two_fills(args: argparse.Namespace, scratch: Path, requests: list[Any]) -> dict[str, Any]:
    """Two fill processes into one scratch folder, the second started once the first is calling."""
    folder = scratch / "calls-two"
    folder.mkdir()
    wanted = scratch / "two-requests.jsonl"
    wanted.write_text("".join(json.dumps(r.to_json()) + "\n" for r in requests), encoding="utf-8")
    server = FakeServer(sorted({r.model for r in requests}), Phases(args.lock_latency, 1e9, 0, 1, 0))
    outs: dict[str, Any] = {}
    try:
        server.begin()
        argv = [PYTHON, str(Path(__file__).resolve()), "--fill-child", str(folder), str(wanted), server.url,
                str(args.concurrency)]
        env = {k: v for k, v in os.environ.items() if k not in ("LLM_SERVER", "RAG_LLM_SERVER_API_KEY")}
        procs = {}
        procs["first"] = CHILDREN.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
        started = {"first": time.monotonic()}
        deadline = time.monotonic() + 180
        while server.log.posts == 0 and procs["first"].poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        second_at_posts = server.log.posts
        procs["second"] = CHILDREN.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
        started["second"] = time.monotonic()
        first_running_when_second_ended = None
        for name in ("second", "first"):
            try:
                out, err = procs[name].communicate(timeout=300)
            except subprocess.TimeoutExpired:
                CHILDREN.kill_all()
                out, err = procs[name].communicate()
            if name == "second":
                first_running_when_second_ended = procs["first"].poll() is None
            line = out.decode(errors="replace").strip().splitlines()[-1:] or ["{}"]
            try:
                parsed = json.loads(line[0])
            except ValueError:
                parsed = {"raw": line[0]}
            outs[name] = {"returncode": procs[name].returncode, "wall_s": round(time.monotonic() - started[name], 1),
                          **parsed, "stderr_tail": "\n".join(err.decode(errors="replace").strip().splitlines()[-3:])}
        twice = sum(1 for c in server.log.answered.values() if c > 1)
        return {"requests": len(requests), "latency_s": args.lock_latency, "posts_when_second_started":
                second_at_posts, "first_running_when_second_ended": first_running_when_second_ended, **outs,
                "server_posts": server.log.posts, "bodies_answered_200": len(server.log.answered),
                "bodies_answered_200_more_than_once": twice,
                "second_refused_by_name": outs.get("second", {}).get("error_type") == "FillBusyError",
                "records": check_records(folder, server)}
    finally:
        server.close()


def fill_child(folder: str, wanted: str, url: str, concurrency: str) -> int:
    """``--fill-child``: one fill() into ``folder``; prints one JSON line (exit 3 when refused as busy)."""
    from rag_lib.generation.call_records import request_from_json
    from rag_lib.generation.llm_calls import CallRecorder
    from rag_lib.generation.llm_server import ServerExecutor
    from rag_lib.runner.llm_fill import FillBusyError, fill

    requests = [request_from_json(json.loads(line)) for line in Path(wanted).read_text().splitlines() if line]
    try:
        report = fill(requests, CallRecorder(folder, mode="replay_or_live"), progress=False,
                      concurrency=int(concurrency), server=ServerExecutor(url, kind="llama.cpp", environ={}))
    except FillBusyError as exc:
        print(json.dumps({"error_type": type(exc).__name__, "message": str(exc)}))
        return 3
    except Exception as exc:
        print(json.dumps({"error_type": type(exc).__name__, "message": str(exc)}))
        return 1
    print(json.dumps({"error_type": None, "made": report.made, "failed": dict(report.failed)}))
    return 0


def print_fill(r: dict[str, Any]) -> None:
    f, s, two = r["first_pass"], r["server"], r["two_fills"]
    res = r["results"]
    lines = [f"\n== fill: {r['requests']} requests, concurrency {r['concurrency']}, fake llama.cpp server on "
             f"{LOOPBACK} ==",
             f"first pass         {f['made']} recorded, failed {f['failed'] or {}}, in {f['wall_s']:.1f} s"
             + (f"; ERROR {f['error']}" if f["error"] else "") + (f"; stopped: {f['stopped']}" if f["stopped"] else "")]
    for phase, v in r["calls_per_phase"].items():
        rate = "n/a" if v["calls_per_min"] is None else f"{v['calls_per_min']:.1f}"
        extra = f", {v['503_sent']} x 503 sent" if phase == "503" else ""
        extra += f" ({v['arrived_in_phase_answered_200']} of the 200s had arrived in this phase)"
        lines.append(f"  {phase:<10}       {v['answered_200']} answered in {v['window_s']:.1f} s: "
                     f"{rate} calls/min{extra}")
    if r["resume_pass"]:
        p = r["resume_pass"]
        lines.append(f"resume pass        {p['made']} recorded, failed {p['failed'] or {}}, in {p['wall_s']:.1f} s"
                     + (f"; ERROR {p['error']}" if p["error"] else ""))
    lines += [
        f"still missing      {r['still_missing']} of {r['requests']}",
        f"server             {s['posts']} POSTs for {s['distinct_bodies']} bodies: {s['answered_200']} x 200, "
        f"{s['sent_503']} x 503; retries {s['retries_seen']} (records' attempts-1: "
        f"{f['client_retries_in_records'] if not r['resume_pass'] else r['resume_pass']['client_retries_in_records']})",
        f"paid twice         {s['bodies_answered_200_more_than_once']} body(ies) answered 200 more than once",
        f"records            {r['records']['records']} whole; {r['records']['not_a_server_reply']} not a server reply, "
        f"{r['records']['reply_in_two_records']} reply in two records, {len(r['unparsable_records'])} unparsable",
        f"two fills at once  second: exit {two.get('second', {}).get('returncode')}, "
        f"{two.get('second', {}).get('error_type')}: {str(two.get('second', {}).get('message', ''))[:160]}",
        f"                   first: exit {two.get('first', {}).get('returncode')}, "
        f"made {two.get('first', {}).get('made')}"
        f" of {two['requests']}, failed {two.get('first', {}).get('failed')}; first still running when the second "
        f"ended: {two['first_running_when_second_ended']}",
        f"                   server: {two['bodies_answered_200']} bodies answered, "
        f"{two['bodies_answered_200_more_than_once']} more than once; refused by name: {two['second_refused_by_name']}",
        f"results/           {res['n_added']} added, {res['n_changed']} changed, {res['n_removed']} removed; "
        f"{len(res['unparsable_llm_calls'])} llm_calls record(s) unparsable",
    ]
    print("\n".join(lines))


# ---------------------------------------------------------------------------------------- reproduce


def scenario_reproduce(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    from rag_lib.runner.reproduce import LOCK_NAME

    before = manifest(RESULTS)
    folder = scratch / "results"
    shutil.copytree(RESULTS, folder)
    cache = scratch_cache(scratch)
    env = {**os.environ, "RAG_RESULTS_DIR": str(folder), "RAG_CACHE_DIR": str(cache), "RAG_LLM_MODE": "replay_only",
           "RAG_PROGRESS": "0"}
    env.pop("RAG_LLM_MISSES", None)
    argv = [PYTHON, "-m", "rag_lib.runner.reproduce", "--force", args.run]
    print(f"[reproduce] {' '.join(argv[1:])} twice on one scratch copy of results/; load average {loadavg()}",
          flush=True)
    lock = folder / LOCK_NAME
    produced = folder / args.run / "results.json"
    mtime_before = produced.stat().st_mtime_ns if produced.is_file() else None
    t0 = time.monotonic()
    first = CHILDREN.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    deadline = t0 + args.reproduce_timeout
    holder = ""
    while first.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            holder = lock.read_text().strip()
        if holder:
            break
        time.sleep(0.05)
    lock_after = time.monotonic() - t0
    t1 = time.monotonic()
    second = CHILDREN.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        out2, err2 = second.communicate(timeout=args.reproduce_timeout)
    except subprocess.TimeoutExpired:
        second.kill()
        out2, err2 = second.communicate()
    second_wall = time.monotonic() - t1
    first_running = first.poll() is None
    try:
        out1, err1 = first.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        first.kill()
        out1, err1 = first.communicate()
    first_wall = time.monotonic() - t0
    message = "\n".join(err2.decode(errors="replace").strip().splitlines()[-3:])
    committed = RESULTS / args.run / "results.json"
    try:
        json.loads(produced.read_text(encoding="utf-8"))
        whole = True
    except (OSError, ValueError):
        whole = False
    leftovers = sorted(p.name for p in (folder / "notebooks").glob(".*running*"))
    return {
        "run": args.run, "command": " ".join(argv[1:]), "lock_held_after_s": round(lock_after, 1),
        "lock_holder_pid": holder, "first_pid": first.pid,
        "second": {"returncode": second.returncode, "wall_s": round(second_wall, 1), "message": message,
                   "stdout_tail": "\n".join(out2.decode(errors="replace").strip().splitlines()[-2:]),
                   "refused_by_name": "another `make reproduce`" in message and holder in message,
                   "first_still_running_when_it_ended": first_running},
        "first": {"returncode": first.returncode, "wall_s": round(first_wall, 1),
                  "stdout_tail": "\n".join(out1.decode(errors="replace").strip().splitlines()[-3:]),
                  "stderr_tail": "\n".join(err1.decode(errors="replace").strip().splitlines()[-3:]),
                  "results_json_whole": whole,
                  "results_json_rewritten": whole and produced.stat().st_mtime_ns != mtime_before,
                  "results_json_same_as_committed": whole and committed.is_file()
                  and produced.read_bytes() == committed.read_bytes(),
                  "notebook_written": (folder / "notebooks" / f"{args.run}.ipynb").is_file(),
                  "scratch_notebooks_left": leftovers},
        "results": results_check(before),
    }


def print_reproduce(r: dict[str, Any]) -> None:
    s, f, res = r["second"], r["first"], r["results"]
    print(f"""
== reproduce: two `{r['command']}` on one scratch results folder ==
first holds lock   {'after ' + format(r['lock_held_after_s'], '.1f') + ' s (pid ' + r['lock_holder_pid'] + ')'
                    if r['lock_holder_pid'] else 'never seen (the first ended before)'}; first's pid {r['first_pid']}
second             exit {s['returncode']} after {s['wall_s']:.1f} s; first still running then: \
{s['first_still_running_when_it_ended']}; refused by name: {s['refused_by_name']}
  message          {s['message']}
first              exit {f['returncode']} in {f['wall_s']:.1f} s; results.json whole: {f['results_json_whole']}, \
rewritten by it: {f['results_json_rewritten']}, byte-identical to the committed one: \
{f['results_json_same_as_committed']}; notebook written: \
{f['notebook_written']}; scratch notebooks left: {len(f['scratch_notebooks_left'])}
  last lines       {f['stdout_tail'].replace(chr(10), ' | ')}
results/           {res['n_added']} added, {res['n_changed']} changed, {res['n_removed']} removed; \
{len(res['unparsable_llm_calls'])} llm_calls record(s) unparsable""")


# --------------------------------------------------------------------------------------------- main


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="soak-"))
    try:
        yield path
    finally:
        CHILDREN.kill_all()
        shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--fill-child"]:
        return fill_child(*argv[1:5])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=["ask", "fill", "reproduce", "all"], default="all")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ask = parser.add_argument_group("ask")
    ask.add_argument("--workers", type=int, default=8, help="concurrent ask processes (default 8)")
    ask.add_argument("--duration", type=float, default=300.0, help="seconds during which asks start (default 300)")
    ask.add_argument("--max-runs", type=int, default=1000, help="ask processes per worker at most (default 1000)")
    ask.add_argument("--ask-timeout", type=float, default=600.0, help="seconds one ask may run (default 600)")
    ask.add_argument("--generator", default=ASK_GENERATOR, help=f"ask's --generator (default {ASK_GENERATOR})")
    ask.add_argument("--questions", default=",".join(ASK_QUESTIONS), help="id:lang,... rotated over")
    fill = parser.add_argument_group("fill")
    fill.add_argument("--requests", type=int, default=60, help="requests to fill (default 60)")
    fill.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    fill.add_argument("--base-latency", type=float, default=1.0, help="server seconds per call (default 1.0)")
    fill.add_argument("--normal-s", type=float, default=6.0, help="seconds of normal service first (default 6)")
    fill.add_argument("--slow-s", type=float, default=12.0, help="seconds of slow service next (default 12)")
    fill.add_argument("--slow-factor", type=float, default=10.0, help="latency factor while slow (default 10)")
    fill.add_argument("--error-s", type=float, default=10.0, help="seconds of HTTP 503 next (default 10)")
    fill.add_argument("--no-resume", dest="resume", action="store_false", help="skip the second (resume) pass")
    fill.add_argument("--lock-requests", type=int, default=16, help="requests in the two-fills check (default 16)")
    fill.add_argument("--lock-latency", type=float, default=3.0, help="server seconds per call there (default 3)")
    rep = parser.add_argument_group("reproduce")
    rep.add_argument("--run", default="05_q7_diagnosis", help="the notebook run (default 05_q7_diagnosis)")
    rep.add_argument("--reproduce-timeout", type=float, default=900.0, help="seconds per run at most (default 900)")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.duration <= 0 or args.requests < 1 or args.concurrency < 1:
        parser.error("--workers, --duration, --requests and --concurrency must be positive")
    signal.signal(signal.SIGTERM, _terminate)
    chosen = ["ask", "fill", "reproduce"] if args.scenario == "all" else [args.scenario]
    figures: dict[str, Any] = {}
    runners = {"ask": (scenario_ask, print_ask), "fill": (scenario_fill, print_fill),
               "reproduce": (scenario_reproduce, print_reproduce)}
    try:
        for name in chosen:
            run, show = runners[name]
            load = loadavg()
            started = time.monotonic()
            with scratch_folder() as scratch:
                result = run(args, scratch)
            result["load_before"] = load
            result["load_after"] = loadavg()
            result["scenario_wall_s"] = round(time.monotonic() - started, 1)
            figures[name] = result
            show(result)
            print(f"({name}: {result['scenario_wall_s']:.0f} s; load average before {load}, after "
                  f"{result['load_after']})", flush=True)
    except KeyboardInterrupt as exc:
        print(f"\ninterrupted ({exc or 'Ctrl-C'}); children killed, scratch folders removed", file=sys.stderr)
        return 130
    finally:
        CHILDREN.kill_all()
        if args.json is not None and figures:
            args.json.write_text(json.dumps(figures, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
