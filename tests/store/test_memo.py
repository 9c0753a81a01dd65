"""Small-table reads are memoized per snapshot inside a Store object: a repeat read does
not query the tables, a write (this process or another Store object) is seen at once, and
callers get copies they may mutate."""

from __future__ import annotations

import threading

from evalcore.store import Store

from .conftest import make_run


def test_repeat_reads_are_served_per_snapshot_and_writes_invalidate(store, store_location,
                                                                    monkeypatch):
    store.ingest([make_run("a", files=["a"], task_protocol={"fewshot": 0})])
    first = store.runs()
    calls = []
    original = Store._read

    def counting(self, *a, **kw):
        calls.append(1)
        return original(self, *a, **kw)

    monkeypatch.setattr(Store, "_read", counting)
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
    errors = []

    def reader():
        try:
            for _ in range(20):
                got = store.tasks()
                assert got.equals(want)
                got.loc[:, "task"] = "changed"
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.tasks().equals(want)
