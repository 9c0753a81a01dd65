"""Values of a tidy table's cells, checked: names and ids as text, scores and answer indices
as numbers. Every value that does not fit is refused as bad input with its place, never
converted silently and never an internal error.

Input is one ``tidy_read.RawChunk`` column: a pyarrow array (CSV text, Parquet values of any
type) or a list of Python values (JSONL). Each function returns the converted column and
the index (within the chunk) of the first value that does not fit, with what was found
there, or None.

Text (``text_column``): strings as written (CSV: leading spaces dropped, as a CSV writer's
``a, b`` means ``b``); numbers as Python writes them (``5``, ``5.0``), booleans as
``True``/``False``; an empty cell, null or a missing key is missing; a list or object, or a
number beyond every float, is refused.

Numbers (``number_column``): JSON/Parquet numbers; text that is a decimal number
(``1``, ``-0.5``, ``1e-3``, ``.5``; also ``nan``/``inf``, which the callers refuse as not
finite); booleans (``true``/``false`` in any case, JSON or Parquet booleans) read as 1/0 and
flagged, so the caller can warn. Anything else (other text, lists, objects, a missing
value) is refused with what was found, quoted in at most 40 characters (a long run of digits
is described by its length: "a number of 5,001 digits").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.ingest._common import HugeInteger

# a decimal number as text (what pandas, Python and Arrow all read the same way), or
# nan / inf / infinity with a sign (read, then refused by the finiteness checks)
_NUMBER = r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))([eE][+-]?[0-9]+)?$"
_SPECIAL = r"^[+-]?(nan|inf|infinity)$"
_BOOL = {"true": 1.0, "false": 0.0}


@dataclass(frozen=True)
class Bad:
    """The first value of a column that does not fit: its index in the chunk and what it
    is, described for a message."""

    index: int
    found: str


@dataclass(frozen=True)
class Numbers:
    values: np.ndarray            # float64; NaN where missing or bad
    is_bool: np.ndarray           # bool: read from a boolean
    missing: np.ndarray           # bool: no value (null, empty cell, absent key)
    bad: Bad | None               # the first value that is neither a number nor missing


def describe(value: Any) -> str:
    """A found value for a message: at most 40 characters, runs of digits by their length."""
    if value is None:
        return "no value"
    if isinstance(value, HugeInteger):
        return repr(value)
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        digits = value.strip().lstrip("+-")
        if len(digits) > 40 and digits.isdigit():
            return f"a number of {len(digits):,} digits"
        text = repr(value)
    elif isinstance(value, (list, tuple)):
        return f"a list of {len(value)} value(s)"
    elif isinstance(value, dict):
        return f"an object with {len(value)} key(s)"
    else:
        text = f"{type(value).__name__} {value!r}"
    return text if len(text) <= 40 else f"{text[:37]}... ({len(text):,} characters)"


# ---------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------
def text_column(raw: Any) -> tuple[pa.Array, Bad | None]:
    """A string array (null where missing) and the first value that cannot be a name (32-bit
    offsets: a chunk never nears 2 GB, and the offsets of 5 million rows take half the
    memory of 64-bit ones)."""
    text, bad = _text_column(raw)
    return (text if text.type == pa.string() else text.cast(pa.string())), bad


def _text_column(raw: Any) -> tuple[pa.Array, Bad | None]:
    if isinstance(raw, list):
        return _text_from_python(raw)
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    if pa.types.is_string(raw.type) or pa.types.is_large_string(raw.type):
        return pc.utf8_ltrim(raw, characters=" "), None
    if pa.types.is_dictionary(raw.type):
        return _text_column(raw.cast(raw.type.value_type))
    if pa.types.is_null(raw.type):
        return pa.nulls(len(raw), pa.string()), None
    if (pa.types.is_integer(raw.type) or pa.types.is_floating(raw.type)
            or pa.types.is_boolean(raw.type) or pa.types.is_decimal(raw.type)):
        return _text_from_python(raw.to_pylist())
    first = int(np.flatnonzero(~np.asarray(raw.is_null(), dtype=bool))[0]) if raw.null_count < len(raw) else 0
    return pa.nulls(len(raw), pa.string()), Bad(first, f"a value of type {raw.type}")


def _text_from_python(values: list[Any]) -> tuple[pa.Array, Bad | None]:
    out: list[str | None] = []
    bad: Bad | None = None
    for i, v in enumerate(values):
        if v is None or type(v) is str:
            out.append(v)
        elif isinstance(v, (bool, int)) or (isinstance(v, float) and
                                            not isinstance(v, HugeInteger)):
            out.append(str(v))
        else:
            out.append(None)
            if bad is None:
                bad = Bad(i, describe(v))
    return pa.array(out, pa.string()), bad


def is_blank(text: pa.Array) -> np.ndarray:
    """Missing or only whitespace."""
    blank = pc.or_kleene(pc.is_null(text), pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0))
    return np.asarray(pc.fill_null(blank, True), dtype=bool)


# ---------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------
def number_column(raw: Any) -> Numbers:
    if isinstance(raw, list):
        return _numbers_from_python(raw)
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    t = raw.type
    if pa.types.is_dictionary(t):
        return number_column(raw.cast(t.value_type))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _numbers_from_text(raw)
    missing = np.asarray(raw.is_null(), dtype=bool)
    if pa.types.is_boolean(t):
        values = np.asarray(pc.fill_null(pc.cast(raw, pa.float64()), math.nan), dtype=np.float64)
        return Numbers(values, ~missing, missing, None)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        values = pc.cast(raw, pa.float64(), safe=False)
        return Numbers(np.asarray(pc.fill_null(values, math.nan), dtype=np.float64),
                       np.zeros(len(raw), dtype=bool), missing, None)
    if pa.types.is_null(t):
        return Numbers(np.full(len(raw), math.nan), np.zeros(len(raw), dtype=bool), missing, None)
    first = int(np.flatnonzero(~missing)[0]) if (~missing).any() else 0
    return Numbers(np.full(len(raw), math.nan), np.zeros(len(raw), dtype=bool), missing,
                   Bad(first, f"a value of type {t}") if (~missing).any() else None)


def _numbers_from_text(text: pa.Array) -> Numbers:
    """Vectorised: booleans, decimal numbers, nan/inf; the first other text is bad."""
    trimmed = pc.utf8_trim_whitespace(text)
    missing = np.asarray(pc.fill_null(pc.or_kleene(pc.is_null(trimmed),
                                                   pc.equal(pc.utf8_length(trimmed), 0)), True),
                         dtype=bool)
    lower = pc.utf8_lower(trimmed)
    is_bool = np.asarray(pc.fill_null(pc.is_in(lower, pa.array(list(_BOOL))), False), dtype=bool)
    numeric = pc.or_(pc.match_substring_regex(trimmed, _NUMBER),
                     pc.match_substring_regex(lower, _SPECIAL))
    numeric = np.asarray(pc.fill_null(numeric, False), dtype=bool)
    values = np.full(len(text), math.nan)
    if numeric.any():
        parsed = pc.cast(pc.if_else(pa.array(numeric), trimmed, pa.scalar(None, pa.string())),
                         pa.float64())
        values = np.array(pc.fill_null(parsed, math.nan), dtype=np.float64)
    if is_bool.any():
        values[is_bool] = np.asarray(pc.equal(lower.filter(pa.array(is_bool)), "true"),
                                     dtype=np.float64)
    other = ~(numeric | is_bool | missing)
    bad = None
    if other.any():
        i = int(np.flatnonzero(other)[0])
        bad = Bad(i, describe(text[i].as_py()))
    return Numbers(values, is_bool, missing, bad)


def _numbers_from_python(values: list[Any]) -> Numbers:
    """JSON values: numbers (a ``HugeInteger`` is +-inf), booleans, numeric text."""
    n = len(values)
    out = np.full(n, math.nan)
    is_bool = np.zeros(n, dtype=bool)
    missing = np.zeros(n, dtype=bool)
    texts: list[int] = []
    bad: Bad | None = None
    for i, v in enumerate(values):
        kind = type(v)
        if kind is int or kind is float:
            try:
                out[i] = v
            except OverflowError:          # an int beyond every float
                out[i] = math.inf if v > 0 else -math.inf
        elif kind is bool:
            out[i] = float(v)
            is_bool[i] = True
        elif v is None:
            missing[i] = True
        elif kind is str:
            texts.append(i)
        elif isinstance(v, float):         # HugeInteger
            out[i] = float(v)
        elif bad is None:
            bad = Bad(i, describe(v))
    if texts:
        parsed = _numbers_from_text(pa.array([values[i] for i in texts], pa.string()))
        at = np.asarray(texts)
        out[at] = parsed.values
        is_bool[at] = parsed.is_bool
        missing[at] = parsed.missing
        if parsed.bad is not None:
            j = texts[parsed.bad.index]
            if bad is None or j < bad.index:
                bad = Bad(j, parsed.bad.found)
    return Numbers(out, is_bool, missing, bad)


def found_at(raw: Any, i: int) -> str:
    """What row ``i`` of a raw column holds, described for a message."""
    value = raw[i] if isinstance(raw, list) else raw[i].as_py()
    return describe(value)
