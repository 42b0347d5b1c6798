"""LLM call records: what a call is (request, response, record), how it is stored and checked.

Each call is one JSON file ``<directory>/<key>.json`` where ``key`` is the sha256 of the
canonical JSON of (backend, model, model version, messages, parameters). The file holds the
request, the response, the latency, token counts and an estimated cost (prices per model are data,
in ``rag_lib/generation/models.yaml``; local backends cost 0).

The recorder that writes and replays these records, and its modes, are
:class:`~rag_lib.generation.llm_calls.CallRecorder`'s.

Integrity
---------
Each record stores ``response_sha256``, the sha256 of its response; a record whose response no
longer matches (edited by hand, damaged) is not replayed. Records of format 3 also store
``meta_sha256`` over ``latency_s``, ``cost_usd`` and ``recorded_at``. The format-2 records committed
before it are kept byte for byte (their response checksum is unchanged) and checked without it: a
local backend's cost must be 0, the latency a finite number of seconds, ``recorded_at`` a past
time. Records of format 1 (no checksum) are refused until stamped with
``python -m rag_lib.generation stamp DIR`` (:func:`stamp_records`, :func:`main`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.core.config import RESULTS_DIR, shown_path
from rag_lib.core.io import DamagedFileError, read_json, write_json
from rag_lib.generation.specs import models_yaml

RECORD_FORMAT = 3  # 2: response_sha256 added; 3: meta_sha256 (latency, cost, time) added
META_FIELDS = ("latency_s", "cost_usd", "recorded_at")
DEFAULT_CALLS_DIR = RESULTS_DIR / "llm_calls"
LOCAL_BACKENDS = frozenset({"llama_cpp", "extractive"})


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
    # The local runtime that answered (version, llama.cpp build flags, what it reports of the CPU features it
    # uses); absent for endpoints and for records made before it was kept (their checksums stay as they were).
    runtime: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        if self.runtime is None:
            del row["runtime"]
        return row

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> LLMResponse:
        return cls(
            content=str(row["content"]), finish_reason=row.get("finish_reason"),
            prompt_tokens=row.get("prompt_tokens"), completion_tokens=row.get("completion_tokens"),
            served_model=row.get("served_model"), model_version=row.get("model_version"),
            attempts=int(row.get("attempts", 1)), runtime=row.get("runtime"),
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


def request_from_json(row: Mapping[str, Any]) -> LLMRequest:
    """The :class:`LLMRequest` of its :meth:`LLMRequest.to_json` form."""
    return LLMRequest(backend=row["backend"], model=row["model"], messages=tuple(row["messages"]),
                      params=row["params"], model_version=row.get("model_version"))


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


__all__ = ["CallRecord", "LLMRequest", "LLMResponse", "estimate_cost", "response_sha256", "stamp_records"]
