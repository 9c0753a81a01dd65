"""Store.item_matrices and Store.item_labels: per-item means as items x runs matrices with the
store's integer item keys, checked against item_means (real store and the MemoryStore)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.errors import StoreError
from tests.analysis_helpers import make_run, make_store


def _runs():
    # run a: task t with 2 answers per item (items 0..5), task u one answer (items 0..2)
    a = make_run("a", {("t", "acc"): np.array([[1, 0], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1]]),
                       ("u", "f1"): np.array([0.2, 0.4, 0.9])})
    # run b: t has items 0..3 and 7 (not 4, 5); u items 0..2; a metric only b has
    b = make_run("b", {("t", "acc"): {"0": 0, "1": 1, "2": 1, "3": 0, "7": 1},
                       ("u", "f1"): np.array([0.1, 0.7, 0.3]),
                       ("u", "em"): np.array([1, 0, 1])})
    c = make_run("c", {("v", "acc"): np.array([1, 0])})
    return [a, b, c]


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_item_matrices_hold_the_item_means(kind, tmp_path):
    store = make_store(_runs(), tmp_path, kind=kind)
    cells = [("t", "acc"), ("u", "f1"), ("u", "em"), ("nope", "acc")]
    got = store.item_matrices(cells, run_ids=[1, 2])
    assert set(got) == {("t", "acc"), ("u", "f1"), ("u", "em")}
    im = store.item_means([1, 2])
    for (task, metric), mat in got.items():
        assert (mat.task, mat.metric) == (task, metric)
        assert mat.run_ids.dtype == np.int64 and mat.items.dtype == np.int64
        assert np.all(np.diff(mat.run_ids) > 0) and np.all(np.diff(mat.items) > 0)
        assert mat.scores.shape == (mat.items.size, mat.run_ids.size)
        ref = im[(im["task"] == task) & (im["metric"] == metric)]
        assert sorted(mat.run_ids.tolist()) == sorted(set(ref["run_id"].astype(int)))
        labels = store.item_labels(task, mat.items)
        assert sorted(labels) == sorted(set(ref["item_id"]))
        for j, rid in enumerate(mat.run_ids):
            want = dict(zip(ref.loc[ref["run_id"] == rid, "item_id"],
                            ref.loc[ref["run_id"] == rid, "score"].astype(float)))
            for i, lab in enumerate(labels):
                if lab in want:
                    assert mat.scores[i, j] == pytest.approx(want[lab])
                else:
                    assert np.isnan(mat.scores[i, j])
    t = got[("t", "acc")]
    assert t.binary and got[("u", "em")].binary and not got[("u", "f1")].binary
    assert t.run_ids.tolist() == [1, 2]
    # item 1 of run a: answers 1, 1 -> 1.0; item 0: 1, 0 -> 0.5; b lacks 4 and 5, a lacks 7
    lab = store.item_labels("t", t.items)
    col = {lab[i]: t.scores[i] for i in range(len(lab))}
    assert col["0"][0] == 0.5 and col["1"][0] == 1.0
    assert np.isnan(col["4"][1]) and np.isnan(col["7"][0]) and col["7"][1] == 1.0
    assert got[("u", "em")].run_ids.tolist() == [2]


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_item_matrices_keys_are_stable_and_runs_filtered(kind, tmp_path):
    store = make_store(_runs(), tmp_path, kind=kind)
    both = store.item_matrices([("t", "acc")])[("t", "acc")]
    only_a = store.item_matrices([("t", "acc")], run_ids=[1])[("t", "acc")]
    assert only_a.run_ids.tolist() == [1]
    # the same item has the same key whichever runs are asked
    lab_both = dict(zip(store.item_labels("t", both.items), both.items.tolist()))
    lab_a = dict(zip(store.item_labels("t", only_a.items), only_a.items.tolist()))
    assert set(lab_a) == {"0", "1", "2", "3", "4", "5"}
    assert all(lab_both[k] == v for k, v in lab_a.items())
    assert store.item_matrices([("t", "acc")], run_ids=[3]) == {}
    assert store.item_matrices([], run_ids=[1]) == {}
    assert store.item_labels("t", []) == []
    # labels come back in the order asked
    rev = both.items[::-1]
    assert store.item_labels("t", rev) == store.item_labels("t", both.items)[::-1]


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_item_labels_refuses_unknown_keys(kind, tmp_path):
    store = make_store(_runs(), tmp_path, kind=kind)
    v = store.item_matrices([("v", "acc")])[("v", "acc")]
    with pytest.raises(StoreError, match="no item with key"):
        store.item_labels("v", [int(v.items.max()) + 12345])


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_item_matrices_leave_out_metrics_not_asked(kind, tmp_path):
    """Four or more tasks (no task filter in the query) and only one of a task's metrics."""
    store = make_store(_runs(), tmp_path, kind=kind)
    got = store.item_matrices([("u", "em"), ("t", "acc"), ("v", "acc"), ("w", "x")])
    assert set(got) == {("u", "em"), ("t", "acc"), ("v", "acc")}
    assert got[("u", "em")].scores.shape == (3, 1)
    assert np.nanmean(got[("u", "em")].scores) == pytest.approx(2 / 3)


def _oracle(store, cells, run_ids=None):
    """{(task, metric): {run_id: {item_id: mean}}} from item_means (the string-keyed read)."""
    im = store.item_means(run_ids)
    out: dict = {}
    for t, m, r, i, s in zip(im["task"], im["metric"], im["run_id"], im["item_id"], im["score"]):
        if (t, m) in cells:
            out.setdefault((t, m), {}).setdefault(int(r), {})[str(i)] = float(s)
    return out


def test_item_matrices_with_scattered_keys_and_several_metrics(tmp_path):
    """Items of a task added by later ingests get keys after other tasks' keys (a task's
    keys are no longer one range); several metrics of one task; tasks not asked."""
    from evalcore.store import Store
    rng = np.random.default_rng(3)
    store = Store(tmp_path / "s")
    store.ingest([make_run("a", {("t", "acc"): rng.integers(0, 2, 6).astype(float),
                                 ("t", "em"): rng.integers(0, 2, 6).astype(float),
                                 ("u", "acc"): rng.random((4, 3))})])
    store.ingest([make_run("b", {("w", "acc"): rng.integers(0, 2, 5).astype(float),
                                 ("t", "acc"): {str(i): float(i % 2) for i in range(3, 10)},
                                 ("u", "acc"): rng.random(6)})])
    store.ingest([make_run("c", {("t", "em"): {"11": 1.0, "0": 0.0},
                                 ("u", "acc"): rng.random(2), ("x", "acc"): np.ones(3)})])
    keys = store.item_matrices([("t", "acc")])[("t", "acc")].items
    assert np.any(np.diff(keys) > 1)            # the case this test is about
    for cells, runs in [([("t", "acc"), ("t", "em"), ("u", "acc")], None),
                        ([("t", "em"), ("u", "acc"), ("w", "acc"), ("x", "acc")], [1, 3]),
                        ([("u", "acc")], [2, 3]), ([("t", "em")], None)]:
        got = store.item_matrices(cells, run_ids=runs)
        want = _oracle(store, cells, runs)
        assert set(got) == set(want)
        for cell, mat in got.items():
            assert mat.run_ids.tolist() == sorted(want[cell])
            labels = store.item_labels(cell[0], mat.items)
            assert np.all(np.diff(mat.items) > 0)
            assert sorted(labels) == sorted({i for d in want[cell].values() for i in d})
            for j, rid in enumerate(mat.run_ids.tolist()):
                for i, lab in enumerate(labels):
                    v = want[cell][rid].get(lab)
                    assert (np.isnan(mat.scores[i, j]) if v is None
                            else mat.scores[i, j] == pytest.approx(v, abs=1e-12))


def test_item_labels_read_the_task_once_per_snapshot_and_again_after_a_write(tmp_path,
                                                                              monkeypatch):
    """The ids come from the task's whole key -> id table, read once per snapshot: a second
    lookup reads nothing; after a write that adds items of the task, the new keys resolve."""
    from tests.store.conftest import count_reads

    store = make_store(_runs(), tmp_path, kind="real")
    t = store.item_matrices([("t", "acc")], run_ids=[1, 2])[("t", "acc")]
    calls = count_reads(monkeypatch)
    first = store.item_labels("t", t.items)
    assert len(calls) == 1
    assert store.item_labels("t", t.items[::-1]) == first[::-1] and len(calls) == 1
    monkeypatch.undo()
    store.ingest([make_run("d", {("t", "acc"): {"new-1": 1, "new-2": 0}})])
    d = store.item_matrices([("t", "acc")], run_ids=[4])[("t", "acc")]
    assert sorted(store.item_labels("t", d.items)) == ["new-1", "new-2"]
    with pytest.raises(StoreError, match="no item with key"):
        store.item_labels("u", d.items)          # keys of another task
