"""Shared pieces of the ingest parsers: input sources, size limits, JSON with error places,
score conversion and checks, and the canonical frame builders.

Nothing here knows a harness format; the format modules (``lm_eval``, ``inspect_log``,
``helm``, ``tidy``) build on it.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.errors import IngestError
from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    TEXT_COLUMNS,
    SourceFile,
)

MAX_FILE_ENV = "EVALBARS_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 2048
# JSON nested deeper than this is refused before the parser sees it (deep nesting makes
# ``json`` raise RecursionError; no harness nests this deep).
MAX_JSON_DEPTH = 512
# Item scores and summary values beyond +-MAX_ABS_SCORE are refused: sums of squares of up to
# 1e9 such values stay finite in float64, so means and variances of finite inputs are finite.
MAX_ABS_SCORE = 1e100
# Answer indices (epochs, samples per item) are stored as 32-bit integers.
MAX_ANSWER_IDX = 2 ** 31 - 1
HEAD_BYTES = 65536

Progress = Callable[[int, int, str], None]

# Canonical string dtype: pandas 3 "str" is Arrow-backed (compact, no Python objects per row).
STR = "str"

# Field names that look like grouping keys (shared by the inspect metadata and lm_eval doc
# cluster pickers): ``*_id``, subject, category, group, topic, passage, problem, ...
CLUSTER_NAME = re.compile(r"(^|_)(id|subject|category|group|topic|passage|problem|domain|"
                          r"cluster|subset|family)s?($|_)", re.I)
# Cluster values longer than this (a passage body used as the key) are replaced by
# ``cluster_label``'s short hash.
CLUSTER_TEXT_LIMIT = 64


def choose_cluster_key(candidates: list[str], preferred: tuple[str, ...] | list[str]
                       ) -> tuple[str | None, list[str]]:
    """The cluster key to use among ``candidates``: the first of ``preferred`` present, else the
    first whose name looks like a grouping key (CLUSTER_NAME), else None; and the candidates."""
    for k in preferred:
        if k in candidates:
            return k, candidates
    for k in candidates:
        if CLUSTER_NAME.search(k):
            return k, candidates
    return None, candidates


# A cluster key found automatically is applied only when it gives at least this many
# clusters, with more than one item per cluster on average; otherwise it is offered (recorded
# as ``cluster_key_offered``), not applied. With few clusters the cluster-robust SE is itself
# noisy and biased down (Cameron & Miller 2015, J. Human Resources 50:317).
MIN_AUTO_CLUSTERS = 20


def auto_cluster_rule(key: str, n_items: int, n_clusters: int) -> tuple[bool, str]:
    """(apply, note): whether an automatically found cluster key is applied, and why not.

    Applied when G >= MIN_AUTO_CLUSTERS (20) and n / G > 1 (more than one item per cluster on
    average); otherwise the note says it is offered, not applied, and how to apply it
    explicitly (``--cluster-key`` / the upload page's cluster key).
    """
    if n_clusters >= MIN_AUTO_CLUSTERS and n_items > n_clusters:
        return True, ""
    why = (f"only {n_clusters} clusters (at least {MIN_AUTO_CLUSTERS} are needed before a "
           f"cluster-robust SE is trusted automatically)" if n_clusters < MIN_AUTO_CLUSTERS
           else f"{n_items} items in {n_clusters} clusters (one item per cluster on average: "
                f"nothing to cluster)")
    return False, (f"cluster key {key!r} offered, not applied: {why}; give it explicitly as "
                   f"the cluster key to use it")


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        v = float(raw) if raw else default
    except ValueError:
        return default
    return v if math.isfinite(v) and v > 0 else default


MAX_UNZIP_ENV = "EVALBARS_MAX_UNZIPPED_MB"
DEFAULT_MAX_UNZIP_MB = 4096
MAX_RATIO_ENV = "EVALBARS_MAX_ZIP_RATIO"
DEFAULT_MAX_RATIO = 200
RATIO_MIN_BYTES = 1 << 20
MAX_MEMBERS_ENV = "EVALBARS_MAX_ZIP_MEMBERS"
DEFAULT_MAX_MEMBERS = 10_000


def max_zip_members() -> int:
    """Most members of one zip of result files: ``$EVALBARS_MAX_ZIP_MEMBERS`` (default
    10,000), counted from the central directory before any member is listed (an inspect
    ``.eval`` log may hold ``_zip.EVAL_MEMBER_FACTOR`` times as many)."""
    return int(_env_number(MAX_MEMBERS_ENV, DEFAULT_MAX_MEMBERS))


def max_unzipped_bytes() -> int:
    """Cap on the uncompressed bytes of all zip members read by one ingest:
    ``$EVALBARS_MAX_UNZIPPED_MB`` (default 4096 MB), checked on the sizes the archives
    declare before anything is decompressed (a member never yields more than it declares)."""
    return int(_env_number(MAX_UNZIP_ENV, DEFAULT_MAX_UNZIP_MB) * 1024 * 1024)


def max_zip_ratio() -> float:
    """Largest uncompressed/compressed size ratio of a zip member of more than 1 MB:
    ``$EVALBARS_MAX_ZIP_RATIO`` (default 200; real logs compress 5-20x, bombs ~1000x)."""
    return _env_number(MAX_RATIO_ENV, DEFAULT_MAX_RATIO)


def max_file_bytes() -> int:
    """The per-file size limit in bytes: ``$EVALBARS_MAX_FILE_MB`` (default 2048 MB).

    Checked before a file is read (and on the uncompressed size of zip members), so a
    huge or decompression-bomb input fails fast with an ``IngestError``.
    """
    raw = os.environ.get(MAX_FILE_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_FILE_MB
    except ValueError:
        mb = DEFAULT_MAX_FILE_MB
    return int(mb * 1024 * 1024)


def check_size(name: str, size: int, where: str | None = None) -> None:
    """Raise ``IngestError`` if ``size`` exceeds the limit, or if the file is empty."""
    limit = max_file_bytes()
    if size > limit:
        raise IngestError(
            name, where, f"a file of at most {limit // (1024 * 1024)} MB "
            f"(set {MAX_FILE_ENV} to raise the limit)", f"it has {size / 1048576:.1f} MB")
    if size == 0:
        raise IngestError(name, where, "a non-empty file", "the file has 0 bytes")


# ---------------------------------------------------------------------------------------
# Sources: one input file, on disk or in memory
# ---------------------------------------------------------------------------------------
@dataclass
class Source:
    """One input file: a path on disk or bytes in memory (an upload or a zip member).

    ``name`` is what error messages and ``SourceFile.name`` show (the path as given, the
    upload name, or ``archive.zip!member``). ``folder`` is the directory part used to pair
    files of one run (lm_eval output folder, HELM run directory).
    """

    name: str
    path: Path | None = None
    data: bytes | None = None
    folder: str = ""
    # a zip member read lazily (streamed from the archive ``archive`` on every open())
    archive: "Source | None" = None
    member: str | None = None
    _sha256: str | None = field(default=None, repr=False)
    _size: int | None = field(default=None, repr=False)
    # an archive's checked member list (``_zip.ZipIndex``), set when it is first listed, so
    # its members open without reading the central directory again
    zip_index: Any = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        if self._size is None:
            if self.data is not None:
                self._size = len(self.data)
            elif self.archive is not None:
                from evalcore.ingest._zip import ZipArchive
                index = self.archive.zip_index or ZipArchive(self.archive).index
                self._size = index.infos[self.member].file_size
            else:
                self._size = self.path.stat().st_size
        return self._size

    @property
    def basename(self) -> str:
        return re.split(r"[\\/!]", self.name)[-1]

    def head(self, n: int = HEAD_BYTES) -> bytes:
        if self.data is not None:
            return self.data[:n]
        with self.open() as fh:
            return fh.read(n)

    def read_bytes(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.archive is not None:
            with self.open() as fh:
                return fh.read()
        return self.path.read_bytes()

    def open(self) -> BinaryIO:
        """A binary stream of the content (a zip member is decompressed as it is read)."""
        if self.data is not None:
            return io.BytesIO(self.data)
        if self.archive is not None:
            from evalcore.ingest._zip import open_member
            return open_member(self.archive, self.member)
        return open(self.path, "rb")

    def sha256(self) -> str:
        if self._sha256 is None:
            h = hashlib.sha256()
            if self.data is not None:
                h.update(self.data)
            else:
                with self.open() as fh:
                    while chunk := fh.read(1 << 20):
                        h.update(chunk)
            self._sha256 = h.hexdigest()
        return self._sha256

    def source_file(self, fmt: str) -> SourceFile:
        return SourceFile(name=self.name, sha256=self.sha256(), size=self.size, format=fmt)


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------
def _line_col(text: bytes, pos: int) -> str:
    line = text.count(b"\n", 0, pos) + 1
    col = pos - (text.rfind(b"\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}"


class JSONDepthError(ValueError):
    """JSON nested deeper than ``MAX_JSON_DEPTH`` (a ``ValueError``, like a syntax error)."""

    def __init__(self, pos: int, depth: int):
        self.pos = pos
        self.depth = depth
        super().__init__(f"nested {depth} levels deep at column {pos + 1}; the limit is "
                         f"{MAX_JSON_DEPTH} levels")


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_DEPTH_CHUNK = 32 << 20


def json_depth_exceeded(raw: bytes, limit: int = MAX_JSON_DEPTH) -> tuple[int, int] | None:
    """Where a JSON text first nests deeper than ``limit``: (byte offset, depth) or None.

    Brackets inside strings do not count. A text with at most ``limit`` opening brackets
    cannot be too deep (one C-level ``count`` each, the usual case). Otherwise chunks of
    32 MB are reduced to their quotes and brackets (escaped backslashes and quotes removed
    first; chunk ends are moved past backslash runs) and the depth is a cumulative sum over
    the brackets outside strings (numpy). Exact for valid JSON; for invalid JSON the parser
    reports its own error.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return None
    depth = 0
    in_string = False
    start = 0
    n = len(raw)
    while start < n:
        end = min(n, start + _DEPTH_CHUNK)
        while end < n and raw[end - 1:end] == b"\\":
            end += 1
        chunk = raw[start:end].replace(b"\\\\", b"").replace(b'\\"', b"")
        red = np.frombuffer(chunk.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
        if len(red):
            quote = red == ord('"')
            inside = (np.cumsum(quote) - quote + in_string) % 2 == 1
            step = np.zeros(len(red), dtype=np.int64)
            step[(red == ord("[")) | (red == ord("{"))] = 1
            step[(red == ord("]")) | (red == ord("}"))] = -1
            step[inside | quote] = 0
            levels = depth + np.cumsum(step)
            deep = np.flatnonzero(levels > limit)
            if len(deep):
                return _depth_offset(raw, start, int(deep[0]), in_string), int(levels[deep[0]])
            depth = int(levels[-1])
            in_string = bool((int(quote.sum()) + in_string) % 2)
        start = end
    return None


def _depth_offset(raw: bytes, start: int, k: int, in_string: bool) -> int:
    """Byte offset of the ``k``-th structural character of the chunk at ``start`` (only for
    the error message; a Python scan up to that point)."""
    seen = -1
    i = start
    esc = False
    while i < len(raw):
        c = raw[i]
        if in_string:   # the reduced text keeps brackets inside strings, not \" or \\
            if esc:
                esc = False
                if c in b"[]{}":
                    seen += 1
            elif c == 0x5C:
                esc = True
            elif c == 0x22:
                in_string = False
                seen += 1
            elif c in b"[]{}":
                seen += 1
        elif c == 0x22:
            in_string = True
            seen += 1
        elif c in b"[]{}":
            seen += 1
        if seen == k:
            return i
        i += 1
    return start


def check_json_depth(name: str, raw: bytes, where: str | None = None) -> None:
    """Raise ``IngestError`` naming the place if ``raw`` nests deeper than ``MAX_JSON_DEPTH``."""
    hit = json_depth_exceeded(raw)
    if hit is not None:
        pos, depth = hit
        place = _line_col(raw, pos) if where is None else f"{where}, column {pos + 1}"
        raise IngestError(name, place, f"JSON nested at most {MAX_JSON_DEPTH} levels deep",
                          f"{depth} levels deep there")


# Integers written with more digits than this are beyond every float (1.8e308): they are
# read as ``HugeInteger`` (+-inf) so that every numeric check refuses them by name, and
# Python never converts their digits (it refuses more than 4,300 with a ValueError).
MAX_INT_DIGITS = 308


class HugeInteger(float):
    """A JSON integer of more than ``MAX_INT_DIGITS`` digits, read as +-inf: no score,
    count or index is that large, and a float conversion of it must not fail. Its repr says
    what the file held (for error messages)."""

    digits: int

    def __new__(cls, text: str) -> "HugeInteger":
        value = super().__new__(cls, -math.inf if text.startswith("-") else math.inf)
        value.digits = len(text.lstrip("+-"))
        return value

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"


def _parse_int(text: str) -> int | float:
    return int(text) if len(text) <= MAX_INT_DIGITS else HugeInteger(text)


def _json_loads(text: str | bytes) -> Any:
    """``json.loads`` with huge integers as ``HugeInteger`` (NaN/Infinity tokens are read
    as floats; the finite-score checks refuse them where a score is expected)."""
    return json.loads(text, parse_int=_parse_int)


def load_json(src: Source, data: bytes | None = None, what: str = "a complete JSON document") -> Any:
    """Parse a whole JSON document; on failure raise ``IngestError`` naming line and column.

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused first (``check_json_depth``). The text
    must be UTF-8. Python's ``json`` is the one parser (so values, messages and hashes do
    not depend on what else is installed); integers of more than ``MAX_INT_DIGITS`` digits
    become ``HugeInteger``.
    """
    raw = src.read_bytes() if data is None else data
    check_json_depth(src.name, raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(src.name, f"byte {exc.start}", "UTF-8 encoded JSON text",
                          "the file is binary or in another encoding") from None
    try:
        return _json_loads(text)
    except RecursionError:
        raise IngestError(src.name, "top level", f"JSON nested at most {MAX_JSON_DEPTH} "
                          "levels deep") from None
    except json.JSONDecodeError as exc:
        pos = len(text[: exc.pos].encode("utf-8"))
        truncated = pos >= len(raw.rstrip())
        detail = "the file ends early (truncated?)" if truncated else exc.msg
        raise IngestError(src.name, _line_col(raw, pos), what, detail) from None


def loads_line(line: bytes | str) -> Any:
    """Parse one JSONL line (``json``; huge integers as ``HugeInteger``).

    Raises ``ValueError`` (``JSONDepthError`` for nesting deeper than ``MAX_JSON_DEPTH``)."""
    hit = json_depth_exceeded(line if isinstance(line, bytes) else line.encode("utf-8"))
    if hit is not None:
        raise JSONDepthError(*hit)
    try:
        return _json_loads(line)
    except RecursionError:
        raise JSONDepthError(0, MAX_JSON_DEPTH) from None


def dumps(obj: Any) -> str:
    """The canonical JSON text of ``obj``: what item hashes are computed from (inspect's
    ``item_hash``) and how values are quoted in warnings, the same on every machine.

    Python's ``json`` with fixed options: keys sorted, separators ``", "`` and ``": "``,
    non-ASCII characters escaped (``\\uXXXX``), floats in Python's shortest round-trip
    form (``1e+16``, ``NaN``, ``Infinity``), any other value as its ``str()``. This is the
    text evalbars has always written when orjson was not installed (it is not a
    dependency), so item hashes stored by such installs are unchanged. Keys of mixed types
    (which cannot be sorted) are written as strings first (``jsonable``).
    """
    try:
        return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(", ", ": "),
                          allow_nan=True, default=str)
    except TypeError:
        return json.dumps(jsonable(obj), sort_keys=True, ensure_ascii=True,
                          separators=(", ", ": "), allow_nan=True, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cluster_label(value: str) -> str:
    """A short, stable cluster label for a grouping value.

    Values of at most ``CLUSTER_TEXT_LIMIT`` characters are kept as written; longer ones (a
    reading passage used as the grouping key) become the first 12 hex digits of the sha256
    of their UTF-8 bytes (48 bits: a collision among even a million distinct passages has
    probability about 2e-3), so the same text gets the same label in every run.
    """
    if len(value) <= CLUSTER_TEXT_LIMIT:
        return value
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def jsonable(obj: Any) -> Any:
    """A copy of ``obj`` that ``json.dumps`` accepts (non-finite floats become strings)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


# ---------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_unique(scores: pd.DataFrame, src_name: str, where: str | None = None) -> None:
    """Raise ``IngestError`` if an item id repeats within one (task, metric, answer_idx).

    Item ids must be unique there, or paired comparisons would silently pair the wrong rows.
    """
    if scores.empty:
        return
    dup = scores.duplicated(subset=["task", "metric", "item_id", "answer_idx"])
    if dup.any():
        row = scores[dup].iloc[0]
        raise IngestError(
            src_name, where or f"task {row['task']!r}, metric {row['metric']!r}",
            "each item id once per (task, metric, answer)",
            f"item id {row['item_id']!r} appears more than once (answer {int(row['answer_idx'])})")


# ---------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------
_DTYPES = {"answer_idx": "int64", "score": "float64", "value": "float64", "stderr": "float64",
           "n": "Int64", "n_choices": "Int64", "is_group": "bool", "protocol": "object"}


def empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    """An empty canonical frame with the same dtypes as a filled one (str for text columns)."""
    return pd.DataFrame({c: pd.Series(dtype=_DTYPES.get(c, STR)) for c in columns})


_NULL_TEXT: list[pa.Array] = []


def _null_text(n: int) -> pa.Array:
    """``n`` missing strings: a slice of one shared all-null array (a column without values
    costs no memory per row; several runs' frames share its buffers)."""
    have = _NULL_TEXT[0] if _NULL_TEXT else None
    if have is None or len(have) < n:
        have = pa.nulls(max(n, 1 << 16), pa.large_string())
        _NULL_TEXT[:] = [have]
    return have.slice(0, n)


def _str_column(v: Any, n: int) -> pd.Series:
    """A string column of length ``n``: None and a scalar string are broadcast."""
    if v is None:
        return pd.Series(_null_text(n), dtype=STR)
    if isinstance(v, str):
        return pd.Series([v] * n, dtype=STR)
    return pd.Series(v, dtype=STR)


def scores_frame(task: Any, metric: Any, item_id: Any, answer_idx: Any, score: Any,
                 cluster: Any = None, item_hash: Any = None, prompt_hash: Any = None) -> pd.DataFrame:
    """Build a SCORE_COLUMNS frame; scalars are broadcast to the length of ``score``."""
    score = np.asarray(score, dtype="float64")
    n = len(score)

    def col(v: Any) -> pd.Series:
        return _str_column(v, n)

    if np.isscalar(answer_idx):
        answer = np.full(n, int(answer_idx), dtype="int64")
    else:
        answer = np.asarray(answer_idx, dtype="int64")
    df = pd.DataFrame({
        "task": col(task), "metric": col(metric), "item_id": col(item_id),
        "answer_idx": answer, "score": score, "cluster": col(cluster),
        "item_hash": col(item_hash), "prompt_hash": col(prompt_hash),
    })
    return df[list(SCORE_COLUMNS)]


def concat_frames(frames: list[pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return empty_frame(columns)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    return out[list(columns)]


def summaries_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """SUMMARY_COLUMNS from dict rows (missing keys -> None/NaN)."""
    if not rows:
        return empty_frame(SUMMARY_COLUMNS)
    df = pd.DataFrame({
        "task": pd.Series([r["task"] for r in rows], dtype=STR),
        "metric": pd.Series([r["metric"] for r in rows], dtype=STR),
        "value": pd.Series([_float_or_nan(r.get("value")) for r in rows], dtype="float64"),
        "stderr": pd.Series([_float_or_nan(r.get("stderr")) for r in rows], dtype="float64"),
        "stderr_raw": pd.Series([r.get("stderr_raw") for r in rows], dtype=STR),
        "n": pd.Series([count_or_none(r.get("n")) for r in rows], dtype="Int64"),
        "is_group": pd.Series([bool(r.get("is_group", False)) for r in rows], dtype="bool"),
    })
    return df[list(SUMMARY_COLUMNS)]


def texts_frame(task: Any, item_id: Any, answer_idx: Any, prompt: Any, target: Any,
                response: Any) -> pd.DataFrame:
    n = len(item_id)

    def col(v: Any) -> pd.Series:
        return _str_column(v, n)

    answer = (np.full(n, int(answer_idx), dtype="int64") if np.isscalar(answer_idx)
              else np.asarray(answer_idx, dtype="int64"))
    df = pd.DataFrame({"task": col(task), "item_id": col(item_id), "answer_idx": answer,
                       "prompt": col(prompt), "target": col(target), "response": col(response)})
    return df[list(TEXT_COLUMNS)]


def tasks_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """TASK_COLUMNS from rows {task, n_choices, protocol}."""
    if not rows:
        return empty_frame(TASK_COLUMNS)
    return pd.DataFrame({
        "task": pd.Series([r["task"] for r in rows], dtype=STR),
        "n_choices": pd.Series([count_or_none(r.get("n_choices")) for r in rows], dtype="Int64"),
        "protocol": pd.Series([jsonable(r.get("protocol") or {}) for r in rows], dtype="object"),
    })[list(TASK_COLUMNS)]


def count_or_none(v: Any) -> int | None:
    """A count (n, n_choices) as an int, or None when it is not a whole number in 0..2**53
    (a file may say anything: ``1e30``, ``-3``, ``"many"``)."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    if not (math.isfinite(f) and 0 <= f <= 2 ** 53 and f == int(f)):
        return None
    return int(f)


def _float_or_nan(v: Any) -> float:
    if is_number(v):
        try:
            return float(v)
        except OverflowError:      # an int beyond every float: refused by the magnitude check
            return math.inf if v > 0 else -math.inf
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return math.nan
    return math.nan


def text_of(value: Any, limit: int | None = None) -> str | None:
    """Readable text of a prompt/target/response that may be a string, list or dict."""
    if value is None:
        return None
    if isinstance(value, str):
        out = value
    elif isinstance(value, (list, tuple)):
        parts = [text_of(v) for v in value]
        out = "\n".join(p for p in parts if p)
    elif isinstance(value, dict):
        for key in ("text", "content", "completion"):
            if key in value:
                return text_of(value[key], limit)
        out = dumps(value)
    else:
        out = str(value)
    if limit is not None and len(out) > limit:
        out = out[:limit]
    return out


def call_progress(progress: Progress | None, done: int, total: int, current: str) -> None:
    if progress is not None:
        try:
            progress(done, total, current)
        except Exception:  # a broken progress bar must never break an ingest
            pass
