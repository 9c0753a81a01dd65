"""The project's own exceptions; pages and the CLI render them as messages, never tracebacks."""

from __future__ import annotations


class EvalbarsError(Exception):
    """Base class of every error evalbars raises on purpose."""


class IngestError(EvalbarsError):
    """A file could not be read as any supported format.

    Carries the file name, the place inside it (line, field or zip member) and what was
    expected there, so the message can say all three.
    """

    def __init__(self, file: str, where: str | None, expected: str, detail: str | None = None):
        self.file = file
        self.where = where
        self.expected = expected
        self.detail = detail
        place = f" at {where}" if where else ""
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{file}{place}: expected {expected}{extra}")


class NoScoresError(IngestError):
    """A file (or the files of one run) was read, but holds no usable score: nothing to store.

    ``reason`` says why in the user's words ("the log has no scorer"); the message is
    ``"<file>: no scores: <reason>"``.
    """

    def __init__(self, file: str, reason: str):
        super().__init__(file, None, "at least one usable score", reason)
        self.reason = reason
        self.args = (f"{file}: no scores: {reason}",)


class StoreError(EvalbarsError):
    """The store could not be opened, queried or written (locked, missing run, ...)."""


class DiskFullError(StoreError):
    """A write ran out of disk space (ENOSPC/EDQUOT). The write is copy-on-write, so the
    store file is exactly as it was; the CLI exits with code 5."""


class AnalysisError(EvalbarsError):
    """A requested analysis cannot be computed from the data (no shared items, n = 0, ...)."""
