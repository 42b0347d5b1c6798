"""Generation with a local GGUF model through ``llama-cpp-python``, JSON-schema constrained.

The model is a name from ``models.yaml`` → ``local_models`` (``--generator llama_cpp:NAME``;
default ``llama_cpp.default_model``), or any ``.gguf`` file given as ``model_path`` /
``RAG_GGUF_PATH``. The file's sha256 is the model version and part of every request hash. The
weights are loaded only on a live call, so replaying needs neither the model nor its packages.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np

from rag_lib.core.config import RunConfig
from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.io import file_sha256
from rag_lib.generation.base import MAX_QUESTION_CHARS, LLMGenerator
from rag_lib.generation.call_records import LLMRequest, LLMResponse
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError
from rag_lib.generation.llm_runtime import guard, runtime_description
from rag_lib.generation.local_models import LocalModelSpec, local_model_spec, model_file
from rag_lib.generation.schema import DEFAULT_LIMITS, SchemaLimits
from rag_lib.generation.specs import backend_defaults


def gguf_override(environ: Mapping[str, str] | None = None) -> Path | None:
    """The ``RAG_GGUF_PATH`` file, when set (it replaces the named model, and says so)."""
    name = backend_defaults("llama_cpp")["path_env"]
    value = (os.environ if environ is None else environ).get(name, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise ModelUnavailableError(f"{name}={value} is not a file; point it at a .gguf model or unset it.")
    return path


YES_NO_OPERATION = "yes_no_relevance"  # params["operation"] of a next-token yes/no judgement (LLM reranker)


def p_yes(logit_yes: float, logit_no: float) -> float:
    """Softmax over the two answer tokens: the probability of "yes"."""
    top = max(logit_yes, logit_no)
    e_yes, e_no = math.exp(logit_yes - top), math.exp(logit_no - top)
    return e_yes / (e_yes + e_no)


def yes_no_logits(llm: Any, request: LLMRequest) -> LLMResponse:
    """Run one judgement on a loaded ``llama_cpp.Llama``: the logits of "yes" and "no" after the prompt.

    The prompt is the model's own chat template (from the GGUF) with the generation prompt added.
    Tokens shared with the previous prompt (system line, instruction, query) are not evaluated again.
    """
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ValueError("the GGUF file has no chat template (tokenizer.chat_template)")
    eos = llm.detokenize([llm.token_eos()]).decode("utf-8", "ignore")
    bos = llm.detokenize([llm.token_bos()]).decode("utf-8", "ignore") if llm.token_bos() >= 0 else ""
    prompt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)(
        messages=[dict(m) for m in request.messages]).prompt
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    if len(tokens) >= llm.n_ctx():
        raise ValueError(f"the judgement prompt has {len(tokens)} tokens, over n_ctx={llm.n_ctx()}")
    cached = llm.input_ids[: llm.n_tokens].tolist()
    shared = 0
    for a, b in zip(cached, tokens, strict=False):
        if a != b:
            break
        shared += 1
    llm.n_tokens = min(shared, len(tokens) - 1)  # eval() drops the KV cache past n_tokens
    evaluated = len(tokens) - llm.n_tokens
    llm.eval(tokens[llm.n_tokens:])
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    ids = {word: llm.tokenize(word.encode("utf-8"), add_bos=False, special=False) for word in ("yes", "no")}
    if any(len(v) != 1 for v in ids.values()):
        raise ValueError(f"'yes'/'no' are not single tokens for this model: {ids}")
    logit_yes, logit_no = float(logits[ids["yes"][0]]), float(logits[ids["no"][0]])
    content = json.dumps({"p_yes": round(p_yes(logit_yes, logit_no), 6), "logit_yes": round(logit_yes, 4),
                          "logit_no": round(logit_no, 4)}, sort_keys=True)
    return LLMResponse(content=content, finish_reason="logits", prompt_tokens=evaluated, completion_tokens=0)


OPENMP_WAIT_ENV = "OMP_WAIT_POLICY"


def passive_openmp(environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user chose a policy; return the policy in force.

    llama.cpp's OpenMP threads spin while they wait by default; on a machine whose cores are shared
    (2 cores, a notebook or the tests beside the model) the spinning threads starve each other and
    PASSIVE generates several times faster (``benchmarks/llm_throughput.py --omp-ab`` measures it).
    OpenMP reads the variable once, when its runtime starts, so this must run before llama.cpp loads.
    """
    env = os.environ if environ is None else environ
    return env.setdefault(OPENMP_WAIT_ENV, "PASSIVE")


def default_model() -> str:
    """The model of ``--generator llama_cpp``: the ``answer`` task's, when that is a llama_cpp model
    (so ``ask`` answers with the model whose answers the notebooks report), else ``default_model``."""
    backend, _, model = RunConfig.from_settings().llm_tasks.get("answer", "").partition(":")
    return model if backend == "llama_cpp" and model else str(backend_defaults("llama_cpp")["default_model"])


def _longest_string_cap(schema: Any) -> int:
    """The largest ``maxLength`` anywhere in a JSON schema."""
    if isinstance(schema, dict):
        own = schema.get("maxLength", 0) if isinstance(schema.get("maxLength"), int) else 0
        return max([own, *(_longest_string_cap(v) for v in schema.values())])
    if isinstance(schema, list):
        return max((_longest_string_cap(v) for v in schema), default=0)
    return 0


class LlamaCppGenerator(LLMGenerator):
    """Grounded generation with a local GGUF model.

    Parameters
    ----------
    model
        A local model name from ``models.yaml`` (default :func:`default_model`).
    model_path
        A ``.gguf`` file instead of a named model (also ``RAG_GGUF_PATH``); its file name is the
        model label and its sha256 the version.
    recorder
        Where calls are recorded and replayed from.
    n_ctx, n_threads, seed, temperature, max_tokens, max_chunk_chars, constrain_quotes
        llama.cpp and prompt settings (defaults in ``models.yaml``).
    limits
        Length caps written into the JSON schema; default: the workbook's caps clipped to what
        llama.cpp's grammar accepts (``llama_cpp.max_grammar_string``).
    """

    backend = "llama_cpp"

    def __init__(
        self,
        model: str | None = None,
        recorder: CallRecorder | None = None,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        max_chunk_chars: int | None = None,
        constrain_quotes: bool | None = None,
        limits: SchemaLimits | None = None,
        max_question_chars: int = MAX_QUESTION_CHARS,
    ) -> None:
        defaults = backend_defaults("llama_cpp")
        self.max_grammar_string = int(defaults["max_grammar_string"])
        path = Path(model_path) if model_path is not None else gguf_override()
        self.spec: LocalModelSpec | None = None
        if path is None:
            self.spec = local_model_spec(model or default_model())
        elif not path.is_file():
            raise ModelUnavailableError(f"GGUF model {path} does not exist; pass an existing .gguf file.")
        self._path = path  # resolved (and assembled) on the first live call when a named model is used
        label = self.spec.name if self.spec else path.name  # type: ignore[union-attr]
        super().__init__(label, recorder=recorder,
                         limits=limits if limits is not None else DEFAULT_LIMITS.clipped(self.max_grammar_string),
                         max_question_chars=max_question_chars,
                         max_chunk_chars=int(max_chunk_chars if max_chunk_chars is not None
                                             else defaults["max_evidence_chars"]),
                         constrain_quotes=bool(defaults["constrain_quotes"] if constrain_quotes is None
                                               else constrain_quotes))
        self.n_ctx = int(n_ctx if n_ctx is not None else (self.spec.n_ctx if self.spec else defaults["n_ctx"]))
        self.n_threads = int(n_threads if n_threads is not None else defaults["n_threads"])
        self.seed = int(seed if seed is not None else defaults["seed"])
        self.temperature = float(temperature if temperature is not None else RunConfig.from_settings().temperature)
        self.max_tokens = int(max_tokens if max_tokens is not None else defaults["max_tokens"])
        self._llm: Any = None  # loaded on the first live call

    @property
    def model_version(self) -> str:
        if self.spec is not None and self.spec.sha256:
            return f"sha256:{self.spec.sha256}"  # verified when the parts are assembled
        return f"sha256:{file_sha256(self.model_path)}"

    @property
    def model_path(self) -> Path:
        """The GGUF file (assembling a named model's parts on first use)."""
        if self._path is None:
            self._path = model_file(self.spec.name)  # type: ignore[union-attr]
        return self._path

    def describe(self) -> dict[str, Any]:
        """Backend, model, version and settings, for a result's provenance (no machine path)."""
        return {"backend": self.backend, "model": self.model, "model_version": self.model_version,
                "spec": self.spec.provenance() if self.spec else {"file": self._path.name},  # type: ignore[union-attr]
                "n_ctx": self.n_ctx, "n_threads": self.n_threads, "temperature": self.temperature,
                "seed": self.seed, "max_tokens": self.max_tokens, "max_chunk_chars": self.max_chunk_chars,
                "constrain_quotes": self.constrain_quotes}  # OMP_WAIT_POLICY changes speed, never a reply

    @property
    def loaded(self) -> bool:
        """Whether the model weights were loaded (not needed when every call is replayed)."""
        return self._llm is not None

    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
            "n_ctx": self.n_ctx, "response_format": {"type": "json_object", "schema": json_schema},
        }

    def load(self) -> Any:
        """The ``llama_cpp.Llama`` instance (loaded once; the GGUF name is checked against the spec)."""
        if self._llm is None:
            passive_openmp()
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ModelUnavailableError(
                    "llama-cpp-python is not installed; run `make llm-runtime` (pinned in requirements-llm.txt)."
                ) from exc
            # A runtime that crashes on this CPU (SIGILL) would end this process without a word: show first,
            # in a child process, that this build loads this model here (once per build, model and CPU).
            guard(self.model_path)
            try:
                llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                            seed=self.seed, verbose=False)
            except (ValueError, RuntimeError) as exc:  # llama.cpp could not read the file as a model
                raise ModelUnavailableError(
                    f"llama.cpp could not load {self.model_path.name} as a GGUF model ({exc}); the file is damaged "
                    "or not a model. Delete it and run `make llm-models`, or point RAG_GGUF_PATH at a .gguf file."
                ) from exc
            name = llm.metadata.get("general.name")
            if self.spec is not None and name != self.spec.gguf_name:
                raise ModelUnavailableError(
                    f"{self.model_path.name} says it is {name!r}, but models.yaml declares {self.spec.name} as "
                    f"{self.spec.gguf_name!r}; delete the file and run `make llm-models MODELS={self.spec.name}`."
                )
            self._llm = llm
        return self._llm

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One live call: a JSON-constrained chat completion, or a yes/no judgement (``params.operation``)."""
        return self._complete(request)

    def _complete(self, request: LLMRequest) -> LLMResponse:
        try:
            return self._complete_loaded(request)
        except ModelUnavailableError as exc:  # a live call without the model: a named outcome, nothing recorded
            raise LLMCallError("model_unavailable", str(exc)) from exc

    def _complete_loaded(self, request: LLMRequest) -> LLMResponse:
        params = dict(request.params)
        params.pop("n_ctx")  # a load-time setting, kept in the params only so it is part of the key
        if params.get("operation") == YES_NO_OPERATION:
            llm = self.load()  # outside the try: a model that fails to load is not a failed judgement
            try:
                reply = yes_no_logits(llm, request)
            except ValueError as exc:
                raise LLMCallError("backend_error", f"yes/no judgement failed: {exc}") from exc
            return LLMResponse(content=reply.content, finish_reason=reply.finish_reason,
                               prompt_tokens=reply.prompt_tokens, completion_tokens=0,
                               served_model=self.model, model_version=self.model_version,
                               runtime=runtime_description())
        longest = _longest_string_cap(params.get("response_format", {}).get("schema", {}))
        if longest > self.max_grammar_string:
            # llama.cpp expands maxLength into one grammar rule per character and aborts the whole
            # process past its rule limit: refuse here, as a recorded outcome, instead of crashing.
            raise LLMCallError("schema_too_large", f"a string field allows {longest} characters; llama.cpp's JSON "
                               f"grammar supports at most {self.max_grammar_string} here. Pass smaller SchemaLimits.")
        llm = self.load()  # outside the try: its errors are not the prompt's size
        try:
            reply = llm.create_chat_completion(messages=[dict(m) for m in request.messages], **params)
        except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds n_ctx
            raise LLMCallError("backend_error", f"llama.cpp refused the request ({exc}); "
                                                "raise n_ctx or send fewer chunks.") from exc
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        return LLMResponse(
            content=choice["message"].get("content") or "", finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
            served_model=self.model, model_version=self.model_version, runtime=runtime_description(),
        )
