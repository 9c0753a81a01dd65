"""The per-snapshot copy of the small tables (runs without protocols, cells, summaries,
tasks) that the memoized reads of ``query._Queries`` query: one copy per store snapshot and
Store object, in the connection's in-memory catalog, made in one transaction with the
snapshot id it is filed under (``_SmallCopies._small_snapshot``) and dropped once replaced
and unused. A mixin of ``Store`` through ``query._Queries``."""

import contextlib
import itertools
import threading
import weakref
from typing import Iterator

import duckdb

from evalcore.errors import StoreError
from evalcore.store.catalog import _CONNECTIONS_LOCK, SNAPSHOT_SQL, _connection, _store_error

# guards the per-snapshot memos of query._Queries and the copies here
_MEMO_LOCK = threading.Lock()


# The small tables the per-snapshot reads query, copied once per snapshot into the
# connection's in-memory catalog (``_Queries._read_small``): without the protocol JSON
# columns, which can be large (``run_protocols`` / ``task_protocol_table`` read them).
_SMALL_TABLES = (
    ("runs", ("SELECT run_id, name, model, source_format, harness, harness_version, tags, "
              "created_at, source_key FROM runs")),
    ("cells", "SELECT * FROM cells"),
    ("summaries", "SELECT * FROM summaries"),
    ("tasks", "SELECT run_id, task, n_choices FROM tasks"),
)
_SMALL_IDS = itertools.count(1)
# the copy's schema: this fixed name and a counter (``{:d}`` admits only an int). The SQL of
# a copy holds no value at all: identifiers from this format and _SMALL_TABLES only.
_SMALL_SCHEMA = "evalbars_small_{:d}"


class _SmallTables:
    """One snapshot's copy of the small tables: the schema ``memory.evalbars_small_<n>`` of
    the store's connection (its cursors share the in-memory catalog), dropped once it is
    replaced and no read uses it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, version: str, cur,
                 in_transaction: bool = False):
        """Copy the tables on ``cur``, in a transaction of its own, or (``in_transaction``)
        in the caller's open transaction, which the caller commits."""
        self.con, self.version = con, version
        self.schema = _SMALL_SCHEMA.format(next(_SMALL_IDS))
        self.users, self.stale = 0, False
        if not in_transaction:
            cur.execute("BEGIN TRANSACTION")
        try:
            cur.execute(f"CREATE SCHEMA memory.{self.schema}")
            for name, sql in _SMALL_TABLES:
                cur.execute(f"CREATE TABLE memory.{self.schema}.{name} AS {sql}")
            if not in_transaction:
                cur.execute("COMMIT")
        except BaseException:
            if not in_transaction:
                cur.execute("ROLLBACK")
            raise

    def drop(self) -> None:
        """Drop the copy (called under _MEMO_LOCK once it is stale and unused)."""
        with contextlib.suppress(duckdb.Error):
            cur = self.con.cursor()
            try:
                cur.execute(f"DROP SCHEMA IF EXISTS memory.{self.schema} CASCADE")
            finally:
                cur.close()


def _retire_boxed(box: dict) -> None:
    """Finalizer of a Store object: retire its copy of the small tables (``box["small"]``)."""
    with _MEMO_LOCK:
        _SmallCopies._retire_small(box.pop("small", None))


class _SmallCopies:
    """The copy's life cycle, mixed into Store (needs ``_target``, ``lock_timeout``,
    ``_read``, ``version``, ``_pinned_version`` and the version cursor of ``catalog._Catalog``)."""

    @contextlib.contextmanager
    def _read_small(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on this snapshot's copy of the small tables runs (without protocol),
        cells, summaries and tasks (run_id, task, n_choices only), under their own names.

        The per-snapshot reads of a page (runs, tasks, cell statistics, summaries) then cost
        one copy of the four tables in one transaction, in DuckDB (about 30 ms on the 2M
        bench store, where each DuckLake query of its own costs 10-40 ms), plus a few ms
        each. Copied again when the store's version changes or the connection was reopened;
        the copy is consistent (one snapshot); the version it is filed under may be older
        than its content (a write between the two), which only costs one more copy. Outside
        a ``one_version`` block the version and the copy are read in one transaction
        (``_small_snapshot``)."""
        con = _connection(self._target, self.lock_timeout)
        box = self._small_box()
        version = self._pinned_version()
        if version is None and not self._target.read_only:
            version, small = self._small_snapshot()
        else:
            version = self.version()
            small = self._current_small(box, version, con)
        if small is None:
            # one copy at a time per Store object: parallel reads (the leaderboard's) wait
            # for it instead of each making their own
            with self.__dict__.setdefault("_small_lock", threading.Lock()):
                small = self._current_small(box, version, con)
                if small is None:
                    with self._read(own_transaction=True) as cur:
                        small = _SmallTables(con, version, cur)
                    with _MEMO_LOCK:
                        small.users += 1
                        self._retire_small(box.get("small"))
                        box["small"] = small
        try:
            with _CONNECTIONS_LOCK:
                cur = con.cursor()
            try:
                cur.execute(f"USE memory.{small.schema}")
                yield cur
            except duckdb.Error as exc:
                raise StoreError(f"reading the store: {exc}") from exc
            finally:
                cur.close()
        finally:
            self._release_small(small)

    @staticmethod
    def _release_small(small: "_SmallTables") -> None:
        """A read is done with ``small`` (drop it if it is stale and no other read uses it)."""
        with _MEMO_LOCK:
            small.users -= 1
            if small.stale and not small.users:
                small.drop()

    def _small_snapshot(self) -> tuple[str, "_SmallTables"]:
        """(the store's version, this Store object's copy of the small tables of that
        snapshot, counted as in use: the caller releases it, ``_release_small``), in ONE
        catalog transaction: the snapshot id, then, unless the current copy is of that
        snapshot, the copy itself (the transaction's snapshot: consistent with the id). A
        first view after a write so pays one transaction instead of the version query's and
        the copy's; the copy is registered once committed. On this thread's version cursor
        when this object holds a copy (usually only the id is read), else on a read cursor
        (``_read``: the copy is certain)."""
        con = _connection(self._target, self.lock_timeout)
        held = self._small_box().get("small")
        if held is None or held.con is not con:
            # no copy on this connection (a first read): a copy for certain, on a read
            # cursor as every read of the store
            with self._read(own_transaction=True) as cur:
                return self._small_snapshot_on(cur)
        for attempt in (0, 1):
            try:
                return self._small_snapshot_on(self._version_cursor())
            except duckdb.Error as exc:
                # a broken kept cursor: once more on a new one, then the error
                self._drop_version_cursor()
                if attempt:
                    raise _store_error(exc, "reading the store") from exc
        raise AssertionError("unreachable")

    def _small_snapshot_on(self, cur) -> tuple[str, "_SmallTables"]:
        """``_small_snapshot``'s transaction on the cursor ``cur``."""
        con = _connection(self._target, self.lock_timeout)
        box = self._small_box()
        small = None
        cur.execute("BEGIN TRANSACTION")
        try:
            version = f"snapshot:{cur.execute(SNAPSHOT_SQL).fetchall()[0][0]}"
            small = self._current_small(box, version, con)
            if small is None:
                with self.__dict__.setdefault("_small_lock", threading.Lock()):
                    small = self._current_small(box, version, con)
                    if small is None:
                        made = _SmallTables(con, version, cur, in_transaction=True)
                        cur.execute("COMMIT")
                        with _MEMO_LOCK:
                            made.users += 1
                            self._retire_small(box.get("small"))
                            box["small"] = small = made
                        return version, small
            cur.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            if small is not None:
                self._release_small(small)
            raise
        return version, small

    def _small_box(self) -> dict:
        """This Store object's holder of its current copy (``box["small"]``); a Store object
        dropped without ``forget()`` drops its copy too (a finalizer on the box)."""
        with _MEMO_LOCK:
            box = self.__dict__.get("_small_holder")
            if box is None:
                box = self.__dict__["_small_holder"] = {}
                weakref.finalize(self, _retire_boxed, box).atexit = False   # not at exit
        return box

    @staticmethod
    def _current_small(box: dict, version: str, con) -> "_SmallTables | None":
        """The box's copy if it is of ``version`` on connection ``con`` (counted as in use),
        else None."""
        with _MEMO_LOCK:
            small = box.get("small")
            if small is None or small.version != version or small.con is not con:
                return None
            small.users += 1
            return small

    @staticmethod
    def _retire_small(small: "_SmallTables | None") -> None:
        """Mark a replaced copy stale; drop it now if no read uses it (under _MEMO_LOCK)."""
        if small is not None and not small.stale:
            small.stale = True
            if not small.users:
                small.drop()
