"""Memory of a tidy table: read in chunks into Arrow text and numpy numbers, never a Python
dict per row (a 150 MB JSONL took 1.7 GB that way; now about 0.8 GB with the store write).
Measured in a fresh process: the peak resident memory that reading adds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import resource, sys
import evalcore.ingest, evalcore.store, pandas, pyarrow, numpy
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from evalcore.ingest import read_paths
batch = read_paths([sys.argv[1]])
assert not batch.problems, batch.problems
print(len(batch.runs), sum(len(r.scores) for r in batch.runs),
      (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def test_a_22_mb_jsonl_table_adds_less_than_130_mb(tmp_path: Path) -> None:
    """300,000 rows (22 MB): about 75 MB are added (it was about 235 MB: 5 times less)."""
    path = tmp_path / "big.jsonl"
    with path.open("w") as fh:
        for m in range(10):
            for i in range(30_000):
                fh.write(f'{{"model": "model-{m:02d}", "task": "task_{i % 50:02d}", '
                         f'"item_id": "q{i:06d}", "score": {(i * 7 + m) % 2}}}\n')
    assert path.stat().st_size > 20 << 20
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    runs, rows, added_mb = map(int, proc.stdout.split())
    assert (runs, rows) == (10, 300_000)
    assert added_mb < 130, added_mb


def test_the_store_write_of_a_big_tidy_table_holds_one_slice_not_every_row(tmp_path: Path,
                                                                            monkeypatch) -> None:
    """Store.ingest writes a big call in slices of whole tasks (store.batch.SLICE_ROWS): the
    numpy work arrays (keys, sort, vectors; tracemalloc sees numpy, not Arrow or DuckDB)
    hold one slice. 600,000 rows in slices of 100,000: measured 16 MB at peak, against 69 MB
    in one write (121 bytes a row); 4x the rows of 150,000 add 2 MB, against 50 MB."""
    import tracemalloc

    sys.path.insert(0, str(ROOT / "bench"))
    import synth_tidy

    from evalcore.ingest import read_paths
    from evalcore.store import Store
    from evalcore.store import batch as store_batch

    monkeypatch.setattr(store_batch, "SLICE_ROWS", 100_000, raising=False)
    peaks = {}
    for items in (300, 1_200):
        path = tmp_path / f"t{items}.csv"
        rows = synth_tidy.write(path, "short", models=10, tasks=50, items=items)
        runs = read_paths([path]).runs
        store = Store(tmp_path / f"s{items}")
        tracemalloc.start()
        try:
            store.ingest(runs)
            peaks[rows] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        store.close()
    small, big = sorted(peaks)
    assert (small, big) == (150_000, 600_000)
    assert peaks[big] < 40 * big, peaks                      # 121 bytes a row in one write
    assert peaks[big] - peaks[small] < 24 * (big - small), peaks
