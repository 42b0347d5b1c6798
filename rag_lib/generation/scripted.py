"""Fake-able and instrumented LLM plumbing: a scripted backend and a counting recorder.

:class:`ScriptedLLM` / :func:`scripted_generator` answer with fixed text, an exception or a function of
the request (the failure outcomes 03 shows without a model, 10's injection set's obeying model);
:class:`CountingRecorder` proves a run asked the model nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rag_lib.generation.base import Generator
from rag_lib.generation.call_records import CallRecord, LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder


class CountingRecorder(CallRecorder):
    """A :class:`CallRecorder` that counts every request reaching it, replayed or live.

    ``requests == 0`` after a run proves the model was not asked anything (not even from disk).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests = 0

    def call(self, request: LLMRequest, live: Any) -> CallRecord:
        self.requests += 1
        return super().call(request, live)


class ScriptedLLM:
    """Replies of a fake LLM backend, for showing failure outcomes without a model.

    ``reply`` is the text the "model" returns, an exception to raise (e.g.
    ``LLMCallError("timeout", …)``), or a function of the request that returns the response (a
    model that reads its prompt, such as the injection set's obeying model). Used with
    :func:`scripted_generator`.
    """

    def __init__(self, reply: str | Exception | Callable[[LLMRequest], LLMResponse]) -> None:
        self.reply = reply

    def __call__(self, request: LLMRequest) -> LLMResponse:
        if isinstance(self.reply, Exception):
            raise self.reply
        if callable(self.reply):
            return self.reply(request)
        return LLMResponse(content=self.reply, prompt_tokens=0, completion_tokens=0, served_model="scripted")


def scripted_generator(reply: str | Exception | Callable[[LLMRequest], LLMResponse],
                       recorder: CallRecorder) -> Generator:
    """An :class:`LLMGenerator` whose backend replies ``reply`` (the fake-able path of the generation layer)."""
    from rag_lib.generation.base import LLMGenerator

    class ScriptedGenerator(LLMGenerator):
        backend = "scripted"

        def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
            return {"temperature": 0, "schema": json_schema}

        def _complete(self, request: LLMRequest) -> LLMResponse:
            return ScriptedLLM(reply)(request)

    return ScriptedGenerator("scripted", recorder=recorder)
