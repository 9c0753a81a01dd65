"""The p-value each paired interval inverts, and the row's intersection-union p and interval
(evalcore/stats/paired_tests.py), against scipy / statsmodels and by sweeping every small
2x2 table: an interval excludes 0 exactly when its own test rejects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evalcore import stats as st
from evalcore.stats.paired_tests import (bonett_price_test_p, bound_test_p,
                                         paired_binary_test_p, paired_p_values, score_test_p,
                                         wald_test_p, widen_to_zero)

LEVELS = (0.9, 0.95, 0.99)


def _excludes0(low: float, high: float) -> bool:
    return low > 0 or high < 0


def test_worked_example_50_4_0_46():
    """METHODS.md, "Verdicts": (a, b, c, d) = (50, 4, 0, 46). Exact p = 2 * 0.5^4 = 0.125,
    the uncorrected score test z = 2, p = 0.0455, and Tango's 95% interval excludes 0."""
    a, b, c, d = 50, 4, 0, 46
    exact = sps.binomtest(4, 4, 0.5).pvalue
    assert exact == pytest.approx(0.125)
    z2 = sm_mcnemar([[a, c], [b, d]], exact=False, correction=False)
    assert z2.statistic == pytest.approx(4.0)                       # z = 2
    assert score_test_p(b, c)[0] == pytest.approx(z2.pvalue, rel=1e-12)
    assert score_test_p(b, c)[0] == pytest.approx(2 * sps.norm.sf(2.0), rel=1e-12)
    tango = st.paired_proportion_interval(a, b, c, d, 0.95, "tango")
    assert tango.low > 0.0                                          # excludes 0 alone
    pv = paired_p_values(100, 0.04, math.sqrt((4 - 100 * 0.04 ** 2) / (100 * 99)), b=b, c=c)
    assert pv.test[0] == "tango"
    assert pv.p_interval[0] == pytest.approx(0.0455, abs=5e-5)
    assert pv.p_exact[0] == pytest.approx(0.125)
    assert pv.p_value[0] == pytest.approx(0.125)                    # the larger of the two
    low, high, widened = widen_to_zero(tango.low, tango.high, pv.p_exact, 0.95)
    assert (low[0], high[0], bool(widened[0])) == (0.0, tango.high, True)


@pytest.mark.parametrize("confidence", LEVELS)
def test_tango_excludes_0_iff_the_score_test_rejects_on_every_table_up_to_40(confidence):
    """Every (b, c, n) with n <= 40 (Tango's interval depends on the table only through
    them): the interval excludes 0 iff score_test_p < alpha."""
    alpha = 1 - confidence
    bad = []
    for n in range(1, 41):
        for b in range(n + 1):
            for c in range(n + 1 - b):
                ci = st.paired_proportion_interval(n - b - c, b, c, 0, confidence, "tango")
                if _excludes0(ci.low, ci.high) != bool(score_test_p(b, c)[0] < alpha):
                    bad.append((n, b, c))
    assert not bad


@pytest.mark.parametrize("method", ["wald", "bonett-price"])
def test_wald_type_intervals_invert_their_z_tests(method):
    """Wald (with its Tango fallback where the SE is 0) and Bonett-Price: the interval
    excludes 0 iff its own test's p < alpha, on every table with n <= 25 and on random
    tables up to n = 3,000."""
    rng = np.random.default_rng(11)
    tables = [(n, b, c) for n in range(2, 26) for b in range(n + 1) for c in range(n + 1 - b)]
    for _ in range(400):
        n = int(rng.integers(26, 3000))
        k = int(rng.integers(0, n + 1))
        b = int(rng.integers(0, k + 1))
        tables.append((n, b, k - b))
    for confidence in LEVELS:
        alpha = 1 - confidence
        for n, b, c in tables:
            ci = st.paired_proportion_interval(n - b - c, b, c, 0, confidence, method)
            p = paired_binary_test_p(b, c, n, ci.method)[0]
            assert _excludes0(ci.low, ci.high) == bool(p < alpha), (method, n, b, c)


def test_wald_p_is_the_normal_test_of_the_paired_se():
    """The Wald z of a 0/1 table equals diff / (sd(d, ddof=1)/sqrt(n)) of the item vector."""
    b, c, n = 29, 13, 200
    d = np.r_[np.ones(b), -np.ones(c), np.zeros(n - b - c)]
    z = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    assert wald_test_p(b, c, n)[0] == pytest.approx(2 * sps.norm.sf(abs(z)), rel=1e-12)
    # SE 0 (every item discordant one way): answered by the score test, like the interval
    assert wald_test_p(5, 0, 5)[0] == score_test_p(5, 0)[0]


def test_bonett_price_p_by_hand():
    b, c, n = 9, 2, 44
    p12, p21 = (b + 1) / (n + 2), (c + 1) / (n + 2)
    se = math.sqrt((p12 + p21 - (p12 - p21) ** 2) / (n + 2))
    assert bonett_price_test_p(b, c, n)[0] == pytest.approx(
        2 * sps.norm.sf(abs(p12 - p21) / se), rel=1e-12)


def test_newcombe_has_no_p_value():
    with pytest.raises(st.StatsInputError, match="not the inversion of a test"):
        paired_binary_test_p(9, 2, 44, "newcombe")


@pytest.mark.parametrize("n", [3, 20, 500])
def test_bound_p_is_where_the_bound_interval_touches_0(n):
    """diff -+ (1 + |diff|) U(conf) with U = 1 - (1 - conf)^(1/n) excludes 0 iff
    p = (1 + |diff|)^-n < 1 - conf, on a grid of differences and levels."""
    for diff in (0.0, 0.001, 0.01, 0.05, 0.2, -0.3):
        p = bound_test_p(diff, n)[0]
        for conf in np.linspace(0.5, 0.999, 60):
            u = st.discordance_upper_bound(n, 0, conf)
            half = (1 + abs(diff)) * u
            lo, hi = max(-1.0, diff - half), min(1.0, diff + half)
            assert _excludes0(lo, hi) == bool(p < 1 - conf), (diff, conf)


def test_continuous_p_uses_the_quantile_of_the_interval():
    """t with n - 1 df below 30 items (scipy's one-sample t test of d), z from 30 on."""
    rng = np.random.default_rng(3)
    for n in (5, 29, 30, 80):
        d = rng.normal(0.1, 0.3, n)
        se = d.std(ddof=1) / math.sqrt(n)
        pv = paired_p_values(n, d.mean(), se, unit=False)
        if n < 30:
            assert pv.test[0] == "t"
            assert pv.p_value[0] == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-10)
        else:
            assert pv.test[0] == "normal"
            assert pv.p_value[0] == pytest.approx(2 * sps.norm.sf(abs(d.mean() / se)),
                                                  rel=1e-12)
        assert np.isnan(pv.p_exact[0])
    # no spread: bounded scores get the bound's p, unbounded ones none
    assert paired_p_values(40, 0.0, 0.0, unit=True).test[0] == "bound"
    assert paired_p_values(40, 0.0, 0.0, unit=True).p_value[0] == 1.0
    assert np.isnan(paired_p_values(40, 0.2, 0.0, unit=False).p_value[0])


@pytest.mark.parametrize("g", [4, 12, 29, 30, 75])
def test_clustered_p_matches_the_clustered_interval(g):
    """The cluster-robust t test with G - 1 df; below 30 clusters the interval is the union
    with the iid one, so p = max(p_clustered, p_iid): excludes 0 iff p < alpha, on random
    estimates and SEs."""
    rng = np.random.default_rng(g)
    for _ in range(300):
        n = int(rng.integers(40, 400))
        diff = float(rng.normal(0, 0.05))
        se_iid, se_cl = float(rng.uniform(0.005, 0.05)), float(rng.uniform(0.005, 0.06))
        pv = paired_p_values(n, diff, se_iid, unit=False, se_clustered=se_cl, n_clusters=g)
        assert pv.test[0] == "clustered-t"
        p_cl = 2 * sps.t.sf(abs(diff / se_cl), g - 1)
        p_iid = 2 * sps.norm.sf(abs(diff / se_iid)) if n >= 30 else None
        expected = max(p_cl, p_iid) if g < st.FEW_CLUSTERS else p_cl
        assert pv.p_value[0] == pytest.approx(expected, rel=1e-9)
        for conf in LEVELS:
            q = st.mean_quantile(conf, n, False)[0]
            ci = st.clustered_interval(diff, se_cl, g, conf, se_iid=se_iid,
                                       iid_low=diff - q * se_iid, iid_high=diff + q * se_iid)
            assert _excludes0(ci.low, ci.high) == bool(pv.p_value[0] < 1 - conf)


def test_binary_row_p_is_the_larger_of_the_two_tests():
    rng = np.random.default_rng(5)
    n = rng.integers(10, 1000, 500)
    k = (rng.random(500) * n * 0.4).astype(int)
    b = (rng.random(500) * (k + 1)).astype(int)
    c = k - b
    se = np.sqrt(np.maximum(b + c - n * ((b - c) / n) ** 2, 0) / (n * (n - 1)))
    pv = paired_p_values(n, (b - c) / n, se, b=b, c=c)
    exact = np.array([sps.binomtest(int(bb), int(bb + cc), 0.5).pvalue if bb + cc else 1.0
                      for bb, cc in zip(b, c)])
    assert pv.p_exact == pytest.approx(exact, rel=1e-9)
    assert np.array_equal(pv.p_value, np.fmax(pv.p_interval, pv.p_exact))
    wald = (n >= 200) & (k >= 40) & (se > 0)
    assert np.array_equal(pv.test == "wald", wald)


def test_widen_to_zero_only_widens_and_decides_as_both_tests():
    rng = np.random.default_rng(9)
    lo = rng.normal(0, 0.1, 1000)
    hi = lo + rng.uniform(0.001, 0.2, 1000)
    pe = rng.uniform(0, 0.2, 1000)
    pe[:50] = np.nan                                   # no exact test: unchanged
    for conf in LEVELS:
        new_lo, new_hi, widened = widen_to_zero(lo, hi, pe, conf)
        assert np.all(new_lo <= lo) and np.all(new_hi >= hi)
        excl = (new_lo > 0) | (new_hi < 0)
        assert np.array_equal(excl, ((lo > 0) | (hi < 0)) & ~(pe >= 1 - conf))
        assert np.array_equal(widened, ((lo > 0) | (hi < 0)) & (pe >= 1 - conf))
        assert np.array_equal(new_lo[:50], lo[:50]) and np.array_equal(new_hi[:50], hi[:50])


def test_the_row_p_is_a_valid_test_size_by_exact_enumeration():
    """Under no difference (P(only B) = P(only A)) the rejection rate of p = max(score p,
    exact p) never exceeds alpha: exact multinomial enumeration over (b, c) at n = 30
    for discordance rates 0.05 to 0.9 (the max can only be more conservative than the exact
    conditional test, which is valid)."""
    n, alpha = 30, 0.05
    bs, cs = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = bs + cs <= n
    b, c = bs[ok], cs[ok]
    se = np.sqrt(np.maximum(b + c - n * ((b - c) / n) ** 2, 0) / (n * (n - 1)))
    p = paired_p_values(n, (b - c) / n, se, b=b, c=c).p_value
    for rho in (0.05, 0.1, 0.3, 0.6, 0.9):
        prob = sps.multinomial.pmf(np.column_stack([b, c, n - b - c]), n,
                                   [rho / 2, rho / 2, 1 - rho])
        assert float(prob[p < alpha].sum()) <= alpha + 1e-12


def test_paired_clustered_se_of_every_column_equals_statsmodels():
    """stats.paired_clustered_se (the tiers' clustered SE against the best run): per column,
    statsmodels' cluster-robust SE of the mean of d on the items both columns have, with one
    code per item (1-D) or a code matrix, missing items included."""
    import statsmodels.api as sm
    rng = np.random.default_rng(8)
    x = rng.random((120, 5))
    x[rng.random((120, 5)) < 0.05] = np.nan
    x[:, 2] = np.round(x[:, 2])
    codes = rng.integers(0, 17, 120)
    for ref in (0, 3):
        x[:, ref] = np.where(np.isnan(x[:, ref]), 0.5, x[:, ref])
        se1, g1 = st.paired_clustered_se(x, codes, ref)
        se2, g2 = st.paired_clustered_se(x, np.tile(codes[:, None], (1, 5)), ref)
        assert se1 == pytest.approx(se2, rel=1e-12, nan_ok=True)
        assert np.array_equal(g1, g2)
        for k in range(5):
            if k == ref:
                continue
            m = ~np.isnan(x[:, k])
            d = x[m, k] - x[m, ref]
            fit = sm.OLS(d, np.ones(m.sum())).fit(cov_type="cluster",
                                                  cov_kwds={"groups": codes[m]})
            assert se1[k] == pytest.approx(float(fit.bse[0]), rel=1e-10)
            assert g1[k] == len(np.unique(codes[m]))
