"""A synthetic store shaped like a lab's leaderboard: many runs, tens of tasks.

Runs come as checkpoint series and seeds of a few model families (names such as
``lab/falcon-3-mix1-step4000-seed2``), so the leaderboard's group filter (model series,
``analysis.run_groups``) has something to group; half of the runs are tagged ``sweep-a``,
the other half ``sweep-b``, and every third run is stored as an lm_eval run (the others as
tidy tables), so the tag and harness filters have something to filter. Item scores are 0/1
from an item-response simulation with shared item difficulties per task, through
``bench_pages.make_run`` (the page benchmark's builder).

Run:  python bench/board_store.py PATH [--runs 500 --tasks 60 --items 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_pages import make_run  # noqa: E402
from evalcore.store import Store  # noqa: E402

FAMILIES = ("falcon", "heron", "ibis", "kestrel", "osprey")
STEPS_PER_SERIES = 10


def run_names(n_runs: int) -> list[str]:
    """``lab/<family>-<size>-mix<m>-step<k>-seed<s>`` for ``n_runs`` runs: series of
    ``STEPS_PER_SERIES`` checkpoints, then seeds, families and mixes."""
    names = []
    for i in range(n_runs):
        step = (i % STEPS_PER_SERIES + 1) * 1000
        series = i // STEPS_PER_SERIES
        seed = series % 2 + 1
        mix = series // 2 % 5 + 1
        family = FAMILIES[series // 10 % len(FAMILIES)]
        size = series // 50 + 1
        names.append(f"lab/{family}-{size}b-mix{mix}-step{step}-seed{seed}")
    return names


def task_names(n_tasks: int) -> list[str]:
    """Task names of a few realistic lengths (a long HELM-style one every tenth task)."""
    out = []
    for t in range(n_tasks):
        if t % 10 == 9:
            out.append(f"helm_bbq:subject=all,method=multiple_choice_joint,split={t:02d}")
        else:
            out.append(f"task_{t:02d}")
    return out


def build_board_store(path: Path, n_runs: int = 500, n_tasks: int = 60, n_items: int = 60,
                      seed: int = 0, verbose: bool = True) -> Store:
    """The store at ``path`` (created; it must not exist yet) with ``n_runs`` runs of
    ``n_tasks`` tasks of ``n_items`` 0/1 items each."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    names, tasks = run_names(n_runs), task_names(n_tasks)
    difficulty = rng.normal(0.0, 1.2, size=(n_tasks, n_items))
    ability = rng.normal(0.8, 0.6, size=n_runs)
    t0 = time.perf_counter()
    batch = []
    for r, name in enumerate(names):
        p = 0.25 + 0.75 / (1 + np.exp(-(ability[r] - difficulty)))
        correct = (rng.random((n_tasks, n_items)) < p).astype(float)
        run = make_run(name, {(t, "acc"): correct[i] for i, t in enumerate(tasks)})
        if r % 3 == 0:
            run = dataclasses.replace(run, source_format="lm_eval",
                                      harness="lm-evaluation-harness")
        batch.append(run)
        if len(batch) == 25:
            store.ingest(batch)
            batch = []
    if batch:
        store.ingest(batch)
    runs = store.runs()
    for i, rid in enumerate(runs["run_id"].tolist()):
        store.set_tags(int(rid), ["sweep-a" if i % 2 == 0 else "sweep-b"])
    if verbose:
        print(f"built {path}: {n_runs} runs x {n_tasks} tasks x {n_items} items in "
              f"{time.perf_counter() - t0:.1f} s")
    return store


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--items", type=int, default=60)
    args = ap.parse_args(argv)
    build_board_store(args.path, args.runs, args.tasks, args.items).close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
