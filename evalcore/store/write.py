"""Writes: validation of incoming runs, ingest with merge, rename, tags, delete."""


import contextlib
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import access
from evalcore.errors import IngestError, StoreError
from evalcore.threads import no_huge_pages
from evalcore.model import (
    TASK_COLUMNS,
    LazyRun,
    ParsedRun,
    SourceFile,
)
from evalcore.store._util import (
    LIST_SEP,
    REPORT_COLUMNS,
    IngestReport,
    _deep_merge,
    _is_missing,
    _log,
    _one,
)
from evalcore.store import keys
from evalcore.store.batch import _Batch
from evalcore.store.cellstats import cell_stats, duplicate_texts
from evalcore.store.catalog import LAKE, _check_keys
from evalcore.store.history import CommitNote, note_for
from evalcore.store.incoming import _check_finite_scores, _frame_to_arrow
from evalcore.store.schema import (
    _EMPTY_CELLS,
    _SCORE_SPEC,
    _SUMMARY_SPEC,
    _TEXT_SPEC,
    META_KEY_CHECK,
)


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
    base_warnings: tuple[str, ...] = ()   # a LazyRun's own warnings (its pieces' are added)


class _LazyFailed(Exception):
    """A LazyRun's piece was bad input (``error``: its IngestError or StoreError); raised
    out of the write transaction, which rolls back."""

    def __init__(self, prepared: "_Prepared", error: Exception):
        super().__init__(str(error))
        self.prepared, self.error = prepared, error


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------


# A LazyRun's pieces are gathered until their scores and texts hold this many bytes, then
# written. Each write makes one Parquet file per table: a file per piece (8 tasks: 8 files)
# would make compact() merge them right away (measured at 1,000,000 lines: +5.6 s and
# +300 MB peak); pieces of about 95 MB then go two to a write (4 files, no merge).
LAZY_FLUSH_BYTES = 160 << 20

# Rows per Parquet row group of the texts table (a DuckLake table option, kept in the catalog:
# ``_table_options``). DuckDB's default (122,880 rows) buffers about 40 MB of lm_eval texts
# per row group before writing it (measured, 250,000 texts on one thread: +59 MB peak, against
# +10 MB with 32,768 rows; the file is 4% larger, and a lookup of one item reads less).
TEXT_ROW_GROUP = 32_768

# Parquet compression of the labels table (a DuckLake table option: ``_table_options``). Its
# values are mostly sha256 hex digests (lm_eval's doc and prompt hashes), which snappy, the
# default, does not shrink (measured, 500,000 of them: 35.0 MB snappy, 36.1 MB uncompressed)
# but spends CPU on, on every write and every read (the INSERT took half the time
# uncompressed).
LABELS_COMPRESSION = "uncompressed"

# Deleting a run: one statement per table that holds run rows (fixed SQL, the run id a ? value).
_DELETE_RUN_SQL = tuple(f"DELETE FROM {table} WHERE run_id = ?" for table in
                        ("scores", "cells", "vectors", "summaries", "texts", "tasks", "files",
                         "run_owners", "runs"))


def _file_key(f: SourceFile) -> str:
    """The idempotency key of one file of a run: its sha256, or ``run_key`` for a run cut
    from a file that holds several runs (a tidy table with several models)."""
    return f.run_key if f.run_key is not None else f.sha256.lower()


def _name_hint(source_key: str | None) -> str | None:
    """What tells two runs of one model apart when their names collide: the time in an
    lm_eval results/samples file name (``lm_eval:2026-03-03T08-21-09.7`` -> ``2026-03-03 08:21``)."""
    m = re.match(r"lm_eval:(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})", source_key or "")
    return f"{m.group(1)} {m.group(2)}:{m.group(3)}" if m else None



def _table_options(con: duckdb.DuckDBPyConnection, texts: bool) -> None:
    """Inside an ingest transaction: the store's per-table Parquet options, each set once
    per store unless it has one already (with the transaction: a rollback undoes it too):
    ``TEXT_ROW_GROUP`` rows per row group of the texts table (when ``texts``: the ingest
    writes texts) and no compression for the labels table (``LABELS_COMPRESSION``). Fixed
    SQL; the values are constants."""
    have = {(name, scope) for name, scope in con.execute(
        f"SELECT option_name, scope_entry FROM {LAKE}.options() WHERE scope_entry IN "
        "('main.texts', 'main.labels')").fetchall()}
    if texts and ("parquet_row_group_size", "main.texts") not in have:
        con.execute(f"CALL {LAKE}.set_option('parquet_row_group_size', {int(TEXT_ROW_GROUP)}, "
                    "table_name => 'texts')")
    if ("parquet_compression", "main.labels") not in have:
        con.execute(f"CALL {LAKE}.set_option('parquet_compression', '{LABELS_COMPRESSION}', "
                    "table_name => 'labels')")


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
        for name in ("s", "m", "t", "t_rn"):   # drop the references to the run's tables
            with contextlib.suppress(duckdb.Error):
                cur.unregister(name)
        cur.close()


class _Writes:
    """Write methods of Store (each call is one transaction)."""

    def ingest(self, runs: list[ParsedRun], *, skip_invalid: bool = False,
               actor: access.Actor | None = None) -> IngestReport:
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

        A ``LazyRun`` (a large lm_eval run from ``parse_paths``) is read inside the
        transaction, one piece (complete tasks) at a time: each piece is validated as above,
        its scores and texts written and dropped, so memory holds one piece, not the run.
        A bad piece (its ``IngestError``, naming file and line, or a ``StoreError``) rolls the
        transaction back and is raised; with ``skip_invalid=True`` that run is rejected and
        the others are written anew. A lazy run whose files are all stored is still read,
        for the report's counts (nothing is written).

        ``actor`` (None: ``access.LOCAL_ACTOR``) must be allowed to ingest
        (``access.check``, before anything is read); it is recorded as the author of the
        snapshot and as the uploader of every run this call adds (``store.history``).
        """
        access.check(actor, "ingest")
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
        while True:
            if not prepared:
                return IngestReport(pd.DataFrame(columns=list(REPORT_COLUMNS)), False, (),
                                    tuple(rejected))
            try:
                return self._ingest_prepared(prepared, rejected, actor)
            except _LazyFailed as exc:
                # a LazyRun's bad piece: the transaction rolled back; without skip_invalid
                # its error is the ingest's, with it the run is left out and the rest
                # written anew (the lazy runs before it are read again)
                if not skip_invalid:
                    raise exc.error from None
                files = ", ".join(f.name for f in exc.prepared.run.files)
                rejected.append(f"{exc.error}" + (f" (files: {files})" if files else ""))
                prepared = [p for p in prepared if p is not exc.prepared]

    def _ingest_prepared(self, prepared: list[_Prepared], rejected: list[str],
                         actor: access.Actor | None = None) -> IngestReport:
        """``ingest`` after validation (the store part)."""
        # decide read-only first: a repeat upload must not make a snapshot
        with self._read("checking which files are stored") as con:
            keys = [_file_key(f) for p in prepared for f in p.run.files]
            known = self._known_files(con, keys)
            all_known = all(p.run.files and all(_file_key(f) in known for f in p.run.files)
                            for p in prepared)
            if all_known:
                rows = []
                for p in prepared:
                    if isinstance(p.run, LazyRun):
                        self._read_lazy(p)   # its report facts and warnings
                    rid = known[_file_key(p.run.files[0])]
                    name = _one(con, "SELECT name FROM runs WHERE run_id = ?", [rid])[0]
                    rows.append(self._report_row(p, rid, name, "already present", 0, []))
        if all_known:
            warnings = tuple(w for p in prepared for w in p.warnings)
            return IngestReport(pd.DataFrame(rows, columns=list(REPORT_COLUMNS)), True, warnings,
                                tuple(rejected))
        lazy = any(isinstance(p.run, LazyRun) for p in prepared)
        if lazy:
            # one DuckDB thread for a LazyRun's write: with two, each INSERT buffers its own
            # Parquet row groups (measured, 250,000 texts: +300 MB with two threads, +140 MB
            # with one, and no slower). Restored here, also after a rollback (an aborted
            # transaction refuses SET, so it cannot be done inside the write)
            threads = self._threads()
            self._threads(1)
        try:
            # a LazyRun's pieces are allocated and freed task by task: no huge pages
            # meanwhile (evalcore.threads.no_huge_pages: 3-5 CPU-s less at 1M lines)
            with no_huge_pages() if lazy else contextlib.nullcontext():
                owner = (access.LOCAL_ACTOR if actor is None else actor).owner_key
                rows = self._write(lambda con: _record_owners(con, self._write_runs(con, prepared),
                                                              owner), "ingest",
                                   checks=META_KEY_CHECK,
                                   note=lambda rows: _ingest_note(actor, rows))
        finally:
            if lazy:
                self._threads(threads)
        t1 = time.perf_counter()
        merged = self.compact()   # keeps file counts bounded (maintain.MERGE_LEVELS)
        if merged:
            _log.debug("ingest: merged %s in %.2f s", merged, time.perf_counter() - t1)
        warnings = [w for p in prepared for w in p.warnings]
        warnings += [w for r in rows for w in r[REPORT_COLUMNS.index("warnings")].split("\n") if w]
        return IngestReport(pd.DataFrame(rows, columns=list(REPORT_COLUMNS)), False,
                            tuple(dict.fromkeys(warnings)), tuple(rejected))

    def _threads(self, value: int | None = None) -> int:
        """DuckDB's thread count for this process's store connection (set it to ``value``)."""
        cur = self._cursor()
        try:
            if value is not None:
                cur.execute(f"SET threads = {int(value)}")
            return int(cur.execute("SELECT current_setting('threads')").fetchone()[0])
        finally:
            cur.close()

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
        lazy = isinstance(run, LazyRun)
        if (scores.num_rows == 0 and not lazy
                and not pc.any(pc.is_finite(summaries.column("value"))).as_py()):
            raise StoreError(f"{what}: no item score and no finite reported value; nothing to "
                             "store (an empty run would show as a run with 0 tasks)")
        warnings = list(run.warnings)

        facts: dict[str, Any] = {"tasks": "", "metrics": "", "n_items": 0, "n_scores": 0, "k_max": 0}
        # item ids as integer codes, one dictionary for scores and texts (a chunk the parser
        # shares between them is hashed once)
        item_codes, item_dict = keys.encode([scores.column("item_id"), texts.column("item_id")])
        n_codes = len(item_dict)
        del item_dict
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
                # (computed here, outside the write lock, on integer codes: cellstats.py)
                # and k_max for the duplicate check
                cells, k_max = cell_stats(scores, item_codes[0], n_codes)
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
                metric_set = set(cells.column("metric").to_pylist())
                facts.update(tasks=LIST_SEP.join(sorted(per_task)),
                             metrics=LIST_SEP.join(sorted(metric_set)),
                             n_items=sum(per_task.values()), n_scores=scores.num_rows, k_max=k_max,
                             per_task=per_task, metric_set=metric_set)
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
                n_dup = duplicate_texts(texts, item_codes[1], n_codes)
                if n_dup is None:   # keys too wide for one int64: count in SQL
                    n_dup = _one(mem, "SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c "
                                      "FROM t GROUP BY task, item_id, answer_idx HAVING count(*) > 1)")[0]
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
        return _Prepared(run, name, scores, summaries, texts, cells, task_rows, facts, warnings,
                         tuple(warnings) if lazy else ())

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
        _table_options(con, any(p.texts.num_rows or isinstance(p.run, LazyRun)
                                 for p in prepared))
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
            if isinstance(run, LazyRun):
                self._read_lazy(p)   # its report facts and warnings, nothing written
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

        added = self._add_data(con, b, p, rid, name, status, warnings)
        if isinstance(run, LazyRun):
            # each piece (complete tasks) is validated, added and its scores and texts
            # written now, then dropped; cells, summaries and tasks go with the batch's flush
            def add(piece: _Prepared) -> int:
                n = self._add_data(con, b, piece, rid, name, status, warnings)
                # the batch holds its rows now: the piece lets go of them, so a write can
                # free each table once it is written (_Batch._write_keyed)
                piece.scores = piece.scores.schema.empty_table()
                piece.texts = piece.texts.schema.empty_table()
                if b.pending_bytes() >= LAZY_FLUSH_BYTES:
                    b.flush_keyed(con, overlap=False)
                return n
            added += self._read_lazy(p, add, b.texts_lock)
        return self._report_row(p, rid, name, status, added, warnings)

    def _read_lazy(self, p: _Prepared, add=None,
                   gate: Any = None) -> int:
        """Read a LazyRun's pieces: validate each (``_prepare``), hand it to ``add`` (which
        writes it and returns the score rows added) and drop it. ``p.facts`` and
        ``p.warnings`` become the whole run's (what an eager parse would have given).
        A bad piece raises ``_LazyFailed``.

        The next piece is read and validated in a helper thread while ``add`` writes this
        one (DuckDB's JSON reader, Arrow and numpy release the GIL; the write runs on one
        DuckDB thread): one piece ahead, never more, so memory holds the batch being
        written plus one piece. ``gate`` (the batch's ``texts_lock``) is held while a piece
        is read: the read and the texts INSERT, each the peak of its side, take turns
        (measured at 1,000,000 lines: a peak of about 950 MB when they met)."""
        p.warnings[:] = list(p.base_warnings)   # (a retried transaction reads again)
        per_task: dict[str, int] = {}
        metric_set: set[str] = set()
        n_scores = k_max = added = 0
        pieces = p.run.pieces() if p.run.pieces is not None else iter(())

        def read_next() -> _Prepared | None:
            with gate if gate is not None else contextlib.nullcontext():
                piece = next(pieces, None)
            return None if piece is None else self._prepare(piece, 0)

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbars-piece")
        ahead: Future | None = pool.submit(read_next)
        try:
            while True:
                try:
                    pp = ahead.result()
                except (IngestError, StoreError) as exc:
                    raise _LazyFailed(p, exc) from exc
                if pp is None:
                    break
                ahead = pool.submit(read_next)
                p.warnings.extend(pp.warnings)
                if pp.scores.num_rows:
                    for t, n in pp.facts["per_task"].items():
                        per_task[t] = max(per_task.get(t, 0), n)
                    metric_set |= pp.facts["metric_set"]
                    n_scores += pp.scores.num_rows
                    k_max = max(k_max, pp.facts["k_max"])
                if add is not None:
                    added += add(pp)
                del pp
        finally:
            # the piece being read is finished (or never started) before the reader closes:
            # a generator cannot be closed while another thread runs it
            ahead.cancel()
            pool.shutdown(wait=True)
            close = getattr(pieces, "close", None)
            if close is not None:
                close()   # closes the piece reader (and its open file)
        if n_scores:
            p.facts.update(tasks=LIST_SEP.join(sorted(per_task)),
                           metrics=LIST_SEP.join(sorted(metric_set)),
                           n_items=sum(per_task.values()), n_scores=n_scores, k_max=k_max)
        elif not pc.any(pc.is_finite(p.summaries.column("value"))).as_py():
            raise _LazyFailed(p, StoreError(
                f"run {p.name!r}: no item score and no finite reported value; nothing to "
                "store (an empty run would show as a run with 0 tasks)"))
        return added

    def _add_data(self, con: duckdb.DuckDBPyConnection, b: "_Batch", p: _Prepared, rid: int,
                  name: str, status: str, warnings: list[str]) -> int:
        """A prepared run's (or piece's) rows into the batch for run ``rid``; the score rows
        added."""
        # scores + cells (cells were computed in _prepare); a cell the run has keeps its scores
        scores, cells = p.scores, p.cells
        have_cells = b.cells_of(con, rid, status)
        # only the cells this run has already (the cells table lists the scores' cells):
        # a LazyRun's later pieces never meet the cells of its earlier ones
        overlap = sorted(have_cells & set(zip(cells.column("task").to_pylist(),
                                              cells.column("metric").to_pylist())))
        if overlap and scores.num_rows:
            scores, dropped = self._drop_pairs_sql(con, scores, overlap)
            cells, _ = self._drop_pairs_sql(con, cells, overlap)
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
        return added

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

    def rename_run(self, run: str | int, new_name: str, *,
                   actor: access.Actor | None = None) -> None:
        """Give a run a new display name (unique; StoreError if another run has it).
        ``actor`` must be allowed to rename this run (``access.check``: an uploader only
        their own runs)."""
        _check_role(actor, "rename")
        new = str(new_name).strip() if new_name is not None else ""
        if not new:
            raise StoreError("a run name cannot be empty")
        rid = self.resolve_run(run)
        access.check(actor, "rename", run_owner=self.run_owner(rid))
        old = self._run_name(rid)

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
        self._write(body, "renaming the run",
                    note=note_for(actor, "rename", f"renamed run {old!r} (#{rid}) to {new!r}",
                                  ((rid, new),)))

    def set_tags(self, run: str | int, tags: list[str], *,
                 actor: access.Actor | None = None) -> None:
        """Replace a run's tags (stripped, empty ones dropped, duplicates removed, order kept).
        ``actor`` must be allowed to tag this run (``access.check``: an uploader only their
        own runs)."""
        _check_role(actor, "tag")
        if isinstance(tags, str):
            tags = [tags]
        clean = list(dict.fromkeys(str(t).strip() for t in tags if t is not None and str(t).strip()))
        rid = self.resolve_run(run)
        access.check(actor, "tag", run_owner=self.run_owner(rid))
        name = self._run_name(rid)
        self._write(lambda con: con.execute("UPDATE runs SET tags = ? WHERE run_id = ?",
                                            [clean, rid]), "setting tags",
                    note=note_for(actor, "tag", f"set the tags of run {name!r} (#{rid}) to "
                                  f"[{', '.join(clean)}]", ((rid, name),)))

    def delete_run(self, run: str | int, *, actor: access.Actor | None = None) -> None:
        """Remove a run and everything it owns (scores, texts, summaries, files) in one
        transaction; uploading its files again adds it anew. ``restore_run`` brings it back
        while the snapshot before the delete is kept (``store.history``). ``actor`` must be
        allowed to delete (``access.check``: admins only)."""
        access.check(actor, "delete")
        rid = self.resolve_run(run)
        name = self._run_name(rid)

        def body(con: duckdb.DuckDBPyConnection) -> None:
            for sql in _DELETE_RUN_SQL:
                con.execute(sql, [rid])

        self._write(body, "deleting the run",
                    note=note_for(actor, "delete", f"deleted run {name!r} (#{rid})",
                                  ((rid, name),)))

    # ---- reading ----------------------------------------------------------------------


def _record_owners(con: duckdb.DuckDBPyConnection, rows: list, owner: str) -> list:
    """Inside the ingest's transaction: ``owner`` as the uploader of every run it added (the
    report rows with status "added"); returns ``rows``."""
    rid_i, status_i = REPORT_COLUMNS.index("run_id"), REPORT_COLUMNS.index("status")
    added = sorted({int(r[rid_i]) for r in rows if r[status_i] == "added"})
    if added:
        con.executemany("INSERT INTO run_owners VALUES (?, ?)", [[rid, owner] for rid in added])
    return rows


def _check_role(actor: access.Actor | None, action: str) -> None:
    """``access.check`` of everything but the own-runs rule (read-only mode, the role), so a
    refusal comes before the run is even looked up."""
    who = access.LOCAL_ACTOR if actor is None else actor
    access.check(who, action, run_owner=who.owner_key)


def _ingest_note(actor: access.Actor | None, rows: list) -> CommitNote:
    """The commit note of an ingest from its report rows: the runs added and merged."""
    rid_i, name_i, status_i = (REPORT_COLUMNS.index(c) for c in ("run_id", "name", "status"))
    touched = [(int(r[rid_i]), str(r[name_i]), r[status_i]) for r in rows
               if r[status_i] in ("added", "merged")]
    parts = []
    for status in ("added", "merged"):
        names = [f"{n!r} (#{i})" for i, n, st in touched if st == status]
        if names:
            parts.append(f"{status} run{'s' if len(names) > 1 else ''} {', '.join(names)}"
                         if status == "added" else f"merged into {', '.join(names)}")
    return note_for(actor, "ingest", "; ".join(parts) or "ingest",
                    tuple((i, n) for i, n, _ in touched))
