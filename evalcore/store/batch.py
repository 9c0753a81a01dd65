"""One ingest call's writes: what ``Store.ingest`` gathers run by run (``_Batch``) and
writes with one statement per table, including the integer keys of items and labels
(schema 3: the (task, item_id) and (task, label/hash) strings of the call are looked up, new
ones numbered from meta counters and inserted; store/keys.py does it in Arrow and numpy)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.store import keys, vectors
from evalcore.store._util import _json_dumps, _json_loads, _log, _one, meta_value, one_array
from evalcore.threads import release_free_heap

_RUNS_SCHEMA = pa.schema([("run_id", pa.int32()), ("name", pa.string()), ("model", pa.string()),
                          ("source_format", pa.string()), ("harness", pa.string()),
                          ("harness_version", pa.string()), ("protocol", pa.string()),
                          ("tags", pa.list_(pa.string())), ("created_at", pa.timestamp("us")),
                          ("source_key", pa.string())])
_FILES_SCHEMA = pa.schema([("key", pa.string()), ("sha256", pa.string()), ("run_id", pa.int32()),
                           ("name", pa.string()), ("size", pa.int64()), ("format", pa.string()),
                           ("added_at", pa.timestamp("us"))])
_TASKS_SCHEMA = pa.schema([("run_id", pa.int32()), ("task", pa.string()),
                           ("n_choices", pa.int32()), ("protocol", pa.string())])
# column order of the data tables as stored (run_id first, then the incoming table's columns)
_TABLE_COLUMNS = {
    "scores": "run_id, task, metric, item_id, answer_idx, score, cluster, item_hash, prompt_hash",
    "cells": "run_id, task, metric, n_items, n_scores, k_max, sum, sumsq, is_binary, has_cluster",
    "summaries": "run_id, task, metric, value, stderr, stderr_raw, n, is_group",
    "texts": "run_id, task, item_id, answer_idx, prompt, target, response",
}


# Rows (scores and texts) of one keyed write at most, unless a single task has more: a
# bigger write goes in slices of whole tasks (``task_slices``) inside the one transaction.
# Each slice adds a Parquet file per written table (scores, items, labels, vectors).
SLICE_ROWS = 1_000_000


class _Batch:
    """What one ingest call writes, gathered run by run and written by ``flush`` with one
    statement per table. Lookups see the store plus the runs decided earlier in the call
    (two halves of one run in one call merge as they would in two calls)."""

    def __init__(self, file_owner: dict[str, int], unique_name):
        self._unique_name = unique_name               # Store._unique_name
        self.file_owner = dict(file_owner)            # file key -> run (stored or new)
        self.new_runs: dict[int, dict] = {}           # run rows to insert
        self.updated_runs: set[int] = set()           # stored runs merged into
        self.run_rows: dict[int, dict] = {}           # rows of stored runs read (and changed)
        self.source_keys: dict[str, int] = {}
        self.names: set[str] = set()
        self.files: list[list] = []
        self.tables: dict[str, list[tuple[int, pa.Table, bool]]] = {
            "scores": [], "cells": [], "summaries": [], "texts": []}
        self._cells: dict[int, set] = {}
        self._summ: dict[int, set] = {}
        self._tasks: dict[int, dict] = {}
        self._next_run_id: int | None = None
        self._first_run_id: int | None = None
        self.meta: dict[str, str] = {}                # meta rows to update (one UPDATE)
        # held by the texts INSERT; a LazyRun's read-ahead of its next piece takes it too, so
        # the two biggest buffers of a lazy write (DuckDB's Parquet row groups of the texts,
        # the next file's parsed columns) are never built at the same time
        self.texts_lock = threading.Lock()

    # ---- lookups ------------------------------------------------------------------
    def new_run_id(self, con: duckdb.DuckDBPyConnection) -> int:
        if self._next_run_id is None:
            self._next_run_id = int(meta_value(con, "next_run_id"))
            self._first_run_id = self._next_run_id
        rid = self._next_run_id
        self._next_run_id += 1
        return rid

    def run_of_source_key(self, con: duckdb.DuckDBPyConnection, key: str) -> int | None:
        if key in self.source_keys:
            return self.source_keys[key]
        row = _one(con, "SELECT min(run_id) FROM runs WHERE source_key = ?", [key])
        return int(row[0]) if row and row[0] is not None else None

    def run_row(self, con: duckdb.DuckDBPyConnection, rid: int) -> dict:
        if rid in self.new_runs:
            return self.new_runs[rid]
        if rid not in self.run_rows:
            name, model, harness, hv, proto, skey = _one(
                con, "SELECT name, model, harness, harness_version, protocol, source_key FROM runs "
                "WHERE run_id = ?", [rid])
            self.run_rows[rid] = {"run_id": rid, "name": name, "model": model, "harness": harness,
                                  "harness_version": hv, "protocol": _json_loads(proto),
                                  "source_key": skey}
        return self.run_rows[rid]

    def name_of(self, con: duckdb.DuckDBPyConnection, rid: int) -> str:
        return self.run_row(con, rid)["name"]

    def unique_name(self, con: duckdb.DuckDBPyConnection, base: str, hint: str | None) -> str:
        return self._unique_name(con, base, hint=hint, pending=self.names)

    def cells_of(self, con: duckdb.DuckDBPyConnection, rid: int, status: str) -> set:
        if rid not in self._cells:
            self._cells[rid] = set() if rid in self.new_runs else {
                (t, m) for t, m in con.execute("SELECT task, metric FROM cells WHERE run_id = ?",
                                               [rid]).fetchall()}
        return self._cells[rid]

    def summaries_of(self, con: duckdb.DuckDBPyConnection, rid: int, status: str) -> set:
        if rid not in self._summ:
            self._summ[rid] = set() if rid in self.new_runs else {
                (t, m) for t, m in con.execute(
                    "SELECT task, metric FROM summaries WHERE run_id = ?", [rid]).fetchall()}
        return self._summ[rid]

    def tasks_of(self, con: duckdb.DuckDBPyConnection, rid: int, status: str) -> dict:
        """task -> (n_choices, protocol dict, state: stored / updated / new)"""
        if rid not in self._tasks:
            self._tasks[rid] = {} if rid in self.new_runs else {
                t: (nc, _json_loads(pr), "stored") for t, nc, pr in con.execute(
                    "SELECT task, n_choices, protocol FROM tasks WHERE run_id = ?",
                    [rid]).fetchall()}
        return self._tasks[rid]

    def add_table(self, table: str, rid: int, data: pa.Table, check: bool = False) -> None:
        self.tables[table].append((rid, data, check))

    def key_checks(self) -> tuple:
        """The keys of schema.KEY_CHECKS, checked over what this call wrote only (so the
        check costs the same in an empty and in a big store)."""
        runs = sorted(set(self.new_runs) | self.updated_runs | set(self._tasks)
                      | {rid for parts in self.tables.values() for rid, _, _ in parts})
        names = sorted(r["name"] for r in self.new_runs.values())
        keys = sorted(f[0] for f in self.files)
        per_run = "list_contains(?, run_id)"
        return (
            ("run id", f"SELECT run_id FROM runs WHERE {per_run} GROUP BY run_id "
                       "HAVING count(*) > 1 LIMIT 1", [runs]),
            ("run name", "SELECT name FROM runs WHERE list_contains(?, name) GROUP BY name "
                         "HAVING count(*) > 1 LIMIT 1", [names]),
            ("file key", "SELECT key FROM files WHERE list_contains(?, key) GROUP BY key "
                         "HAVING count(*) > 1 LIMIT 1", [keys]),
            ("cell", f"SELECT run_id, task, metric FROM cells WHERE {per_run} GROUP BY ALL "
                     "HAVING count(*) > 1 LIMIT 1", [runs]),
            ("summary", f"SELECT run_id, task, metric FROM summaries WHERE {per_run} "
                        "GROUP BY ALL HAVING count(*) > 1 LIMIT 1", [runs]),
            ("vector", f"SELECT run_id, task, metric FROM vectors WHERE {per_run} "
                       "GROUP BY ALL HAVING count(*) > 1 LIMIT 1", [runs]),
            ("task", f"SELECT run_id, task FROM tasks WHERE {per_run} GROUP BY ALL "
                     "HAVING count(*) > 1 LIMIT 1", [runs]),
        )

    # ---- the writes ---------------------------------------------------------------
    @staticmethod
    def _with_run_id(parts: list[tuple[int, pa.Table, bool]], flag: bool = False) -> pa.Table:
        tables = []
        for rid, t, check in parts:
            t = t.add_column(0, "run_id", pa.array(np.full(t.num_rows, rid, dtype=np.int32)))
            if flag:
                t = t.append_column("_check", pa.array(np.full(t.num_rows, check)))
            tables.append(t if not tables else t.cast(tables[0].schema))
        return pa.concat_tables(tables)

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        """One INSERT per table (and one UPDATE for merged stored runs / tasks)."""
        def insert(sql: str, data: pa.Table, params: list | None = None) -> None:
            con.register("_in_batch", data)
            try:
                con.execute(sql, params or [])
            finally:
                con.unregister("_in_batch")

        if self.new_runs:
            rows = sorted(self.new_runs.values(), key=lambda r: r["run_id"])
            data = {c: [r[c] if c != "protocol" else _json_dumps(r[c]) for r in rows]
                    for c in _RUNS_SCHEMA.names}
            insert("INSERT INTO runs SELECT * FROM _in_batch",
                   pa.Table.from_pydict(data, schema=_RUNS_SCHEMA))
            self.meta["next_run_id"] = str(self._next_run_id)
        if self.updated_runs:
            rows = [self.run_rows[r] for r in sorted(self.updated_runs)]
            upd = pa.table({"run_id": pa.array([r["run_id"] for r in rows], pa.int32()),
                            "model": pa.array([r["model"] for r in rows], pa.string()),
                            "harness": pa.array([r["harness"] for r in rows], pa.string()),
                            "harness_version": pa.array([r["harness_version"] for r in rows],
                                                        pa.string()),
                            "protocol": pa.array([_json_dumps(r["protocol"]) for r in rows],
                                                 pa.string()),
                            "source_key": pa.array([r["source_key"] for r in rows], pa.string())})
            insert("UPDATE runs SET model = u.model, harness = u.harness, "
                   "harness_version = u.harness_version, protocol = u.protocol, "
                   "source_key = u.source_key FROM _in_batch u WHERE runs.run_id = u.run_id", upd)
        if self.files:
            cols = list(zip(*self.files))
            insert("INSERT INTO files SELECT * FROM _in_batch", pa.Table.from_arrays(
                [pa.array(c, type=f.type) for c, f in zip(cols, _FILES_SCHEMA)],
                schema=_FILES_SCHEMA))
        for table in ("cells", "summaries"):
            if self.tables[table]:
                insert(f"INSERT INTO {table} SELECT {_TABLE_COLUMNS[table]} FROM _in_batch",
                       self._with_run_id(self.tables[table]))
        self.flush_keyed(con)
        if self.meta:
            insert("UPDATE meta SET value = u.value FROM _in_batch u WHERE meta.key = u.key",
                   pa.table({"key": pa.array(list(self.meta), pa.string()),
                             "value": pa.array(list(self.meta.values()), pa.string())}))
        new_tasks, upd_tasks = [], []
        for rid, info in sorted(self._tasks.items()):
            for t, (nc, proto, state) in info.items():
                if state == "new":
                    new_tasks.append((rid, t, nc, _json_dumps(proto)))
                elif state == "updated":
                    upd_tasks.append((rid, t, nc, _json_dumps(proto)))
        for rows, sql in ((new_tasks, "INSERT INTO tasks SELECT * FROM _in_batch"),
                          (upd_tasks, "UPDATE tasks SET n_choices = u.n_choices, "
                                      "protocol = u.protocol FROM _in_batch u "
                                      "WHERE tasks.run_id = u.run_id AND tasks.task = u.task")):
            if rows:
                cols = list(zip(*rows))
                insert(sql, pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in
                                                  zip(cols, _TASKS_SCHEMA)], schema=_TASKS_SCHEMA))


    def pending_bytes(self) -> int:
        """Bytes of the scores and texts gathered and not written yet."""
        return sum(t.nbytes for table in ("scores", "texts") for _rid, t, _c in self.tables[table])

    def flush_keyed(self, con: duckdb.DuckDBPyConnection, overlap: bool = True) -> None:
        """Write the scores and texts gathered so far (``_write_keyed``) and drop them: a
        LazyRun's pieces are written as they come inside the transaction (their cells,
        which are complete per piece, go with ``flush``). ``overlap``: compute the label
        pairs in the helper thread (faster, more memory: a LazyRun's writes go without; the
        whole write of a LazyRun runs on one DuckDB thread, set by ``Store.ingest``).

        More than ``SLICE_ROWS`` rows are written in slices of whole tasks
        (``task_slices``), one ``_write_keyed`` each, so the work arrays of the keys, the
        sort and the vectors hold one slice, not the whole call (measured, a tidy table of
        5.55M score rows: +770 MB in one write). The slices give the keys and the row order
        of one write: new keys are numbered in (task, text) byte order and scores are
        sorted task first, and the slices come in task byte order."""
        pending = (self.tables["scores"], self.tables["texts"])
        try:
            sliced = False
            for scores, texts in task_slices(*pending, SLICE_ROWS):
                if sliced:
                    release_free_heap()   # the last slice's work arrays
                sliced = sliced or scores is not pending[0]
                # _write_keyed writes what self.tables holds (and lets the texts go once
                # they are written)
                self.tables["scores"], self.tables["texts"] = scores, texts
                if scores or texts:
                    self._write_keyed(con, overlap)
            if sliced:
                release_free_heap()
        finally:
            self.tables["scores"], self.tables["texts"] = pending
            self.tables["scores"].clear()
            self.tables["texts"].clear()

    def _write_keyed(self, con: duckdb.DuckDBPyConnection, overlap: bool = True) -> None:
        """Scores and texts with integer keys (``keys.assign``: stored (task, item_id) and
        (task, label/hash) pairs keep their keys, new ones are numbered from meta, so two
        writers adding keys conflict on meta and the retry re-reads), then one INSERT each,
        rows in the order (task, metric, item, run_id, answer_idx) for scores and (task,
        item, answer_idx, run_id) for texts, sorted in numpy on integer codes. Texts: the
        first row of each (run, task, item, answer) in this call, and for a merge into a
        stored run only the rows it does not have yet; streamed to the INSERT in slices.
        Statements in the order items, texts, labels, scores: the label pairs (with
        ``overlap``) and the scores' row order (no connection needed) are computed in a helper
        thread meanwhile."""
        scores = self._with_run_id(self.tables["scores"]) if self.tables["scores"] else None
        texts = (self._with_run_id(self.tables["texts"], flag=True)
                 if self.tables["texts"] else None)
        parts = [t for t in (scores, texts) if t is not None]
        t0 = time.perf_counter()
        (task_codes, tasks) = keys.encode([t.column("task") for t in parts])
        task_order = keys.byte_order(tasks)
        task_rank = keys.rank_of(task_order)
        n_s = scores.num_rows if scores is not None else 0
        # a helper thread computes what needs no connection (the label pairs, the scores'
        # row order) while the connection writes items and texts: Arrow and numpy release
        # the GIL, DuckDB too
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbars-keys")
        try:
            if scores is not None:
                if overlap:
                    labels_fut = pool.submit(self._label_pairs, scores, task_codes[0], task_order)
                metric_codes, metrics = keys.encode([scores.column("metric")])
                run = scores.column("run_id").to_numpy()
                answer = scores.column("answer_idx").to_numpy()
            all_tasks = np.concatenate(task_codes)
            item_codes, item_ids = keys.encode([t.column("item_id") for t in parts])
            (item,) = keys.assign(con, "items", "item", "item_id", "next_item", all_tasks, tasks,
                                  task_order, [np.concatenate(item_codes)], item_ids, self.meta)
            del item_codes, item_ids, all_tasks
            if scores is not None:
                s_item = item[:n_s]
                metric_rank = keys.rank_of(keys.byte_order(metrics))
                order_fut = pool.submit(_lexsort, (answer, run, s_item, metric_rank[metric_codes[0]],
                                                     task_rank[task_codes[0]]))
            if texts is not None:
                t1 = time.perf_counter()
                n_t = texts.num_rows
                self._write_texts(con, texts, task_codes[-1], tasks, task_rank, item[n_s:])
                _log.debug("ingest: %d texts in %.2f s", n_t, time.perf_counter() - t1)
                # written: let them go before the labels and scores (a LazyRun's next piece
                # is being read meanwhile)
                self.tables["texts"].clear()
                del texts, parts
            if scores is None:
                return
            lab_codes, values, found = (labels_fut.result() if overlap else
                                        self._label_pairs(scores, task_codes[0], task_order))
            label = keys.assign(con, "labels", "label", "value", "next_label", task_codes[0],
                                tasks, task_order, lab_codes, values, self.meta, found=found)
            del lab_codes, values, found
            _log.debug("ingest: keys and texts in %.2f s", time.perf_counter() - t0)
            t0 = time.perf_counter()
            order = order_fut.result()
        finally:
            pool.shutdown(wait=True)

        def lab(k: int) -> pa.Array:
            v = label[k][order]
            return pa.array(v, mask=v < 0)

        task_sorted, metric_sorted = task_codes[0][order], metric_codes[0][order]
        out = pa.table({
            "run_id": pa.array(run[order]),
            "task": pa.DictionaryArray.from_arrays(pa.array(task_sorted), tasks),
            "metric": pa.DictionaryArray.from_arrays(pa.array(metric_sorted), metrics),
            "item": pa.array(s_item[order]),
            "answer_idx": pa.array(answer[order]),
            "score": scores.column("score").take(pa.array(order)),
            "cluster": lab(0), "item_hash": lab(1), "prompt_hash": lab(2)})
        del scores, label, order
        # a registered Table stays referenced by the connection until the transaction
        # ends (measured, duckdb 1.4.4); a reader is consumed and let go: a LazyRun's
        # pieces are written one after the other in one transaction
        reader = pa.RecordBatchReader.from_batches(out.schema, iter(out.to_batches()))
        con.register("_in_s", reader)
        del reader
        try:
            con.execute("INSERT INTO scores SELECT * FROM _in_s")
        finally:
            con.unregister("_in_s")
        # schema 4: each new cell's item vector, from the rows just written (vectors.py);
        # the rows are sorted task, metric first
        vectors.write_sorted(con, out, task_sorted, metric_sorted)
        _log.debug("ingest: %d scores in %.2f s", out.num_rows, time.perf_counter() - t0)

    @staticmethod
    def _label_pairs(scores: pa.Table, task_codes: np.ndarray, task_order: np.ndarray) -> tuple:
        """(label codes of cluster, item_hash, prompt_hash; their dictionary; their
        ``keys.pairs``): the label keys' work that needs no connection."""
        lab_codes, values = keys.encode([scores.column(c) for c in
                                         ("cluster", "item_hash", "prompt_hash")])
        return lab_codes, values, keys.pairs(task_codes, task_order, lab_codes, values)

    _TEXT_SLICE = 65_536   # rows per streamed slice of the texts INSERT

    def _write_texts(self, con: duckdb.DuckDBPyConnection, texts: pa.Table,
                     task_codes: np.ndarray, tasks: pa.Array, task_rank: np.ndarray,
                     item: np.ndarray) -> None:
        """The texts INSERT (see ``_write_keyed``)."""
        run = texts.column("run_id").to_numpy()
        answer = texts.column("answer_idx").to_numpy()
        keep = np.ones(texts.num_rows, dtype=bool)
        check = np.asarray(texts.column("_check"))
        if check.any():   # a merge into a stored run: drop the rows it has
            at = np.flatnonzero(check)
            con.register("_chk", pa.table({"i": pa.array(at), "run_id": pa.array(run[at]),
                                           "item": pa.array(item[at]),
                                           "answer_idx": pa.array(answer[at])}))
            try:
                runs = sorted({int(r) for r in np.unique(run[at])})
                have = con.execute(
                    "SELECT c.i FROM _chk c WHERE EXISTS (SELECT 1 FROM texts x WHERE "
                    "list_contains(?, x.run_id) AND x.run_id = c.run_id AND x.item = c.item "
                    "AND x.answer_idx = c.answer_idx)", [runs]).fetchnumpy()["i"]
            finally:
                con.unregister("_chk")
            keep[np.asarray(have, dtype=np.int64)] = False
        rows = np.flatnonzero(keep)
        order = rows[_lexsort((run[rows], answer[rows], item[rows],
                                 task_rank[task_codes[rows]]))]   # stable: first row first
        if order.size > 1:   # the first of each (run, item, answer); the key fixes the task
            same = ((item[order][1:] == item[order][:-1]) & (answer[order][1:] == answer[order][:-1])
                    & (run[order][1:] == run[order][:-1]))
            if same.any():
                order = order[np.concatenate([[True], ~same])]
        body = texts.select(["prompt", "target", "response"])
        del texts
        schema = pa.schema([("run_id", pa.int32()),
                            ("task", pa.dictionary(pa.int32(), tasks.type)),
                            ("item", pa.int32()), ("answer_idx", pa.int32())]
                           + list(body.schema))

        def batches():
            for lo in range(0, order.size, self._TEXT_SLICE):
                sl = order[lo:lo + self._TEXT_SLICE]
                cols = _take_rows(body, sl)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(run[sl]), pa.DictionaryArray.from_arrays(
                        pa.array(task_codes[sl]), tasks),
                     pa.array(item[sl]), pa.array(answer[sl])]
                    + [one_array(c) for c in cols.columns], schema=schema)

        con.register("_in_t", pa.RecordBatchReader.from_batches(schema, batches()))
        try:
            with self.texts_lock:
                con.execute("INSERT INTO texts SELECT * FROM _in_t")
        finally:
            con.unregister("_in_t")


def task_slices(scores: list[tuple[int, pa.Table, bool]], texts: list[tuple[int, pa.Table, bool]],
                limit: int):
    """The (scores, texts) parts of a keyed write (lists of (run id, table, check) as
    ``_Batch.tables`` holds them) in slices of whole tasks: tasks in byte order (the order
    of ``keys.byte_order``), each slice the next tasks while their rows (scores and texts)
    stay within ``limit``; a task with more rows is a slice of its own. One slice (the
    lists as given) when all rows fit. A part's rows of a slice are its rows of the
    slice's tasks in their order (``_take_rows``: zero-copy slices when they are
    consecutive, as a table written task by task has them)."""
    parts = scores + texts
    if sum(t.num_rows for _rid, t, _check in parts) <= limit:
        yield scores, texts
        return
    # the tasks and their row counts, part by part (no array over all rows at once)
    counts: dict[str, int] = {}
    for _rid, t, _check in parts:
        got = pc.value_counts(t.column("task"))
        for task, n in zip(got.field("values").to_pylist(), got.field("counts").to_pylist()):
            counts[task] = counts.get(task, 0) + n
    tasks = pa.array(list(counts), pa.large_string())
    slice_of = np.empty(len(tasks), dtype=np.int32)   # by position in ``tasks``
    at, filled = 0, 0
    for code in keys.byte_order(tasks).tolist():
        n = counts[tasks[code].as_py()]
        if filled and filled + n > limit:
            at, filled = at + 1, 0
        slice_of[code] = at
        filled += n
    small = np.uint8 if at < 255 else np.int32
    # each part's slice number per row (one byte a row)
    row_slice = [slice_of[np.asarray(pc.index_in(t.column("task"), value_set=tasks)
                                     .combine_chunks(), dtype=np.int64)].astype(small)
                 for _rid, t, _check in parts]

    def rows_of(group: list[tuple[int, pa.Table, bool]], first: int, s: int) -> list:
        out = []
        for (rid, table, check), where in zip(group, row_slice[first:first + len(group)]):
            rows = np.flatnonzero(where == s)
            if rows.size:
                out.append((rid, _take_rows(table, rows), check))
        return out

    for s in range(at + 1):
        yield rows_of(scores, 0, s), rows_of(texts, len(scores), s)


def _lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort(keys)`` (the last key is the primary one; ties keep the row order), by one
    sort of a packed uint64 when the keys' ranges and the row number fit in 64 bits: each key
    minus its minimum, in as many bits as its range needs, then the row number (so every
    packed value is distinct and any sort gives the stable order). numpy's lexsort makes one
    stable pass per key (measured, 500,000 rows and 5 integer keys: about 4x the time of one
    sort of the packed keys)."""
    n = keys[0].size if keys else 0
    if n < 2:
        return np.arange(n, dtype=np.int64)
    spans = []
    for k in keys:
        lo, hi = int(k.min()), int(k.max())
        spans.append((lo, (hi - lo).bit_length()))
    row_bits = (n - 1).bit_length()
    if sum(b for _lo, b in spans) + row_bits > 64:
        return np.lexsort(keys)
    packed = np.zeros(n, dtype=np.uint64)
    for k, (lo, bits) in zip(reversed(keys), reversed(spans)):   # the primary key first
        if bits:
            packed <<= np.uint64(bits)
            packed |= (k - lo).astype(np.uint64)
    packed <<= np.uint64(row_bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    return (packed & np.uint64((1 << row_bits) - 1)).astype(np.int64)


_MAX_RUNS = 64   # contiguous runs per slice up to which _take_rows slices instead of a take


def _take_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)``, by zero-copy slices when ``rows`` is a few ascending runs of
    consecutive rows (the texts of a parsed file come in their order), else chunk by chunk
    (``_take_chunked``)."""
    if rows.size == 0:
        return table.slice(0, 0)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    if breaks.size >= _MAX_RUNS:
        return pa.table({name: _take_chunked(table.column(name), rows)
                         for name in table.column_names})
    starts = np.concatenate([[0], breaks])
    ends = np.append(breaks, rows.size)
    parts = [table.slice(int(rows[a]), int(b - a)) for a, b in zip(starts, ends)]
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _take_chunked(column: pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``column.take(rows)`` as one array, taken from each chunk separately: Arrow's take
    from a ChunkedArray of several chunks costs a pass over the whole column per call
    (measured, pyarrow 26, 250,000 texts in 5 chunks: 10x the CPU of a take from one
    array), and combining the chunks first would hold a second copy of the column. The rows
    are grouped by chunk (a stable sort), each chunk's rows taken, and the result put back
    in the order of ``rows``: two takes of ``len(rows)`` values."""
    chunks = column.chunks
    if rows.size == 0:
        return pa.array([], column.type)
    if len(chunks) == 1:
        return chunks[0].take(pa.array(rows))
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    which = np.searchsorted(bounds, rows, side="right") - 1
    by_chunk = np.argsort(which, kind="stable")
    grouped = rows[by_chunk]
    cuts = np.searchsorted(which[by_chunk], np.arange(len(chunks) + 1))
    parts = [chunks[k].take(pa.array(grouped[cuts[k]:cuts[k + 1]] - bounds[k]))
             for k in range(len(chunks)) if cuts[k + 1] > cuts[k]]
    joined = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    back = np.empty(rows.size, dtype=np.int64)
    back[by_chunk] = np.arange(rows.size, dtype=np.int64)
    return joined.take(pa.array(back))
