"""Exceptions raised by the workbook. Each message names the problem and the fix."""


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


class IndexMismatchError(WorkbookError):
    """Vectors from different models (or versions) were mixed in one index."""
