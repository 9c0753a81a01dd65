"""Another process ingests while this one reads; a held catalog lock means "busy" for writes
only (reads go on); concurrent writers all land."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalcore.errors import StoreError
from evalcore.store import Store

from .conftest import make_run, store_fingerprint

CHILD = Path(__file__).with_name("_child.py")


def _ingest_proc(store: Store, name: str, count: int = 1, timeout: float = 60.0) -> subprocess.Popen:
    env = dict(os.environ)
    if store.data_path and store.kind != "local":
        env["EVALBARS_DATA_PATH"] = store.data_path
    return subprocess.Popen([sys.executable, str(CHILD), "ingest", store.location, name, str(count),
                             str(timeout)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def test_other_process_ingests_while_this_one_is_mid_read(store):
    store.ingest([make_run("dashboard-run", files=["d"])])
    with store._read() as cur:  # the dashboard is in the middle of a query
        proc = _ingest_proc(store, "cli")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        # a read that was in flight goes on; the next read sees the new snapshot
        assert cur.execute("SELECT count(*) FROM runs").fetchall()[0][0] in (1, 2)
    assert store.runs()["name"].tolist() == ["dashboard-run", "cli-0"]


def test_reads_keep_working_while_another_process_ingests_repeatedly(store):
    proc = _ingest_proc(store, "batch", count=3)
    seen, errors = [], []

    def reader():
        while proc.poll() is None:
            try:
                seen.append(len(store.runs()))
                store.cell_stats()
            except Exception as exc:  # noqa: BLE001 - any failure fails the test
                errors.append(exc)
            time.sleep(0.01)

    t = threading.Thread(target=reader)
    t.start()
    _, err = proc.communicate(timeout=120)
    t.join()
    assert proc.returncode == 0, err
    assert errors == []
    assert seen == sorted(seen) and len(seen) > 2      # counts only grow
    assert len(store.runs()) == 3 and store.cell_stats()["n"].tolist() == [3] * 3


def test_two_processes_ingesting_at_once_both_land(store):
    procs = [_ingest_proc(store, "p1", count=2), _ingest_proc(store, "p2", count=2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert sorted(store.runs()["name"]) == ["p1-0", "p1-1", "p2-0", "p2-1"]
    assert store.write_counter() == 1 + 4          # the creating transaction + 4 ingests


def test_held_catalog_lock_makes_writes_busy_then_a_retry_succeeds(store):
    if store.kind != "local":
        pytest.skip("the SQLite catalog lock is a local-store matter")
    store.ingest([make_run("a", files=["a"])])
    before = store_fingerprint(store)
    holder = subprocess.Popen([sys.executable, str(CHILD), "hold-lock",
                               str(store.path / "catalog.sqlite")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        patient = store
        patient.lock_timeout = 0.5
        t0 = time.monotonic()
        with pytest.raises(StoreError) as err:
            patient.ingest([make_run("b", files=["b"])])
        assert "store is busy (locked by another process)" in str(err.value)
        assert getattr(err.value, "busy", False)
        assert 0.4 < time.monotonic() - t0 < 10
        assert patient.runs()["name"].tolist() == ["a"]     # reads go on (WAL)
        assert store_fingerprint(store) == before

        # a patient ingest waits; the holder lets go after a moment; the ingest lands
        patient.lock_timeout = 30.0
        result: dict = {}
        t = threading.Thread(target=lambda: result.setdefault("report", patient.ingest(
            [make_run("b", files=["b"])])))
        t.start()
        time.sleep(0.5)
        holder.stdin.close()
        t.join(timeout=60)
        assert result["report"].runs["status"].tolist() == ["added"]
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        holder.stdout.close()   # no ResourceWarning for the pipe (warnings are errors)
    assert store.runs()["name"].tolist() == ["a", "b"]


def test_threads_of_one_process_read_while_another_thread_writes(store):
    """DuckDB shares one instance per path inside a process: reads must never see a stale
    file after a write of the same process, and never fail while it swaps the file."""
    errors, seen = [], []
    done = threading.Event()

    def reader():
        while not done.is_set():
            try:
                seen.append(len(store.runs()))
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(4):
            store.ingest([make_run(f"w{i}", files=[f"w{i}"])])
            assert len(store.runs()) == i + 1          # the writer sees its own write at once
    finally:
        done.set()
        for t in threads:
            t.join()
    assert errors == [] and seen and max(seen) <= 4


def test_same_file_from_two_processes_at_once_lands_once(store):
    """Idempotent re-ingest under concurrency: two writers racing with the same file make one
    run (the loser's transaction is retried and then finds the file stored)."""
    procs = [_ingest_proc(store, "same"), _ingest_proc(store, "same")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert store.runs()["name"].tolist() == ["same-0"]
    assert store.cell_stats()["n"].tolist() == [3]


def test_first_ingests_racing_set_the_texts_row_group_option_once(store):
    """Two writes that both find the texts table without its row-group option and both set
    it (what two first ingests with texts do) overlap: on PostgreSQL the write_counter update
    makes them conflict and the second re-runs and finds the option (two set_option calls
    that both committed would leave a duplicate row); on SQLite the second waits for the
    catalog's write lock and re-runs. Either way the catalog holds the option once."""
    from evalcore.store.write import LABELS_COMPRESSION, TEXT_ROW_GROUP, _table_options

    # on SQLite the second write cannot get that far (one writer at a time: it waits on the
    # lock and re-runs), so the first one waits 1 s only, well inside the 5 s lock timeout
    barrier = threading.Barrier(2, timeout=1)
    bodies: list[str] = []

    def body(con) -> None:
        _table_options(con, True)
        bodies.append(threading.current_thread().name)
        try:
            barrier.wait()           # both transactions open at once (first attempts only)
        except threading.BrokenBarrierError:
            pass

    threads = [threading.Thread(target=store._write, args=(body, "test"), name=f"w{i}")
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(set(bodies)) == ["w0", "w1"]      # both writes ran their body to the end
    with store._read() as con:
        rows = con.execute("SELECT value, scope_entry FROM lake.options() "
                           "WHERE option_name = 'parquet_row_group_size'").fetchall()
    assert rows == [(str(TEXT_ROW_GROUP), "main.texts")]
    with store._read() as con:   # the labels' compression too, once
        rows = con.execute("SELECT value, scope_entry FROM lake.options() "
                           "WHERE option_name = 'parquet_compression'").fetchall()
    assert rows == [(LABELS_COMPRESSION, "main.labels")]
    assert store.write_counter() == 1 + 2
    store.ingest([make_run("after")])               # and the store takes texts as before
    assert store.runs()["name"].tolist() == ["after"]
