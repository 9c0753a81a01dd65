"""Connections to the store: the cached read instance, the writer lock, the copy-on-write
transaction, busy/disk-full errors, schema check."""


import contextlib
import errno
import fcntl
import os
import random
import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import duckdb

from evalcore.errors import DiskFullError, StoreError
from evalcore.model import (
    rows_key,
)
from evalcore.store._util import (
    SCHEMA_VERSION,
    WRITE_MEMORY_LIMIT,
    _log,
    _one,
    default_store_path,
)
from evalcore.store.schema import _DDL, _MIGRATE_1_TO_2

# ---------------------------------------------------------------------------------------
# in-process coordination
# ---------------------------------------------------------------------------------------

class _Gate:
    """Per-path, per-process access to the store file: one cached read-only DuckDB instance.

    Opening a DuckDB instance costs tens of milliseconds, so reads share one read-only
    connection per path and process (a cursor per read, safe across threads). Before each
    read the file's identity (inode, size, mtime) is compared with the one seen when the
    instance was opened; every write replaces the file, so a changed identity means the
    instance is stale: it is closed as soon as no read of this process is using it and a
    new one is opened. (DuckDB shares one instance per path inside a process, so a new
    connection opened while the old instance lived would still read the replaced file.)
    A writer of this process swaps the file only when no read is in flight (``swap``).
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._cond = threading.Condition()
        self._readers = 0
        self._swapping = False
        self._con: duckdb.DuckDBPyConnection | None = None
        self._ident: tuple | None = None

    def _wait(self, predicate, deadline: float, what: str) -> None:
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(what)
            self._cond.wait(left)

    def _close_locked(self) -> None:
        if self._con is not None:
            with contextlib.suppress(duckdb.Error):
                self._con.close()
        self._con, self._ident = None, None

    @contextlib.contextmanager
    def read(self, timeout: float, opener) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on a fresh-enough read-only instance; ``opener(deadline)`` connects."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wait(lambda: not self._swapping, deadline,
                       "another thread of this process is replacing the store file")
            ident = _identity(self._path)  # before connecting: the instance is at least this new
            if self._con is not None and self._ident != ident:
                self._wait(lambda: self._readers == 0, deadline,
                           "reads of this process on the previous store file did not finish")
                self._close_locked()
            if self._con is None:
                self._con = opener(deadline)
                self._ident = ident
            cursor = self._con.cursor()
            self._readers += 1
        try:
            yield cursor
        finally:
            with contextlib.suppress(duckdb.Error):
                cursor.close()
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def swap(self, timeout: float) -> Iterator[None]:
        """Exclusive: no read in flight and the cached instance closed while the body runs."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wait(lambda: not self._swapping and self._readers == 0, deadline,
                       "reads of this process stayed open")
            self._swapping = True
            self._close_locked()
        try:
            yield
        finally:
            with self._cond:
                self._swapping = False
                self._cond.notify_all()

    def close(self) -> None:
        """Drop the cached instance (waits for reads in flight)."""
        with self._cond:
            self._wait(lambda: self._readers == 0, time.monotonic() + 60.0, "reads stayed open")
            self._close_locked()


def _identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


_GATES: dict[str, _Gate] = {}
_GATES_LOCK = threading.Lock()


def _gate_for(path: Path) -> _Gate:
    key = str(path)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = _Gate(path)
        return gate


_SCRATCH: duckdb.DuckDBPyConnection | None = None


@contextlib.contextmanager
def _scratch_cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on a process-wide in-memory DuckDB (validation of incoming frames)."""
    global _SCRATCH
    with _GATES_LOCK:
        if _SCRATCH is None:
            _SCRATCH = duckdb.connect(":memory:")
            _SCRATCH.execute("SET enable_progress_bar = false")
        cur = _SCRATCH.cursor()
    try:
        yield cur
    finally:
        cur.close()


def _busy(detail: str) -> StoreError:
    err = StoreError(f"store is busy (locked by another process) and stayed busy: {detail}. "
                     "Try again when the other ingest or program has finished.")
    err.busy = True  # type: ignore[attr-defined]
    return err


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded", "disk full")


def _is_disk_full(exc: BaseException) -> bool:
    """True for ENOSPC/EDQUOT, as an OSError or in a DuckDB error's text, also when it is the
    cause of a later error (DuckDB's "Current transaction is aborted")."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 10:
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(e, (OSError, duckdb.Error)) and any(t in str(e).lower()
                                                          for t in _DISK_FULL_TEXT):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def _disk_full(exc: BaseException, action: str) -> DiskFullError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return DiskFullError(f"no space left on device; the store was not changed ({action} "
                         f"failed: {first})")


def _store_error(exc: BaseException, action: str) -> StoreError:
    """A human message for a DuckDB error (the original stays as ``__cause__``)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if _is_disk_full(exc):
        return _disk_full(exc, action)
    if isinstance(exc, duckdb.ConstraintException):
        msg = f"{action} failed: the data breaks a store constraint ({first})"
    elif isinstance(exc, duckdb.OutOfMemoryException):
        msg = f"{action} failed: out of memory ({first})"
    elif isinstance(exc, duckdb.IOException):
        msg = f"{action} failed: could not read or write the store file ({first})"
    elif isinstance(exc, duckdb.CatalogException):
        msg = f"{action} failed: the file is not an evalbars store or is damaged ({first})"
    else:
        msg = f"{action} failed: {first}"
    return StoreError(msg)




class _Catalog:
    """One DuckDB file, read through a read-only connection and written copy-on-write (see
    "How concurrency works" above), so the CLI can ingest while the dashboard runs.

    Every method is one operation: a read on a cursor of this process's cached read-only
    instance, or one write transaction on a copy renamed over the store. DuckDB errors come
    out as ``StoreError`` with a human message (``.busy`` is True when the store stayed
    locked).

    Parameters
    ----------
    path : the store file; default ``default_store_path()``. Created (with its folder) if
        missing.
    lock_timeout : seconds to keep retrying while the file or the writer lock is held by
        someone else, before raising ``StoreError("store is busy ...")``.
    """

    def __init__(self, path: str | Path | None = None, *, lock_timeout: float = 15.0):
        self._path = Path(path if path is not None else default_store_path()).expanduser().resolve()
        self.lock_timeout = float(lock_timeout)
        self._gate = _gate_for(self._path)
        if self._path.is_dir():
            raise StoreError(f"store path {self._path} is a folder; expected a .duckdb file")
        if not self._path.exists():
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store folder {self._path.parent}: "
                                 f"{exc.strerror}") from exc
            with self._writer_lock():
                if not self._path.exists():
                    with self._transaction(create=True):
                        pass
        self._check_schema()

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"Store({str(self._path)!r})"

    # ---- connections ------------------------------------------------------------------
    def _sleep_backoff(self, attempt: int, deadline: float) -> bool:
        """Sleep a little (exponential with jitter); False once the deadline has passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, 0.02 * (1.6 ** min(attempt, 12)) * (0.5 + random.random())))
        return True

    def _open_read_only(self, deadline: float) -> duckdb.DuckDBPyConnection:
        attempt = 0
        while True:
            if not self._path.exists():
                raise StoreError(f"store file {self._path} does not exist (was it deleted?)")
            try:
                con = duckdb.connect(str(self._path), read_only=True)
                con.execute("SET enable_progress_bar = false")  # no bars on the CLI's terminal
                return con
            except duckdb.Error as exc:
                if not _is_lock_error(exc):
                    raise _store_error(exc, f"opening the store {self._path}") from exc
                if not self._sleep_backoff(attempt, deadline):
                    raise _busy(f"{self._path} stayed locked for {self.lock_timeout:g} s "
                                f"({str(exc).splitlines()[0]})") from exc
                attempt += 1

    @contextlib.contextmanager
    def _read(self, action: str = "reading the store") -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only cursor for one operation; DuckDB errors become StoreError."""
        with self._gate.read(self.lock_timeout, self._open_read_only) as cur:
            try:
                yield cur
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc

    def close(self) -> None:
        """Close this process's cached read instance of the store (reopened on next use)."""
        self._gate.close()

    def __enter__(self) -> "_Catalog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """Exclusive lock file ``<store>.lock`` shared by all evalbars writers (processes and
        threads), acquired with retry/backoff until ``lock_timeout``."""
        lock_path = self._path.with_name(self._path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to the store: the lock file {lock_path} cannot be "
                             f"created ({exc.strerror}); is the folder read-only?") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout
            attempt = 0
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not self._sleep_backoff(attempt, deadline):
                        raise _busy(f"another evalbars process is writing to {self._path} "
                                    f"(waited {self.lock_timeout:g} s)") from None
                    attempt += 1
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _cleanup_stale_copies(self) -> None:
        """Remove temporary copies left by writers that died (their pid is gone)."""
        pattern = re.compile(re.escape(self._path.name) + r"\.tmp-(\d+)-[0-9a-f]+(\.wal)?$")
        for p in self._path.parent.iterdir():
            m = pattern.match(p.name)
            if not m:
                continue
            pid = int(m.group(1))
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    p.unlink()
            except PermissionError:
                pass

    @contextlib.contextmanager
    def _transaction(self, create: bool = False,
                     action: str = "writing to the store") -> Iterator[duckdb.DuckDBPyConnection]:
        """Copy-on-write transaction; caller must hold ``_writer_lock``.

        Copies the store to ``<store>.tmp-<pid>-<hex>``, yields a read-write connection to the
        copy inside ``BEGIN``; on success bumps the write counter, COMMITs, CHECKPOINTs,
        fsyncs and renames the copy over the store. On any exception: ROLLBACK, the copy is
        deleted, the store file is untouched.
        """
        self._cleanup_stale_copies()
        tmp = self._path.with_name(f"{self._path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}")
        tmp_wal = tmp.with_name(tmp.name + ".wal")
        try:
            if not create:
                with self._read("copying the store"):  # holds a shared lock: no foreign writer
                    shutil.copyfile(self._path, tmp)
            try:
                con = duckdb.connect(str(tmp))
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc
            try:
                # Parallel inserts that keep insertion order leave partly filled row groups
                # behind, which the checkpoint then rewrites (measured: 1,000,000 texts from a
                # multi-chunk Arrow table doubled the file and added 6 s). Queries order
                # their results explicitly, so the copy is written without that guarantee.
                con.execute("SET preserve_insertion_order = false")
                con.execute("SET enable_progress_bar = false")
                con.execute("SET memory_limit = ?", [WRITE_MEMORY_LIMIT])
                if create:
                    for ddl in _DDL:
                        con.execute(ddl)
                    con.executemany("INSERT INTO meta VALUES (?, ?)",
                                    [["schema_version", SCHEMA_VERSION], ["write_counter", "0"],
                                     ["next_run_id", "1"]])
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                    con.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                                "WHERE key = 'write_counter'")
                    t0 = time.perf_counter()
                    con.execute("COMMIT")
                    _log.debug("%s: commit %.2f s (write-ahead log %d bytes)", action,
                               time.perf_counter() - t0, tmp_wal.stat().st_size if tmp_wal.exists() else 0)
                except BaseException:
                    with contextlib.suppress(duckdb.Error):
                        con.execute("ROLLBACK")
                    raise
                t0 = time.perf_counter()
                con.execute("CHECKPOINT")
                _log.debug("%s: checkpoint %.2f s", action, time.perf_counter() - t0)
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc
            finally:
                con.close()
            if tmp_wal.exists():
                raise StoreError(f"{action} failed: DuckDB left a write-ahead log after the "
                                 "checkpoint; the store was not changed")
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            with self._gate.swap(self.lock_timeout):
                os.replace(tmp, self._path)
            with contextlib.suppress(OSError):  # best effort: the rename is already done
                dfd = os.open(self._path.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except OSError as exc:
            if _is_disk_full(exc):
                raise _disk_full(exc, action) from exc
            raise StoreError(f"{action} failed: {exc}; the store was not changed") from exc
        finally:
            for p in (tmp, tmp_wal):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()

    def _schema_version(self) -> str | None:
        with self._read("opening the store") as con:
            try:
                row = _one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
            except duckdb.CatalogException as exc:
                raise StoreError(f"{self._path} is a DuckDB file but not an evalbars store "
                                 "(no meta table)") from exc
        return row[0] if row else None

    def _check_schema(self) -> None:
        """Accept the current schema; upgrade a version-1 store in place (one copy-on-write
        transaction: an interrupted upgrade leaves the version-1 file as it was)."""
        version = self._schema_version()
        if version == "1":
            with self._writer_lock():
                if self._schema_version() == "1":  # another process may have upgraded it
                    _log.info("upgrading %s from store schema 1 to %s", self._path, SCHEMA_VERSION)
                    with self._transaction(action="upgrading the store") as con:
                        for sql in _MIGRATE_1_TO_2:
                            con.execute(sql)
                        self._rekey_tidy_runs(con)
            version = self._schema_version()
        row = (version,) if version is not None else None
        if row is None or row[0] != SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise StoreError(f"{self._path} has store schema version {found}; this evalbars "
                             f"reads version {SCHEMA_VERSION}")

    @staticmethod
    def _rekey_tidy_runs(con: duckdb.DuckDBPyConnection) -> None:
        """Version 1 keyed a tidy table on its file's sha256 and so stored only its first
        model. Key each stored tidy run on its own rows (``rows_key`` of its stored scores, as
        the parser computes it), so that ingesting the table again finds that run "already
        present" and adds the models that were lost."""
        rows = con.execute("SELECT f.key, r.run_id, r.name, r.model FROM files f JOIN runs r "
                           "USING (run_id) WHERE f.format LIKE 'tidy%' ORDER BY f.key").fetchall()
        for key, rid, name, model in rows:
            scores = con.execute("SELECT task, metric, item_id, answer_idx, score, cluster "
                                 "FROM scores WHERE run_id = ?", [rid]).df()
            con.execute("UPDATE files SET key = ? WHERE key = ?",
                        [rows_key(name, model, scores), key])

    # ---- writing (each call is one transaction) -------------------------------------

    def version(self) -> str:
        """Changes whenever the content changes (use as a cache key).

        Every write replaces the file, so (inode, size, mtime in ns) of the store file
        changes; a ``stat`` call, no DuckDB connection.
        """
        try:
            st = self._path.stat()
        except FileNotFoundError:
            return "missing"
        return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"

    def write_counter(self) -> int:
        """How many write transactions the store has committed (read from the file)."""
        with self._read() as con:
            return int(_one(con, "SELECT value FROM meta WHERE key = 'write_counter'")[0])

