"""Benchmark: vectorised clustered paired bootstrap vs a per-resample Python loop.

Workload: a paired comparison of two runs on 10,000 items in 500 clusters (reading-passage
style: items of a cluster share a difficulty), 10,000 bootstrap resamples of whole clusters.

- vectorised: ``evalcore.stats.bootstrap_interval(np.c_[a, b], mean_difference,
  clusters=..., n_resamples=10_000)`` (index matrices, chunked; no loop per resample); the
  median of ``--repeats`` timed calls after a first call (whose time is printed too).
- loop: what lm-evaluation-harness's ``bootstrap_stderr`` does (``rnd.choices(xs, k=len(xs))``
  and the metric, once per resample, in Python), here drawing whole clusters and averaging
  the per-item differences of the drawn clusters.

The loop runs ``--loop-resamples`` resamples (default: all 10,000; a smaller number is scaled
linearly to --resamples, as the time per resample is constant, and the output says so).
Both versions report the median of ``--repeats`` timings (the ratio is of the medians, both
measured in the same run), with the fastest beside it (the least noisy on a shared machine).
Agreement: the two bootstrap SEs and percentile bounds are compared with their Monte Carlo
error, and both with the analytic clustered SE (evalcore.stats.paired_difference).

Run from the repository root:  python bench/bench_bootstrap.py
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.stats import bootstrap_interval, mean_difference, paired_difference  # noqa: E402


def make_data(n_items: int, n_clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    clusters = np.sort(rng.integers(0, n_clusters, size=n_items))
    difficulty = rng.normal(0.0, 1.2, n_clusters)[clusters] + rng.normal(0.0, 1.0, n_items)
    skill_a = rng.normal(0.0, 0.3, n_clusters)[clusters]  # runs differ by subject, too
    skill_b = rng.normal(0.1, 0.3, n_clusters)[clusters]
    a = (rng.random(n_items) < 1 / (1 + np.exp(-(0.5 - difficulty + skill_a)))).astype(float)
    b = (rng.random(n_items) < 1 / (1 + np.exp(-(0.5 - difficulty + skill_b)))).astype(float)
    return a, b, clusters


def loop_bootstrap(a: np.ndarray, b: np.ndarray, clusters: np.ndarray, n_resamples: int,
                   seed: int) -> list[float]:
    """The straightforward version: one Python iteration per resample."""
    d = (b - a).tolist()
    by_cluster: dict[int, list[float]] = {}
    for value, c in zip(d, clusters.tolist()):
        by_cluster.setdefault(c, []).append(value)
    ids = list(by_cluster)
    rnd = random.Random(seed)
    out = []
    for _ in range(n_resamples):
        drawn = rnd.choices(ids, k=len(ids))
        items = [v for c in drawn for v in by_cluster[c]]
        out.append(sum(items) / len(items))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--clusters", type=int, default=500)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--loop-resamples", type=int, default=10_000,
                    help="resamples actually run by the Python loop (time scaled to --resamples)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5,
                    help="timed repetitions of each version; the median is reported, the fastest beside it")
    args = ap.parse_args()

    a, b, clusters = make_data(args.items, args.clusters, args.seed)
    g = len(np.unique(clusters))
    print(f"workload: paired comparison, {args.items:,} items in {g} clusters, "
          f"whole-cluster resampling, {args.resamples:,} resamples")

    def run_vectorised():
        return bootstrap_interval(np.c_[a, b], mean_difference, n_resamples=args.resamples,
                                  seed=args.seed, method="percentile", clusters=clusters)

    t0 = time.perf_counter()
    vec = run_vectorised()  # first call, includes one-off costs (page faults, lazy imports)
    t_first = time.perf_counter() - t0
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        run_vectorised()
        times.append(time.perf_counter() - t0)
    t_vec, t_vec_min = statistics.median(times), min(times)

    loop_times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        loop = loop_bootstrap(a, b, clusters, args.loop_resamples, args.seed)
        loop_times.append(time.perf_counter() - t0)
    t_loop_run, t_loop_min = statistics.median(loop_times), min(loop_times)
    t_loop = t_loop_run * args.resamples / args.loop_resamples

    ratio = t_loop / t_vec
    print(f"vectorised (evalcore.stats.bootstrap_interval): {t_vec:8.3f} s for "
          f"{args.resamples:,} resamples (median of {args.repeats}, fastest {t_vec_min:.3f} s; "
          f"first call {t_first:.3f} s)")
    if args.loop_resamples == args.resamples:
        how = f"median of {args.repeats}, fastest {t_loop_min:.3f} s"
    else:
        how = (f"median of {args.repeats} runs of {args.loop_resamples:,} resamples = "
               f"{t_loop_run:.3f} s, scaled x{args.resamples / args.loop_resamples:g}")
    print(f"python loop (random.choices per resample):      {t_loop:8.3f} s for "
          f"{args.resamples:,} resamples ({how})")
    print(f"speed-up (medians): {ratio:,.0f}x  (target >= 50x: "
          f"{'met' if ratio >= 50 else 'NOT met'}); fastest vs fastest: "
          f"{t_loop_min * args.resamples / args.loop_resamples / t_vec_min:,.0f}x; "
          f"loop vs the vectorised first call: {t_loop / t_first:,.0f}x")

    # agreement within Monte Carlo error
    se_loop = statistics.stdev(loop)
    lo_loop, hi_loop = np.quantile(loop, [0.025, 0.975])
    analytic = paired_difference(a, b, clusters=clusters)
    se_ref = analytic.se
    # MC sd of a bootstrap SE ~ SE/sqrt(2B); of a 2.5% quantile ~ sqrt(q(1-q)/B)/phi(z_q) * SE
    mc_se = se_ref * math.sqrt(1 / (2 * args.resamples) + 1 / (2 * args.loop_resamples))
    phi = math.exp(-1.959964 ** 2 / 2) / math.sqrt(2 * math.pi)
    mc_q = se_ref * math.sqrt(0.025 * 0.975) / phi * math.sqrt(1 / args.resamples
                                                              + 1 / args.loop_resamples)
    print(f"difference B - A: {vec.estimate:+.5f}; analytic clustered SE {se_ref:.5f} "
          f"(iid paired SE would be {paired_difference(a, b).se:.5f})")
    print(f"bootstrap SE: vectorised {vec.se:.5f}, loop {se_loop:.5f}; |diff| "
          f"{abs(vec.se - se_loop):.5f} vs Monte Carlo sd {mc_se:.5f}")
    print(f"95% percentile interval: vectorised [{vec.low:+.5f}, {vec.high:+.5f}], loop "
          f"[{lo_loop:+.5f}, {hi_loop:+.5f}]; Monte Carlo sd of a bound {mc_q:.5f}")
    agree = (abs(vec.se - se_loop) <= 4 * mc_se and abs(vec.low - lo_loop) <= 4 * mc_q
             and abs(vec.high - hi_loop) <= 4 * mc_q)
    print(f"same answer within Monte Carlo error (4 sd): {'yes' if agree else 'NO'}")
    return 0 if (agree and ratio >= 50) else 1


if __name__ == "__main__":
    raise SystemExit(main())
