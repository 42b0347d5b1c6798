"""Recorded LLM calls: every request and response is kept, so a run can be replayed offline.

The recorder (:class:`CallRecorder`) and its modes. What a record is, where it is stored, its
checksums and the ``stamp`` command: :mod:`rag_lib.generation.call_records`.

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
A record whose checksums do not match (:mod:`rag_lib.generation.call_records`) is not replayed. A
live call that fails (after its retries) is recorded as ``<key>.failed.json`` (kind and
message, no response) for the audit trail; it is never replayed as an answer, and only replayed as
the same failure when asked (``replay_failures=True``). A reply over :data:`MAX_REPLY_BYTES` is refused
(``reply_too_large``): its failure record keeps its size, sha256 and a short prefix, never the reply.

Completed calls are never lost: a record is written atomically with SIGINT and SIGTERM held until it
is in place; a write that fails (full disk) warns naming the file and still hands the response back;
a temporary file left by a killed process is completed (when it holds a whole, valid record) or
removed before the call is made again (:meth:`CallRecorder.recover_interrupted`).

API keys are never part of a request. As a second line of defence, the exact values of the
configured key variables and URL credentials (:mod:`rag_lib.core.redaction`) are replaced by ``[REDACTED]`` in the
record and in the response handed back to the caller, so nothing built from it carries the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rag_lib.core.config import shown_path
from rag_lib.core.errors import WorkbookError
from rag_lib.core.io import deferred_signals, write_json
from rag_lib.core.redaction import redact
from rag_lib.generation.call_records import (
    DEFAULT_CALLS_DIR,
    RECORD_FORMAT,
    CallRecord,
    LLMRequest,
    LLMResponse,
    check_meta,
    estimate_cost,
    request_from_json,
    response_sha256,
)

CallMode = Literal["replay_or_live", "live", "replay_only"]
CALL_MODES: tuple[str, ...] = ("replay_or_live", "live", "replay_only")
STALE_TMP_S = 60.0  # a temporary record file older than this belongs to no writer still running
# The largest reply recorded: 1 MiB of the response as its record stores it (UTF-8 JSON). Replies are short JSON
# (max_tokens keeps them in kilobytes): a larger one is a misbehaving endpoint, not a record for the repository.
MAX_REPLY_BYTES = 1024 * 1024
REPLY_PREFIX_CHARS = 200  # what a reply_too_large failure record keeps of the reply's text


class ReplayMissError(WorkbookError):
    """``replay_only`` was asked for a call that has no (valid) record."""


class LLMCallError(WorkbookError):
    """A live backend call failed; ``kind`` names the failure (``timeout``, ``rate_limited`` …)."""

    def __init__(self, kind: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.details = dict(details) if details else None  # kept in the failure record (e.g. a reply's size)


def check_reply_size(response: LLMResponse, where: str = "", limit: int = MAX_REPLY_BYTES) -> LLMResponse:
    """``response`` when its record stays within ``limit`` bytes (``where``: e.g. "from <endpoint>"); else
    :class:`LLMCallError` ``reply_too_large`` whose ``details`` (size, sha256, a short prefix) are all that
    its failure record keeps of the reply."""
    canonical = json.dumps(response.to_json(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    encoded = canonical.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= limit:
        return response
    size, digest = len(encoded), hashlib.sha256(encoded).hexdigest()
    source = f" {where}" if where else ""
    raise LLMCallError("reply_too_large", (
        f"The reply{source} is {size:,} bytes, over the cap of {limit:,} bytes on one reply (MAX_REPLY_BYTES); it "
        f"was refused and not recorded (sha256 {digest[:16]}…). A chat reply this large is no answer: check the "
        "endpoint and the model it serves, or lower max_tokens."),
        {"bytes": size, "max_bytes": limit, "response_sha256": digest,
         "content_prefix": response.content[:REPLY_PREFIX_CHARS]})


MODE_ENV = "RAG_LLM_MODE"
MISSES_ENV = "RAG_LLM_MISSES"
USED_ENV = "RAG_LLM_USED"  # a file to which every request key asked for is appended (finds orphan records)


def default_mode() -> CallMode:
    """``RAG_LLM_MODE`` if set (checked), else ``replay_or_live``."""
    mode = os.environ.get(MODE_ENV, "").strip() or "replay_or_live"
    if mode not in CALL_MODES:
        raise WorkbookError(f"{MODE_ENV}={mode!r} is not a call mode; use one of {', '.join(CALL_MODES)}.")
    return mode  # type: ignore[return-value]


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
            response = check_reply_size(live(request))  # every backend: a 20 MB reply is never written
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
        details = redact(exc.details)[0] if exc.details else None  # a reply's prefix may echo a key too
        failure: dict[str, Any] = {"kind": exc.kind, "message": clean, **({"reply": details} if details else {})}
        self._save(self.failure_path_for(request.key), {
            "format": RECORD_FORMAT, "key": request.key, "request": request.to_json(),
            "failure": failure, "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }, "the failure is reported but not recorded")
        return exc if clean == str(exc) else LLMCallError(exc.kind, clean, details)

    def record(self, request: LLMRequest, response: LLMResponse, latency_s: float) -> CallRecord:
        """Record a live call of ``request`` that returned ``response`` after ``latency_s`` seconds.

        :meth:`call` makes the call and records it; a caller that makes calls elsewhere (several at
        once, in other threads) records each here, under its request's key, as it completes.

        Raises
        ------
        LLMCallError
            ``reply_too_large`` for a reply over :data:`MAX_REPLY_BYTES` (recorded as a failure instead).
        """
        try:
            check_reply_size(response)
        except LLMCallError as exc:
            raise self.record_failure(request, exc) from None
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


__all__ = ["CALL_MODES", "MAX_REPLY_BYTES", "CallRecorder", "LLMCallError", "ReplayMissError", "check_reply_size"]
