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
    """A write ran out of disk space (ENOSPC/EDQUOT), in the data files or in the catalog.
    A write commits whole or not at all, so the store is as it was; the CLI exits with
    code 5."""


class StoreBusyError(StoreError):
    """The store could not be used in time: another process held its write lock (or a
    catalog lock) for longer than the lock timeout. Nothing was changed; the CLI exits with
    code 4. ``busy`` is True on this class and its subclasses."""

    busy = True


class StoreUnavailableError(StoreBusyError):
    """The store's catalog could not be reached, or the connection to it broke (a
    PostgreSQL server that is down or stopped mid-write). A write that had not committed
    changed nothing; the CLI exits with code 4 ("store unavailable")."""


class StoreInternalError(StoreError):
    """The database engine under the store failed with an internal error (not the user's
    input); the CLI exits with code 1."""


class NotAllowed(EvalbarsError):
    """The acting user's role (``evalcore.access``) does not allow the write, or the
    installation is read-only (``EVALBARS_READONLY``). Nothing was changed; the CLI exits
    with code 2."""


class AnalysisError(EvalbarsError):
    """A requested analysis cannot be computed from the data (no shared items, n = 0, ...)."""
