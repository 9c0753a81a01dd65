"""Every read of the product sees one snapshot: a ``one_version`` block (a page interaction, a
CLI command, a report) reads the snapshot it started at while another process writes, in
every thread it hands the version to; a read outside a block is one transaction."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from evalcore.errors import StoreError

from .conftest import make_run
from .test_concurrency import _ingest_proc


def _other_process_ingests(store, name: str) -> None:
    proc = _ingest_proc(store, name)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err


def _counts(store) -> tuple:
    """What a read sees: run names, score rows joined to their items, vector rows."""
    with store._read() as con:
        names = sorted(n for (n,) in con.execute("SELECT name FROM runs").fetchall())
        scores = con.execute("SELECT count(*) FROM scores s JOIN items i "
                             "ON i.item = s.item").fetchall()[0][0]
        vectors = con.execute("SELECT count(*) FROM vectors").fetchall()[0][0]
    return names, scores, vectors


def test_a_block_reads_the_snapshot_it_started_at_while_another_process_writes(store):
    store.ingest([make_run("a", files=["a"])])
    with store.one_version() as version:
        before = _counts(store)
        runs = store.runs()["name"].tolist()
        _other_process_ingests(store, "cli")
        # every kind of read inside the block: raw SQL, the memoized small tables, scores
        assert _counts(store) == before == (["a"], 3, 1)
        assert store.runs()["name"].tolist() == runs == ["a"]
        assert store.tasks()["run_id"].tolist() == [1]
        assert len(store.scores([1, 2])) == 3
        assert store.version() == version
    assert _counts(store) == (["a", "cli-0"], 6, 2)            # the next block sees the write
    assert store.runs()["name"].tolist() == ["a", "cli-0"]


def test_a_thread_given_the_version_reads_the_same_snapshot(store):
    store.ingest([make_run("a", files=["a"])])
    seen: list = []

    def worker(version: str) -> None:
        with store.one_version(version):
            seen.append(_counts(store))

    with store.one_version() as version:
        _counts(store)
        _other_process_ingests(store, "cli")
        t = threading.Thread(target=worker, args=(version,))
        t.start()
        t.join()
    assert seen == [(["a"], 3, 1)]


def test_a_read_outside_a_block_is_one_transaction(store):
    store.ingest([make_run("a", files=["a"])])
    with store._read() as con:
        first = con.execute("SELECT count(*) FROM runs").fetchall()
        _other_process_ingests(store, "cli")
        assert con.execute("SELECT count(*) FROM runs").fetchall() == first == [(1,)]
    assert len(store.runs()) == 2


def test_unused_snapshot_catalogs_are_detached(store):
    from evalcore.store import snapshots
    from evalcore.store.catalog import _connection
    con = _connection(store._target, store.lock_timeout)
    for i in range(4):
        store.ingest([make_run(f"r{i}", files=[f"r{i}"])])
        with store.one_version():
            _counts(store)
    attached = snapshots.attached_snapshots(con)
    assert len(attached) <= snapshots.KEEP_IDLE and all(n == 0 for n in attached.values())


def test_a_snapshot_expired_under_a_block_is_named_in_words(store):
    store.ingest([make_run("a", files=["a"])])
    with store.one_version():                         # pinned, not read yet
        store.ingest([make_run("b", files=["b"])])
        store.maintain(keep_history=timedelta(0), reader_grace=timedelta(0),
                       allow_short_orphan_age=True)
        with pytest.raises(StoreError, match="no longer kept.*read again"):
            _counts(store)


def test_pin_reads_keeps_one_snapshot_until_the_object_writes(store_location):
    """What a CLI command does (``_open_store`` pins its reads): every read sees the store
    of its first read, whoever writes meanwhile; its own write moves the pin on."""
    from argparse import Namespace

    from evalcore.commands._shared import _open_store
    store = store_location.open()
    store.ingest([make_run("a", files=["a"])])
    store.pin_reads()
    assert _counts(store) == (["a"], 3, 1)
    _other_process_ingests(store, "cli")
    assert _counts(store) == (["a"], 3, 1) and store.runs()["name"].tolist() == ["a"]
    store.ingest([make_run("b", files=["b"])])          # its own write: the pin moves on
    assert _counts(store) == (["a", "b", "cli-0"], 9, 3)
    cli_store = _open_store(Namespace(store=store_location.location,
                                      data_path=store_location.data_path, lock_timeout=5.0))
    assert cli_store.version() == cli_store.version() == store.version()
    assert "_session" in cli_store.__dict__
