"""Server-side time of each dashboard page's main computation on a large store.

Builds a store of 50 runs x 20 tasks x 2,000 items (2,000,000 item scores, 0/1, clustered in
groups of 20 items) through ``Store.ingest`` of hand-made ``ParsedRun`` objects, plus one small
side run (400 items x 5 answers, two metric variants) for the repeats page. Then times, for
every page, the evalcore calls that page makes on one interaction (uncached: every
per-snapshot memo of the Store object is dropped before each call, ``Store.forget``, so each
call reads what a first view after a write reads; the dashboard additionally caches results
per store version, so a repeated view costs nothing), and prints
the median over ``--repeat`` runs. Target: under 300 ms per interaction. The leaderboard is
timed for every interval method, on all tasks and on one task; the Items page's view (suspect
labels and re-scoring) and each tab of the Noise page are timed too. BLAS is pinned to one thread
as in the app (``evalcore.threads``).

Run:  python bench/bench_pages.py [--runs 50 --tasks 20 --items 2000 --repeat 5 --store PATH
                                   --only TEXT]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evalcore import analysis, stats  # noqa: E402
from evalcore.model import (SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS, TEXT_COLUMNS,  # noqa: E402
                            ParsedRun, SourceFile)
from evalcore.store import Store  # noqa: E402
from evalcore.threads import pin_blas_threads  # noqa: E402

TARGET_MS = 300.0


def make_run(name: str, task_scores: dict[tuple[str, str], np.ndarray], *, cluster_size: int = 20,
             seed_text: str = "") -> ParsedRun:
    """One ParsedRun from {(task, metric): items x answers array} with ids, hashes, clusters
    and short texts (so the drill-down query has something to fetch)."""
    frames, texts = [], []
    for (task, metric), arr in task_scores.items():
        arr = np.atleast_2d(arr.T).T if arr.ndim == 1 else arr
        n, k = arr.shape
        ids = np.repeat(np.arange(n), k).astype(str)
        frames.append(pd.DataFrame({
            "task": task, "metric": metric, "item_id": ids,
            "answer_idx": np.tile(np.arange(k), n), "score": arr.reshape(-1).astype(float),
            "cluster": (np.repeat(np.arange(n), k) // cluster_size).astype(str),
            "item_hash": np.char.add("h", ids), "prompt_hash": np.char.add("p", ids)}))
        if metric == "acc" or len(texts) == 0:
            item = np.arange(n).astype(str)
            texts.append(pd.DataFrame({"task": task, "item_id": item, "answer_idx": 0,
                                       "prompt": np.char.add("Question ", item),
                                       "target": "A", "response": name}))
    scores = pd.concat(frames, ignore_index=True)[list(SCORE_COLUMNS)]
    text = pd.concat(texts, ignore_index=True).drop_duplicates(["task", "item_id", "answer_idx"])
    task_names = sorted({t for t, _ in task_scores})
    digest = hashlib.sha256(f"{name}{seed_text}".encode()).hexdigest()
    return ParsedRun(
        name=name, model=name, source_format="tidy", harness=None, harness_version=None,
        protocol={"bench": True}, files=[SourceFile(f"{name}.csv", digest, len(scores), "tidy_csv")],
        scores=scores, summaries=pd.DataFrame(columns=list(SUMMARY_COLUMNS)),
        texts=text[list(TEXT_COLUMNS)],
        tasks=pd.DataFrame([{"task": t, "n_choices": 4, "protocol": {}} for t in task_names],
                           columns=list(TASK_COLUMNS)))


def build_store(path: Path, n_runs: int, n_tasks: int, n_items: int, seed: int = 0) -> Store:
    """The benchmark store: item-response simulation, shared item difficulties per task."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    difficulty = rng.normal(0.0, 1.2, size=(n_tasks, n_items))
    ability = np.linspace(-0.5, 2.0, n_runs)
    t0 = time.perf_counter()
    batch: list[ParsedRun] = []
    for r in range(n_runs):
        p = 0.25 + 0.75 / (1 + np.exp(-(ability[r] - difficulty)))
        correct = (rng.random((n_tasks, n_items)) < p).astype(float)
        batch.append(make_run(f"model-{r:02d}", {(f"task_{t:02d}", "acc"): correct[t]
                                                  for t in range(n_tasks)}))
        if len(batch) == 10:
            store.ingest(batch)
            batch = []
    if batch:
        store.ingest(batch)
    side = (rng.random((400, 5)) < 0.6).astype(float)
    strict = (rng.random(400) < 0.5).astype(float)
    store.ingest([make_run("sampler", {("task_00", "acc"): side,
                                       ("task_01", "strict"): strict,
                                       ("task_01", "loose"): np.maximum(strict, rng.random(400) < 0.2)})])
    print(f"built {path} in {time.perf_counter() - t0:.1f} s")
    return store


def timed(fn: Callable[[], object], repeat: int, store: Store | None = None
          ) -> tuple[float, float]:
    """(median ms, min ms) over ``repeat`` calls after one warm-up call. With ``store``,
    every per-snapshot memo is dropped before each call (``Store.forget``): each call
    reads what a first view after a write reads."""
    if store is not None:
        store.forget()
    fn()
    times = []
    for _ in range(repeat):
        if store is not None:
            store.forget()
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), min(times)


def interactions(store: Store) -> dict[str, Callable[[], object]]:
    """What each page computes on one interaction (the calls in pages/*.py)."""
    names = sorted(n for n in store.runs()["name"] if n.startswith("model-"))  # last two
    a, b = names[-2], names[-1]

    # pages/leaderboard.py: the board with tiers (one call, the chosen method), then rank
    # intervals for the task whose tiers are shown (analysis.rank_intervals with the metric,
    # runs and direction the board returned: the board is not recomputed)
    def board(method: str, task: str | None = None):
        store.version(); store.runs(); store.tasks()
        return analysis.leaderboard(store, task=task, method=method, include_ranks=False)

    def ranks_for(lb, task: str):
        cells = lb.cells[(lb.cells["task"] == task) & lb.cells["has_items"].astype(bool)]
        return analysis.rank_intervals(store, task, lb.metrics_by_task[task],
                                       tuple(int(r) for r in cells["run_id"]),
                                       confidence=lb.confidence)

    shown = board("wilson")

    def leaderboard_ranks():
        return ranks_for(shown, "task_03")

    def leaderboard_task():
        return ranks_for(board("wilson", "task_03"), "task_03")

    def compare_all():
        store.version(); store.runs(); store.tasks([49, 50])
        cmp = analysis.compare(store, a, b)
        row = cmp.per_task.iloc[0]
        analysis.discordant_items(store, a, b, str(row.task), str(row.metric), cell="b")
        return cmp

    def compare_task():
        store.version(); store.runs(); store.tasks([49, 50])
        cmp = analysis.compare(store, a, b, task="task_00")
        analysis.discordant_items(store, a, b, "task_00", "acc", cell="c")
        return cmp

    def repeats_page():
        store.version(); store.runs(); store.tasks()
        analysis.repeats(store, "sampler", "task_00", metric="acc")
        analysis.rerun_noise(store, a, b, "task_00")
        analysis.clusters(store, a, "task_00")
        return analysis.metric_variants(store, "sampler", "task_01", "strict", "loose")

    def planner_typed():
        grid = np.unique(np.round(np.geomspace(10, 100_000, 90)).astype(int))
        [stats.half_width(int(n), 0.7, "wilson", 0.95) for n in grid]
        [stats.half_width(int(n), 0.7, "clt", 0.95) for n in grid]
        [stats.minimum_detectable_effect(int(n), disagreement=0.2) for n in grid]
        stats.required_items(0.02, disagreement=0.2)
        return stats.preregistration_markdown(comparison="B vs A", n=4000, disagreement=0.2)

    def planner_pair():
        return analysis.plan_from_pair(store, a, b, "task_07")

    def upload_tables():
        store.runs()
        return analysis.overview(store)

    # pages/items.py: one view computes its first two tabs (suspect labels, then re-scoring
    # with the suspects as the sensitivity range); the contamination tab needs a corpus
    def items_page():
        from evalcore.analysis.items import item_choices
        store.version(); store.runs(); store.tasks()
        with store.one_version():          # as ui.common.compute pins each call
            report = analysis.suspect_labels(store, "task_00", m=3)
        item_choices(store, "task_00", "acc", int(store.runs()["run_id"].iloc[0]))
        suspects = tuple(report.suspects["item_id"].astype(str)) or None
        with store.one_version():
            return analysis.rescore(store, "task_00", metric="acc", exclude=(),
                                    suspects=suspects)

    # pages/noise.py: one section per tab, computed when its tab is opened
    def noise_tab(fn: str, *args):
        def call():
            store.version(); store.runs()
            if fn == "split_report":
                store.tasks()
            with store.one_version():      # as ui.common.compute pins each call
                return getattr(analysis, fn)(store, *args)
        return call

    methods = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson", "bayes": "Bayes",
               "clt": "CLT", "bootstrap": "bootstrap", "clustered": "clustered"}
    out: dict[str, Callable[[], object]] = {}
    for m, label in methods.items():
        out[f"Leaderboard: all tasks ({label}, tiers, macro average)"] = \
            (lambda m=m: board(m))
    for m, label in methods.items():
        out[f"Leaderboard: one task ({label}, tiers)"] = (lambda m=m: board(m, "task_03"))
    return out | {
        "Leaderboard: rank intervals for the task shown": leaderboard_ranks,
        "Leaderboard: one task (Wilson, tiers, rank intervals)": leaderboard_task,
        "Compare: all tasks + discordant list": compare_all,
        "Compare: one task + discordant list": compare_task,
        "Repeats & clusters: all four sections": repeats_page,
        "Planner: typed assumptions (curves + sheet)": planner_typed,
        "Planner: estimate from a pair of runs": planner_pair,
        "Upload & runs: runs/tasks/audit tables": upload_tables,
        "Items: suspect labels + re-scoring": items_page,
        "Noise: protocols tab": noise_tab("protocol_sensitivity"),
        "Noise: seeds tab": noise_tab("seed_report"),
        "Noise: checkpoints tab": noise_tab("checkpoint_report"),
        "Noise: splits tab": noise_tab("split_report", a, "task_00"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=None,
                    help="time only the interactions whose label contains this text")
    ap.add_argument("--store", type=Path, default=None,
                    help="reuse/create the store here (default: a temporary folder)")
    args = ap.parse_args(argv)
    pin_blas_threads()   # as the app and the CLI do (EVALBARS_BLAS_THREADS overrides)

    tmp = None
    if args.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="evalbars-bench-")
        path = Path(tmp.name) / "bench"
    else:
        path = args.store
    store = Store(path) if (Path(path) / "catalog.sqlite").exists() else build_store(path, args.runs, args.tasks, args.items)
    runs = store.runs()
    print(f"store: {len(runs)} runs, {int(runs['n_scores'].sum()):,} item scores "
          f"({args.runs} x {args.tasks} x {args.items:,} + side run)")
    print(f"{'interaction':58s} {'median ms':>10s} {'min ms':>8s}  target {TARGET_MS:.0f} ms")
    worst = 0.0
    for label, fn in interactions(store).items():
        if args.only and args.only.lower() not in label.lower():
            continue
        med, best = timed(fn, args.repeat, store)
        worst = max(worst, med)
        flag = "ok" if med < TARGET_MS else "SLOW"
        print(f"{label:58s} {med:10.1f} {best:8.1f}  {flag}")
    print(f"slowest median: {worst:.1f} ms ({'within' if worst < TARGET_MS else 'over'} target)")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
