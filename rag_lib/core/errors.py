"""Exceptions raised by the workbook. Each message names the problem and the fix."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager


class WorkbookError(Exception):
    """Base class for every error the workbook raises on purpose."""


class SnapshotError(WorkbookError):
    """A corpus snapshot is missing, incomplete or does not match its manifest."""


class NormalizationError(WorkbookError):
    """An MDX source cannot be turned into Markdown."""


class ChunkingError(WorkbookError):
    """A normalized page cannot be cut into chunks (e.g. an unclosed code fence)."""


class ModelUnavailableError(WorkbookError):
    """A model's files are not on this machine; the message says how to get them."""


class BenchmarkError(WorkbookError):
    """The labelled benchmark is malformed or a gold locator resolves to nothing."""


class SettingError(WorkbookError, ValueError):
    """A setting or command-line value is out of its range; the message names it and the valid range."""


class IndexMismatchError(WorkbookError):
    """Vectors from different models (or versions) were mixed in one index."""


EXIT_ERROR = 2  # the exit status of every command line on a user error (argparse uses it too)
# ANSI escape sequences and every control character but newline and tab: questions are echoed,
# and ESC[2J in one must not clear the user's terminal.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional overrides, embeddings, isolates and marks, and the Unicode line separators: invisible,
# yet they reorder or break what the terminal shows (U+202E prints the rest of a line backwards).
_INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` as a terminal may show it: terminal control sequences and control characters removed
    (newlines and tabs stay), bidirectional and line-separator characters shown as ``<U+202E>``."""
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", _CONTROL.sub("", text))


def shortened(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters with a note of how much was left out (for echoing user input)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters not shown]"


@contextmanager
def cli_errors(prog: str = "error") -> Iterator[None]:
    """Turn the errors a user can cause (damaged or missing files, bad values) into one line on
    stderr and exit status 2, instead of a traceback.

    Used by every ``python -m rag_lib…`` entry point. Programming errors still raise.
    """
    import yaml  # local: this module must stay importable without third-party packages loaded

    from rag_lib.core.redaction import redact_text

    try:
        yield
    except (WorkbookError, ValueError, KeyError, yaml.YAMLError) as exc:
        message = str(exc) if not isinstance(exc, KeyError) else f"missing key {exc}"
        print(printable(f"{prog}: {redact_text(message)[0]}"), file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(printable(f"{prog}: {where}{exc.strerror or exc}. Check that the path exists and is readable/writable."),
              file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from None
