"""Schema 3: integer item keys. A v2 DuckLake store is upgraded in place on first open (one
transaction; every read answers as before), keys are allocated once per (task, item_id) and
(task, label), and score rows hold no text but task and metric."""

from __future__ import annotations

import pandas as pd

from evalcore.store import Store
from evalcore.store.catalog import close_connections, open_connection_keys
from tests import sql_reference

from .conftest import make_run


def _downgrade_to_v2(store: Store) -> None:
    """Rewrite a schema-3 store in the layout of schema 2 (text per score row), as the
    evalbars of the previous session wrote it."""
    view = store._text_scores("", None)[0]

    def body(con):
        con.execute("CREATE TABLE scores_v2 AS SELECT run_id, task, metric, item_id, answer_idx, "
                    f"score, cluster, item_hash, prompt_hash FROM {view}")
        con.execute("CREATE TABLE texts_v2 AS SELECT t.run_id, t.task, i.item_id, t.answer_idx, "
                    "t.prompt, t.target, t.response FROM texts t JOIN items i ON i.item = t.item")
        for t in ("scores", "texts", "items", "labels", "vectors"):
            con.execute(f"DROP TABLE {t}")
        con.execute("ALTER TABLE scores_v2 RENAME TO scores")
        con.execute("ALTER TABLE texts_v2 RENAME TO texts")
        con.execute("DELETE FROM meta WHERE key IN ('next_item', 'next_label')")
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    store._write(body, "downgrading", checks=())
    close_connections(open_connection_keys())


def _runs():
    a = make_run("a", files=["a"], scores=[1, 0, 1, 1], answers=2, clusters=["p", "p", "q", "q"],
                 item_hashes=["h0", "h1", "h2", "h3"], prompt_hashes=["p0", "p1", "p2", "p3"])
    b = make_run("b", files=["b"], scores=[0, 0, 1], item_ids=["1", "2", "9"],
                 item_hashes=["h1", "hX", "h9"], prompt_hashes=["p1", "p2", "p9"])
    return [a, b]


def _codes(store: Store) -> pd.DataFrame:
    codes = store.item_cluster_codes([("t", "acc")])
    n_codes = codes.groupby("k")["code"].nunique().rename("n_codes")
    rows = codes.drop(columns="code").sort_values(["k", "run_id", "score", "has_cluster"])
    return rows.merge(n_codes, on="k").reset_index(drop=True)


def _reads(store: Store) -> dict:
    return {"scores": store.scores([1, 2]), "means": store.item_means([1, 2]),
            "texts": store.texts(1, "t", ["0", "1", "3"]),
            "pairing": store.pairing(1, 2, "t", "acc"),
            "paired": store.paired_item_means(1, 2, "t", "acc"),
            "tasks": sql_reference.paired_item_means_tasks(store, 1, 2, [("t", "acc")]),
            # row order and code numbers are not part of item_cluster_codes' contract: the
            # rows sorted, and the partition of each run's items into clusters
            "codes": _codes(store),
            "cells": store.recompute_cell_stats()}


def test_a_v2_store_is_upgraded_in_place_and_reads_the_same(store_location):
    store = store_location.open()
    store.ingest(_runs())
    before = _reads(store)
    assert before["pairing"]["hash_mismatch"] == ["2"]
    _downgrade_to_v2(store)
    with Store(store_location.location, data_path=store_location.data_path)._read() as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
        cols = [c for (c, *_) in con.execute("DESCRIBE scores").fetchall()]
        assert "item_id" not in cols and {"item", "cluster", "item_hash"} <= set(cols)
        assert con.execute("SELECT count(*), count(DISTINCT item) FROM items").fetchone() == (5, 5)
    upgraded = store_location.open()
    after = _reads(upgraded)
    for key, value in before.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(value.reset_index(drop=True),
                                          after[key].reset_index(drop=True), check_dtype=False,
                                          obj=key)
        else:
            assert value == after[key], key
    # later ingests continue the key counters
    upgraded.ingest([make_run("c", files=["c"], scores=[1, 1], item_ids=["9", "new"])])
    with upgraded._read() as con:
        assert con.execute("SELECT count(*), count(DISTINCT item), max(item) FROM items"
                           ).fetchone() == (6, 6, 6)


def test_keys_are_allocated_once_per_task_and_item(store):
    store.ingest([make_run("a", files=["a"], scores=[1, 0], clusters=["p", "q"]),
                  make_run("b", files=["b"], scores=[1, 0], task="u", clusters=["p", "p"])])
    store.ingest([make_run("c", files=["c"], scores=[0, 1, 1], clusters=["q", "p", "r"])])
    with store._read() as con:
        items = con.execute("SELECT task, item_id, item FROM items ORDER BY item").fetchall()
        labels = con.execute("SELECT task, value FROM labels ORDER BY label").fetchall()
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    assert [(t, i) for t, i, _ in items] == [("t", "0"), ("t", "1"), ("u", "0"), ("u", "1"),
                                            ("t", "2")]
    assert [k for _, _, k in items] == [1, 2, 3, 4, 5]
    assert ("t", "p") in labels and ("u", "p") in labels and ("t", "r") in labels
    assert len(labels) == len(set(labels))
    assert meta["next_item"] == "6" and int(meta["next_label"]) == len(
        [lab for lab in labels]) + 1
    m = store.item_matrices([("t", "acc")])[("t", "acc")]
    assert store.item_labels("t", m.items) == ["0", "1", "2"]
