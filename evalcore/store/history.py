"""Who changed what, and undo: each write's author and message in the DuckLake snapshot it
commits, the history read back from the catalog, and ``restore`` of a deleted run.

Commit notes
------------
Every write of a user (ingest, rename, tags, delete, restore, maintain) records, in the
snapshot it commits, DuckLake's commit information (``CALL lake.set_commit_message(author,
message, extra_info => ...)``, DuckLake 0.3 "Commit messages"): ``author`` is the acting
user (``access.Actor.name``: the signed-in user in the app, ``--author`` or the OS user on
the CLI), ``message`` one line in words ("deleted run 'gpt2' (#3)") and ``extra_info`` a
small JSON object ``{"op": ..., "runs": [[id, name], ...]}`` that ``history`` and
``restore`` read. Writes evalbars makes by itself (creating the tables, merging small
files) carry ``author`` "evalbars" and are left out of ``history`` unless asked for.

Restore
-------
A deleted run's rows are still in the snapshot before its deletion (DuckLake's time travel,
``AT (VERSION => n)``) until ``maintain`` expires that snapshot. ``restore_run`` finds the
latest delete of the run in the history and copies the run's rows of every per-run table
from the snapshot just before it, in one write transaction: the same run id, name, tags,
scores, cells, vectors, summaries, texts, tasks, files and uploader, so every number shown
for it (score, interval, comparison) is the one shown before the delete. Items and labels
(shared integer keys) are never deleted, so the restored rows' keys still resolve. A restore
is refused, the store unchanged, when the run exists again, when its name or one of its
files now belongs to another run, or when the snapshot is no longer kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from evalcore import access
from evalcore.errors import StoreError
from evalcore.store._util import _one
from evalcore.store.location import LAKE

# the author of writes evalbars makes by itself (no user asked for them)
SYSTEM_AUTHOR = "evalbars"
# the ops a user's write records (``extra_info.op``), as ``history`` names them
USER_OPS = ("ingest", "rename", "tag", "delete", "restore", "maintain")
# the tables that hold a run's own rows (run_id column), restored together
RUN_TABLES = ("runs", "files", "scores", "cells", "vectors", "summaries", "texts", "tasks",
              "run_owners")
OWNERS_TABLE = "run_owners"
OWNERS_DDL = ("CREATE TABLE IF NOT EXISTS run_owners (run_id INTEGER NOT NULL, "
              "owner VARCHAR NOT NULL)")


@dataclass(frozen=True)
class CommitNote:
    """What one write records in its snapshot: ``author``, ``message`` (one line),
    ``op`` (one of ``USER_OPS``, or "system") and ``runs`` ((id, name) pairs it touched)."""

    author: str
    message: str
    op: str
    runs: tuple[tuple[int, str], ...] = ()

    def extra_info(self) -> str:
        return json.dumps({"op": self.op, "runs": [[int(i), str(n)] for i, n in self.runs]})


def note_for(actor: access.Actor | None, op: str, message: str,
             runs: tuple[tuple[int, str], ...] = ()) -> CommitNote:
    """The commit note of ``actor``'s write (None: ``access.LOCAL_ACTOR``)."""
    who = access.LOCAL_ACTOR if actor is None else actor
    return CommitNote(who.name, message, op, tuple(runs))


def system_note(message: str) -> CommitNote:
    """The commit note of a write evalbars makes by itself."""
    return CommitNote(SYSTEM_AUTHOR, message, "system")


def set_commit_note(con: duckdb.DuckDBPyConnection, note: CommitNote) -> None:
    """Record ``note`` in the snapshot the open transaction on ``con`` commits."""
    con.execute(f"CALL {LAKE}.set_commit_message(?, ?, extra_info => ?)",
                [note.author, note.message, note.extra_info()])


@dataclass(frozen=True)
class HistoryEntry:
    """One committed write: ``snapshot`` id, ``time`` (UTC), ``author``, ``op``,
    ``message`` and the ``runs`` ((id, name) pairs) it touched. A snapshot written without
    a note (an older evalbars, another DuckLake client) has op "unknown" and author ""."""

    snapshot: int
    time: datetime
    author: str
    op: str
    message: str
    runs: tuple[tuple[int, str], ...] = field(default=())

    def as_dict(self) -> dict:
        return {"snapshot": self.snapshot, "time": self.time.isoformat(),
                "author": self.author, "op": self.op, "message": self.message,
                "runs": [{"run_id": i, "name": n} for i, n in self.runs]}


@dataclass(frozen=True)
class RestoredRun:
    """What ``restore_run`` brought back: the run's id and name, and the delete it undid."""

    run_id: int
    name: str
    deleted: HistoryEntry


_HISTORY_SQL = (f"SELECT snapshot_id, epoch_us(snapshot_time), author, commit_message, "
                f"commit_extra_info FROM {LAKE}.snapshots() "
                "WHERE snapshot_id > 0 ORDER BY snapshot_id DESC")


def _entry(row: tuple) -> HistoryEntry:
    snap, micros, author, message, extra = row
    op, runs = "unknown", ()
    if extra:
        try:
            info = json.loads(extra)
            op = str(info.get("op", "unknown"))
            runs = tuple((int(i), str(n)) for i, n in info.get("runs", []))
        except (ValueError, TypeError, AttributeError):
            pass
    when = datetime.fromtimestamp(int(micros) / 1e6, tz=timezone.utc)
    return HistoryEntry(int(snap), when, author or "", op, message or "", runs)


class _History:
    """``Store.history`` and ``Store.restore_run`` (see the module docstring)."""

    def history(self, *, limit: int | None = 100, include_system: bool = False,
                run_id: int | None = None) -> list[HistoryEntry]:
        """The store's committed writes, newest first (at most ``limit``; None: all kept).

        Only writes a user asked for (``USER_OPS`` and notes from other clients), unless
        ``include_system`` (also table creation and merges of small files). ``run_id``: only
        the writes that touched that run. Snapshots ``maintain`` has expired are gone from
        the catalog and so from the history."""
        if self.read_only:
            return []
        with self._read("reading the store's history") as con:
            rows = con.execute(_HISTORY_SQL).fetchall()
        out: list[HistoryEntry] = []
        for row in rows:
            e = _entry(row)
            if not include_system and (e.op == "system" or (e.op == "unknown" and not e.author)):
                continue
            if run_id is not None and all(i != run_id for i, _ in e.runs):
                continue
            out.append(e)
            if limit is not None and len(out) >= limit:
                break
        return out

    def deleted_runs(self) -> list[HistoryEntry]:
        """The delete entries of runs that are deleted now and can still be restored (the
        snapshot just before the delete is kept), newest first; one entry per run (its
        latest delete)."""
        live = set(self._run_ids_now())
        kept = self._kept_snapshots()
        seen: set[int] = set()
        out = []
        for e in self.history(limit=None):
            if e.op != "delete":
                continue
            fresh = [rid for rid, _ in e.runs if rid not in live and rid not in seen]
            seen.update(fresh)
            if fresh and e.snapshot - 1 in kept:
                out.append(e)
        return out

    def _kept_snapshots(self) -> set[int]:
        with self._read("reading the store's history") as con:
            return {int(r[0]) for r in con.execute(
                f"SELECT snapshot_id FROM {LAKE}.snapshots()").fetchall()}

    def _run_ids_now(self) -> list[int]:
        with self._read("listing the runs") as con:
            return [int(r[0]) for r in con.execute("SELECT run_id FROM runs").fetchall()]

    def _run_name(self, run_id: int) -> str:
        with self._read("reading the run") as con:
            row = _one(con, "SELECT name FROM runs WHERE run_id = ?", [int(run_id)])
        if row is None:
            raise StoreError(f"no run #{run_id} in the store")
        return str(row[0])

    def run_owner(self, run_id: int) -> str | None:
        """The recorded uploader of a run (``access.Actor.owner_key``), or None (a run of
        an older evalbars, or a store without the owners table)."""
        with self._read("reading the run's uploader") as con:
            if not _has_table(con, OWNERS_TABLE):
                return None
            row = _one(con, "SELECT owner FROM run_owners WHERE run_id = ? LIMIT 1",
                       [int(run_id)])
        return None if row is None else str(row[0])

    def restore_run(self, run: str | int, *, actor: access.Actor | None = None) -> RestoredRun:
        """Bring back a deleted run exactly as it was (see the module docstring).

        ``run``: the run's id (``3``, ``#3``) or the name it had. ``actor`` must be allowed
        to restore (``access.check``: admins only). StoreError (nothing changed) when no kept delete of such a run exists, the
        run is there already, or its name or files now belong to another run."""
        access.check(actor, "restore")
        entry = self._find_delete(run)
        rid, name = next((i, n) for i, n in entry.runs if _matches(run, i, n))
        before = self._snapshot_before(entry.snapshot)
        tables = self._tables_at(before)

        def body(con: duckdb.DuckDBPyConnection) -> None:
            _check_restorable(con, rid, name, before)
            for table in tables:
                con.execute(f"INSERT INTO {table} SELECT * FROM {table} "
                            f"AT (VERSION => {before:d}) WHERE run_id = ?", [rid])

        note = note_for(actor, "restore", f"restored run {name!r} (#{rid}) as it was before "
                        f"snapshot {entry.snapshot}", ((rid, name),))
        self._write(body, "restoring the run", note=note)
        return RestoredRun(rid, name, entry)

    def _find_delete(self, run: str | int) -> HistoryEntry:
        live = set(self._run_ids_now())
        for e in self.history(limit=None):
            if e.op == "delete" and any(_matches(run, i, n) for i, n in e.runs):
                rid = next(i for i, n in e.runs if _matches(run, i, n))
                if rid in live:
                    raise StoreError(f"run {run!r} (#{rid}) is in the store; nothing to restore")
                return e
        raise StoreError(f"no deleted run {run!r} can be restored: the history kept by the "
                         "store has no delete of it (maintain may have expired it; see "
                         "python -m evalcore history)")

    def _snapshot_before(self, snapshot: int) -> int:
        """The snapshot just before ``snapshot`` (DuckLake numbers snapshots one by one),
        which holds the run as it was when it was deleted; StoreError when ``maintain``
        expired it (an older kept snapshot may hold an older state of the run: never used)."""
        before = int(snapshot) - 1
        if before not in self._kept_snapshots():
            raise StoreError(f"the run cannot be restored: the snapshot before its delete "
                             f"({before}) is no longer kept (maintain expired it)")
        return before

    def _tables_at(self, snapshot: int) -> tuple[str, ...]:
        """``RUN_TABLES`` that existed at ``snapshot`` (the owners table is younger than
        some stores)."""
        out = []
        for table in RUN_TABLES:
            try:
                with self._read("reading the store's history") as con:
                    con.execute(f"SELECT 1 FROM {table} AT (VERSION => {snapshot:d}) LIMIT 0")
                out.append(table)
            except StoreError:
                if table != OWNERS_TABLE:
                    raise
        return tuple(out)


def _matches(ref: str | int, run_id: int, name: str) -> bool:
    """Whether a restore argument names this deleted run (an id, ``#id`` / ``id:id``, or
    its name; ``name:NAME`` for a name that looks like a number)."""
    if isinstance(ref, int):
        return ref == run_id
    text = str(ref).strip()
    low = text.lower()
    if low.startswith("name:"):
        return text[5:].strip() == name
    if text.startswith("#") or low.startswith("id:"):
        digits = text[1:] if text.startswith("#") else text[3:]
        return digits.strip().isdigit() and int(digits) == run_id
    return text == name or (text.isdigit() and int(text) == run_id)


def _check_restorable(con: duckdb.DuckDBPyConnection, rid: int, name: str, before: int) -> None:
    """StoreError (the transaction rolls back) when restoring run ``rid`` would clash with
    what the store holds now."""
    if _one(con, "SELECT 1 FROM runs WHERE run_id = ?", [rid]) is not None:
        raise StoreError(f"run #{rid} is in the store; nothing to restore")
    row = _one(con, "SELECT run_id FROM runs WHERE name = ?", [name])
    if row is not None:
        raise StoreError(f"cannot restore run {name!r} (#{rid}): run #{row[0]} has that name now; "
                         "rename it first")
    row = _one(con, f"SELECT o.name, n.run_id FROM (SELECT key, name FROM files "
                    f"AT (VERSION => {before:d}) WHERE run_id = ?) o "
                    "JOIN files n ON n.key = o.key LIMIT 1", [rid])
    if row is not None:
        raise StoreError(f"cannot restore run {name!r} (#{rid}): its file {row[0]!r} was "
                         f"uploaded again as run #{row[1]}; delete that run first")


def _has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(_one(con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                          "current_database() AND schema_name = 'main' AND table_name = ?",
                     [table])[0])
