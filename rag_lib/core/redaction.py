"""Redaction of API keys and credentials from everything the workbook writes or prints.

The secrets are exact values the process knows, taken from the variables the workbook is configured
with (``rag_lib/generation/models.yaml``):

- the key variables (``key_env``, e.g. ``RAG_LLM_API_KEY``);
- the credentials inside a configured URL (``base_url_env``, e.g. ``RAG_LLM_BASE_URL``, and
  ``RAG_PG_DSN``): its password, a token given as the user part alone (``https://TOKEN@host``), secret
  query parameters (``?api_key=…``), the ``user:password`` pair itself and the ``Authorization`` values
  a client builds from them (``Basic base64(user:password)``, ``Bearer <key>``).

Other environment variables are not looked at: a blind pattern (``*_TOKEN`` …) with a short value such
as ``GITHUB_TOKEN=answered`` would rewrite ordinary words. Redaction replaces text inside string values
only, so a JSON structure is never damaged by it.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml

REDACTED = "[REDACTED]"
# A key shorter than this is replaced only where a whole string equals it: replacing every
# occurrence of a 3-letter "key" would rewrite ordinary words.
MIN_SUBSTRING_LEN = 8
_MODELS_YAML = Path(__file__).resolve().parent.parent / "generation" / "models.yaml"
# URL variables read outside models.yaml (a Postgres DSN may carry a password).
EXTRA_URL_VARIABLES = ("RAG_PG_DSN",)
# Query parameters of a URL whose values are credentials (``?api_key=…``, ``?sig=…``).
ANCHOR = "@"  # a secret ending in it is a URL's user part: replaced even when short, keeping the "@"
_SECRET_PARAMS = ("key", "token", "secret", "password", "passwd", "pwd", "sig", "signature", "auth", "credential")


@cache
def _variables(field: str) -> tuple[str, ...]:
    with open(_MODELS_YAML, encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    names: list[str] = []
    for section in spec.values():
        if isinstance(section, Mapping):
            names += [str(n) for n in section.get(field, ())]
    return tuple(dict.fromkeys(names))


def key_variables() -> tuple[str, ...]:
    """Names of the environment variables that hold API keys (``key_env`` of every backend)."""
    return _variables("key_env")


def url_variables() -> tuple[str, ...]:
    """Names of the environment variables that hold endpoint URLs (``base_url_env``, ``RAG_PG_DSN``)."""
    return tuple(dict.fromkeys((*_variables("base_url_env"), *EXTRA_URL_VARIABLES)))


def url_secrets(url: str, user_is_token: bool = True) -> list[str]:
    """The credentials inside ``url``: its password with ``user:password`` (raw and percent-decoded,
    and as the ``Basic`` value a client sends), a lone user part when ``user_is_token``
    (``https://TOKEN@host``; for a Postgres DSN it is a user name), and secret query values. A URL
    with no password (``postgresql://postgres:@/db``) gives none: its user name is not a secret."""
    try:
        parts = urlsplit(url.strip())
        username, password = parts.username, parts.password
    except ValueError:  # not a URL (e.g. a bad port): nothing to take apart
        return []
    found: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    user, secret = unquote(username or ""), unquote(password or "")
    if secret or (user_is_token and user and ":" not in userinfo):
        # "user:pw@" is specific however short the password: it is replaced wherever it appears.
        found += [f"{userinfo}{ANCHOR}", userinfo, f"{user}:{secret}",
                  base64.b64encode(f"{user}:{secret}".encode()).decode()]  # HTTP Basic, as httpx sends it
        found += [secret, password or ""] if secret else [user, username or ""]
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if any(word in name.lower() for word in _SECRET_PARAMS):
            found.append(value)
    return [f for f in found if f]


def shown_url(url: str) -> str:
    """``url`` as a message may show it: the user part and secret query values replaced by
    ``[REDACTED]`` (whatever the environment says), the rest kept so the endpoint is recognisable."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = parts.query
    for name, value in parse_qsl(query, keep_blank_values=False):
        if value and any(word in name.lower() for word in _SECRET_PARAMS):
            query = query.replace(value, REDACTED)
    return parts._replace(netloc=netloc, query=query).geturl()


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every secret the process is configured with, longest first (so a secret's prefix is not left
    behind): the keys that are set, and the credentials of every configured URL."""
    env = os.environ if environ is None else environ
    values = {env[name].strip() for name in key_variables() if env.get(name, "").strip()}
    for name in url_variables():
        values.update(url_secrets(env.get(name, ""), user_is_token=name not in EXTRA_URL_VARIABLES))
    return tuple(sorted(values, key=len, reverse=True))


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, int]:
    """``text`` with every configured secret replaced by ``[REDACTED]``, and the number of hits."""
    hits = 0
    for secret in secret_values(environ):
        anchored = secret.endswith(ANCHOR) and len(secret) > 1
        if len(secret) < MIN_SUBSTRING_LEN and not anchored:
            if text == secret:
                return REDACTED, hits + 1
            continue
        count = text.count(secret)
        if count:
            hits += count
            text = text.replace(secret, REDACTED + ANCHOR if anchored else REDACTED)
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
