"""The store's writer lock: one write or maintenance step at a time, readers never wait.

Why a lock of our own
---------------------
DuckLake transactions are optimistic: a write starts at a snapshot, and at COMMIT the
catalog either accepts it or reports a conflict that DuckLake then tries to resolve by
re-applying the transaction's changes on top of what was committed meanwhile. With DuckLake
for duckdb 1.4.4 that resolution is not safe against compaction: a write that deleted rows
(every ingest updates ``meta``) racing ``ducklake_merge_adjacent_files`` of the same table
committed a duplicate ``meta`` row, or lost its delete file and invalidated the whole
database ("Could not find matching file for written delete file", a process abort at the
next rollback). So every write transaction of evalbars, and every compaction and
``maintain`` step, first takes this lock and holds it until its transaction has committed
or rolled back. A write then always starts at the latest snapshot and nothing else commits
before it does: DuckLake never has a conflict to resolve. Reads take no lock.

Where the lock lives
--------------------
* local folder or ``ducklake:sqlite:FILE``: an exclusive ``flock`` on ``FILE.evalbars-lock``
  next to the catalog (released by the kernel when the process dies; needs a local file
  system, as SQLite's own locking does);
* PostgreSQL: a transaction-level advisory lock (``pg_try_advisory_xact_lock``) taken on a
  transaction of its own on the catalog database (released when that transaction ends or
  its connection drops: a killed writer never leaves the store locked).

Waiting: ``acquire`` polls with a growing pause (at most ``MAX_PAUSE`` seconds) until the
lock is free or ``timeout`` seconds have passed, then raises the "store is busy" error
(``StoreBusyError``, CLI exit code 4). The lock is re-entrant within a thread: a write that
runs inside another write's lock (the schema upgrade's compaction) does not wait for itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import threading
import time
from pathlib import Path
from typing import Iterator

import duckdb

from evalcore.errors import StoreBusyError, StoreError

# the pause between two tries grows from FIRST_PAUSE by GROWTH up to MAX_PAUSE seconds
FIRST_PAUSE, GROWTH, MAX_PAUSE = 0.01, 1.5, 0.25
LOCK_SUFFIX = ".evalbars-lock"
# the advisory lock's key on a PostgreSQL catalog: one per database (one catalog per
# database); a fixed 63-bit number ("evalbars" in ASCII)
PG_LOCK_KEY = 0x6576616C62617273
# the metadata database DuckLake attaches for the catalog ``lake`` (fixed SQL name)
PG_METADATA_DB = "__ducklake_metadata_lake"

_HELD = threading.local()


def lock_file(catalog: Path) -> Path:
    """The lock file of a SQLite catalog file."""
    return catalog.with_name(catalog.name + LOCK_SUFFIX)


class _FileLock:
    """An exclusive ``flock`` on a lock file (one open file per holder: threads of one
    process exclude each other too)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        import fcntl
        if self.fd is None:
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as exc:
                raise StoreError(f"cannot open the store's lock file {self.path}: "
                                 f"{exc.strerror}") from exc
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise StoreError(f"cannot lock the store's lock file {self.path}: "
                             f"{exc.strerror}") from exc

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)          # closing the file releases the flock
            self.fd = None


class _PgAdvisoryLock:
    """A transaction-level advisory lock on the catalog database, held by an open DuckDB
    transaction on ``cursor`` (its PostgreSQL connection holds it until it ends)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection):
        self.cur = cursor
        self.open = False

    def try_acquire(self) -> bool:
        if not self.open:
            self.cur.execute("BEGIN TRANSACTION")
            self.open = True
        got = self.cur.execute(
            f"SELECT * FROM postgres_query('{PG_METADATA_DB}', "
            f"'SELECT pg_try_advisory_xact_lock({PG_LOCK_KEY:d}) AS got')").fetchall()
        return bool(got and got[0][0])

    def release(self) -> None:
        if self.open:
            self.open = False
            with contextlib.suppress(duckdb.Error):
                self.cur.execute("ROLLBACK")
        with contextlib.suppress(duckdb.Error):
            self.cur.close()


def _pause(attempt: int, deadline: float) -> bool:
    """Sleep before the next try; False once the deadline has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        return False
    pause = min(MAX_PAUSE, FIRST_PAUSE * GROWTH ** min(attempt, 20)) * (0.5 + random.random())
    time.sleep(min(left, pause))
    return True


@contextlib.contextmanager
def write_lock(kind: str, catalog: Path | None, cursor_factory, timeout: float,
               what: str, label: str) -> Iterator[None]:
    """Hold the store's writer lock for the block (see the module docstring).

    ``kind``: the store's kind ("local", "sqlite", "postgres"); ``catalog``: the SQLite
    catalog file (local and sqlite stores); ``cursor_factory()``: a new cursor on the
    store's connection (PostgreSQL); ``timeout``: seconds to wait; ``what`` and ``label``
    name the operation and the store in the busy error."""
    key = (kind, str(catalog))
    held = getattr(_HELD, "keys", None)
    if held is None:
        held = _HELD.keys = set()
    if key in held:                      # re-entrant within a thread
        yield
        return
    lock = _FileLock(lock_file(catalog)) if kind in ("local", "sqlite") else \
        _PgAdvisoryLock(cursor_factory())
    deadline = time.monotonic() + max(float(timeout), 0.0)
    attempt = 0
    try:
        while not _try(lock, what, label):
            if not _pause(attempt, deadline):
                raise StoreBusyError(
                    f"store is busy (another process is writing to it or maintaining it) "
                    f"and stayed busy for {timeout:g} s: {what} on {label} did not start. "
                    "Try again when the other ingest or maintain has finished, or give a "
                    "longer --lock-timeout.")
            attempt += 1
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
    finally:
        lock.release()


def _try(lock, what: str, label: str) -> bool:
    """One try at the lock; a catalog error while trying becomes a StoreError."""
    try:
        return lock.try_acquire()
    except duckdb.Error as exc:
        from evalcore.store.faults import store_error
        raise store_error(exc, f"{what} (taking the store's write lock)", label) from exc
