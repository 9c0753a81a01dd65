"""Many tasks, many models: task averages, harness group SEs, p-value adjustment, selection bias.

References: Miller (2024), "Adding Error Bars to Evals", arXiv:2411.00640; Holm (1979),
Scand. J. Statist. 6:65; Benjamini & Hochberg (1995), JRSS-B 57:289; lm-evaluation-harness
``lm_eval/api/metrics.py`` (``pooled_sample_stderr``, ``aggregate_subtask_metrics``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate
from scipy.stats import norm

from evalcore.stats._checks import (StatsInputError, as_matrix, as_scores, check_confidence,
                                    clip_unit, is_binary, z_value)
from evalcore.stats.paired import paired_clustered_se
from evalcore.stats.paired_tests import paired_p_values


@dataclass(frozen=True)
class TaskAggregate:
    """An average over tasks with its SE and interval.

    kind : "macro" (mean of task scores) or "micro" (item-weighted, like the harness groups).
    k : number of tasks; n : total items (None when sizes were not given).
    """

    estimate: float
    se: float
    low: float
    high: float
    kind: str
    k: int
    n: int | None
    confidence: float
    method: str

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def pooled_sample_stderr(stderrs: Any, sizes: Any) -> float:
    """lm-evaluation-harness group stderr (``pooled_sample_stderr``), item-weighted groups.

    pooled_var = sum_t (n_t - 1) * n_t * se_t^2 / (N - k),  SE = sqrt(pooled_var / N),
    N = sum n_t. (n_t se_t^2 is task t's sample variance, so this is the pooled within-task
    variance over N items; it ignores between-task differences in mean, as the harness does.)
    """
    se = as_scores(stderrs, "stderrs")
    ns = as_scores(sizes, "sizes")
    if se.size != ns.size:
        raise StatsInputError(f"stderrs and sizes differ in length: {se.size} vs {ns.size}")
    if np.any(ns < 1) or np.any(ns != np.round(ns)):
        raise StatsInputError("sizes must be positive integers")
    big_n = float(ns.sum())
    if big_n <= se.size:
        raise StatsInputError("pooled_sample_stderr needs more items than tasks")
    pooled = float(np.sum((ns - 1) * se ** 2 * ns) / (big_n - se.size))
    return math.sqrt(pooled / big_n)


def aggregate_tasks(scores: Any, ses: Any, ns: Any = None, kind: str = "macro",
                    confidence: float = 0.95, weights: Any = None) -> TaskAggregate:
    """Average of k task scores with its standard error.

    - macro: mean of the task scores, SE = sqrt(sum_t SE_t^2) / k (tasks are independent item
      sets). Averaging shrinks the error bar by about sqrt(k), so an average can be significant
      when no single task is.
    - macro with ``weights`` w_t > 0: the weighted mean sum_t w_t s_t / W, W = sum_t w_t, with
      SE = sqrt(sum_t w_t^2 SE_t^2) / W (the same independence). The leaderboard weights each
      task 1 / (tasks of its group), so that a task group (MMLU's 57 subjects) counts once,
      as the mean of its tasks, beside each ungrouped task. Equal weights give the plain
      macro average.
    - micro: item-weighted mean sum_t n_t s_t / N (the harness's ``weight_by_size`` group score)
      with the harness's group SE :func:`pooled_sample_stderr`, so group numbers agree with
      lm-evaluation-harness to the printed digit. Needs ``ns``.

    Interval: estimate -+ z SE, clipped to [0, 1] when every task score lies in [0, 1].
    A NaN SE (a task without one) gives NaN SE and bounds.
    """
    conf = check_confidence(confidence)
    s = as_scores(scores, "scores")
    e = as_scores(ses, "ses", allow_nan=True)
    if s.size != e.size:
        raise StatsInputError(f"scores and ses differ in length: {s.size} vs {e.size}")
    if np.any(e < 0):
        raise StatsInputError("standard errors must be >= 0")
    k = s.size
    n_total = None
    w = None
    if ns is not None:
        nn = as_scores(ns, "ns")
        if nn.size != k:
            raise StatsInputError(f"scores and ns differ in length: {k} vs {nn.size}")
        if np.any(nn < 1) or np.any(nn != np.round(nn)):
            raise StatsInputError("ns must be positive integers")
        n_total = int(nn.sum())
        w = nn
    if weights is not None and kind != "macro":
        raise StatsInputError("weights apply to kind='macro' only")
    if kind == "macro" and weights is not None:
        wt = as_scores(weights, "weights")
        if wt.size != k:
            raise StatsInputError(f"scores and weights differ in length: {k} vs {wt.size}")
        if np.any(wt <= 0):
            raise StatsInputError("weights must be positive")
        total = float(wt.sum())
        est = float(np.sum(wt * s) / total)
        se = float(math.sqrt(np.sum((wt * e) ** 2)) / total)
        method = "weighted macro average, SE = sqrt(sum w_t^2 SE_t^2)/sum w_t"
    elif kind == "macro":
        est = float(s.mean())
        se = float(math.sqrt(np.sum(e ** 2)) / k)
        method = "macro average, SE = sqrt(sum SE_t^2)/k"
    elif kind == "micro":
        if w is None:
            raise StatsInputError("kind='micro' needs the task sizes ns")
        est = float(np.sum(w * s) / w.sum())
        se = pooled_sample_stderr(e, w) if not np.isnan(e).any() else float("nan")
        method = "micro (item-weighted) average, harness pooled_sample_stderr"
    else:
        raise StatsInputError(f"kind must be 'macro' or 'micro', got {kind!r}")
    z = z_value(conf)
    low, high = est - z * se, est + z * se
    if not math.isnan(se) and np.all((s >= 0) & (s <= 1)):
        low, high = clip_unit(low, high)
    return TaskAggregate(est, se, low, high, kind, k, n_total, conf, method)


def adjust_pvalues(pvalues: Any, method: str = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values, in the input order.

    - "holm" (Holm 1979, step-down, controls the family-wise error rate):
      sorted p_(1) <= ... <= p_(m): adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
    - "bh" (Benjamini & Hochberg 1995, controls the false discovery rate):
      adj_(i) = min_{j >= i} min(1, m p_(j) / j).
    NaN p-values stay NaN and do not count in m (say which tests were run). Matches
    ``statsmodels.stats.multitest.multipletests(method="holm" | "fdr_bh")``.
    """
    p = np.asarray(pvalues, dtype=float).reshape(-1)
    if np.any((p < 0) | (p > 1)):
        raise StatsInputError("p-values must lie in [0, 1]")
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="mergesort")
    sq = q[order]
    ranks = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - ranks + 1) * sq))
    elif method in ("bh", "fdr_bh"):
        adj = np.minimum.accumulate(np.minimum(1.0, m * sq / ranks)[::-1])[::-1]
    else:
        raise StatsInputError(f"method must be 'holm' or 'bh', got {method!r}")
    res = np.empty(m)
    res[order] = adj
    out[ok] = res
    return out


def best_of_k_inflation(k: int, sigma: float = 1.0) -> float:
    """Expected inflation from reporting the best of k equally good variants: sigma * E[max of k N(0,1)].

    E[max] = integral x * k * phi(x) * Phi(x)^(k-1) dx, by numerical integration (exact to
    ~1e-10; 0 for k = 1, 1/sqrt(pi) for k = 2, about 2.0 for k = 27, roughly sqrt(2 ln k) for
    large k). Reference: order statistics of the normal, e.g. Harter (1961), Biometrika 48:151.
    """
    if isinstance(k, bool) or int(k) != k or int(k) < 1:
        raise StatsInputError(f"k must be a positive integer, got {k!r}")
    kk = int(k)
    s = float(sigma)
    if not (s >= 0) or math.isinf(s):
        raise StatsInputError(f"sigma must be a non-negative number, got {sigma!r}")
    if kk == 1:
        return 0.0

    def integrand(x: float) -> float:
        return x * kk * norm.pdf(x) * math.exp((kk - 1) * norm.logcdf(x))

    val, _ = integrate.quad(integrand, -12.0, 12.0, limit=200, epsabs=1e-12, epsrel=1e-12,
                            points=[math.sqrt(2 * math.log(kk))])
    return s * float(val)


@dataclass(frozen=True)
class BestTier:
    """Which runs are statistically indistinguishable from the best (same items, paired tests).

    best : column index of the best run (highest mean). Per run (tuples, input order):
    diff_vs_best (run - best, <= 0), p_raw, p_adjusted, indistinguishable (p_adjusted >= alpha;
    True for the best run itself). test : the tests behind the p-values (see
    :func:`indistinguishable_from_best`).
    """

    best: int
    means: tuple[float, ...]
    diff_vs_best: tuple[float, ...]
    p_raw: tuple[float, ...]
    p_adjusted: tuple[float, ...]
    indistinguishable: tuple[bool, ...]
    alpha: float
    adjustment: str
    test: str
    n: int


def indistinguishable_from_best(matrix: Any, alpha: float = 0.05, adjust: str = "holm",
                                higher_is_better: bool = True, clusters: Any = None) -> BestTier:
    """Tier of runs not significantly worse than the best on shared items.

    For each run j != best, the p-value a ``compare`` row of the two runs shows
    (:func:`paired_p_values`, the product's one rule): over d_i = x_ij - x_i,best,
    diff = mean(d), SE = sd(d, ddof=1)/sqrt(n); for 0/1 scores the larger of the routed
    paired interval's own test (Tango's score test, Wald at n >= 200 with 40+ discordant
    items) and the exact McNemar test; other scores: t on n - 1 df below 30 items, else z;
    with ``clusters`` (one label per item) the CR1 clustered SE (:func:`paired_clustered_se`)
    and t on G - 1 df (below 30 clusters the larger of that p and the iid one). The
    p-values are adjusted over the k - 1 comparisons (``adjust``: "holm" or "bh"); a run is
    in the top tier when its adjusted p >= alpha, or when the p-value is undefined (n = 1,
    no spread in d on an unbounded scale): an undefined p cannot separate runs.
    ``matrix`` is items x runs, no NaN. ``diff_vs_best`` is run minus best.

    ``test`` names the tests behind the p-values, e.g. "tango+mcnemar-exact" or "t";
    "/" between different tests of different runs.
    """
    x = as_matrix(matrix, "matrix")
    a = float(alpha)
    if not (0 < a < 1):
        raise StatsInputError(f"alpha must lie in (0, 1), got {alpha!r}")
    n, r = x.shape
    means = x.mean(axis=0)
    sign = 1.0 if higher_is_better else -1.0
    best = int(np.argmax(sign * means))
    d = x - x[:, [best]]
    se_iid = (d.std(axis=0, ddof=1) / math.sqrt(n)) if n > 1 else np.full(r, np.nan)
    binary = is_binary(x)
    b = c = None
    if binary:   # discordant counts of (best, run): only the best right / only the run right
        b = ((x[:, [best]] == 1) & (x == 0)).sum(axis=0)
        c = ((x[:, [best]] == 0) & (x == 1)).sum(axis=0)
    se_cl = g = None
    if clusters is not None:
        labels = np.asarray(clusters)
        if labels.shape != (n,):
            raise StatsInputError(f"clusters must give one label per item ({n}), "
                                  f"got shape {labels.shape}")
        codes = np.unique(labels, return_inverse=True)[1].reshape(-1)
        se_cl, g = paired_clustered_se(x, codes, best)
    unit = bool(np.all((x >= 0) & (x <= 1)))
    pv = paired_p_values(n, d.mean(axis=0), se_iid, b=b, c=c, unit=unit,
                         se_clustered=se_cl, n_clusters=g)
    p_raw = np.array(pv.p_value, dtype=float)
    p_raw[best] = np.nan
    p_adj = adjust_pvalues(p_raw, adjust)
    p_adj[best] = np.nan
    indist = tuple(bool(j == best or not p_adj[j] < a) for j in range(r))  # NaN p: cannot tell
    tests = sorted({str(pv.test[j]) + ("+mcnemar-exact" if binary else "")
                    for j in range(r) if j != best})
    return BestTier(best=best, means=tuple(float(m) for m in means),
                    diff_vs_best=tuple(float(m - means[best]) for m in means),
                    p_raw=tuple(float(v) for v in p_raw), p_adjusted=tuple(float(v) for v in p_adj),
                    indistinguishable=indist, alpha=a, adjustment=adjust,
                    test="/".join(tests) if tests else "none", n=n)
