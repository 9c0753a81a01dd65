"""The scalar distribution functions (stats/_distributions.py) return scipy.stats' floats bit
for bit, on grids of arguments with the edges of each support."""

import math

import numpy as np
import pytest
from scipy.stats import binom, chi2
from scipy.stats import t as t_dist

from evalcore.stats._distributions import binom_cdf, binom_pmf, chi2_sf, t_ppf, t_sf


def _same(mine: float, theirs) -> bool:
    theirs = float(theirs)
    return (math.isnan(mine) and math.isnan(theirs)) or mine == theirs


Q = [0.0, 1e-12, 0.025, 0.05, 0.5, 0.8, 0.9, 0.95, 0.975, 0.995, 0.9995, 1 - 1e-12, 1.0,
     -0.1, 1.1, float("nan")]
DF = [1, 2, 3, 7, 29, 30, 99, 199, 1999, 1e6, 0.5, 0, -1, float("nan")]


@pytest.mark.parametrize("df", DF)
def test_t_ppf_is_scipy(df):
    for q in Q:
        assert _same(t_ppf(q, df), t_dist.ppf(q, df)), (q, df)


@pytest.mark.parametrize("df", DF)
def test_t_sf_is_scipy(df):
    for x in [-math.inf, -40.0, -2.5, -1e-9, 0.0, 1e-9, 0.3, 1.96, 2.5, 7.0, 40.0, math.inf,
              float("nan")]:
        assert _same(t_sf(x, df), t_dist.sf(x, df)), (x, df)


@pytest.mark.parametrize("df", [1, 2, 5, 0.5, 0, -1, float("nan")])
def test_chi2_sf_is_scipy(df):
    for x in [-1.0, 0.0, 1e-12, 0.004, 0.5, 1.0, 3.84, 10.0, 200.0, math.inf, float("nan")]:
        assert _same(chi2_sf(x, df), chi2.sf(x, df)), (x, df)


def test_binomial_cdf_and_pmf_are_scipy_exhaustively_for_mcnemar():
    # McNemar: min(b, c) of b + c discordant items at p = 1/2, every table up to 200
    for m in range(201):
        for k in range(-1, m + 2):
            assert _same(binom_cdf(k, m, 0.5), binom.cdf(k, m, 0.5)), (k, m)
            assert _same(binom_pmf(k, m, 0.5), binom.pmf(k, m, 0.5)), (k, m)


@pytest.mark.parametrize("p", [0.0, 0.01, 0.3, 0.5, 0.77, 1.0, -0.1, 1.5, float("nan")])
def test_binomial_other_p_large_n_and_bad_arguments_are_scipy(p):
    rng = np.random.default_rng(3)
    for n in [0, 1, 2, 10, 2000, 100_000, -1, 2.5]:
        for k in sorted({0, 1, int(abs(n) // 2), int(abs(n)) - 1, int(abs(n)), -3,
                         *rng.integers(0, max(int(abs(n)), 1) + 1, 4).tolist()}):
            assert _same(binom_cdf(k, n, p), binom.cdf(k, n, p)), (k, n, p)
            assert _same(binom_pmf(k, n, p), binom.pmf(k, n, p)), (k, n, p)
