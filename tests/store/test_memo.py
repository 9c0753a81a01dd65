"""Small-table reads are memoized per snapshot inside a Store object: a repeat read does
not query the tables, a write (this process or another Store object) is seen at once, and
callers get copies they may mutate."""

from __future__ import annotations

import gc
import threading

from .conftest import count_reads, make_run, summary


def _in_threads(fn, n: int) -> list[BaseException]:
    """Run ``fn`` in ``n`` threads at once; the exceptions they raised."""
    errors: list[BaseException] = []

    def guarded():
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - collected and returned
            errors.append(exc)

    threads = [threading.Thread(target=guarded) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_repeat_reads_are_served_per_snapshot_and_writes_invalidate(store, store_location,
                                                                    monkeypatch):
    store.ingest([make_run("a", files=["a"], task_protocol={"fewshot": 0})])
    first = store.runs()
    calls = count_reads(monkeypatch)
    again = store.runs()
    assert again.equals(first)
    assert calls == []              # only the snapshot id was read (on its own cursor)
    monkeypatch.undo()
    # a mutation of a returned frame (and of its dicts/lists) does not leak into the next call
    again.loc[0, "name"] = "mutated"
    again.at[0, "tags"].append("x")
    proto = store.task_protocol_table()
    proto.at[0, "protocol"]["fewshot"] = 99
    assert store.runs()["name"].tolist() == ["a"] and store.runs()["tags"].tolist() == [[]]
    assert store.task_protocol_table().at[0, "protocol"] == {"fewshot": 0}
    # a write by another Store object (as by another process) makes a new snapshot
    other = store_location.open()
    other.ingest([make_run("b", files=["b"])])
    assert store.runs()["name"].tolist() == ["a", "b"]
    assert sorted(store.tasks()["run_id"].unique()) == [1, 2]
    store.rename_run("a", "a2")
    assert store.runs()["name"].tolist() == ["a2", "b"]


def test_memo_is_thread_safe(store):
    store.ingest([make_run(f"r{i}", files=[f"f{i}"]) for i in range(3)])
    want = store.tasks()

    def reader():
        for _ in range(20):
            got = store.tasks()
            assert got.equals(want)
            got.loc[:, "task"] = "changed"

    assert _in_threads(reader, 4) == []
    assert store.tasks().equals(want)


def test_reads_of_some_runs_are_served_from_a_memoized_read_of_all(store, monkeypatch):
    """tasks/summaries/run_protocols of some runs come from the all-runs read of the same
    snapshot (the same rows as their own query), and resolve_run from a memoized runs()."""
    store.ingest([make_run(f"r{i}", files=[f"f{i}"], protocol={"seed": i}) for i in range(3)])
    direct = {name: getattr(store, name)([3, 1]) for name in ("tasks", "summaries",
                                                              "run_protocols")}
    store.forget()
    for name in direct:
        getattr(store, name)()
    store.runs()
    calls = count_reads(monkeypatch)
    for name, want in direct.items():
        got = getattr(store, name)([3, 1])
        assert got["run_id"].tolist() == want["run_id"].tolist()
        assert got.astype(str).equals(want.astype(str)), name
    assert store.resolve_run("r1") == 2 and store.resolve_run("#3") == 3
    assert calls == []
    got = store.tasks([1])
    got.loc[:, "task"] = "mutated"                # a copy, not the memoized frame
    assert store.tasks([1])["task"].tolist() == ["t"] and store.tasks()["task"].tolist() == ["t"] * 3


def test_equal_calls_share_one_memo_entry(store, monkeypatch):
    # tasks(), tasks(None) and tasks(run_ids=None) are one call (arguments bound, defaults
    # applied): a page's tasks(None) reuses the analysis layer's tasks()
    store.ingest([make_run("a", files=["a"]), make_run("b", files=["b"])])
    first = store.tasks()
    calls = count_reads(monkeypatch)
    assert store.tasks(None).equals(first) and store.tasks(run_ids=None).equals(first)
    assert store.tasks([2]).equals(first[first["run_id"] == 2].reset_index(drop=True))
    assert calls == []


def _count_copies(monkeypatch) -> list:
    """Count the copies of the small tables made from now on (``small._SmallTables``)."""
    from evalcore.store import small
    made: list[int] = []
    original = small._SmallTables.__init__

    def counting(self, *a, **kw):
        made.append(1)
        return original(self, *a, **kw)

    monkeypatch.setattr(small._SmallTables, "__init__", counting)
    return made


def _small_schemas(store) -> list[str]:
    """The copies of the small tables held in the connection's in-memory catalog."""
    with store._read() as con:
        return [r[0] for r in con.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = 'memory' "
            "AND schema_name LIKE 'evalbars_small_%'").fetchall()]


def test_small_tables_are_read_once_per_snapshot_for_every_small_read(store, monkeypatch):
    """runs, tasks, cell_stats, summaries and audit of one snapshot are answered from one copy
    of the small tables (one store read), equal to the store's own queries; the copy is
    replaced after a write and the replaced one is dropped."""
    store.ingest([make_run(f"r{i}", files=[f"f{i}"],
                           summaries=[summary("t", "acc", 0.5, 0.1, 3)]) for i in range(3)])
    store.forget()
    calls = count_reads(monkeypatch)
    copies = _count_copies(monkeypatch)
    frames = {"runs": store.runs(), "tasks": store.tasks(), "cells": store.cell_stats(),
              "summaries": store.summaries(), "audit": store.audit([1, 2], task="t")}
    assert len(calls) == 1 and len(copies) == 1    # the copy; every answer from it
    monkeypatch.undo()
    assert frames["runs"]["name"].tolist() == ["r0", "r1", "r2"]
    assert frames["runs"]["n_tasks"].tolist() == [1, 1, 1]
    assert set(frames["tasks"]["run_id"]) == {1, 2, 3}
    assert frames["audit"]["run_id"].tolist() == [1, 2]
    # the same rows as queries of the store itself
    with store._read() as con:
        cells = con.execute("SELECT run_id, task, metric, n_items AS n, sum, sumsq FROM cells "
                            "ORDER BY run_id, task, metric").df()
        summ = con.execute("SELECT run_id, task, metric, value, stderr, n FROM summaries "
                           "ORDER BY run_id, task, metric").df()
    assert frames["cells"][list(cells.columns)].equals(cells)
    assert frames["summaries"][list(summ.columns)].astype(str).equals(summ.astype(str))
    first = _small_schemas(store)
    assert len(first) == 1
    store.rename_run("r0", "renamed")               # a write: a new snapshot, a new copy
    assert store.runs()["name"].tolist() == ["renamed", "r1", "r2"]
    second = _small_schemas(store)
    assert len(second) == 1 and second != first     # the replaced copy was dropped
    store.forget()
    assert _small_schemas(store) == []


def test_parallel_small_reads_share_one_copy(store, monkeypatch):
    """Reads in several threads at once (the leaderboard reads cells, summaries and the audit
    in parallel) wait for one copy instead of each making their own."""
    store.ingest([make_run(f"r{i}", files=[f"f{i}"]) for i in range(3)])
    want = store.tasks()
    store.forget()
    calls = count_reads(monkeypatch)
    copies = _count_copies(monkeypatch)
    barrier = threading.Barrier(4)

    def reader():
        barrier.wait()
        for _ in range(5):
            assert store.tasks().equals(want)
            store.cell_stats()

    assert _in_threads(reader, 4) == []
    # one copy; a thread that found no copy held read the snapshot id on a read cursor
    assert len(copies) == 1 and len(calls) <= 4


def test_a_dropped_store_object_drops_its_copy(store, store_location):
    store.ingest([make_run("a", files=["a"])])
    # the same connection: the same location and lock timeout (on PostgreSQL the lock
    # timeout is a setting of the catalog connection)
    other = store_location.open(lock_timeout=store.lock_timeout)
    assert other.runs()["name"].tolist() == ["a"]
    assert len(_small_schemas(store)) == 1          # the other object's copy (same connection)
    del other
    gc.collect()
    assert _small_schemas(store) == []


def test_a_first_view_reads_the_version_and_the_copy_in_one_transaction(store, store_location,
                                                                        monkeypatch):
    """Outside a one_version block, runs() after a write asks the catalog once: the snapshot
    id and the copy of the small tables in one transaction (``Store._small_snapshot``), the
    copy filed under that id; a later read of the same snapshot reuses it, a write by
    another Store object makes a new one; inside one_version the pinned version is used."""
    store.ingest([make_run("a", files=["a"])])
    store.runs()
    versions: list[int] = []
    original = type(store).version

    def counting(self):
        if self._pinned_version() is None:      # a catalog query, not the pinned answer
            versions.append(1)
        return original(self)

    monkeypatch.setattr(type(store), "version", counting)
    copies = _count_copies(monkeypatch)
    other = store_location.open()
    other.ingest([make_run("b", files=["b"])])
    versions.clear()
    assert store.runs()["name"].tolist() == ["a", "b"]
    assert len(copies) == 1 and versions == []      # no separate version query
    box = store.__dict__["_small_holder"]["small"]
    assert box.version == original(store) and box.users == 0
    assert store.tasks()["run_id"].tolist() == [1, 2] and len(copies) == 1
    with store.one_version() as pinned:
        assert store.cell_stats()["run_id"].tolist() == [1, 2]
    assert pinned == box.version and len(copies) == 1
    assert len(_small_schemas(store)) == 1
    store.forget()                                  # no copy held: the first read's
    versions.clear()
    assert store.tasks()["run_id"].tolist() == [1, 2]
    assert len(copies) == 2 and versions == [] and len(_small_schemas(store)) == 1


def test_copy_frame_copies_the_containers_of_object_columns_only():
    """``_copy_frame`` (every memo hit): equal frames, new arrays, new dicts and lists in
    object columns wherever they sit among other dtypes; strings, numbers and an empty
    frame pass through as a plain deep copy."""
    import pandas as pd

    from evalcore.store.query import _copy_frame

    df = pd.DataFrame({"run_id": [1, 2], "name": pd.Series(["a", "b"], dtype="str"),
                       "harness": pd.Series(["x", None], dtype=object), "score": [0.5, 1.0],
                       "protocol": [{"k": {"n": [1, 2]}}, {}], "tags": [["t"], []],
                       "flag": [True, False]})
    out = _copy_frame(df)
    pd.testing.assert_frame_equal(out, df)
    for col in ("protocol", "tags"):
        assert all(x is not y for x, y in zip(out[col], df[col]))
    out.at[0, "protocol"]["k"]["n"].append(3)
    out.at[0, "tags"].append("u")
    out.loc[1, "score"] = 9.0
    assert df.at[0, "protocol"] == {"k": {"n": [1, 2]}} and df.at[0, "tags"] == ["t"]
    assert df["score"].tolist() == [0.5, 1.0]
    empty = _copy_frame(df.iloc[:0])
    pd.testing.assert_frame_equal(empty, df.iloc[:0])


def test_the_task_protocols_are_asked_for_in_one_run_order(store, monkeypatch):
    """``analysis.compare(b, a)`` with b's id above a's: the board's metric infos and the
    protocol diff ask ``task_protocol_table`` for the run ids in ascending order, so both
    calls share one memo key (the board asked in its own order, a second key)."""
    import functools

    from evalcore import analysis
    store.ingest([make_run("a", files=["a"]), make_run("b", files=["b"])])
    asked = []
    original = type(store).task_protocol_table.__wrapped__

    @functools.wraps(original)
    def counting(self, *args, **kwargs):
        asked.append(list(args[0]))
        return original(self, *args, **kwargs)

    # unmemoized, so every call is seen
    monkeypatch.setattr(type(store), "task_protocol_table", counting)
    analysis.compare(store, "b", "a")
    analysis.leaderboard(store, runs=["b", "a"])
    assert asked and all(ids == [1, 2] for ids in asked), asked


def test_an_entry_stored_while_another_read_runs_is_kept(store, monkeypatch):
    """A memoized read that finishes while another one runs (a side thread's, or one nested
    in it) keeps its entry: the other read stores its own into the memo as it is then, not
    into the dict it looked up before it started (which lost the first entry: read again)."""
    import functools

    store.ingest([make_run("a", files=["a"])])
    original = type(store).task_protocol_table.__wrapped__
    runs_reads = []
    original_runs = type(store).runs.__wrapped__

    @functools.wraps(original_runs)
    def counted_runs(self):
        runs_reads.append(1)
        return original_runs(self)

    @functools.wraps(original)
    def nested(self, *args, **kwargs):
        self.runs()                     # stored while task_protocol_table's read runs
        return original(self, *args, **kwargs)

    from evalcore.store.query import _per_snapshot
    monkeypatch.setattr(type(store), "runs", _per_snapshot(small=True)(counted_runs))
    monkeypatch.setattr(type(store), "task_protocol_table", _per_snapshot(nested))
    store.forget()
    with store.one_version():
        store.task_protocol_table([1])
        store.runs()                    # the entry stored inside is still there
    assert len(runs_reads) == 1
