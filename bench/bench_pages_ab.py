"""Before/after timing of leaderboard interactions: two code trees, same store, same minutes.

On a shared machine absolute times swing with other processes' load; timing the same
interaction with the old and the new code back to back (each in its own process, alternating)
shows the ratio that load does not decide. Each line: best of ``--repeat`` calls after a
warm-up call. Cases: ``ranks`` (the leaderboard page's rank intervals for one task: before,
a second ``leaderboard(method="clt", rank_tasks=[task])``; after, ``analysis.rank_intervals``)
and ``METHOD:TASK`` (``leaderboard(method=METHOD, task=TASK or all, include_ranks=False)``).

Run (the store from ``bench/bench_pages.py --store PATH``)::

    git archive <old commit> | tar -x -C /tmp/before
    python bench/bench_pages_ab.py /tmp/before . --store PATH ranks bootstrap:task_03 clustered: wilson:
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def child(root: str, store_path: str, case: str, repeat: int) -> float:
    """Best ms of one case with the code tree at ``root`` (run in a child process)."""
    sys.path.insert(0, str(Path(root).resolve()))
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits
    threadpool_limits(1, user_api="blas")
    from evalcore import analysis
    from evalcore.store import Store
    store = Store(Path(store_path))
    if case == "ranks":
        lb = analysis.leaderboard(store, method="wilson", include_ranks=False, include_tiers=False)
        task = "task_03"

        def fn():
            if hasattr(analysis, "rank_intervals"):
                c = lb.cells[(lb.cells["task"] == task) & lb.cells["has_items"].astype(bool)]
                return analysis.rank_intervals(store, task, lb.metrics_by_task[task],
                                               tuple(int(r) for r in c["run_id"]))
            return analysis.leaderboard(store, method="clt", include_tiers=False,
                                        include_audit=False, rank_tasks=[task])
    else:
        method, task = case.split(":")

        def fn():
            return analysis.leaderboard(store, method=method, task=task or None,
                                        include_ranks=False)
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--store", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(child(args.child[0], args.store, args.child[1], args.repeat))
        return 0
    print(f"{'case':24s} {'before ms':>10s} {'after ms':>10s} {'ratio':>7s}")
    for case in args.cases:
        ms = []
        for root in (args.before, args.after):
            out = subprocess.run([sys.executable, __file__, args.before, args.after, case,
                                  "--store", args.store, "--repeat", str(args.repeat),
                                  "--child", root, case], capture_output=True, text=True,
                                 check=True)
            ms.append(float(out.stdout.strip().splitlines()[-1]))
        print(f"{case:24s} {ms[0]:10.0f} {ms[1]:10.0f} {ms[0] / ms[1]:6.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
