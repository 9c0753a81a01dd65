"""Streaming readers of tidy tables (CSV/TSV, JSONL, Parquet): the header, then the wanted
columns in chunks of raw values, so a table never sits in memory as Python objects.

``header(src, fmt)`` gives the column names as written. ``chunks(src, fmt, wanted)`` yields
``RawChunk``s: for each wanted column (by the name the file gives it) the raw values of at
most ``CHUNK_ROWS`` rows, as they come from the file: a pyarrow string array (CSV, empty
cells null), a list of Python values (JSONL; a key absent from a row is None) or a pyarrow
array of the column's own type (Parquet). Converting and checking them is
``evalcore.ingest.tidy_values``'s work.

Refused here with file and place: a CSV row with more or fewer fields than the header (the
line named), text that is not UTF-8 (the line named), a JSONL line that is not one JSON
object, an unreadable Parquet file.

Places: CSV and JSONL rows are named by their line in the file (``line_of``: for CSV the
file is scanned again, only when an error needs the line, so quoted line breaks and blank
lines are counted right); Parquet rows by their 0-based index (``row N``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from evalcore.errors import IngestError
from evalcore.ingest._common import Source, loads_line

CSV = "tidy_csv"
JSONL = "tidy_jsonl"
PARQUET = "tidy_parquet"
CHUNK_ROWS = 65_536
_CSV_BLOCK = 4 << 20


@dataclass
class RawChunk:
    """Raw values of the wanted columns for rows ``start .. start + n - 1`` of the file.

    ``lines``: the line of each row (JSONL, where blank lines are skipped); None when
    ``line_of`` finds it. ``present``: the wanted columns that occur in this chunk (for
    JSONL, where a row may lack a key)."""

    start: int
    n: int
    values: dict[str, Any]
    lines: np.ndarray | None = None
    present: set[str] = field(default_factory=set)


def delimiter(src: Source) -> str:
    return "\t" if src.basename.lower().endswith(".tsv") else ","


def header(src: Source, fmt: str) -> list[str]:
    """The table's column names as written (stripped): the CSV header row, the keys of the
    first JSONL object (nested objects' keys as dotted paths, ``flat_keys``), the Parquet
    schema's top-level fields."""
    if fmt == PARQUET:
        import pyarrow.parquet as pq

        try:
            with src.open() as fh:
                return [str(n).strip() for n in pq.ParquetFile(fh).schema_arrow.names]
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise IngestError(src.name, "Parquet footer", "a readable Parquet file",
                              str(exc)) from None
    if fmt == JSONL:
        for _lineno, rec in _json_lines(src):
            return flat_keys(rec)
        raise IngestError(src.name, "line 1", "at least one row")
    try:
        with io.TextIOWrapper(src.open(), encoding="utf-8-sig", newline="") as text:
            row = next(csv.reader(text, delimiter=delimiter(src)), None)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise IngestError(src.name, "line 1", "a header row of UTF-8 text", str(exc)) from None
    if not row:
        raise IngestError(src.name, "line 1", "a header row naming the columns")
    return [c.strip() for c in row]


def chunks(src: Source, fmt: str, wanted: list[str], names: list[str]) -> Iterator[RawChunk]:
    """The wanted columns (file names, a subset of ``names`` from ``header``) in chunks."""
    if fmt == PARQUET:
        return _parquet_chunks(src, wanted)
    if fmt == JSONL:
        return _jsonl_chunks(src, wanted)
    return _csv_chunks(src, wanted, names)


# ---------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------
def _csv_chunks(src: Source, wanted: list[str], names: list[str]) -> Iterator[RawChunk]:
    """pyarrow's streaming CSV reader, every wanted column as text (so a value is never
    guessed into a type; ``tidy_values`` converts), positional names (a header may repeat
    a name it does not use), quoted line breaks allowed; the first row with a wrong
    number of fields is refused naming its line."""
    from pyarrow import csv as pa_csv

    positional = [f"c{i}" for i in range(len(names))]
    by_name = {n: positional[names.index(n)] for n in wanted}
    bad: list[Any] = []

    def invalid_row(row: Any) -> str:
        bad.append(row)
        return "error"

    read = pa_csv.ReadOptions(column_names=positional, skip_rows=1, use_threads=False,
                              block_size=_CSV_BLOCK)
    parse = pa_csv.ParseOptions(delimiter=delimiter(src), newlines_in_values=True,
                                invalid_row_handler=invalid_row)
    convert = pa_csv.ConvertOptions(column_types={p: pa.string() for p in by_name.values()},
                                    include_columns=list(by_name.values()),
                                    strings_can_be_null=True, null_values=[""])
    start = 0
    with src.open() as fh:
        try:
            reader = pa_csv.open_csv(fh, read_options=read, parse_options=parse,
                                     convert_options=convert)
            for batch in reader:
                values = {n: batch.column(p) for n, p in by_name.items()}
                yield RawChunk(start=start, n=batch.num_rows, values=values,
                               present=set(wanted))
                start += batch.num_rows
        except pa.ArrowInvalid as exc:
            raise _csv_error(src, len(names), bad, str(exc)) from None


def _csv_error(src: Source, n_fields: int, bad: list[Any], message: str) -> IngestError:
    if bad:
        row = bad[0]
        # pyarrow numbers rows from 1 with the header row counted and blank lines not: the
        # data row's index is number - 2, its line is found by scanning the file again
        line = csv_line_of_row(src, row.number - 2) if row.number is not None else None
        return IngestError(src.name, f"line {line}" if line else "a data row",
                           f"{n_fields} fields, as the header names (no shifted columns)",
                           f"the row has {row.actual_columns}")
    if "UTF8" in message or "UTF-8" in message or "utf8" in message:
        line = _first_bad_utf8_line(src)
        return IngestError(src.name, f"line {line}" if line else "CSV", "UTF-8 text",
                           "the bytes there are not UTF-8 (the file is in another encoding?)")
    return IngestError(src.name, "CSV", "a comma-separated table with a header row",
                       message.splitlines()[0][:200])


def _first_bad_utf8_line(src: Source) -> int | None:
    with src.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return lineno
    return None


def csv_line_of_row(src: Source, row: int) -> int:
    """The line on which data row ``row`` (0-based, blank lines not counted, as pyarrow
    counts rows) starts: the file scanned again with ``csv`` (only for an error message)."""
    csv.field_size_limit(1 << 30)
    try:
        with io.TextIOWrapper(src.open(), encoding="utf-8-sig", newline="") as text:
            reader = csv.reader(text, delimiter=delimiter(src))
            next(reader, None)
            seen = -1
            last_line = reader.line_num
            for fields in reader:
                first_line = last_line + 1
                last_line = reader.line_num
                if not fields:
                    continue
                seen += 1
                if seen == row:
                    return first_line
    except (UnicodeDecodeError, csv.Error):
        pass
    return row + 2


# ---------------------------------------------------------------------------------------
# JSONL
# ---------------------------------------------------------------------------------------
def _json_lines(src: Source) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line; anything but one JSON object per line
    is refused naming the line."""
    with src.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = loads_line(line)
            except ValueError as exc:
                raise IngestError(src.name, f"line {lineno}", "one JSON object per line",
                                  str(exc)[:200]) from None
            if not isinstance(rec, dict):
                raise IngestError(src.name, f"line {lineno}", "a JSON object (one table row)")
            yield lineno, rec


def flat_keys(rec: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    """The keys of a JSON object; a nested object's keys as dotted paths (``evaluation.score``,
    as instance-level schemas nest a sample's score), up to 4 levels deep."""
    out: list[str] = []
    for k, v in rec.items():
        name = f"{prefix}{str(k).strip()}"
        if isinstance(v, dict) and v and depth < 4:
            out += flat_keys(v, name + ".", depth + 1)
        else:
            out.append(name)
    return out


_ABSENT = object()


def _value(rec: dict[str, Any], key: str) -> Any:
    """``rec[key]``, else the value at the dotted path ``key``; ``_ABSENT`` if neither."""
    v = rec.get(key, _ABSENT)
    if v is not _ABSENT or "." not in key:
        return v
    for part in key.split("."):
        if not isinstance(rec, dict) or part not in rec:
            return _ABSENT
        rec = rec[part]
    return rec


def _jsonl_chunks(src: Source, wanted: list[str]) -> Iterator[RawChunk]:
    """Lists of the wanted keys' values (a key as spelled in the file, or a dotted path into
    nested objects), ``CHUNK_ROWS`` rows at a time; a key a row lacks is None."""
    cols: dict[str, list[Any]] = {w: [] for w in wanted}
    lines: list[int] = []
    present: set[str] = set()
    start = 0
    for lineno, rec in _json_lines(src):
        lines.append(lineno)
        for w, values in cols.items():
            v = _value(rec, w)
            if v is _ABSENT:
                values.append(None)
            else:
                values.append(v)
                present.add(w)
        if len(lines) == CHUNK_ROWS:
            yield RawChunk(start, len(lines), cols, np.asarray(lines, dtype=np.int64), present)
            start += len(lines)
            cols, lines, present = {w: [] for w in wanted}, [], set()
    if lines:
        yield RawChunk(start, len(lines), cols, np.asarray(lines, dtype=np.int64), present)


# ---------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------
def _parquet_chunks(src: Source, wanted: list[str]) -> Iterator[RawChunk]:
    import pyarrow.parquet as pq

    start = 0
    with src.open() as fh:
        try:
            pf = pq.ParquetFile(fh)
            names = [str(n).strip() for n in pf.schema_arrow.names]
            real = {w: pf.schema_arrow.names[names.index(w)] for w in wanted}
            for batch in pf.iter_batches(batch_size=CHUNK_ROWS, columns=list(real.values())):
                values = {w: batch.column(batch.schema.get_field_index(r))
                          for w, r in real.items()}
                yield RawChunk(start=start, n=batch.num_rows, values=values,
                               present=set(wanted))
                start += batch.num_rows
        except IngestError:
            raise
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise IngestError(src.name, f"row {start}" if start else "Parquet data",
                              "a readable Parquet file", str(exc)[:200]) from None
