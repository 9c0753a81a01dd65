"""cellstats: the cell statistics and text duplicate counts of an incoming run, on integer
codes, against the DuckDB GROUP BY queries they replace (an independent implementation)."""

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from evalcore.store import keys
from evalcore.store.cellstats import CELL_SCHEMA, cell_stats, duplicate_texts

_SQL_CELLS = (
    "SELECT task, metric, count(*) AS n_items, CAST(sum(k) AS BIGINT) AS n_scores, "
    "CAST(max(k) AS INTEGER) AS k_max, sum(m) AS sum, sum(m * m) AS sumsq, "
    "bool_and(bin) AS is_binary, bool_or(hc) AS has_cluster FROM ("
    "  SELECT task, metric, item_id, avg(score) AS m, count(*) AS k, "
    "  bool_and(score = 0 OR score = 1) AS bin, bool_or(cluster IS NOT NULL) AS hc "
    "  FROM s GROUP BY task, metric, item_id) "
    "GROUP BY task, metric ORDER BY task, metric")


def _scores(rng, n, binary, chunks=1, clusters=True):
    tasks = np.array(["b_task", "a_task", "ä", "a", "a_task_long_name_beyond_seven"])
    metrics = np.array(["acc", "acc_norm", "exact_match,strict", "Acc"])
    items = np.array([str(i) for i in range(max(n // 3, 2))] + ["10", "1", "01"])
    score = (rng.random(n) < 0.6).astype(float) if binary else rng.normal(size=n)
    cluster = np.where(rng.random(n) < 0.3, "c" + (rng.integers(0, 5, n)).astype(str), None)
    if not clusters:
        cluster[:] = None
    cols = {"task": tasks[rng.integers(0, len(tasks), n)],
            "metric": metrics[rng.integers(0, len(metrics), n)],
            "item_id": items[rng.integers(0, len(items), n)],
            "answer_idx": rng.integers(0, 3, n).astype(np.int32), "score": score,
            "cluster": cluster}
    bounds = np.linspace(0, n, chunks + 1).astype(int)
    table = {}
    for c, v in cols.items():
        typ = {"answer_idx": pa.int32(), "score": pa.float64()}.get(c, pa.large_string())
        table[c] = pa.chunked_array([pa.array(v[lo:hi].tolist(), typ)
                                     for lo, hi in zip(bounds[:-1], bounds[1:])], typ)
    return pa.table(table)


def _reference(scores):
    con = duckdb.connect()
    con.register("s", scores)
    return con.sql(_SQL_CELLS).to_arrow_table()


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("n, chunks", [(1, 1), (7, 2), (500, 3), (20_000, 4)])
def test_cell_stats_equal_the_sql_grouping(binary, n, chunks):
    rng = np.random.default_rng(n + binary)
    scores = _scores(rng, n, binary, chunks, clusters=n != 7)
    (codes,), items = keys.encode([scores.column("item_id")])
    got, k_max = cell_stats(scores, codes, len(items))
    ref = _reference(scores)
    assert got.schema == CELL_SCHEMA
    for col in ("task", "metric", "n_items", "n_scores", "k_max", "is_binary", "has_cluster"):
        assert got.column(col).to_pylist() == ref.column(col).to_pylist(), col
    for col in ("sum", "sumsq"):   # summation order may differ in the last bits
        np.testing.assert_allclose(got.column(col).to_numpy(), ref.column(col).to_numpy(),
                                   rtol=1e-12, atol=1e-9)
    if binary:   # cells of one 0/1 row per item: whole numbers, exact in any order
        one = np.asarray(ref.column("k_max")) == 1
        assert (got.column("sum").to_numpy()[one] == ref.column("sum").to_numpy()[one]).all()
    assert k_max == max(ref.column("k_max").to_pylist())


def test_cell_stats_sparse_keys_take_the_sorting_path():
    """Many distinct item ids over few rows: the key range is too wide for a dense count."""
    rng = np.random.default_rng(5)
    scores = _scores(rng, 3000, False)
    (codes,), items = keys.encode([scores.column("item_id")])
    got, _ = cell_stats(scores, codes, len(items) * 1000)   # a wider dictionary than used
    ref = _reference(scores)
    assert got.column("n_items").to_pylist() == ref.column("n_items").to_pylist()
    assert got.column("k_max").to_pylist() == ref.column("k_max").to_pylist()
    np.testing.assert_allclose(got.column("sum").to_numpy(), ref.column("sum").to_numpy(),
                               rtol=1e-12)


def test_cell_stats_of_no_rows():
    empty = _scores(np.random.default_rng(0), 0, True)
    got, k_max = cell_stats(empty, np.zeros(0, np.int32), 0)
    assert got.num_rows == 0 and got.schema == CELL_SCHEMA and k_max == 0


@pytest.mark.parametrize("n", [0, 1, 2, 50, 5000])
def test_duplicate_texts_equal_the_sql_count(n):
    rng = np.random.default_rng(n)
    ids = [str(i) for i in rng.integers(0, max(n // 2, 1), n)]
    texts = pa.table({"task": pa.array(rng.choice(["x", "y", "yy"], n).tolist(), pa.large_string()),
                      "item_id": pa.array(ids, pa.large_string()),
                      "answer_idx": pa.array(rng.integers(0, 2, n), pa.int32())})
    (codes,), items = keys.encode([texts.column("item_id")])
    con = duckdb.connect()
    con.register("t", texts)
    ref = con.execute("SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM t "
                      "GROUP BY task, item_id, answer_idx HAVING count(*) > 1)").fetchone()[0]
    assert duplicate_texts(texts, codes, len(items)) == ref
    if n > 2:
        assert ref > 0   # the case is exercised


def test_duplicate_texts_too_wide_a_key_is_left_to_the_caller():
    texts = pa.table({"task": pa.array(["x", "x"], pa.large_string()),
                      "item_id": pa.array(["1", "2"], pa.large_string()),
                      "answer_idx": pa.array([0, 2 ** 31 - 1], pa.int32())})
    (codes,), _ = keys.encode([texts.column("item_id")])
    assert duplicate_texts(texts, codes, 2 ** 40) is None
