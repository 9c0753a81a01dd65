"""The stress benchmark (bench/bench_stress.py) at a small size, on both catalogs: CLI
writers, a ``maintain --keep-days 0`` loop and readers in separate processes. Every read
sees whole committed runs only (and every run whose ingest had returned), no read fails,
every valid ingest exits 0 (or 4 after its lock timeout), maintain exits 0, and at the end
every committed run is in the store once, whole."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_stress  # noqa: E402

sys.path.remove(str(ROOT / "bench"))


def test_writers_maintain_and_readers_at_once(store_location, tmp_path):
    res = bench_stress.run_stress(store_location.location, store_location.data_path,
                                  tmp_path / "work", writers=2, runs=3, readers=2, reads=40,
                                  items=(20, 60), lock_timeout=120, seed=7, timeout=600)
    shown = "\n".join((res.anomalies + res.bad_exits + res.final_problems)[:10])
    assert res.anomalies == [], shown
    assert res.bad_exits == [], shown
    assert res.final_problems == [], shown
    assert res.reads >= 40 and sum(res.maintain_codes.values()) >= 1
    assert res.ingest_codes[0] + res.ingest_codes[4] == 6 and res.runs_committed >= 1
