"""The DuckDB store: the only module that writes SQL.

How concurrency works
---------------------
The store is one DuckDB file (``./.evalbars/evalbars.duckdb`` by default, else
``$EVALBARS_STORE`` or ``--store FILE``). DuckDB lets one process open a file read-write, and
while it does no other process can open it at all, not even read-only. So evalbars never
opens the store read-write. **Reads** use a read-only connection (one cached instance per
process, reopened as soon as the file has been replaced), so the dashboard and any number
of CLI commands read side by side. **Writes** (ingest, rename, tags, delete) take a lock file
next to the store (``<store>.lock``; writers queue on it), copy the store to a temporary
file in the same folder, apply the change there in one transaction (``BEGIN`` ... ``COMMIT``,
``ROLLBACK`` on error), checkpoint, and atomically rename the copy over the store. A
dashboard query in flight finishes on the old file; the next one sees the new file. A
failure (bad data, a constraint, a full disk, a killed process) only loses the copy: the
store stays byte-for-byte as it was, which DuckDB alone would not guarantee (a rolled-back
1,000,000-row insert still rewrites the file in duckdb 1.4.4 and 2.0.1). If the file is held
read-write by a program outside evalbars (the ``duckdb`` shell), or the lock stays taken,
operations retry with backoff for ``lock_timeout`` seconds (15 s by default) and then fail
with "store is busy (locked by another process)". The price: every write copies the file
(about a second per GB) and briefly needs twice its disk space.

Details
-------
* ``version()`` is a ``stat`` of the file (inode, size, mtime): every write replaces the
  file, so pages can poll it as a cache key without opening DuckDB.
* Inside one process, the rename waits until that process's reads in flight are done:
  DuckDB shares one database instance per path per process, and a connection opened
  while the old instance lived would still read the replaced file.
* Ingest is validated before the store is touched, computed in an in-memory DuckDB; a
  repeat upload (every file's key already stored: its sha256, or the digest of the run's own
  rows for a run cut from a multi-run tidy table) does not even copy the file. Merging
  by ``source_key`` or by a shared file is described in ``Store.ingest``.

Layout
------
Tables: ``meta`` (schema version, write counter, next run id), ``runs``, ``files`` (one row
per distinct file content, by sha256; for a file that holds several runs, one row per run,
keyed by a digest of that run's rows), ``scores`` (run x task x metric x item x answer),
``cells`` (per run x task x metric: n, sum and sum of squares of the per-item means, written
in the same transaction as the scores they summarise; the leaderboard reads only these),
``summaries`` (as the harness reported them), ``texts`` (prompt / target / response) and
``tasks`` (n_choices, task protocol). Bulk rows go in through DuckDB's Arrow scan
(``INSERT INTO ... SELECT ... FROM`` a registered table), never row by row. Scores are
appended one run at a time, so DuckDB's per-row-group min/max (zone maps) prune per-run
and per-(task, metric) scans; ART indexes are not used on the large tables (they help only
point lookups and cost memory and insert time). Measured choices for ingest speed (1,000,000
lm_eval lines: 30 s -> 3 s): hashes and texts are stored uncompressed (DuckDB's dictionary/
FSST analysis tripled their insert time for about half the space), the copy is written
with ``preserve_insertion_order = false`` (otherwise partly filled row groups are rewritten
at checkpoint) and no ORDER BY at insert. All values reach SQL as ``?`` parameters;
identifiers come only from fixed lists in this module.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import random
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import DiskFullError, StoreError
from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    TEXT_COLUMNS,
    ParsedRun,
    SourceFile,
    rows_key,
)

ENV_VAR = "EVALBARS_STORE"
_log = logging.getLogger(__name__)  # DEBUG: timings of each ingest step
SCHEMA_VERSION = "2"
# Version 1 keyed ``files`` on the file's sha256 alone, so a tidy table with several models
# could record only one of them; an older store is upgraded on open (``_MIGRATE_1_TO_2``).

# Relative and absolute tolerance used by ``audit`` when comparing a reported number with
# the one recomputed from item scores: agreement to the 4th decimal (rounding of printed
# values) or within 0.5 % (harness float noise).
# DuckDB's buffer pool of the write connection keeps the blocks it has just written cached;
# the copy is closed right after, so a small limit only lowers the ingest's peak memory.
WRITE_MEMORY_LIMIT = "512MB"

AUDIT_ABS_TOL = 5e-5
AUDIT_REL_TOL = 5e-3

# Protocol keys that change on every run and say nothing about how it was measured; they
# are left out of ``protocol_diff`` (matched on the last component of the dotted key).
VOLATILE_PROTOCOL_KEYS = frozenset({
    "date", "start_time", "end_time", "total_evaluation_time_seconds", "started_at",
    "completed_at", "created", "pretty_env_info", "eval_id", "run_id", "log_file",
})


def default_store_path() -> Path:
    """$EVALBARS_STORE if set, else ./.evalbars/evalbars.duckdb (relative to the cwd)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else Path.cwd() / ".evalbars" / "evalbars.duckdb"


@dataclass(frozen=True)
class IngestReport:
    """What one ``Store.ingest`` call did.

    runs columns: run_id, name, model, source_format, tasks (comma list), metrics,
        n_items, n_scores, k_max (answers per item), status ("added" | "already present"
        | "merged"), warnings (str)

    ``n_items`` (per task the largest item count over its metrics, summed over tasks),
    ``n_scores`` and ``k_max`` describe what the
    ParsedRun carried; ``n_scores_added`` (extra column) is how many score rows this call
    actually wrote (0 when already present; fewer than ``n_scores`` when a merge kept
    stored task/metric cells).
    """

    runs: pd.DataFrame
    already_present: bool            # every file was already in the store; nothing changed
    warnings: tuple[str, ...]
    # with ``skip_invalid=True``: the runs left out because they failed validation, one
    # message each naming the run, its files and the reason (the other runs were written)
    rejected: tuple[str, ...] = ()


# Separator of the task and metric lists in ingest reports: metric variants and HELM task
# names contain commas ("exact_match,strict-match"), so the lists use "; ".
LIST_SEP = "; "
REPORT_COLUMNS = ("run_id", "name", "model", "source_format", "tasks", "metrics", "n_items",
                  "n_scores", "k_max", "status", "warnings", "n_scores_added")

# ---------------------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------------------

_DDL = (
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    """CREATE TABLE runs (
        run_id INTEGER PRIMARY KEY,
        name VARCHAR NOT NULL UNIQUE,
        model VARCHAR,
        source_format VARCHAR NOT NULL,
        harness VARCHAR,
        harness_version VARCHAR,
        protocol VARCHAR NOT NULL,          -- JSON text of the run-level protocol dict
        tags VARCHAR[] NOT NULL,
        created_at TIMESTAMP NOT NULL,      -- UTC upload time
        source_key VARCHAR
    )""",
    """CREATE TABLE files (
        -- idempotency key: the file's sha256, or for one run of a file that holds several
        -- (a tidy table) "rows:" + the digest of that run's rows (SourceFile.run_key)
        key VARCHAR PRIMARY KEY,
        sha256 VARCHAR NOT NULL,
        run_id INTEGER NOT NULL,
        name VARCHAR NOT NULL,
        size BIGINT NOT NULL,
        format VARCHAR NOT NULL,
        added_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE scores (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        -- short ids: DuckDB's compression analysis of them cost about 0.4 s per million rows
        -- at ingest (measured: 2,000,000 scores 1.5 s -> 0.4 s) for little space
        item_id VARCHAR NOT NULL USING COMPRESSION uncompressed,
        answer_idx INTEGER NOT NULL,
        score DOUBLE NOT NULL,
        cluster VARCHAR,
        -- hashes are high-entropy: compressing them cost more ingest time than it saved space
        item_hash VARCHAR USING COMPRESSION uncompressed,
        prompt_hash VARCHAR USING COMPRESSION uncompressed
    )""",
    """CREATE TABLE cells (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        n_items BIGINT NOT NULL,            -- items (distinct item_id)
        n_scores BIGINT NOT NULL,           -- score rows (items x answers)
        k_max INTEGER NOT NULL,             -- most answers of one item
        sum DOUBLE NOT NULL,                -- sum of per-item means
        sumsq DOUBLE NOT NULL,              -- sum of squared per-item means
        is_binary BOOLEAN NOT NULL,         -- every raw score is 0 or 1
        has_cluster BOOLEAN NOT NULL,
        PRIMARY KEY (run_id, task, metric)
    )""",
    """CREATE TABLE summaries (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,
        stderr DOUBLE,
        stderr_raw VARCHAR,
        n BIGINT,
        is_group BOOLEAN NOT NULL,
        PRIMARY KEY (run_id, task, metric)
    )""",
    """CREATE TABLE texts (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        -- short ids: DuckDB's compression analysis of them cost about 0.4 s per million rows
        -- at ingest (measured: 2,000,000 scores 1.5 s -> 0.4 s) for little space
        item_id VARCHAR NOT NULL USING COMPRESSION uncompressed,
        answer_idx INTEGER NOT NULL,
        -- unique long strings: DuckDB's dictionary/FSST analysis tripled the insert time
        -- for about a third less space
        prompt VARCHAR USING COMPRESSION uncompressed,
        target VARCHAR USING COMPRESSION uncompressed,
        response VARCHAR USING COMPRESSION uncompressed
    )""",
    """CREATE TABLE tasks (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        n_choices INTEGER,
        protocol VARCHAR NOT NULL,          -- JSON text of the task protocol dict
        PRIMARY KEY (run_id, task)
    )""",
)


# Upgrade of a version-1 store (fixed SQL, run in one copy-on-write transaction).
_MIGRATE_1_TO_2 = (
    _DDL[2].replace("CREATE TABLE files", "CREATE TABLE files_v2"),
    "INSERT INTO files_v2 SELECT lower(sha256), sha256, run_id, name, size, format, added_at "
    "FROM files",
    "DROP TABLE files",
    "ALTER TABLE files_v2 RENAME TO files",
    "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
)


# Arrow schemas of the canonical frames: (column, type, required)
_SCORE_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
               ("item_id", pa.large_string(), True), ("answer_idx", pa.int32(), True),
               ("score", pa.float64(), True), ("cluster", pa.large_string(), False),
               ("item_hash", pa.large_string(), False), ("prompt_hash", pa.large_string(), False))
_SUMMARY_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
                 ("value", pa.float64(), False), ("stderr", pa.float64(), False),
                 ("stderr_raw", pa.large_string(), False), ("n", pa.int64(), False),
                 ("is_group", pa.bool_(), False))
_TEXT_SPEC = (("task", pa.large_string(), True), ("item_id", pa.large_string(), True),
              ("answer_idx", pa.int32(), True), ("prompt", pa.large_string(), False),
              ("target", pa.large_string(), False), ("response", pa.large_string(), False))
_EMPTY_CELLS = pa.table({"task": pa.array([], pa.string()), "metric": pa.array([], pa.string()),
                         "n_items": pa.array([], pa.int64()), "n_scores": pa.array([], pa.int64()),
                         "k_max": pa.array([], pa.int32()), "sum": pa.array([], pa.float64()),
                         "sumsq": pa.array([], pa.float64()), "is_binary": pa.array([], pa.bool_()),
                         "has_cluster": pa.array([], pa.bool_())})
assert tuple(c for c, _, _ in _SCORE_SPEC) == SCORE_COLUMNS
assert tuple(c for c, _, _ in _SUMMARY_SPEC) == SUMMARY_COLUMNS
assert tuple(c for c, _, _ in _TEXT_SPEC) == TEXT_COLUMNS


# ---------------------------------------------------------------------------------------
# in-process coordination
# ---------------------------------------------------------------------------------------

class _Gate:
    """Per-path, per-process access to the store file: one cached read-only DuckDB instance.

    Opening a DuckDB instance costs tens of milliseconds, so reads share one read-only
    connection per path and process (a cursor per read, safe across threads). Before each
    read the file's identity (inode, size, mtime) is compared with the one seen when the
    instance was opened; every write replaces the file, so a changed identity means the
    instance is stale: it is closed as soon as no read of this process is using it and a
    new one is opened. (DuckDB shares one instance per path inside a process, so a new
    connection opened while the old instance lived would still read the replaced file.)
    A writer of this process swaps the file only when no read is in flight (``swap``).
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._cond = threading.Condition()
        self._readers = 0
        self._swapping = False
        self._con: duckdb.DuckDBPyConnection | None = None
        self._ident: tuple | None = None

    def _wait(self, predicate, deadline: float, what: str) -> None:
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(what)
            self._cond.wait(left)

    def _close_locked(self) -> None:
        if self._con is not None:
            with contextlib.suppress(duckdb.Error):
                self._con.close()
        self._con, self._ident = None, None

    @contextlib.contextmanager
    def read(self, timeout: float, opener) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on a fresh-enough read-only instance; ``opener(deadline)`` connects."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wait(lambda: not self._swapping, deadline,
                       "another thread of this process is replacing the store file")
            ident = _identity(self._path)  # before connecting: the instance is at least this new
            if self._con is not None and self._ident != ident:
                self._wait(lambda: self._readers == 0, deadline,
                           "reads of this process on the previous store file did not finish")
                self._close_locked()
            if self._con is None:
                self._con = opener(deadline)
                self._ident = ident
            cursor = self._con.cursor()
            self._readers += 1
        try:
            yield cursor
        finally:
            with contextlib.suppress(duckdb.Error):
                cursor.close()
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def swap(self, timeout: float) -> Iterator[None]:
        """Exclusive: no read in flight and the cached instance closed while the body runs."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._wait(lambda: not self._swapping and self._readers == 0, deadline,
                       "reads of this process stayed open")
            self._swapping = True
            self._close_locked()
        try:
            yield
        finally:
            with self._cond:
                self._swapping = False
                self._cond.notify_all()

    def close(self) -> None:
        """Drop the cached instance (waits for reads in flight)."""
        with self._cond:
            self._wait(lambda: self._readers == 0, time.monotonic() + 60.0, "reads stayed open")
            self._close_locked()


def _identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


_GATES: dict[str, _Gate] = {}
_GATES_LOCK = threading.Lock()


def _gate_for(path: Path) -> _Gate:
    key = str(path)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = _Gate(path)
        return gate


_SCRATCH: duckdb.DuckDBPyConnection | None = None


@contextlib.contextmanager
def _scratch_cursor() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on a process-wide in-memory DuckDB (validation of incoming frames)."""
    global _SCRATCH
    with _GATES_LOCK:
        if _SCRATCH is None:
            _SCRATCH = duckdb.connect(":memory:")
            _SCRATCH.execute("SET enable_progress_bar = false")
        cur = _SCRATCH.cursor()
    try:
        yield cur
    finally:
        cur.close()


def _busy(detail: str) -> StoreError:
    err = StoreError(f"store is busy (locked by another process) and stayed busy: {detail}. "
                     "Try again when the other ingest or program has finished.")
    err.busy = True  # type: ignore[attr-defined]
    return err


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded", "disk full")


def _is_disk_full(exc: BaseException) -> bool:
    """True for ENOSPC/EDQUOT, as an OSError or in a DuckDB error's text, also when it is the
    cause of a later error (DuckDB's "Current transaction is aborted")."""
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 10:
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(e, (OSError, duckdb.Error)) and any(t in str(e).lower()
                                                          for t in _DISK_FULL_TEXT):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def _disk_full(exc: BaseException, action: str) -> DiskFullError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return DiskFullError(f"no space left on device; the store was not changed ({action} "
                         f"failed: {first})")


def _store_error(exc: BaseException, action: str) -> StoreError:
    """A human message for a DuckDB error (the original stays as ``__cause__``)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if _is_disk_full(exc):
        return _disk_full(exc, action)
    if isinstance(exc, duckdb.ConstraintException):
        msg = f"{action} failed: the data breaks a store constraint ({first})"
    elif isinstance(exc, duckdb.OutOfMemoryException):
        msg = f"{action} failed: out of memory ({first})"
    elif isinstance(exc, duckdb.IOException):
        msg = f"{action} failed: could not read or write the store file ({first})"
    elif isinstance(exc, duckdb.CatalogException):
        msg = f"{action} failed: the file is not an evalbars store or is damaged ({first})"
    else:
        msg = f"{action} failed: {first}"
    return StoreError(msg)


# ---------------------------------------------------------------------------------------
# small helpers (no SQL)
# ---------------------------------------------------------------------------------------

def _json_default(obj: Any) -> Any:
    """JSON for values json cannot write: numpy scalars/arrays, sets, dates, the rest as str."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    return str(obj)


def _json_dumps(obj: Any) -> str:
    return json.dumps(obj if obj is not None else {}, sort_keys=True, default=_json_default)


def _json_loads(text: str | None) -> Any:
    if text is None:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _deep_merge(stored: Any, new: Any, path: str, conflicts: list[str]) -> Any:
    """Stored values win; keys only the new dict has are added; conflicts are listed."""
    if isinstance(stored, dict) and isinstance(new, dict):
        out = dict(stored)
        for k, v in new.items():
            key = f"{path}.{k}" if path else str(k)
            out[k] = _deep_merge(stored[k], v, key, conflicts) if k in stored else v
        return out
    if stored != new and new is not None and stored is not None:
        conflicts.append(path)
    return new if stored is None else stored


def flatten_protocol(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys ({"a": {"b": 1}} -> {"a.b": 1}); lists stay leaves."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        if not obj and prefix:
            out[prefix] = {}
        for k, v in obj.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            out.update(flatten_protocol(v, key))
    else:
        out[prefix] = obj
    return out


# Parts of a protocol value that change from one process to the next without changing the
# measurement: the memory address in a Python repr (``<function list_fewshot_samples at
# 0x7f3e09ad45e0>``, how lm_eval writes a ``!function`` config entry), a temporary path
# (``/tmp/tmpab12cd/...``) and a timestamp. ``normalise_protocol_value`` replaces them with a
# placeholder before protocol values are compared, so two runs with the same function, the
# same task files and the same settings no longer "differ"; the function's name, the file's
# name and every other character still count.
_NOISE = (
    (re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x…"),
    (re.compile(r"\b0x[0-9a-fA-F]{8,16}\b"), "0x…"),
    (re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders/[^/\s'\"]+/[^/\s'\"]+/T)"
                r"/(?:tmp|pytest-of-[^/\s'\"]+/)?[^/\s'\"]*"), "<tmp>"),
    (re.compile(r"[A-Za-z]:\\\\?Users\\\\?[^\\\s'\"]+\\\\?AppData\\\\?Local\\\\?Temp(?:\\\\?[^\\\s'\"]+)?"),
     "<tmp>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T _]\d{2}[:-]\d{2}[:-]\d{2}(?:\.\d+)?"
                r"(?:Z|[+-]\d{2}:?\d{2})?"), "<timestamp>"),
)


def normalise_protocol_value(text: str) -> str:
    """A protocol value with memory addresses, temporary paths and timestamps replaced by
    placeholders (see ``_NOISE``): what two runs of one measurement have in common."""
    for pattern, placeholder in _NOISE:
        text = pattern.sub(placeholder, text)
    return text


def _display(value: Any) -> str | None:
    """A protocol value as text (strings as-is, None stays None, the rest as JSON), with
    process noise normalised out (``normalise_protocol_value``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return normalise_protocol_value(value)
    return normalise_protocol_value(json.dumps(value, sort_keys=True, default=str))


_CATEGORIES = (
    ("harness version", ("harness_version", "lm_eval_version", "git_hash", "version")),
    ("few-shot", ("fewshot", "few_shot", "n-shot", "n_shot", "num_shot",
                  "max_train_instances")),                         # HELM adapter_spec
    ("chat template", ("chat_template", "system_instruction", "system_message",
                       "multiturn", "system_prompt")),
    ("generation", ("generation_kwargs", "gen_kwargs", "generate_config", "temperature",
                    "top_p", "top_k", "max_tokens", "max_gen_toks", "max_new_tokens",
                    "until", "do_sample", "seed", "num_beams", "repeats", "epochs",
                    "stop_sequences", "num_outputs")),
    ("metric variants", ("metric", "filter")),
    ("prompt", ("doc_to_text", "doc_to_target", "doc_to_choice", "template", "description",
                "target_delimiter", "prompt",
                *(f"adapter_spec.{k}" for k in ("method", "instructions", "input_", "output_",
                                                "reference_", "instance_", "global_",
                                                "chain_of_thought_")))),   # HELM
    ("model", ("model",)),
)
_CATEGORY_ORDER = {name: i for i, (name, _) in enumerate(_CATEGORIES)} | {"other": len(_CATEGORIES)}


def _category(setting: str) -> str:
    low = setting.lower()
    for name, needles in _CATEGORIES:
        if any(n in low for n in needles):
            return name
    return "other"


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    """First row of a query (fully fetched: DuckDB 2 refuses new work on a connection that
    still has an unfinished result)."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def _fetch_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> pd.DataFrame:
    """A large result as a DataFrame through Arrow (2-3x faster than ``.df()`` for string
    columns: pandas keeps them Arrow-backed). Same dtypes as ``.df()`` except that an
    all-NULL text column comes back as ``str`` with NaN instead of ``object`` with None."""
    return con.sql(sql, params=params).to_arrow_table().to_pandas()


def _natural_key(item_id: Any) -> tuple:
    s = str(item_id)
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


def _agrees(reported: float, recomputed: float) -> bool:
    return abs(reported - recomputed) <= AUDIT_ABS_TOL + AUDIT_REL_TOL * abs(recomputed)


def _column_to_arrow(series: pd.Series, typ: pa.DataType, where: str) -> pa.Array:
    """One canonical column as an Arrow array of ``typ`` (ids given as numbers become text)."""
    try:
        return pa.array(series, type=typ, from_pandas=True)
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


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _frame_to_arrow(df: pd.DataFrame | None, spec: tuple, what: str) -> pa.Table:
    """Check a canonical frame's columns and convert it to a typed Arrow table."""
    names = [c for c, _, _ in spec]
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


def _check_finite_scores(df: pd.DataFrame | None, what: str) -> None:
    """StoreError naming the first item whose score is NaN, inf or missing."""
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


class Store:
    """One DuckDB file, read through a read-only connection and written copy-on-write (see
    "How concurrency works" above), so the CLI can ingest while the dashboard runs.

    Every method is one operation: a read on a cursor of this process's cached read-only
    instance, or one write transaction on a copy renamed over the store. DuckDB errors come
    out as ``StoreError`` with a human message (``.busy`` is True when the store stayed
    locked).

    Parameters
    ----------
    path : the store file; default ``default_store_path()``. Created (with its folder) if
        missing.
    lock_timeout : seconds to keep retrying while the file or the writer lock is held by
        someone else, before raising ``StoreError("store is busy ...")``.
    """

    def __init__(self, path: str | Path | None = None, *, lock_timeout: float = 15.0):
        self._path = Path(path if path is not None else default_store_path()).expanduser().resolve()
        self.lock_timeout = float(lock_timeout)
        self._gate = _gate_for(self._path)
        if self._path.is_dir():
            raise StoreError(f"store path {self._path} is a folder; expected a .duckdb file")
        if not self._path.exists():
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store folder {self._path.parent}: "
                                 f"{exc.strerror}") from exc
            with self._writer_lock():
                if not self._path.exists():
                    with self._transaction(create=True):
                        pass
        self._check_schema()

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"Store({str(self._path)!r})"

    # ---- connections ------------------------------------------------------------------
    def _sleep_backoff(self, attempt: int, deadline: float) -> bool:
        """Sleep a little (exponential with jitter); False once the deadline has passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, 0.02 * (1.6 ** min(attempt, 12)) * (0.5 + random.random())))
        return True

    def _open_read_only(self, deadline: float) -> duckdb.DuckDBPyConnection:
        attempt = 0
        while True:
            if not self._path.exists():
                raise StoreError(f"store file {self._path} does not exist (was it deleted?)")
            try:
                con = duckdb.connect(str(self._path), read_only=True)
                con.execute("SET enable_progress_bar = false")  # no bars on the CLI's terminal
                return con
            except duckdb.Error as exc:
                if not _is_lock_error(exc):
                    raise _store_error(exc, f"opening the store {self._path}") from exc
                if not self._sleep_backoff(attempt, deadline):
                    raise _busy(f"{self._path} stayed locked for {self.lock_timeout:g} s "
                                f"({str(exc).splitlines()[0]})") from exc
                attempt += 1

    @contextlib.contextmanager
    def _read(self, action: str = "reading the store") -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only cursor for one operation; DuckDB errors become StoreError."""
        with self._gate.read(self.lock_timeout, self._open_read_only) as cur:
            try:
                yield cur
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc

    def close(self) -> None:
        """Close this process's cached read instance of the store (reopened on next use)."""
        self._gate.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """Exclusive lock file ``<store>.lock`` shared by all evalbars writers (processes and
        threads), acquired with retry/backoff until ``lock_timeout``."""
        lock_path = self._path.with_name(self._path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to the store: the lock file {lock_path} cannot be "
                             f"created ({exc.strerror}); is the folder read-only?") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout
            attempt = 0
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not self._sleep_backoff(attempt, deadline):
                        raise _busy(f"another evalbars process is writing to {self._path} "
                                    f"(waited {self.lock_timeout:g} s)") from None
                    attempt += 1
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _cleanup_stale_copies(self) -> None:
        """Remove temporary copies left by writers that died (their pid is gone)."""
        pattern = re.compile(re.escape(self._path.name) + r"\.tmp-(\d+)-[0-9a-f]+(\.wal)?$")
        for p in self._path.parent.iterdir():
            m = pattern.match(p.name)
            if not m:
                continue
            pid = int(m.group(1))
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                with contextlib.suppress(OSError):
                    p.unlink()
            except PermissionError:
                pass

    @contextlib.contextmanager
    def _transaction(self, create: bool = False,
                     action: str = "writing to the store") -> Iterator[duckdb.DuckDBPyConnection]:
        """Copy-on-write transaction; caller must hold ``_writer_lock``.

        Copies the store to ``<store>.tmp-<pid>-<hex>``, yields a read-write connection to the
        copy inside ``BEGIN``; on success bumps the write counter, COMMITs, CHECKPOINTs,
        fsyncs and renames the copy over the store. On any exception: ROLLBACK, the copy is
        deleted, the store file is untouched.
        """
        self._cleanup_stale_copies()
        tmp = self._path.with_name(f"{self._path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}")
        tmp_wal = tmp.with_name(tmp.name + ".wal")
        try:
            if not create:
                with self._read("copying the store"):  # holds a shared lock: no foreign writer
                    shutil.copyfile(self._path, tmp)
            try:
                con = duckdb.connect(str(tmp))
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc
            try:
                # Parallel inserts that keep insertion order leave partly filled row groups
                # behind, which the checkpoint then rewrites (measured: 1,000,000 texts from a
                # multi-chunk Arrow table doubled the file and added 6 s). Queries order
                # their results explicitly, so the copy is written without that guarantee.
                con.execute("SET preserve_insertion_order = false")
                con.execute("SET enable_progress_bar = false")
                con.execute("SET memory_limit = ?", [WRITE_MEMORY_LIMIT])
                if create:
                    for ddl in _DDL:
                        con.execute(ddl)
                    con.executemany("INSERT INTO meta VALUES (?, ?)",
                                    [["schema_version", SCHEMA_VERSION], ["write_counter", "0"],
                                     ["next_run_id", "1"]])
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                    con.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                                "WHERE key = 'write_counter'")
                    t0 = time.perf_counter()
                    con.execute("COMMIT")
                    _log.debug("%s: commit %.2f s (write-ahead log %d bytes)", action,
                               time.perf_counter() - t0, tmp_wal.stat().st_size if tmp_wal.exists() else 0)
                except BaseException:
                    with contextlib.suppress(duckdb.Error):
                        con.execute("ROLLBACK")
                    raise
                t0 = time.perf_counter()
                con.execute("CHECKPOINT")
                _log.debug("%s: checkpoint %.2f s", action, time.perf_counter() - t0)
            except duckdb.Error as exc:
                raise _store_error(exc, action) from exc
            finally:
                con.close()
            if tmp_wal.exists():
                raise StoreError(f"{action} failed: DuckDB left a write-ahead log after the "
                                 "checkpoint; the store was not changed")
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            with self._gate.swap(self.lock_timeout):
                os.replace(tmp, self._path)
            with contextlib.suppress(OSError):  # best effort: the rename is already done
                dfd = os.open(self._path.parent, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except OSError as exc:
            if _is_disk_full(exc):
                raise _disk_full(exc, action) from exc
            raise StoreError(f"{action} failed: {exc}; the store was not changed") from exc
        finally:
            for p in (tmp, tmp_wal):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()

    def _schema_version(self) -> str | None:
        with self._read("opening the store") as con:
            try:
                row = _one(con, "SELECT value FROM meta WHERE key = 'schema_version'")
            except duckdb.CatalogException as exc:
                raise StoreError(f"{self._path} is a DuckDB file but not an evalbars store "
                                 "(no meta table)") from exc
        return row[0] if row else None

    def _check_schema(self) -> None:
        """Accept the current schema; upgrade a version-1 store in place (one copy-on-write
        transaction: an interrupted upgrade leaves the version-1 file as it was)."""
        version = self._schema_version()
        if version == "1":
            with self._writer_lock():
                if self._schema_version() == "1":  # another process may have upgraded it
                    _log.info("upgrading %s from store schema 1 to %s", self._path, SCHEMA_VERSION)
                    with self._transaction(action="upgrading the store") as con:
                        for sql in _MIGRATE_1_TO_2:
                            con.execute(sql)
                        self._rekey_tidy_runs(con)
            version = self._schema_version()
        row = (version,) if version is not None else None
        if row is None or row[0] != SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise StoreError(f"{self._path} has store schema version {found}; this evalbars "
                             f"reads version {SCHEMA_VERSION}")

    @staticmethod
    def _rekey_tidy_runs(con: duckdb.DuckDBPyConnection) -> None:
        """Version 1 keyed a tidy table on its file's sha256 and so stored only its first
        model. Key each stored tidy run on its own rows (``rows_key`` of its stored scores, as
        the parser computes it), so that ingesting the table again finds that run "already
        present" and adds the models that were lost."""
        rows = con.execute("SELECT f.key, r.run_id, r.name, r.model FROM files f JOIN runs r "
                           "USING (run_id) WHERE f.format LIKE 'tidy%' ORDER BY f.key").fetchall()
        for key, rid, name, model in rows:
            scores = con.execute("SELECT task, metric, item_id, answer_idx, score, cluster "
                                 "FROM scores WHERE run_id = ?", [rid]).df()
            con.execute("UPDATE files SET key = ? WHERE key = ?",
                        [rows_key(name, model, scores), key])

    # ---- writing (each call is one transaction) -------------------------------------
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
        with self._writer_lock():
            # decide read-only first: a repeat upload must not rewrite the file
            with self._read("checking which files are stored") as con:
                keys = [_file_key(f) for p in prepared for f in p.run.files]
                known = self._known_files(con, keys)
            all_known = all(p.run.files and all(_file_key(f) in known for f in p.run.files)
                            for p in prepared)
            if all_known:
                rows = []
                with self._read() as con:
                    for p in prepared:
                        rid = known[_file_key(p.run.files[0])]
                        name = _one(con, "SELECT name FROM runs WHERE run_id = ?", [rid])[0]
                        rows.append(self._report_row(p, rid, name, "already present", 0, []))
                warnings = tuple(w for p in prepared for w in p.warnings)
                return IngestReport(pd.DataFrame(rows, columns=list(REPORT_COLUMNS)), True, warnings,
                                    tuple(rejected))
            rows = []
            with self._transaction(action="ingest") as con:
                for p in prepared:
                    rows.append(self._write_run(con, p))
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
                     hint: str | None = None) -> str:
        """``base`` if free; else ``base @ hint`` (e.g. the run's time) if free; else
        ``base (2)``, ``base (3)``, ..."""
        taken = {n for (n,) in con.execute("SELECT name FROM runs WHERE run_id IS DISTINCT FROM ?",
                                           [exclude_run]).fetchall()}
        if base not in taken:
            return base
        if hint and f"{base} @ {hint}" not in taken:
            return f"{base} @ {hint}"
        k = 2
        while f"{base} ({k})" in taken:
            k += 1
        return f"{base} ({k})"

    def _write_run(self, con: duckdb.DuckDBPyConnection, p: _Prepared) -> list:
        """Insert or merge one prepared run inside the open transaction; a report row."""
        run = p.run
        files = {_file_key(f): f for f in run.files}
        known = self._known_files(con, list(files))
        if files and len(known) == len(files):
            rid = next(iter(known.values()))
            name = _one(con, "SELECT name FROM runs WHERE run_id = ?", [rid])[0]
            return self._report_row(p, rid, name, "already present", 0, [])
        warnings: list[str] = []
        target: int | None = None
        if known:
            owners = sorted(set(known.values()))
            target = owners[0]
            if len(owners) > 1:
                warnings.append(f"files of {p.name!r} belong to several stored runs "
                                f"({', '.join(map(str, owners))}); merged into run {target}")
        elif run.source_key:
            row = _one(con, "SELECT min(run_id) FROM runs WHERE source_key = ?",
                              [run.source_key])
            target = row[0] if row and row[0] is not None else None
        now = datetime.now(timezone.utc).replace(tzinfo=None)

        if target is None:
            rid = int(_one(con, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'next_run_id'")[0])
            con.execute("UPDATE meta SET value = ? WHERE key = 'next_run_id'", [str(rid + 1)])
            name = self._unique_name(con, p.name, hint=_name_hint(run.source_key))
            if name != p.name:
                warnings.append(f"a run named {p.name!r} exists; this one is stored as {name!r}")
            con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [rid, name, run.model, run.source_format, run.harness, run.harness_version,
                         _json_dumps(run.protocol), [], now, run.source_key])
            status = "added"
            skip_cells: set[tuple[str, str]] = set()
            skip_summ: set[tuple[str, str]] = set()
            stored_tasks: dict[str, tuple[int | None, dict]] = {}
        else:
            rid = int(target)
            name, model, harness, hv, proto_text, skey = _one(
                con, "SELECT name, model, harness, harness_version, protocol, source_key FROM runs "
                "WHERE run_id = ?", [rid])
            conflicts: list[str] = []
            merged = _deep_merge(_json_loads(proto_text), run.protocol, "", conflicts)
            if conflicts:
                warnings.append(f"merged into {name!r}: protocol setting(s) "
                                f"{', '.join(conflicts[:8])} differ; the stored values were kept")
            if hv and run.harness_version and hv != run.harness_version:
                warnings.append(f"merged into {name!r}: harness version {run.harness_version} "
                                f"differs from the stored {hv}; kept {hv}")
            con.execute("UPDATE runs SET model = coalesce(model, ?), harness = coalesce(harness, ?), "
                        "harness_version = coalesce(harness_version, ?), protocol = ?, "
                        "source_key = coalesce(source_key, ?) WHERE run_id = ?",
                        [run.model, run.harness, run.harness_version, _json_dumps(merged),
                         run.source_key, rid])
            status = "merged"
            skip_cells = {(t, m) for t, m in con.execute(
                "SELECT task, metric FROM cells WHERE run_id = ?", [rid]).fetchall()}
            skip_summ = {(t, m) for t, m in con.execute(
                "SELECT task, metric FROM summaries WHERE run_id = ?", [rid]).fetchall()}
            stored_tasks = {t: (nc, _json_loads(pr)) for t, nc, pr in con.execute(
                "SELECT task, n_choices, protocol FROM tasks WHERE run_id = ?", [rid]).fetchall()}

        # files
        new_files = [[key, f.sha256.lower(), rid, f.name, int(f.size), f.format, now]
                     for key, f in files.items() if key not in known]
        if new_files:
            con.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)", new_files)

        # scores + cells (bulk, from Arrow; cells were computed in _prepare)
        scores, cells = p.scores, p.cells
        if skip_cells and scores.num_rows:
            present = sorted(skip_cells)
            scores, dropped = self._drop_pairs_sql(con, scores, present)
            cells, _ = self._drop_pairs_sql(con, cells, present)
            for t, m in dropped:
                warnings.append(f"merged into {name!r}: task {t!r} metric {m!r} already has item "
                                "scores; kept the stored ones")
        added = 0
        if scores.num_rows:
            con.register("_in_scores", scores)
            con.register("_in_cells", cells)
            try:
                t0 = time.perf_counter()
                con.execute("INSERT INTO scores SELECT ?, task, metric, item_id, answer_idx, score, "
                            "cluster, item_hash, prompt_hash FROM _in_scores", [rid])
                _log.debug("ingest: %d scores in %.2f s", scores.num_rows, time.perf_counter() - t0)
                con.execute("INSERT INTO cells SELECT ?, task, metric, n_items, n_scores, k_max, sum, "
                            "sumsq, is_binary, has_cluster FROM _in_cells", [rid])
            finally:
                con.unregister("_in_scores")
                con.unregister("_in_cells")
            added = scores.num_rows

        # summaries
        summ = p.summaries
        if summ.num_rows:
            if skip_summ:
                summ, _ = self._drop_pairs_sql(con, summ, sorted(skip_summ))
            if summ.num_rows:
                con.register("_in_summ", summ)
                try:
                    con.execute("INSERT INTO summaries SELECT ?, task, metric, value, stderr, "
                                "stderr_raw, n, is_group FROM _in_summ", [rid])
                finally:
                    con.unregister("_in_summ")

        # texts (a merge adds only rows the run lacks)
        if p.texts.num_rows:
            con.register("_in_texts", p.texts)
            t0 = time.perf_counter()
            try:
                if status == "added":
                    con.execute("INSERT INTO texts SELECT ?, task, item_id, answer_idx, prompt, "
                                "target, response FROM _in_texts", [rid])
                else:
                    con.execute("INSERT INTO texts SELECT ?, t.task, t.item_id, t.answer_idx, "
                                "t.prompt, t.target, t.response FROM _in_texts t WHERE NOT EXISTS ("
                                "SELECT 1 FROM texts x WHERE x.run_id = ? AND x.task = t.task AND "
                                "x.item_id = t.item_id AND x.answer_idx = t.answer_idx)", [rid, rid])
            finally:
                con.unregister("_in_texts")
            _log.debug("ingest: %d texts in %.2f s", p.texts.num_rows, time.perf_counter() - t0)

        # per-task info
        inserts, updates = [], []
        for t, nc, proto in p.tasks:
            if t in stored_tasks:
                old_nc, old_proto = stored_tasks[t]
                conflicts = []
                merged = _deep_merge(old_proto, proto, t, conflicts)
                if conflicts:
                    warnings.append(f"merged into {name!r}: task setting(s) {', '.join(conflicts[:8])} "
                                    "differ; the stored values were kept")
                updates.append([old_nc if old_nc is not None else nc, _json_dumps(merged), rid, t])
            else:
                inserts.append([rid, t, nc, _json_dumps(proto)])
        if inserts:
            con.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?)", inserts)
        if updates:
            con.executemany("UPDATE tasks SET n_choices = ?, protocol = ? WHERE run_id = ? AND task = ?",
                            updates)
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
        with self._writer_lock():
            rid = self.resolve_run(run)
            with self._read() as con:
                row = _one(con, "SELECT run_id FROM runs WHERE name = ?", [new])
            if row is not None and int(row[0]) != rid:
                raise StoreError(f"another run (id {row[0]}) is already named {new!r}")
            if row is not None:
                return
            with self._transaction(action="renaming the run") as con:
                con.execute("UPDATE runs SET name = ? WHERE run_id = ?", [new, rid])

    def set_tags(self, run: str | int, tags: list[str]) -> None:
        """Replace a run's tags (stripped, empty ones dropped, duplicates removed, order kept)."""
        if isinstance(tags, str):
            tags = [tags]
        clean = list(dict.fromkeys(str(t).strip() for t in tags if t is not None and str(t).strip()))
        with self._writer_lock():
            rid = self.resolve_run(run)
            with self._transaction(action="setting tags") as con:
                con.execute("UPDATE runs SET tags = ? WHERE run_id = ?", [clean, rid])

    def delete_run(self, run: str | int) -> None:
        """Remove a run and everything it owns (scores, texts, summaries, files) in one
        transaction; uploading its files again adds it anew."""
        with self._writer_lock():
            rid = self.resolve_run(run)
            with self._transaction(action="deleting the run") as con:
                for sql in _DELETE_RUN_SQL:
                    con.execute(sql, [rid])

    # ---- reading ----------------------------------------------------------------------
    def version(self) -> str:
        """Changes whenever the content changes (use as a cache key).

        Every write replaces the file, so (inode, size, mtime in ns) of the store file
        changes; a ``stat`` call, no DuckDB connection.
        """
        try:
            st = self._path.stat()
        except FileNotFoundError:
            return "missing"
        return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"

    def write_counter(self) -> int:
        """How many write transactions the store has committed (read from the file)."""
        with self._read() as con:
            return int(_one(con, "SELECT value FROM meta WHERE key = 'write_counter'")[0])

    def resolve_run(self, ref: str | int) -> int:
        """Run id from a name or id; StoreError naming the candidates if unknown.

        ``#3`` and ``id:3`` always mean the run with id 3, ``name:3`` the run named "3"; an int
        is an id. A bare text: the run of that exact name, else the id it spells in digits,
        else a case-insensitive name matching exactly one run. A bare number that is both a
        run's name and another run's id is refused as ambiguous (so ``delete 3`` can never
        delete the wrong run).
        """
        with self._read() as con:
            rows = con.execute("SELECT run_id, name FROM runs ORDER BY run_id").fetchall()
        ids = {int(rid) for rid, _ in rows}
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if int(ref) in ids:
                return int(ref)
        else:
            text = str(ref).strip()
            low_text = text.lower()
            id_text = (text[1:] if text.startswith("#") else
                       text[3:] if low_text.startswith("id:") else None)
            if id_text is not None:
                id_text = id_text.strip()
                if id_text.isascii() and id_text.isdigit() and int(id_text) in ids:
                    return int(id_text)
            else:
                if low_text.startswith("name:"):
                    text = text[5:].strip()
                    numeric = False
                else:
                    numeric = text.isascii() and text.isdigit()
                named = [int(rid) for rid, name in rows if name == text]
                if named:
                    if numeric and int(text) in ids and int(text) != named[0]:
                        raise StoreError(
                            f"run {text!r} is ambiguous: it is the name of run id {named[0]} and "
                            f"the id of another run; write #{text} (or id:{text}) for the id, "
                            f"name:{text} for the name")
                    return named[0]
                if numeric and int(text) in ids:
                    return int(text)
                low = [int(rid) for rid, name in rows if name.lower() == text.lower()]
                if len(low) == 1:
                    return low[0]
        if not rows:
            raise StoreError(f"no run {ref!r}: the store is empty (ingest some results first)")
        listed = ", ".join(f"{name!r} (id {rid})" for rid, name in rows[:20])
        more = f" and {len(rows) - 20} more" if len(rows) > 20 else ""
        raise StoreError(f"no run named or numbered {ref!r}; known runs: {listed}{more}")

    def runs(self) -> pd.DataFrame:
        """run_id, name, model, source_format, harness, harness_version, tags (list[str]),
        created_at, source_key, n_tasks, n_scores, has_items"""
        with self._read() as con:
            df = con.execute("""
                WITH t AS (SELECT run_id, task FROM cells UNION SELECT run_id, task FROM summaries),
                     nt AS (SELECT run_id, count(*) AS n_tasks FROM t GROUP BY run_id),
                     ns AS (SELECT run_id, sum(n_scores) AS n_scores FROM cells GROUP BY run_id)
                SELECT r.run_id, r.name, r.model, r.source_format, r.harness, r.harness_version,
                       r.tags, r.created_at, r.source_key,
                       coalesce(nt.n_tasks, 0) AS n_tasks,
                       CAST(coalesce(ns.n_scores, 0) AS BIGINT) AS n_scores,
                       ns.n_scores IS NOT NULL AS has_items
                FROM runs r LEFT JOIN nt USING (run_id) LEFT JOIN ns USING (run_id)
                ORDER BY r.run_id""").df()
        df["tags"] = [list(t) if t is not None else [] for t in df["tags"]]
        return df

    def run_info(self, run: str | int) -> dict:
        """One run's row plus 'protocol' (dict) and 'files' (list of dicts)."""
        rid = self.resolve_run(run)
        runs = self.runs()
        info = runs[runs["run_id"] == rid].iloc[0].to_dict()
        with self._read() as con:
            proto = _one(con, "SELECT protocol FROM runs WHERE run_id = ?", [rid])[0]
            files = con.execute("SELECT name, sha256, size, format, added_at FROM files "
                                "WHERE run_id = ? ORDER BY added_at, name", [rid]).df()
        info["protocol"] = _json_loads(proto)
        info["files"] = files.to_dict("records")
        return info

    @staticmethod
    def _where(run_ids: list[int] | None, task: str | None, metric: str | None,
               alias: str = "") -> tuple[str, list]:
        """A WHERE clause of fixed fragments with ``?`` placeholders (no user text in SQL)."""
        pre = f"{alias}." if alias else ""
        clauses, params = [], []
        if run_ids is not None:
            ids = [int(r) for r in run_ids]
            if not ids:
                return " WHERE FALSE", []
            clauses.append(f"{pre}run_id IN ({', '.join('?' * len(ids))})")
            params.extend(ids)
        if task is not None:
            clauses.append(f"{pre}task = ?")
            params.append(str(task))
        if metric is not None:
            clauses.append(f"{pre}metric = ?")
            params.append(str(metric))
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def tasks(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, n_items, k_max, has_cluster, binary, n_choices,
        has_items (False for summary-only task/metric rows), is_group (from the summary,
        False when none)"""
        where_c, pc = self._where(run_ids, None, None, "c")
        where_s, ps = self._where(run_ids, None, None, "s")
        sql = f"""
            SELECT c.run_id, c.task, c.metric, c.n_items, c.k_max, c.has_cluster, c.is_binary AS "binary",
                   t.n_choices, TRUE AS has_items, coalesce(s.is_group, FALSE) AS is_group
            FROM cells c
            LEFT JOIN tasks t ON t.run_id = c.run_id AND t.task = c.task
            LEFT JOIN summaries s ON s.run_id = c.run_id AND s.task = c.task AND s.metric = c.metric
            {where_c}
            UNION ALL
            SELECT s.run_id, s.task, s.metric, s.n, NULL, FALSE, NULL, t.n_choices, FALSE, s.is_group
            FROM summaries s
            LEFT JOIN tasks t ON t.run_id = s.run_id AND t.task = s.task
            {where_s}{' AND' if where_s else ' WHERE'} NOT EXISTS (SELECT 1 FROM cells c2
                WHERE c2.run_id = s.run_id AND c2.task = s.task AND c2.metric = s.metric)
            ORDER BY run_id, task, metric"""
        with self._read() as con:
            df = con.execute(sql, pc + ps).df()
        return df

    def scores(self, run_ids: list[int], task: str | None = None,
               metric: str | None = None) -> pd.DataFrame:
        """run_id, task, metric, item_id, answer_idx, score, cluster, item_hash, prompt_hash"""
        where, params = self._where(run_ids, task, metric)
        with self._read() as con:
            return _fetch_rows(con, "SELECT run_id, task, metric, item_id, answer_idx, score, "
                               f"cluster, item_hash, prompt_hash FROM scores{where} "
                               "ORDER BY run_id, task, metric, item_id, answer_idx", params)

    def item_means(self, run_ids: list[int], task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Per-item mean over answers: run_id, task, metric, item_id, score, n_answers,
        cluster, item_hash, prompt_hash (computed in SQL).

        score = mean of the item's answer scores; cluster/hashes: the smallest value among
        the item's answers (they agree unless the harness changed the prompt between
        repeats).
        """
        where, params = self._where(run_ids, task, metric)
        with self._read() as con:
            return _fetch_rows(
                con, "SELECT run_id, task, metric, item_id, avg(score) AS score, "
                "CAST(count(*) AS INTEGER) AS n_answers, min(cluster) AS cluster, "
                "min(item_hash) AS item_hash, min(prompt_hash) AS prompt_hash "
                f"FROM scores{where} GROUP BY run_id, task, metric, item_id "
                "ORDER BY run_id, task, metric, item_id", params)

    def paired_item_means(self, run_a: int, run_b: int, task: str, metric: str,
                          metric_b: str | None = None) -> pd.DataFrame:
        """Item means of two runs (or two metric variants of one run) joined on item_id.

        Columns: item_id, score_a, score_b, n_answers_a, n_answers_b, cluster (run A's,
        else B's), hash_match (False when both runs have an item or prompt hash and they
        differ). Only items both sides have; the pairing report lists the rest.
        """
        mb = metric if metric_b is None else metric_b
        sql = """
            WITH a AS (SELECT item_id, avg(score) AS s, count(*) AS k, min(cluster) AS cl,
                              min(item_hash) AS ih, min(prompt_hash) AS ph
                       FROM scores WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item_id),
                 b AS (SELECT item_id, avg(score) AS s, count(*) AS k, min(cluster) AS cl,
                              min(item_hash) AS ih, min(prompt_hash) AS ph
                       FROM scores WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item_id)
            SELECT a.item_id, a.s AS score_a, b.s AS score_b,
                   CAST(a.k AS INTEGER) AS n_answers_a, CAST(b.k AS INTEGER) AS n_answers_b,
                   coalesce(a.cl, b.cl) AS cluster,
                   NOT (coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE)) AS hash_match
            FROM a JOIN b USING (item_id) ORDER BY a.item_id"""
        with self._read() as con:
            return _fetch_rows(con, sql, [int(run_a), task, metric, int(run_b), task, mb])

    def cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Over item means: run_id, task, metric, n, sum, sumsq, binary (computed in SQL).

        n = items, sum = sum_i m_i, sumsq = sum_i m_i^2 over per-item means m_i (so the CLT
        SE is sqrt((sumsq - sum^2/n)/(n-1)/n)); binary = every raw score is 0 or 1 (with K
        answers the means may still be fractions). Extra columns: k_max, n_scores,
        has_cluster. Maintained at ingest in the same transaction as the scores.
        """
        where, params = self._where(run_ids, task, metric)
        with self._read() as con:
            return con.execute("SELECT run_id, task, metric, n_items AS n, sum, sumsq, is_binary AS \"binary\", "
                               f"k_max, n_scores, has_cluster FROM cells{where} "
                               "ORDER BY run_id, task, metric", params).df()

    def recompute_cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                             metric: str | None = None) -> pd.DataFrame:
        """``cell_stats`` recomputed from the raw score rows instead of the maintained table
        (same columns; an integrity check, and the cost of the leaderboard aggregate
        without materialisation)."""
        where, params = self._where(run_ids, task, metric)
        sql = ("SELECT run_id, task, metric, count(*) AS n, sum(m) AS sum, sum(m * m) AS sumsq, "
               "bool_and(bin) AS \"binary\", CAST(max(k) AS INTEGER) AS k_max, "
               "sum(k) AS n_scores, bool_or(hc) AS has_cluster FROM ("
               "SELECT run_id, task, metric, item_id, avg(score) AS m, count(*) AS k, "
               "bool_and(score = 0 OR score = 1) AS bin, bool_or(cluster IS NOT NULL) AS hc "
               f"FROM scores{where} GROUP BY run_id, task, metric, item_id) "
               "GROUP BY run_id, task, metric ORDER BY run_id, task, metric")
        with self._read() as con:
            return con.execute(sql, params).df()

    def summaries(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, value, stderr, stderr_raw, n, is_group"""
        where, params = self._where(run_ids, None, None)
        with self._read() as con:
            return con.execute("SELECT run_id, task, metric, value, stderr, stderr_raw, n, is_group "
                               f"FROM summaries{where} ORDER BY run_id, task, metric", params).df()

    def texts(self, run_id: int, task: str, item_ids: list[str]) -> pd.DataFrame:
        """task, item_id, answer_idx, prompt, target, response"""
        ids = [str(i) for i in item_ids]
        with self._read() as con:
            return con.execute("SELECT task, item_id, answer_idx, prompt, target, response FROM texts "
                               "WHERE run_id = ? AND task = ? AND list_contains(?, item_id) "
                               "ORDER BY item_id, answer_idx", [int(run_id), task, ids]).df()

    def task_protocols(self, run_id: int) -> pd.DataFrame:
        """task, n_choices, protocol (dict)"""
        with self._read() as con:
            df = con.execute("SELECT task, n_choices, protocol FROM tasks WHERE run_id = ? "
                             "ORDER BY task", [int(run_id)]).df()
        df["protocol"] = [_json_loads(p) for p in df["protocol"]]
        return df

    def task_protocol_table(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, protocol (dict) of many runs in one query (the leaderboard reads
        each task's declared metric direction, primary metric and subtasks from it)."""
        where, params = self._where(run_ids, None, None, "t")
        with self._read() as con:
            df = con.execute(f"SELECT t.run_id, t.task, t.protocol FROM tasks t{where} "
                             "ORDER BY t.run_id, t.task", params).df()
        df["protocol"] = [_json_loads(p) for p in df["protocol"]]
        return df

    def pairing(self, run_a: int, run_b: int, task: str, metric: str) -> dict:
        """{'shared': [...], 'only_a': [...], 'only_b': [...], 'hash_mismatch': [...]}

        Items are matched on item_id within (task, metric). hash_mismatch lists shared items
        whose item hash or prompt hash differs between the runs (compared only when both
        runs recorded that hash). Item ids are in natural order (2 before 10).
        """
        sql = """
            WITH a AS (SELECT item_id, min(item_hash) AS ih, min(prompt_hash) AS ph FROM scores
                       WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item_id),
                 b AS (SELECT item_id, min(item_hash) AS ih, min(prompt_hash) AS ph FROM scores
                       WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item_id)
            SELECT coalesce(a.item_id, b.item_id) AS item_id, a.item_id IS NOT NULL AS in_a,
                   b.item_id IS NOT NULL AS in_b,
                   coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE) AS mismatch
            FROM a FULL OUTER JOIN b USING (item_id)"""
        with self._read() as con:
            rows = con.execute(sql, [int(run_a), task, metric, int(run_b), task, metric]).fetchall()
        out: dict[str, list[str]] = {"shared": [], "only_a": [], "only_b": [], "hash_mismatch": []}
        for item, in_a, in_b, mismatch in rows:
            if in_a and in_b:
                out["shared"].append(item)
                if mismatch:
                    out["hash_mismatch"].append(item)
            elif in_a:
                out["only_a"].append(item)
            else:
                out["only_b"].append(item)
        for k in out:
            out[k].sort(key=_natural_key)
        return out

    def protocol_diff(self, run_a: int, run_b: int, task: str | None = None) -> pd.DataFrame:
        """scope ("run" or task), setting, value_a, value_b — only settings that differ.

        Run scope: harness, harness_version, source_format and the run protocol flattened to
        dotted keys ({"a": {"b": 1}} -> "a.b"). Task scope (the given task, else every task
        both runs have): the task protocol flattened the same way, n_choices and "metrics"
        (the metric variants present, comma list). Values are shown as text (JSON for
        non-strings; None when a run lacks the setting). Keys that change on every run
        (``VOLATILE_PROTOCOL_KEYS``: dates, timings) are skipped. Extra column
        ``category``: harness version, few-shot, chat template, generation, metric variants,
        prompt, model or other; rows are ordered by category, then scope and setting.
        """
        a, b = int(run_a), int(run_b)
        with self._read() as con:
            def run_side(rid: int) -> dict[str, Any]:
                row = _one(con, "SELECT harness, harness_version, source_format, protocol "
                                  "FROM runs WHERE run_id = ?", [rid])
                if row is None:
                    raise StoreError(f"no run with id {rid}")
                flat = flatten_protocol(_json_loads(row[3]))
                flat.update({"harness": row[0], "harness_version": row[1], "source_format": row[2]})
                return flat

            def task_side(rid: int) -> dict[str, dict[str, Any]]:
                out: dict[str, dict[str, Any]] = {}
                for t, nc, pr in con.execute("SELECT task, n_choices, protocol FROM tasks "
                                             "WHERE run_id = ?", [rid]).fetchall():
                    flat = flatten_protocol(_json_loads(pr))
                    flat["n_choices"] = nc
                    out[t] = flat
                for t, ms in con.execute(
                        "SELECT task, string_agg(DISTINCT metric, ', ' ORDER BY metric) FROM "
                        "(SELECT task, metric FROM cells WHERE run_id = ? UNION "
                        " SELECT task, metric FROM summaries WHERE run_id = ?) GROUP BY task",
                        [rid, rid]).fetchall():
                    out.setdefault(t, {"n_choices": None})["metrics"] = ms
                return out

            ra, rb = run_side(a), run_side(b)
            ta, tb = task_side(a), task_side(b)
        rows: list[tuple[str, str, str | None, str | None, str]] = []

        def compare(scope: str, da: dict[str, Any], db: dict[str, Any]) -> None:
            for key in sorted(set(da) | set(db)):
                if key.rsplit(".", 1)[-1] in VOLATILE_PROTOCOL_KEYS:
                    continue
                va, vb = _display(da.get(key)), _display(db.get(key))
                if va != vb:
                    rows.append((scope, key, va, vb, _category(key)))

        compare("run", ra, rb)
        task_list = [task] if task is not None else sorted(set(ta) & set(tb))
        for t in task_list:
            compare(t, ta.get(t, {}), tb.get(t, {}))
        df = pd.DataFrame(rows, columns=["scope", "setting", "value_a", "value_b", "category"],
                          dtype=object)  # keeps None (a missing setting) as None
        if len(df):
            df["_o"] = df["category"].map(_CATEGORY_ORDER)
            df["_s"] = (df["scope"] != "run").astype(int)
            df = df.sort_values(["_o", "_s", "scope", "setting"], kind="stable").drop(columns=["_o", "_s"])
        return df.reset_index(drop=True)

    def audit(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, reported, reported_stderr, stderr_raw, n_reported,
        recomputed_stderr, n_items, flag (str|None: 'stderr mismatch', 'zero stderr with
        0<p<1', 'N/A stderr', 'n mismatch')

        One row per reported summary. When the run has item scores for the same (task,
        metric): recomputed_stderr = sd(m_i, ddof=1)/sqrt(n) over the per-item means m_i
        (the lm-evaluation-harness convention, sqrt(p(1-p)/(n-1)) for 0/1 scores; METHODS.md)
        and recomputed = mean(m_i) (extra column; flag 'value mismatch'). Numbers agree
        within AUDIT_ABS_TOL + AUDIT_REL_TOL * |recomputed| (printed rounding). Also:
        'zero stderr with 0<p<1' when the reported stderr is 0 while 0 < value < 1;
        'N/A stderr' when the stderr was written as text ("N/A"); 'n mismatch' when the
        reported n differs from the number of items. Several flags are joined with "; ".
        Groups (is_group) are audited only if item scores exist under the group name.
        """
        where, params = self._where(run_ids, None, None, "s")
        where_x, params_x = self._where(run_ids, None, None, "x")
        sql = f"""
            WITH rc AS (
                -- from the per-cell sums of item means kept at ingest (no scan of the scores):
                -- sd(m_i, ddof=1)/sqrt(n) = sqrt((sumsq - sum^2/n)/(n-1)/n), floored at 0
                SELECT x.run_id, x.task, x.metric, x.n_items, x.sum / x.n_items AS mean,
                       CASE WHEN x.n_items >= 2 THEN sqrt(greatest(x.sumsq - x.sum * x.sum / x.n_items, 0)
                                                          / (x.n_items - 1) / x.n_items) END AS se
                FROM cells x{where_x})
            SELECT s.run_id, s.task, s.metric, s.value AS reported, s.stderr AS reported_stderr,
                   s.stderr_raw, s.n AS n_reported, rc.se AS recomputed_stderr, rc.n_items,
                   rc.mean AS recomputed, s.is_group
            FROM summaries s LEFT JOIN rc USING (run_id, task, metric)
            {where}
            ORDER BY s.run_id, s.task, s.metric"""
        with self._read() as con:
            df = con.execute(sql, params_x + params).df()
        flags: list[str | None] = []
        for r in df.itertuples(index=False):
            f: list[str] = []
            rep, rse = r.reported, r.reported_stderr
            rec_se, rec = r.recomputed_stderr, r.recomputed
            if not _is_missing(rse) and not _is_missing(rec_se) and not _agrees(float(rse), float(rec_se)):
                f.append("stderr mismatch")
            if not _is_missing(rse) and float(rse) == 0.0 and not _is_missing(rep) and 0.0 < float(rep) < 1.0:
                f.append("zero stderr with 0<p<1")
            if not _is_missing(r.stderr_raw):
                f.append("N/A stderr")
            if not _is_missing(r.n_reported) and not _is_missing(r.n_items) and int(r.n_reported) != int(r.n_items):
                f.append("n mismatch")
            if not _is_missing(rep) and not _is_missing(rec) and not _agrees(float(rep), float(rec)):
                f.append("value mismatch")
            flags.append("; ".join(f) if f else None)
        df["flag"] = pd.Series(flags, index=df.index, dtype=object)
        cols = ["run_id", "task", "metric", "reported", "reported_stderr", "stderr_raw", "n_reported",
                "recomputed_stderr", "n_items", "flag", "recomputed", "is_group"]
        return df[cols]

    # ---- batched reads for the analysis layer (leaderboard tiers and ranks, compare) ----
    # Each replaces one query per task by one query for all tasks. The (task, metric) lists
    # travel as two ``?`` list parameters and are unnested in SQL (no user text in the SQL).

    @staticmethod
    def _item_means_sql(con: duckdb.DuckDBPyConnection, tasks: list[str], metrics: list[str],
                        run_ids: list[int] | None) -> tuple[str, list]:
        """SELECT run_id, task, metric, item_id, m (per-item mean over answers) for the
        (task, metric) pairs of the CTE ``tm`` and the given runs. Runs whose selected cells
        all have one answer per item (``cells.k_max = 1``) read their scores as the item
        means without a GROUP BY (a third of the time on 2M scores); the other runs average
        over answers."""
        where_c, pc = Store._where(run_ids, None, None, "c")
        rows = con.execute("SELECT c.run_id, max(c.k_max) FROM cells c SEMI JOIN (SELECT "
                           "unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric) tm "
                           f"USING (task, metric){where_c} GROUP BY c.run_id",
                           [tasks, metrics] + pc).fetchall()
        one = [int(r) for r, k in rows if int(k) <= 1]
        many = [int(r) for r, k in rows if int(k) > 1]
        w1, p1 = Store._where(one, None, None, "s")
        wk, pk = Store._where(many, None, None, "s")
        return ("SELECT s.run_id, s.task, s.metric, s.item_id, s.score AS m FROM scores s "
                f"SEMI JOIN tm USING (task, metric){w1} UNION ALL "
                "SELECT s.run_id, s.task, s.metric, s.item_id, avg(s.score) AS m FROM scores s "
                f"SEMI JOIN tm USING (task, metric){wk} "
                "GROUP BY s.run_id, s.task, s.metric, s.item_id"), p1 + pk

    def item_mean_rows(self, task_metrics: list[tuple[str, str]],
                       run_ids: list[int] | None = None) -> pd.DataFrame:
        """Per-item means of several (task, metric) cells in one Arrow query, lean columns:
        run_id, task, metric, item_id, score (mean over the item's answers), ordered by
        run_id, task, metric, item_id. For pivoting items x runs in numpy (rank intervals)."""
        tms = [(str(t), str(m)) for t, m in task_metrics]
        if not tms:
            return pd.DataFrame({"run_id": pd.Series(dtype="int32"), "task": pd.Series(dtype=str),
                                 "metric": pd.Series(dtype=str), "item_id": pd.Series(dtype=str),
                                 "score": pd.Series(dtype=float)})
        tasks, metrics = [t for t, _ in tms], [m for _, m in tms]
        with self._read() as con:
            x_sql, px = self._item_means_sql(con, tasks, metrics, run_ids)
            sql = ("WITH tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric) "
                   f"SELECT run_id, task, metric, item_id, m AS score FROM ({x_sql}) "
                   "ORDER BY run_id, task, metric, item_id")
            return _fetch_rows(con, sql, [tasks, metrics] + px)

    def reference_moments(self, comparisons: list[tuple[str, str, int]],
                          run_ids: list[int] | None = None) -> pd.DataFrame:
        """Paired sufficient statistics of every run against a reference run, one query.

        ``comparisons``: (task, metric, reference run_id) triples. For each triple and each
        run r with item scores for (task, metric) (only ``run_ids`` when given; the reference
        itself included), over the items r and the reference both have, with per-item means
        x_i (run r) and y_i (reference) and d_i = x_i - y_i:
        n (shared items), sum_d = sum d_i, sum_d2 = sum d_i^2, b = #{x_i = 1, y_i = 0},
        c = #{x_i = 0, y_i = 1}. Enough for the paired mean difference sum_d/n, its SE
        sqrt((sum_d2 - sum_d^2/n)/(n-1)/n) and McNemar's b, c without pulling any item.
        Columns: task, metric, ref_run_id, run_id, n, sum_d, sum_d2, b, c (run_id ascending
        within each comparison). A run sharing no item with the reference has no row;
        repeated triples count once.
        """
        comps = list(dict.fromkeys((str(t), str(m), int(r)) for t, m, r in comparisons))
        cols = ["task", "metric", "ref_run_id", "run_id", "n", "sum_d", "sum_d2", "b", "c"]
        if not comps:
            return pd.DataFrame({c: pd.Series(dtype=float if c.startswith("sum") else
                                              (str if c in ("task", "metric") else "int64"))
                                 for c in cols})
        tasks = [t for t, _, _ in comps]
        metrics = [m for _, m, _ in comps]
        refs = [r for _, _, r in comps]
        with self._read() as con:
            x_sql, px = self._item_means_sql(con, tasks, metrics, run_ids)
            # grouping on the comparison's number k (an integer) rather than on the task and
            # metric strings halves the aggregation time on 2M joined rows
            sql = f"""
                WITH cmp AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric,
                                    unnest(?::INTEGER[]) AS ref_run, unnest(?::INTEGER[]) AS k),
                     tm AS (SELECT DISTINCT task, metric FROM cmp),
                     r AS (SELECT cmp.k, s.task, s.metric, s.item_id, avg(s.score) AS y
                           FROM scores s JOIN cmp ON s.run_id = cmp.ref_run AND s.task = cmp.task
                                                 AND s.metric = cmp.metric
                           GROUP BY cmp.k, s.task, s.metric, s.item_id),
                     x AS ({x_sql}),
                     agg AS (SELECT r.k, x.run_id, count(*) AS n, sum(x.m - r.y) AS sum_d,
                                    sum((x.m - r.y) * (x.m - r.y)) AS sum_d2,
                                    count(*) FILTER (WHERE x.m = 1 AND r.y = 0) AS b,
                                    count(*) FILTER (WHERE x.m = 0 AND r.y = 1) AS c
                             FROM x JOIN r ON x.task = r.task AND x.metric = r.metric
                                          AND x.item_id = r.item_id
                             GROUP BY r.k, x.run_id)
                SELECT cmp.task, cmp.metric, cmp.ref_run AS ref_run_id, agg.run_id, agg.n,
                       agg.sum_d, agg.sum_d2, agg.b, agg.c
                FROM agg JOIN cmp USING (k) ORDER BY cmp.k, agg.run_id"""
            return con.execute(sql, [tasks, metrics, refs, list(range(len(comps)))] + px).df()

    def paired_item_means_tasks(self, run_a: int, run_b: int,
                                task_metrics: list[tuple[str, str]]) -> pd.DataFrame:
        """``paired_item_means`` and ``pairing`` of two runs for several (task, metric) cells
        in one query: every item either run has, columns task, metric, item_id, score_a,
        score_b (NaN where that run lacks the item), cluster (run A's, else B's), hash_match
        (False when both runs recorded an item or prompt hash and they differ), ordered by
        task, metric, item_id."""
        tms = [(str(t), str(m)) for t, m in task_metrics]
        tasks, metrics = [t for t, _ in tms], [m for _, m in tms]
        side = ("SELECT s.task, s.metric, s.item_id, avg(s.score) AS s, min(s.cluster) AS cl, "
                "min(s.item_hash) AS ih, min(s.prompt_hash) AS ph FROM scores s "
                "SEMI JOIN tm USING (task, metric) WHERE s.run_id = ? "
                "GROUP BY s.task, s.metric, s.item_id")
        sql = f"""
            WITH tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric),
                 a AS ({side}), b AS ({side})
            SELECT coalesce(a.task, b.task) AS task, coalesce(a.metric, b.metric) AS metric,
                   coalesce(a.item_id, b.item_id) AS item_id, a.s AS score_a, b.s AS score_b,
                   coalesce(a.cl, b.cl) AS cluster,
                   NOT (coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE)) AS hash_match
            FROM a FULL OUTER JOIN b
              ON a.task = b.task AND a.metric = b.metric AND a.item_id = b.item_id
            ORDER BY 1, 2, 3"""
        with self._read() as con:
            return _fetch_rows(con, sql, [tasks, metrics, int(run_a), int(run_b)])

    def item_texts(self, run_ids: list[int], task: str) -> pd.DataFrame:
        """run_id, item_id, prompt, target, response of each item's first answer
        (answer_idx 0) of ``task`` in the runs: the Items page reads each model's pick (the
        response: for lm_eval multiple choice the chosen option's text) and the gold (target)
        from it."""
        ids = [int(r) for r in run_ids]
        with self._read() as con:
            return _fetch_rows(con, "SELECT run_id, item_id, prompt, target, response FROM texts "
                               "WHERE list_contains(?, run_id) AND task = ? AND answer_idx = 0 "
                               "ORDER BY run_id, item_id", [ids, str(task)])

    # ---- read queries added for page speed (perf helper, issue 9 section 2) -------------

    def item_mean_bounds(self, run_ids: list[int], task: str, metric: str) -> dict:
        """Range of the per-item means (mean over answers) of some runs on one (task, metric),
        NaN means left out: {"n": count of non-NaN means, "min": smallest, "max": largest}
        (min/max None when n = 0). One SQL aggregate instead of pulling every item mean
        (the leaderboard's check whether continuous scores are credit in [0, 1])."""
        where, params = self._where(run_ids, task, metric)
        sql = ("SELECT count(m), min(m), max(m) FROM (SELECT avg(score) AS m FROM scores"
               f"{where} GROUP BY run_id, item_id) WHERE NOT isnan(m)")
        with self._read() as con:
            n, lo, hi = _one(con, sql, params) or (0, None, None)
        return {"n": int(n or 0), "min": None if lo is None else float(lo),
                "max": None if hi is None else float(hi)}

    def item_cluster_codes(self, task_metrics: list[tuple[str, str]],
                           run_ids: list[int] | None = None) -> pd.DataFrame:
        """Per-item means with integer cluster codes for several (task, metric) cells, no
        text columns: k (position of the cell in ``task_metrics``), run_id, score (mean over
        the item's answers), code (dense 0..G-1 within the cell, the same code for the same
        cluster label in every run; an item without a label is its own cluster, keyed by its
        item_id), has_cluster (the item has a label). For the clustered interval method
        (``stats.grouped_clustered_intervals``).

        One filtered scan for all cells (the cell number comes from ``list_position`` on the
        task and metric, not from a join); runs with one answer per item (``cells.k_max =
        1``) skip the GROUP BY. Labels travel as 64-bit hashes and become dense codes in
        numpy. The codes are exact: each cell's number of distinct hashes is checked against
        count(DISTINCT label) in SQL, and where they differ (a hash collision, or labels that
        differ between the answers of one item) that cell's labels themselves are fetched."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        empty = pd.DataFrame({"k": pd.Series(dtype="int32"), "run_id": pd.Series(dtype="int32"),
                              "score": pd.Series(dtype=float), "code": pd.Series(dtype="int64"),
                              "has_cluster": pd.Series(dtype=bool)})
        if not tms:
            return empty
        tasks = list(dict.fromkeys(t for t, _ in tms))
        metrics = list(dict.fromkeys(m for _, m in tms))
        cell_of = {(tasks.index(t) + 1, metrics.index(m) + 1): k for k, (t, m) in enumerate(tms)}
        base, pbase = self._where(run_ids, None, None)
        filt = (f"{base}{' AND' if base else ' WHERE'} task IN ({', '.join('?' * len(tasks))}) "
                f"AND metric IN ({', '.join('?' * len(metrics))})")
        pfilt = pbase + tasks + metrics
        pos = "list_position(?::VARCHAR[], task) AS kt, list_position(?::VARCHAR[], metric) AS km"
        with self._read() as con:
            ks = con.execute(f"SELECT run_id, max(k_max) FROM cells{filt} GROUP BY run_id",
                             pfilt).fetchall()
            one = [int(r) for r, km in ks if int(km) <= 1]
            many = [int(r) for r, km in ks if int(km) > 1]

            def x_sql(label: str) -> tuple[str, list]:
                w1, p1 = self._where(one, None, None)
                wk, pk = self._where(many, None, None)
                cond = f" AND task IN ({', '.join('?' * len(tasks))}) AND metric IN " \
                       f"({', '.join('?' * len(metrics))})"
                return (f"SELECT {pos}, run_id, score AS m, {label.format('cluster')} AS lab, "
                        "cluster IS NOT NULL AS has, CASE WHEN cluster IS NULL THEN item_id END "
                        f"AS lone FROM scores{w1}{cond if one else ''} UNION ALL "
                        f"SELECT {pos}, run_id, avg(score), {label.format('min(cluster)')}, "
                        "min(cluster) IS NOT NULL, CASE WHEN min(cluster) IS NULL THEN item_id "
                        f"END FROM scores{wk}{cond if many else ''} "
                        "GROUP BY task, metric, run_id, item_id",
                        [tasks, metrics] + p1 + (tasks + metrics if one else [])
                        + [tasks, metrics] + pk + (tasks + metrics if many else []))

            sql, params = x_sql("hash({})")
            got = con.execute(sql, params).fetchnumpy()
            n_labels = {cell_of.get((int(a), int(b))): int(n) for a, b, n in con.execute(
                f"SELECT {pos}, count(DISTINCT cluster) FROM scores{filt} GROUP BY task, metric",
                [tasks, metrics] + pfilt).fetchall()}
            lut = np.full((len(tasks) + 1) * (len(metrics) + 1), -1, dtype=np.int64)
            for (a, b), k in cell_of.items():
                lut[a * (len(metrics) + 1) + b] = k

            def split(res: dict) -> tuple[np.ndarray, np.ndarray]:
                """Row order grouping the cells, and each cell's slice bounds in it."""
                kt = np.asarray(res["kt"], dtype=np.int64)
                km = np.asarray(res["km"], dtype=np.int64)
                cell = lut[kt * (len(metrics) + 1) + km]
                order = np.argsort(cell, kind="stable")
                return order, np.searchsorted(cell[order], np.arange(-1, len(tms) + 1))

            order, bounds = split(got)
            labs = [np.asarray(got[c])[order] for c in ("lab", "has")]
            hashed = True
            for k in range(len(tms)):
                sl = slice(bounds[k + 1], bounds[k + 2])
                lab, has = labs[0][sl], labs[1][sl].astype(bool)
                if has.any() and len(np.unique(lab[has])) != n_labels.get(k, -1):
                    hashed = False   # hash collision or labels differing within an item
                    break
            if not hashed:           # fetch the labels themselves (text)
                sql, params = x_sql("{}")
                got = con.execute(sql, params).fetchnumpy()
                order, bounds = split(got)
            cols = {c: np.asarray(got[c], dtype=object if c in ("lone", "lab") and
                                  (c == "lone" or not hashed) else None)[order]
                    for c in ("run_id", "m", "lab", "has", "lone")}
            frames = []
            for k in range(len(tms)):
                sl = slice(bounds[k + 1], bounds[k + 2])
                if sl.stop <= sl.start:
                    continue
                has = cols["has"][sl].astype(bool)
                code = np.zeros(has.size, dtype=np.int64)
                g = 0
                if has.any():
                    lab = cols["lab"][sl][has]
                    if hashed:
                        uniq, inv = np.unique(lab, return_inverse=True)
                    else:
                        inv, uniq = pd.factorize(pd.Series(lab))
                    code[has] = inv
                    g = len(uniq)
                if (~has).any():
                    code[~has] = g + pd.factorize(pd.Series(cols["lone"][sl][~has]))[0]
                frames.append(pd.DataFrame({
                    "k": np.full(has.size, k, dtype=np.int32),
                    "run_id": cols["run_id"][sl].astype(np.int32),
                    "score": cols["m"][sl].astype(float), "code": code, "has_cluster": has}))
        return pd.concat(frames, ignore_index=True) if frames else empty
