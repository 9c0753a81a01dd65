"""Where the store lives and how evalbars talks to it.

A store is a DuckLake catalog plus a folder of Parquet files (see the package docstring).
This module resolves a location to an ATTACH string, keeps ONE DuckDB connection per process
and location with the catalog attached as ``lake`` (opening costs about 0.5 s: import,
extension load, attach), hands out a cursor per read (one snapshot per read: a transaction,
or the snapshot ``one_version`` pinned, ``store.snapshots``), and runs each write as one
catalog transaction under the store's writer lock (``store.lock``), retried as a whole with
backoff up to ``lock_timeout`` when the catalog still reports a lock or a conflict. Errors
come out in words (``store.faults``). A single-file ``*.duckdb`` store of evalbars before
DuckLake is attached read-only.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import duckdb

from evalcore import access
from evalcore.errors import NotAllowed, StoreError
from evalcore.store import snapshots
from evalcore.store._util import SCHEMA_VERSION, _log, _one, meta_value
from evalcore.store.faults import (
    disk_full,
    first_line,
    is_disk_full,
    store_error,
)
from evalcore.store.history import (OWNERS_DDL, OWNERS_TABLE, CommitNote, set_commit_note,
                                    system_note)
from evalcore.store.lock import write_lock
from evalcore.redact import mask_location
from evalcore.store.schema import _DDL, KEY_CHECKS

# the location and connection names, importable from here as before
from evalcore.store.connection import (  # noqa: F401
    _CONNECTIONS,
    _CONNECTIONS_LOCK,
    _INVALIDATED,
    _attach_sql,
    _busy,
    _connection,
    _drop_connection,
    _duckdb_config,
    _is_invalidating,
    _is_retryable,
    _legacy_write_error,
    _masked,
    local_folders,
    _quarantine,
    _sleep_backoff,
    close_connections,
    open_connection_keys,
)
from evalcore.store.location import (  # noqa: F401
    CATALOG_FILE,
    DATA_DIR,
    DEFAULT_LOCK_TIMEOUT,
    DUCKLAKE_MAX_RETRY_COUNT,
    ENV_DATA_PATH,
    LAKE,
    SNAPSHOT_SQL,
    Target,
    _literal,
    default_store_location,
    default_store_path,
    resolve_location,
)

T = TypeVar("T")


class _Catalog:
    """The evalbars store: a DuckLake catalog (SQLite locally, PostgreSQL for a team) plus
    Parquet data files, so the CLI can ingest while the dashboard and other machines read.

    Every method is one operation: a read on a cursor of this process's cached connection
    (one snapshot: the latest, or the one a ``one_version`` block pinned), or one write
    transaction under the store's writer lock that commits whole or not at all. DuckDB
    errors come out as ``StoreError`` with a human message (``store.faults``): no space left
    is ``DiskFullError``, a lock held past ``lock_timeout`` ``StoreBusyError`` and an
    unreachable catalog ``StoreUnavailableError`` (both with ``.busy`` True).

    Parameters
    ----------
    location : a store folder, ``ducklake:sqlite:FILE``, ``ducklake:postgres:CONNINFO`` or an
        old ``*.duckdb`` file (read-only); default ``default_store_location()``
        ($EVALBARS_STORE, else ./.evalbars). See ``resolve_location``.
    data_path : where the Parquet files go (default: $EVALBARS_DATA_PATH, else the folder's
        ``data/``); needed when a PostgreSQL catalog is created, remembered by it after.
    lock_timeout : seconds a write waits for the store's writer lock (and keeps retrying a
        locked or conflicting commit; also the attach and, on PostgreSQL, the catalog
        connection's ``lock_timeout``) before raising ``StoreBusyError("store is busy ...")``
        (default ``DEFAULT_LOCK_TIMEOUT``, 120 s).
    """

    def __init__(self, location: str | Path | None = None, *, data_path: str | Path | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        self._target = resolve_location(location, data_path)
        self.lock_timeout = float(lock_timeout)
        catalog = _catalog_file(self._target)
        if catalog is not None and access.read_only() and not catalog.exists():
            raise NotAllowed(f"no store at {self._target.label}, and this evalbars is read-only "
                             f"({access.ENV_READONLY} is set): a new store is not created")
        self._check_schema()

    @property
    def location(self) -> str:
        """The location as given (or the default), e.g. for messages."""
        return self._target.label

    @property
    def path(self) -> Path | None:
        """The local store folder, SQLite catalog file or old .duckdb file; None for PostgreSQL."""
        return self._target.path

    @property
    def data_path(self) -> str | None:
        return self._target.data_path

    @property
    def kind(self) -> str:
        """"local", "sqlite", "postgres" or "legacy" (read-only single file)."""
        return self._target.kind

    @property
    def read_only(self) -> bool:
        return self._target.read_only

    def __repr__(self) -> str:
        return f"Store({mask_location(self._target.label)!r})"   # reprs reach logs

    # ---- connections ------------------------------------------------------------------
    def _cursor(self) -> duckdb.DuckDBPyConnection:
        con = _connection(self._target, self.lock_timeout)
        with _CONNECTIONS_LOCK:
            cur = con.cursor()
        try:
            cur.execute(f"USE {LAKE}")
            cur.execute("SET enable_progress_bar = false")
        except duckdb.Error as exc:
            cur.close()
            raise self._error(exc, f"opening the store {_masked(self._target)}") from exc
        return cur

    def _error(self, exc: BaseException, action: str) -> StoreError:
        """``faults.store_error`` for this store (the catalog's place named on a lost
        connection)."""
        return store_error(exc, action, self._target.label, local_folders(self._target))

    @contextlib.contextmanager
    def _read(self, action: str = "reading the store", *,
              own_transaction: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one read; DuckDB errors become StoreError.

        The block is one transaction (``own_transaction``: the caller opens and ends it
        itself), so every statement sees one snapshot: inside a ``one_version`` block (or
        with ``pin_reads``) the pinned one (the cursor reads ``lake_at_<n>``,
        ``store.snapshots``), else the latest. Cursors are reused within a thread (a new cursor costs two
        statements, as much as a small read); a read that raised closes its cursor instead;
        nested reads take another cursor."""
        con = _connection(self._target, self.lock_timeout)
        pool = self.__dict__.setdefault("_read_pool", threading.local())
        if getattr(pool, "con", None) is not con:
            pool.con, pool.idle = con, []
        cur = pool.idle.pop() if pool.idle else self._cursor()
        pinned = self._pinned_snapshot(con)
        began = False
        try:
            try:
                cur.execute(f"USE {pinned or LAKE}")
                if not own_transaction:
                    cur.execute("BEGIN TRANSACTION")
                    began = True
                yield cur
                if began:
                    began = False
                    cur.execute("COMMIT")
            except duckdb.Error as exc:
                if _is_invalidating(exc):
                    _quarantine(self._target, self.lock_timeout, cur)
                    raise self._error(exc, action) from exc
                if pinned is not None and _NO_SNAPSHOT in str(exc).lower():
                    raise _expired_snapshot(pinned) from exc
                raise self._error(exc, action) from exc
        except BaseException:
            if not any(cur is q for q in _INVALIDATED):
                with contextlib.suppress(duckdb.Error):
                    if began:
                        cur.execute("ROLLBACK")
                    cur.close()
            raise
        if pool.con is con and len(pool.idle) < 4:
            pool.idle.append(cur)
        else:
            with contextlib.suppress(duckdb.Error):
                cur.close()

    def _write_lock(self, action: str, timeout: float | None = None):
        """The store's writer lock (``store.lock.write_lock``) for ``action``, waited for up to
        ``timeout`` seconds (default ``lock_timeout``)."""
        kind = self._target.kind
        return write_lock(kind, _catalog_file(self._target), self._cursor,
                          self.lock_timeout if timeout is None else timeout, action,
                          _masked(self._target))

    def _write(self, body: Callable[[duckdb.DuckDBPyConnection], T],
               action: str = "writing to the store", *, checks: tuple | None = None,
               lock_wait: float | None = None,
               note: CommitNote | Callable[[T], CommitNote] | None = None) -> T:
        """Run ``body(cursor)`` in one catalog transaction and commit it, holding the store's
        writer lock (``store.lock``); retried as a whole.

        Before COMMIT the write counter is bumped and the keys DuckLake cannot declare are
        checked (``schema.KEY_CHECKS``). Any exception rolls back: nothing of the
        transaction becomes visible (DuckLake writes new Parquet files and commits them in
        one catalog transaction; files of a rolled-back or killed write are orphans that
        ``maintain`` removes). Waiting for the lock, and re-running ``body`` from the start
        after a lock or conflict error of the catalog itself (another program that does not
        take the lock), both end at ``lock_timeout`` (``lock_wait``, when given) with
        ``StoreBusyError``.

        ``note`` (or ``note(result)``, from what ``body`` returned) is recorded in the
        snapshot the write commits (``store.history``: author and message); without one the
        write is recorded as evalbars' own, named by ``action``.
        """
        if self._target.read_only:
            raise _legacy_write_error(self._target)
        if note is None:
            note = system_note(action)
        wait = self.lock_timeout if lock_wait is None else lock_wait
        deadline = time.monotonic() + wait
        with self._write_lock(action, wait):
            attempt = 0
            while True:
                try:
                    result = self._write_once(body, action, checks, note)
                    self._repin_reads()
                    return result
                except _Retry as retry:
                    if not _sleep_backoff(attempt, deadline):
                        raise _busy(f"{_masked(self._target)}: {action} could not commit "
                                    f"within {wait:g} s ({retry})") from retry.cause
                    attempt += 1
                    _log.debug("%s: retry %d after %s", action, attempt, retry)

    def _write_once(self, body: Callable[[duckdb.DuckDBPyConnection], T], action: str,
                    checks: tuple | None,
                    note: CommitNote | Callable[[T], CommitNote]) -> T:
        """One try of ``_write``'s transaction; ``_Retry`` when it may succeed if run again."""
        cur = self._cursor()
        try:
            cur.execute("BEGIN TRANSACTION")
            result = body(cur)
            cur.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                        "WHERE key = 'write_counter'")
            _check_keys(cur, action, KEY_CHECKS if checks is None else checks)
            set_commit_note(cur, note if isinstance(note, CommitNote) else note(result))
            t0 = time.perf_counter()
            cur.execute("COMMIT")
            _log.debug("%s: commit %.2f s", action, time.perf_counter() - t0)
            return result
        except BaseException as exc:
            if isinstance(exc, duckdb.Error) and _is_invalidating(exc):
                _quarantine(self._target, self.lock_timeout, cur)
                cur = None
                raise self._error(exc, action) from exc
            with contextlib.suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error) and _is_retryable(exc) and not is_disk_full(exc):
                raise _Retry(first_line(exc, self._target.label), exc) from exc
            if isinstance(exc, duckdb.Error):
                raise self._error(exc, action) from exc
            if isinstance(exc, OSError):
                if is_disk_full(exc):
                    raise disk_full(exc, action) from exc
                raise StoreError(f"{action} failed: {exc}; the store was not changed") from exc
            raise
        finally:
            if cur is not None:
                with contextlib.suppress(duckdb.Error):
                    cur.close()

    def close(self) -> None:
        """Close this process's cached connection to the store (reopened on next use); a
        ``pin_reads`` pin ends."""
        self.__dict__.pop("_session", None)
        _drop_connection(self._target, self.lock_timeout)

    def __enter__(self) -> _Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- schema -----------------------------------------------------------------------
    def _table_names(self) -> set[str]:
        with self._read("opening the store") as con:
            return {r[0] for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ? "
                "AND schema_name = 'main' AND table_name IN ('meta', ?)",
                [LAKE, OWNERS_TABLE]).fetchall()}

    def _schema_version(self) -> str | None:
        with self._read("opening the store") as con:
            row = _one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
        return row[0] if row else None

    def _check_schema(self) -> None:
        """Create the tables in a new catalog (one transaction); accept the current schema."""
        tables = self._table_names()
        if "meta" not in tables:
            if self._target.read_only:
                raise StoreError(f"{self._target.path} is a DuckDB file but not an evalbars "
                                 "store (no meta table)")
            if access.read_only():
                raise NotAllowed(f"{self._target.label} holds no evalbars store yet, and this "
                                 f"evalbars is read-only ({access.ENV_READONLY} is set): a new "
                                 "store is not created")
            self._write(_create_tables, "creating the store")
            tables = self._table_names()
        version = self._schema_version()
        if version in ("2", "3") and not self._target.read_only and access.read_only():
            raise NotAllowed(f"{self._target.label} has store schema version {version} and "
                             f"needs an upgrade, which is a write; this evalbars is read-only "
                             f"({access.ENV_READONLY} is set)")
        if version == "2" and not self._target.read_only:
            from evalcore.store.upgrade import upgrade_v2
            self._write(upgrade_v2, "upgrading the store to schema 3 (integer item keys)",
                        checks=tuple(c for c in KEY_CHECKS if c[0] != "vector"))
            self.compact()   # the small files schema 2 wrote per row and per run
            version = self._schema_version()
        if version == "3" and not self._target.read_only:
            from evalcore.store.upgrade import upgrade_v3
            self._write(upgrade_v3, "upgrading the store to schema 4 (per-cell item vectors)")
            self.compact()   # the upgrade writes one vectors file per chunk of runs
            version = self._schema_version()
        if version != SCHEMA_VERSION:
            raise StoreError(f"{self._target.label} has store schema version {version or 'none'}; "
                             f"this evalbars reads version {SCHEMA_VERSION}")
        if not self._target.read_only and not access.read_only() and OWNERS_TABLE not in tables:
            # the uploader of each run (store.history); a store made before it gets the table
            # at its first writable opening (older evalbars ignore it)
            self._write(lambda con: con.execute(OWNERS_DDL), "adding the run uploaders table")

    # ---- cache key ----------------------------------------------------------------------
    def version(self) -> str:
        """Changes whenever the content changes (use as a cache key): the id of the
        catalog's latest snapshot (every committed write makes one); for an old .duckdb
        store, the file's (inode, size, mtime)."""
        pinned = self._pinned_version()
        if pinned is not None:
            return pinned
        return self._latest_version()

    def _latest_version(self) -> str:
        """``version()`` of the latest snapshot (never a pinned one)."""
        if self._target.read_only:
            try:
                st = self._target.path.stat()
            except FileNotFoundError:
                return "missing"
            return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
        cur = self._version_cursor()
        try:
            rows = cur.execute(SNAPSHOT_SQL).fetchall()
        except duckdb.Error:
            self._drop_version_cursor()
            with self._read("reading the store version") as fresh:
                rows = fresh.execute(SNAPSHOT_SQL).fetchall()
        return f"snapshot:{rows[0][0]}"

    def _pinned_version(self) -> str | None:
        """The version this thread's reads are pinned to (``one_version``, else
        ``pin_reads``), or None."""
        pin = self._active_pin()
        return None if pin is None else pin.version

    def _active_pin(self):
        """The pin this thread's reads follow: its ``one_version`` block, else the object's
        ``pin_reads`` pin (pinned to the latest snapshot at its first use), else None."""
        pin = self.__dict__.get("_pin")
        if getattr(pin, "version", None) is not None:
            return pin
        session = self.__dict__.get("_session")
        if session is None:
            return None
        with session.lock:
            if session.version is None:
                session.version = self._latest_version()
        return session

    def pin_reads(self) -> None:
        """From now on every read of this Store object outside a ``one_version`` block sees
        one snapshot (the latest at its first read), until this object writes (its next read
        pins the snapshot after the write) or is closed. For a process that does one thing,
        a CLI command or a report: all its reads then see one store however many others
        write meanwhile. Not for an object shared by independent readers (the dashboard's:
        its page interactions pin with ``one_version``)."""
        if "_session" not in self.__dict__:
            self.__dict__["_session"] = _SessionPin()

    def _repin_reads(self) -> None:
        """After a write of this object: the ``pin_reads`` pin moves to the next snapshot
        at the next read."""
        session = self.__dict__.get("_session")
        if session is not None:
            with session.lock:
                held, session.version, session.held = session.held, None, None
            if held is not None:
                snapshots.release(held[0], held[1])

    def _pinned_snapshot(self, con: duckdb.DuckDBPyConnection) -> str | None:
        """The alias of the snapshot catalog this thread's reads use (its ``one_version``
        block, or ``pin_reads``; attached at the first read, ``store.snapshots``), or None
        when unpinned (and on an old single-file store, which has no snapshots)."""
        pin = self._active_pin()
        snap = snapshots.snapshot_id(getattr(pin, "version", None))
        if snap is None:
            return None
        with pin.lock if isinstance(pin, _SessionPin) else contextlib.nullcontext():
            return self._hold_snapshot(con, pin, snap)

    def _hold_snapshot(self, con: duckdb.DuckDBPyConnection, pin, snap: int) -> str:
        """``_pinned_snapshot``'s attachment of snapshot ``snap`` for ``pin``."""
        held = getattr(pin, "held", None)
        if held is not None and held[0] is con and held[1] == snap:
            return held[2]
        try:
            alias = snapshots.acquire(con, snap, lambda name, n: _attach_sql(
                self._target, name, self.lock_timeout, n))
        except duckdb.Error as exc:
            if _NO_SNAPSHOT in str(exc).lower():
                raise _expired_snapshot(snapshots.PINNED_ALIAS.format(snap)) from exc
            raise self._error(exc, f"reading the store at snapshot {snap}") from exc
        if held is not None:            # the pin's earlier attachment (another connection)
            snapshots.release(held[0], held[1])
        pin.held = (con, snap, alias)
        return alias

    def _version_cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor for ``version()`` (kept: a new cursor costs as much as the
        query); each statement on it is its own autocommit transaction unless the caller
        opens one, so it sees the latest committed snapshot."""
        local = self.__dict__.setdefault("_version_cursor_local", threading.local())
        con = _connection(self._target, self.lock_timeout)
        cur = getattr(local, "cur", None)
        if cur is None or getattr(local, "con", None) is not con:
            cur = local.cur = self._cursor()
            local.con = con
        return cur

    def _drop_version_cursor(self) -> None:
        """Forget this thread's version cursor after an error on it (a new one next time)."""
        local = self.__dict__.get("_version_cursor_local")
        if local is not None:
            local.cur = None

    @contextlib.contextmanager
    def one_version(self, known: str | None = None) -> Iterator[str]:
        """Every read inside the block (in this thread) sees ONE snapshot of the store: the
        one ``version()`` answered on entry (or ``known``, a version the caller has just
        read: then no query at all). ``version()`` answers that version without a catalog
        query, the per-snapshot memos (``query._per_snapshot``) are checked against it, and
        the reads that query the catalog read that snapshot (``store.snapshots``), however
        many writes, compactions and ``maintain`` runs commit meanwhile. A page interaction,
        a CLI command or a report so never sees a run partly, or a run in one table and not
        in the next. A thread the block hands work to pins the same version by passing it as
        ``known``. Nested blocks keep the outer version. Writes inside the block write to the
        latest snapshot (as always), and reads inside the block do not see them."""
        pin = self.__dict__.setdefault("_pin", threading.local())
        outer = getattr(pin, "version", None)
        if outer is None:
            pin.version = known if known is not None else self.version()
            pin.held = None
        try:
            yield pin.version
        finally:
            if outer is None:
                held, pin.version, pin.held = pin.held, None, None
                if held is not None:
                    snapshots.release(held[0], held[1])

    def write_counter(self) -> int:
        """How many write transactions the store has committed (read from the catalog)."""
        with self._read() as con:
            return int(meta_value(con, "write_counter"))


def _catalog_file(target: Target) -> Path | None:
    """The SQLite catalog file of a local or sqlite store (None for PostgreSQL and old
    single-file stores)."""
    return (target.path / CATALOG_FILE if target.kind == "local" else
            target.path if target.kind == "sqlite" else None)


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Inside the creating transaction: the tables and the meta rows, unless a concurrent
    process created them first (then nothing)."""
    for ddl in _DDL:
        con.execute(ddl)
    if _one(con, "SELECT count(*) FROM meta")[0] == 0:
        con.executemany("INSERT INTO meta VALUES (?, ?)",
                        [["schema_version", SCHEMA_VERSION], ["write_counter", "0"],
                         ["next_run_id", "1"], ["next_item", "1"], ["next_label", "1"]])


def _check_keys(con: duckdb.DuckDBPyConnection, action: str, checks: tuple = KEY_CHECKS) -> None:
    """StoreError (the transaction is rolled back) when a key would be duplicated.
    ``checks``: (what, sql, params) or (what, sql) pairs; default every key of KEY_CHECKS."""
    for what, sql, *params in checks:
        row = _one(con, sql, *params)
        if row is not None:
            key = ", ".join(repr(v) for v in row)
            raise StoreError(f"{action} failed: the data breaks a store constraint "
                             f"(duplicate {what} {key}); the store was not changed")


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------

class _SessionPin:
    """``Store.pin_reads``'s pin: the version its reads see and the snapshot catalog they
    hold (shared by the object's threads, hence the lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.version: str | None = None
        self.held: tuple | None = None


# DuckLake's words for a snapshot that is not (or no longer) in the catalog
_NO_SNAPSHOT = "no snapshot found"


def _expired_snapshot(alias: str) -> StoreError:
    snap = alias.rsplit("_", 1)[-1]
    return StoreError(f"reading the store at snapshot {snap} failed: that snapshot is no longer "
                      "kept (a maintain run expired it while this read was running); read "
                      "again")


class _Retry(Exception):
    """A write transaction failed on a lock or a conflict of the catalog and may succeed
    when run again (``cause``: the DuckDB error)."""

    def __init__(self, text: str, cause: BaseException):
        super().__init__(text)
        self.cause = cause


def _store_error(exc: BaseException, action: str) -> StoreError:
    """``faults.store_error`` without a store location (the catalog's place unnamed)."""
    return store_error(exc, action)
