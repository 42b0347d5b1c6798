"""The local backend's calls made through an OpenAI-compatible server (llama.cpp's, vLLM, a hosted
endpoint) instead of in this process: ``make llm-runs --server URL`` (:mod:`rag_lib.runner.llm_runs`).

The client is :class:`~rag_lib.generation.openai_backend.OpenAIGenerator`; a request keeps the key of the
local backend's record, only its transport changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from rag_lib.core.errors import ModelUnavailableError, SettingError
from rag_lib.core.redaction import redact_text, shown_url
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder
from rag_lib.generation.openai_backend import OpenAIGenerator, first_set
from rag_lib.generation.specs import backend_defaults

SERVER_KINDS = ("llama.cpp", "openai")
# llama-cpp-python's in-process sampler defaults (Llama.create_chat_completion), sent to a llama.cpp
# server so that it decodes as the in-process backend does: its server's own repeat_penalty is 1.1.
LLAMA_CPP_SAMPLING = {"top_p": 0.95, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.0,
                      "presence_penalty": 0.0, "frequency_penalty": 0.0}
NO_SERVER_KEY = "no-key"  # a local server without --api_key accepts any; the client needs some string


class ServerExecutor:
    """Makes the local backend's calls through an OpenAI-compatible server instead of in this process.

    The request (and so its record's key) is the one the local backend built; only its transport
    changes: the chat messages, temperature, seed, token cap and JSON schema are sent to the server,
    which must serve the same GGUF file under the model's workbook name (``--model_alias NAME`` for
    ``python -m llama_cpp.server``, ``--served-model-name NAME`` for vLLM). Yes/no judgements
    (next-token logits, ``params.operation``) cannot be asked of a chat endpoint: :meth:`can_serve`
    is ``False`` for them, and they are made in-process.

    Parameters
    ----------
    base_url
        The server's OpenAI-compatible base URL (``http://127.0.0.1:8080/v1``); default ``LLM_SERVER``.
    kind
        ``llama.cpp`` (the schema inside ``json_object``, llama-cpp-python's sampler defaults sent) or
        ``openai`` (OpenAI's ``json_schema`` response format, for vLLM, SGLang and hosted endpoints).
    timeout_s, max_attempts, backoff_s
        As :class:`OpenAIGenerator` (defaults: ``server`` in ``models.yaml``).
    environ
        Where ``RAG_LLM_SERVER_API_KEY`` is read (the key is never stored); default ``os.environ``.
    http_client, sleep
        Injectable for tests.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        kind: str | None = None,
        timeout_s: float | None = None,
        max_attempts: int | None = None,
        backoff_s: float | None = None,
        environ: Mapping[str, str] | None = None,
        http_client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        spec = backend_defaults("server")
        env = os.environ if environ is None else environ
        url = base_url or first_set(spec["base_url_env"], env)[1]
        if not url:
            raise SettingError(f"No server URL: pass one or set {', '.join(spec['base_url_env'])} (an "
                               "OpenAI-compatible base URL such as http://127.0.0.1:8080/v1).")
        self.kind = kind or str(spec["kind"])
        if self.kind not in SERVER_KINDS:
            raise SettingError(f"LLM_SERVER_KIND must be one of {', '.join(SERVER_KINDS)}; got {self.kind!r}.")
        self.base_url = url.rstrip("/")
        key = first_set(spec["key_env"], env)[1] or NO_SERVER_KEY
        # The openai backend's client does the HTTP: its retries, Retry-After, error kinds and redaction.
        self._client = OpenAIGenerator(
            model="server", base_url=self.base_url, recorder=CallRecorder(mode="live"),
            environ={"RAG_LLM_API_KEY": key},
            timeout_s=timeout_s if timeout_s is not None else spec["timeout_s"],
            max_attempts=max_attempts if max_attempts is not None else spec["max_attempts"],
            backoff_s=backoff_s if backoff_s is not None else spec["backoff_s"],
            http_client=http_client, sleep=sleep,
        )

    @property
    def shown_url(self) -> str:
        """The server's URL as a message may show it (credentials replaced)."""
        return shown_url(self.base_url)

    @staticmethod
    def can_serve(request: LLMRequest) -> bool:
        """Whether ``request`` is a local-model chat completion (a yes/no judgement is not)."""
        return request.backend == "llama_cpp" and not request.params.get("operation")

    def wire_params(self, request: LLMRequest) -> dict[str, Any]:
        """The request's parameters as this kind of server takes them (``n_ctx`` is the server's setting)."""
        params = {k: v for k, v in request.params.items() if k != "n_ctx"}
        if self.kind == "llama.cpp":
            return {**params, "extra_body": dict(LLAMA_CPP_SAMPLING)}
        response_format = dict(params.get("response_format") or {})
        if "schema" in response_format:
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": response_format["schema"]}}
        return params

    def served_models(self) -> list[str]:
        """The model names the server lists (``GET /models``).

        Raises
        ------
        ModelUnavailableError
            When the server cannot be reached or does not answer with a model list.
        """
        import openai

        _, key = self._client.endpoint()
        client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=30, max_retries=2,
                               http_client=self._client._http_client)
        try:
            return [m.id for m in client.models.list()]
        except openai.OpenAIError as exc:
            why = redact_text(str(exc))[0][:200]
            raise ModelUnavailableError(f"the LLM server at {self.shown_url} did not list its models "
                                        f"({type(exc).__name__}: {why}); is it running?") from exc

    def check_models(self, names: list[str]) -> None:
        """Raise unless the server serves every model in ``names`` under that name.

        Raises
        ------
        ModelUnavailableError
            Naming the models it lacks and how to serve them under the workbook's names.
        """
        served = self.served_models()
        missing = sorted(set(names) - set(served))
        if missing:
            raise ModelUnavailableError(
                f"the LLM server at {self.shown_url} serves {served or 'no model'}, not {missing}. Serve the same GGUF "
                "file under the workbook's name: `python -m llama_cpp.server --model FILE --model_alias NAME` "
                "(llama.cpp) or `--served-model-name NAME` (vLLM).")

    def __call__(self, request: LLMRequest) -> LLMResponse:
        """One live call of ``request`` through the server (safe to make from several threads at once).

        Raises
        ------
        LLMCallError
            As the openai backend names its failures (``timeout``, ``server_error`` …).
        """
        wire = LLMRequest("openai", request.model, request.messages, self.wire_params(request))
        reply = self._client._complete(wire)
        # model_version stays empty: the server names its model but cannot vouch for the file's sha256.
        return LLMResponse(content=reply.content, finish_reason=reply.finish_reason,
                           prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                           served_model=reply.served_model, attempts=reply.attempts)
