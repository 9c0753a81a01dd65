"""Schema 4: per-cell item vectors (store/vectors.py). The encoding round-trips, every cell
written gets one vector row, and ``item_matrices`` read from the vectors equals the read
from the score rows (``_item_matrices_scores``, the oracle) after ingest, merges, delete,
re-ingest, the v3 -> v4 upgrade and migrate; a cell without a vector falls back to the
score rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from evalcore.store import Store, vectors
from evalcore.store.catalog import close_connections, open_connection_keys
from evalcore.store.migrate import migrate

from .conftest import export_legacy, make_run

read_paths = pytest.importorskip("evalcore.ingest").read_paths


# ---- the encoding ------------------------------------------------------------------------

def _rows() -> pd.DataFrame:
    """Score rows of five cells: a binary cell with a gap (key 12), a float cell with a NaN
    score, a cell with two answers and labels, a binary cell over 21 keys with gaps (padding
    of the bit vectors), and the same keys under a second metric."""
    r = []
    for item, s in ((10, 1.0), (11, 0.0), (13, 1.0)):
        r.append((1, "t", "acc", item, s, None))
    for item, s in ((10, 0.25), (11, np.nan)):
        r.append((1, "t", "f1", item, s, None))
    for item, s, c in ((10, 1.0, 5), (10, 0.0, 3), (11, 1.0, None), (11, 1.0, None),
                       (12, 0.0, 7), (12, 1.0, None)):
        r.append((2, "t", "acc", item, s, c))
    keys = [100, 101, 104, 108, 109, 115, 120]
    for i, item in enumerate(keys):
        r.append((2, "u", "acc", item, float(i % 2), 9 if i == 3 else None))
        r.append((2, "u", "em", item, 0.5 * (i % 3), None))
    return pd.DataFrame(r, columns=["run_id", "task", "metric", "item", "score", "cluster"])


def _table(df: pd.DataFrame) -> pa.Table:
    return pa.table({"run_id": pa.array(df["run_id"], pa.int32()),
                     "task": pa.array(df["task"], pa.string()),
                     "metric": pa.array(df["metric"], pa.string()),
                     "item": pa.array(df["item"], pa.int32()),
                     "score": pa.array(df["score"], pa.float64()),
                     "cluster": pa.array(df["cluster"].astype("Int32"), pa.int32())})


def test_encode_round_trips_means_labels_and_gaps():
    df = _rows()
    got = vectors.encode(_table(df.sample(frac=1, random_state=3)))   # row order is free
    assert got.schema == vectors.VECTOR_SCHEMA
    rows = got.to_pylist()
    assert len(rows) == 5 == df.groupby(["run_id", "task", "metric"]).ngroups
    for row in rows:
        cell = df[(df["run_id"] == row["run_id"]) & (df["task"] == row["task"])
                  & (df["metric"] == row["metric"])]
        keys, means, labs = vectors.decode(row["lo"], row["span"], row["bits"], row["present"],
                                           row["vals"], row["labs"])
        want = cell.groupby("item").agg(m=("score", "mean"), n=("score", "size"),
                                        lab=("cluster", "min"))
        assert keys.tolist() == want.index.tolist()
        assert row["lo"] == keys[0] and row["span"] == keys[-1] - keys[0] + 1
        assert row["n"] == keys.size
        np.testing.assert_array_equal(means, want["m"].to_numpy())
        assert labs.tolist() == want["lab"].fillna(-1).astype(int).tolist()
        assert (row["labs"] is None) == bool(cell["cluster"].isna().all())
        binary = bool(cell["score"].isin([0.0, 1.0]).all() and (want["n"] == 1).all())
        assert row["bits"] == binary
        assert len(row["present"]) == (row["span"] + 7) // 8
        assert len(row["vals"]) == ((row["span"] + 7) // 8 if binary else 8 * row["span"])
    by = {(r["run_id"], r["task"], r["metric"]): r for r in rows}
    assert by[(1, "t", "acc")]["bits"] and by[(1, "t", "acc")]["span"] == 4
    assert not by[(2, "t", "acc")]["bits"]                   # two answers per item
    # a NaN score: present, NaN mean (absent slots are NaN too; ``present`` tells them apart)
    _, means, _ = vectors.decode(*(by[(1, "t", "f1")][c] for c in
                                   ("lo", "span", "bits", "present", "vals", "labs")))
    assert means[0] == 0.25 and np.isnan(means[1])


def test_matrices_decode_blocks_of_runs_as_the_rows_do():
    df = _rows()
    enc = vectors.encode(_table(df)).to_pandas()
    tms = [("t", "acc"), ("u", "acc"), ("t", "f1")]
    enc["k"] = [tms.index((t, m)) if (t, m) in tms else -1
                for t, m in zip(enc["task"], enc["metric"])]
    enc = enc[enc["k"] >= 0].assign(is_binary=True)
    enc = enc.sort_values(["k", "lo", "span", "bits", "run_id"])
    table = pa.Table.from_pandas(enc, preserve_index=False)
    got, labs = vectors.matrices(table, tms)
    assert labs == {}
    assert sorted(got) == [0, 1, 2]
    for k, (t, m) in enumerate(tms):
        cell = df[(df["task"] == t) & (df["metric"] == m)]
        want = cell.groupby(["item", "run_id"])["score"].mean().unstack("run_id")
        mat = got[k]
        assert (mat.task, mat.metric) == (t, m)
        assert mat.run_ids.tolist() == want.columns.tolist()
        assert mat.items.tolist() == want.index.tolist()
        np.testing.assert_array_equal(mat.scores, want.to_numpy())
        assert mat.scores.flags.c_contiguous


# ---- the store ---------------------------------------------------------------------------

def _cells(store: Store) -> list[tuple[str, str]]:
    with store._read() as con:
        return [tuple(r) for r in con.execute(
            "SELECT DISTINCT task, metric FROM cells ORDER BY task, metric").fetchall()]


def _vector_keys(store: Store) -> tuple[list, list]:
    with store._read() as con:
        cells = con.execute("SELECT run_id, task, metric FROM cells ORDER BY ALL").fetchall()
        vecs = con.execute("SELECT run_id, task, metric FROM vectors ORDER BY ALL").fetchall()
    return cells, vecs


def _same(store: Store, run_ids: list[int] | None = None, all_vectors: bool = True) -> dict:
    """item_matrices (vectors) == _item_matrices_scores (score rows) on every cell: equal
    keys, runs, items and binary flags; scores bit for bit, except the means of items with
    several answers (numpy's sum / count against DuckDB's avg: last bits)."""
    cells, vecs = _vector_keys(store)
    if all_vectors:
        assert cells == vecs                     # one vector row per cell
    else:
        assert set(vecs) < set(cells)
    tms = _cells(store) + [("no such task", "acc")]
    new = store.item_matrices(tms, run_ids)
    old = store._item_matrices_scores(tms, run_ids)
    assert list(new) == list(old)
    with store._read() as con:
        many = {tuple(r) for r in con.execute(
            "SELECT DISTINCT task, metric FROM cells WHERE k_max > 1").fetchall()}
    for key, mat in new.items():
        ref = old[key]
        assert (mat.task, mat.metric, mat.binary) == (ref.task, ref.metric, ref.binary)
        np.testing.assert_array_equal(mat.run_ids, ref.run_ids)
        np.testing.assert_array_equal(mat.items, ref.items)
        assert mat.scores.dtype == np.float64 and mat.scores.shape == ref.scores.shape
        if key in many:
            np.testing.assert_allclose(mat.scores, ref.scores, rtol=1e-14, atol=0)
            np.testing.assert_array_equal(np.isnan(mat.scores), np.isnan(ref.scores))
        else:
            np.testing.assert_array_equal(mat.scores, ref.scores)
    # the clustered read: the same matrices, the same partition of each cell's rows into
    # clusters (label codes equal; unlabelled items may be numbered in another order)
    mats, codes = store.item_matrices_and_codes(tms, run_ids)
    old_mats, old_codes = store._matrices_and_codes_scores(tms, run_ids)
    assert list(mats) == list(new)
    for key, mat in mats.items():
        np.testing.assert_array_equal(mat.scores, new[key].scores)
    assert _partition(codes) == _partition(old_codes)
    assert np.array_equal(codes["k"].to_numpy(), np.sort(codes["k"].to_numpy()))
    pd.testing.assert_frame_equal(store.item_cluster_codes(tms, run_ids), codes)
    # the codes as matrices (the clustered leaderboard's read): the same rows, item-major
    # (a cell without vectors: its rows come in the scan's order, so the same clusters)
    if all_vectors:
        pd.testing.assert_frame_equal(_code_matrix_rows(store, tms, run_ids), codes)
    else:
        assert _partition(_code_matrix_rows(store, tms, run_ids)) == _partition(codes)
    lab = codes[codes["has_cluster"]].sort_values(["k", "run_id", "score", "code"])
    old_lab = old_codes[old_codes["has_cluster"]].sort_values(["k", "run_id", "score", "code"])
    np.testing.assert_array_equal(lab.to_numpy(float), old_lab.to_numpy(float))
    return new


def _code_matrix_rows(store: Store, tms: list, run_ids: list[int] | None) -> pd.DataFrame:
    """``store.item_code_matrices`` as ``item_cluster_codes``' rows: the present entries of
    each cell, item by item (runs ascending within an item); checks the shapes and that the
    codes are -1 and has_cluster False where the run lacks the item."""
    got = store.item_code_matrices(tms, run_ids)
    frames = []
    for k, tm in enumerate(dict.fromkeys(tms)):
        if tm not in got:
            continue
        im, code, has = got[tm]
        assert code.shape == has.shape == im.scores.shape and code.dtype == np.int64
        present = ~np.isnan(im.scores)
        assert (code[~present] == -1).all() and not has[~present].any()
        ii, jj = np.nonzero(present)
        frames.append(pd.DataFrame({"k": np.int32(k), "run_id": im.run_ids[jj].astype(np.int32),
                                    "score": im.scores[ii, jj], "code": code[ii, jj],
                                    "has_cluster": has[ii, jj]}))
    return pd.concat(frames, ignore_index=True) if frames else \
        store.item_cluster_codes([])


def _partition(codes: pd.DataFrame) -> list:
    """Each cell's clusters as sorted lists of (run_id, score) with the labelled flag."""
    out = [(int(k), bool(h), tuple(sorted(zip(g["run_id"].tolist(),
                                              np.round(g["score"], 12).tolist()))))
           for (k, _), g in codes.groupby(["k", "code"])
           for h in [bool(g["has_cluster"].iloc[0])]]
    return sorted(out)


def test_wild_fixtures_read_the_same_from_vectors(store, wild_dir):
    batch = read_paths(wild_dir)
    assert batch.runs
    store.ingest(batch.runs)
    got = _same(store)
    assert len(got) >= 5
    ids = sorted(store.runs()["run_id"].tolist())
    _same(store, ids[::2])
    _same(store, ids[1:2])


def test_merges_gaps_delete_and_reingest_read_the_same(store):
    # two halves of one run (same source key, different files): the second adds task u
    half1 = make_run("a", files=["a1"], source_key="k", scores=[1, 0, 1], answers=2,
                     clusters=["p", "q", "p"])
    half2 = make_run("a", files=["a2"], source_key="k", task="u", scores=[0.5, 0.25])
    store.ingest([half1])
    other = make_run("b", files=["b"], task="v", scores=[1, 1, 0, 0],
                     extra_cells=[("v", "f1", [0.1, 0.2, 0.3, 0.4])])
    store.ingest([other, half2])
    # task t gets new keys after task v's: run c's t vector spans a gap
    c = make_run("c", files=["c"], scores=[1, 0, 0, 1, 1], item_ids=["0", "1", "x", "y", "z"])
    store.ingest([c])
    assert store.runs()["name"].tolist() == ["a", "b", "c"]
    with store._read() as con:
        row = con.execute("SELECT span, n, bits FROM vectors WHERE run_id = 3").fetchone()
    assert row[0] > row[1] and row[2]
    before = _same(store)
    assert before[("t", "acc")].run_ids.tolist() == [1, 3]
    t = before[("t", "acc")]
    assert t.binary and np.diff(t.items).max() > 1     # keys 1-3, then 10-12 (after v, u)
    np.testing.assert_array_equal(t.scores[:3, 0], [1, 0, 1])   # two equal answers each
    # the same files again: nothing written, the same matrices
    store.ingest([make_run("c", files=["c"], scores=[1, 0, 0, 1, 1],
                           item_ids=["0", "1", "x", "y", "z"])])
    again = _same(store)
    for key, mat in before.items():
        np.testing.assert_array_equal(mat.scores, again[key].scores)
    store.delete_run(1)
    after = _same(store)
    assert ("u", "acc") not in after and after[("t", "acc")].run_ids.tolist() == [3]


def test_encode_leaves_out_a_sparse_cell(monkeypatch):
    df = _rows()
    monkeypatch.setattr(vectors, "SPARSE_FACTOR", 1)
    monkeypatch.setattr(vectors, "SPARSE_SLACK", 0)
    got = vectors.encode(_table(df)).to_pylist()
    # run 1 t/acc has a gap (4 keys, 3 rows); run 2 t/acc has 6 rows over 3 keys: dense;
    # run 2 u/* 7 keys over 21: sparse
    assert sorted((r["run_id"], r["task"], r["metric"]) for r in got) == [
        (1, "t", "f1"), (2, "t", "acc")]
    keys, means, labs = vectors.decode(*(got[1][c] if got[1]["run_id"] == 2 else got[0][c]
                                         for c in ("lo", "span", "bits", "present", "vals",
                                                   "labs")))
    assert keys.tolist() == [10, 11, 12] and means.tolist() == [0.5, 1.0, 0.5]
    assert labs.tolist() == [3, -1, 7]


def test_sparse_cells_are_read_from_the_scores(store, monkeypatch):
    monkeypatch.setattr(vectors, "SPARSE_FACTOR", 1)
    monkeypatch.setattr(vectors, "SPARSE_SLACK", 0)
    store.ingest([make_run("a", files=["a"], scores=[1, 0, 1])])
    store.ingest([make_run("b", files=["b"], task="u", scores=[1, 1])])
    # run c's t keys: 1, 2 and 6, 7 (after u's): a sparse cell, no vector
    store.ingest([make_run("c", files=["c"], scores=[0, 1, 1, 0],
                           item_ids=["0", "1", "new1", "new2"], clusters=["p", "q", "p", "r"])])
    with store._read() as con:
        assert con.execute("SELECT count(*) FROM vectors WHERE run_id = 3").fetchone() == (0,)
    got = _same(store, all_vectors=False)
    t = got[("t", "acc")]
    assert t.run_ids.tolist() == [1, 3] and t.items.tolist() == [1, 2, 3, 6, 7]
    _same(store, [1, 2], all_vectors=False)      # runs whose cells all have vectors


def test_a_cell_without_vector_is_read_from_the_scores(store):
    store.ingest([make_run("a", files=["a"], scores=[1, 0, 1], extra_cells=[("u", "em", [0.5])]),
                  make_run("b", files=["b"], scores=[0, 0, 1, 1], item_ids=["0", "1", "2", "3"])])
    want = store._item_matrices_scores([("t", "acc"), ("u", "em")])
    store._write(lambda con: con.execute("DELETE FROM vectors WHERE run_id = 2"), "test")
    got = store.item_matrices([("t", "acc"), ("u", "em")])
    assert list(got) == [("t", "acc"), ("u", "em")]
    for key, mat in want.items():
        np.testing.assert_array_equal(got[key].scores, mat.scores)
        np.testing.assert_array_equal(got[key].items, mat.items)
        np.testing.assert_array_equal(got[key].run_ids, mat.run_ids)
    # the codes as matrices from the score rows: the same matrices, and the same clusters
    # as the codes as rows (unlabelled items may be numbered in another order)
    tms = [("t", "acc"), ("u", "em")]
    coded = store.item_code_matrices(tms)
    for key, mat in want.items():
        np.testing.assert_array_equal(coded[key][0].scores, mat.scores)
    assert _partition(_code_matrix_rows(store, tms, None)) == \
        _partition(store.item_cluster_codes(tms))


def _some_runs():
    return [make_run("a", files=["a"], scores=[1, 0, 1, 1], answers=2, clusters=["p", "p", "q", None]),
            make_run("b", files=["b"], scores=[0.3, 0.9], task="u"),
            make_run("c", files=["c"], scores=[0, 1, 1], item_ids=["1", "2", "9"],
                     extra_cells=[("u", "acc", [1, 0])])]


def test_fill_writes_the_vectors_ingest_wrote(store):
    store.ingest(_some_runs())
    with store._read() as con:
        written = con.execute("SELECT * FROM vectors ORDER BY run_id, task, metric").fetchall()

    def refill(con):
        con.execute("DELETE FROM vectors")
        return vectors.fill(con, chunk_rows=5)   # one run per chunk

    assert store._write(refill, "test") == len(written)
    with store._read() as con:
        assert con.execute("SELECT * FROM vectors ORDER BY run_id, task, metric"
                           ).fetchall() == written


def test_a_v3_store_is_upgraded_to_vectors_on_open(store_location):
    store = store_location.open()
    store.ingest(_some_runs())
    before = _same(store)

    def downgrade(con):
        con.execute("DROP TABLE vectors")
        con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")

    store._write(downgrade, "downgrading", checks=())
    close_connections(open_connection_keys())
    upgraded = store_location.open()
    with upgraded._read() as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                           ).fetchone() == ("4",)
    after = _same(upgraded)
    for key, mat in before.items():
        np.testing.assert_array_equal(mat.scores, after[key].scores)


def test_migrate_and_a_legacy_file_have_vectors(store_locations, tmp_path):
    first = store_locations.new("first").open()
    first.ingest(_some_runs())
    want = _same(first)
    path = export_legacy(first, tmp_path / "old.duckdb")
    for store in (Store(path), None):
        if store is None:
            store = store_locations.new("new").open()
            migrate(path, store)
        got = _same(store)
        for key, mat in want.items():
            np.testing.assert_array_equal(mat.scores, got[key].scores)


def test_runs_with_and_without_labels_in_one_block(store):
    # same keys for both runs (one block in the decode); only run a has cluster labels
    store.ingest([make_run("a", files=["a"], scores=[1, 0, 1, 1], clusters=["p", "q", "p", None]),
                  make_run("b", files=["b"], scores=[0, 0, 1, 1])])
    with store._read() as con:
        assert con.execute("SELECT count(labs) FROM vectors").fetchone() == (1,)
    _same(store)
    codes = store.item_cluster_codes([("t", "acc")])
    a = codes[codes["run_id"] == 1]
    # p, q: codes 0, 1; then each unlabelled item its own code, numbered item by item
    # (b's items 0, 1, 2: 2, 3, 4; item 3, unlabelled in both runs: 5 in both)
    assert a["code"].tolist() == [0, 1, 0, 5] and a["has_cluster"].tolist() == [True] * 3 + [False]
    b = codes[codes["run_id"] == 2]
    assert b["code"].tolist() == [2, 3, 4, 5] and not b["has_cluster"].any()


def test_runs_with_the_same_labels_give_one_code_column(store):
    # three runs, one block, the same labels in every run: the label keys and the codes
    # come as read-only views repeating one column (no items x runs copy), with the values
    # of the materialized codes; runs whose labels differ get whole matrices
    clusters = ["p", "q", "p", "r"]
    store.ingest([make_run(n, files=[n], scores=s, clusters=clusters)
                  for n, s in (("a", [1, 0, 1, 1]), ("b", [0, 0, 1, 1]), ("c", [1, 1, 0, 0]))]
                 + [make_run("d", files=["d"], scores=[1, 0, 0, 1], task="u",
                             clusters=["p", "q", "p", "r"]),
                    make_run("e", files=["e"], scores=[0, 1, 1, 1], task="u",
                             clusters=["p", "p", "q", "q"])])
    _same(store)
    got = store.item_code_matrices([("t", "acc"), ("u", "acc")])
    im, code, has = got[("t", "acc")]
    assert im.scores.flags.c_contiguous and im.run_ids.tolist() == [1, 2, 3]
    assert code.shape == has.shape == (4, 3) and code.strides[1] == 0 and has.strides[1] == 0
    assert not code.flags.writeable
    np.testing.assert_array_equal(code, np.repeat(np.array([[0], [1], [0], [2]]), 3, axis=1))
    assert has.all()
    im, code, has = got[("u", "acc")]
    assert code.strides[1] != 0 and code.flags.writeable
    # d: p q p r -> 0 1 0 2; e: p p q q -> 0 0 1 1 (the label keys ranked over the cell)
    np.testing.assert_array_equal(code, [[0, 0], [1, 0], [0, 1], [2, 1]])


def test_the_vector_read_within_one_version_reads_the_pinned_snapshot(store, store_location):
    # the asked cells come from the pinned snapshot's copy of the cells table and the vectors
    # and score rows from the same snapshot: writes of another process during the block
    # (a run ingested, a run deleted) are not seen, and no error
    store.ingest([make_run("a", files=["a"], scores=[1, 0, 1], clusters=["p", "q", "p"]),
                  make_run("b", files=["b"], scores=[0, 0, 1], clusters=["p", "q", "p"])])
    with store.one_version():
        assert store.runs()["name"].tolist() == ["a", "b"]       # the copy of this snapshot
        other = store_location.open()
        other.ingest([make_run("c", files=["c"], scores=[1, 1, 1])])
        other.delete_run("b")
        got = store.item_matrices([("t", "acc")], run_ids=[1, 2])[("t", "acc")]
        assert got.run_ids.tolist() == [1, 2]
        np.testing.assert_array_equal(got.scores, [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
        im, code, _ = store.item_code_matrices([("t", "acc")], run_ids=[1, 2])[("t", "acc")]
        assert im.run_ids.tolist() == [1, 2] and code[:, 0].tolist() == [0, 1, 0]
        other.delete_run("c")
        assert store.item_matrices([("t", "acc")])[("t", "acc")].run_ids.tolist() == [1, 2]
    # the next version: without b and c
    assert store.item_matrices([("t", "acc")])[("t", "acc")].run_ids.tolist() == [1]
