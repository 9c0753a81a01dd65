"""A few hundred cases of the fuzzing benchmark (bench/bench_fuzz.py) on every test run:
mutated real fixtures (truncations, byte flips, type swaps, deep nesting, huge lines, zip
tricks, hostile names) through the ingest path and the store. Every case is either parsed
and stored or refused with an IngestError/StoreError; none raises anything else, and no
refusal changes the store file."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_fuzz  # noqa: E402

sys.path.remove(str(ROOT / "bench"))


def test_fuzz_cases_are_accepted_or_refused_cleanly(tmp_path, fixtures_dir, monkeypatch):
    monkeypatch.setattr(bench_fuzz, "BOMB_MB", (8, 64))     # the 512 MB bomb takes ~25 s to make
    res = bench_fuzz.run_cases(210, seed=20261130, workdir=tmp_path, max_seed_bytes=150_000,
                               store_every=4)
    assert res.cases == 210
    assert set(res.by_mutation) == set(bench_fuzz.MUTATIONS)
    assert res.uncaught == [], "\n\n".join(res.uncaught[:3])
    assert res.partial_writes == []
    assert res.accepted + res.refused + len(res.uncaught) == res.cases
    assert res.refused > 40 and res.accepted > 20 and res.store_writes > 10
    # refusals are messages that name a file and say what was expected
    assert all(": expected " in r or "store:" in r for r in res.refusals), res.refusals[:5]


def test_mutations_are_seeded():
    seeds = bench_fuzz.load_seeds()
    small = [g for g in seeds if sum(len(d) for _n, d in g) < 400_000]
    import random

    for how in bench_fuzz.MUTATIONS:
        a = bench_fuzz.mutate(small[3], random.Random(f"7:{how}"), how)
        b = bench_fuzz.mutate(small[3], random.Random(f"7:{how}"), how)
        assert a == b
