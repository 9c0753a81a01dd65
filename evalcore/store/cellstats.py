"""Validation statistics of one incoming run, computed on integer codes in numpy: the cell
statistics the store keeps (``cells``) and the duplicate counts ``Store.ingest`` checks.

Before, these were DuckDB ``GROUP BY task, metric, item_id`` queries on the strings of an
in-memory copy of the run; hashing every row's strings there cost about a second and
300 MB at 2,000,000 scores. Here every string column is dictionary-encoded once
(``keys.encode``: a chunk shared between columns, as the lm_eval parser shares a doc's id
between its metrics' score rows and its text row, is hashed once) and grouping is counting
on integer keys.

Cell statistics, per (task, metric), rows in (task, metric) byte order (what ``ORDER BY
task, metric`` gives), one row per item = distinct ``item_id`` of the cell:

- ``n_items``: items; ``n_scores``: score rows; ``k_max``: most rows of one item;
- ``sum`` / ``sumsq``: sum of the items' means (mean = sum of its scores / its rows) and of
  their squares; the sums run over the items in ``item_id`` code order (the order of first
  appearance in the run), so a non-0/1 cell's sum can differ in the last bits from a
  differently ordered sum (DuckDB's parallel hash aggregate had no fixed order either);
  0/1 scores sum exactly;
- ``is_binary``: every score of the cell is 0 or 1; ``has_cluster``: some row has a cluster.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from evalcore.store import keys

CELL_SCHEMA = pa.schema([("task", pa.string()), ("metric", pa.string()), ("n_items", pa.int64()),
                         ("n_scores", pa.int64()), ("k_max", pa.int32()), ("sum", pa.float64()),
                         ("sumsq", pa.float64()), ("is_binary", pa.bool_()),
                         ("has_cluster", pa.bool_())])


def _ranked(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """(each row's rank of its value in byte order, the distinct values in byte order,
    the row codes into the dictionary)."""
    (codes,), values = keys.encode([column])
    order = keys.byte_order(values)
    return keys.rank_of(order)[codes], values.take(pa.array(order)), codes


def cell_stats(scores: pa.Table, item_codes: np.ndarray, n_codes: int) -> tuple[pa.Table, int]:
    """(the cells table of ``scores`` (columns and order as ``CELL_SCHEMA``), k_max).

    ``scores``: the canonical Arrow scores (task, metric, item_id, answer_idx, score,
    cluster, ...; no nulls in task, metric, item_id, finite scores); ``item_codes``: each
    row's ``item_id`` code (``keys.encode``), ``n_codes`` the dictionary's size."""
    if scores.num_rows == 0:
        return CELL_SCHEMA.empty_table(), 0
    t_rank, tasks, _ = _ranked(scores.column("task"))
    m_rank, metrics, _ = _ranked(scores.column("metric"))
    n_m = len(metrics)
    cell = t_rank * n_m + m_rank                          # (task, metric) byte order
    n_i = max(n_codes, 1)
    item_group, g_index = keys.groups(cell * n_i + item_codes.astype(np.int64),
                                      len(tasks) * n_m * n_i)
    score = np.asarray(scores.column("score").to_numpy(), dtype=np.float64)
    k = np.bincount(g_index, minlength=item_group.size)
    mean = np.bincount(g_index, weights=score, minlength=item_group.size) / k
    g_cell = item_group // n_i                            # ascending: cells are contiguous
    first = np.ones(g_cell.size, dtype=bool)
    first[1:] = g_cell[1:] != g_cell[:-1]
    starts = np.flatnonzero(first)
    cells = g_cell[starts]
    row_cell = np.searchsorted(cells, cell)
    not01 = (score != 0) & (score != 1)
    clustered = scores.column("cluster").is_valid().to_numpy(zero_copy_only=False)
    n_cells = cells.size
    out = pa.table({
        "task": tasks.take(pa.array(cells // n_m)).cast(pa.string()),
        "metric": metrics.take(pa.array(cells % n_m)).cast(pa.string()),
        "n_items": pa.array(np.diff(np.append(starts, g_cell.size)).astype(np.int64)),
        "n_scores": pa.array(np.add.reduceat(k, starts).astype(np.int64)),
        "k_max": pa.array(np.maximum.reduceat(k, starts).astype(np.int32)),
        "sum": pa.array(np.add.reduceat(mean, starts)),
        "sumsq": pa.array(np.add.reduceat(mean * mean, starts)),
        "is_binary": pa.array(np.bincount(row_cell[not01], minlength=n_cells) == 0),
        "has_cluster": pa.array(np.bincount(row_cell[clustered], minlength=n_cells) > 0),
    }, schema=CELL_SCHEMA)
    return out, int(k.max())


def duplicate_texts(texts: pa.Table, item_codes: np.ndarray, n_codes: int) -> int | None:
    """How many text rows repeat an earlier row's (task, item_id, answer_idx): rows minus
    distinct keys. None when the key range is too wide for one int64 (the caller counts
    another way). ``item_codes`` / ``n_codes`` as for ``cell_stats``."""
    n = texts.num_rows
    if n < 2:
        return 0
    (t,), tasks = keys.encode([texts.column("task")])
    answer = np.asarray(texts.column("answer_idx").to_numpy(), dtype=np.int64)
    a_span = int(answer.max()) + 1 if answer.size else 1
    span = len(tasks) * max(n_codes, 1) * a_span
    if answer.min() < 0 or span >= 2 ** 62:
        return None
    key = (t.astype(np.int64) * max(n_codes, 1) + item_codes) * a_span + answer
    uniq, _ = keys.groups(key, span)
    return int(n - uniq.size)
