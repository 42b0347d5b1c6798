"""Atomic file writes (a reader never sees a half-written result; no API key reaches a file), file
checksums, an exclusive lock per folder, and this CPU's flags as /proc/cpuinfo lists them.

Text written through :func:`write_text`, :func:`write_json` and :func:`write_jsonl` passes
through :func:`rag_lib.core.redaction.redact_text` first (results, reports, notebooks, call records).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import signal
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import IO, Any

from rag_lib.core.errors import WorkbookError
from rag_lib.core.redaction import redact_text


def cpu_flags() -> set[str] | None:
    """This CPU's feature flags as /proc/cpuinfo names them (``avx2``, ``amx_tile`` …); None where there is
    no /proc/cpuinfo to read."""
    info = Path("/proc/cpuinfo")
    if not info.is_file():
        return None
    return {flag for line in info.read_text().splitlines() if line.startswith("flags")
            for flag in line.split(":", 1)[1].split()}


def file_sha256(*paths: str | os.PathLike[str]) -> str:
    """sha256 over the bytes of ``paths`` in order (a model's checksum), cached per (path, size,
    mtime) so a multi-gigabyte model is hashed once per process."""
    stats = tuple((str(Path(p).resolve()), (st := os.stat(p)).st_size, st.st_mtime_ns) for p in paths)
    return _sha256_of(stats)


@cache
def _sha256_of(stats: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for path, _size, _mtime in stats:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path`` and rename it over ``path`` on success.

    If the block raises, the temporary file is removed and ``path`` is left as it was. The file
    gets the usual mode for a new file (``0o666`` less the umask), not ``mkstemp``'s ``0o600``.

    Raises
    ------
    OSError
        With ``filename`` set to ``path`` (a full disk otherwise says "No space left on device" and
        names no file).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _naming(exc, target) from exc
    os.fchmod(fd, 0o666 & ~_umask())
    binary = "b" in mode
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else "\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException as exc:
        Path(tmp_name).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:
            raise _naming(exc, target) from exc
        raise


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` with ``path`` as its file, unless it names one already."""
    if exc.filename:
        return exc
    return type(exc)(exc.errno or errno.EIO, exc.strerror or str(exc), str(path))


@contextmanager
def deferred_signals(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Hold ``signums`` (Ctrl-C, SIGTERM) until the block ends, then act on them as before.

    A completed LLM call being written must end as a whole record, not as a temporary file that a
    resume cannot see. Python runs signal handlers in the main thread only, so elsewhere this does
    nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous: dict[int, Any] = {}
    for signum in signums:
        previous[signum] = signal.signal(signum, lambda number, _frame: received.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(received):
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)  # e.g. KeyboardInterrupt, now that the record is in place
            elif handler in (signal.SIG_DFL, None):
                os.kill(os.getpid(), signum)  # the default action (SIGTERM ends the process), one write later


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it; put it straight back
    os.umask(mask)
    return mask


def _redacted(path: str | os.PathLike[str], text: str) -> str:
    clean, hits = redact_text(text)
    if hits:
        warnings.warn(f"{hits} API key value(s) were redacted from {path} before writing.", RuntimeWarning,
                      stacklevel=3)
    return clean


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` atomically, with any configured API key redacted."""
    text = _redacted(path, text)
    with atomic_open(path) as fh:
        fh.write(text)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as stable, human-readable JSON (sorted keys, UTF-8, trailing newline)."""
    write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> None:
    """Write one JSON object per line, atomically."""
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(_redacted(path, json.dumps(row, ensure_ascii=False, sort_keys=True)) + "\n")


class DamagedFileError(WorkbookError, ValueError):
    """A data file cannot be parsed; the message names the file, the line and the fix."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; a parse error names the file and the line."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DamagedFileError(f"{path}, line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg}). "
                               "Restore the file (git checkout, or re-run what writes it).") from exc


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Read a JSON-lines file written by :func:`write_jsonl`; a bad line is named with its number."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DamagedFileError(
                    f"{path}, line {number} column {exc.colno}: not valid JSON ({exc.msg}). "
                    "Restore the file (git checkout, or re-run what writes it)."
                ) from exc
    return rows


def read_utf8(path: str | os.PathLike[str], what: str, error: type[Exception] = DamagedFileError) -> str:
    """The text of ``path`` (``what`` it is, for the message); not UTF-8, or unreadable, raises ``error`` naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not UTF-8 text (byte {exc.start}); save the {what} as UTF-8") from exc
    except OSError as exc:
        raise error(f"cannot read the {what} {path}: {exc.strerror}") from exc


def jsonl_objects(text: str, where: str,
                  error: type[Exception] = DamagedFileError) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of JSON-lines ``text``; a line that is not a JSON object
    raises ``error`` naming ``where`` and the line."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{where}, line {number}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise error(f"{where}, line {number}: a {type(row).__name__}, not an object")
        yield number, row


@contextmanager
def exclusive_lock(path: str | os.PathLike[str], busy: Callable[[str], Exception]) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if need be) for the block, with this pid in it.

    Another process holding it makes ``busy(holder_pid)`` raise at once: two writers of one folder never
    run side by side. The kernel drops the lock when its holder dies, so a killed run leaves no stale lock.
    A second acquisition from the same process is refused too (each open file is its own lock).
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise busy(fh.read().strip() or "unknown") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)
            fcntl.flock(fh, fcntl.LOCK_UN)
