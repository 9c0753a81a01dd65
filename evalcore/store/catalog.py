"""Where the store lives and how evalbars talks to it.

A store is a DuckLake catalog plus a folder of Parquet files (see the package docstring).
This module resolves a location to an ATTACH string, keeps ONE DuckDB connection per process
and location with the catalog attached as ``lake`` (opening costs about 0.5 s: import,
extension load, attach), hands out a cursor per read, and runs each write as one catalog
transaction that is retried as a whole, with backoff up to ``lock_timeout``, when the
catalog says "database is locked" (SQLite, which DuckLake does not retry) or reports a
commit conflict that DuckLake's own retries (``ducklake_max_retry_count``) did not resolve.
A single-file ``*.duckdb`` store of evalbars before DuckLake is attached read-only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import duckdb

from evalcore.errors import DiskFullError, StoreError
from evalcore.redact import mask_location
from evalcore.store._util import ENV_VAR, SCHEMA_VERSION, _log, _one
from evalcore.store.schema import _DDL, KEY_CHECKS

ENV_DATA_PATH = "EVALBARS_DATA_PATH"
LAKE = "lake"                     # the alias the catalog is attached under (fixed SQL)
CATALOG_FILE = "catalog.sqlite"   # in a local store folder, next to DATA_DIR
DATA_DIR = "data"
# DuckLake's own retry of a commit that conflicts with a concurrent one (PostgreSQL
# catalogs); set explicitly rather than relying on the extension's default.
DUCKLAKE_MAX_RETRY_COUNT = 10
# the id of the snapshot a read sees (inside a transaction: the transaction's snapshot)
SNAPSHOT_SQL = f"SELECT id FROM {LAKE}.current_snapshot()"

T = TypeVar("T")


def default_store_location() -> str:
    """$EVALBARS_STORE if set, else the folder ./.evalbars (relative to the cwd)."""
    return os.environ.get(ENV_VAR) or str(Path.cwd() / ".evalbars")


def default_store_path() -> Path:
    """The default location as a Path (a local store folder, unless $EVALBARS_STORE names a
    ``ducklake:`` catalog, which is returned as given)."""
    return Path(default_store_location())


@dataclass(frozen=True)
class Target:
    """A resolved store location.

    kind: "local" (a folder with catalog.sqlite and data/), "sqlite" (``ducklake:sqlite:FILE``),
    "postgres" (``ducklake:postgres:...``) or "legacy" (a single-file ``*.duckdb`` store,
    read-only). ``attach`` is what follows ATTACH; ``path`` the folder, SQLite file or
    DuckDB file (None for PostgreSQL); ``data_path`` the Parquet folder or URL (None: the
    catalog's stored one).
    """

    kind: str
    label: str
    attach: str
    data_path: str | None
    path: Path | None

    @property
    def read_only(self) -> bool:
        return self.kind == "legacy"


def _folder_url(p: str | Path) -> str:
    text = str(p)
    if "://" in text:
        return text if text.endswith("/") else text + "/"
    return str(Path(text).expanduser().resolve()) + os.sep


def resolve_location(location: str | Path | None = None,
                     data_path: str | Path | None = None) -> Target:
    """What ``Store(location, data_path=...)`` opens (no I/O besides ``stat``).

    None -> $EVALBARS_STORE, else ./.evalbars. ``ducklake:sqlite:FILE`` -> that SQLite catalog
    (data next to it in ``data/`` unless ``data_path``); ``ducklake:postgres:CONNINFO`` -> a
    team catalog (``data_path`` or $EVALBARS_DATA_PATH needed when it is created); an
    existing ``*.duckdb`` file -> the old single-file store, read-only; any other path -> a
    local store folder (FOLDER/catalog.sqlite + FOLDER/data/, created on first use).
    """
    loc = str(location) if location is not None else default_store_location()
    data = str(data_path) if data_path is not None else os.environ.get(ENV_DATA_PATH) or None
    if not loc.strip():
        raise StoreError("the store location is empty; expected a folder or a ducklake: URL")
    if loc.startswith("ducklake:"):
        rest = loc[len("ducklake:"):]
        if rest.startswith("sqlite:"):
            file = Path(rest[len("sqlite:"):]).expanduser().resolve()
            return Target("sqlite", loc, f"ducklake:sqlite:{file}",
                          _folder_url(data) if data else _folder_url(file.parent / DATA_DIR), file)
        if rest.startswith("postgres:"):
            return Target("postgres", loc, loc, _folder_url(data) if data else None, None)
        raise StoreError(f"store {loc!r}: unsupported DuckLake catalog; expected "
                         "ducklake:sqlite:FILE or ducklake:postgres:dbname=... host=... "
                         "(a DuckDB-file catalog would lock out every other process)")
    path = Path(loc).expanduser().resolve()
    if path.suffix.lower() == ".duckdb":
        if not path.is_file():
            raise StoreError(
                f"no store file {path}: single-file (.duckdb) stores can only be read now; a "
                "new store is a folder (e.g. --store ./.evalbars) or a ducklake: URL")
        return Target("legacy", loc, str(path), None, path)
    if path.is_file():
        if path.suffix.lower() in (".sqlite", ".db"):
            return Target("sqlite", loc, f"ducklake:sqlite:{path}",
                          _folder_url(data) if data else _folder_url(path.parent / DATA_DIR), path)
        raise StoreError(f"store path {path} is a file; expected a store folder (catalog.sqlite "
                         "+ data/), a ducklake: URL or an old .duckdb store")
    return Target("local", loc, f"ducklake:sqlite:{path / CATALOG_FILE}",
                  _folder_url(data) if data else _folder_url(path / DATA_DIR), path)


def _literal(text: str) -> str:
    """A SQL string literal (ATTACH takes no ``?`` parameters): quotes doubled, no NUL."""
    if "\x00" in text:
        raise StoreError("the store location contains a NUL character")
    return "'" + text.replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------
# one connection per process and location
# ---------------------------------------------------------------------------------------

def _duckdb_config() -> dict[str, Any]:
    """Extensions from the pinned ``duckdb-ext*`` wheels (offline, reproducible); the normal
    extension repository only when those wheels are not installed."""
    cfg: dict[str, Any] = {"autoload_known_extensions": True}
    try:
        import duckdb_ext
    except ImportError:
        return cfg
    cfg.update(extension_directory=duckdb_ext.get_extension_dir(),
               autoinstall_known_extensions=False)
    return cfg


def _prepare_sqlite_catalog(file: Path) -> None:
    """Create the SQLite catalog file in WAL mode (readers never block the writer; the
    setting is stored in the file) before DuckLake first attaches it."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store folder {file.parent}: {exc.strerror}") from exc
    if file.exists() and file.stat().st_size > 0:
        return
    try:
        con = sqlite3.connect(str(file), timeout=5.0)
        try:
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot create the store catalog {file}: {exc}") from exc


_CONNECTIONS: dict[tuple[str, str | None], duckdb.DuckDBPyConnection] = {}
_CONNECTIONS_LOCK = threading.RLock()


def _open_connection(target: Target, timeout: float) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the store attached as ``lake`` (retried while locked)."""
    if target.kind == "local":
        _prepare_sqlite_catalog(target.path / CATALOG_FILE)
    elif target.kind == "sqlite":
        _prepare_sqlite_catalog(target.path)
    if target.kind == "legacy":
        sql = f"ATTACH {_literal(target.attach)} AS {LAKE}_src (READ_ONLY)"
    else:
        # no data inlining (DATA_INLINING_ROW_LIMIT): with it, a run inserted and then
        # updated in one transaction (two halves of a run in one ingest) failed to commit
        # (ducklake for duckdb 1.4.4, SQLite catalog)
        options = []
        if target.data_path:
            options.append(f"DATA_PATH {_literal(target.data_path)}")
        if target.kind == "local":
            # the data folder is always FOLDER/data: follow the folder when it is moved or
            # copied (file paths in the catalog are relative to the data path)
            options.append("OVERRIDE_DATA_PATH TRUE")
        sql = f"ATTACH {_literal(target.attach)} AS {LAKE}" + (
            f" ({', '.join(options)})" if options else "")
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        con = duckdb.connect(":memory:", config=_duckdb_config())
        try:
            con.execute("SET enable_progress_bar = false")
            con.execute(sql)
            if target.kind != "legacy":
                con.execute(f"SET GLOBAL ducklake_max_retry_count = {DUCKLAKE_MAX_RETRY_COUNT}")
            else:
                _load_legacy(con)
            return con
        except duckdb.Error as exc:
            con.close()
            if not _is_retryable(exc):
                if target.kind == "postgres" and not target.data_path and "DATA_PATH" in str(exc):
                    raise StoreError(
                        f"store {target.label}: a new team catalog needs a data path: pass "
                        f"--data-path DIR (or set {ENV_DATA_PATH})") from exc
                raise _store_error(exc, f"opening the store {target.label}") from exc
            if not _sleep_backoff(attempt, deadline):
                raise _busy(f"{target.label} stayed locked for {timeout:g} s "
                            f"({str(exc).splitlines()[0]})") from exc
            attempt += 1


def _load_legacy(con: duckdb.DuckDBPyConnection) -> None:
    """An old single-file store (attached read-only as ``lake_src``) as an in-memory
    database ``lake`` of the current schema, so every read query works on it: the small
    tables are copied, scores and texts get integer item keys (``upgrade.fill_v3``). The
    file itself is never written."""
    from evalcore.store import vectors
    from evalcore.store.schema import _DDL, TABLES
    from evalcore.store.upgrade import fill_v3, set_counters
    con.execute(f"ATTACH ':memory:' AS {LAKE}")
    src = f"{LAKE}_src.main"
    has_meta = _one(con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? "
                         "AND schema_name = 'main' AND table_name = 'meta'", [f"{LAKE}_src"])[0]
    if not has_meta:
        return          # not an evalbars store: _check_schema says so
    con.execute(f"USE {LAKE}")
    for ddl in _DDL:
        con.execute(ddl)
    for table in TABLES:
        if table not in ("items", "labels", "scores", "texts", "vectors"):
            cols = ", ".join(f'"{c}"' for (c, *_) in con.execute(f"DESCRIBE {table}").fetchall())
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {src}.{table}")
    version = _one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
    if version is not None and version[0] in ("1", "2"):
        set_counters(con, *fill_v3(con, f"{src}.scores", f"{src}.texts"),
                     version=SCHEMA_VERSION)
        vectors.fill(con)
    con.execute("USE memory")


def _connection(target: Target, timeout: float) -> duckdb.DuckDBPyConnection:
    key = (target.attach, target.data_path)
    with _CONNECTIONS_LOCK:
        con = _CONNECTIONS.get(key)
        if con is None:
            con = _CONNECTIONS[key] = _open_connection(target, timeout)
        return con


def _drop_connection(target: Target) -> None:
    with _CONNECTIONS_LOCK:
        con = _CONNECTIONS.pop((target.attach, target.data_path), None)
    if con is not None:
        with contextlib.suppress(duckdb.Error):
            con.close()


def open_connection_keys() -> set[tuple[str, str | None]]:
    """The stores this process holds a connection to (for tests that clean up after)."""
    with _CONNECTIONS_LOCK:
        return set(_CONNECTIONS)


def close_connections(keys: set[tuple[str, str | None]]) -> None:
    """Close this process's connections to the given stores (reopened on next use)."""
    for key in keys:
        with _CONNECTIONS_LOCK:
            con = _CONNECTIONS.pop(key, None)
        if con is not None:
            with contextlib.suppress(duckdb.Error):
                con.close()


def _sleep_backoff(attempt: int, deadline: float) -> bool:
    """Sleep a little (exponential with jitter); False once the deadline has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        return False
    time.sleep(min(left, 0.02 * (1.6 ** min(attempt, 12)) * (0.5 + random.random())))
    return True


_RETRY_TEXT = ("database is locked", "could not set lock", "conflicting lock",
               "transaction conflict", "could not serialize", "deadlock detected")


def _is_retryable(exc: BaseException) -> bool:
    """A lock or commit-conflict error: the same transaction may succeed when run again."""
    text = str(exc).lower()
    return any(t in text for t in _RETRY_TEXT)


def _legacy_write_error(target: Target) -> StoreError:
    return StoreError(
        f"{target.path} is a single-file store of an older evalbars and can only be read. "
        f"Copy it into the new layout with: python -m evalcore migrate {target.path} "
        "[--store NEW_STORE]")


class _Catalog:
    """The evalbars store: a DuckLake catalog (SQLite locally, PostgreSQL for a team) plus
    Parquet data files, so the CLI can ingest while the dashboard and other machines read.

    Every method is one operation: a read on a cursor of this process's cached connection
    (it sees the latest committed snapshot), or one write transaction that commits whole or
    not at all. DuckDB errors come out as ``StoreError`` with a human message (``.busy`` is
    True when the catalog stayed locked for ``lock_timeout``).

    Parameters
    ----------
    location : a store folder, ``ducklake:sqlite:FILE``, ``ducklake:postgres:CONNINFO`` or an
        old ``*.duckdb`` file (read-only); default ``default_store_location()``
        ($EVALBARS_STORE, else ./.evalbars). See ``resolve_location``.
    data_path : where the Parquet files go (default: $EVALBARS_DATA_PATH, else the folder's
        ``data/``); needed when a PostgreSQL catalog is created, remembered by it after.
    lock_timeout : seconds to keep retrying a locked or conflicting write (and the attach)
        before raising ``StoreError("store is busy ...")``.
    """

    def __init__(self, location: str | Path | None = None, *, data_path: str | Path | None = None,
                 lock_timeout: float = 15.0):
        self._target = resolve_location(location, data_path)
        self.lock_timeout = float(lock_timeout)
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
            raise _store_error(exc, f"opening the store {self._target.label}") from exc
        return cur

    @contextlib.contextmanager
    def _read(self, action: str = "reading the store") -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one read (latest committed snapshot); DuckDB errors become StoreError.

        Cursors are reused within a thread (a new cursor costs two statements, as much as a
        small read): each statement on it is its own autocommit transaction, so it sees the
        latest committed snapshot, as ``version()``'s cursor does. A read that raised closes
        its cursor instead; nested reads take another cursor."""
        con = _connection(self._target, self.lock_timeout)
        pool = self.__dict__.setdefault("_read_pool", threading.local())
        if getattr(pool, "con", None) is not con:
            pool.con, pool.idle = con, []
        cur = pool.idle.pop() if pool.idle else self._cursor()
        try:
            yield cur
        except duckdb.Error as exc:
            with contextlib.suppress(duckdb.Error):
                cur.close()
            raise _store_error(exc, action) from exc
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                cur.close()
            raise
        if pool.con is con and len(pool.idle) < 4:
            pool.idle.append(cur)
        else:
            with contextlib.suppress(duckdb.Error):
                cur.close()

    def _write(self, body: Callable[[duckdb.DuckDBPyConnection], T],
               action: str = "writing to the store", *, checks: tuple | None = None) -> T:
        """Run ``body(cursor)`` in one catalog transaction and commit it; retried as a whole.

        Before COMMIT the write counter is bumped and the keys DuckLake cannot declare are
        checked (``schema.KEY_CHECKS``). Any exception rolls back: nothing of the
        transaction becomes visible (DuckLake writes new Parquet files and commits them in
        one catalog transaction; files of a rolled-back or killed write are orphans that
        ``maintain`` removes). A lock/conflict error re-runs ``body`` from the start with
        backoff until ``lock_timeout``, then raises the busy error.
        """
        if self._target.read_only:
            raise _legacy_write_error(self._target)
        deadline = time.monotonic() + self.lock_timeout
        attempt = 0
        while True:
            cur = self._cursor()
            try:
                cur.execute("BEGIN TRANSACTION")
                result = body(cur)
                cur.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                            "WHERE key = 'write_counter'")
                _check_keys(cur, action, KEY_CHECKS if checks is None else checks)
                t0 = time.perf_counter()
                cur.execute("COMMIT")
                _log.debug("%s: commit %.2f s", action, time.perf_counter() - t0)
                return result
            except BaseException as exc:
                with contextlib.suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                if isinstance(exc, duckdb.Error) and _is_retryable(exc):
                    if _sleep_backoff(attempt, deadline):
                        attempt += 1
                        _log.debug("%s: retry %d after %s", action, attempt, str(exc)[:200])
                        continue
                    raise _busy(f"{self._target.label}: {action} could not commit within "
                                f"{self.lock_timeout:g} s ({str(exc).splitlines()[0]})") from exc
                if isinstance(exc, duckdb.Error):
                    raise _store_error(exc, action) from exc
                if isinstance(exc, OSError):
                    if _is_disk_full(exc):
                        raise _disk_full(exc, action) from exc
                    raise StoreError(f"{action} failed: {exc}; the store was not changed") from exc
                raise
            finally:
                with contextlib.suppress(duckdb.Error):
                    cur.close()

    def close(self) -> None:
        """Close this process's cached connection to the store (reopened on next use)."""
        _drop_connection(self._target)

    def __enter__(self) -> _Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- schema -----------------------------------------------------------------------
    def _has_tables(self) -> bool:
        with self._read("opening the store") as con:
            return bool(_one(con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? "
                                  "AND schema_name = 'main' AND table_name = 'meta'", [LAKE])[0])

    def _schema_version(self) -> str | None:
        with self._read("opening the store") as con:
            row = _one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
        return row[0] if row else None

    def _check_schema(self) -> None:
        """Create the tables in a new catalog (one transaction); accept the current schema."""
        if not self._has_tables():
            if self._target.read_only:
                raise StoreError(f"{self._target.path} is a DuckDB file but not an evalbars "
                                 "store (no meta table)")
            self._write(_create_tables, "creating the store")
        version = self._schema_version()
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

    # ---- cache key ----------------------------------------------------------------------
    def version(self) -> str:
        """Changes whenever the content changes (use as a cache key): the id of the
        catalog's latest snapshot (every committed write makes one); for an old .duckdb
        store, the file's (inode, size, mtime)."""
        pinned = self._pinned_version()
        if pinned is not None:
            return pinned
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
        """The version ``one_version`` pinned in this thread, or None."""
        return getattr(self.__dict__.get("_pin"), "version", None)

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
        """Within the block (in this thread), ``version()`` answers what it answered on
        entry, without a catalog query: one page interaction checks its per-snapshot memos
        (``query._per_snapshot``) against one version instead of querying it for each.
        Reads inside still see the latest committed snapshot; a write committed during the
        block is seen by the memos after it. Nested blocks keep the outer version.
        ``known``: a version the caller has just read (then no query at all)."""
        pin = self.__dict__.setdefault("_pin", threading.local())
        outer = getattr(pin, "version", None)
        if outer is None:
            pin.version = known if known is not None else self.version()
        try:
            yield pin.version
        finally:
            if outer is None:
                pin.version = None

    def write_counter(self) -> int:
        """How many write transactions the store has committed (read from the catalog)."""
        with self._read() as con:
            return int(_one(con, "SELECT value FROM meta WHERE key = 'write_counter'")[0])


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

def _busy(detail: str) -> StoreError:
    err = StoreError(f"store is busy (locked by another process) and stayed busy: {detail}. "
                     "Try again when the other ingest or program has finished.")
    err.busy = True  # type: ignore[attr-defined]
    return err


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
        msg = f"{action} failed: could not read or write the store files ({first})"
    elif isinstance(exc, duckdb.CatalogException):
        msg = f"{action} failed: the file is not an evalbars store or is damaged ({first})"
    else:
        msg = f"{action} failed: {first}"
    return StoreError(msg)
