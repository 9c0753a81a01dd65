"""The interval formulas of the product, on arrays: one call for thousands of simulated samples.

:mod:`evalcore.stats.coverage` needs the interval of every sample a simulation draws (all k of
a binomial, 20,000 simulated 2x2 tables or cluster designs). The product's own functions
(``wilson_interval``, ``paired_proportion_interval``, ``clustered_se``, ...) validate their
input and build a result object per call, which is right for one interval and far too slow
for 10^5 of them. The functions here compute the same bounds elementwise; the tests in
``tests/stats/test_coverage.py`` pin every one of them to the product's scalar function on
exhaustive small tables and random large ones, so the simulated coverage is the coverage of
the interval the product shows, not of a lookalike.

All functions take numpy arrays (broadcasting), return ``(low, high)`` float arrays and never
warn: divisions by zero are resolved explicitly (see each docstring).
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv, stdtrit
from scipy.stats import binom, chi2

Bounds = tuple[np.ndarray, np.ndarray]


# ---- one proportion: k of n -------------------------------------------------------------

def wilson_bounds(k: np.ndarray, n: np.ndarray, z: float) -> Bounds:
    """Wilson score interval (as ``wilson_interval``): exactly 0 at k = 0 and 1 at k = n."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return low, high


def modified_wilson_bounds(k: np.ndarray, n: int, z: float, alpha: float) -> Bounds:
    """The product's Wilson interval (``wilson_interval``, modified=True): Wilson, with the
    Poisson bound lambda_x / n for x = 1..x* successes (and 1 - lambda_x / n for x failures),
    x* = 2 for n <= 50 else 3 (Brown, Cai & DasGupta 2001, sec. 4.1.1); x runs up to n when
    n <= x*, so k = n gets the Poisson lower bound and k = 0 the Poisson upper bound there."""
    k = np.asarray(k, dtype=float)
    low, high = wilson_bounds(k, n, z)
    cut = 2 if n <= 50 else 3
    for x in range(1, min(cut, n) + 1):
        lam = 0.5 * float(chi2.ppf(alpha, 2 * x)) / n
        low = np.where(k == x, np.minimum(low, lam), low)
        high = np.where(k == n - x, np.maximum(high, 1.0 - lam), high)
    return low, high


def clopper_pearson_bounds(k: np.ndarray, n: np.ndarray, alpha: float) -> Bounds:
    """Clopper-Pearson (as ``clopper_pearson_interval``): Beta quantiles, 0 / 1 at the edges."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    low = np.where(k == 0, 0.0, betaincinv(np.maximum(k, 1.0), n - k + 1, alpha / 2))
    high = np.where(k == n, 1.0, betaincinv(k + 1, np.maximum(n - k, 1.0), 1 - alpha / 2))
    return low, high


def bayes_bounds(k: np.ndarray, n: np.ndarray, alpha: float) -> Bounds:
    """Equal-tailed Beta(1 + k, 1 + n - k) interval (as ``beta_interval`` with a uniform prior)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    return betaincinv(1 + k, 1 + n - k, alpha / 2), betaincinv(1 + k, 1 + n - k, 1 - alpha / 2)


def clt_bounds(mean: np.ndarray, se: np.ndarray, quantile: float | np.ndarray,
               bounded: bool = True) -> Bounds:
    """mean +- quantile * se, clipped to [0, 1] when ``bounded`` (as ``clt_interval``)."""
    low, high = mean - quantile * se, mean + quantile * se
    if bounded:
        return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
    return low, high


def proportion_clt_bounds(k: np.ndarray, n: int, z: float) -> Bounds:
    """p +- z sqrt(p(1-p)/(n-1)) (the harness stderr), clipped to [0, 1]; needs n >= 2."""
    p = np.asarray(k, dtype=float) / n
    return clt_bounds(p, np.sqrt(p * (1 - p) / (n - 1)), z)


def bootstrap_limit_bounds(k: np.ndarray, n: int, alpha: float) -> Bounds:
    """Percentile bootstrap of a proportion in the limit of infinitely many resamples.

    Resampling n items of which k are correct draws the resampled count from Binomial(n, k/n),
    so the percentile interval converges to that binomial's alpha/2 and 1 - alpha/2 quantiles
    divided by n. The product's bootstrap (finitely many resamples, linear interpolation
    between order statistics) differs from this limit by its own Monte Carlo error.
    """
    k = np.asarray(k, dtype=float)
    p = k / n
    return binom.ppf(alpha / 2, n, p) / n, binom.ppf(1 - alpha / 2, n, p) / n


def t_quantile(confidence: float, df: np.ndarray | float) -> np.ndarray:
    """Two-sided Student t quantile t_{df, 1 - alpha/2}."""
    return stdtrit(df, 0.5 + confidence / 2.0)


def cluster_robust_se(sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """CR1 standard error of a mean from cluster sums (as ``clustered_se``), one row per sample:
    SE^2 = G/(G-1) * sum_g (S_g - m_g p_hat)^2 / n^2, p_hat = sum S_g / n. Needs G >= 2."""
    sums = np.asarray(sums, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    g = sums.shape[-1]
    n = sizes.sum()
    est = sums.sum(axis=-1, keepdims=True) / n
    resid = sums - sizes * est
    return np.sqrt(g / (g - 1) * np.sum(resid * resid, axis=-1)) / n


def clustered_headline_bounds(est: np.ndarray, se_clustered: np.ndarray, se_iid: np.ndarray,
                              n_clusters: int, confidence: float, few_clusters: int) -> Bounds:
    """The product's headline clustered interval (as ``clustered_interval`` for 0/1 scores):
    est +- t_{G-1} SE_c, and with G < few_clusters the union with the iid interval
    est +- z SE_iid, i.e. est +- max(t_{G-1} SE_c, z SE_iid); clipped to [0, 1]."""
    t = float(t_quantile(confidence, n_clusters - 1))
    half = t * se_clustered
    if n_clusters < few_clusters:
        half = np.maximum(half, float(t_quantile(confidence, np.inf)) * se_iid)
    return clt_bounds(est, half, 1.0)


def korn_graubard_bounds(est: np.ndarray, se_clustered: np.ndarray, n: int, n_clusters: int,
                         confidence: float, few_clusters: int) -> Bounds:
    """Korn-Graubard interval of a clustered proportion (as ``korn_graubard_interval``):
    Clopper-Pearson on x = p_hat * n_df of n_df, n_df = n_eff * (t_{n-1} / t_{G-1})^2,
    n_eff = p_hat (1 - p_hat) / SE_c^2 (n where that is undefined, at most n when G is below
    ``few_clusters``)."""
    est = np.asarray(est, dtype=float)
    var = np.asarray(se_clustered, dtype=float) ** 2
    ok = (est > 0) & (est < 1) & (var > 0)
    n_eff = np.where(ok, est * (1 - est) / np.where(ok, var, 1.0), float(n))
    if n_clusters < few_clusters:
        n_eff = np.minimum(n_eff, float(n))
    ratio = float(t_quantile(confidence, n - 1) / t_quantile(confidence, n_clusters - 1))
    n_df = n_eff * ratio * ratio
    x = est * n_df
    alpha = 1.0 - confidence
    tiny = 1e-300
    low = np.where(x > 0, betaincinv(np.maximum(x, tiny), n_df - x + 1, alpha / 2), 0.0)
    high = np.where(x < n_df, betaincinv(x + 1, np.maximum(n_df - x, tiny), 1 - alpha / 2), 1.0)
    return low, high


# ---- a paired difference of two 0/1 runs: cells a, b, c, d ---------------------------------

def paired_wald_bounds(b: np.ndarray, c: np.ndarray, n: int, z: float) -> Bounds:
    """Delta +- z sd(d, ddof=1)/sqrt(n) with d in {-1, 0, 1}: Delta = (b - c)/n and
    sd(d)^2 = (b + c - n Delta^2)/(n - 1), truncated to [-1, 1]. Where that SE is 0 (b + c = 0,
    or every item discordant one way) the product answers a Wald request with the Tango
    interval (``paired_proportion_interval``), and so does this function. Needs n >= 2."""
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    delta = (b - c) / n
    var_d = np.maximum(b + c - n * delta * delta, 0.0) / (n - 1)
    half = z * np.sqrt(var_d / n)
    low, high = np.clip(delta - half, -1.0, 1.0), np.clip(delta + half, -1.0, 1.0)
    zero = ~(var_d > 0)
    if zero.any():
        t_low, t_high = tango_bounds(b[zero], c[zero], n, z)
        low[zero], high[zero] = t_low, t_high
    return low, high


def newcombe_bounds(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, z: float) -> Bounds:
    """Newcombe (1998) hybrid score interval, method 10, with the continuity-adjusted phi.

    Wilson intervals (l_B, u_B) of p_B = (a + b)/n and (l_A, u_A) of p_A = (a + c)/n;
    phi = (ad - bc)' / sqrt((a+b)(c+d)(a+c)(b+d)) where (ad - bc)' = max(ad - bc - n/2, 0) if
    ad > bc else ad - bc, and phi = 0 when the denominator is 0.
    L = Delta - sqrt((p_B - l_B)^2 - 2 phi (p_B - l_B)(u_A - p_A) + (u_A - p_A)^2),
    U = Delta + sqrt((u_B - p_B)^2 - 2 phi (u_B - p_B)(p_A - l_A) + (p_A - l_A)^2).
    """
    a, b, c, d = (np.asarray(v, dtype=float) for v in (a, b, c, d))
    n = a + b + c + d
    p_b, p_a = (a + b) / n, (a + c) / n
    l_b, u_b = wilson_bounds(a + b, n, z)
    l_a, u_a = wilson_bounds(a + c, n, z)
    num = a * d - b * c
    num = np.where(num > 0, np.maximum(num - n / 2, 0.0), num)
    den2 = (a + b) * (c + d) * (a + c) * (b + d)
    phi = np.divide(num, np.sqrt(den2), out=np.zeros_like(num), where=den2 > 0)
    delta = p_b - p_a
    lo2 = (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2
    hi2 = (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2
    return (np.maximum(delta - np.sqrt(np.maximum(lo2, 0.0)), -1.0),
            np.minimum(delta + np.sqrt(np.maximum(hi2, 0.0)), 1.0))


def _tango_statistic(b: np.ndarray, c: np.ndarray, n: int, delta: np.ndarray) -> np.ndarray:
    """Tango's score statistic ((b - c)/n - Delta) / sqrt((2 q + Delta - Delta^2)/n), q the
    restricted MLE of P(only A right): the root of 2n q^2 + ((2n - b + c) Delta - b - c) q
    - c Delta (1 - Delta) = 0 in [0, 1]. +-inf where the variance is 0 and the numerator is not."""
    big_b = (2 * n - b + c) * delta - b - c
    big_c = -c * delta * (1 - delta)
    q = (np.sqrt(np.maximum(big_b * big_b - 8 * n * big_c, 0.0)) - big_b) / (4 * n)
    var = np.maximum(2 * q + delta - delta * delta, 0.0) / n
    num = (b - c) / n - delta
    safe = var > 1e-300
    t = np.divide(num, np.sqrt(np.where(safe, var, 1.0)))
    edge = np.where(num > 0, np.inf, np.where(num < 0, -np.inf, 0.0))
    return np.where(safe, t, edge)


def tango_bounds(b: np.ndarray, c: np.ndarray, n: int, z: float, iterations: int = 44) -> Bounds:
    """Tango (1998) score interval: {Delta : |T(Delta)| <= z}, by bisection on both sides.

    T decreases in Delta from +inf at Delta = -1 to -inf at Delta = 1 (for 0 < b + c), so the
    lower bound solves T = z on [-1, Delta_hat] and the upper T = -z on [Delta_hat, 1];
    44 halvings of an interval of length <= 2 give bounds to 1e-13, far below any printed digit.
    """
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    est = (b - c) / n
    bounds = []
    for target, lo, hi in ((z, -np.ones_like(est), est.copy()), (-z, est.copy(), np.ones_like(est))):
        for _ in range(iterations):
            mid = (lo + hi) / 2
            above = _tango_statistic(b, c, n, mid) > target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        bounds.append((lo + hi) / 2)
    return bounds[0], bounds[1]


def bonett_price_bounds(b: np.ndarray, c: np.ndarray, n: int, z: float) -> Bounds:
    """Bonett & Price (2012) adjusted Wald interval: p12 = (b + 1)/(n + 2), p21 = (c + 1)/(n + 2),
    (p12 - p21) +- z sqrt((p12 + p21 - (p12 - p21)^2)/(n + 2)), truncated to [-1, 1]."""
    p12 = (np.asarray(b, dtype=float) + 1) / (n + 2)
    p21 = (np.asarray(c, dtype=float) + 1) / (n + 2)
    diff = p12 - p21
    half = z * np.sqrt(np.maximum(p12 + p21 - diff * diff, 0.0) / (n + 2))
    return np.clip(diff - half, -1.0, 1.0), np.clip(diff + half, -1.0, 1.0)
