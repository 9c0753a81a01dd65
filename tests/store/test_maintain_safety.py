"""``maintain`` and the automatic merge never take away what a read may still use: no
snapshot that was the latest within the reader grace period is expired, no file is deleted
before it has been unneeded for that long, and merges are ordinary writes (old snapshots
keep their old files), not DuckLake's ``merge_adjacent_files``."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from evalcore.errors import StoreError

from .conftest import make_run
from .test_concurrency import _ingest_proc


def _files(store) -> set[Path]:
    return set(Path(store.data_path).rglob("*.parquet"))


def _time_travel(store, snapshot: int) -> int:
    with store._read() as con:
        return con.execute(f"SELECT count(*) FROM lake.runs AT (VERSION => {int(snapshot)})"
                           ).fetchall()[0][0]


def _snapshot_ids(store) -> set[int]:
    with store._read() as con:
        return {i for (i,) in con.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()}


def test_maintain_keeps_every_snapshot_and_file_a_read_may_use(store):
    older = _snapshot_ids(store)       # (an empty store made from a template may be old)
    store.ingest([make_run("r0", files=["r0"])])
    first = max(_snapshot_ids(store))
    for i in range(1, 9):               # the 8th ingest's merge ends eight small files per table
        store.ingest([make_run(f"r{i}", files=[f"r{i}"])])
    store.delete_run("r0")
    before, ours = _files(store), _snapshot_ids(store) - older
    report = store.maintain(keep_history=timedelta(0))         # the CLI's --keep-days 0
    assert ours <= _snapshot_ids(store) and report.files_deleted == 0
    assert before <= _files(store)                              # nothing deleted
    assert _time_travel(store, first) == 1                      # time travel still works
    assert len(store.runs()) == 8
    # without a grace period (a store nobody else uses) the same files and snapshots go
    report = store.maintain(keep_history=timedelta(0), reader_grace=timedelta(0),
                            allow_short_orphan_age=True)
    assert report.snapshots_expired > 0 and report.files_deleted > 0
    assert len(_files(store)) < len(before) and len(store.runs()) == 8


def test_merges_are_ordinary_writes_and_old_snapshots_keep_their_files(store):
    for i in range(9):
        store.ingest([make_run(f"r{i}", files=[f"r{i}"])])
    with store._read() as con:
        changes = [c for (c,) in con.execute(
            "SELECT changes FROM lake.snapshots() ORDER BY snapshot_id").fetchall()]
        last_before_merge = con.execute(
            "SELECT max(snapshot_id) FROM lake.snapshots()").fetchall()[0][0]
    assert not any("compacted_table" in c for c in changes if c), changes
    store.maintain(keep_history=timedelta(0))                   # merges every small file
    counts = store.file_counts()
    assert counts["scores"][0] == 1 and counts["runs"][0] == 1
    assert _time_travel(store, last_before_merge) == 9
    assert len(store.scores(list(range(1, 10)))) == 27


def test_a_block_pinned_before_maintain_reads_on(store, store_location):
    store.ingest([make_run("a", files=["a"])])
    other = store_location.open(lock_timeout=store.lock_timeout)
    def seen() -> tuple:
        with store._read() as con:
            rows = con.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM "
                               "scores s JOIN items i ON i.item = s.item)").fetchall()[0]
        return store.runs()["name"].tolist(), len(store.scores([1, 2, 3, 4])), rows

    with store.one_version():
        before = seen()
        proc = _ingest_proc(store, "cli", count=3)
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        other.maintain(keep_history=timedelta(0))
        assert seen() == before == (["a"], 3, (1, 3))
    assert seen() == (["a", "cli-0", "cli-1", "cli-2"], 12, (4, 12))


def test_a_reader_grace_shorter_than_ten_minutes_is_refused(store):
    with pytest.raises(StoreError, match="files a read still uses could be deleted"):
        store.maintain(reader_grace=timedelta(minutes=1))
