"""Store.item_cluster_codes and Store.item_mean_bounds: the leaderboard's lean reads (integer
cluster codes, the range of item means), checked against the item means the store reports."""

from __future__ import annotations

import numpy as np
import pytest

from tests.analysis_helpers import make_run, make_store


def _runs():
    a = make_run("a", {("t", "acc"): np.array([[1, 0], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1]]),
                       ("u", "f1"): np.array([0.2, 0.4, 0.9])})
    b = make_run("b", {("t", "acc"): np.array([0, 1, 1, 0, 1, 0]),
                       ("u", "f1"): np.array([0.1, 0.7, 0.3])},
                 clusters={"u": ["p", "p", "q"]})
    # run a: labels x x x y . . with item 3's second answer labelled z (labels that differ
    # within an item: the item's cluster is the smallest, y); items 4, 5 unlabelled
    sa = a.scores
    lab_a = {"0": "x", "1": "x", "2": "x", "3": "y"}
    sa["cluster"] = [lab_a.get(i) for i in sa["item_id"]]
    sa.loc[(sa["item_id"] == "3") & (sa["answer_idx"] == 1), "cluster"] = "z"
    sa.loc[sa["task"] == "u", "cluster"] = "p"
    sb = b.scores
    lab_b = {"0": "x", "1": "x", "2": "y", "3": "y", "5": "w"}
    sb.loc[sb["task"] == "t", "cluster"] = [lab_b.get(i) for i in sb.loc[sb["task"] == "t", "item_id"]]
    return [a, b]


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_cluster_codes_partition_items_as_their_labels_do(kind, tmp_path):
    store = make_store(_runs(), tmp_path, kind=kind)
    codes = store.item_cluster_codes([("t", "acc"), ("u", "f1")], run_ids=[1, 2])
    im = store.item_means([1, 2])
    for k, (task, metric) in enumerate([("t", "acc"), ("u", "f1")]):
        got = codes[codes["k"] == k].sort_values(["run_id", "score"], kind="stable")
        ref = im[(im["task"] == task) & (im["metric"] == metric)]
        assert len(got) == len(ref)
        assert sorted(got["score"].round(12)) == sorted(ref["score"].astype(float).round(12))
        # one code per label (the item's smallest), shared by the runs; an unlabelled item
        # is its own cluster, the same item in both runs sharing its code
        key = [("c", c) if isinstance(c, str) else ("i", i)
               for c, i in zip(ref["cluster"], ref["item_id"])]
        # as many codes as distinct keys, numbered 0..G-1
        assert codes[codes["k"] == k]["code"].nunique() == len(set(key))
        assert set(got["code"]) == set(range(len(set(key))))
        has = got["has_cluster"].to_numpy(bool)
        assert has.sum() == sum(isinstance(c, str) for c in ref["cluster"])
    t = codes[codes["k"] == 0]
    # run a: items 0-2 share label x, item 3 is y (its smallest label), 4 and 5 unlabelled
    assert t[t["run_id"] == 1]["code"].nunique() == 4
    assert t["code"].nunique() == 5     # x, y, w and the two unlabelled items 4 (both runs), 5 (a)


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_item_mean_bounds(kind, tmp_path):
    store = make_store(_runs(), tmp_path, kind=kind)
    assert store.item_mean_bounds([1, 2], "u", "f1") == {"n": 6, "min": 0.1, "max": 0.9}
    b = store.item_mean_bounds([1], "t", "acc")
    assert b["n"] == 6 and b["min"] == 0.0 and b["max"] == 1.0
    assert store.item_mean_bounds([1], "nope", "acc") == {"n": 0, "min": None, "max": None}


def _partition(codes) -> dict:
    """cell k -> the set of clusters, each the sorted (run_id, score, has_cluster) rows with
    one code: what the clustered SE depends on, free of the codes' numbering."""
    out: dict[int, set] = {}
    for (k, _), g in codes.groupby(["k", "code"]):
        rows = tuple(sorted(zip(g["run_id"].tolist(), g["score"].tolist(),
                                g["has_cluster"].tolist())))
        out.setdefault(int(k), set()).add(rows)
    return out


@pytest.mark.parametrize("runs", [[1, 2], [1], [2]])
def test_matrices_and_codes_from_one_read_equal_the_two_reads(runs, tmp_path):
    # the clustered leaderboard reads both at once: several answers (run a's "t"), labels
    # that differ within an item, unlabelled items, two metrics, a subset of the runs
    store = make_store(_runs(), tmp_path, kind="real")
    cells = [("t", "acc"), ("u", "f1")]
    mats, codes = store.item_matrices_and_codes(cells, run_ids=runs)
    alone = store.item_cluster_codes(cells, run_ids=runs)
    # code numbers of unlabelled items follow the scan's order (not part of the contract):
    # the same rows, and the same partition of each cell's rows into clusters
    assert _partition(codes) == _partition(alone)
    assert len(codes) > 0
    ref = store.item_matrices(cells, run_ids=runs)
    assert mats.keys() == ref.keys() and set(mats) == set(cells)
    for cell, im in ref.items():
        got = mats[cell]
        assert got.task == im.task and got.metric == im.metric and got.binary == im.binary
        assert np.array_equal(got.run_ids, im.run_ids) and np.array_equal(got.items, im.items)
        assert np.array_equal(got.scores, im.scores, equal_nan=True)
        assert got.scores.shape == (len(im.items), len(runs))
    none, no_codes = store.item_matrices_and_codes([])
    assert none == {} and no_codes.empty and list(no_codes.columns) == list(alone.columns)


def test_item_id_order_is_the_item_means_order(tmp_path):
    # the bootstrap board puts a matrix's rows (ascending keys) in item id order, the order
    # item_means reports a run's items in; ids such as "10" sort before "2"
    ids = [str(i) for i in range(12)]
    a = make_run("a", {("t", "acc"): np.arange(12) % 2})
    a.scores["item_id"] = [ids[int(i)] for i in a.scores["item_id"]]
    store = make_store([a], tmp_path, kind="real")
    order = store.item_id_order(["t", "nope"])
    assert set(order) == {"t", "nope"} and order["nope"].size == 0
    assert store.item_labels("t", order["t"]) == sorted(ids)
    im = store.item_means([1], task="t")
    assert im["item_id"].tolist() == store.item_labels("t", order["t"])
    assert store.item_id_order([]) == {}
