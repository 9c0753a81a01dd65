"""Tidy score tables (CSV, JSONL, Parquet): the escape hatch for any other harness.

Column spec (one row per task x metric x item x answer; names are case-insensitive)
--------------------------------------------------------------------------------------
=========  ========  ====================================================================
column     required  meaning
=========  ========  ====================================================================
model      yes (*)   the run: one ParsedRun per distinct value (*) or a ``run`` column
run        yes (*)   alternative to ``model`` (if both exist, ``run`` names the run and
                     ``model`` is kept as its model)
task       yes       task / benchmark name
item_id    yes       stable id of the item within the task (pairs runs item by item)
score      yes       finite number (0/1 for correct/incorrect, partial credit, any metric)
metric     no        metric name (default ``"score"``)
answer     no        answer index 0..K-1 for several answers per item (default 0; at most
                     ``MAX_ANSWER_IDX``)
cluster    no        cluster of the item (passage, subject, ...) for clustered SEs
=========  ========  ====================================================================

Other column names: a column map (``parse_columns("model=llm,task=qset,item_id=question_id,
score=correct")``, the CLI's ``ingest --columns``, the upload page's column choice) says
which column of the file is which; names it does not map keep their default. Any other
column is ignored (with a warning). Example CSV::

    model,task,item_id,score,cluster
    gpt-x,arc_easy,q1,1,physics
    gpt-x,arc_easy,q2,0,biology
    gpt-y,arc_easy,q1,1,physics

Errors name the file, the place (CSV/JSONL: the line; Parquet: the 0-based row) and the
column, and say what was expected: a missing required column (``TidyColumnsError``, which
lists the file's columns so a column map can be offered), a CSV row with more or fewer fields
than the header, a score that is not a finite number within +-``MAX_ABS_SCORE`` (huge
integers and overlong digit strings included), an answer that is not a whole number
0..``MAX_ANSWER_IDX``, an empty run, task or item id, or the same (run, task, metric,
item_id, answer) twice. Boolean scores (JSON/Parquet ``true``/``false``, CSV ``true``/
``false`` in any case) are read as 1/0 in every format, with a warning. Tidy runs have no
summaries or texts; ``source_key`` is None.

Memory: the file is read in chunks (``tidy_read``) and kept as Arrow text and numpy
numbers, never as a Python object per cell (a 150 MB table: a few hundred MB at most).

Idempotency: a table holds several runs, so each run's ``SourceFile.run_key`` is
``evalcore.model.rows_key``, a digest of that run's own rows (name, model, and the sorted
(task, metric, item_id, answer, score, cluster) rows), not the file's hash. Ingesting the
same table again changes nothing; a later table that repeats some runs unchanged and adds a
model adds just that model (whatever the file name or format, CSV or Parquet, the row order
or the column names).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import IngestError
from evalcore.ingest import tidy_read, tidy_values
from evalcore.ingest._common import (
    MAX_ABS_SCORE,
    MAX_ANSWER_IDX,
    Source,
    empty_frame,
    scores_frame,
    summaries_frame,
    tasks_frame,
)
from evalcore.ingest.tidy_read import CSV, JSONL, PARQUET
from evalcore.model import TEXT_COLUMNS, ParsedRun, rows_key
from evalcore.threads import release_free_heap

REQUIRED = ("task", "item_id", "score")
OPTIONAL = ("metric", "answer", "cluster")
CANONICAL = ("model", "run", *REQUIRED, *OPTIONAL)
_TEXT = ("run", "model", "task", "item_id", "metric", "cluster")

__all__ = ["CSV", "JSONL", "PARQUET", "REQUIRED", "OPTIONAL", "CANONICAL", "TidyColumnsError",
           "parse_columns", "format_columns", "parse_table", "table_columns",
           "suggest_columns"]


class TidyColumnsError(IngestError):
    """A tidy table without the columns it needs; ``found``: the file's columns (the upload
    page offers them for a column map)."""

    def __init__(self, file: str, expected: str, detail: str, found: list[str]):
        super().__init__(file, "header", expected, detail)
        self.found = found


# ---------------------------------------------------------------------------------------
# column maps
# ---------------------------------------------------------------------------------------
def parse_columns(text: str | None) -> dict[str, str]:
    """``"model=llm,task=qset"`` -> ``{"model": "llm", "task": "qset"}``: which column of
    the file is which column of the spec. Raises ``ValueError`` naming the bad part (an
    unknown spec name, an empty side, a name given twice)."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, column = part.partition("=")
        name, column = name.strip().lower(), column.strip()
        if not sep or not name or not column:
            raise ValueError(f"{part.strip()!r}: expected NAME=COLUMN, e.g. score=correct")
        if name not in CANONICAL:
            raise ValueError(f"{name!r} is not a column of the spec; expected one of "
                             f"{', '.join(CANONICAL)}")
        if name in out:
            raise ValueError(f"{name!r} is mapped twice")
        out[name] = column
    return out


def format_columns(columns: dict[str, str]) -> str:
    """The text form of a column map (``parse_columns``'s inverse)."""
    return ",".join(f"{k}={v}" for k, v in columns.items())


@dataclass(frozen=True)
class Layout:
    """Which column of the file (as written) is which column of the spec."""

    source: dict[str, str]
    run_col: str
    ignored: list[str]

    def label(self, name: str) -> str:
        col = self.source[name]
        return col if col.lower() == name else f"{col} (the {name})"


def resolve_layout(src: Source, fmt: str, names: list[str],
                   columns: dict[str, str] | None = None) -> Layout:
    """The layout of a file with columns ``names`` under the column map ``columns``."""
    columns = columns or {}
    lower: dict[str, list[str]] = {}
    for n in names:
        lower.setdefault(n.lower(), []).append(n)
    source: dict[str, str] = {}
    missing_mapped = []
    for name in CANONICAL:
        want = columns.get(name, name)
        hits = lower.get(want.lower(), [])
        if len(hits) > 1:
            raise IngestError(src.name, "header", "each column name once",
                              f"{want!r} appears {len(hits)} times")
        if hits:
            source[name] = hits[0]
        elif name in columns:
            missing_mapped.append(f"{columns[name]} (for {name})")
        elif fmt == JSONL and name in OPTIONAL:
            source[name] = want      # a key the first row lacks may come in later rows
    run_col = "run" if "run" in source else "model" if "model" in source else None
    missing = list(missing_mapped) + [c for c in REQUIRED if c not in source
                                      and c not in columns]
    if run_col is None and "model" not in columns and "run" not in columns:
        missing.insert(0, "model (or run)")
    if missing:
        mapped = f" (column map: {format_columns(columns)})" if columns else ""
        raise TidyColumnsError(
            src.name, "columns model (or run), task, item_id, score [, metric, answer, "
            "cluster], or a column map naming the file's columns for them" + mapped,
            f"missing {', '.join(missing)}; found {_some(names)}", names)
    used = {v.lower() for v in source.values()}
    ignored = [n for n in names if n.lower() not in used]
    return Layout(source, run_col, ignored)


# column names other tables use for the spec's columns (lower case), most likely first
_LIKELY = {
    "model": ("model", "model_id", "model_name", "llm", "system"),
    "run": ("run", "run_id", "run_name"),
    "task": ("task", "task_name", "benchmark", "evaluation_name", "dataset", "qset", "subject"),
    "item_id": ("item_id", "question_id", "sample_id", "doc_id", "qid", "id", "instance_id"),
    "score": ("score", "correct", "is_correct", "evaluation.score", "acc", "accuracy",
              "exact_match", "pass"),
    "metric": ("metric", "metric_name"),
    "answer": ("answer", "epoch", "sample", "attempt"),
    "cluster": ("cluster", "group", "passage_id", "category"),
}


def suggest_columns(found: list[str]) -> dict[str, str]:
    """A first guess of a column map for a table with columns ``found``: for each column of
    the spec, the first of the names other tables commonly use for it that the file has
    (``question_id`` for item_id, ``correct`` for score, ...); each file column at most
    once. A guess to offer, never applied without the user."""
    have = {c.lower(): c for c in found}
    out: dict[str, str] = {}
    for name, likely in _LIKELY.items():
        hit = next((have[c] for c in likely if c in have and have[c] not in out.values()),
                   None)
        if hit is not None:
            out[name] = hit
    return out


def _some(names: list[str], k: int = 40) -> str:
    more = f" and {len(names) - k} more" if len(names) > k else ""
    return (", ".join(names[:k]) or "none") + more


def table_columns(src: Source, fmt: str) -> list[str]:
    """The column names of a tidy table as written (for offering a column map)."""
    return tidy_read.header(src, fmt)


# ---------------------------------------------------------------------------------------
# reading and checking
# ---------------------------------------------------------------------------------------
@dataclass
class _Table:
    """The checked columns of the whole table: Arrow text, numpy numbers."""

    text: dict[str, pa.ChunkedArray]
    score: np.ndarray              # float64
    answer: np.ndarray             # int64
    bool_rows: int                 # scores read from booleans
    bool_place: str | None         # where the first of them is


class _Places:
    """Names rows for messages: the line (CSV, JSONL) or the 0-based row index (Parquet)."""

    def __init__(self, src: Source, fmt: str):
        self.src, self.fmt = src, fmt

    def row(self, chunk: tidy_read.RawChunk, i: int) -> str:
        if self.fmt == PARQUET:
            return f"row {chunk.start + i}"
        if chunk.lines is not None:
            return f"line {int(chunk.lines[i])}"
        return f"line {tidy_read.csv_line_of_row(self.src, chunk.start + i)}"

    def nth(self, row: int) -> str:
        """The place of the ``row``-th data row (0-based) of the whole file."""
        if self.fmt == PARQUET:
            return f"row {row}"
        if self.fmt == CSV:
            return f"line {tidy_read.csv_line_of_row(self.src, row)}"
        seen = -1
        with self.src.open() as fh:
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    seen += 1
                    if seen == row:
                        return f"line {lineno}"
        return f"row {row}"


class _Checker:
    """Converts and checks one chunk after another; the first value that does not fit is
    refused with its place and column."""

    def __init__(self, src: Source, fmt: str, layout: Layout):
        self.src, self.layout, self.places = src, layout, _Places(src, fmt)
        self.required = (layout.run_col, "task", "item_id")
        # JSONL: a row without the answer key is refused only if another row has one
        self.answer_seen = fmt != JSONL
        self.first_missing_answer: str | None = None

    def refuse(self, chunk: tidy_read.RawChunk, i: int, name: str, expected: str,
               found: str | None = None) -> IngestError:
        return IngestError(self.src.name, f"{self.places.row(chunk, i)}, column "
                           f"{self.layout.label(name)}", expected,
                           None if found is None else f"found {found}")

    def text(self, chunk: tidy_read.RawChunk, name: str) -> pa.Array:
        text, bad = tidy_values.text_column(chunk.values[self.layout.source[name]])
        if bad is not None:
            raise self.refuse(chunk, bad.index, name, f"a {name} as text or a number",
                              bad.found)
        if name in self.required:
            blank = tidy_values.is_blank(text)
            if blank.any():
                raise self.refuse(chunk, int(np.flatnonzero(blank)[0]), name,
                                  f"a non-empty {name}")
        return text

    def scores(self, chunk: tidy_read.RawChunk) -> tidy_values.Numbers:
        raw = chunk.values[self.layout.source["score"]]
        nums = tidy_values.number_column(raw)
        bad = ~(np.abs(nums.values) <= MAX_ABS_SCORE)       # NaN: missing or not a number
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            found = (nums.bad.found if nums.bad is not None and nums.bad.index == i
                     else tidy_values.found_at(raw, i))
            raise self.refuse(chunk, i, "score", f"a finite number within +-{MAX_ABS_SCORE:g}",
                              found)
        return nums

    def answers(self, chunk: tidy_read.RawChunk) -> np.ndarray:
        raw = chunk.values[self.layout.source["answer"]]
        self.answer_seen = self.answer_seen or self.layout.source["answer"] in chunk.present
        nums = tidy_values.number_column(raw)
        v = nums.values
        bad = ~nums.missing & (~np.isfinite(v) | (v < 0) | (v > MAX_ANSWER_IDX)
                               | (v != np.floor(v)) | nums.is_bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise self.refuse(chunk, i, "answer", _ANSWER_EXPECTED, tidy_values.found_at(raw, i))
        if nums.missing.any() and self.first_missing_answer is None:
            i = int(np.flatnonzero(nums.missing)[0])
            self.first_missing_answer = (f"{self.places.row(chunk, i)}, column "
                                         f"{self.layout.label('answer')}")
        if self.answer_seen and self.first_missing_answer is not None:
            raise IngestError(self.src.name, self.first_missing_answer, _ANSWER_EXPECTED,
                              "found no value")
        return np.where(nums.missing, 0, v).astype(np.int64)


_ANSWER_EXPECTED = f"an answer index 0, 1, 2, ... (at most {MAX_ANSWER_IDX:,})"


def _read_table(src: Source, fmt: str, layout: Layout) -> _Table:
    """Every chunk read, checked and kept in compact form."""
    check = _Checker(src, fmt, layout)
    wanted = list(dict.fromkeys(layout.source.values()))
    names = tidy_read.header(src, fmt)
    text: dict[str, list[pa.Array]] = {}
    scores: list[np.ndarray] = []
    answers: list[np.ndarray] = []
    bool_rows, bool_place = 0, None
    seen: set[str] = set()
    with contextlib.closing(tidy_read.chunks(src, fmt, wanted, names)) as stream:
        for chunk in stream:
            seen |= chunk.present
            for name in _TEXT:
                if name in layout.source:
                    text.setdefault(name, []).append(check.text(chunk, name))
            nums = check.scores(chunk)
            scores.append(nums.values)
            if nums.is_bool.any():
                if bool_place is None:
                    bool_place = check.places.row(chunk, int(np.flatnonzero(nums.is_bool)[0]))
                bool_rows += int(nums.is_bool.sum())
            if "answer" in layout.source:
                answers.append(check.answers(chunk))
    if not scores:
        raise IngestError(src.name, "header", "at least one data row")
    for name in OPTIONAL:   # a JSONL key no row has: the column's default, not a null column
        if name in text and layout.source[name] not in seen:
            del text[name]
    n = sum(len(s) for s in scores)
    return _Table(text={k: pa.chunked_array(v, pa.string()) for k, v in text.items()},
                  score=np.concatenate(scores),
                  answer=np.concatenate(answers) if answers else np.zeros(n, dtype=np.int64),
                  bool_rows=bool_rows, bool_place=bool_place)


# ---------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------
def _codes(arr: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Integer codes (int32) of a text column in order of first appearance (-1 = missing)
    and the distinct values (an Arrow array: a table of unique ids has millions). Arrow's dictionary encoding of the chunks as they are (a
    hash per row, one int32 code; a pandas factorize of the column would first copy its
    text)."""
    enc = arr.dictionary_encode()
    last = enc.chunk(enc.num_chunks - 1)
    if any(len(c.dictionary) != len(last.dictionary) for c in enc.chunks):
        # (the chunks share one growing dictionary; unify keeps its order if they did not)
        enc = pa.table({"x": enc}).unify_dictionaries().column("x")
        last = enc.chunk(enc.num_chunks - 1)
    codes = np.concatenate([np.asarray(c.indices.fill_null(-1), dtype=np.int32)
                            for c in enc.chunks])
    return codes, last.dictionary


def _first_repeat(keys: list[np.ndarray]) -> int | None:
    """The first row (in file order) whose key tuple appeared in an earlier row, or None.

    One sort of a packed uint64 per row when the keys' ranges and the row number fit in 64
    bits: the keys (each minus its minimum, in the bits its range needs), then the row
    number; equal keys are then adjacent, the earlier row first (two arrays of 8 bytes a
    row; a lexsort of the keys takes about twice that). Else ``np.lexsort``."""
    n = len(keys[0])
    spans = [(int(k.min()), (int(k.max()) - int(k.min())).bit_length()) for k in keys]
    row_bits = max((n - 1).bit_length(), 1)
    if sum(b for _lo, b in spans) + row_bits <= 64:
        packed = np.zeros(n, dtype=np.uint64)
        part = np.empty(n, dtype=np.uint64)
        for k, (lo, bits) in zip(keys, spans):
            if bits:
                np.subtract(k, lo, out=part, casting="unsafe")
                packed <<= np.uint64(bits)
                packed |= part
        packed <<= np.uint64(row_bits)
        for lo in range(0, n, 1 << 20):   # the row numbers, without an array of them
            packed[lo:lo + (1 << 20)] |= np.arange(lo, min(n, lo + (1 << 20)), dtype=np.uint64)
        packed.sort()
        # the same key as the row before: their xor has no bit above the row number
        np.bitwise_xor(packed[1:], packed[:-1], out=part[:-1])
        same = part[:-1] < np.uint64(1 << row_bits)
        del part
        if not same.any():
            return None
        return int((packed[1:][same] & np.uint64((1 << row_bits) - 1)).min())
    order = np.lexsort(keys[::-1])
    same = np.ones(len(order) - 1, dtype=bool)
    for k in keys:
        s = k[order]
        same &= s[1:] == s[:-1]
    if not same.any():
        return None
    # lexsort is stable: among equal keys the earlier row comes first, the later repeats
    return int(order[1:][same].min())


def _metric_column(table: _Table) -> pa.ChunkedArray | None:
    """The metric of each row (a missing metric is ``"score"``, the default)."""
    if "metric" not in table.text:
        return None
    return pc.fill_null(table.text["metric"], "score")


def parse_table(src: Source, fmt: str, columns: dict[str, str] | None = None
                ) -> list[ParsedRun]:
    """One ParsedRun per distinct ``model``/``run`` value of a tidy table; ``columns``: a
    column map (``parse_columns``)."""
    layout = resolve_layout(src, fmt, tidy_read.header(src, fmt), columns)
    table = _read_table(src, fmt, layout)
    metric = _metric_column(table)
    run_codes, run_names = _codes(table.text[layout.run_col])
    run_names = np.asarray(run_names.to_pylist(), dtype=object)
    keys = [run_codes, _codes(table.text["task"])[0], _codes(table.text["item_id"])[0],
            table.answer]
    if metric is not None:
        keys.insert(2, _codes(metric)[0])
    repeat = _first_repeat(keys)
    del keys
    if repeat is not None:
        item = table.text["item_id"][repeat].as_py()
        task = table.text["task"][repeat].as_py()
        raise IngestError(src.name, _Places(src, fmt).nth(repeat),
                          "each (run, task, metric, item_id, answer) once",
                          f"item id {item!r} of task {task!r} repeats")
    release_free_heap()   # the duplicate check's arrays, before the runs are built
    runs = _runs(src, fmt, layout, table, metric, run_codes, run_names)
    release_free_heap()   # what reading and splitting the table let go
    return runs


def _warnings(src: Source, layout: Layout, table: _Table) -> list[str]:
    out = []
    if layout.ignored:
        names = sorted(c.lower() for c in layout.ignored)
        more = f" and {len(names) - 12} more" if len(names) > 12 else ""
        out.append(f"{src.name}: ignored columns: {', '.join(names[:12])}{more}")
    if table.bool_rows:
        k = table.bool_rows
        out.append(f"{src.name}: column {layout.label('score')}: {k} boolean value"
                   f"{'s' if k != 1 else ''} (true/false; first at {table.bool_place}) "
                   "read as 1/0")
    return out


def _by_run(table: _Table, run_codes: np.ndarray, n_runs: int) -> tuple[_Table, np.ndarray]:
    """The table with its rows grouped by run (runs in order of first appearance, rows in file
    order within a run) and the run boundaries; reordered column by column, each original
    released as soon as its copy exists, so a run is a slice of one table, not a copy. Text
    becomes large_string here, the type pandas' ``str`` columns hold (so the runs' frames
    wrap these arrays without copying them)."""
    if bool(np.all(run_codes[1:] >= run_codes[:-1])):
        # each run's rows are together already (a table written run by run): no reorder
        for name in list(table.text):
            table.text[name] = table.text[name].cast(pa.large_string())
        return table, np.searchsorted(run_codes, np.arange(n_runs + 1))
    order = np.argsort(run_codes, kind="stable")
    bounds = np.searchsorted(run_codes[order], np.arange(n_runs + 1))
    take = pa.array(order)
    for name in list(table.text):
        table.text[name] = table.text[name].take(take).cast(pa.large_string())
    table.score = table.score[order]
    table.answer = table.answer[order]
    return table, bounds


def _runs(src: Source, fmt: str, layout: Layout, table: _Table, metric: pa.ChunkedArray | None,
          run_codes: np.ndarray, run_names: np.ndarray) -> list[ParsedRun]:
    """The table split by run (runs in order of first appearance, rows in file order)."""
    warnings = _warnings(src, layout, table)
    if metric is not None:
        table.text["metric"] = metric
    # the run column's codes name the runs: its text is not needed any more
    del table.text[layout.run_col]
    table, bounds = _by_run(table, run_codes, len(run_names))
    runs = []
    for k, name in enumerate(run_names):
        lo, n = int(bounds[k]), int(bounds[k + 1] - bounds[k])

        def part(column: str) -> pa.ChunkedArray:
            return table.text[column].slice(lo, n)

        scores = scores_frame(
            part("task"), "score" if metric is None else part("metric"), part("item_id"),
            table.answer[lo:lo + n], table.score[lo:lo + n],
            cluster=part("cluster") if "cluster" in table.text else None)
        run = str(name)
        model = run if layout.run_col == "model" else _one_model(
            part("model") if "model" in table.text else None)
        file = src.source_file(fmt)
        file.run_key = rows_key(run, model, scores)
        runs.append(ParsedRun(
            name=run, model=model, source_format="tidy", harness=None, harness_version=None,
            protocol={"tidy_file": src.basename}, files=[file], scores=scores,
            summaries=summaries_frame([]), texts=empty_frame(TEXT_COLUMNS),
            tasks=tasks_frame([{"task": t, "n_choices": None, "protocol": {}}
                               for t in pd.unique(scores["task"])]),
            source_key=None, warnings=list(warnings)))
    return runs


def _one_model(models: pa.ChunkedArray | None) -> str | None:
    """The one ``model`` value of a run's rows (runs named by a ``run`` column), else None."""
    if models is None:
        return None
    distinct = pc.unique(models).drop_null()
    return str(distinct[0].as_py()) if len(distinct) == 1 else None
