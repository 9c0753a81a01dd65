"""A big ingest is written in slices of whole tasks (``batch.task_slices``, ``SLICE_ROWS``)
inside its one transaction: the store it leaves is the one a single write leaves, row for
row and key for key; a failure in a later slice leaves the store as it was."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from evalcore.errors import StoreError
from evalcore.ingest import read_paths
from evalcore.store import batch as store_batch
from evalcore.store.schema import TABLES

from .conftest import make_run, store_fingerprint

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures"


def _tidy_table(path: Path, seed: int) -> Path:
    """A tidy CSV in shuffled row order: 5 models, tasks whose names sort differently as
    bytes and as text ('Alpha' < 'a' < 'beta' < 'beta_2' < 'zeta' < 'é'), items that
    differ by model, two metrics, up to 3 answers, cluster labels."""
    rng = random.Random(seed)
    rows = set()
    for m in range(5):
        for t in ("zeta", "Alpha", "beta", "beta_2", "é-task", "a"):
            for i in range(rng.randint(30, 90)):
                if rng.random() < 0.2:
                    continue
                item = f"id{rng.randint(0, 300)}_{i}"
                for metric in ("acc", "f1"):
                    for a in range(rng.choice((1, 1, 3))):
                        rows.add((f"model_{m}", t, item, metric, a, f"{rng.random():.3f}",
                                  f"c{i % 7}"))
    lines = [",".join(map(str, r)) + "\n" for r in sorted(rows)]
    rng.shuffle(lines)
    path.write_text("model,task,item_id,metric,answer,score,cluster\n" + "".join(lines),
                    encoding="utf-8")
    return path


def _tables(store) -> dict[str, list]:
    """Every table's rows, sorted, without the times of the write (runs.created_at,
    files.added_at) and the count of write transactions (compact() may merge the slices'
    extra files in transactions of its own)."""
    out = {}
    with store._read() as con:
        for table in TABLES:
            got = con.execute(f"SELECT * FROM {table}").fetch_arrow_table()
            got = got.drop_columns([c for c in ("created_at", "added_at")
                                    if c in got.column_names])
            rows = [tuple(r.values()) for r in got.to_pylist()]
            if table == "meta":
                rows = [r for r in rows if r[0] != "write_counter"]
            out[table] = sorted(rows, key=repr)
    return out


def _ingest_all(store, calls: list[list]) -> list:
    return [store.ingest(read_paths(paths).runs, skip_invalid=True) for paths in calls]


def test_a_sliced_ingest_stores_what_one_write_stores(store_locations, tmp_path, monkeypatch):
    """Tidy tables (shuffled rows, clusters, answers), lm_eval and inspect runs with texts and
    hashes, a merge of samples into a stored results-only run and a repeat: written in slices
    of a few hundred rows, every table equals the one-write store's, keys included."""
    tidy_a = _tidy_table(tmp_path / "a.csv", 1)
    tidy_b = _tidy_table(tmp_path / "b.csv", 2)
    lm_eval = FIXTURES / "lm_eval"
    calls = [[tidy_a], [FIXTURES / "inspect", lm_eval / "results_v0.4.13dev_qwen3-8b_"
                                                      "negotiationtom-group_limit20.json"],
             [lm_eval, tidy_b], [tidy_a]]
    one = store_locations.new("one").open(lock_timeout=5.0)
    one_reports = _ingest_all(one, calls)

    writes: list[int] = []
    real = store_batch._Batch._write_keyed

    def counted(self, con, overlap=True):
        writes.append(sum(t.num_rows for part in ("scores", "texts")
                          for _rid, t, _c in self.tables[part]))
        return real(self, con, overlap)

    monkeypatch.setattr(store_batch, "SLICE_ROWS", 700)
    monkeypatch.setattr(store_batch._Batch, "_write_keyed", counted)
    sliced = store_locations.new("sliced").open(lock_timeout=5.0)
    sliced_reports = _ingest_all(sliced, calls)

    assert len(writes) > 2 * len(calls)          # it did slice
    assert [r.runs.drop(columns="warnings").values.tolist() for r in sliced_reports] == \
        [r.runs.drop(columns="warnings").values.tolist() for r in one_reports]
    assert sliced_reports[-1].already_present
    assert "merged" in set(sliced_reports[2].runs["status"])
    expected, got = _tables(one), _tables(sliced)
    for table in TABLES:
        assert got[table] == expected[table], table
    assert len(expected["scores"]) > 5_000 and len(expected["texts"]) > 50


def test_a_failure_in_a_later_slice_leaves_the_store_as_it_was(store, tmp_path, monkeypatch):
    store.ingest([make_run("kept", scores=[1, 0, 1])])
    before = store_fingerprint(store)
    real = store_batch._Batch._write_keyed
    calls: list[int] = []

    def third_fails(self, con, overlap=True):
        calls.append(1)
        if len(calls) == 3:
            raise StoreError("disk trouble in the third slice")
        return real(self, con, overlap)

    monkeypatch.setattr(store_batch, "SLICE_ROWS", 500)
    monkeypatch.setattr(store_batch._Batch, "_write_keyed", third_fails)
    runs = read_paths([_tidy_table(tmp_path / "a.csv", 3)]).runs
    with pytest.raises(StoreError, match="third slice"):
        store.ingest(runs)
    assert len(calls) == 3
    assert store_fingerprint(store) == before
    monkeypatch.setattr(store_batch._Batch, "_write_keyed", real)
    report = store.ingest(runs)                  # and the same runs go in whole afterwards
    assert set(report.runs["status"]) == {"added"}
    assert len(store.scores(report.runs["run_id"].tolist())) == sum(len(r.scores) for r in runs)


def _part(rid: int, tasks: list[str]) -> tuple[int, pa.Table, bool]:
    return rid, pa.table({"task": pa.array(tasks, pa.large_string()),
                          "row": pa.array(range(len(tasks)))}), False


def test_slices_are_whole_tasks_in_byte_order_within_the_limit():
    scores = [_part(1, ["b"] * 3 + ["Z"] * 2 + ["a"] * 4), _part(2, ["a", "b", "é", "b"])]
    texts = [_part(1, ["a", "a", "é"])]
    got = list(store_batch.task_slices(scores, texts, 6))
    # rows per task: Z 2, a 7, b 5, é 2 (byte order: 'Z' < 'a' < 'b' < 'é')
    tasks = [sorted({t for _r, tbl, _c in s + x for t in tbl.column("task").to_pylist()})
             for s, x in got]
    assert tasks == [["Z"], ["a"], ["b"], ["é"]]    # 'a' alone is over the limit: its own slice
    for (s, x), want in zip(got, tasks):
        assert [rid for rid, _t, _c in s] == sorted({rid for rid, _t, _c in s})
        for (rid, tbl, _c) in s:              # a part's rows of the slice, in their order
            src = dict((r, t) for r, t, _ in scores)[rid]
            rows = [i for i, t in enumerate(src.column("task").to_pylist()) if t in want]
            assert tbl.column("row").to_pylist() == rows
    assert sum(t.num_rows for s, x in got for _r, t, _c in s + x) == 16
    # all within the limit: the lists as given, one slice
    assert list(store_batch.task_slices(scores, texts, 16)) == [(scores, texts)]
    got = list(store_batch.task_slices(scores, texts, 9))
    assert [sum(t.num_rows for _r, t, _c in s + x) for s, x in got] == [9, 7]   # Z+a, b+é


def test_vectors_encoded_in_chunks_of_whole_cells_equal_one_encoding():
    """``vectors.write_sorted`` cuts the rows only where (task, metric) changes: the vector
    rows equal those of one ``encode`` (runs with gaps, several answers, labels)."""
    import duckdb
    import numpy as np

    from evalcore.store import vectors
    rng = np.random.default_rng(5)
    parts = []
    for t in range(4):
        for m in range(3):
            for run in (1, 2, 3):
                items = np.sort(rng.choice(400, size=rng.integers(50, 300), replace=False))
                k = rng.integers(1, 3)
                n = items.size * k
                parts.append(pa.table({
                    "run_id": pa.array(np.full(n, run, np.int32)),
                    "task": pa.array(np.full(n, f"t{t}")), "metric": pa.array(np.full(n, f"m{m}")),
                    "item": pa.array(np.repeat(items + 1000 * t, k).astype(np.int32)),
                    "answer_idx": pa.array(np.tile(np.arange(k, dtype=np.int32), items.size)),
                    "score": pa.array(rng.integers(0, 2, n).astype(float) if m else rng.random(n)),
                    "cluster": pa.array(np.repeat(items % 9, k).astype(np.int32)),
                    "item_hash": pa.nulls(n, pa.int32()), "prompt_hash": pa.nulls(n, pa.int32())}))
    rows = pa.concat_tables(parts).combine_chunks()
    task = np.repeat(np.arange(len(parts)) // 3, [p.num_rows for p in parts])
    metric = np.repeat(np.arange(len(parts)) // 3 % 3, [p.num_rows for p in parts])
    con = duckdb.connect()
    con.register("_e", vectors.VECTOR_SCHEMA.empty_table())
    con.execute("CREATE TABLE vectors AS SELECT * FROM _e")
    written = vectors.write_sorted(con, rows, task, metric, chunk_rows=700)
    got = con.execute("SELECT * FROM vectors").fetch_arrow_table().to_pylist()
    want = vectors.encode(rows).to_pylist()
    assert written == len(want) == 36
    key = lambda r: (r["run_id"], r["task"], r["metric"])  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
