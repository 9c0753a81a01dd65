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
from evalcore.store.catalog import (
    LAKE,
    _busy,
    _is_retryable,
    _sleep_backoff,
    _store_error,
)

DEFAULT_KEEP_HISTORY = timedelta(days=7)
DEFAULT_ORPHANS_OLDER_THAN = timedelta(days=1)
# below this an orphan file may belong to an ingest that is still running elsewhere
MIN_ORPHAN_AGE = timedelta(minutes=10)


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
