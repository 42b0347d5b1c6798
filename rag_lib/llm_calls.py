"""Recorded LLM calls: every request and response is kept, so a run can be replayed offline.

Each call is one JSON file ``<directory>/<key>.json`` where ``key`` is the sha256 of the
canonical JSON of (backend, model, model version, messages, parameters). The file holds the
request, the response, the latency, token counts and an estimated cost (prices per model are data,
in ``rag_lib/generation/models.yaml``; local backends cost 0).

Modes
-----
``replay_or_live`` (default)
    Use the recorded call when there is one; call the live backend only on a miss.
``live``
    Always call the backend and overwrite the record.
``replay_only``
    Never call the backend; a miss raises :class:`ReplayMissError` naming the request hash.

The default mode is ``RAG_LLM_MODE`` when set (``make reproduce`` sets ``replay_only``: it never
calls a model). When ``RAG_LLM_MISSES`` names a file, every replay miss appends its request there
(one JSON line), so :mod:`rag_lib.llm_runs` can fill exactly the missing records.

API keys are never part of a request. As a second line of defence, any value of a credential-like
environment variable found in a record is replaced by ``[REDACTED]`` before the file is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from rag_lib.config import RESULTS_DIR
from rag_lib.errors import WorkbookError
from rag_lib.io import write_json

CallMode = Literal["replay_or_live", "live", "replay_only"]
CALL_MODES: tuple[str, ...] = ("replay_or_live", "live", "replay_only")
RECORD_FORMAT = 1
DEFAULT_CALLS_DIR = RESULTS_DIR / "llm_calls"
MODELS_YAML = Path(__file__).resolve().parent / "generation" / "models.yaml"
LOCAL_BACKENDS = frozenset({"llama_cpp", "extractive"})

# Environment variables whose values must never reach a file.
_SECRET_NAME = re.compile(r"(API_KEY|_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_MIN_SECRET_LEN = 6
REDACTED = "[REDACTED]"


class ReplayMissError(WorkbookError):
    """``replay_only`` was asked for a call that has no (valid) record."""


class LLMCallError(WorkbookError):
    """A live backend call failed; ``kind`` names the failure (``timeout``, ``rate_limited`` …)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LLMRequest:
    """Everything that determines a model's reply (and nothing secret)."""

    backend: str
    model: str
    messages: tuple[Mapping[str, str], ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    model_version: str | None = None  # e.g. the GGUF sha256; part of the key

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend, "model": self.model, "model_version": self.model_version,
            "messages": [dict(m) for m in self.messages], "params": dict(self.params),
        }

    @property
    def key(self) -> str:
        """sha256 of the canonical JSON of the request."""
        canonical = json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LLMResponse:
    """What a backend returned."""

    content: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    served_model: str | None = None  # the model id the server says it used
    model_version: str | None = None
    attempts: int = 1  # live attempts, retries included

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> LLMResponse:
        return cls(
            content=str(row["content"]), finish_reason=row.get("finish_reason"),
            prompt_tokens=row.get("prompt_tokens"), completion_tokens=row.get("completion_tokens"),
            served_model=row.get("served_model"), model_version=row.get("model_version"),
            attempts=int(row.get("attempts", 1)),
        )


@dataclass(frozen=True)
class CallRecord:
    """One recorded call, as stored (``replayed`` says whether it came from disk this time)."""

    key: str
    request: LLMRequest
    response: LLMResponse
    latency_s: float
    cost_usd: float | None
    recorded_at: str
    replayed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT, "key": self.key, "request": self.request.to_json(),
            "response": self.response.to_json(), "latency_s": self.latency_s,
            "cost_usd": self.cost_usd, "recorded_at": self.recorded_at,
        }


@cache
def price_table() -> dict[str, dict[str, Any]]:
    """Prices per model (USD per million tokens), from ``generation/models.yaml``."""
    with open(MODELS_YAML, encoding="utf-8") as fh:
        return dict(yaml.safe_load(fh).get("prices", {}))


def estimate_cost(backend: str, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """Estimated cost in USD; 0 for local backends, ``None`` when the model has no price entry."""
    if backend in LOCAL_BACKENDS:
        return 0.0
    price = price_table().get(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    cost = (prompt_tokens * price["input_per_mtok"] + completion_tokens * price["output_per_mtok"]) / 1e6
    return round(cost, 8)


def _secret_values(environ: Mapping[str, str]) -> list[str]:
    values = {v for k, v in environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)  # longest first, so a key's prefix is not left behind


def redact(obj: Any, environ: Mapping[str, str] | None = None) -> tuple[Any, int]:
    """Replace every credential value from the environment found anywhere in ``obj``.

    Returns the cleaned object and how many replacements were made.
    """
    secrets = _secret_values(os.environ if environ is None else environ)
    text = json.dumps(obj, ensure_ascii=False)
    hits = 0
    for secret in secrets:
        for candidate in {secret, json.dumps(secret, ensure_ascii=False)[1:-1]}:
            hits += text.count(candidate)
            text = text.replace(candidate, REDACTED)
    return json.loads(text), hits


MODE_ENV = "RAG_LLM_MODE"
MISSES_ENV = "RAG_LLM_MISSES"
USED_ENV = "RAG_LLM_USED"  # a file to which every request key asked for is appended (finds orphan records)


def default_mode() -> CallMode:
    """``RAG_LLM_MODE`` if set (checked), else ``replay_or_live``."""
    mode = os.environ.get(MODE_ENV, "").strip() or "replay_or_live"
    if mode not in CALL_MODES:
        raise WorkbookError(f"{MODE_ENV}={mode!r} is not a call mode; use one of {', '.join(CALL_MODES)}.")
    return mode  # type: ignore[return-value]


def request_from_json(row: Mapping[str, Any]) -> LLMRequest:
    """The :class:`LLMRequest` of its :meth:`LLMRequest.to_json` form."""
    return LLMRequest(backend=row["backend"], model=row["model"], messages=tuple(row["messages"]),
                      params=row["params"], model_version=row.get("model_version"))


def log_miss(request: LLMRequest) -> None:
    """Append a missing request to the ``RAG_LLM_MISSES`` file, when one is named."""
    target = os.environ.get(MISSES_ENV, "").strip()
    if target:
        line = json.dumps({"key": request.key, "request": request.to_json()}, ensure_ascii=False, sort_keys=True)
        with open(target, "a", encoding="utf-8") as fh:  # one short append per miss: whole lines only
            fh.write(line + "\n")


def log_use(key: str) -> None:
    """Append a request key to the ``RAG_LLM_USED`` file, when one is named."""
    target = os.environ.get(USED_ENV, "").strip()
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(key + "\n")


class CallRecorder:
    """Stores and replays LLM calls.

    Parameters
    ----------
    directory
        Where the records go; default ``results/llm_calls``.
    mode
        ``replay_or_live``, ``live`` or ``replay_only``; default :func:`default_mode`.
    clock
        Monotonic clock for latency (injectable for tests).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        mode: CallMode | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        mode = mode or default_mode()
        if mode not in CALL_MODES:
            raise WorkbookError(f"Unknown LLM call mode {mode!r}; use one of {', '.join(CALL_MODES)}.")
        self.directory = Path(directory) if directory is not None else DEFAULT_CALLS_DIR
        self.mode = mode
        self._clock = clock

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def load(self, key: str) -> CallRecord | None:
        """The stored record for ``key``; ``None`` when absent; a corrupt file warns and gives ``None``."""
        path = self.path_for(key)
        if not path.exists():
            return None
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
            request = request_from_json(row["request"])
            if row["key"] != key or request.key != key:
                raise ValueError("the stored request does not hash to the file's key")
            return CallRecord(
                key=key, request=request, response=LLMResponse.from_json(row["response"]),
                latency_s=float(row["latency_s"]), cost_usd=row.get("cost_usd"),
                recorded_at=str(row["recorded_at"]), replayed=True,
            )
        except (ValueError, KeyError, TypeError) as exc:
            warnings.warn(
                f"Corrupt LLM call record {path} ({exc}); it is ignored and the call is made again "
                "(delete the file to silence this).",
                RuntimeWarning, stacklevel=2,
            )
            return None

    def call(self, request: LLMRequest, live: Callable[[LLMRequest], LLMResponse]) -> CallRecord:
        """Replay the recorded call for ``request`` or make it with ``live`` and record it.

        Raises
        ------
        ReplayMissError
            In ``replay_only`` mode when there is no valid record.
        LLMCallError
            When the live call fails (nothing is recorded then).
        """
        key = request.key
        log_use(key)
        if self.mode != "live":
            record = self.load(key)
            if record is not None:
                return record
            if self.mode == "replay_only":
                log_miss(request)
                raise ReplayMissError(
                    f"No valid recorded LLM call for request {key} ({request.backend}/{request.model}) in "
                    f"{self.directory}. Fill the missing records with `make llm-runs` (it loads the model "
                    "and records each call as it completes), then commit them."
                )
        started = self._clock()
        response = live(request)
        latency = round(self._clock() - started, 6)
        record = CallRecord(
            key=key, request=request, response=response, latency_s=latency,
            cost_usd=estimate_cost(request.backend, request.model, response.prompt_tokens,
                                   response.completion_tokens),
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        self._write(record)
        return record

    def _write(self, record: CallRecord) -> None:
        row, hits = redact(record.to_json())
        if hits:
            warnings.warn(
                f"{hits} credential value(s) found in LLM call {record.key} were redacted before writing.",
                RuntimeWarning, stacklevel=3,
            )
        write_json(self.path_for(record.key), row)


def messages_tuple(messages: Sequence[Mapping[str, str]]) -> tuple[dict[str, str], ...]:
    """Messages as an immutable tuple of plain ``{"role", "content"}`` dicts."""
    return tuple({"role": str(m["role"]), "content": str(m["content"])} for m in messages)
