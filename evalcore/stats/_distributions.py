"""Scalar values of the t, chi-square and binomial distributions, the numbers of scipy.stats.

``scipy.stats.t.ppf(q, df)`` and its siblings check and broadcast their arguments, handle
loc and scale and the edges of the support on arrays: about 70-140 us per call, against
2-5 us for the function that computes the value. A comparison of 20 tasks calls them about
eight times per task. The functions here call what scipy.stats calls for one in-range scalar
(``scipy.special.stdtrit``, ``stdtr``, ``chdtrc`` and ``scipy.stats.binom``'s own ``_cdf`` /
``_pmf``), with scipy.stats' handling of the edges, so each returns the same float, bit for
bit: ``tests/stats/test_distributions.py`` pins every one to scipy.stats on grids of
arguments, edges included (a scipy release that changed either side fails there).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import chdtrc, stdtr, stdtrit
from scipy.stats import binom


def t_ppf(q: float, df: float) -> float:
    """``scipy.stats.t.ppf(q, df)``: the q quantile of Student's t with df > 0 degrees of
    freedom (-inf at q = 0, inf at q = 1, NaN outside [0, 1] or for df <= 0 or NaN)."""
    if not df > 0 or not 0.0 <= q <= 1.0:
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    return float(stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """``scipy.stats.t.sf(x, df)``: P(T > x) for Student's t with df > 0 (NaN for NaN x or
    df <= 0)."""
    if not df > 0 or math.isnan(x):
        return math.nan
    if x == -math.inf:
        return 1.0
    if x == math.inf:
        return 0.0
    return float(stdtr(df, -x))


def chi2_sf(x: float, df: float) -> float:
    """``scipy.stats.chi2.sf(x, df)``: P(X > x) for chi-square with df > 0 (1 at x <= 0, NaN
    for NaN x or df <= 0)."""
    if not df > 0 or math.isnan(x):
        return math.nan
    if x <= 0.0:
        return 1.0
    if x == math.inf:
        return 0.0
    return float(chdtrc(df, x))


def _binom_args(k: int, n: int, p: float) -> bool:
    """True when (n, p) are valid Binomial parameters (n a whole number >= 0, 0 <= p <= 1)."""
    return n >= 0 and float(n).is_integer() and 0.0 <= p <= 1.0


def binom_cdf(k: int, n: int, p: float) -> float:
    """``scipy.stats.binom.cdf(k, n, p)``: P(X <= k), X ~ Binomial(n, p), for whole k and n
    (0 below the support, 1 at k >= n, NaN for invalid n or p)."""
    if not _binom_args(k, n, p):
        return math.nan
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return float(np.clip(binom._cdf(np.asarray([k]), np.asarray([n]), np.asarray([p])),
                         0, 1)[0])


def binom_pmf(k: int, n: int, p: float) -> float:
    """``scipy.stats.binom.pmf(k, n, p)``: P(X = k), X ~ Binomial(n, p), for whole k and n
    (0 outside 0..n, NaN for invalid n or p)."""
    if not _binom_args(k, n, p):
        return math.nan
    if k < 0 or k > n or not float(k).is_integer():
        return 0.0
    return float(np.clip(binom._pmf(np.asarray([k]), np.asarray([n]), np.asarray([p])),
                         0, 1)[0])
