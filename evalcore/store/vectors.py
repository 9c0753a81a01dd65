"""Per-cell item vectors (schema 4, table ``vectors``): each (run, task, metric) cell's
per-item means as one dense vector over the run's item-key range, written at ingest in the
transaction that writes the cell's scores, so that the items x runs matrices of a board
(``Store.item_matrices``) are read from one small row per cell instead of every score row.

Encoding of one cell (one row; keys are the store's integer item keys, ``items.item``):

- ``lo``: the smallest item key the run has in the cell; ``span``: largest - lo + 1;
  ``n``: the number of items present (``n == span``: no gap).
- ``present``: ``np.packbits(mask, bitorder="little")`` over the span, bit i set when the
  run has score rows for key ``lo + i``.
- ``bits`` true (every raw score of the cell is 0 or 1 and every item has one score row):
  ``vals`` is the packbits (little) of the 0/1 scores over the span, 0 in absent slots.
  ``bits`` false: ``vals`` is float64 little-endian per slot, the item's mean over its
  score rows (the sum of the rows in (answer_idx, row) order divided by their count: for one
  row per item the raw score, bit for bit), NaN in absent slots (a present item's mean may
  be NaN too: ``present`` tells them apart).
- ``labs``: int32 little-endian per slot, the item's cluster label key (``labels.label``;
  the smallest key over its rows, as ``min(cluster)``), -1 for none and in absent slots;
  NULL when no item of the cell has a label.

A run's keys in a cell are usually one contiguous range (keys are numbered per task and
ingest call); a task whose items were added by several ingest calls in between other tasks
has gaps in its key range, and the vector covers them (absent slots). A cell whose span is
far larger than its rows (``SPARSE_FACTOR``, ``SPARSE_SLACK``) gets no vector row: its reads
come from the score rows (``item_matrices`` reads a cell from the scores when any asked run
lacks its vector).

Merges only add cells to a run, so a cell's vector is computed once, from the score rows
written with it (``batch._Batch._write_keyed`` calls ``encode`` on them), by the v3 -> v4
upgrade (``fill``), and by migrate. Reads fall back to the score rows for a cell without a
vector row (``matrices._MatrixQueries.item_matrices``).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.model import ItemMatrix
from evalcore.store._util import _log, one_array

VECTOR_SCHEMA = pa.schema([("run_id", pa.int32()), ("task", pa.string()),
                           ("metric", pa.string()), ("lo", pa.int32()), ("span", pa.int32()),
                           ("n", pa.int32()), ("bits", pa.bool_()), ("present", pa.binary()),
                           ("vals", pa.binary()), ("labs", pa.binary())])

_NO_LABEL = np.iinfo(np.int64).max
# a cell gets a vector when its key span <= SPARSE_FACTOR * its rows + SPARSE_SLACK (a few
# bytes per slot stay within reach of the rows' own size); a sparser one is read from its
# score rows
SPARSE_FACTOR = 16
SPARSE_SLACK = 65_536


def _codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(int64 code per row, dictionary of distinct values) of a string column (a
    dictionary column with one chunk is used as it is)."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            col = col.chunk(0)
        elif pa.types.is_dictionary(col.type):     # chunks may have their own dictionaries
            col = col.cast(col.type.value_type).combine_chunks()
        else:
            col = col.combine_chunks()
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    if col.null_count:
        raise ValueError("vectors.encode: null task or metric")
    return col.indices.to_numpy(zero_copy_only=False).astype(np.int64), col.dictionary


def encode(rows: pa.Table) -> pa.Table:
    """The ``vectors`` rows (``VECTOR_SCHEMA``) of score rows with columns run_id, task,
    metric, item (integer key), score, cluster (label key or null): one row per (run_id,
    task, metric) present but a sparse one (module docstring), rows ordered by (task,
    metric, run_id) codes. Every row of a cell must be in ``rows`` (a vector is written
    once per cell)."""
    n_rows = rows.num_rows
    if n_rows == 0:
        return VECTOR_SCHEMA.empty_table()
    run = rows.column("run_id").to_numpy().astype(np.int64)
    item = rows.column("item").to_numpy().astype(np.int64)
    score = rows.column("score").to_numpy().astype(np.float64, copy=False)
    cluster = rows.column("cluster")
    lab = (None if cluster.null_count == n_rows else       # no label: no labs array
           cluster.fill_null(-1).to_numpy().astype(np.int64))
    tcode, tdict = _codes(rows.column("task"))
    mcode, mdict = _codes(rows.column("metric"))
    rmin = int(run.min())
    rspan = int(run.max()) - rmin + 1
    cellkey = (tcode * len(mdict) + mcode) * rspan + (run - rmin)
    # cells numbered in cellkey order (task, metric, run codes), no sort of the rows: a
    # presence table over the key range when it is small, np.unique otherwise
    n_keys = len(tdict) * len(mdict) * rspan
    if n_keys <= 4 * n_rows + (1 << 20):
        seen = np.zeros(n_keys, dtype=bool)
        seen[cellkey] = True
        ukeys = np.flatnonzero(seen)
        rank = np.cumsum(seen, dtype=np.int64) - 1
        cell = rank[cellkey]
        del seen, rank
    else:
        ukeys, cell = np.unique(cellkey, return_inverse=True)
    del cellkey, run, tcode, mcode
    n_cells = ukeys.size
    lo = np.full(n_cells, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n_cells, -1, dtype=np.int64)
    np.minimum.at(lo, cell, item)
    np.maximum.at(hi, cell, item)
    span = hi - lo + 1
    n_present = np.bincount(cell, minlength=n_cells)      # rows (>= items) per cell
    dense = span <= SPARSE_FACTOR * n_present + SPARSE_SLACK
    if not dense.all():
        # a run whose keys in the cell lie far apart (items added by ingests far apart in
        # time): no vector; its reads come from the score rows
        keep_row = dense[cell]
        item, score = item[keep_row], score[keep_row]
        lab = None if lab is None else lab[keep_row]
        new_id = np.cumsum(dense) - 1
        cell = new_id[cell[keep_row]]
        ukeys, lo, span = ukeys[dense], lo[dense], span[dense]
        n_cells = ukeys.size
        if n_cells == 0:
            return VECTOR_SCHEMA.empty_table()
    # slots: per cell its span padded to a multiple of 8 (the bit arrays are whole bytes
    # per cell); the slot of a row = the cell's offset + its key - the cell's lo
    pspan = (span + 7) // 8 * 8
    off = np.concatenate([[0], np.cumsum(pspan)])
    slot = off[cell] + (item - lo[cell])
    n_slots = int(off[-1])
    count = np.bincount(slot, minlength=n_slots)
    # mean over the item's rows (summed in row order; 0 / 0 = NaN where absent)
    mean_slot = np.bincount(slot, weights=score, minlength=n_slots)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_slot /= count
    neg0 = (score == 0) & np.signbit(score)
    if neg0.any():      # a sum from 0.0 turns a single -0.0 into 0.0: keep the raw score
        single = neg0 & (count[slot] == 1)
        mean_slot[slot[single]] = score[single]
    pres = count > 0
    cell_first = off[:-1]
    n_items = np.add.reduceat(pres, cell_first).astype(np.int64)
    most = np.maximum.reduceat(count, cell_first)
    not01 = np.bincount(cell, weights=~((score == 0) | (score == 1)), minlength=n_cells)
    bits = (not01 == 0) & (most == 1)
    present = _binary(np.packbits(pres, bitorder="little"), off // 8)
    # vals: bit cells their bytes of the packed 0/1 slots, float cells the first span * 8
    # bytes of their float64 slots; labs: the first span * 4 bytes of int32 slots
    packed = np.packbits(mean_slot == 1, bitorder="little")
    vals = _gather(np.concatenate([packed, mean_slot.view(np.uint8)]),
                   np.where(bits, off[:-1] // 8, packed.size + off[:-1] * 8),
                   np.where(bits, pspan // 8, span * 8))
    if lab is not None and bool((lab >= 0).any()):
        lab_slot = np.full(n_slots, _NO_LABEL, dtype=np.int64)
        np.minimum.at(lab_slot, slot, np.where(lab >= 0, lab, _NO_LABEL))
        lab_slot[lab_slot == _NO_LABEL] = -1
        cell_has = np.logical_or.reduceat(lab_slot >= 0, cell_first)
        labs = _gather(lab_slot.astype("<i4").view(np.uint8), off[:-1] * 4, span * 4,
                       valid=cell_has)
    else:
        labs = pa.nulls(n_cells, pa.binary())
    nm = len(mdict)
    cell_run = (ukeys % rspan + rmin).astype(np.int32)
    tidx = pa.array((ukeys // rspan // nm).astype(np.int32))
    midx = pa.array((ukeys // rspan % nm).astype(np.int32))
    return pa.table([pa.array(cell_run),
                     pc.take(tdict, tidx).cast(pa.string()),
                     pc.take(mdict, midx).cast(pa.string()),
                     pa.array(lo.astype(np.int32)), pa.array(span.astype(np.int32)),
                     pa.array(n_items.astype(np.int32)), pa.array(bits),
                     present, vals, labs], schema=VECTOR_SCHEMA)


def _gather(source: np.ndarray, start: np.ndarray, length: np.ndarray,
            valid: np.ndarray | None = None) -> pa.Array:
    """A binary array whose value i is ``source[start[i]:start[i] + length[i]]``."""
    dst = np.concatenate([[0], np.cumsum(length)])
    idx = np.arange(int(dst[-1]), dtype=np.int64) + np.repeat(start - dst[:-1], length)
    return _binary(source[idx], dst, valid)


def _binary(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None
            ) -> pa.Array:
    """A binary array whose value i is ``data[offsets[i]:offsets[i + 1]]`` (no copy per
    value); null where ``valid`` is false."""
    n = offsets.size - 1
    mask = None if valid is None else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [
        mask, pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int32)),
        pa.py_buffer(np.ascontiguousarray(data, dtype=np.uint8))],
        null_count=-1 if valid is not None else 0)


# Score rows per ``encode`` call of ``write_sorted``: its work arrays take about 150 bytes a
# row (a dozen numpy arrays of the rows), 40 MB at this size
ENCODE_ROWS = 250_000


def write(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> int:
    """Insert the vectors of ``rows`` (``encode``) inside the open transaction; returns the
    number of vector rows written."""
    return _insert(con, encode(rows))


def write_sorted(con: duckdb.DuckDBPyConnection, rows: pa.Table, task: np.ndarray,
                 metric: np.ndarray, chunk_rows: int | None = None) -> int:
    """``write`` for score rows grouped by (task, metric) (``task``, ``metric``: integer
    codes of each row, equal codes adjacent, as an ingest sorts its scores): encoded in
    chunks of whole (task, metric) groups of about ``chunk_rows`` (default ``ENCODE_ROWS``)
    rows, so the work arrays of ``encode`` hold one chunk, and inserted with one statement.
    A cell lies in one group, so the vector rows are those of one ``encode``."""
    n = rows.num_rows
    chunk_rows = ENCODE_ROWS if chunk_rows is None else chunk_rows
    if n <= chunk_rows:
        return write(con, rows)
    starts = np.flatnonzero((task[1:] != task[:-1]) | (metric[1:] != metric[:-1])) + 1
    cuts, last = [0], 0
    for at in starts.tolist():
        if at - last >= chunk_rows:
            cuts.append(at)
            last = at
    cuts.append(n)
    parts = [encode(rows.slice(a, b - a)) for a, b in zip(cuts[:-1], cuts[1:])]
    return _insert(con, pa.concat_tables(parts))


def _insert(con: duckdb.DuckDBPyConnection, data: pa.Table) -> int:
    """INSERT encoded vector rows; their number."""
    if data.num_rows:
        con.register("_in_vec", data)
        try:
            con.execute("INSERT INTO vectors SELECT * FROM _in_vec")
        finally:
            con.unregister("_in_vec")
    return data.num_rows


# ---- decoding ----------------------------------------------------------------------------

def blob_rows(col: pa.Array, start: int, stop: int, width: int) -> np.ndarray:
    """Rows ``start:stop`` of a binary column whose values all have ``width`` bytes as one
    (stop - start, width) uint8 view of the column's data buffer (no copy)."""
    bufs = col.buffers()
    otype = np.int64 if pa.types.is_large_binary(col.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=otype, count=len(col) + 1 + col.offset)[col.offset:]
    a, b = int(offs[start]), int(offs[stop])
    if b - a != (stop - start) * width:
        raise ValueError("vectors: blobs of unequal length in one group")
    data = np.frombuffer(bufs[2], dtype=np.uint8, count=b) if b else np.zeros(0, np.uint8)
    return data[a:b].reshape(stop - start, width)


def unpack(rows: np.ndarray, span: int) -> np.ndarray:
    """(g, ceil(span / 8)) packed bytes (little bit order) -> (g, span) uint8 0/1."""
    return np.unpackbits(rows, axis=1, count=span, bitorder="little")


def fill(con: duckdb.DuckDBPyConnection, chunk_rows: int = 4_000_000) -> int:
    """Inside the open transaction: write the vectors of every stored cell that has none,
    from the score rows, runs read in chunks of about ``chunk_rows`` score rows (a big
    store's upgrade stays in memory). Returns the number of vector rows written."""
    runs = con.execute(
        "SELECT c.run_id, sum(c.n_scores) FROM cells c WHERE NOT EXISTS (SELECT 1 FROM vectors v "
        "WHERE v.run_id = c.run_id) GROUP BY c.run_id ORDER BY c.run_id").fetchall()
    written, chunk, size = 0, [], 0

    def flush(ids: list[int]) -> int:
        got = con.execute(
            "SELECT run_id, task, metric, item, score, cluster FROM scores "
            "WHERE run_id BETWEEN ? AND ? AND list_contains(?::INTEGER[], run_id)",
            [ids[0], ids[-1], ids]).fetch_arrow_table()
        return write(con, got)

    for rid, n in runs:
        chunk.append(int(rid))
        size += int(n or 0)
        if size >= chunk_rows:
            written += flush(chunk)
            _log.debug("vectors: %d cells written (runs up to %d)", written, chunk[-1])
            chunk, size = [], 0
    if chunk:
        written += flush(chunk)
    return written


def matrices(rows: pa.Table, tms: list[tuple[str, str]], labels: bool = False
             ) -> tuple[dict[int, ItemMatrix], dict[int, np.ndarray]]:
    """The items x runs matrices of ``Store.item_matrices`` from vector rows: columns k
    (cell number: ``tms[k]``), run_id, is_binary (``cells.is_binary``), lo, span, n, bits,
    present, vals (and labs when ``labels``), ordered by (k, lo, span, bits, run_id), every
    row with a vector. Returns ({k: ItemMatrix}, {k: labels}): run ids ascending, item keys
    ascending (every key a run has), NaN where a run lacks the item, binary when every
    run's cell is, C-ordered; with ``labels`` an int32 items x runs matrix of label keys
    beside each (-1: no label, or the run lacks the item), else {}: where every run of a
    cell has the same keys, a read-only view repeating one column (``np.broadcast_to``,
    column stride 0). Runs of a cell that share (lo, span,
    bits) are decoded as one block (their blobs are one slice of the column's buffer)."""
    if rows.num_rows == 0:
        return {}, {}
    # one array per blob column (a one-chunk column as it is, not copied)
    col = {c: one_array(rows.column(c))
           for c in ("present", "vals") + (("labs",) if labels else ())}
    k = rows.column("k").to_numpy().astype(np.int64)
    run = rows.column("run_id").to_numpy().astype(np.int64)
    is_bin = rows.column("is_binary").to_numpy(zero_copy_only=False)
    lo = rows.column("lo").to_numpy().astype(np.int64)
    span = rows.column("span").to_numpy().astype(np.int64)
    n = rows.column("n").to_numpy().astype(np.int64)
    bits = rows.column("bits").to_numpy(zero_copy_only=False)
    change = np.flatnonzero((k[1:] != k[:-1]) | (lo[1:] != lo[:-1]) | (span[1:] != span[:-1])
                            | (bits[1:] != bits[:-1])) + 1
    gstart = np.concatenate([[0], change])
    gend = np.append(change, k.size)
    out: dict[int, ItemMatrix] = {}
    labs_out: dict[int, np.ndarray] = {}
    cstart = np.concatenate([[0], np.flatnonzero(k[1:] != k[:-1]) + 1])
    cend = np.append(cstart[1:], k.size)
    for a, b in zip(cstart.tolist(), cend.tolist()):
        i0, i1 = np.searchsorted(gstart, [a, b])
        groups = list(zip(gstart[i0:i1].tolist(), gend[i0:i1].tolist()))
        runs = np.sort(run[a:b])
        first = int(lo[a:b].min())
        lab = None
        if len(groups) == 1 and bool(np.all(n[a:b] == span[a:b])):
            # the usual board: every run has the same contiguous keys
            s = int(span[a])
            # items x runs in C order (the clustered intervals and the tiers add row
            # after row); 0/1 vectors converted to float in the transposing copy
            if bits[a]:
                scores = _values(col, a, b, s, True).T.astype(np.float64, order="C")
            else:
                scores = np.ascontiguousarray(_values(col, a, b, s, False).T)
            items = np.arange(first, first + s, dtype=np.int64)
            if labels:
                got_lab = _labels(col["labs"], a, b, s)
                if b - a > 1 and bool((got_lab == got_lab[:1]).all()):
                    # every run has the same labels (the usual cell): one column, a
                    # read-only view repeating it for every run (no items x runs copy)
                    lab = np.broadcast_to(got_lab[0].copy()[:, None], (s, b - a))
                else:
                    lab = np.empty((s, b - a), dtype=np.int32)
                    lab[...] = got_lab.T
        else:
            # runs with different key ranges or gaps: the items are the union of the keys
            # present (not the whole key range, which may span other tasks' keys)
            decoded = []
            for g0, g1 in groups:
                s = int(span[g0])
                pres = unpack(blob_rows(col["present"], g0, g1, (s + 7) // 8), s).view(bool)
                used = np.flatnonzero(pres.any(axis=0))
                decoded.append((g0, g1, s, pres, used))
            items = np.unique(np.concatenate([int(lo[g0]) + used
                                              for g0, _, _, _, used in decoded]))
            scores = np.full((items.size, b - a), np.nan)
            lab = np.full((items.size, b - a), -1, dtype=np.int32) if labels else None
            for g0, g1, s, pres, used in decoded:
                rows_at = np.searchsorted(items, int(lo[g0]) + used)[:, None]
                cols_at = np.searchsorted(runs, run[g0:g1])[None, :]
                vals = _values(col, g0, g1, s, bool(bits[g0]))[:, used].astype(np.float64)
                vals[~pres[:, used]] = np.nan
                scores[rows_at, cols_at] = vals.T
                if labels:
                    lab[rows_at, cols_at] = _labels(col["labs"], g0, g1, s)[:, used].T
        t, m = tms[int(k[a])]
        out[int(k[a])] = ItemMatrix(t, m, runs, items, scores, bool(np.all(is_bin[a:b])))
        if labels:
            labs_out[int(k[a])] = lab
    return out, labs_out


def _values(col: dict[str, pa.Array], a: int, b: int, span: int, bits: bool) -> np.ndarray:
    """Rows a:b's ``vals`` as (b - a, span): uint8 0/1 for bit vectors, float64 otherwise."""
    if bits:
        return unpack(blob_rows(col["vals"], a, b, (span + 7) // 8), span)
    return blob_rows(col["vals"], a, b, 8 * span).view("<f8")


def _labels(col: pa.Array, a: int, b: int, span: int) -> np.ndarray:
    """Rows a:b's ``labs`` as (b - a, span) int32, -1 for a row without labels (NULL)."""
    part = col.slice(a, b - a)
    if part.null_count == 0:
        return blob_rows(col, a, b, 4 * span).view("<i4")
    out = np.full((b - a, span), -1, dtype=np.int32)
    for i in np.flatnonzero(part.is_valid().to_numpy(zero_copy_only=False)).tolist():
        out[i] = np.frombuffer(part[i].as_py(), dtype="<i4")
    return out


def decode(lo: int, span: int, bits: bool, present: bytes, vals: bytes, labs: bytes | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One vector row -> (item keys present ascending, their means, their label keys (-1:
    none)): the encoding's definition in reverse (tests, the clustered read)."""
    pres = unpack(np.frombuffer(present, dtype=np.uint8)[None, :], span)[0].view(bool)
    if bits:
        v = unpack(np.frombuffer(vals, dtype=np.uint8)[None, :], span)[0].astype(np.float64)
    else:
        v = np.frombuffer(vals, dtype="<f8").astype(np.float64)
    lab = (np.full(span, -1, dtype=np.int64) if labs is None
           else np.frombuffer(labs, dtype="<i4").astype(np.int64))
    where = np.flatnonzero(pres)
    return where.astype(np.int64) + int(lo), v[where], lab[where]
