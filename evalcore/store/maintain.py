"""Housekeeping of a DuckLake store: compact small files, free the space of deleted runs,
remove files a killed writer left behind, never a file a reader may still need.

Every write adds Parquet files and one catalog snapshot; nothing is rewritten in place. So:

* many small ingests leave many small files -> they are merged (``_rewrite_files``): one
  ordinary write transaction copies the live rows of the chosen files into one new file and
  deletes the chosen files' rows, which ends those files at the new snapshot. Older
  snapshots keep reading the old files, newer ones the new file; the old files are needed
  by old snapshots only and are freed when ``maintain`` expires those. (DuckLake's own
  ``ducklake_merge_adjacent_files`` is not used: with ducklake for duckdb 1.4.4, a reader in
  another process that read while one committed got no files at all for a table, now and
  then, and so an empty table; measured with bench/bench_stress.py, 2 of 249 reads with
  only the automatic merge running, 0 of 298 without any merge);
* a deleted run, an update and a merge leave files that only old snapshots still reference.
  They use disk until ``ducklake_expire_snapshots`` forgets those snapshots, which schedules
  the files only they referenced for deletion. **Time travel** (``AT (VERSION => n)``) to an
  expired snapshot is no longer possible afterwards; the current content is never touched;
* ``ducklake_cleanup_old_files`` deletes scheduled files;
* a writer killed mid-ingest (kill -9, power loss) never commits, so the catalog is
  unchanged, but the Parquet files it had written stay in the data folder as orphans, which
  ``ducklake_delete_orphaned_files`` removes.

What a reader may still need (the rules here)
---------------------------------------------
A read of the product (a page interaction, a CLI command, a report) reads one snapshot
(``Store.one_version``, ``store.snapshots``) and lasts less than ``DEFAULT_READER_GRACE``
(10 minutes). So:

* a snapshot is expired only when it is older than ``keep_history`` AND it stopped being
  the latest snapshot at least ``reader_grace`` ago (the next snapshot is that old): no
  read that started within the grace period can be pinned to it. The files this schedules
  were needed only by such snapshots, but they are deleted by the same grace rule below;
* a scheduled file is deleted only once it has been scheduled for ``reader_grace`` (a read
  of a snapshot that has just expired finishes first);
* an orphan is deleted only when older than ``orphans_older_than`` (default one day, never
  less than ``MIN_ORPHAN_AGE``): a file another writer has just written but not committed
  is unreferenced too. ``cleanup_all`` is never used with a grace period.

Each step runs under the store's writer lock (``store.lock``), one step at a time, so no
write or compaction commits in the middle of one and writers wait at most one step.

DuckLake catalogs on SQLite compare ``cleanup_old_files``' ``older_than`` with the schedule
time at the resolution of a day (ducklake for duckdb 1.4.4: a cut-off at any time of a day
selects every file scheduled on that day or before, measured): there the cut-off is the last
instant of the UTC day before the day of ``now - reader_grace``, so a file waits between the
grace period and one day more. Snapshots to expire are chosen here (by their times read into DuckDB, exact on both
catalogs) and named by id (``versions``), not by ``older_than``, which has the same fault.

References: DuckLake documentation, "Maintenance" (expire_snapshots, cleanup_old_files,
delete_orphaned_files), ducklake 0.3 for duckdb 1.4.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb

from evalcore import access
from evalcore.errors import StoreBusyError, StoreError
from evalcore.store._util import _log
from evalcore.store.catalog import LAKE, _busy, _is_retryable, _masked, _sleep_backoff
from evalcore.store.schema import TABLES

# Automatic merge after each ingest (``_Maintain.compact``): a table's live data files are
# grouped in size levels [0, 256 KiB), [256 KiB, 2 MiB), [2, 16 MiB), [16, 128 MiB); a level
# holding MERGE_FANOUT files or more is merged into one file (which lands in a higher level).
# A row is so rewritten at most once per level (4 times), never the whole table per ingest,
# and every table keeps fewer than MERGE_FANOUT files per level plus its files of 128 MiB or
# more. Files of 128 MiB or more are never merged automatically.
MERGE_FANOUT = 8
MERGE_LEVELS = (0, 256 << 10, 2 << 20, 16 << 20, 128 << 20)
# the automatic merge waits this long at most for the writer lock, then leaves the merge to
# the next ingest (it never holds an ingest up)
COMPACT_LOCK_WAIT = 2.0
# the row order of a merged file, per table (fixed SQL): as an ingest writes them, so a
# file's min/max statistics still let per-task and per-run scans skip it
MERGE_ORDER = {"scores": "task, metric, item, run_id, answer_idx",
               "texts": "task, item, answer_idx, run_id",
               "vectors": "run_id, task, metric", "cells": "run_id, task, metric",
               "items": "task, item", "labels": "task, label"}

# DuckDB's memory limit while a merge runs: the merge's sort spills to DuckDB's temporary
# folder beyond it instead of growing with the table (12 slice files of 5.55M scores each:
# +0.9 GB without a limit). The limit is DuckDB's, for the whole connection, and is put back
# (reset) after the merge; reads in the meantime spill too, they do not fail.
MERGE_MEMORY_LIMIT = "128MB"

# how long a snapshot is kept after it stopped being the latest: the window in which a
# deleted run can be restored and time travel works (EVALBARS_KEEP_DAYS, --keep-days)
DEFAULT_KEEP_HISTORY = timedelta(days=30)
ENV_KEEP_DAYS = "EVALBARS_KEEP_DAYS"
DEFAULT_ORPHANS_OLDER_THAN = timedelta(days=1)
# below this an orphan file may belong to an ingest that is still running elsewhere
MIN_ORPHAN_AGE = timedelta(minutes=10)
# no read of the product lasts longer: a file or snapshot a read may still use is kept
DEFAULT_READER_GRACE = timedelta(minutes=10)

# snapshots safe to expire: older than the keep cut-off (first ?) and followed by a snapshot
# made at or before the grace cut-off (second ?)
_EXPIRABLE_SQL = (f"SELECT snapshot_id FROM {LAKE}.snapshots() "
                  "WHERE snapshot_time < CAST(? AS TIMESTAMPTZ) "
                  f"AND snapshot_id < (SELECT max(snapshot_id) FROM {LAKE}.snapshots() "
                  "WHERE snapshot_time <= CAST(? AS TIMESTAMPTZ)) ORDER BY snapshot_id")


@dataclass(frozen=True)
class MaintainReport:
    """What ``Store.maintain`` did (or, with ``dry_run``, would do).

    merged: whether small files were merged (``files_merged``: how many); snapshots_expired: catalog snapshots forgotten
    (older than ``keep_history`` and no longer current for ``reader_grace``); files_deleted:
    scheduled files (merged away, or needed only by expired snapshots) deleted once
    scheduled for ``reader_grace``; orphans_deleted: unreferenced files older than
    ``orphans_older_than``.
    """

    merged: bool
    snapshots_expired: int
    files_deleted: int
    orphans_deleted: int
    dry_run: bool
    keep_history: timedelta
    orphans_older_than: timedelta
    reader_grace: timedelta = DEFAULT_READER_GRACE
    files_merged: int = 0
    # the deleted runs (as "'name' (#id)") that can no longer be restored after this
    # maintain (the snapshot before their delete was, or with dry_run would be, expired)
    unrecoverable: tuple[str, ...] = ()


class _Maintain:
    """``Store.maintain`` and the automatic ``compact`` (see the module docstring)."""

    def maintain(self, *, merge: bool = True, keep_history: timedelta | None = None,
                 orphans_older_than: timedelta = DEFAULT_ORPHANS_OLDER_THAN,
                 reader_grace: timedelta = DEFAULT_READER_GRACE, dry_run: bool = False,
                 allow_short_orphan_age: bool = False,
                 actor: access.Actor | None = None) -> MaintainReport:
        """Merge small files, expire snapshots older than ``keep_history`` that stopped
        being current ``reader_grace`` ago, delete the scheduled files (scheduled
        ``reader_grace`` ago or more), delete orphan files older than ``orphans_older_than``.

        Each step holds the store's writer lock for its own duration (waiting up to
        ``lock_timeout`` for it), so readers and writers keep working meanwhile.
        ``dry_run`` counts without changing anything (the merge is skipped).
        ``orphans_older_than`` below ``MIN_ORPHAN_AGE`` (10 minutes) and ``reader_grace``
        below ``DEFAULT_READER_GRACE`` are refused unless ``allow_short_orphan_age`` (tests,
        a store nobody else uses): they could delete the files of an ingest or a read still
        in progress. A ``reader_grace`` of 0 deletes every scheduled file at once.

        ``keep_history`` defaults to ``keep_history_default()`` ($EVALBARS_KEEP_DAYS, else
        30 days). The report names the deleted runs that can no longer be restored once the
        snapshots are expired (``unrecoverable``). ``actor`` must be allowed to maintain
        (``access.check``: admins only).
        """
        access.check(actor, "maintain")
        if keep_history is None:
            keep_history = keep_history_default()
        if self.read_only:
            from evalcore.store.catalog import _legacy_write_error
            raise _legacy_write_error(self._target)
        if min(keep_history, orphans_older_than, reader_grace) < timedelta(0):
            raise StoreError("maintain: keep_history, orphans_older_than and reader_grace must "
                             "not be negative")
        if not allow_short_orphan_age:
            if orphans_older_than < MIN_ORPHAN_AGE:
                raise StoreError(f"maintain: orphans_older_than {orphans_older_than} is shorter "
                                 f"than {MIN_ORPHAN_AGE}; files of an ingest still running could "
                                 "be deleted")
            if reader_grace < DEFAULT_READER_GRACE:
                raise StoreError(f"maintain: reader_grace {reader_grace} is shorter than "
                                 f"{DEFAULT_READER_GRACE}; files a read still uses could be "
                                 "deleted")
        merged, files_merged = False, 0
        if merge and not dry_run:
            files_merged = self._merge_all()
            merged = True
        expired, lost = self._expire(keep_history, reader_grace, dry_run)
        deleted = self._cleanup(reader_grace, dry_run)
        now = datetime.now(timezone.utc)
        orphans = self._maintenance_call(
            f"SELECT count(*) FROM ducklake_delete_orphaned_files('{LAKE}', "
            f"dry_run => {'true' if dry_run else 'false'}, "
            "older_than => CAST(? AS TIMESTAMPTZ))", [(now - orphans_older_than).isoformat()],
            "deleting orphan files")
        return MaintainReport(merged, expired, deleted, orphans, dry_run, keep_history,
                              orphans_older_than, reader_grace, files_merged, lost)

    # ---- the steps ------------------------------------------------------------------
    def _merge_all(self) -> int:
        """Merge every table's files under MERGE_LEVELS[-1] bytes into one per table, one
        table per write transaction; the number of files merged."""
        merged = 0
        for table, files in sorted(self._live_files().items()):
            small = [path for path, size in files if size < MERGE_LEVELS[-1]]
            if len(small) >= 2:
                self._rewrite_files(table, small)
                merged += len(small)
        return merged

    def _expire(self, keep_history: timedelta, reader_grace: timedelta,
                dry_run: bool) -> tuple[int, tuple[str, ...]]:
        """Expire the snapshots the rules allow (chosen here, named by id); their number and
        the deleted runs this makes unrecoverable."""
        deleted = self.deleted_runs()

        def body(cur: duckdb.DuckDBPyConnection) -> tuple[int, tuple[str, ...]]:
            now = datetime.now(timezone.utc)
            ids = [int(r[0]) for r in cur.execute(
                _EXPIRABLE_SQL, [(now - keep_history).isoformat(),
                                 (now - reader_grace).isoformat()]).fetchall()]
            lost = _unrecoverable(deleted, set(ids))
            if not ids or dry_run:
                return len(ids), lost
            versions = ", ".join(f"{i:d}" for i in ids)
            cur.execute(f"SELECT count(*) FROM ducklake_expire_snapshots('{LAKE}', "
                        f"versions => [{versions}])").fetchall()
            return len(ids), lost
        return self._locked(body, "expiring old snapshots")

    def _cleanup(self, reader_grace: timedelta, dry_run: bool) -> int:
        """Delete the files scheduled ``reader_grace`` ago or more; their number."""
        dry = "true" if dry_run else "false"
        if reader_grace <= timedelta(0):
            return self._maintenance_call(
                f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', dry_run => {dry}, "
                "cleanup_all => true)", [], "deleting old files")
        cutoff = datetime.now(timezone.utc) - reader_grace
        if self.kind in ("local", "sqlite"):
            # day resolution of the SQLite catalog's comparison (module docstring): a cut-off
            # selects every file scheduled on its day or before, so it is the last instant of
            # the day before the grace cut-off's day
            cutoff = cutoff.replace(hour=0, minute=0, second=0, microsecond=0) - \
                timedelta(microseconds=1)
        return self._maintenance_call(
            f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', dry_run => {dry}, "
            "older_than => CAST(? AS TIMESTAMPTZ))", [cutoff.isoformat()], "deleting old files")

    # ---- the automatic merge --------------------------------------------------------
    def _live_files(self) -> dict[str, list[tuple[str, int]]]:
        """Each store table's live data files as (path, bytes), at the latest snapshot."""
        out: dict[str, list[tuple[str, int]]] = {}
        with self._read("listing the store's files") as con:
            for table in TABLES:
                rows = con.execute(f"SELECT data_file, data_file_size_bytes FROM "
                                   f"ducklake_list_files('{LAKE}', ?)", [table]).fetchall()
                if rows:
                    out[table] = [(str(p), int(n)) for p, n in rows]
        return out

    def file_counts(self) -> dict[str, tuple[int, int]]:
        """Live data files per table: {table: (files, bytes)} (from the DuckLake catalog)."""
        return {t: (len(f), sum(n for _, n in f)) for t, f in self._live_files().items()}

    def _rewrite_files(self, table: str, paths: list[str], lock_wait: float | None = None) -> None:
        """Merge the data files ``paths`` of ``table`` into one, in one write transaction:
        their live rows are inserted again (in ``MERGE_ORDER``) and their rows deleted,
        which ends the old files at the new snapshot (no delete file is written)."""
        if table not in TABLES:
            raise StoreError(f"compaction: {table!r} is not a store table")
        order = MERGE_ORDER.get(table)
        order_sql = f" ORDER BY {order}" if order else ""

        def body(cur: duckdb.DuckDBPyConnection) -> None:
            cur.execute(f"INSERT INTO {table} SELECT * FROM {table} "
                        f"WHERE list_contains(?, filename){order_sql}", [paths])
            cur.execute(f"DELETE FROM {table} WHERE list_contains(?, filename)", [paths])

        with self._memory_limit(MERGE_MEMORY_LIMIT):
            self._write(body, f"merging {len(paths)} small files of {table}", checks=(),
                        lock_wait=lock_wait)

    @contextlib.contextmanager
    def _memory_limit(self, limit: str):
        """DuckDB's ``memory_limit`` set to ``limit`` (a fixed string) inside the block and
        reset to DuckDB's default after it, also after an error (the store connection never
        sets a limit of its own, so the default is what it had)."""
        if not re.fullmatch(r"[0-9]+(KB|MB|GB)", limit):   # a size, never free text in SQL
            raise StoreError(f"memory limit {limit!r}: expected a size such as '128MB'")
        cur = self._cursor()
        try:
            cur.execute(f"SET memory_limit = '{limit}'")
        finally:
            cur.close()
        try:
            yield
        finally:
            cur = self._cursor()
            try:
                cur.execute("RESET memory_limit")
            finally:
                cur.close()

    def compact(self) -> list[tuple[str, int]]:
        """The automatic merge after an ingest (see MERGE_LEVELS): for each table and each
        size level, lowest first, merge the level's files when there are MERGE_FANOUT or more
        (``_rewrite_files``: an ordinary write under the writer lock; old snapshots keep the
        old files until ``maintain`` expires them). Best effort: when the lock stays taken
        for ``COMPACT_LOCK_WAIT`` seconds, or a merge fails, the rest is left to the next
        ingest. Returns the merges done as (table, level upper bound in bytes)."""
        if self.read_only:
            return []
        done: list[tuple[str, int]] = []
        try:
            live = self._live_files()
        except StoreError as exc:
            _log.debug("compact: cannot list files (%s)", exc)
            return done
        for table in sorted(live):
            files = sorted(live[table], key=lambda f: f[1])
            for lo, hi in zip(MERGE_LEVELS, MERGE_LEVELS[1:]):
                level = [f for f in files if lo <= f[1] < hi]
                if len(level) < MERGE_FANOUT:
                    continue
                try:
                    self._rewrite_files(table, [p for p, _ in level],
                                        lock_wait=min(self.lock_timeout, COMPACT_LOCK_WAIT))
                    done.append((table, hi))
                except StoreBusyError as exc:
                    _log.debug("compact %s: skipped, the store is busy (%s)", table, exc)
                    return done
                except StoreError as exc:
                    _log.debug("compact %s: merge skipped (%s)", table, str(exc)[:200])
                    break
                # the merged file joins a higher level: recount (its size is about the sum)
                files = sorted([f for f in files if not lo <= f[1] < hi]
                               + [("", sum(n for _, n in level))], key=lambda f: f[1])
        return done

    # ---- running a step -------------------------------------------------------------
    def _maintenance_call(self, sql: str, params: list, action: str) -> int:
        """One DuckLake maintenance function returning a count, under the writer lock."""
        return self._locked(lambda cur: int(cur.execute(sql, params).fetchall()[0][0]), action)

    def _locked(self, body, action: str, timeout: float | None = None):
        """``body(cursor)`` under the writer lock (waited for up to ``timeout``, default
        ``lock_timeout``); a DuckLake maintenance function commits by itself. Retried while
        the catalog itself reports a lock; errors in words (``store.faults``)."""
        wait = self.lock_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        with self._write_lock(action, wait):
            attempt = 0
            while True:
                cur = self._cursor()
                try:
                    result = body(cur)
                    self._repin_reads()
                    return result
                except duckdb.Error as exc:
                    if _is_retryable(exc):
                        if _sleep_backoff(attempt, deadline):
                            attempt += 1
                            continue
                        raise _busy(f"{_masked(self._target)}: {action} could not run within "
                                    f"{wait:g} s") from exc
                    raise self._error(exc, action) from exc
                finally:
                    cur.close()


def keep_history_default() -> timedelta:
    """How long ``maintain`` keeps snapshots: $EVALBARS_KEEP_DAYS days (a number, 0 or
    more), else ``DEFAULT_KEEP_HISTORY`` (30 days)."""
    text = os.environ.get(ENV_KEEP_DAYS, "").strip()
    if not text:
        return DEFAULT_KEEP_HISTORY
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0:
        raise StoreError(f"{ENV_KEEP_DAYS}={text!r}: expected a number of days, 0 or more")
    return timedelta(days=days)


def _unrecoverable(deleted: list, expiring: set[int]) -> tuple[str, ...]:
    """The deleted runs (``Store.deleted_runs`` entries, all restorable now) whose restore
    snapshot, the one just before the delete (``history._snapshot_before``), is among the
    ``expiring`` snapshot ids."""
    return tuple(f"{name!r} (#{rid})" for entry in deleted if entry.snapshot - 1 in expiring
                 for rid, name in entry.runs)
