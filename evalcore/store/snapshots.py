"""Reads pinned to one catalog snapshot: the store as it was at snapshot n, attached read-only.

A page interaction, a CLI command or a report makes many reads, on several cursors and
threads. Each read on the live catalog ``lake`` sees the latest committed snapshot, so two
reads of one interaction could see two different stores (a run in the run list whose scores
the next read has not got, or the other way round). ``Store.one_version()`` therefore pins
the snapshot id it starts at, and every read inside the block (in its thread, and in the
threads it hands the version to) runs on ``lake_at_<n>``: the same catalog attached with
DuckLake's ``SNAPSHOT_VERSION n`` option, which shows exactly snapshot n, read-only, however
many writers, compactions and ``maintain`` runs commit meanwhile. (``maintain`` keeps every
snapshot a running read may still use and the files it needs: see ``store.maintain``.)

Attaching costs about 8 ms on a SQLite catalog (the first query on it loads that snapshot's
table list, as the first query after a write does on ``lake``), so the attachment is made
at the first read of a block that needs it (memoized reads need none), shared by every block
pinned to the same snapshot, and detached once no block uses it and a newer one exists.
Identifiers are ``lake_at_`` plus the snapshot id formatted as an integer: no value from
outside reaches the SQL text.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import duckdb

# the alias of a pinned snapshot's catalog (``{:d}``: an integer only)
PINNED_ALIAS = "lake_at_{:d}"
# attached snapshots kept without users (the newest ones: the next interaction likely pins
# the same snapshot again)
KEEP_IDLE = 1


def snapshot_id(version: str | None) -> int | None:
    """The snapshot id of a ``Store.version()`` string ("snapshot:42" -> 42), None for any
    other (an old single-file store's file stamp)."""
    if not version or not version.startswith("snapshot:"):
        return None
    text = version[len("snapshot:"):]
    return int(text) if text.isdigit() else None


class _Attached:
    """The snapshot catalogs attached on one connection: snapshot id -> users."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users: dict[int, int] = {}


_REGISTRY: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, _Attached]" = \
    weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def _attached(con: duckdb.DuckDBPyConnection) -> _Attached:
    with _REGISTRY_LOCK:
        reg = _REGISTRY.get(con)
        if reg is None:
            reg = _REGISTRY[con] = _Attached()
        return reg


def acquire(con: duckdb.DuckDBPyConnection, snapshot: int, attach_sql) -> str:
    """The alias of snapshot ``snapshot``'s catalog on ``con``, attached now if needed
    (``attach_sql(alias, snapshot)`` gives the ATTACH statement), counted as in use: the
    caller calls ``release`` when its block ends."""
    reg = _attached(con)
    alias = PINNED_ALIAS.format(int(snapshot))
    with reg.lock:
        if snapshot not in reg.users:
            cur = con.cursor()
            try:
                cur.execute(attach_sql(alias, int(snapshot)))
            finally:
                cur.close()
            reg.users[snapshot] = 0
        reg.users[snapshot] += 1
    return alias


def release(con: duckdb.DuckDBPyConnection, snapshot: int) -> None:
    """A block pinned to ``snapshot`` has ended: detach the snapshots nobody uses, except
    the newest ``KEEP_IDLE`` of them."""
    reg = _attached(con)
    with reg.lock:
        if snapshot in reg.users:
            reg.users[snapshot] -= 1
        idle = sorted(s for s, n in reg.users.items() if n <= 0)
        for old in idle[:-KEEP_IDLE] if KEEP_IDLE else idle:
            del reg.users[old]
            with contextlib.suppress(duckdb.Error):
                cur = con.cursor()
                try:
                    cur.execute(f"DETACH {PINNED_ALIAS.format(int(old))}")
                finally:
                    cur.close()


def attached_snapshots(con: duckdb.DuckDBPyConnection) -> dict[int, int]:
    """Snapshot id -> blocks using it, of the snapshot catalogs attached on ``con``."""
    reg = _attached(con)
    with reg.lock:
        return dict(reg.users)
