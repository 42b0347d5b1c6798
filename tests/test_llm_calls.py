"""Recorded LLM calls: keys, record/replay modes, corrupt records, cost, and no key on disk."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from rag_lib.core.documents import Chunk
from rag_lib.core.redaction import REDACTED
from rag_lib.generation.call_records import LLMRequest, LLMResponse, estimate_cost
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError, ReplayMissError
from rag_lib.generation.openai_backend import OpenAIGenerator

REQUEST = LLMRequest(
    backend="openai", model="qwen3.8-flash",
    messages=({"role": "user", "content": "Hi"},), params={"temperature": 0},
)
FAKE_KEY = "sk-test-DO-NOT-WRITE-0123456789"


class Live:
    """A live backend that counts its calls."""

    def __init__(self, content: str = '{"ok": true}') -> None:
        self.content = content
        self.calls = 0

    def __call__(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return LLMResponse(content=self.content, finish_reason="stop", prompt_tokens=1000, completion_tokens=200)


def test_key_is_stable_and_depends_on_every_part() -> None:
    assert REQUEST.key == LLMRequest(**{**REQUEST.__dict__}).key
    assert len(REQUEST.key) == 64
    variants = [
        LLMRequest(REQUEST.backend, REQUEST.model, REQUEST.messages, {"temperature": 0.1}),
        LLMRequest(REQUEST.backend, "other", REQUEST.messages, REQUEST.params),
        LLMRequest("llama_cpp", REQUEST.model, REQUEST.messages, REQUEST.params),
        LLMRequest(REQUEST.backend, REQUEST.model, ({"role": "user", "content": "Hi!"},), REQUEST.params),
        LLMRequest(REQUEST.backend, REQUEST.model, REQUEST.messages, REQUEST.params, model_version="sha256:x"),
    ]
    assert len({REQUEST.key, *(v.key for v in variants)}) == 6


def test_record_then_replay(tmp_path: Path) -> None:
    live = Live()
    ticks = iter([10.0, 10.25])
    recorder = CallRecorder(tmp_path, clock=lambda: next(ticks))
    first = recorder.call(REQUEST, live)
    second = recorder.call(REQUEST, live)
    assert live.calls == 1 and not first.replayed and second.replayed
    assert second.response == first.response and second.latency_s == 0.25
    row = json.loads((tmp_path / f"{REQUEST.key}.json").read_text())
    assert row["request"]["model"] == "qwen3.8-flash" and row["latency_s"] == 0.25
    assert row["response"]["prompt_tokens"] == 1000 and row["response"]["completion_tokens"] == 200
    assert row["cost_usd"] == pytest.approx((1000 * 0.05 + 200 * 0.40) / 1e6)


def test_live_mode_calls_again(tmp_path: Path) -> None:
    live = Live()
    CallRecorder(tmp_path).call(REQUEST, live)
    CallRecorder(tmp_path, mode="live").call(REQUEST, live)
    assert live.calls == 2


def test_replay_only_miss_names_the_hash_and_the_fix(tmp_path: Path) -> None:
    live = Live()
    with pytest.raises(ReplayMissError, match=REQUEST.key) as info:
        CallRecorder(tmp_path, mode="replay_only").call(REQUEST, live)
    assert "make llm-runs" in str(info.value) and live.calls == 0


def test_unknown_mode_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="replay_only"):
        CallRecorder(tmp_path, mode="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("damage", ["{not json", "tampered"])
def test_corrupt_record_warns_and_is_fetched_again(tmp_path: Path, damage: str) -> None:
    live = Live()
    recorder = CallRecorder(tmp_path)
    recorder.call(REQUEST, live)
    path = tmp_path / f"{REQUEST.key}.json"
    if damage == "tampered":  # valid JSON whose request no longer hashes to the key
        row = json.loads(path.read_text())
        row["request"]["messages"][0]["content"] = "something else"
        path.write_text(json.dumps(row))
    else:
        path.write_text(damage)
    with pytest.warns(RuntimeWarning, match="Corrupt LLM call record"):
        record = recorder.call(REQUEST, live)
    assert live.calls == 2 and not record.replayed
    assert json.loads(path.read_text())["request"]["messages"][0]["content"] == "Hi"


def test_corrupt_record_in_replay_only_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / f"{REQUEST.key}.json").write_text("")
    with pytest.warns(RuntimeWarning), pytest.raises(ReplayMissError):
        CallRecorder(tmp_path, mode="replay_only").call(REQUEST, Live())


def test_failed_live_call_is_recorded_only_as_a_failure(tmp_path: Path) -> None:
    def failing(request: LLMRequest) -> LLMResponse:
        raise LLMCallError("timeout", "timed out")

    with pytest.raises(LLMCallError):
        CallRecorder(tmp_path).call(REQUEST, failing)
    assert [p.name for p in tmp_path.iterdir()] == [f"{REQUEST.key}.failed.json"]
    assert CallRecorder(tmp_path).load(REQUEST.key) is None


def test_cost_estimates() -> None:
    assert estimate_cost("openai", "qwen3.8-flash", 1_000_000, 1_000_000) == pytest.approx(0.45)
    assert estimate_cost("llama_cpp", "SmolLM2-135M-Instruct.Q4_1.gguf", 10, 10) == 0.0
    assert estimate_cost("openai", "unpriced-model", 10, 10) is None
    assert estimate_cost("openai", "qwen3.8-flash", None, 10) is None


def test_a_key_echoed_by_the_model_is_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_LLM_API_KEY", FAKE_KEY)  # a configured key variable (models.yaml key_env)
    with pytest.warns(RuntimeWarning, match="redacted"):
        CallRecorder(tmp_path).call(REQUEST, Live(content=f"your key is {FAKE_KEY}"))
    text = (tmp_path / f"{REQUEST.key}.json").read_text()
    assert FAKE_KEY not in text and REDACTED in text


def _completion(content: str) -> dict[str, object]:
    return {
        "id": "c1", "object": "chat.completion", "created": 0, "model": "qwen3.8-flash",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
    }


def test_api_key_is_sent_but_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", FAKE_KEY)
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "http://model-studio.invalid/compatible-mode/v1")
    monkeypatch.delenv("RAG_LLM_API_KEY", raising=False)
    monkeypatch.delenv("RAG_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RAG_LLM_MODEL", raising=False)
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers["authorization"])
        answer = {"status": "answered", "answer": "Use wrangler secret put.",
                  "citations": [{"chunk_id": "c-000", "quote": "Run wrangler secret put."}], "missing": []}
        return httpx2.Response(200, json=_completion(json.dumps(answer)))

    chunk = Chunk(id="c-000", page="p", ordinal=0, title="Secrets", heading_path=(), text="Run wrangler secret put.",
                  start=0, end=24, url="https://x/p/", embeddable=True, oversized=False)
    generator = OpenAIGenerator(recorder=CallRecorder(tmp_path / "calls"),
                                http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    result = generator.generate("How do I add a secret?", [chunk])
    assert result.status == "answered" and seen == [f"Bearer {FAKE_KEY}"]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1
    for path in files:
        assert FAKE_KEY not in path.read_text(encoding="utf-8")


def test_pruning_keeps_every_record_of_a_key_still_asked_for(tmp_path: Path) -> None:
    from rag_lib.runner.llm_runs import orphans

    for name in ("used.json", "used2.failed.json", "old.json", "old2.failed.json"):
        (tmp_path / name).write_text("{}")
    stale = orphans(CallRecorder(tmp_path, mode="replay_only"), {"used", "used2"})
    assert [p.name for p in stale] == ["old.json", "old2.failed.json"]


def test_nothing_is_pruned_after_a_notebook_run_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from rag_lib.runner import llm_runs

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    (tmp_path / "llm_calls").mkdir()
    record = tmp_path / "llm_calls" / "asked-after-the-failure.json"
    record.write_text("{}")
    monkeypatch.setattr(llm_runs, "collect_misses", lambda runs, used: ([], 1))  # one run failed, no key seen
    assert llm_runs.main(["--prune"]) == 0
    assert record.exists() and "1 notebook run(s) failed" in capsys.readouterr().out
    monkeypatch.setattr(llm_runs, "collect_misses", lambda runs, used: ([], 0))
    llm_runs.main(["--prune"])
    assert not record.exists()  # every run finished and none asked for it
