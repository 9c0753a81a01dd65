"""Store errors in words: what went wrong, where, and whether the store changed.

Every DuckDB error the store meets becomes one of the project's errors (``evalcore.errors``)
with a message a person can act on, never raw SQL and never a secret:

* **no space left** (ENOSPC/EDQUOT as an ``OSError`` or in a DuckDB error's text, also as the
  cause of a later error): ``DiskFullError``, "no space left on device; the store was not
  changed" (CLI exit code 5);
* **store unavailable** (the catalog database cannot be reached, or the connection to it
  dropped: PostgreSQL stopped, network down, wrong host): ``StoreUnavailableError``, naming
  the catalog's host and port, passwords masked (CLI exit code 4);
* **object store unavailable** (an ``s3://`` data path whose server cannot be reached,
  refuses the credentials or lacks the bucket): ``StoreUnavailableError`` naming the AWS
  variable to check (``store.objectstore``, CLI exit code 4);
* **busy** (a lock that stayed taken): ``StoreBusyError`` (CLI exit code 4);
* **the engine failed** (DuckDB's internal errors): ``StoreInternalError`` (CLI exit code 1);
* anything else: ``StoreError`` with the action and the first line of the error, with
  quoted SQL statements cut out.
"""

from __future__ import annotations

import errno
import re

import duckdb

from evalcore.redact import mask_location
from evalcore.unreachable import unreachable_reason
from evalcore.errors import (
    DiskFullError,
    StoreBusyError,
    StoreError,
    StoreInternalError,
    StoreUnavailableError,
)

_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded", "disk full",
                   "database or disk is full")
_BUSY_TEXT = ("database is locked", "could not set lock", "conflicting lock",
              "lock timeout", "canceling statement due to lock timeout",
              "canceling statement due to statement timeout")
# a statement DuckDB quotes in its messages: query "...", COPY "...", LINE 1: ...
_QUOTED_SQL = re.compile(r'\b(query|COPY|statement|prepare)\s+"(?:[^"\\]|\\.)*"', re.I)
_SQL_LINE = re.compile(r"\s*LINE \d+:.*", re.S)
_FIRST_LINE_LIMIT = 240

def mask_secrets(text: str, context: str | None = None) -> str:
    """``text`` with passwords, keys and tokens masked (``***``): ``evalcore.redact``."""
    return mask_location(str(text), context=context) if context else mask_location(str(text))


def catalog_place(label: str) -> str:
    """Where a store's catalog lives, in words, without secrets: "the PostgreSQL catalog at
    host H port P (database D)" for a ducklake:postgres: location, else the location masked."""
    if label.startswith("ducklake:postgres:"):
        fields = dict(re.findall(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", label))
        host = fields.get("host", "localhost (the default socket)").strip("'")
        port = fields.get("port", "5432").strip("'")
        db = fields.get("dbname", "").strip("'")
        return (f"the PostgreSQL catalog at host {host} port {port}"
                + (f" (database {db})" if db else ""))
    return f"the store {mask_secrets(label)}"


def first_line(exc: BaseException, context: str | None = None) -> str:
    """The first line of an error's message, quoted SQL cut out, secrets masked."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    line = _SQL_LINE.sub("", _QUOTED_SQL.sub(lambda m: m.group(1), line)).strip()
    if len(line) > _FIRST_LINE_LIMIT:
        line = line[:_FIRST_LINE_LIMIT - 1] + "…"
    return mask_secrets(line, context)


def _chain(exc: BaseException):
    """The error and its causes (at most 10)."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 10:
        yield e
        e = e.__cause__ or e.__context__
        seen += 1


def is_disk_full(exc: BaseException) -> bool:
    """True for ENOSPC/EDQUOT, as an OSError or in a DuckDB error's text, also when it is the
    cause of a later error (DuckDB's "Current transaction is aborted")."""
    for e in _chain(exc):
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(e, (OSError, duckdb.Error)) and any(t in str(e).lower()
                                                          for t in _DISK_FULL_TEXT):
            return True
    return False


def is_unavailable(exc: BaseException) -> bool:
    """True when the catalog database could not be reached or the connection to it broke
    (a DuckDB or OS error whose driver text ``evalcore.unreachable`` recognises)."""
    return (any(isinstance(e, (duckdb.Error, OSError)) for e in _chain(exc))
            and unreachable_reason(exc) is not None)


def is_busy_text(exc: BaseException) -> bool:
    """True for a lock (or lock/statement timeout) error of the catalog."""
    text = str(exc).lower()
    return any(t in text for t in _BUSY_TEXT)


def disk_full(exc: BaseException, action: str) -> DiskFullError:
    return DiskFullError(f"no space left on device; the store was not changed ({action} "
                         f"failed: {first_line(exc)})")


def unavailable(exc: BaseException, action: str, label: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"store unavailable: {catalog_place(label)} cannot be reached: "
        f"{unreachable_reason(exc) or 'the connection failed'} ({first_line(exc, label)}); "
        f"{action} did not complete and a write "
        "that had not committed changed nothing. Check that the database server is running "
        "and reachable, then try again.")


# SQLite's words when it cannot write its catalog files at all (no room for the -wal/-shm
# files of a full disk); taken as a full disk only when the folder has less than
# LOW_SPACE_BYTES free
_IO_ERROR_TEXT = ("disk i/o error", "unable to open database file")
LOW_SPACE_BYTES = 1 << 20


def _out_of_space(exc: BaseException, folders: tuple) -> bool:
    """A catalog I/O error on a file system with (almost) no space left."""
    import shutil
    text = str(exc).lower()
    if not any(t in text for t in _IO_ERROR_TEXT):
        return False
    for folder in folders:
        try:
            if folder is not None and shutil.disk_usage(folder).free < LOW_SPACE_BYTES:
                return True
        except OSError:
            continue
    return False


def store_error(exc: BaseException, action: str, label: str | None = None,
                folders: tuple = ()) -> StoreError:
    """A human message for a DuckDB error (the original stays as ``__cause__``).
    ``folders``: where the store keeps its catalog and files (a full disk there explains an
    I/O error of SQLite's)."""
    first = first_line(exc, label)
    if is_disk_full(exc) or _out_of_space(exc, folders):
        return disk_full(exc, action)
    from evalcore.store.objectstore import object_store_error
    s3 = object_store_error(exc, action)
    if s3 is not None:
        return s3
    if label is not None and is_unavailable(exc):
        return unavailable(exc, action, label)
    if is_busy_text(exc):
        return StoreBusyError(f"store is busy: {action} waited too long for a lock ({first}). "
                              "Try again when the other ingest or program has finished.")
    if isinstance(exc, (duckdb.InternalException, duckdb.FatalException)):
        return StoreInternalError(f"{action} failed: the database engine reported an internal "
                                  f"error ({first})")
    if isinstance(exc, duckdb.ConstraintException):
        return StoreError(f"{action} failed: the data breaks a store constraint ({first})")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return StoreError(f"{action} failed: out of memory ({first})")
    if isinstance(exc, duckdb.IOException):
        return StoreError(f"{action} failed: could not read or write the store files ({first})")
    if isinstance(exc, duckdb.CatalogException):
        return StoreError(f"{action} failed: the file is not an evalbars store or is "
                          f"damaged ({first})")
    return StoreError(f"{action} failed: {first}")
