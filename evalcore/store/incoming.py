"""An incoming run's canonical frames (scores, summaries, texts; pandas or Arrow) checked
against the schema's specs and converted to typed Arrow tables; errors name the run, the
table and the column (``write._Writes._prepare`` calls these before any write)."""

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.errors import StoreError
from evalcore.store._util import _is_missing


def _check_columns(have: list, names: list[str], what: str) -> None:
    """StoreError naming the missing and unexpected columns unless ``have`` holds exactly
    the canonical ``names``."""
    missing = [c for c in names if c not in have]
    extra = [c for c in have if c not in names]
    if extra or missing:
        parts = ([f"missing {', '.join(map(str, missing))}"] if missing else []) + (
            [f"unexpected {', '.join(map(str, extra))}"] if extra else [])
        raise StoreError(f"{what}: columns do not match the canonical record "
                         f"({'; '.join(parts)}; expected {', '.join(names)})")


def _column_to_arrow(series: pd.Series, typ: pa.DataType, where: str) -> pa.Array:
    """One canonical column as an Arrow array of ``typ`` (ids given as numbers become text)."""
    try:
        if series.dtype.kind == "f" and (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
            if series.isna().all():   # an all-missing text column read as float NaN
                return pa.nulls(len(series), type=typ)
            raise TypeError("numbers in a text column")
        arr = pa.array(series, type=typ, from_pandas=True)
        if isinstance(arr, pa.ChunkedArray) and arr.num_chunks == 1:
            arr = arr.chunk(0)   # zero-copy (combine_chunks would copy even one chunk)
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
    _check_columns(list(df.columns), names, what)
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
    _check_columns(table.column_names, names, what)
    arrays = []
    for col, typ, required in spec:
        arr = table.column(col)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr   # no copy
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
