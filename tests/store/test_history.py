"""History (author and message in each snapshot) and restore of a deleted run, on a local
and a PostgreSQL catalog."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from evalcore.access import Actor, Role
from evalcore.analysis import leaderboard
from evalcore.errors import StoreError
from tests.store.conftest import make_run, store_fingerprint

ALICE = Actor("alice", Role.UPLOADER, "alice@lab.org")
BOB = Actor("bob", Role.ADMIN, "bob@lab.org")


def _cells(store) -> pd.DataFrame:
    board = leaderboard(store, n_resamples=200)
    return board.cells.sort_values(["run_id", "task"]).reset_index(drop=True)


def _two_runs(store):
    store.ingest([make_run("a", scores=[1.0, 0.0, 1.0, 1.0], files=["a.json"]),
                  make_run("b", scores=[0.0, 0.0, 1.0, 0.0], files=["b.json"],
                           extra_cells=[("t2", "acc", [1.0, 1.0, 0.0])])], actor=ALICE)


def test_history_records_author_and_what(store):
    _two_runs(store)
    store.rename_run("a", "a-renamed", actor=ALICE)
    store.set_tags("b", ["seed=1"], actor=BOB)
    store.delete_run("b", actor=BOB)
    got = store.history()
    assert [(e.author, e.op) for e in got] == [("bob", "delete"), ("bob", "tag"),
                                               ("alice", "rename"), ("alice", "ingest")]
    assert got[-1].runs == ((1, "a"), (2, "b"))
    assert "added runs 'a' (#1), 'b' (#2)" in got[-1].message
    assert got[0].runs == ((2, "b"),) and got[0].message == "deleted run 'b' (#2)"
    assert got[2].message == "renamed run 'a' (#1) to 'a-renamed'"
    assert [e.op for e in store.history(run_id=1)] == ["rename", "ingest"]
    assert got[0].time >= got[-1].time
    # evalbars' own writes (table creation) only with include_system
    assert any(e.op == "system" for e in store.history(include_system=True, limit=None))
    assert store.run_owner(1) == "alice@lab.org"


def test_restore_brings_back_identical_numbers(store):
    _two_runs(store)
    before = _cells(store)
    store.delete_run("b", actor=BOB)
    assert set(_cells(store)["run"]) == {"a"}
    restored = store.restore_run("b", actor=BOB)
    assert (restored.run_id, restored.name, restored.deleted.author) == (2, "b", "bob")
    after = _cells(store)
    pd.testing.assert_frame_equal(before, after)        # scores, se, low, high: identical
    assert store.run_owner(2) == "alice@lab.org"        # the uploader comes back too
    assert store.history(limit=1)[0].op == "restore"
    with pytest.raises(StoreError, match="nothing to restore"):
        store.restore_run(2, actor=BOB)


def test_restore_refused_when_the_name_or_files_are_taken(store):
    _two_runs(store)
    store.delete_run("b", actor=BOB)
    store.ingest([make_run("b", scores=[1.0], files=["other.json"])])
    fp = store_fingerprint(store)
    with pytest.raises(StoreError, match="has that name now"):
        store.restore_run("#2", actor=BOB)
    assert store_fingerprint(store) == fp
    store.delete_run("b")                    # the new "b" (#3)
    store.ingest([make_run("b2", scores=[1.0], files=["b.json"])])   # b's file again
    fp = store_fingerprint(store)
    with pytest.raises(StoreError, match="uploaded again"):
        store.restore_run(2, actor=BOB)
    assert store_fingerprint(store) == fp


def test_unknown_delete_is_refused(store):
    _two_runs(store)
    with pytest.raises(StoreError, match="no deleted run"):
        store.restore_run("zzz")


def test_maintain_names_runs_it_makes_unrecoverable(store):
    _two_runs(store)
    store.delete_run("a", actor=BOB)
    store.ingest([make_run("c", scores=[1.0], files=["c.json"])])  # a later snapshot
    dry = store.maintain(keep_history=timedelta(0), reader_grace=timedelta(0), dry_run=True,
                         allow_short_orphan_age=True, merge=False)
    assert dry.unrecoverable == ("'a' (#1)",)
    kept = store.maintain(keep_history=timedelta(days=30), reader_grace=timedelta(0),
                          allow_short_orphan_age=True, merge=False)
    assert kept.unrecoverable == () and kept.snapshots_expired == 0
    store.maintain(keep_history=timedelta(0), reader_grace=timedelta(0),
                   allow_short_orphan_age=True, merge=False)
    with pytest.raises(StoreError, match="no deleted run|no longer kept"):
        store.restore_run("a", actor=BOB)


def test_keep_days_default_and_environment(monkeypatch):
    from evalcore.store.maintain import keep_history_default
    monkeypatch.delenv("EVALBARS_KEEP_DAYS", raising=False)
    assert keep_history_default() == timedelta(days=30)
    monkeypatch.setenv("EVALBARS_KEEP_DAYS", "2.5")
    assert keep_history_default() == timedelta(days=2.5)
    monkeypatch.setenv("EVALBARS_KEEP_DAYS", "soon")
    with pytest.raises(StoreError, match="EVALBARS_KEEP_DAYS"):
        keep_history_default()


def test_restore_never_uses_an_older_snapshot_than_the_one_before_the_delete(store):
    """With the snapshot just before the delete expired, an older kept snapshot holds the
    run as it was earlier (here: without its tag); restoring from it would bring back a
    different run, so the restore is refused."""
    _two_runs(store)
    store.set_tags("a", ["seed=1"], actor=BOB)
    store.delete_run("a", actor=BOB)
    deleted = store.history(limit=1)[0]
    assert [e.snapshot for e in store.deleted_runs()] == [deleted.snapshot]
    store._locked(lambda cur: cur.execute(
        "SELECT count(*) FROM ducklake_expire_snapshots('lake', versions => "
        f"[{deleted.snapshot - 1:d}])").fetchall(), "test: expire one snapshot")
    assert store.deleted_runs() == []
    fp = store_fingerprint(store)
    with pytest.raises(StoreError, match="no longer kept"):
        store.restore_run("a", actor=BOB)
    assert store_fingerprint(store) == fp
