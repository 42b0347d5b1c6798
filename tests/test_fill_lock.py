"""One fill at a time per calls folder (issue 45): two real processes filling the same missing calls against
one loopback endpoint make each call exactly once; the second is refused by name, with the holder's pid.

The endpoint is a counting OpenAI-compatible double on 127.0.0.1 that takes a while per reply, so the two
fills overlap for sure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from doubles import JSON, FakeServer, completion  # tests/doubles.py (pytest puts tests/ on the path)

from rag_lib.generation.call_records import LLMRequest
from rag_lib.runner.llm_fill import FILL_LOCK_NAME, FillBusyError, fill_lock

REPO_ROOT = Path(__file__).resolve().parents[1]
CALLS = 6

FILL_SCRIPT = """
import json, sys
from rag_lib.generation.call_records import request_from_json
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.runner.llm_fill import FillBusyError, fill
requests = [request_from_json(r) for r in json.load(open(sys.argv[1]))]
try:
    report = fill(requests, CallRecorder(sys.argv[2], mode="replay_or_live"), progress=False, concurrency=2)
except FillBusyError as exc:
    print("busy:", exc)
else:
    print("made:", report.made, "failed:", dict(report.failed))
"""


class CountingEndpoint(FakeServer):
    """A chat-completions endpoint that answers each request after ``delay_s``; ``bodies`` counts them by
    their last message."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(lambda body, headers: (200, JSON, completion('{"ok": true}'), delay_s))

    @property
    def bodies(self) -> Counter[str]:
        return Counter(body["messages"][-1]["content"] for body in list(self.requests))

    @property
    def total(self) -> int:
        return len(self.requests)


@pytest.fixture
def endpoint() -> Iterator[CountingEndpoint]:
    server = CountingEndpoint(delay_s=0.5)
    yield server
    server.close()


def test_two_fills_of_one_folder_make_each_call_exactly_once(endpoint: CountingEndpoint, tmp_path: Path) -> None:
    requests = [LLMRequest(backend="openai", model="fake-model", params={"temperature": 0.0, "max_tokens": 8},
                           messages=({"role": "user", "content": f"question {i}"},)) for i in range(CALLS)]
    listed = tmp_path / "requests.json"
    listed.write_text(json.dumps([r.to_json() for r in requests]), encoding="utf-8")
    calls = tmp_path / "calls"
    env = {"PATH": "/usr/bin:/bin", "RAG_LLM_API_KEY": "test-key", "RAG_LLM_BASE_URL": endpoint.url,
           "RAG_PROGRESS": "0", "HOME": str(tmp_path)}
    command = [sys.executable, "-c", FILL_SCRIPT, str(listed), str(calls)]
    first = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 120
    while endpoint.total == 0 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the first fill holds the folder once its first call is out
    second = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180)
    out, err = first.communicate(timeout=180)
    assert first.returncode == 0 and second.returncode == 0, (err, second.stderr)
    assert out.strip() == "made: 6 failed: {}", (out, err)
    assert second.stdout.startswith(f"busy: another fill (pid {first.pid}) is making calls into {calls}"), second
    assert sorted(endpoint.bodies.values()) == [1] * CALLS  # each call once, none twice
    assert {p.stem for p in calls.glob("*.json")} == {r.key for r in requests}
    again = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert again.stdout.strip() == "made: 0 failed: {}" and endpoint.total == CALLS  # a resume calls nothing


def test_the_lock_goes_with_its_holder_and_names_it(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from rag_lib.runner.llm_fill import fill_lock\n"
        "with fill_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)"), str(tmp_path)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert (tmp_path / FILL_LOCK_NAME).read_text() == str(holder.pid)
        with pytest.raises(FillBusyError, match=f"another fill \\(pid {holder.pid}\\)"), fill_lock(tmp_path):
            pass
    finally:
        holder.kill()
        holder.wait()
    with fill_lock(tmp_path):  # a killed holder leaves no stale lock: the kernel dropped it
        assert (tmp_path / FILL_LOCK_NAME).read_text() == str(os.getpid())
