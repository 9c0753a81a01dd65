"""A synthetic store shaped like a lab's leaderboard: many runs, tens of tasks.

Runs come as checkpoint series and seeds of a few model families (names such as
``lab/falcon-1b-mix1-step4000-seed2``), so the leaderboard's series filter
(``analysis.run_groups``) has something to group; the last checkpoint of each series is
tagged ``final`` and every third run is stored as an lm_eval run (the others as tidy
tables), so the tag and harness filters have something to filter. Item scores are 0/1 from
an item-response simulation with shared item difficulties per task; runs carry no texts.

Run:  python bench/board_store.py PATH [--runs 500 --tasks 60 --items 60]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from evalcore.model import (SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS,  # noqa: E402
                            TEXT_COLUMNS, ParsedRun, SourceFile)
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


def board_run(name: str, tasks: list[str], correct: np.ndarray, *, lm_eval: bool = False
              ) -> ParsedRun:
    """One ParsedRun of 0/1 scores (``correct``: tasks x items) in one frame, clusters of 20
    items, no texts (a store of hundreds of runs is built in seconds, not minutes)."""
    n_tasks, n_items = correct.shape
    item = np.tile(np.arange(n_items), n_tasks)
    ids = item.astype(str)
    scores = pd.DataFrame({
        "task": np.repeat(np.asarray(tasks, dtype=object), n_items), "metric": "acc",
        "item_id": ids, "answer_idx": 0, "score": correct.reshape(-1).astype(float),
        "cluster": (item // 20).astype(str), "item_hash": np.char.add("h", ids),
        "prompt_hash": np.char.add("p", ids)})[list(SCORE_COLUMNS)]
    digest = hashlib.sha256(name.encode()).hexdigest()
    return ParsedRun(
        name=name, model=name, source_format="lm_eval" if lm_eval else "tidy",
        harness="lm-evaluation-harness" if lm_eval else None, harness_version=None,
        protocol={"bench": True}, files=[SourceFile(f"{name}.csv", digest, len(scores),
                                                    "tidy_csv")],
        scores=scores, summaries=pd.DataFrame(columns=list(SUMMARY_COLUMNS)),
        texts=pd.DataFrame(columns=list(TEXT_COLUMNS)),
        tasks=pd.DataFrame([{"task": t, "n_choices": 4, "protocol": {}} for t in tasks],
                           columns=list(TASK_COLUMNS)))


def build_board_store(path: Path, n_runs: int = 500, n_tasks: int = 60, n_items: int = 60,
                      seed: int = 0, verbose: bool = True) -> Store:
    """The store at ``path`` (created; it must not exist yet) with ``n_runs`` runs of
    ``n_tasks`` tasks of ``n_items`` 0/1 items each; the last checkpoint of every series is
    tagged ``final``, every third run is an lm_eval run (the others tidy tables)."""
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
        batch.append(board_run(name, tasks, correct, lm_eval=r % 3 == 0))
        if len(batch) == 50:
            store.ingest(batch)
            batch = []
    if batch:
        store.ingest(batch)
    runs = store.runs()
    for rid, name in zip(runs["run_id"].tolist(), runs["name"].tolist()):
        if f"-step{STEPS_PER_SERIES * 1000}-" in str(name):
            store.set_tags(int(rid), ["final"])
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
