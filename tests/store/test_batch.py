"""store/batch.py helpers: ``_take_rows`` (the texts INSERT's sorted slices) gives exactly
``Table.take`` for any chunk layout, by slices or chunk by chunk; ``_lexsort`` gives exactly
``np.lexsort`` (ties in row order), packed or not."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from evalcore.store.batch import _lexsort, _take_chunked, _take_rows


def _chunked(values: list, sizes: list[int]) -> pa.ChunkedArray:
    arr = pa.array(values, pa.large_string())
    bounds = np.cumsum([0, *sizes])
    return pa.chunked_array([arr.slice(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:])],
                            pa.large_string())


@pytest.mark.parametrize("seed", range(12))
def test_take_rows_is_table_take_for_any_chunks_and_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(0, 300, size=int(rng.integers(1, 7)))]
    sizes[0] += 1   # at least one row
    n = sum(sizes)
    values = [None if rng.random() < 0.1 else f"text {i} " + "x" * int(rng.integers(0, 40))
              for i in range(n)]
    table = pa.table({"prompt": _chunked(values, sizes), "target": _chunked(values[::-1], sizes)})
    flat = pa.table({"prompt": pa.array(values, pa.large_string()),
                     "target": pa.array(values[::-1], pa.large_string())})
    for rows in (rng.integers(0, n, size=int(rng.integers(1, 400))),      # many runs: by chunk
                 np.arange(n)[n // 3:],                                      # one run: a slice
                 np.concatenate([np.arange(0, min(5, n)), np.arange(n // 2, n)])):
        got = _take_rows(table, rows)
        assert got.to_pydict() == flat.take(pa.array(rows)).to_pydict()


def test_take_chunked_keeps_the_order_of_rows_across_chunks() -> None:
    col = _chunked(["a", "b", "c", "d", "e", "f"], [2, 1, 3])
    rows = np.array([5, 0, 2, 2, 4, 1, 3])
    out = _take_chunked(col, rows)
    assert isinstance(out, pa.Array) and out.to_pylist() == ["f", "a", "c", "c", "e", "b", "d"]
    assert _take_chunked(col, np.array([], dtype=np.int64)).to_pylist() == []


@pytest.mark.parametrize("seed", range(8))
def test_lexsort_is_numpys_lexsort_with_ties_in_row_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    keys = tuple(rng.integers(int(rng.integers(-9, 3)), int(rng.integers(3, 40)), size=n)
                 .astype(np.int32 if k % 2 else np.int64) for k in range(int(rng.integers(1, 6))))
    assert np.array_equal(_lexsort(keys), np.lexsort(keys))   # few distinct values: many ties


def test_lexsort_falls_back_when_the_keys_do_not_fit_64_bits() -> None:
    rng = np.random.default_rng(1)
    keys = tuple(rng.integers(-2 ** 40, 2 ** 40, size=500) for _ in range(3))
    assert np.array_equal(_lexsort(keys), np.lexsort(keys))
    assert _lexsort((np.array([7]),)).tolist() == [0]
