"""Generation through any OpenAI-compatible endpoint (the casebook used qwen3.8-flash on Model Studio).

Endpoint, key and model come from the environment only (see ``models.yaml``):
``RAG_LLM_BASE_URL`` / ``RAG_LLM_API_KEY`` / ``RAG_LLM_MODEL`` override the casebook's
``DASHSCOPE_BASE_URL`` / ``DASHSCOPE_API_KEY`` / ``qwen3.8-flash``. The key is read at call time,
passed to the client and never stored: a replayed call needs no key at all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from rag_lib.errors import ModelUnavailableError
from rag_lib.generation.base import MAX_QUESTION_CHARS, LLMGenerator
from rag_lib.generation.schema import DEFAULT_LIMITS, SchemaLimits
from rag_lib.generation.specs import backend_defaults
from rag_lib.llm_calls import CallRecorder, LLMCallError, LLMRequest, LLMResponse


def _first_set(names: list[str], environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None, None


class OpenAIGenerator(LLMGenerator):
    """Grounded generation with the ``openai`` client against an OpenAI-compatible server.

    Parameters
    ----------
    model
        Model name; default ``RAG_LLM_MODEL`` or ``qwen3.8-flash``.
    base_url
        Endpoint; default ``RAG_LLM_BASE_URL`` or ``DASHSCOPE_BASE_URL`` (read at call time).
    recorder
        Where calls are recorded and replayed from.
    timeout_s, max_attempts, backoff_s
        Per-attempt timeout; attempts in all (retries only on 429, 5xx, timeouts and connection
        errors); first back-off, doubled after each failed attempt.
    max_tokens, temperature, seed, extra_body
        Request parameters (casebook: temperature 0, ``enable_thinking=false``).
    schema_in_request
        Also send the JSON schema inside ``response_format`` (understood by llama.cpp's server;
        off by default because the casebook used plain ``json_object``).
    http_client
        An ``httpx2.Client`` for the ``openai`` client (tests pass a mock transport).
    sleep
        Back-off sleep (injectable for tests).
    """

    backend = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        recorder: CallRecorder | None = None,
        *,
        timeout_s: float | None = None,
        max_attempts: int | None = None,
        backoff_s: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        schema_in_request: bool = False,
        limits: SchemaLimits = DEFAULT_LIMITS,
        max_question_chars: int = MAX_QUESTION_CHARS,
        http_client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        spec = backend_defaults("openai")
        self._environ = os.environ if environ is None else environ
        model = model or _first_set(spec["model_env"], self._environ)[1] or spec["model"]
        super().__init__(model, recorder=recorder, limits=limits, max_question_chars=max_question_chars)
        self._spec = spec
        self._base_url = base_url
        self.timeout_s = float(timeout_s if timeout_s is not None else spec["timeout_s"])
        self.max_attempts = max(1, int(max_attempts if max_attempts is not None else spec["max_attempts"]))
        self.backoff_s = float(backoff_s if backoff_s is not None else spec["backoff_s"])
        self.max_tokens = int(max_tokens if max_tokens is not None else spec["max_tokens"])
        self.temperature = float(temperature if temperature is not None else spec["temperature"])
        self.seed = seed if seed is not None else spec["seed"]
        self.extra_body = dict(extra_body if extra_body is not None else spec["extra_body"])
        self.schema_in_request = schema_in_request
        self._http_client = http_client
        self._sleep = sleep

    def endpoint(self) -> tuple[str, str]:
        """``(base_url, api_key)`` from the arguments and environment.

        Raises
        ------
        ModelUnavailableError
            When no key or no endpoint is set; the message names the variables.
        """
        _, key = _first_set(self._spec["key_env"], self._environ)
        _, url = _first_set(self._spec["base_url_env"], self._environ)
        if not key:
            raise ModelUnavailableError(
                f"No API key for the openai generator: set one of {', '.join(self._spec['key_env'])} "
                "in the environment (it is never written to disk), or use the llama_cpp or extractive "
                "generator, or replay recorded calls."
            )
        base_url = self._base_url or url
        if not base_url:
            raise ModelUnavailableError(
                f"No endpoint for the openai generator: set one of {', '.join(self._spec['base_url_env'])} "
                "(an OpenAI-compatible base URL such as Model Studio's compatible-mode/v1)."
            )
        return base_url, key

    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        response_format: dict[str, Any] = {"type": self._spec["response_format"]}
        if self.schema_in_request:
            response_format["schema"] = json_schema
        return {
            "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
            "response_format": response_format, "extra_body": self.extra_body,
        }

    def _complete(self, request: LLMRequest) -> LLMResponse:
        import openai  # lazy: only a live call needs the client

        try:
            base_url, api_key = self.endpoint()
        except ModelUnavailableError as exc:
            raise LLMCallError("backend_error", str(exc)) from exc
        # max_retries=0: the only retries are the bounded, counted ones below.
        client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout_s, max_retries=0,
                               http_client=self._http_client)
        params = dict(request.params)
        extra_body = params.pop("extra_body", None) or None
        failure: tuple[str, str] = ("backend_error", "no attempt was made")
        for attempt in range(1, self.max_attempts + 1):
            try:
                completion = client.chat.completions.create(
                    model=request.model, messages=[dict(m) for m in request.messages],  # type: ignore[misc]
                    extra_body=extra_body, **params,
                )
            except openai.APITimeoutError as exc:
                failure = ("timeout", f"timed out after {self.timeout_s} s ({exc})")
            except openai.APIConnectionError as exc:
                failure = ("backend_error", f"cannot connect to {base_url} ({exc})")
            except openai.RateLimitError as exc:
                failure = ("rate_limited", f"HTTP 429 ({exc})")
            except openai.APIStatusError as exc:
                if exc.status_code < 500:  # a 4xx other than 429 will not get better by retrying
                    raise LLMCallError("backend_error", f"HTTP {exc.status_code} from {base_url}: {exc}") from exc
                failure = ("server_error", f"HTTP {exc.status_code} ({exc})")
            else:
                choice = completion.choices[0] if completion.choices else None
                usage = completion.usage
                return LLMResponse(
                    content=(choice.message.content or "") if choice else "",
                    finish_reason=choice.finish_reason if choice else None,
                    prompt_tokens=usage.prompt_tokens if usage else None,
                    completion_tokens=usage.completion_tokens if usage else None,
                    served_model=completion.model, attempts=attempt,
                )
            if attempt < self.max_attempts:
                self._sleep(self.backoff_s * 2 ** (attempt - 1))
        raise LLMCallError(failure[0], f"{failure[1]}; gave up after {self.max_attempts} attempt(s). "
                                       "Check the endpoint, or raise timeout_s / max_attempts.")
