"""Writes: validation of incoming runs, ingest with merge, rename, tags, delete."""


import contextlib
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import StoreError
from evalcore.model import (
    TASK_COLUMNS,
    ParsedRun,
    SourceFile,
)
from evalcore.store._util import (
    LIST_SEP,
    REPORT_COLUMNS,
    IngestReport,
    _deep_merge,
    _is_missing,
    _json_dumps,
    _json_loads,
    _log,
    _one,
)
from evalcore.store.catalog import _check_keys
from evalcore.store.schema import (
    _EMPTY_CELLS,
    _SCORE_SPEC,
    _SUMMARY_SPEC,
    _TEXT_SPEC,
    META_KEY_CHECK,
)


def _column_to_arrow(series: pd.Series, typ: pa.DataType, where: str) -> pa.Array:
    """One canonical column as an Arrow array of ``typ`` (ids given as numbers become text)."""
    try:
        if series.dtype.kind == "f" and (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
            if series.isna().all():   # an all-missing text column read as float NaN
                return pa.nulls(len(series), type=typ)
            raise TypeError("numbers in a text column")
        arr = pa.array(series, type=typ, from_pandas=True)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        return arr if arr.type == typ else arr.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            as_text = series.map(lambda v: None if _is_missing(v) else str(v))
            return pa.array(as_text, type=typ, from_pandas=True)
        if pa.types.is_integer(typ):
            values = pd.to_numeric(series, errors="coerce")
            finite = values.dropna()
            if len(finite) and not np.all(np.equal(np.mod(finite, 1), 0)):
                raise StoreError(f"{where}: expected whole numbers") from exc
            return pa.array(values.astype("Int64"), type=typ, from_pandas=True)
        raise StoreError(f"{where}: expected {typ} values ({exc})") from exc


def _frame_to_arrow(df: pd.DataFrame | None, spec: tuple, what: str) -> pa.Table:
    """Check a canonical frame's columns and convert it to a typed Arrow table."""
    names = [c for c, _, _ in spec]
    if isinstance(df, pa.Table):
        return _arrow_to_spec(df, spec, what)
    if df is None:
        df = pd.DataFrame({c: pd.Series(dtype="object") for c in names})
    extra = [c for c in df.columns if c not in names]
    missing = [c for c in names if c not in df.columns]
    if extra or missing:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(map(str, missing))}")
        if extra:
            parts.append(f"unexpected {', '.join(map(str, extra))}")
        raise StoreError(f"{what}: columns do not match the canonical record "
                         f"({'; '.join(parts)}; expected {', '.join(names)})")
    arrays = []
    for col, typ, required in spec:
        if len(df) == 0:
            arrays.append(pa.array([], type=typ))
            continue
        arr = _column_to_arrow(df[col], typ, f"{what}, column {col!r}")
        if required and arr.null_count:
            raise StoreError(f"{what}, column {col!r}: {arr.null_count} missing value(s); "
                             "expected a value in every row")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, names=names)


def _arrow_to_spec(table: pa.Table, spec: tuple, what: str) -> pa.Table:
    """A canonical table given as Arrow: same column check as for a frame, then a cast to
    the spec's types (text ids given as numbers become text)."""
    names = [c for c, _, _ in spec]
    missing = [c for c in names if c not in table.column_names]
    extra = [c for c in table.column_names if c not in names]
    if extra or missing:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(extra)}"] if extra else [])
        raise StoreError(f"{what}: columns do not match the canonical record "
                         f"({'; '.join(parts)}; expected {', '.join(names)})")
    arrays = []
    for col, typ, required in spec:
        arr = table.column(col).combine_chunks()
        try:
            arr = arr.cast(typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise StoreError(f"{what}, column {col!r}: expected {typ} values ({exc})") from exc
        if required and arr.null_count:
            raise StoreError(f"{what}, column {col!r}: {arr.null_count} missing value(s); "
                             "expected a value in every row")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, names=names)


def _check_finite_scores(df: pd.DataFrame | None, what: str) -> None:
    """StoreError naming the first item whose score is NaN, inf or missing."""
    if isinstance(df, pa.Table):
        if "score" not in df.column_names or df.num_rows == 0:
            return
        try:
            values = np.asarray(df.column("score").cast(pa.float64()).to_numpy(
                zero_copy_only=False), dtype=float)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError):
            return  # not numbers at all: the Arrow conversion names the column
        if np.isfinite(values).all():
            return
        df = df.select([c for c in ("task", "metric", "item_id") if c in df.column_names]
                       ).to_pandas()
        df["score"] = values
    if df is None or "score" not in df.columns or len(df) == 0:
        return
    try:
        values = np.asarray(df["score"], dtype=float)
    except (TypeError, ValueError):
        return  # not numbers at all: the Arrow conversion names the column
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = df.iloc[int(bad[0])]
        get = lambda c: row[c] if c in df.columns else "?"  # noqa: E731
        raise StoreError(f"{what}: score of task {get('task')!r}, metric {get('metric')!r}, "
                         f"item {str(get('item_id'))!r} is {values[bad[0]]}; expected a finite "
                         f"number ({bad.size} such row(s))")


@dataclass
class _Prepared:
    """A validated ParsedRun as typed Arrow tables plus report facts."""

    run: ParsedRun
    name: str
    scores: pa.Table
    summaries: pa.Table
    texts: pa.Table
    cells: pa.Table          # per (task, metric): n_items, n_scores, k_max, sum, sumsq, ...
    tasks: list[tuple[str, int | None, dict]]
    facts: dict[str, Any]
    warnings: list[str]


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------


# Deleting a run: one statement per table that holds run rows (fixed SQL, the run id a ? value).
_DELETE_RUN_SQL = tuple(f"DELETE FROM {table} WHERE run_id = ?" for table in
                        ("scores", "cells", "summaries", "texts", "tasks", "files", "runs"))


def _file_key(f: SourceFile) -> str:
    """The idempotency key of one file of a run: its sha256, or ``run_key`` for a run cut
    from a file that holds several runs (a tidy table with several models)."""
    return f.run_key if f.run_key is not None else f.sha256.lower()


def _name_hint(source_key: str | None) -> str | None:
    """What tells two runs of one model apart when their names collide: the time in an
    lm_eval results/samples file name (``lm_eval:2026-03-03T08-21-09.7`` -> ``2026-03-03 08:21``)."""
    m = re.match(r"lm_eval:(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})", source_key or "")
    return f"{m.group(1)} {m.group(2)}:{m.group(3)}" if m else None



_SCRATCH: duckdb.DuckDBPyConnection | None = None
_SCRATCH_LOCK = threading.Lock()


@contextlib.contextmanager
def _scratch_cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on a process-wide in-memory DuckDB (validation of incoming frames)."""
    global _SCRATCH
    with _SCRATCH_LOCK:
        if _SCRATCH is None:
            _SCRATCH = duckdb.connect(":memory:")
            _SCRATCH.execute("SET enable_progress_bar = false")
        cur = _SCRATCH.cursor()
    try:
        yield cur
    finally:
        cur.close()


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

    # ---- lookups ------------------------------------------------------------------
    def new_run_id(self, con: duckdb.DuckDBPyConnection) -> int:
        if self._next_run_id is None:
            self._next_run_id = int(_one(con, "SELECT CAST(value AS INTEGER) FROM meta "
                                              "WHERE key = 'next_run_id'")[0])
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
        if self.tables["scores"] or self.tables["texts"]:
            self._write_keyed(con)
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


    def _write_keyed(self, con: duckdb.DuckDBPyConnection) -> None:
        """Scores and texts with integer keys: the (task, item_id) and (task, label/hash)
        strings of this call are looked up in items/labels (only the call's tasks are read),
        new ones get the next keys from meta (so two writers adding keys conflict on meta
        and the retry re-reads), then one INSERT each for items, labels, scores, texts."""
        scores = self._with_run_id(self.tables["scores"]) if self.tables["scores"] else None
        texts = (self._with_run_id(self.tables["texts"], flag=True)
                 if self.tables["texts"] else None)
        names = []
        try:
            if scores is not None:
                con.register("_in_s", scores)
                names.append("_in_s")
            if texts is not None:
                texts = texts.append_column("_rn", pa.array(np.arange(texts.num_rows,
                                                                      dtype=np.int64)))
                con.register("_in_t", texts)
                names.append("_in_t")
            keyed = " UNION ".join(f"SELECT DISTINCT task, item_id FROM {n}" for n in names)
            tasks = sorted({t for n in names for (t,) in
                            con.execute(f"SELECT DISTINCT task FROM {n}").fetchall()})
            in_tasks = f"task IN ({', '.join('?' * len(tasks))})"
            vals = ("SELECT task, cluster AS value FROM _in_s WHERE cluster IS NOT NULL UNION "
                    "SELECT task, item_hash FROM _in_s WHERE item_hash IS NOT NULL UNION "
                    "SELECT task, prompt_hash FROM _in_s WHERE prompt_hash IS NOT NULL"
                    if scores is not None else None)
            t0 = time.perf_counter()
            item_map = self._keys(con, "items", "item", "item_id", "next_item", keyed,
                                  in_tasks, tasks, self.meta)
            con.register("_map_i", item_map)
            names.append("_map_i")
            if vals is not None:
                label_map = self._keys(con, "labels", "label", "value", "next_label", vals,
                                       in_tasks, tasks, self.meta)
                con.register("_map_l", label_map)
                names.append("_map_l")
            _log.debug("ingest: keys in %.2f s", time.perf_counter() - t0)
            if scores is not None:
                t0 = time.perf_counter()
                con.execute(
                    "INSERT INTO scores SELECT s.run_id, s.task, s.metric, i.item, s.answer_idx, "
                    "s.score, c.label, ih.label, ph.label FROM _in_s s "
                    "JOIN _map_i i ON i.task = s.task AND i.item_id = s.item_id "
                    "LEFT JOIN _map_l c ON c.task = s.task AND c.value = s.cluster "
                    "LEFT JOIN _map_l ih ON ih.task = s.task AND ih.value = s.item_hash "
                    "LEFT JOIN _map_l ph ON ph.task = s.task AND ph.value = s.prompt_hash "
                    "ORDER BY s.task, s.metric, i.item, s.run_id, s.answer_idx")
                _log.debug("ingest: %d scores in %.2f s", scores.num_rows,
                           time.perf_counter() - t0)
            if texts is not None:
                # the first row of each (run, task, item, answer) in this call; for a merge
                # into a stored run only the rows the run does not have yet
                con.execute(
                    "INSERT INTO texts SELECT t.run_id, t.task, i.item, t.answer_idx, t.prompt, "
                    "t.target, t.response FROM _in_t t "
                    "JOIN _map_i i ON i.task = t.task AND i.item_id = t.item_id "
                    "WHERE NOT (t._check AND EXISTS (SELECT 1 FROM texts x WHERE "
                    "x.run_id = t.run_id AND x.task = t.task AND x.item = i.item "
                    "AND x.answer_idx = t.answer_idx)) "
                    "QUALIFY row_number() OVER (PARTITION BY t.run_id, t.task, i.item, "
                    "t.answer_idx ORDER BY t._rn) = 1 ORDER BY t.task, i.item, t.answer_idx, "
                    "t.run_id")
        finally:
            for n in names:
                con.unregister(n)

    @staticmethod
    def _keys(con: duckdb.DuckDBPyConnection, table: str, key: str, text: str, counter: str,
              wanted_sql: str, in_tasks: str, tasks: list[str], meta: dict) -> pa.Table:
        """(task, text, key) for every (task, text) of ``wanted_sql``: stored keys, and new
        ones numbered from meta ``counter`` and inserted into ``table`` (fixed SQL names).
        The new rows are checked against the stored ones before they are written (their
        (task, text) must be new, their keys unused)."""
        stored = con.execute(f"SELECT task, {text}, {key} FROM {table} WHERE {in_tasks}",
                             tasks).fetch_arrow_table()
        con.register("_stored_k", stored)
        try:
            new = con.execute(
                f"SELECT w.task, w.value AS {text} FROM ({wanted_sql}) w(task, value) "
                f"ANTI JOIN _stored_k k ON k.task = w.task AND k.{text} = w.value "
                f"ORDER BY w.task, w.value").fetch_arrow_table()
            if new.num_rows:
                start = int(_one(con, "SELECT CAST(value AS BIGINT) FROM meta WHERE key = ?",
                                 [counter])[0])
                if start + new.num_rows >= 2 ** 31:
                    raise StoreError(f"the store has run out of {table} keys (2^31)")
                new = new.append_column(key, pa.array(
                    np.arange(start, start + new.num_rows, dtype=np.int32)))
                con.register("_new_k", new)
                try:
                    taken = _one(con, f"SELECT {key} FROM {table} WHERE {key} >= ? LIMIT 1",
                                 [start])
                    if taken:
                        raise StoreError(f"{table} key {taken[0]} is already used although "
                                         f"meta {counter} is {start}; the store is damaged")
                    con.execute(f"INSERT INTO {table} SELECT {key}, task, {text} FROM _new_k")
                finally:
                    con.unregister("_new_k")
                meta[counter] = str(start + new.num_rows)
            schema = pa.schema([("task", pa.string()), (text, pa.string()), (key, pa.int32())])
            parts = [stored.select(["task", text, key]).cast(schema)]
            if new.num_rows:
                parts.append(new.select(["task", text, key]).cast(schema))
            out = pa.concat_tables(parts)
        finally:
            con.unregister("_stored_k")
        return out


class _Writes:
    """Write methods of Store (each call is one transaction)."""

    def ingest(self, runs: list[ParsedRun], *, skip_invalid: bool = False) -> IngestReport:
        """Write parsed runs in one transaction.

        Rules, applied run by run in the given order:

        1. every file of the run is already stored (same key: the file's sha256, or for a run
           cut from a file that holds several runs, ``SourceFile.run_key``, the digest of the
           run's rows): nothing is written, status "already present";
        2. some of its files, or its ``source_key``, match a stored run: the run is MERGED
           into that run: new files are recorded; tasks/metrics, summaries and texts the
           stored run lacks are added; a (task, metric) cell that already has item scores
           keeps the stored scores (a warning names it); missing run fields (model,
           harness version) are filled and protocol keys are added, stored values win;
        3. otherwise a new run is added under a unique display name ("name (2)", ...).

        Everything is validated before the store is touched (canonical columns and types,
        finite scores, no duplicate (task, metric, item, answer) rows, no duplicate summary
        rows, at least one item score or finite reported value); duplicate text rows keep the
        first (a warning says so). Any error raises StoreError and leaves the store file
        byte-for-byte unchanged. With ``skip_invalid=True`` a run that fails validation is
        left out and named in ``report.rejected`` instead, and the other runs are written
        (still in one transaction: each run whole or not at all).
        """
        t0 = time.perf_counter()
        prepared: list[_Prepared] = []
        rejected: list[str] = []
        for i, r in enumerate(runs):
            try:
                prepared.append(self._prepare(r, i))
            except StoreError as exc:
                if not skip_invalid:
                    raise
                files = ", ".join(f.name for f in getattr(r, "files", None) or [])
                rejected.append(f"{exc}" + (f" (files: {files})" if files else ""))
        _log.debug("ingest: validated %d run(s) in %.2f s", len(prepared), time.perf_counter() - t0)
        if not prepared:
            return IngestReport(pd.DataFrame(columns=list(REPORT_COLUMNS)), False, (),
                                tuple(rejected))
        # decide read-only first: a repeat upload must not make a snapshot
        with self._read("checking which files are stored") as con:
            keys = [_file_key(f) for p in prepared for f in p.run.files]
            known = self._known_files(con, keys)
            all_known = all(p.run.files and all(_file_key(f) in known for f in p.run.files)
                            for p in prepared)
            if all_known:
                rows = []
                for p in prepared:
                    rid = known[_file_key(p.run.files[0])]
                    name = _one(con, "SELECT name FROM runs WHERE run_id = ?", [rid])[0]
                    rows.append(self._report_row(p, rid, name, "already present", 0, []))
        if all_known:
            warnings = tuple(w for p in prepared for w in p.warnings)
            return IngestReport(pd.DataFrame(rows, columns=list(REPORT_COLUMNS)), True, warnings,
                                tuple(rejected))
        rows = self._write(lambda con: self._write_runs(con, prepared), "ingest",
                           checks=META_KEY_CHECK)
        t1 = time.perf_counter()
        merged = self.compact()   # keeps file counts bounded (maintain.MERGE_LEVELS)
        if merged:
            _log.debug("ingest: merged %s in %.2f s", merged, time.perf_counter() - t1)
        warnings = [w for p in prepared for w in p.warnings]
        warnings += [w for r in rows for w in r[REPORT_COLUMNS.index("warnings")].split("\n") if w]
        return IngestReport(pd.DataFrame(rows, columns=list(REPORT_COLUMNS)), False,
                            tuple(dict.fromkeys(warnings)), tuple(rejected))

    def _prepare(self, run: ParsedRun, index: int) -> _Prepared:
        """Validate one ParsedRun and convert its frames to typed Arrow tables (no store)."""
        if not isinstance(run, ParsedRun):
            raise StoreError(f"run #{index + 1}: expected a ParsedRun, got {type(run).__name__}")
        name = str(run.name).strip() if run.name is not None else ""
        if not name:
            name = str(run.model).strip() if run.model else "run"
        what = f"run {name!r}"
        if not run.source_format:
            raise StoreError(f"{what}: source_format is empty")
        if not isinstance(run.protocol, dict):
            raise StoreError(f"{what}: protocol must be a dict, got {type(run.protocol).__name__}")
        for f in run.files:
            if not re.fullmatch(r"[0-9a-fA-F]{64}", str(f.sha256 or "")):
                raise StoreError(f"{what}, file {f.name!r}: sha256 must be 64 hex digits")
            if f.run_key is not None and not (isinstance(f.run_key, str) and f.run_key.strip()):
                raise StoreError(f"{what}, file {f.name!r}: run_key must be a non-empty string "
                                 "or None")
        _check_finite_scores(run.scores, what)
        scores = _frame_to_arrow(run.scores, _SCORE_SPEC, f"{what}, scores")
        summaries = _frame_to_arrow(run.summaries, _SUMMARY_SPEC, f"{what}, summaries")
        texts = _frame_to_arrow(run.texts, _TEXT_SPEC, f"{what}, texts")
        if scores.num_rows == 0 and not pc.any(pc.is_finite(summaries.column("value"))).as_py():
            raise StoreError(f"{what}: no item score and no finite reported value; nothing to "
                             "store (an empty run would show as a run with 0 tasks)")
        warnings = list(run.warnings)

        facts: dict[str, Any] = {"tasks": "", "metrics": "", "n_items": 0, "n_scores": 0, "k_max": 0}
        with _scratch_cursor() as mem:   # in-memory: validation never touches the store
            mem.register("s", scores)
            mem.register("m", summaries)
            mem.register("t", texts)
            cells = _EMPTY_CELLS
            if scores.num_rows:
                low = pc.min(scores.column("answer_idx")).as_py()
                if low is not None and low < 0:
                    bad = _one(mem, "SELECT task, item_id, answer_idx FROM s WHERE answer_idx < 0 "
                                    "LIMIT 1")
                    raise StoreError(f"{what}: task {bad[0]!r}, item {bad[1]!r} has answer_idx "
                                     f"{bad[2]}; expected 0 or more")
                # one grouping pass per item gives the cell statistics the store keeps
                # (computed here, outside the write lock) and k_max for the duplicate check
                cells = mem.sql(
                    "SELECT task, metric, count(*) AS n_items, sum(k) AS n_scores, "
                    "CAST(max(k) AS INTEGER) AS k_max, sum(m) AS sum, sum(m * m) AS sumsq, "
                    "bool_and(bin) AS is_binary, bool_or(hc) AS has_cluster FROM ("
                    "  SELECT task, metric, item_id, avg(score) AS m, count(*) AS k, "
                    "  bool_and(score = 0 OR score = 1) AS bin, bool_or(cluster IS NOT NULL) AS hc "
                    "  FROM s GROUP BY task, metric, item_id) "
                    "GROUP BY task, metric ORDER BY task, metric").to_arrow_table()
                k_max = int(pc.max(cells.column("k_max")).as_py())
                # a duplicate needs two rows of one item, so the exact check runs only then
                # (count(DISTINCT answer_idx) per item would cost 4x the grouping itself)
                if k_max > 1:
                    dup = _one(mem, "SELECT task, metric, item_id, answer_idx, count(*) FROM s "
                                    "GROUP BY ALL HAVING count(*) > 1 LIMIT 1")
                    if dup:
                        raise StoreError(
                            f"{what}: task {dup[0]!r}, metric {dup[1]!r}, item {dup[2]!r}, answer "
                            f"{dup[3]} appears {dup[4]} times; expected one score per (task, "
                            "metric, item, answer)")
                per_task: dict[str, int] = {}
                for t, n in zip(cells.column("task").to_pylist(), cells.column("n_items").to_pylist()):
                    per_task[t] = max(per_task.get(t, 0), int(n))
                facts.update(tasks=LIST_SEP.join(sorted(per_task)),
                             metrics=LIST_SEP.join(sorted(set(cells.column("metric").to_pylist()))),
                             n_items=sum(per_task.values()), n_scores=scores.num_rows, k_max=k_max)
            if summaries.num_rows:
                bad = _one(mem, "SELECT task, metric, value FROM m WHERE isinf(value) LIMIT 1")
                if bad:
                    raise StoreError(f"{what}: summary {bad[0]!r}/{bad[1]!r} value is {bad[2]}; "
                                     "expected a finite number or NaN")
                dup = _one(mem, "SELECT task, metric, count(*) FROM m GROUP BY ALL "
                                  "HAVING count(*) > 1 LIMIT 1")
                if dup:
                    raise StoreError(f"{what}: summary of task {dup[0]!r}, metric {dup[1]!r} "
                                     f"appears {dup[2]} times; expected one row per (task, metric)")
                if not facts["tasks"]:
                    tasks, metrics = _one(
                        mem, "SELECT string_agg(DISTINCT task, ? ORDER BY task), "
                        "string_agg(DISTINCT metric, ? ORDER BY metric) FROM m", [LIST_SEP, LIST_SEP])
                    facts.update(tasks=tasks, metrics=metrics)
            if texts.num_rows:
                n_dup = _one(mem, "SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM t "
                                  "GROUP BY task, item_id, answer_idx HAVING count(*) > 1)")[0]
                if n_dup:
                    mem.register("t_rn", texts.append_column(
                        "_rn", pa.array(np.arange(texts.num_rows, dtype=np.int64))))
                    texts = mem.sql(
                        "SELECT * EXCLUDE (_rn) FROM t_rn QUALIFY row_number() OVER (PARTITION BY "
                        "task, item_id, answer_idx ORDER BY _rn) = 1 ORDER BY _rn"
                    ).to_arrow_table().cast(texts.schema)
                    warnings.append(f"{what}: {n_dup} duplicate text row(s) (same task, item, "
                                    "answer) dropped; the first was kept")
        # summaries: fill is_group default False
        if summaries.num_rows and summaries.column("is_group").null_count:
            filled = summaries.column("is_group").fill_null(False)
            summaries = summaries.set_column(summaries.schema.get_field_index("is_group"),
                                             "is_group", filled)

        task_rows: list[tuple[str, int | None, dict]] = []
        tdf = run.tasks if run.tasks is not None else pd.DataFrame(columns=list(TASK_COLUMNS))
        if set(tdf.columns) != set(TASK_COLUMNS):
            raise StoreError(f"{what}, tasks: columns do not match the canonical record "
                             f"(got {', '.join(map(str, tdf.columns))}; expected "
                             f"{', '.join(TASK_COLUMNS)})")
        seen: set[str] = set()
        for t, nc, proto in zip(tdf["task"], tdf["n_choices"], tdf["protocol"]):
            if _is_missing(t) or not str(t):
                raise StoreError(f"{what}, tasks: a row has no task name")
            t = str(t)
            if t in seen:
                raise StoreError(f"{what}, tasks: task {t!r} appears twice; expected one row per task")
            seen.add(t)
            if _is_missing(nc):
                nc = None
            else:
                try:
                    nc = int(nc)
                except (TypeError, ValueError) as exc:
                    raise StoreError(f"{what}, tasks: n_choices of {t!r} is {nc!r}; "
                                     "expected a whole number") from exc
            if proto is None or (not isinstance(proto, dict) and _is_missing(proto)):
                proto = {}
            if not isinstance(proto, dict):
                raise StoreError(f"{what}, tasks: protocol of {t!r} must be a dict")
            task_rows.append((t, nc, proto))
        return _Prepared(run, name, scores, summaries, texts, cells, task_rows, facts, warnings)

    @staticmethod
    def _known_files(con: duckdb.DuckDBPyConnection, keys: list[str]) -> dict[str, int]:
        """Stored file keys among ``keys`` (see ``_file_key``) -> the run that holds each."""
        if not keys:
            return {}
        rows = con.execute("SELECT key, run_id FROM files WHERE list_contains(?, key)",
                           [sorted(set(keys))]).fetchall()
        return {k: int(r) for k, r in rows}

    @staticmethod
    def _report_row(p: _Prepared, run_id: int, name: str, status: str, added: int,
                    warnings: list[str]) -> list:
        f = p.facts
        return [run_id, name, p.run.model, p.run.source_format, f["tasks"] or "", f["metrics"] or "",
                f["n_items"], f["n_scores"], f["k_max"], status, "\n".join(warnings), added]

    @staticmethod
    def _unique_name(con: duckdb.DuckDBPyConnection, base: str, exclude_run: int | None = None,
                     hint: str | None = None, pending: set[str] | frozenset = frozenset()) -> str:
        """``base`` if free; else ``base @ hint`` (e.g. the run's time) if free; else
        ``base (2)``, ``base (3)``, ... (``pending``: names taken in this transaction but
        not written yet). Reads only the names that start with ``base``."""
        taken = {n for (n,) in con.execute(
            "SELECT name FROM runs WHERE starts_with(name, ?) AND run_id IS DISTINCT FROM ?",
            [base, exclude_run]).fetchall()} | {n for n in pending if n.startswith(base)}
        if base not in taken:
            return base
        if hint and f"{base} @ {hint}" not in taken:
            return f"{base} @ {hint}"
        k = 2
        while f"{base} ({k})" in taken:
            k += 1
        return f"{base} ({k})"

    def _write_runs(self, con: duckdb.DuckDBPyConnection, prepared: list[_Prepared]) -> list:
        """Insert or merge prepared runs inside the open transaction: every run is decided
        in order against the store plus what this call has already decided (``_Batch``),
        then ONE statement per table writes all of it (DuckLake writes a Parquet file per
        INSERT, so one file per table per call, however many runs). Report rows."""
        batch = _Batch(self._known_files(con, [_file_key(f) for p in prepared
                                               for f in p.run.files]), self._unique_name)
        rows = [self._decide_run(con, batch, p) for p in prepared]
        batch.flush(con)
        _check_keys(con, "ingest", batch.key_checks())
        return rows

    def _decide_run(self, con: duckdb.DuckDBPyConnection, b: "_Batch", p: _Prepared) -> list:
        """One run's rows into the batch (a new run or a merge); its report row."""
        run = p.run
        files = {_file_key(f): f for f in run.files}
        known = {k: b.file_owner[k] for k in files if k in b.file_owner}
        if files and len(known) == len(files):
            rid = next(iter(known.values()))
            return self._report_row(p, rid, b.name_of(con, rid), "already present", 0, [])
        warnings: list[str] = []
        target: int | None = None
        if known:
            owners = sorted(set(known.values()))
            target = owners[0]
            if len(owners) > 1:
                warnings.append(f"files of {p.name!r} belong to several stored runs "
                                f"({', '.join(map(str, owners))}); merged into run {target}")
        elif run.source_key:
            target = b.run_of_source_key(con, run.source_key)
        now = datetime.now(timezone.utc).replace(tzinfo=None)

        if target is None:
            rid = b.new_run_id(con)
            name = b.unique_name(con, p.name, hint=_name_hint(run.source_key))
            if name != p.name:
                warnings.append(f"a run named {p.name!r} exists; this one is stored as {name!r}")
            b.new_runs[rid] = {"run_id": rid, "name": name, "model": run.model,
                               "source_format": run.source_format, "harness": run.harness,
                               "harness_version": run.harness_version,
                               "protocol": run.protocol, "tags": [], "created_at": now,
                               "source_key": run.source_key}
            b.names.add(name)
            if run.source_key:
                b.source_keys.setdefault(run.source_key, rid)
            status = "added"
        else:
            rid = int(target)
            row = b.run_row(con, rid)
            name = row["name"]
            conflicts: list[str] = []
            merged = _deep_merge(row["protocol"], run.protocol, "", conflicts)
            if conflicts:
                warnings.append(f"merged into {name!r}: protocol setting(s) "
                                f"{', '.join(conflicts[:8])} differ; the stored values were kept")
            hv = row["harness_version"]
            if hv and run.harness_version and hv != run.harness_version:
                warnings.append(f"merged into {name!r}: harness version {run.harness_version} "
                                f"differs from the stored {hv}; kept {hv}")
            for col, val in (("model", run.model), ("harness", run.harness),
                             ("harness_version", run.harness_version),
                             ("source_key", run.source_key)):
                if row[col] is None:
                    row[col] = val
            row["protocol"] = merged
            if rid not in b.new_runs:
                b.updated_runs.add(rid)
            status = "merged"
        for key, f in files.items():
            if key not in known:
                b.files.append([key, f.sha256.lower(), rid, f.name, int(f.size), f.format, now])
                b.file_owner[key] = rid

        # scores + cells (cells were computed in _prepare); a cell the run has keeps its scores
        scores, cells = p.scores, p.cells
        have_cells = b.cells_of(con, rid, status)
        if have_cells and scores.num_rows:
            scores, dropped = self._drop_pairs_sql(con, scores, sorted(have_cells))
            cells, _ = self._drop_pairs_sql(con, cells, sorted(have_cells))
            for t, m in dropped:
                warnings.append(f"merged into {name!r}: task {t!r} metric {m!r} already has item "
                                "scores; kept the stored ones")
        added = 0
        if scores.num_rows:
            b.add_table("scores", rid, scores)
            b.add_table("cells", rid, cells)
            have_cells.update(zip(cells.column("task").to_pylist(),
                                  cells.column("metric").to_pylist()))
            added = scores.num_rows
        summ = p.summaries
        if summ.num_rows:
            have_summ = b.summaries_of(con, rid, status)
            if have_summ:
                summ, _ = self._drop_pairs_sql(con, summ, sorted(have_summ))
            if summ.num_rows:
                b.add_table("summaries", rid, summ)
                have_summ.update(zip(summ.column("task").to_pylist(),
                                     summ.column("metric").to_pylist()))
        if p.texts.num_rows:
            # a merge into a stored run adds only text rows the run lacks (checked in flush)
            b.add_table("texts", rid, p.texts, check=rid not in b.new_runs)

        # per-task info
        task_info = b.tasks_of(con, rid, status)
        for t, nc, proto in p.tasks:
            if t in task_info:
                old_nc, old_proto, state = task_info[t]
                conflicts = []
                merged_t = _deep_merge(old_proto, proto, t, conflicts)
                if conflicts:
                    warnings.append(f"merged into {name!r}: task setting(s) {', '.join(conflicts[:8])} "
                                    "differ; the stored values were kept")
                task_info[t] = (old_nc if old_nc is not None else nc, merged_t,
                                "new" if state == "new" else "updated")
            else:
                task_info[t] = (nc, proto, "new")
        return self._report_row(p, rid, name, status, added, warnings)

    @staticmethod
    def _drop_pairs_sql(con: duckdb.DuckDBPyConnection, table: pa.Table,
                        pairs: list[tuple[str, str]]) -> tuple[pa.Table, list[tuple[str, str]]]:
        """Rows of ``table`` whose (task, metric) is not in ``pairs``; and the pairs dropped."""
        keys = pa.table({"task": [t for t, _ in pairs], "metric": [m for _, m in pairs]})
        con.register("_in_tbl", table)
        con.register("_in_keys", keys)
        try:
            kept = con.sql("SELECT * FROM _in_tbl x WHERE NOT EXISTS (SELECT 1 FROM _in_keys k "
                           "WHERE k.task = x.task AND k.metric = x.metric)").to_arrow_table()
            dropped = con.execute("SELECT DISTINCT k.task, k.metric FROM _in_keys k JOIN _in_tbl x "
                                  "ON k.task = x.task AND k.metric = x.metric "
                                  "ORDER BY 1, 2").fetchall()
        finally:
            con.unregister("_in_tbl")
            con.unregister("_in_keys")
        return kept.cast(table.schema), [(t, m) for t, m in dropped]

    def rename_run(self, run: str | int, new_name: str) -> None:
        """Give a run a new display name (unique; StoreError if another run has it)."""
        new = str(new_name).strip() if new_name is not None else ""
        if not new:
            raise StoreError("a run name cannot be empty")
        rid = self.resolve_run(run)

        def body(con: duckdb.DuckDBPyConnection) -> None:
            row = _one(con, "SELECT run_id FROM runs WHERE name = ?", [new])
            if row is not None and int(row[0]) != rid:
                raise StoreError(f"another run (id {row[0]}) is already named {new!r}")
            if row is None:
                con.execute("UPDATE runs SET name = ? WHERE run_id = ?", [new, rid])

        with self._read() as con:
            row = _one(con, "SELECT run_id FROM runs WHERE name = ?", [new])
        if row is not None and int(row[0]) == rid:
            return      # already so named: no snapshot
        self._write(body, "renaming the run")

    def set_tags(self, run: str | int, tags: list[str]) -> None:
        """Replace a run's tags (stripped, empty ones dropped, duplicates removed, order kept)."""
        if isinstance(tags, str):
            tags = [tags]
        clean = list(dict.fromkeys(str(t).strip() for t in tags if t is not None and str(t).strip()))
        rid = self.resolve_run(run)
        self._write(lambda con: con.execute("UPDATE runs SET tags = ? WHERE run_id = ?",
                                            [clean, rid]), "setting tags")

    def delete_run(self, run: str | int) -> None:
        """Remove a run and everything it owns (scores, texts, summaries, files) in one
        transaction; uploading its files again adds it anew."""
        rid = self.resolve_run(run)

        def body(con: duckdb.DuckDBPyConnection) -> None:
            for sql in _DELETE_RUN_SQL:
                con.execute(sql, [rid])

        self._write(body, "deleting the run")

    # ---- reading ----------------------------------------------------------------------
