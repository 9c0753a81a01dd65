"""One DuckDB connection per process and store: opening it (extensions, the SQLite catalog in
WAL mode, the ATTACH statement with its options, an old single-file store converted), the
cache, retries of a locked catalog, and the connections DuckDB has invalidated."""

from __future__ import annotations

import contextlib
import ctypes
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import duckdb

from evalcore import access
from evalcore.errors import NotAllowed, StoreBusyError, StoreError
from evalcore.store._util import _one
from evalcore.store.faults import first_line, mask_secrets, store_error
from evalcore.store import objectstore
from evalcore.store.lock import write_lock
from evalcore.store.location import (
    CATALOG_FILE,
    DUCKLAKE_MAX_RETRY_COUNT,
    ENV_DATA_PATH,
    LAKE,
    STATEMENT_TIMEOUT_FACTOR,
    STATEMENT_TIMEOUT_FLOOR,
    Target,
    _literal,
)

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


_CONNECTIONS: dict[tuple, duckdb.DuckDBPyConnection] = {}
_CONNECTIONS_LOCK = threading.RLock()


def _catalog_conninfo(target: Target, lock_timeout: float) -> str:
    """What follows ATTACH for ``target``. On a PostgreSQL catalog the libpq ``options``
    set ``lock_timeout`` (the store's lock timeout) and ``statement_timeout`` on every
    catalog connection, so no catalog statement waits longer than the user allows; a
    location that sets ``options`` itself keeps its own."""
    if target.kind != "postgres" or "options" in target.attach:
        return target.attach
    lock_ms = max(1, int(lock_timeout * 1000))
    stmt_ms = max(lock_ms, int(max(lock_timeout * STATEMENT_TIMEOUT_FACTOR,
                                   STATEMENT_TIMEOUT_FLOOR) * 1000))
    return (f"{target.attach} options='-c lock_timeout={lock_ms} "
            f"-c statement_timeout={stmt_ms}'")


def _attach_sql(target: Target, alias: str, lock_timeout: float,
                snapshot: int | None = None) -> str:
    """The ATTACH statement of the store's catalog under ``alias`` (fixed characters); with
    ``snapshot``, read-only at that snapshot (``store.snapshots``)."""
    if target.kind == "legacy":
        return f"ATTACH {_literal(target.attach)} AS {alias} (READ_ONLY)"
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
    if snapshot is not None:
        options.append(f"SNAPSHOT_VERSION {int(snapshot):d}")
    if access.read_only():
        # EVALBARS_READONLY: the engine refuses writes too, whatever the code above it does
        options.append("READ_ONLY")
    return (f"ATTACH {_literal(_catalog_conninfo(target, lock_timeout))} AS {alias}"
            + (f" ({', '.join(options)})" if options else ""))


def _open_connection(target: Target, timeout: float) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the store attached as ``lake`` (retried while locked)."""
    if objectstore.is_object_store(target.data_path):
        # a missing credential is refused before anything, a new catalog included, is made
        objectstore.S3Settings.from_environment(target.data_path)
    catalog = (target.path / CATALOG_FILE if target.kind == "local" else
               target.path if target.kind == "sqlite" else None)
    if catalog is not None and _is_new_sqlite(catalog):
        # a new catalog: DuckLake creates its tables at the first ATTACH; one process at a
        # time, under the store's writer lock file (as PostgreSQL's _catalog_init_lock)
        try:
            catalog.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {catalog.parent}: "
                             f"{exc.strerror}") from exc
        with write_lock(target.kind, catalog, None, timeout, "creating the store",
                        _masked(target)):
            _prepare_sqlite_catalog(catalog)
            return _attach_with_retries(target, timeout)
    if catalog is not None:
        _prepare_sqlite_catalog(catalog)
    return _attach_with_retries(target, timeout)


def _is_new_sqlite(catalog: Path) -> bool:
    try:
        return catalog.stat().st_size == 0
    except FileNotFoundError:
        return True


def _attach_with_retries(target: Target, timeout: float) -> duckdb.DuckDBPyConnection:
    """``_open_connection``'s ATTACH, retried with backoff while the catalog is locked."""
    sql = _attach_sql(target, f"{LAKE}_src" if target.kind == "legacy" else LAKE, timeout)
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        con = duckdb.connect(":memory:", config=_duckdb_config())
        try:
            con.execute("SET enable_progress_bar = false")
            if objectstore.wants_secret(target.data_path, target.kind):
                settings = objectstore.S3Settings.from_environment(target.data_path or "s3://")
                con.execute(settings.secret_sql())
            if target.kind == "postgres":
                with _catalog_init_lock(con, target, timeout, deadline):
                    con.execute(sql)
            else:
                con.execute(sql)
            if target.kind != "legacy":
                con.execute(f"SET GLOBAL ducklake_max_retry_count = {DUCKLAKE_MAX_RETRY_COUNT}")
            else:
                _load_legacy(con, target)
            return con
        except StoreError:
            con.close()
            raise
        except duckdb.Error as exc:
            con.close()
            if not _is_retryable(exc):
                if access.read_only() and "creating a new ducklake" in str(exc).lower():
                    raise NotAllowed(f"no store at {_masked(target)}, and this evalbars is "
                                     f"read-only ({access.ENV_READONLY} is set): a new store "
                                     "is not created") from exc
                if target.kind == "postgres" and not target.data_path and "DATA_PATH" in str(exc):
                    raise StoreError(
                        f"store {_masked(target)}: a new team catalog needs a data path: pass "
                        f"--data-path DIR (or set {ENV_DATA_PATH})") from exc
                raise store_error(exc, f"opening the store {_masked(target)}",
                                  target.label, local_folders(target)) from exc
            if not _sleep_backoff(attempt, deadline):
                raise _busy(f"{_masked(target)} stayed locked for {timeout:g} s "
                            f"({first_line(exc, target.label)})") from exc
            attempt += 1


# The advisory lock that serialises the first ATTACH of a PostgreSQL catalog (the writer
# lock's key + 1, store.lock.PG_LOCK_KEY): DuckLake creates its metadata tables at the first
# ATTACH of an empty database, and two processes doing so at once both run CREATE TABLE:
# the loser fails with a duplicate key of pg_type or "relation already exists" (measured
# with 6 concurrent ingests into a new database: 2 to 5 of them failed). Under the lock the
# first one creates the catalog and the others find it made.
PG_INIT_LOCK_KEY = 0x6576616C62617274
_INIT_ALIAS = "__evalbars_catalog_init"


@contextlib.contextmanager
def _catalog_init_lock(con: duckdb.DuckDBPyConnection, target: Target, timeout: float,
                       deadline: float):
    """Hold the catalog-creation advisory lock of ``target``'s PostgreSQL database for the
    block: a transaction-level lock on a plain PostgreSQL attachment of the same database,
    on a cursor of its own (released when that transaction ends, or when the process dies).
    Waits until ``deadline``, then raises ``StoreBusyError``."""
    conninfo = _catalog_conninfo(target, timeout)[len("ducklake:postgres:"):]
    con.execute(f"ATTACH {_literal(conninfo)} AS {_INIT_ALIAS} (TYPE postgres)")
    cur = con.cursor()
    try:
        cur.execute("BEGIN TRANSACTION")
        attempt = 0
        while not cur.execute(
                f"SELECT * FROM postgres_query('{_INIT_ALIAS}', "
                f"'SELECT pg_try_advisory_xact_lock({PG_INIT_LOCK_KEY:d}) AS got')"
                ).fetchall()[0][0]:
            if not _sleep_backoff(attempt, deadline):
                raise _busy(f"{_masked(target)}: another process kept creating the catalog "
                            f"for {timeout:g} s")
            attempt += 1
        yield
    finally:
        with contextlib.suppress(duckdb.Error):
            cur.execute("ROLLBACK")
        with contextlib.suppress(duckdb.Error):
            cur.close()
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DETACH {_INIT_ALIAS}")


def local_folders(target: Target) -> tuple:
    """The local folders of a store's catalog and data (where a full disk can stop it)."""
    folders = []
    if target.path is not None:
        folders.append(target.path if target.path.is_dir() else target.path.parent)
    if target.data_path and "://" not in target.data_path:
        folders.append(Path(target.data_path))
    return tuple(folders)


def _masked(target: Target) -> str:
    """The store's location for messages, passwords masked."""
    return mask_secrets(target.label)


def _load_legacy(con: duckdb.DuckDBPyConnection, target: Target) -> None:
    """An old single-file store (attached read-only as ``lake_src``) as an in-memory
    database ``lake`` of today's schema, so every read query works on it (``store.legacy``:
    the same conversion ``migrate`` makes, today's cluster-key policy included). The file
    itself is never written. A file that is not an evalbars store is left to
    ``_check_schema``; one that cannot be converted is refused with the migrate command."""
    from evalcore.store.legacy import copy_old_store
    from evalcore.store.schema import _DDL
    con.execute(f"ATTACH ':memory:' AS {LAKE}")
    has_meta = _one(con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? "
                         "AND schema_name = 'main' AND table_name = 'meta'", [f"{LAKE}_src"])[0]
    if not has_meta:
        return          # not an evalbars store: _check_schema says so
    con.execute(f"USE {LAKE}")
    for ddl in _DDL:
        con.execute(ddl)
    con.execute("BEGIN TRANSACTION")
    try:
        copy_old_store(con, f"{LAKE}_src.main", f"the old store {target.path}")
        con.execute("COMMIT")
    except StoreError as exc:
        con.execute("ROLLBACK")
        raise StoreError(f"{exc}. This evalbars reads an old single-file store through a "
                         f"converted copy and could not make one; {_migrate_hint(target)}") \
            from exc
    finally:
        con.execute("USE memory")


def _migrate_hint(target: Target) -> str:
    """The migrate command for an old single-file store, in the CLI's own spelling."""
    return (f"copy it into the current layout with: python -m evalcore migrate {target.path} "
            "--store NEW_STORE_FOLDER")


def _connection_key(target: Target, timeout: float) -> tuple:
    """The cache key of a connection: the catalog and data path, on PostgreSQL the lock
    timeout too (it is a setting of the catalog connection, ``_catalog_conninfo``), and
    whether it is attached read-only (``access.read_only``)."""
    return (target.attach, target.data_path,
            float(timeout) if target.kind == "postgres" else None, access.read_only())


def _connection(target: Target, timeout: float) -> duckdb.DuckDBPyConnection:
    key = _connection_key(target, timeout)
    with _CONNECTIONS_LOCK:
        con = _CONNECTIONS.get(key)
        if con is None:
            con = _CONNECTIONS[key] = _open_connection(target, timeout)
        return con


def _drop_connection(target: Target, timeout: float) -> None:
    with _CONNECTIONS_LOCK:
        con = _CONNECTIONS.pop(_connection_key(target, timeout), None)
    if con is not None:
        with contextlib.suppress(duckdb.Error):
            con.close()


# Connections and cursors of a database DuckDB has invalidated (a FATAL or INTERNAL error):
# closing one rolls its open transaction back, which throws again inside a destructor and
# aborts the process (duckdb 1.4.4). They are dropped from the cache and kept alive here
# (with one extra reference each, so not even interpreter shutdown closes them); the next
# use of the store opens a new connection.
_INVALIDATED: list = []


def _quarantine(target: Target, timeout: float, *objects: Any) -> None:
    """Never close ``objects`` (cursors / the connection of an invalidated database) and
    forget the cached connection of ``target``."""
    with _CONNECTIONS_LOCK:
        con = _CONNECTIONS.pop(_connection_key(target, timeout), None)
        for obj in (*objects, con):
            if obj is not None:
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
                _INVALIDATED.append(obj)


def _is_invalidating(exc: BaseException) -> bool:
    """An error after which DuckDB has invalidated the database (every later statement,
    and closing a cursor, fails)."""
    return isinstance(exc, (duckdb.FatalException, duckdb.InternalException)) or \
        "database has been invalidated" in str(exc)


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
               "transaction conflict", "could not serialize", "deadlock detected",
               "duplicate key value violates unique constraint \"ducklake_snapshot")


def _is_retryable(exc: BaseException) -> bool:
    """A lock or commit-conflict error: the same transaction may succeed when run again."""
    text = str(exc).lower()
    return any(t in text for t in _RETRY_TEXT)


def _legacy_write_error(target: Target) -> StoreError:
    return StoreError(f"{target.path} is a single-file store of an older evalbars and can only "
                      f"be read; {_migrate_hint(target)}")


def _busy(detail: str) -> StoreBusyError:
    return StoreBusyError(f"store is busy (locked by another process) and stayed busy: "
                          f"{detail}. Try again when the other ingest or program has "
                          "finished, or give a longer --lock-timeout.")
