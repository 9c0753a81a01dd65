"""Percentile bootstrap intervals of many 0/1 proportions at once, drawn from the binomial
distribution of a resample's count of ones (inversion of the Binomial(n, k/n) CDF), and the
column summaries the shared bootstraps return.

Why this gives the bootstrap distribution, and the references: ``evalcore.stats.bootstrap``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalcore.stats._checks import StatsInputError, check_confidence, check_count

CHUNK_ELEMENTS = 262_144  # indices per chunk: bounds memory and keeps temporaries in cache


def is_binary(v: np.ndarray) -> bool:
    return bool(np.all((v == 0.0) | (v == 1.0)))


@dataclass(frozen=True)
class BootstrapColumns:
    """Percentile bootstrap intervals of several means at once (arrays, one entry per column
    or cell). ``estimate``, ``low``, ``high``, ``se`` (sd ddof=1 of the bootstrap
    distribution), ``zero_width`` (every resample identical); settings as requested."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    zero_width: np.ndarray
    confidence: float
    n_resamples: int
    seed: int


def percentile_columns(theta_b: np.ndarray, estimate: np.ndarray, conf: float, b: int,
                        seed: int) -> BootstrapColumns:
    """Summaries of bootstrap distributions given as rows of ``theta_b`` (cells x resamples)."""
    alpha = 1.0 - conf
    if theta_b.shape[0] == 0:
        empty = np.empty(0)
        return BootstrapColumns(empty, empty, empty, empty, np.empty(0, dtype=bool), conf, b, seed)
    low, high = np.quantile(theta_b, [alpha / 2, 1 - alpha / 2], axis=1)
    return BootstrapColumns(estimate=np.asarray(estimate, dtype=float), low=low, high=high,
                            se=np.std(theta_b, axis=1, ddof=1),
                            zero_width=np.ptp(theta_b, axis=1) == 0.0, confidence=conf,
                            n_resamples=b, seed=seed)


def check_settings(confidence: float, n_resamples: int, seed: int) -> tuple[float, int, int]:
    conf = check_confidence(confidence)
    b = check_count(n_resamples, "n_resamples")
    if b < 100:
        raise StatsInputError(f"n_resamples must be at least 100, got {b}")
    return conf, b, check_count(seed, "seed")


def bootstrap_proportions(k: Any, n: Any, confidence: float = 0.95, n_resamples: int = 2000,
                          seed: int = 0) -> BootstrapColumns:
    """Percentile bootstrap intervals of many proportions k/n (0/1 scores), items iid.

    Resampling n items with replacement from n 0/1 scores with k ones gives a count of ones
    distributed Binomial(n, k/n), so each resample's count is drawn directly:
    theta*_b = F^-1(u_b) / n, b = 1..n_resamples, F the Binomial(n, k/n) CDF and u_b the
    uniforms ``numpy.random.default_rng(seed).random(n_resamples)`` (the same uniforms for
    every cell: a cell's interval depends only on (k, n, n_resamples, seed)). Inversion gives
    exactly the binomial distribution (``scipy.stats.binom.ppf(u, n, k/n)`` are the same
    counts); the CDF is tabulated only where the Chernoff bound leaves more than e^-50 of
    mass outside (below 1e-21 per tail). The summaries: quantiles as ``np.quantile``
    (linear) computes them on the sorted draws, ``se`` the sd (ddof=1) of the draws. This
    is the interval :func:`bootstrap_interval` gives for that cell's 0/1 scores (percentile
    method, no clusters), bit for bit; the cost is one CDF table per distinct (n, k), about
    8 sd wide, independent of n_resamples draws per cell (Efron & Tibshirani 1993, ch. 13,
    for the percentile interval).

    Edge cases: k = 0 or k = n gives a zero-width interval (``zero_width`` True; prefer a
    Wilson interval for 0/1 scores). Raises StatsInputError for n < 1 or k outside [0, n].
    """
    conf, b, seed_i = check_settings(confidence, n_resamples, seed)
    kk = np.asarray(k, dtype=float).ravel()
    nn = np.asarray(n, dtype=float).ravel()
    if kk.shape != nn.shape:
        raise StatsInputError(f"k and n must have the same length, got {kk.size} and {nn.size}")
    if kk.size and (np.any(nn < 1) or np.any(kk < 0) or np.any(kk > nn)
                    or np.any(kk != np.round(kk)) or np.any(nn != np.round(nn))):
        raise StatsInputError("bootstrap_proportions needs whole counts with 0 <= k <= n, n >= 1")
    p = kk / np.where(nn > 0, nn, 1)
    if not kk.size:
        return percentile_columns(np.empty((0, b)), p, conf, b, seed_i)
    # cells with the same (n, k) have the same draws: summarise each distinct pair once
    pairs, inv = np.unique(np.column_stack([nn, kk]), axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    got = binomial_percentiles(pairs[:, 0], pairs[:, 1], b, seed_i, conf)
    return BootstrapColumns(estimate=p, low=got.low[inv], high=got.high[inv], se=got.se[inv],
                            zero_width=got.zero_width[inv], confidence=conf, n_resamples=b,
                            seed=seed_i)


# Tail mass left out of a binomial CDF table: exp(-_TAIL_EXPONENT) per tail (Chernoff bound
# P(X <= a) <= exp(-n KL(a/n || p)) for a < np, likewise above np).
_TAIL_EXPONENT = 50.0


def _binomial_windows(n: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, c): whole counts with P(X < a) and P(X > c) below exp(-_TAIL_EXPONENT) for
    X ~ Binomial(n, p), 0 < p < 1, from the Chernoff bound P(X <= nq) <= exp(-n KL(q || p))
    for q < p (likewise above): bisection on q, both sides at once (n KL(q || p) falls on
    [0, p] and rises on [p, 1])."""
    nn, pp = np.concatenate([n, n]), np.concatenate([p, p])
    lo = np.concatenate([np.zeros_like(p), p])       # lower side: q in [0, p]
    hi = np.concatenate([p, np.ones_like(p)])        # upper side: q in [p, 1]
    lower = np.arange(nn.size) < p.size
    for _ in range(48):
        q = (lo + hi) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = q * np.log(q / pp) + (1 - q) * np.log((1 - q) / (1 - pp))
        far = nn * kl > _TAIL_EXPONENT
        # lower side: a far q is too low (move lo up); upper side: too high (move hi down)
        move_lo = far == lower
        lo = np.where(move_lo, q, lo)
        hi = np.where(move_lo, hi, q)
    a = np.clip(np.floor(lo[:p.size] * n) - 1, 0, n)
    c = np.clip(np.ceil(hi[p.size:] * n) + 1, 0, n)
    return a, c


def _binomial_cdf_tables(n: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, cdf): per row (0 < p < 1) the Binomial(n, p) CDF at a, a + 1, ... over the
    window [a, c] of ``_binomial_windows``, then 1.0 from c on (the mass beyond c, below
    exp(-50), goes to c; the mass below a is left out). pmf(a) from scipy, the others by the
    ratio recurrence pmf(x)/pmf(x-1) = (n-x+1)/x * p/(1-p) (one cumulative product;
    relative error about width x 1e-16, below 1e-13)."""
    from scipy.stats import binom
    a, c = _binomial_windows(n, p)
    width = int(np.max(c - a)) + 1
    x = a[:, None] + np.arange(width, dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (n[:, None] - x + 1) / x
    ratio *= (p / (1 - p))[:, None]
    ratio[:, 0] = binom.pmf(a, n, p)
    ratio[x > c[:, None]] = 0.0
    cdf = np.cumsum(np.cumprod(ratio, axis=1), axis=1)
    cdf[x >= c[:, None]] = 1.0
    return a, cdf


def _binomial_counts(n: np.ndarray, k: np.ndarray, b: int, seed: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(a, at_most): rows (one per (n, k)) of #{resamples with count <= a + j}, j = 0..,
    the counts F^-1(u) at the sorted uniforms ``default_rng(seed).random(b)``. k = 0 or
    k = n: a = k, one column equal to b (every count is k)."""
    u = np.sort(np.random.default_rng(seed).random(b))
    a = k.astype(float).copy()
    inner = (k > 0) & (k < n)
    if not inner.any():
        return a, np.full((k.size, 1), b, dtype=np.int64)
    ai, cdf = _binomial_cdf_tables(n[inner], k[inner] / n[inner])
    # draws <= x  <=>  u <= F(x) (inversion: the draw is the first x with F(x) >= u)
    at_most = np.full((k.size, cdf.shape[1]), b, dtype=np.int64)
    at_most[inner] = np.searchsorted(u, cdf.ravel(), side="right").reshape(cdf.shape)
    a[inner] = ai
    return a, at_most


def binomial_draws(n: int, k: float, b: int, seed: int) -> np.ndarray:
    """The sorted resample counts of one (n, k) (``_binomial_counts``), as floats."""
    a, at_most = _binomial_counts(np.array([float(n)]), np.array([float(k)]), b, seed)
    counts = np.diff(at_most[0], prepend=0)
    return np.repeat(a[0] + np.arange(counts.size, dtype=float), counts)


def binomial_percentiles(n: np.ndarray, k: np.ndarray, b: int, seed: int,
                          conf: float) -> BootstrapColumns:
    """Percentile summaries of the binomial resample means of each (n, k) from the counts
    table (``_binomial_counts``), without the draws: the order statistics the linear
    quantile interpolates (``np.quantile``'s formula, so the same bounds bit for bit), the
    sd (ddof=1) from the exact integer sums of the counts, and whether the range is 0.
    Rows go in chunks of about ``CHUNK_ELEMENTS`` table entries (memory stays bounded:
    the table is about 16 sd(count) wide per row)."""
    sd = np.sqrt(n * (k / n) * (1 - k / n))
    per_row = int(16 * float(sd.max(initial=0.0))) + 64
    step = max(1, 4 * CHUNK_ELEMENTS // per_row)
    if n.size <= step:
        return _binomial_percentile_rows(n, k, b, seed, conf)
    parts = [_binomial_percentile_rows(n[i:i + step], k[i:i + step], b, seed, conf)
             for i in range(0, n.size, step)]
    return BootstrapColumns(*(np.concatenate([getattr(p, f) for p in parts])
                              for f in ("estimate", "low", "high", "se", "zero_width")),
                            confidence=conf, n_resamples=b, seed=seed)


def _binomial_percentile_rows(n: np.ndarray, k: np.ndarray, b: int, seed: int,
                              conf: float) -> BootstrapColumns:
    """``_binomial_percentiles`` of one chunk of rows."""
    a, at_most = _binomial_counts(n, k, b, seed)
    rows, width = at_most.shape
    alpha = 1.0 - conf
    # rows of at_most are non-decreasing: offset each row above the last (one search
    # finds, for every row at once, how many entries are <= j)
    offset = np.arange(rows, dtype=np.int64) * (b + 1)
    flat = (at_most + offset[:, None]).ravel()

    def order_stat(j: int) -> np.ndarray:       # the j-th smallest count (0-based)
        return a + (np.searchsorted(flat, offset + j, side="right")
                    - np.arange(rows, dtype=np.int64) * width)

    def quantile(q: float) -> np.ndarray:       # np.quantile(draws / n, q), method linear
        virtual = (b - 1) * q
        if virtual >= b - 1:
            return order_stat(b - 1) / n
        prev = int(np.floor(virtual))
        lo_v, hi_v = order_stat(prev) / n, order_stat(prev + 1) / n
        t = virtual - np.floor(virtual)
        diff = hi_v - lo_v
        return hi_v - diff * (1 - t) if t >= 0.5 else lo_v + diff * t

    # sums of the draws (as offsets j from a) and their squares: whole numbers below 2^53,
    # so the float products are exact in any order
    counts = np.diff(at_most, axis=1, prepend=0).astype(float)
    j = np.arange(width, dtype=float)
    s1, s2 = counts @ j, counts @ (j * j)
    var = (b * s2 - s1 * s1) / (b * (b - 1.0))
    return BootstrapColumns(estimate=k / n, low=quantile(alpha / 2), high=quantile(1 - alpha / 2),
                            se=np.sqrt(np.maximum(var, 0.0)) / n,
                            zero_width=order_stat(0) == order_stat(b - 1), confidence=conf,
                            n_resamples=b, seed=seed)
