"""Generation: schema, prompts, the extractive baseline, failure outcomes, the openai and llama_cpp backends."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import ValidationError

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import ModelUnavailableError, WorkbookError
from rag_lib.generation import Answer, SchemaLimits, available_generators, get_generator
from rag_lib.generation.base import LLMGenerator
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.extractive import ExtractiveGenerator, sentences
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError
from rag_lib.generation.openai_backend import OpenAIGenerator
from rag_lib.generation.prompts import build_messages, decline_wording_problems
from rag_lib.generation.schema import answer_json_schema
from rag_lib.retrieval.tokenize import content_terms as terms


def _chunk(cid: str, text: str, heading: str = "Secrets") -> Chunk:
    return Chunk(id=cid, page="workers/configuration/secrets", ordinal=0, title="Secrets",
                 heading_path=(heading,), text=text, start=100, end=100 + len(text),
                 url="https://developers.cloudflare.com/workers/configuration/secrets/#x",
                 embeddable=True, oversized=False)


SECRETS = _chunk("secrets-001-aaaa", "Secrets are encrypted. Use wrangler secret put to add a secret in production.")
LOCAL = _chunk("local-002-bbbb", "For local development, put secrets in a .dev.vars file.", "Local development")
EVIDENCE = [SECRETS, LOCAL]


# -- schema and prompts ---------------------------------------------------------------------------

def test_answer_schema_validates_and_rejects_extra_fields() -> None:
    ok = Answer.model_validate({"status": "insufficient", "answer": "x", "missing": ["pricing"]})
    assert ok.citations == [] and ok.missing == ["pricing"]
    with pytest.raises(ValidationError):
        Answer.model_validate({"status": "maybe", "answer": "x"})
    with pytest.raises(ValidationError):
        Answer.model_validate({"status": "answered", "answer": "x", "confidence": 1})


def test_answer_json_schema_restricts_ids_to_the_evidence() -> None:
    schema = answer_json_schema(["a", "b"], SchemaLimits(max_answer_chars=50))
    citation = schema["properties"]["citations"]["items"]
    assert citation["properties"]["chunk_id"]["enum"] == ["a", "b"]
    assert schema["properties"]["answer"]["maxLength"] == 50 and schema["additionalProperties"] is False


def test_answer_prompt_numbers_evidence_and_names_the_decline() -> None:
    system, user = build_messages("answer", "How do I add a secret?", EVIDENCE)
    assert system["role"] == "system" and user["role"] == "user"
    assert "The evidence provided does not include" in system["content"]
    assert 'Never write "the documentation does not have' in system["content"]
    assert "word for word" in system["content"] and "ONLY" in system["content"]
    text = user["content"]
    assert text.index("[1] chunk_id: secrets-001-aaaa") < text.index("[2] chunk_id: local-002-bbbb")
    assert "source: Secrets > Local development" in text
    assert text.endswith("Question: How do I add a secret?\n\nReply in English.")


def test_recovery_and_sufficiency_prompts() -> None:
    recovery = build_messages("recovery", "Q7?", EVIDENCE)
    assert "Do not answer the original question" in recovery[0]["content"]
    assert "2 or 3" in recovery[0]["content"] and "Cloudflare" in recovery[0]["content"]
    assert "Original question: Q7?" in recovery[1]["content"]
    judge = build_messages("sufficiency", "Q?", EVIDENCE)
    assert '"sufficient": true or false' in judge[0]["content"]


def test_decline_wording_check() -> None:
    assert decline_wording_problems("The evidence provided does not include the KV price.") == []
    assert decline_wording_problems("提供的证据中未包含 Workers KV 的免费额度。") == []
    problems = decline_wording_problems("The documentation does not have the KV price.")
    assert len(problems) == 2 and "forbidden" in problems[0]


# -- extractive ----------------------------------------------------------------------------------

def test_extractive_quotes_the_best_sentence_with_a_valid_citation() -> None:
    result = ExtractiveGenerator(max_sentences=1).generate("How do I add a secret in production?", EVIDENCE)
    assert result.status == "answered"
    assert result.answer is not None
    assert result.answer.answer == "Use wrangler secret put to add a secret in production. [1]"
    assert [(c.chunk_id, c.quote) for c in result.answer.citations] == [
        ("secrets-001-aaaa", "Use wrangler secret put to add a secret in production.")]
    assert result.citations is not None and result.citations.validity == 1.0
    assert result.citations.valid[0].page_start == 100 + len("Secrets are encrypted. ")


def test_what_is_shown_is_prose_and_a_fragment_is_withheld() -> None:
    marked = _chunk("secrets-009-dddd",
                    "To add a **secret** via the dashboard:\nSee [Secrets](/workers/secrets/) for more.")
    result = ExtractiveGenerator(max_sentences=1).generate("How do I add a secret via the dashboard?", [marked])
    assert result.status == "error" and result.error_kind == "fragment", result  # "…dashboard: [1]" says nothing
    linked = _chunk("secrets-010-eeee", "Use **wrangler secret put** as the [Secrets](/workers/secrets/) page says.")
    shown = ExtractiveGenerator(max_sentences=1).generate("How do I add a secret with wrangler secret put?", [linked])
    assert shown.answer is not None and shown.answer.answer == "Use wrangler secret put as the Secrets page says. [1]"
    assert shown.answer.citations[0].quote == linked.text  # the quote stays as the evidence has it


def test_extractive_handles_chinese() -> None:
    zh = _chunk("zh-003-cccc", "本地开发时，把 secret 写在 .dev.vars 文件里。线上部署用 wrangler secret put 命令。")
    assert sentences(zh.text) == [
        "本地开发时，把 secret 写在 .dev.vars 文件里。", "线上部署用 wrangler secret put 命令。"]
    assert {"本地", "开发", "secret"} <= terms("本地开发怎么设置 secret？")
    result = ExtractiveGenerator(max_sentences=1).generate("本地开发时 secret 写在哪个文件？", [zh])
    assert result.status == "answered" and result.answer is not None
    assert result.answer.citations[0].quote == "本地开发时，把 secret 写在 .dev.vars 文件里。"


def test_extractive_declines_below_the_floor_with_the_required_wording() -> None:
    result = ExtractiveGenerator().generate("What is the Workers KV free allowance?", EVIDENCE)
    assert result.status == "insufficient" and result.answer is not None
    assert result.answer.answer == (
        "The evidence provided does not include an answer to: What is the Workers KV free allowance?")
    assert result.answer.citations == [] and result.warnings == ()
    zh = ExtractiveGenerator().generate("Workers KV 的免费额度是多少？", EVIDENCE)
    assert zh.status == "insufficient" and zh.answer is not None
    assert zh.answer.answer.startswith("提供的证据中未包含")


def test_extractive_is_deterministic() -> None:
    first = ExtractiveGenerator().generate("How do I add a secret?", EVIDENCE).to_json()
    assert first == ExtractiveGenerator().generate("How do I add a secret?", EVIDENCE).to_json()


# -- failure outcomes, with a fake backend --------------------------------------------------------

class FakeGenerator(LLMGenerator):
    """An LLM backend whose reply (or failure) is scripted."""

    backend = "fake"

    def __init__(self, reply: str | Callable[[], str], recorder: CallRecorder) -> None:
        super().__init__("fake-model", recorder=recorder, max_question_chars=1000)
        self.reply = reply
        self.calls = 0

    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        return {"temperature": 0}

    def _complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        content = self.reply() if callable(self.reply) else self.reply
        return LLMResponse(content=content, prompt_tokens=10, completion_tokens=5)


def _answer(**fields: Any) -> str:
    return json.dumps({"status": "answered", "answer": "a", "citations": [], "missing": [], **fields})


def _timeout() -> str:
    raise LLMCallError("timeout", "timed out after 1 s")


@pytest.mark.parametrize(
    ("question", "reply", "kind", "calls"),
    [
        ("   \n", _answer(), "empty_question", 0),
        ("x" * 100_000, _answer(), "question_too_long", 0),
        ("Q?", _timeout, "timeout", 1),
        ("Q?", "Sure! The answer is 42.", "non_json", 1),
        ("Q?", json.dumps({"status": "answered", "text": "a"}), "schema_invalid", 1),
        ("Q?", _answer(), "no_citations", 1),
        ("Q?", _answer(citations=[{"chunk_id": "made-up", "quote": "Secrets are encrypted."}]),
         "no_valid_citations", 1),
    ],
)
def test_failures_become_visible_outcomes(tmp_path: Path, question: str, reply: Any, kind: str, calls: int) -> None:
    generator = FakeGenerator(reply, CallRecorder(tmp_path))
    result = generator.generate(question, EVIDENCE)
    assert (result.status, result.error_kind, generator.calls) == ("error", kind, calls)
    assert result.error  # a message a person can act on
    answers = [p for p in tmp_path.glob("*.json") if not p.name.endswith(".failed.json")]
    assert len(answers) == (1 if calls and kind != "timeout" else 0)  # a failed call is never an answer record


def test_valid_answer_and_replay_without_backend(tmp_path: Path) -> None:
    reply = _answer(answer="Use wrangler secret put.", citations=[
        {"chunk_id": SECRETS.id, "quote": "Use wrangler secret put to add a secret in production."},
        {"chunk_id": LOCAL.id, "quote": "not in the chunk"}])
    live = FakeGenerator(reply, CallRecorder(tmp_path)).generate("How?", EVIDENCE)
    assert live.status == "answered" and live.citations is not None
    assert (live.citations.n_valid, live.citations.n_total) == (1, 2)
    assert live.warnings == ("dropped 1 invalid citation(s): 1 quote not found",)
    offline = FakeGenerator(_timeout, CallRecorder(tmp_path, mode="replay_only"))
    replayed = offline.generate("How?", EVIDENCE)
    assert offline.calls == 0 and replayed.replayed and replayed.call_keys == live.call_keys
    assert replayed.answer == live.answer


def test_replay_only_miss_is_an_outcome(tmp_path: Path) -> None:
    result = FakeGenerator(_answer(), CallRecorder(tmp_path, mode="replay_only")).generate("Q?", EVIDENCE)
    assert result.error_kind == "replay_miss" and result.error is not None and "make llm-runs" in result.error


def test_decline_with_forbidden_wording_is_flagged(tmp_path: Path) -> None:
    reply = json.dumps({"status": "insufficient", "answer": "The documentation does not have KV pricing.",
                        "citations": [], "missing": ["KV pricing"]})
    result = FakeGenerator(reply, CallRecorder(tmp_path)).generate("KV price?", EVIDENCE)
    assert result.status == "insufficient" and any("forbidden" in w for w in result.warnings)


def test_recovery_suggestions_and_sufficiency_judge(tmp_path: Path) -> None:
    recorder = CallRecorder(tmp_path)
    good = json.dumps({"reason": "two topics", "suggestions": ["How do I set vars?", "How do I set secrets?"]})
    outcome = FakeGenerator(good, recorder).suggest_questions("Q7?", EVIDENCE)
    assert outcome.status == "ok" and outcome.value is not None
    assert outcome.value.suggestions == ["How do I set vars?", "How do I set secrets?"]
    four = json.dumps({"reason": "r", "suggestions": ["a", "b", "c", "d"]})
    assert FakeGenerator(four, recorder).suggest_questions("Q7b?", EVIDENCE).error_kind == "schema_invalid"
    verdict = FakeGenerator('{"sufficient": false, "missing": ["plain vars"]}', recorder).judge_sufficiency(
        "Q7?", EVIDENCE)
    assert verdict.status == "ok" and verdict.value is not None and verdict.value.missing == ["plain vars"]
    # issue 44: "sufficient" beside a non-empty missing list is not sufficient (on a87d25c it was)
    both = FakeGenerator('{"sufficient": true, "missing": ["plain vars"]}', recorder).judge_sufficiency(
        "Q7c?", EVIDENCE)
    assert both.value is not None and not both.value.sufficient and both.value.missing == ["plain vars"]
    clean = FakeGenerator('{"sufficient": true, "missing": []}', recorder).judge_sufficiency("Q7d?", EVIDENCE)
    assert clean.value is not None and clean.value.sufficient


# -- openai backend, with a fake transport --------------------------------------------------------

ENV = {"DASHSCOPE_API_KEY": "sk-fake-123456", "DASHSCOPE_BASE_URL": "http://studio.invalid/v1"}


def _openai(tmp_path: Path, handler: Callable[[httpx2.Request], httpx2.Response], **kwargs: Any) -> OpenAIGenerator:
    kwargs.setdefault("environ", ENV)
    return OpenAIGenerator(recorder=CallRecorder(tmp_path), backoff_s=1.0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)), **kwargs)


def _ok(content: str) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "c", "object": "chat.completion", "created": 0, "model": "qwen3.8-flash",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}})


def test_openai_request_follows_the_casebook_and_retries_429_and_5xx(tmp_path: Path) -> None:
    statuses = iter([429, 503])
    bodies: list[dict[str, Any]] = []
    sleeps: list[float] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        status = next(statuses, 200)
        return _ok(_answer(citations=[{"chunk_id": SECRETS.id, "quote": "Secrets are encrypted."}])) \
            if status == 200 else httpx2.Response(status, json={"error": {"message": "busy"}})

    generator = _openai(tmp_path, handler, sleep=sleeps.append)
    result = generator.generate("Are secrets encrypted?", EVIDENCE)
    assert result.status == "answered" and sleeps == [1.0, 2.0] and len(bodies) == 3
    assert result.model_version == "qwen3.8-flash"  # the model id the server answered with
    body = bodies[0]
    assert body["model"] == "qwen3.8-flash" and body["temperature"] == 0
    assert body["enable_thinking"] is False and body["response_format"] == {"type": "json_object"}
    record = json.loads((tmp_path / f"{result.call_keys[0]}.json").read_text())
    assert record["response"]["attempts"] == 3 and record["cost_usd"] == pytest.approx((30 * 0.05 + 10 * 0.4) / 1e6)


def test_openai_gives_up_after_bounded_attempts(tmp_path: Path) -> None:
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        return httpx2.Response(500, json={"error": {"message": "down"}})

    result = _openai(tmp_path, handler, sleep=lambda s: None, max_attempts=3).generate("Q?", EVIDENCE)
    assert (result.status, result.error_kind, len(calls)) == ("error", "server_error", 3)
    assert [p.name.endswith(".failed.json") for p in tmp_path.iterdir()] == [True]  # never an answer record


def test_openai_does_not_retry_a_4xx(tmp_path: Path) -> None:
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        return httpx2.Response(400, json={"error": {"message": "bad"}})

    result = _openai(tmp_path, handler, sleep=lambda s: None).generate("Q?", EVIDENCE)
    assert (result.error_kind, len(calls)) == ("backend_error", 1)


def test_openai_timeout_is_an_outcome(tmp_path: Path) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("slow", request=request)

    result = _openai(tmp_path, handler, sleep=lambda s: None, max_attempts=2).generate("Q?", EVIDENCE)
    assert (result.status, result.error_kind) == ("error", "timeout")


def test_openai_env_overrides_and_missing_key(tmp_path: Path) -> None:
    env = {**ENV, "RAG_LLM_MODEL": "local-model", "RAG_LLM_API_KEY": "k-override", "RAG_LLM_BASE_URL": "http://h/v1"}
    generator = OpenAIGenerator(recorder=CallRecorder(tmp_path), environ=env)
    assert generator.model == "local-model" and generator.endpoint() == ("http://h/v1", "k-override")
    keyless = OpenAIGenerator(recorder=CallRecorder(tmp_path), environ={})
    with pytest.raises(ModelUnavailableError, match="RAG_LLM_API_KEY, DASHSCOPE_API_KEY"):
        keyless.endpoint()
    result = keyless.generate("Q?", EVIDENCE)
    assert result.error_kind == "backend_error" and result.error is not None and "DASHSCOPE_API_KEY" in result.error


# -- registry -------------------------------------------------------------------------------------

def test_registry_names_and_unknown_name() -> None:
    assert available_generators() == ["extractive", "llama_cpp", "openai"]
    assert isinstance(get_generator("extractive"), ExtractiveGenerator)
    with pytest.raises(WorkbookError, match="extractive, llama_cpp, openai"):
        get_generator("gpt-9")


def test_extractive_does_not_import_llm_backends() -> None:
    code = ("import sys; from rag_lib.generation import get_generator; get_generator('extractive'); "
            "print(sorted(m for m in ('openai', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- llama_cpp backend, real SmolLM2-135M ---------------------------------------------------------

TINY = SchemaLimits(max_answer_chars=80, max_quote_chars=60, max_citations=1, max_missing=1, max_item_chars=40)


@pytest.mark.slow
@pytest.mark.llm_runtime
def test_llama_cpp_returns_schema_valid_json_recorded_and_replayable(tmp_path: Path) -> None:
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator
    from rag_lib.generation.local_models import model_file

    path = model_file("smollm2-135m")
    # One thread: on a shared two-core machine an oversubscribed llama.cpp slows down many times over.
    # n_threads is not part of the request key, so the replay below (default threads) still matches.
    generator = LlamaCppGenerator("smollm2-135m", recorder=CallRecorder(tmp_path), n_ctx=4096, n_threads=1,
                                  max_tokens=160, limits=TINY)
    assert generator.model_version == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    live = generator.generate("How do I add a secret in production?", EVIDENCE)
    # SmolLM2 answers poorly; the mechanics are what is tested: the constrained reply parses.
    assert live.error_kind not in {"non_json", "schema_invalid", "timeout", "backend_error"}, live.to_json()
    assert live.answer is not None and {c.chunk_id for c in live.answer.citations} <= {SECRETS.id, LOCAL.id}
    record = json.loads((tmp_path / f"{live.call_keys[0]}.json").read_text())
    assert record["request"]["model_version"] == generator.model_version and record["cost_usd"] == 0.0
    offline = LlamaCppGenerator("smollm2-135m", recorder=CallRecorder(tmp_path, mode="replay_only"), n_ctx=4096,
                                max_tokens=160, limits=TINY)
    replayed = offline.generate("How do I add a secret in production?", EVIDENCE)
    assert not offline.loaded and replayed.replayed and replayed.answer == live.answer


def test_llama_cpp_missing_gguf_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rag_lib.generation.llama_cpp_backend import gguf_override

    monkeypatch.setenv("RAG_GGUF_PATH", str(tmp_path / "none.gguf"))
    with pytest.raises(ModelUnavailableError, match="RAG_GGUF_PATH"):
        gguf_override()


def test_llama_cpp_uses_rag_gguf_path_and_its_sha256(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator

    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"not really a model")
    monkeypatch.setenv("RAG_GGUF_PATH", str(gguf))
    generator = LlamaCppGenerator(recorder=CallRecorder(tmp_path / "calls"))
    assert generator.model_path == gguf and generator.model == "other.gguf"
    assert generator.model_version == "sha256:" + hashlib.sha256(b"not really a model").hexdigest()
    assert not generator.loaded  # nothing is loaded until a live call needs it


def test_llama_cpp_refuses_a_schema_its_grammar_cannot_hold(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator

    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"not really a model")
    monkeypatch.setenv("RAG_GGUF_PATH", str(gguf))
    generator = LlamaCppGenerator(recorder=CallRecorder(tmp_path / "calls"), limits=SchemaLimits(max_answer_chars=2000))
    result = generator.generate("How do I add a secret?", [_chunk("c1", "Run wrangler secret put.")])
    assert result.status == "error" and result.error_kind == "schema_too_large"
    assert "2000 characters" in (result.error or "")
    assert not generator.loaded, "refused before llama.cpp was asked to build the grammar"


def test_every_backend_satisfies_the_protocol() -> None:
    from rag_lib.generation import Generator

    assert isinstance(get_generator("extractive"), Generator)
    assert isinstance(OpenAIGenerator(environ={}), Generator)


def test_a_fault_case_that_raises_is_counted_as_crashed_not_assumed_away(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import rag_lib.question_sweeps.generation as generation_eval

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the pipeline fell over")

    monkeypatch.setattr(generation_eval, "gated_answer", boom)
    monkeypatch.setattr(generation_eval, "FAULTS", [])
    wb = SimpleNamespace(rank=lambda text, key: SimpleNamespace(ids=[]), evidence=lambda ranking, k: [])
    rows = generation_eval.fault_outcomes(wb, gate=None, generator=None, evidence_question="Q?")  # type: ignore[arg-type]
    assert rows and all(r.status == "crashed" and r.error_kind == "RuntimeError" for r in rows)
    assert rows[0].message == "the pipeline fell over"
