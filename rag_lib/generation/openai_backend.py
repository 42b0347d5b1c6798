"""Generation through any OpenAI-compatible endpoint (the casebook used qwen3.8-flash on Model Studio).

Endpoint, key and model come from the environment only (see ``models.yaml``):
``RAG_LLM_BASE_URL`` / ``RAG_LLM_API_KEY`` / ``RAG_LLM_MODEL`` override the casebook's
``DASHSCOPE_BASE_URL`` / ``DASHSCOPE_API_KEY`` / ``qwen3.8-flash``. The key is read at call time,
passed to the client and never stored: a replayed call needs no key at all.
"""

from __future__ import annotations

import email.utils
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from rag_lib.core.config import RunConfig
from rag_lib.core.errors import ModelUnavailableError, SettingError
from rag_lib.core.redaction import redact_text, shown_url
from rag_lib.generation.base import MAX_QUESTION_CHARS, LLMGenerator
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError, check_reply_size
from rag_lib.generation.schema import DEFAULT_LIMITS, SchemaLimits
from rag_lib.generation.specs import backend_defaults

_LOG = logging.getLogger(__name__)
MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After is reported instead of waited for


def first_set(names: list[str], environ: Mapping[str, str]) -> tuple[str | None, str | None]:
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
        Per-attempt timeout; attempts in all (retries only on 429, 5xx, timeouts, connection errors
        and HTTP 200 bodies that are not a chat completion); first back-off, doubled after each failed
        attempt. A ``Retry-After`` header longer than the back-off is honoured (up to 60 s).
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
        model = model or first_set(spec["model_env"], self._environ)[1] or spec["model"]
        super().__init__(model, recorder=recorder, limits=limits, max_question_chars=max_question_chars)
        self._spec = spec
        self._base_url = base_url
        self.timeout_s = check_timeout(timeout_s if timeout_s is not None else spec["timeout_s"])
        self.max_attempts = max(1, int(max_attempts if max_attempts is not None else spec["max_attempts"]))
        self.backoff_s = float(backoff_s if backoff_s is not None else spec["backoff_s"])
        self.max_tokens = int(max_tokens if max_tokens is not None else spec["max_tokens"])
        self.temperature = float(temperature if temperature is not None else RunConfig.from_settings().temperature)
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
        _, key = first_set(self._spec["key_env"], self._environ)
        _, url = first_set(self._spec["base_url_env"], self._environ)
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
        from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

        try:
            base_url, api_key = self.endpoint()
        except ModelUnavailableError as exc:
            raise LLMCallError("backend_error", str(exc)) from exc
        # max_retries=0: the only retries are the bounded, counted ones below (tenacity).
        client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout_s, max_retries=0,
                               http_client=self._http_client)
        params = dict(request.params)
        extra_body = params.pop("extra_body", None) or None

        shown = shown_url(base_url)  # messages and retry lines name the endpoint, never its credentials

        def attempt_once() -> LLMResponse:
            completion = self._send(client, openai, shown, request, params, extra_body)
            return self._to_response(completion, shown)

        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts), wait=self._wait, sleep=self._sleep,
            retry=retry_if_exception_type(_Transient), before_sleep=self._say_retrying,
        )
        try:
            for attempt in retrying:
                with attempt:
                    response = attempt_once()
                    return LLMResponse(**{**response.to_json(), "attempts": attempt.retry_state.attempt_number})
        except RetryError as exc:
            last = exc.last_attempt.exception()
            assert isinstance(last, _Transient)
            raise LLMCallError(last.kind, f"{last}; gave up after {self.max_attempts} attempt(s). "
                                          "Check the endpoint, or raise --timeout / max_attempts.") from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _send(self, client: Any, openai: Any, base_url: str, request: LLMRequest, params: dict[str, Any],
              extra_body: Any) -> Any:
        """One HTTP round trip; every failure becomes :class:`_Transient` (retried) or :class:`LLMCallError`.

        ``base_url`` is the endpoint as messages show it (credentials replaced).
        """
        try:
            return client.chat.completions.create(
                model=request.model, messages=[dict(m) for m in request.messages], extra_body=extra_body, **params,
            )
        except openai.APITimeoutError as exc:
            raise _Transient("timeout", f"no reply within {self.timeout_s} s from {base_url}") from exc
        except openai.APIConnectionError as exc:
            raise _Transient("connection_failed", f"cannot connect to {base_url} ({exc.__cause__ or exc})") from exc
        except openai.RateLimitError as exc:
            raise _Transient("rate_limited", f"HTTP 429 from {base_url}", retry_after(exc.response)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise _Transient("server_error", f"HTTP {exc.status_code} from {base_url}",
                                 retry_after(exc.response)) from exc
            hint = " (the key was refused: check it)" if exc.status_code in (401, 403) else ""
            # A 4xx other than 429 will not get better by retrying.
            raise LLMCallError("backend_error", f"HTTP {exc.status_code} from {base_url}{hint}: {exc.message}") from exc
        except (openai.APIResponseValidationError, ValueError, TypeError, AttributeError) as exc:
            # An HTTP 200 whose body is not a chat completion (HTML page, truncated JSON …).
            raise _Transient("bad_reply", f"HTTP 200 from {base_url} but the body is not a chat completion "
                                          f"({type(exc).__name__}: {str(exc)[:200]})") from exc
        except openai.OpenAIError as exc:
            raise LLMCallError("backend_error", f"{type(exc).__name__} from {base_url}: {exc}") from exc

    @staticmethod
    def _to_response(completion: Any, base_url: str) -> LLMResponse:
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            shown = "no choices" if isinstance(choices, list) else f"a {type(completion).__name__} body"
            raise _Transient("bad_reply", f"HTTP 200 from {base_url} with {shown}, not a chat completion")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None or not isinstance(getattr(message, "content", None), str):
            raise _Transient("bad_reply", f"HTTP 200 from {base_url} whose first choice has no message text")
        usage = getattr(completion, "usage", None)
        # Over MAX_REPLY_BYTES: reply_too_large, not retried (the same request gets the same reply) nor recorded.
        return check_reply_size(LLMResponse(
            content=message.content, finish_reason=getattr(choice, "finish_reason", None),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            served_model=getattr(completion, "model", None),
        ), f"from {base_url}")

    def _wait(self, state: Any) -> float:
        """Exponential back-off, or the server's ``Retry-After`` when it asks for longer."""
        backoff = self.backoff_s * 2 ** (state.attempt_number - 1)
        error = state.outcome.exception() if state.outcome else None
        asked = getattr(error, "retry_after", None)
        if asked is not None and asked > MAX_RETRY_AFTER_S:
            raise LLMCallError(error.kind, f"{error}; the server asks to retry after {asked:.0f} s, over the "
                                           f"{MAX_RETRY_AFTER_S:.0f} s this client waits. Try again later.")
        return max(backoff, asked or 0.0)

    def _say_retrying(self, state: Any) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        _LOG.warning("openai attempt %d/%d failed: %s; retrying in %.1f s", state.attempt_number,
                     self.max_attempts, redact_text(str(error))[0], wait)


def check_timeout(value: Any) -> float:
    """``value`` as a timeout in seconds: a finite number above 0.

    Raises
    ------
    SettingError
        For ``inf`` (the client cannot wait forever), ``nan`` (the HTTP client rejects it before any
        request is sent, which would look like a bad reply), zero, a negative number or a non-number.
    """
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise SettingError(f"--timeout (timeout_s) must be a finite number of seconds above 0, such as 30; "
                           f"got {value!r}.")
    return seconds


class _Transient(Exception):
    """A failure worth retrying; ``retry_after`` is the server's Retry-After in seconds, if any."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


def retry_after(response: Any) -> float | None:
    """Seconds from ``Retry-After-Ms`` / ``Retry-After`` (seconds or an HTTP date); ``None`` if absent."""
    headers = getattr(response, "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None  # an unreadable header: fall back to the back-off
