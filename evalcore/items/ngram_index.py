"""An n-gram index of a corpus sample in its own DuckDB file, and item overlap against it.

Contamination check after Brown et al. (2020), "Language Models are Few-Shot Learners",
arXiv:2005.14165, appendix C: an item is *overlapping* ("dirty") when any of its n-grams
(13 words by default) occurs in the corpus, *clean* otherwise. Text is normalised the same way
on both sides: lower-cased and split into words on every character that is not a letter or a
digit (so punctuation and whitespace differences do not hide an overlap; close to the
normalisation of lm-evaluation-harness's decontamination ``janitor``).

Hashing: each word is hashed by DuckDB's ``hash()`` (64 bits); an n-gram's hash is
sum_k h(w_{i+k}) * P^k mod 2^64 (P odd), mixed by splitmix64. Two different n-grams collide with
probability about 2^-64 per pair; an index only answers for the DuckDB version that built it
(``hash()`` is not promised stable across versions), which is recorded and checked.

Corpus files are streamed, never read whole: text files (``.txt``, ``.md``, anything not
recognised below) are one document each, read in blocks with the last n-1 words carried to the
next block so no n-gram is lost at a block edge; JSONL (``.jsonl``, ``.ndjson``, ``.json``
with one object per line) has one document per line in a text field (default ``text``);
Parquet is read in record batches of that column. Bad input (an invalid UTF-8 byte, a line that
is not a JSON object with a string text field, a Parquet file without the column) is an
``IngestError`` naming the file and the place; the index file is then left as it was before the
build (a build writes to a temporary file and renames it at the end).

This module owns its own DuckDB connection to the index file (a cache of the corpus, not the
evalbars store); every value goes in as a ``?`` parameter or a registered Arrow table.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.errors import AnalysisError, IngestError

DEFAULT_N = 13                      # Brown et al. 2020, appendix C
WORD_SPLIT = r"[^\pL\pN]+"          # RE2: anything that is not a letter or a digit
BLOCK_CHARS = 4_000_000             # text read per block
BATCH_CHARS = 8_000_000             # JSONL/Parquet text per batch
_P = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the rolling combination
_TOKENS_SQL = ("SELECT doc, list_transform(list_filter(regexp_split_to_array(lower(text), ?), "
               "x -> x <> ''), x -> hash(x)) AS h FROM batch ORDER BY doc")


def _connect(path: str = ":memory:", **kwargs: Any) -> duckdb.DuckDBPyConnection:
    """A connection without DuckDB's progress bar (drawn on stdout for slow queries, which
    would corrupt the CLI's JSON)."""
    con = duckdb.connect(path, **kwargs)
    con.execute("SET enable_progress_bar = false")
    return con

TEXT_SUFFIXES_JSONL = (".jsonl", ".ndjson", ".json")
TEXT_SUFFIXES_PARQUET = (".parquet", ".pq")


@dataclass(frozen=True)
class IndexInfo:
    """What an index holds: n, documents, n-gram rows, files, DuckDB version, build cost."""

    path: Path
    n: int
    documents: int
    ngrams: int
    files: tuple[str, ...]
    duckdb_version: str
    seconds: float | None = None


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def ngram_hashes(tokens: np.ndarray, n: int) -> np.ndarray:
    """Hashes of every run of n consecutive word hashes in ``tokens`` (uint64, may be empty)."""
    m = tokens.size - n + 1
    if m <= 0:
        return np.empty(0, dtype="uint64")
    acc = np.zeros(m, dtype="uint64")
    mult = np.uint64(1)
    with np.errstate(over="ignore"):
        for k in range(n):
            acc += tokens[k:k + m] * mult
            mult = mult * _P
    return _splitmix(acc)


def _segment_ngrams(values: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n-gram hashes of several documents given as one flat array and list offsets; returns
    (hashes, index of the document of each)."""
    h = ngram_hashes(values, n)
    if h.size == 0:
        return h, np.empty(0, dtype="int64")
    starts = np.arange(h.size)
    doc = np.searchsorted(offsets, starts, side="right") - 1
    end_doc = np.searchsorted(offsets, starts + n - 1, side="right") - 1
    keep = doc == end_doc
    return h[keep], doc[keep]


class _Tokenizer:
    """Word hashes of many texts at once, in DuckDB (one in-memory connection)."""

    def __init__(self) -> None:
        self.con = _connect()

    def close(self) -> None:
        self.con.close()

    def words(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(flat word hashes, offsets of each text's words) for ``texts`` in order."""
        batch = pa.table({"doc": pa.array(range(len(texts)), pa.int64()),
                          "text": pa.array(texts, pa.large_string())})
        self.con.register("batch", batch)
        try:
            out = self.con.execute(_TOKENS_SQL, [WORD_SPLIT]).fetch_arrow_table()
        finally:
            self.con.unregister("batch")
        col = out.column("h").combine_chunks()
        if isinstance(col, pa.ChunkedArray):
            col = col.chunk(0) if col.num_chunks else pa.array([], pa.list_(pa.uint64()))
        offsets = np.asarray(col.offsets, dtype="int64")
        values = np.asarray(col.values, dtype="uint64") if len(col) else np.empty(0, "uint64")
        base = offsets[0] if offsets.size else 0
        values = values[base:offsets[-1]] if offsets.size else values
        return values, offsets - base


def text_ngrams(texts: list[str | None], n: int = DEFAULT_N,
                tokenizer: _Tokenizer | None = None) -> list[np.ndarray]:
    """The distinct n-gram hashes of each text (None counts as empty), normalised as the index."""
    tok = tokenizer or _Tokenizer()
    try:
        values, offsets = tok.words([t or "" for t in texts])
    finally:
        if tokenizer is None:
            tok.close()
    out = []
    for i in range(len(texts)):
        out.append(np.unique(ngram_hashes(values[offsets[i]:offsets[i + 1]], n)))
    return out


def word_counts(texts: list[str | None]) -> np.ndarray:
    """Number of words of each text under the index's normalisation."""
    tok = _Tokenizer()
    try:
        _, offsets = tok.words([t or "" for t in texts])
    finally:
        tok.close()
    return np.diff(offsets)


# ------------------------------------------------------------------------------------------
# Streaming corpus readers: each yields (texts, places, continues) batches
# ------------------------------------------------------------------------------------------

def _read_text(path: Path, block: int) -> Iterator[str]:
    """Blocks of a UTF-8 text file cut after whitespace (a word is never split)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    pending = ""
    offset = 0
    with open(path, "rb") as fh:
        while True:
            raw = fh.read(block)
            try:
                text = dec.decode(raw, final=not raw)
            except UnicodeDecodeError as exc:
                raise IngestError(path.name, f"byte {offset + exc.start}", "UTF-8 text",
                                  "the corpus reader reads text files as UTF-8") from None
            offset += len(raw)
            pending += text
            if not raw:
                if pending:
                    yield pending
                return
            cut = max(pending.rfind(" "), pending.rfind("\n"), pending.rfind("\t"))
            if cut <= 0:
                continue
            yield pending[:cut]
            pending = pending[cut:]


def _read_jsonl(path: Path, field: str, batch: int) -> Iterator[tuple[list[str], list[str]]]:
    texts: list[str] = []
    places: list[str] = []
    size = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                raise IngestError(path.name, f"line {lineno}", f"a JSON object with a string "
                                  f"field {field!r}", str(exc)[:80]) from None
            value = obj.get(field) if isinstance(obj, dict) else None
            if not isinstance(value, str):
                found = "no such field" if not isinstance(obj, dict) or field not in obj \
                    else f"a {type(value).__name__}"
                raise IngestError(path.name, f"line {lineno}, field {field}",
                                  f"a JSON object with a string field {field!r}", f"found {found}")
            texts.append(value)
            places.append(f"line {lineno}")
            size += len(value)
            if size >= batch:
                yield texts, places
                texts, places, size = [], [], 0
    if texts:
        yield texts, places


def _read_parquet(path: Path, field: str, batch: int) -> Iterator[tuple[list[str], list[str]]]:
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise IngestError(path.name, None, "a Parquet file", str(exc)[:80]) from None
    if field not in pf.schema_arrow.names:
        raise IngestError(path.name, f"column {field}", f"a string column {field!r}",
                          f"columns: {', '.join(pf.schema_arrow.names[:8])}")
    if not (pa.types.is_string(pf.schema_arrow.field(field).type)
            or pa.types.is_large_string(pf.schema_arrow.field(field).type)):
        raise IngestError(path.name, f"column {field}", f"a string column {field!r}",
                          f"found {pf.schema_arrow.field(field).type}")
    row = 0
    for rb in pf.iter_batches(batch_size=max(1, batch // 2000), columns=[field]):
        values = rb.column(0).to_pylist()
        places = [f"row {row + i + 1}" for i in range(len(values))]
        row += len(values)
        yield [v or "" for v in values], places


def corpus_kind(path: Path) -> str:
    """"jsonl", "parquet" or "text", from the file name."""
    name = path.name.lower()
    if name.endswith(TEXT_SUFFIXES_PARQUET):
        return "parquet"
    if name.endswith(TEXT_SUFFIXES_JSONL):
        return "jsonl"
    return "text"


def corpus_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and the files under named folders (sorted), skipping hidden ones."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(f for f in path.rglob("*") if f.is_file()
                              and not any(part.startswith(".") for part in f.relative_to(path).parts)))
        elif path.is_file():
            out.append(path)
        else:
            raise IngestError(str(path), None, "a corpus file or folder", "not found")
    return out


# ------------------------------------------------------------------------------------------
# Building and querying the index
# ------------------------------------------------------------------------------------------

_SCHEMA = (
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    "CREATE TABLE docs (doc INTEGER PRIMARY KEY, file VARCHAR NOT NULL, place VARCHAR NOT NULL)",
    "CREATE TABLE ngrams (h UBIGINT NOT NULL, doc INTEGER NOT NULL)",
)


class _Writer:
    """Appends n-gram rows and documents to the index under construction."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.docs = 0
        self.ngrams = 0

    def add(self, hashes: np.ndarray, doc: np.ndarray) -> None:
        if hashes.size == 0:
            return
        tbl = pa.table({"h": pa.array(hashes, pa.uint64()), "doc": pa.array(doc, pa.int32())})
        self.con.register("chunk", tbl)
        try:
            self.con.execute("INSERT INTO ngrams SELECT h, doc FROM chunk")
        finally:
            self.con.unregister("chunk")
        self.ngrams += int(hashes.size)

    def add_docs(self, file: str, places: list[str]) -> int:
        first = self.docs
        tbl = pa.table({"doc": pa.array(range(first, first + len(places)), pa.int32()),
                        "file": pa.array([file] * len(places), pa.string()),
                        "place": pa.array(places, pa.string())})
        self.con.register("newdocs", tbl)
        try:
            self.con.execute("INSERT INTO docs SELECT doc, file, place FROM newdocs")
        finally:
            self.con.unregister("newdocs")
        self.docs += len(places)
        return first


def build_index(paths: Iterable[str | Path], index_path: str | Path, *, n: int = DEFAULT_N,
                text_field: str = "text", memory_limit: str = "1GB",
                names: dict[Path, str] | None = None) -> IndexInfo:
    """Stream the corpus files into a new n-gram index at ``index_path`` (replaced whole).

    ``names`` maps a file to the name shown in messages and in the index (an upload's name).
    """
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
        raise AnalysisError(f"n-gram length must be an integer from 1 to 64, got {n!r}")
    files = corpus_files(paths)
    target = Path(index_path)
    tmp = target.with_name(target.name + f".building-{os.getpid()}")
    for leftover in (tmp, Path(str(tmp) + ".wal")):
        leftover.unlink(missing_ok=True)
    start = time.perf_counter()
    con = _connect(str(tmp), config={"memory_limit": memory_limit, "threads": 2})
    tok = _Tokenizer()
    ok = False
    try:
        for stmt in _SCHEMA:
            con.execute(stmt)
        writer = _Writer(con)
        shown: list[str] = []
        for f in files:
            name = (names or {}).get(f, f.name)
            shown.append(name)
            try:
                _index_file(f, name, corpus_kind(f), n, text_field, tok, writer)
            except IngestError as exc:   # name the file as the user knows it
                if exc.file != name:
                    raise IngestError(name, exc.where, exc.expected, exc.detail) from None
                raise
        meta = {"n": str(n), "normalisation": f"lower-case; words split on {WORD_SPLIT}",
                "duckdb_version": duckdb.__version__, "documents": str(writer.docs),
                "ngrams": str(writer.ngrams), "files": json.dumps(shown)}
        con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
        con.execute("CHECKPOINT")
        con.close()
        os.replace(tmp, target)
        ok = True
        return IndexInfo(target, n, writer.docs, writer.ngrams, tuple(shown), duckdb.__version__,
                         time.perf_counter() - start)
    finally:
        tok.close()
        if not ok:
            try:
                con.close()
            except duckdb.Error:
                pass
            tmp.unlink(missing_ok=True)
            Path(str(tmp) + ".wal").unlink(missing_ok=True)


def _index_file(path: Path, name: str, kind: str, n: int, field: str, tok: _Tokenizer,
                writer: _Writer) -> None:
    if kind == "text":
        doc = writer.add_docs(name, ["whole file"])
        carry = np.empty(0, dtype="uint64")
        for block in _read_text(path, BLOCK_CHARS):
            values, _ = tok.words([block])
            values = np.concatenate([carry, values])
            h = ngram_hashes(values, n)
            writer.add(h, np.full(h.size, doc, dtype="int32"))
            carry = values[-(n - 1):] if n > 1 else values[:0]
        return
    reader = _read_parquet(path, field, BATCH_CHARS) if kind == "parquet" \
        else _read_jsonl(path, field, BATCH_CHARS)
    for texts, places in reader:
        first = writer.add_docs(name, places)
        values, offsets = tok.words(texts)
        h, doc = _segment_ngrams(values, offsets, n)
        writer.add(h, (doc + first).astype("int32"))


def open_index(index_path: str | Path) -> IndexInfo:
    """Read an index's facts; refuse one built by another DuckDB version."""
    path = Path(index_path)
    if not path.is_file():
        raise AnalysisError(f"{path}: no n-gram index there (build one with the corpus files)")
    try:
        con = _connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise AnalysisError(f"{path}: not an n-gram index ({str(exc)[:80]})") from None
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except duckdb.Error:
        raise AnalysisError(f"{path}: not an n-gram index (no meta table)") from None
    finally:
        con.close()
    if meta.get("duckdb_version") != duckdb.__version__:
        raise AnalysisError(f"{path}: built with DuckDB {meta.get('duckdb_version')}, this is "
                            f"{duckdb.__version__}; word hashes may differ: rebuild the index")
    return IndexInfo(path, int(meta["n"]), int(meta["documents"]), int(meta["ngrams"]),
                     tuple(json.loads(meta["files"])), meta["duckdb_version"])


@dataclass(frozen=True)
class ItemOverlap:
    """Per item: n-grams tested, how many occur in the corpus, and one corpus place."""

    n_ngrams: np.ndarray        # distinct n-grams of the item's text
    hits: np.ndarray            # of them found in the corpus
    example: list[str | None]   # "file, place" of one corpus document holding a hit


def item_overlap(index_path: str | Path, texts: list[str | None]) -> tuple[IndexInfo, ItemOverlap]:
    """Which of ``texts`` share n-grams with the indexed corpus (the index's own n)."""
    info = open_index(index_path)
    grams = text_ngrams(texts, info.n)
    counts = np.array([g.size for g in grams], dtype="int64")
    item = np.repeat(np.arange(len(texts), dtype="int64"), counts)
    flat = np.concatenate(grams) if grams else np.empty(0, "uint64")
    probe = pa.table({"item": pa.array(item, pa.int64()), "h": pa.array(flat, pa.uint64())})
    con = _connect(str(info.path), read_only=True)
    try:
        con.register("probe", probe)
        rows = con.execute("""
            WITH found AS (SELECT h, min(doc) AS doc FROM ngrams
                           WHERE h IN (SELECT h FROM probe) GROUP BY h)
            SELECT p.item, count(*) AS hits, min(d.file || ', ' || d.place) AS example
            FROM probe p JOIN found f USING (h) JOIN docs d ON d.doc = f.doc
            GROUP BY p.item""").fetchall()
    finally:
        con.close()
    hits = np.zeros(len(texts), dtype="int64")
    example: list[str | None] = [None] * len(texts)
    for i, k, ex in rows:
        hits[int(i)] = int(k)
        example[int(i)] = ex
    return info, ItemOverlap(counts, hits, example)

