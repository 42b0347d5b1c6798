"""Redaction of API keys from everything the workbook writes or prints.

Only the exact values of the key variables the generation backends are configured with
(``key_env`` in ``rag_lib/generation/models.yaml``, e.g. ``RAG_LLM_API_KEY``) are secrets. Other
environment variables are not looked at: a blind pattern (``*_TOKEN`` …) with a short value such as
``GITHUB_TOKEN=answered`` would rewrite ordinary words. Redaction replaces text inside string
values only, so a JSON structure is never damaged by it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REDACTED = "[REDACTED]"
# A key shorter than this is replaced only where a whole string equals it: replacing every
# occurrence of a 3-letter "key" would rewrite ordinary words.
MIN_SUBSTRING_LEN = 8
_MODELS_YAML = Path(__file__).resolve().parent / "generation" / "models.yaml"


@cache
def key_variables() -> tuple[str, ...]:
    """Names of the environment variables that hold API keys (``key_env`` of every backend)."""
    with open(_MODELS_YAML, encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    names: list[str] = []
    for section in spec.values():
        if isinstance(section, Mapping):
            names += [str(n) for n in section.get("key_env", ())]
    return tuple(dict.fromkeys(names))


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The configured keys that are set, longest first (so a key's prefix is not left behind)."""
    env = os.environ if environ is None else environ
    values = {env[name].strip() for name in key_variables() if env.get(name, "").strip()}
    return tuple(sorted(values, key=len, reverse=True))


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, int]:
    """``text`` with every configured key replaced by ``[REDACTED]``, and the number of hits."""
    hits = 0
    for secret in secret_values(environ):
        if len(secret) < MIN_SUBSTRING_LEN:
            if text == secret:
                return REDACTED, hits + 1
            continue
        count = text.count(secret)
        if count:
            hits += count
            text = text.replace(secret, REDACTED)
    return text, hits


def redact(obj: Any, environ: Mapping[str, str] | None = None) -> tuple[Any, int]:
    """Redact every string value inside ``obj`` (dicts, lists, tuples); keys and numbers are kept.

    Returns the cleaned copy and how many replacements were made.
    """
    if not secret_values(environ):
        return obj, 0
    if isinstance(obj, str):
        return redact_text(obj, environ)
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        total = 0
        for key, value in obj.items():
            out[key], hits = redact(value, environ)
            total += hits
        return out, total
    if isinstance(obj, list | tuple):
        items = [redact(v, environ) for v in obj]
        return type(obj)(v for v, _ in items), sum(h for _, h in items)
    return obj, 0
