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
(one JSON line), so :mod:`rag_lib.runner.llm_runs` can fill exactly the missing records.

Integrity
---------
Each record stores ``response_sha256``, the sha256 of its response; a record whose response no
longer matches (edited by hand, damaged) is not replayed. Records of format 3 also store
``meta_sha256`` over ``latency_s``, ``cost_usd`` and ``recorded_at``. The format-2 records committed
before it are kept byte for byte (their response checksum is unchanged) and checked without it: a
local backend's cost must be 0, the latency a finite number of seconds, ``recorded_at`` a past
time. A live call that fails (after its retries) is recorded as ``<key>.failed.json`` (kind and
message, no response) for the audit trail; it is never replayed as an answer, and only replayed as
the same failure when asked (``replay_failures=True``). Records of format 1 (no checksum) are refused until stamped with
``python -m rag_lib.generation stamp DIR``.

Completed calls are never lost: a record is written atomically with SIGINT and SIGTERM held until it
is in place; a write that fails (full disk) warns naming the file and still hands the response back;
a temporary file left by a killed process is completed (when it holds a whole, valid record) or
removed before the call is made again (:meth:`CallRecorder.recover_interrupted`).

API keys are never part of a request. As a second line of defence, the exact values of the
configured key variables and URL credentials (:mod:`rag_lib.redaction`) are replaced by ``[REDACTED]`` in the record
and in the response handed back to the caller, so nothing built from it carries the key.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

from rag_lib.config import RESULTS_DIR, shown_path
from rag_lib.errors import WorkbookError
from rag_lib.generation.specs import models_yaml
from rag_lib.io import DamagedFileError, deferred_signals, read_json, write_json
from rag_lib.redaction import REDACTED, redact

CallMode = Literal["replay_or_live", "live", "replay_only"]
CALL_MODES: tuple[str, ...] = ("replay_or_live", "live", "replay_only")
RECORD_FORMAT = 3  # 2: response_sha256 added; 3: meta_sha256 (latency, cost, time) added
META_FIELDS = ("latency_s", "cost_usd", "recorded_at")
STALE_TMP_S = 60.0  # a temporary record file older than this belongs to no writer still running
DEFAULT_CALLS_DIR = RESULTS_DIR / "llm_calls"
LOCAL_BACKENDS = frozenset({"llama_cpp", "extractive"})


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
    written: bool = True  # False: the record could not be written (full disk …); the response is still real

    def to_json(self) -> dict[str, Any]:
        response = self.response.to_json()
        row = {
            "format": RECORD_FORMAT, "key": self.key, "request": self.request.to_json(),
            "response": response, "response_sha256": response_sha256(response), "latency_s": self.latency_s,
            "cost_usd": self.cost_usd, "recorded_at": self.recorded_at,
        }
        row["meta_sha256"] = meta_sha256(row)
        return row


@cache
def price_table() -> dict[str, dict[str, Any]]:
    """Prices per model (USD per million tokens), from ``generation/models.yaml``."""
    return dict(models_yaml().get("prices", {}))


def estimate_cost(backend: str, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """Estimated cost in USD; 0 for local backends, ``None`` when the model has no price entry."""
    if backend in LOCAL_BACKENDS:
        return 0.0
    price = price_table().get(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    cost = (prompt_tokens * price["input_per_mtok"] + completion_tokens * price["output_per_mtok"]) / 1e6
    return round(cost, 8)


def response_sha256(response: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a stored response (what replay verifies)."""
    canonical = json.dumps(dict(response), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def meta_sha256(row: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a record's latency, cost and recording time."""
    meta = {name: row.get(name) for name in META_FIELDS}
    canonical = json.dumps(meta, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_meta(row: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless the latency, cost and time of a stored record are intact.

    Format 3 records carry ``meta_sha256``. Older (format 2) records, committed before it existed and
    kept byte for byte, are checked for what can be checked without it: the latency is a finite
    number of seconds >= 0, ``recorded_at`` a timezone-aware time not in the future, and the cost of a
    local backend 0.
    """
    if "meta_sha256" in row:
        if meta_sha256(row) != row["meta_sha256"]:
            raise ValueError("its latency, cost or recorded_at does not match its meta_sha256 (edited or damaged)")
        return
    if int(row.get("format", 0)) >= 3:
        raise ValueError(f"record format {row.get('format')} lacks its meta_sha256 (removed or damaged)")
    latency = row["latency_s"]
    if isinstance(latency, bool) or not isinstance(latency, int | float) or not math.isfinite(latency) or latency < 0:
        raise ValueError(f"latency_s {latency!r} is not a number of seconds")
    when = datetime.fromisoformat(str(row["recorded_at"]))
    if when.tzinfo is None or when > datetime.now(UTC):
        raise ValueError(f"recorded_at {row['recorded_at']!r} is not a past, timezone-aware time")
    if row["request"]["backend"] in LOCAL_BACKENDS and row.get("cost_usd") != 0:
        raise ValueError(f"a local backend's call costs 0, but cost_usd is {row.get('cost_usd')!r}")


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
    replay_failures
        Replay a recorded failure as the same :class:`LLMCallError` instead of calling again
        (``replay_or_live``) or reporting a miss (``replay_only``). Off by default.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        mode: CallMode | None = None,
        clock: Callable[[], float] = time.perf_counter,
        *,
        replay_failures: bool = False,
    ) -> None:
        mode = mode or default_mode()
        if mode not in CALL_MODES:
            raise WorkbookError(f"Unknown LLM call mode {mode!r}; use one of {', '.join(CALL_MODES)}.")
        self.directory = Path(directory) if directory is not None else DEFAULT_CALLS_DIR
        self.mode = mode
        self.replay_failures = replay_failures
        self._clock = clock

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def failure_path_for(self, key: str) -> Path:
        """Where a failed live call for ``key`` is recorded (never read as an answer)."""
        return self.directory / f"{key}.failed.json"

    def _read(self, path: Path, key: str) -> CallRecord:
        """The record in ``path`` for ``key``, checked; ``ValueError``/``KeyError``/``TypeError`` when not valid."""
        row = json.loads(path.read_text(encoding="utf-8"))
        request = request_from_json(row["request"])
        if row["key"] != key or request.key != key:
            raise ValueError("the stored request does not hash to the file's key")
        if "response_sha256" not in row:
            stamp = f"python -m rag_lib.generation stamp {shown_path(self.directory)}"
            raise ValueError(f"record format {row.get('format')} has no response checksum; if you trust it, "
                             f"stamp it with `{stamp}`")
        if response_sha256(row["response"]) != row["response_sha256"]:
            raise ValueError("the stored response does not match its response_sha256 (edited or damaged)")
        check_meta(row)
        return CallRecord(
            key=key, request=request, response=LLMResponse.from_json(row["response"]),
            latency_s=float(row["latency_s"]), cost_usd=row.get("cost_usd"),
            recorded_at=str(row["recorded_at"]), replayed=True,
        )

    def load(self, key: str) -> CallRecord | None:
        """The stored record for ``key``; ``None`` when absent; a corrupt, edited or unstamped file
        warns and gives ``None``."""
        path = self.path_for(key)
        if not path.exists():
            return None
        try:
            return self._read(path, key)
        except (ValueError, KeyError, TypeError) as exc:
            warnings.warn(
                f"Corrupt LLM call record {path} ({exc}); it is ignored and the call is made again "
                "(delete the file to silence this).",
                RuntimeWarning, stacklevel=2,
            )
            return None

    def load_failure(self, key: str) -> LLMCallError | None:
        """The recorded failure of the last live call for ``key``, if any."""
        path = self.failure_path_for(key)
        if not path.exists():
            return None
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
            return LLMCallError(str(row["failure"]["kind"]), f"replayed failure: {row['failure']['message']}")
        except (ValueError, KeyError, TypeError):
            return LLMCallError("backend_error", f"replayed failure: {path} is unreadable")

    def call(self, request: LLMRequest, live: Callable[[LLMRequest], LLMResponse]) -> CallRecord:
        """Replay the recorded call for ``request`` or make it with ``live`` and record it.

        Raises
        ------
        ReplayMissError
            In ``replay_only`` mode when there is no valid record.
        LLMCallError
            When the live call fails (recorded as ``<key>.failed.json``, never as an answer), or
            when a recorded failure is replayed (``replay_failures=True``).
        """
        key = request.key
        log_use(key)
        if self.mode != "live":
            record = self.load(key)
            if record is not None:
                return record
            failure = self.load_failure(key)
            if failure is not None and self.replay_failures:
                raise failure
            recovered = self._recover(key)  # a killed writer may have left this very record, complete
            if recovered is not None:
                return recovered
            if self.mode == "replay_only":
                log_miss(request)
                failed = f" (its last live call failed: {failure})" if failure is not None else ""
                raise ReplayMissError(
                    f"No valid recorded LLM call for request {key} ({request.backend}/{request.model}) in "
                    f"{shown_path(self.directory)}{failed}. Fill the missing records with `make llm-runs` "
                    "(it loads the model "
                    "and records each call as it completes), then commit them."
                )
        started = self._clock()
        try:
            response = live(request)
        except LLMCallError as exc:
            clean = self.record_failure(request, exc)
            if clean is not exc:
                raise clean from None  # the key must not reach a log either
            raise
        # From here on the call is done (and may be paid for): nothing may lose it before it is written.
        return self.record(request, response, self._clock() - started)

    def record_failure(self, request: LLMRequest, exc: LLMCallError) -> LLMCallError:
        """Record the failed live call of ``request`` as ``<key>.failed.json``.

        Returns
        -------
        LLMCallError
            ``exc`` itself, or a copy with any credential redacted from its message (raise that one).
        """
        clean, _ = redact(str(exc))
        self._save(self.failure_path_for(request.key), {
            "format": RECORD_FORMAT, "key": request.key, "request": request.to_json(),
            "failure": {"kind": exc.kind, "message": clean},
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }, "the failure is reported but not recorded")
        return exc if clean == str(exc) else LLMCallError(exc.kind, clean)

    def record(self, request: LLMRequest, response: LLMResponse, latency_s: float) -> CallRecord:
        """Record a live call of ``request`` that returned ``response`` after ``latency_s`` seconds.

        :meth:`call` makes the call and records it; a caller that makes calls elsewhere (several at
        once, in other threads) records each here, under its request's key, as it completes.
        """
        key = request.key
        latency = round(latency_s, 6)
        try:
            cost = estimate_cost(request.backend, request.model, response.prompt_tokens, response.completion_tokens)
        except (KeyError, TypeError, ValueError):  # a malformed price entry must not cost the reply
            cost = None
        record = CallRecord(key=key, request=request, response=response, latency_s=latency, cost_usd=cost,
                            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"))
        record = self._write(record)
        if record.written:
            self.failure_path_for(key).unlink(missing_ok=True)  # the call works now
        return record

    def _write(self, record: CallRecord) -> CallRecord:
        """Write ``record`` with any key redacted; return it as written (what the caller may show).

        A write that fails (full disk, read-only folder) warns naming the file and returns the
        record with ``written=False``: the response is real and is still handed back.
        """
        response, hits = redact(record.response.to_json())
        if hits:
            warnings.warn(
                f"{hits} credential value(s) found in LLM call {record.key} were redacted before writing.",
                RuntimeWarning, stacklevel=3,
            )
            record = CallRecord(record.key, record.request, LLMResponse.from_json(response), record.latency_s,
                                record.cost_usd, record.recorded_at)
        if not self._save(self.path_for(record.key), record.to_json(),
                          "the reply is kept for this run only; free space and make the call again to record it"):
            record = CallRecord(record.key, record.request, record.response, record.latency_s, record.cost_usd,
                                record.recorded_at, written=False)
        return record

    def _save(self, path: Path, row: dict[str, Any], consequence: str) -> bool:
        """Write ``row`` to ``path`` atomically with SIGINT/SIGTERM held until it is in place (an
        interrupt finishes the record, then acts); ``False``, with a warning naming the file, when
        the file cannot be written."""
        try:
            with deferred_signals():
                write_json(path, row)
        except OSError as exc:
            warnings.warn(f"LLM call record {shown_path(path)} could not be written "
                          f"({exc.strerror or exc}): {consequence}.", RuntimeWarning, stacklevel=3)
            return False
        return True

    def recover_interrupted(self, min_age_s: float = STALE_TMP_S) -> tuple[list[Path], list[Path]]:
        """Complete or remove the temporary record files a killed writer left in the folder.

        A temporary file (``.<key>.json.<random>.tmp``) older than ``min_age_s`` that holds a whole,
        valid record of its key is renamed into place (the call was made: it must not be made again);
        any other is removed. Returns ``(completed, removed)``.
        """
        completed: list[Path] = []
        removed: list[Path] = []
        if not self.directory.is_dir():
            return completed, removed
        for tmp in sorted(self.directory.glob(".*.json.*.tmp")):
            target = self._complete_tmp(tmp, min_age_s)
            if target is not None:
                completed.append(target)
            elif not tmp.exists():
                removed.append(tmp)
        return completed, removed

    def _complete_tmp(self, tmp: Path, min_age_s: float) -> Path | None:
        """Rename ``tmp`` into place when it holds a valid record (``None`` otherwise; then it is removed
        unless too young to be abandoned)."""
        try:
            if time.time() - tmp.stat().st_mtime < min_age_s:
                return None  # possibly still being written by another process
        except FileNotFoundError:
            return None
        name = tmp.name[1:].rsplit(".", 2)[0]  # ".<key>.json.<random>.tmp" -> "<key>.json"
        target = self.directory / name
        key = name.removesuffix(".json")
        if not name.endswith(".failed.json") and not target.exists():
            try:
                self._read(tmp, key)
            except (ValueError, KeyError, TypeError, OSError):
                pass
            else:
                os.replace(tmp, target)
                return target
        tmp.unlink(missing_ok=True)
        return None

    def _recover(self, key: str) -> CallRecord | None:
        """The record of ``key`` a killed writer left complete in a temporary file, moved into place."""
        for tmp in sorted(self.directory.glob(f".{key}.json.*.tmp")):
            if self._complete_tmp(tmp, STALE_TMP_S) is not None:
                warnings.warn(f"LLM call record {shown_path(self.path_for(key))} was completed from the temporary "
                              "file an interrupted run left; the call is not made again.", RuntimeWarning,
                              stacklevel=3)
                return self.load(key)
        return None


def stamp_records(directory: str | os.PathLike[str]) -> int:
    """Add ``response_sha256`` (and ``meta_sha256``) to every record in ``directory`` that lacks a
    response checksum; return how many.

    Only for records you trust as they are (e.g. recorded before checksums existed): the stamp
    vouches for their current content. A record whose request does not hash to its key is skipped.
    """
    if not Path(directory).is_dir():
        raise FileNotFoundError(f"no call-record folder here; give the folder of the records to stamp "
                                f"(default {shown_path(DEFAULT_CALLS_DIR)})")
    stamped = 0
    for path in sorted(Path(directory).glob("*.json")):
        if path.name.endswith(".failed.json"):
            continue
        row = read_json(path)  # a damaged file is named with its line, not the folder
        if not isinstance(row, dict):
            raise DamagedFileError(f"{path}: not a call record (a JSON object). Restore it or delete it.")
        if "response_sha256" in row or row.get("key") != path.stem:
            continue
        try:
            request = request_from_json(row["request"])
        except (KeyError, TypeError) as exc:
            raise DamagedFileError(f"{path}: its request is incomplete ({type(exc).__name__}: {exc}); restore the "
                                   "file or delete it.") from None
        if request.key != row["key"]:
            warnings.warn(f"{path}: its request does not hash to its key; not stamped.", RuntimeWarning,
                          stacklevel=2)
            continue
        row["format"] = RECORD_FORMAT
        row["response_sha256"] = response_sha256(row["response"])
        row["meta_sha256"] = meta_sha256(row)
        write_json(path, row)
        stamped += 1
    return stamped


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rag_lib.generation stamp DIR``: add response checksums to trusted older records."""
    parser = argparse.ArgumentParser(prog="python -m rag_lib.generation", description=main.__doc__)
    parser.add_argument("command", choices=["stamp"])
    parser.add_argument("directory", nargs="?", default=str(DEFAULT_CALLS_DIR))
    args = parser.parse_args(argv)
    try:
        print(f"stamped {stamp_records(args.directory)} record(s) in {args.directory}")
    except DamagedFileError as exc:  # names the broken file itself
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {args.directory}: {exc}", file=sys.stderr)
        return 2
    return 0


__all__ = [
    "CALL_MODES", "REDACTED", "CallRecord", "CallRecorder", "LLMCallError", "LLMRequest", "LLMResponse",
    "ReplayMissError", "estimate_cost", "redact", "response_sha256", "stamp_records",
]
