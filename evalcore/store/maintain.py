"""Housekeeping of a DuckLake store: compact small files, free the space of deleted runs,
remove files a killed writer left behind.

Every write adds Parquet files and one catalog snapshot; nothing is rewritten in place. So:

* many small ingests leave many small files -> ``ducklake_merge_adjacent_files`` merges
  them (a new snapshot; the old files become unreferenced, not deleted yet);
* a deleted run (and a merge) leaves files that only old snapshots still reference. They
  use disk until ``ducklake_expire_snapshots`` forgets the snapshots older than
  ``keep_history`` and ``ducklake_cleanup_old_files`` deletes the files no remaining
  snapshot needs. **Time travel** (``AT (VERSION => n)``) to an expired snapshot is no
  longer possible afterwards; the current content is never touched;
* a writer killed mid-ingest (kill -9, power loss) never commits, so the catalog is
  unchanged, but the Parquet files it had written stay in the data folder as orphans.
  ``ducklake_delete_orphaned_files`` removes files that no snapshot references and that are
  older than ``orphans_older_than``: a file a concurrent writer has just written but not
  yet committed is also unreferenced, so the age limit must be safely longer than any
  ingest (default one day). ``cleanup_all`` is never used: on a shared store it would
  delete files another writer is about to commit.

References: DuckLake documentation, "Maintenance" (merge_adjacent_files, expire_snapshots,
cleanup_old_files, delete_orphaned_files), ducklake 0.3 for duckdb 1.4.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import duckdb

from evalcore.errors import StoreError
from evalcore.store._util import _log
from evalcore.store.catalog import (
    LAKE,
    _busy,
    _is_retryable,
    _sleep_backoff,
    _store_error,
)

# Automatic merge after each ingest (``_Maintain.compact``): a table's live data files are
# grouped in size levels [0, 256 KiB), [256 KiB, 2 MiB), [2, 16 MiB), [16, 128 MiB); a level
# holding MERGE_FANOUT files or more is merged into one file (which lands in a higher level).
# A row is so rewritten at most once per level (4 times), never the whole table per ingest,
# and every table keeps fewer than MERGE_FANOUT files per level plus its files of 128 MiB or
# more. Files of 128 MiB or more are never merged automatically.
MERGE_FANOUT = 8
MERGE_LEVELS = (0, 256 << 10, 2 << 20, 16 << 20, 128 << 20)

DEFAULT_KEEP_HISTORY = timedelta(days=7)
DEFAULT_ORPHANS_OLDER_THAN = timedelta(days=1)
# below this an orphan file may belong to an ingest that is still running elsewhere
MIN_ORPHAN_AGE = timedelta(minutes=10)


# live data files of the store's tables (the catalog's own tables; SQLite and PostgreSQL alike)
_LIVE_FILES_SQL = ("SELECT t.table_name, f.file_size_bytes FROM {meta}.ducklake_data_file f "
                   "JOIN {meta}.ducklake_table t USING (table_id) "
                   "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL")


@dataclass(frozen=True)
class MaintainReport:
    """What ``Store.maintain`` did (or, with ``dry_run``, would do).

    merged: whether small files were merged; snapshots_expired: catalog snapshots forgotten
    (older than ``keep_history``); files_deleted: old files no kept snapshot references;
    orphans_deleted: unreferenced files older than ``orphans_older_than``.
    """

    merged: bool
    snapshots_expired: int
    files_deleted: int
    orphans_deleted: int
    dry_run: bool
    keep_history: timedelta
    orphans_older_than: timedelta


class _Maintain:
    """``Store.maintain`` (see the module docstring)."""

    def maintain(self, *, merge: bool = True, keep_history: timedelta = DEFAULT_KEEP_HISTORY,
                 orphans_older_than: timedelta = DEFAULT_ORPHANS_OLDER_THAN,
                 dry_run: bool = False, allow_short_orphan_age: bool = False) -> MaintainReport:
        """Merge small files, expire snapshots older than ``keep_history`` and delete the
        files only they needed, delete orphan files older than ``orphans_older_than``.

        Each step is its own catalog transaction (retried while the catalog is locked), so
        readers and writers keep working meanwhile. ``dry_run`` counts without changing
        anything (the merge is skipped). ``orphans_older_than`` below ``MIN_ORPHAN_AGE``
        (10 minutes) is refused unless ``allow_short_orphan_age`` (tests, a store nobody
        else writes to): it could delete the files of an ingest still in progress.
        """
        if self.read_only:
            from evalcore.store.catalog import _legacy_write_error
            raise _legacy_write_error(self._target)
        if keep_history < timedelta(0) or orphans_older_than < timedelta(0):
            raise StoreError("maintain: keep_history and orphans_older_than must not be negative")
        if orphans_older_than < MIN_ORPHAN_AGE and not allow_short_orphan_age:
            raise StoreError(f"maintain: orphans_older_than {orphans_older_than} is shorter than "
                             f"{MIN_ORPHAN_AGE}; files of an ingest still running could be deleted")
        now = datetime.now(timezone.utc)
        expire_before = (now - keep_history).isoformat()
        orphan_before = (now - orphans_older_than).isoformat()
        dry = "true" if dry_run else "false"
        merged = False
        if merge and not dry_run:
            self._maintenance_call(f"SELECT count(*) FROM ducklake_merge_adjacent_files('{LAKE}')",
                                   [], "merging small files")
            merged = True
        expired = self._maintenance_call(
            f"SELECT count(*) FROM ducklake_expire_snapshots('{LAKE}', dry_run => {dry}, "
            "older_than => CAST(? AS TIMESTAMPTZ))", [expire_before], "expiring old snapshots")
        # files are scheduled for deletion when their last snapshot expires (just now, for
        # the snapshots expired above): the cut-off is taken after the expiry, so they go in
        # this same run. (With the expiry's own cut-off a PostgreSQL catalog, whose schedule
        # time is later than it, deleted none.)
        cleanup_before = datetime.now(timezone.utc).isoformat()
        deleted = self._maintenance_call(
            f"SELECT count(*) FROM ducklake_cleanup_old_files('{LAKE}', dry_run => {dry}, "
            "older_than => CAST(? AS TIMESTAMPTZ))", [cleanup_before], "deleting old files")
        orphans = self._maintenance_call(
            f"SELECT count(*) FROM ducklake_delete_orphaned_files('{LAKE}', dry_run => {dry}, "
            "older_than => CAST(? AS TIMESTAMPTZ))", [orphan_before], "deleting orphan files")
        return MaintainReport(merged, expired, deleted, orphans, dry_run, keep_history,
                              orphans_older_than)

    def file_counts(self) -> dict[str, tuple[int, int]]:
        """Live data files per table: {table: (files, bytes)} (from the DuckLake catalog)."""
        with self._read("counting the store's files") as con:
            rows = con.execute(_LIVE_FILES_SQL.format(meta=f"__ducklake_metadata_{LAKE}")).fetchall()
        out: dict[str, list[int]] = {}
        for table, size in rows:
            c = out.setdefault(table, [0, 0])
            c[0] += 1
            c[1] += int(size)
        return {t: (c[0], c[1]) for t, c in out.items()}

    def compact(self) -> list[tuple[str, int]]:
        """The automatic merge after an ingest (see MERGE_LEVELS): for each table and each
        size level, lowest first, merge the level's files when there are MERGE_FANOUT or more.
        Each merge is its own DuckLake transaction (old snapshots keep their files until
        ``maintain`` expires them). Best effort: a merge that fails (e.g. another process is
        merging the same files) is skipped and left to the next ingest. Returns the merges
        done as (table, level upper bound in bytes)."""
        if self.read_only:
            return []
        done: list[tuple[str, int]] = []
        try:
            with self._read("counting the store's files") as con:
                rows = con.execute(
                    _LIVE_FILES_SQL.format(meta=f"__ducklake_metadata_{LAKE}")).fetchall()
        except StoreError as exc:
            _log.debug("compact: cannot list files (%s)", exc)
            return done
        sizes: dict[str, list[int]] = {}
        for table, size in rows:
            sizes.setdefault(table, []).append(int(size))
        for table in sorted(sizes):
            files = sorted(sizes[table])
            for lo, hi in zip(MERGE_LEVELS, MERGE_LEVELS[1:]):
                level = [f for f in files if lo <= f < hi]
                if len(level) < MERGE_FANOUT:
                    continue
                cur = self._cursor()
                try:
                    cur.execute(f"CALL ducklake_merge_adjacent_files('{LAKE}', ?, "
                                "min_file_size => ?, max_file_size => ?)", [table, lo, hi])
                    done.append((table, hi))
                except duckdb.Error as exc:
                    _log.debug("compact %s: merge skipped (%s)", table, str(exc)[:200])
                    break
                finally:
                    cur.close()
                # the merged file joins a higher level: recount (bytes are a lower bound of
                # its size, so the level test below may merge it again only when it belongs)
                files = sorted([f for f in files if not lo <= f < hi] + [sum(level)])
        return done

    def _maintenance_call(self, sql: str, params: list, action: str) -> int:
        """One DuckLake maintenance function (it commits by itself); retried while locked."""
        deadline = time.monotonic() + self.lock_timeout
        attempt = 0
        while True:
            cur = self._cursor()
            try:
                return int(cur.execute(sql, params).fetchall()[0][0])
            except duckdb.Error as exc:
                if _is_retryable(exc):
                    if _sleep_backoff(attempt, deadline):
                        attempt += 1
                        continue
                    raise _busy(f"{self.location}: {action} could not run within "
                                f"{self.lock_timeout:g} s") from exc
                raise _store_error(exc, action) from exc
            finally:
                cur.close()
