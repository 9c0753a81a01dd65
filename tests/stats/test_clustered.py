"""evalcore.stats.clustered against statsmodels' cluster-robust OLS and scipy's one-way ANOVA."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import f_oneway

from evalcore.stats import (StatsInputError, clustered_intervals_of_matrices, clustered_se,
                            grouped_clustered_intervals, mean_se,
                            score_interval)


def _ols_cluster_se(x, groups, use_correction=True):
    import statsmodels.api as sm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.OLS(x, np.ones_like(x)).fit(
            cov_type="cluster", cov_kwds={"groups": groups, "use_correction": use_correction})
    return float(fit.bse[0])


@pytest.mark.parametrize("seed,g", [(0, 17), (1, 5), (2, 60)])
def test_clustered_se_equals_statsmodels_cluster_robust_ols(seed, g):
    # statsmodels scales the sandwich by G/(G-1) * (n-1)/(n-k); with k = 1 (intercept only) that
    # is exactly our G/(G-1): equal. Without the correction it is ours times sqrt((G-1)/G).
    rng = np.random.default_rng(seed)
    n = 400
    groups = rng.integers(0, g, size=n)
    x = (rng.random(n) < 0.4 + 0.3 * (groups % 2)).astype(float)
    ours = clustered_se(x, groups)
    assert ours.n_clusters == len(np.unique(groups))
    gg = ours.n_clusters
    assert ours.se == pytest.approx(_ols_cluster_se(x, groups), rel=1e-10)
    assert ours.se * math.sqrt((gg - 1) / gg) == pytest.approx(
        _ols_cluster_se(x, groups, use_correction=False), rel=1e-10)


def test_design_effect_and_se_iid_definitions():
    rng = np.random.default_rng(4)
    x = rng.random(120)
    groups = np.repeat(np.arange(12), 10)
    res = clustered_se(x, groups)
    assert res.se_iid == pytest.approx(mean_se(x), rel=1e-13)
    assert res.design_effect == pytest.approx(res.se ** 2 / res.se_iid ** 2, rel=1e-13)
    assert res.sqrt_design_effect == pytest.approx(res.se / res.se_iid, rel=1e-12)
    assert res.effective_n == pytest.approx(120 / res.design_effect)
    assert res.mean == pytest.approx(x.mean()) and res.n == 120


@pytest.mark.parametrize("sizes", [[10] * 8, [3, 7, 12, 5, 9, 2, 15, 4]])
def test_icc_matches_one_way_anova_from_scipy(sizes):
    # ICC(1) = (MSB - MSW)/(MSB + (n0-1) MSW) = (F - 1)/(F + n0 - 1) with F = MSB/MSW
    rng = np.random.default_rng(len(sizes) + sum(sizes))
    groups = [rng.normal(loc=rng.normal(0, 0.7), size=m) for m in sizes]
    x = np.concatenate(groups)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    f = f_oneway(*groups).statistic
    n, g = x.size, len(sizes)
    n0 = (n - sum(m * m for m in sizes) / n) / (g - 1)
    assert clustered_se(x, labels).icc == pytest.approx((f - 1) / (f + n0 - 1), rel=1e-10)


def test_icc_negative_is_reported_not_clipped():
    # every cluster holds one right and one wrong answer: less spread between clusters than chance
    x = np.tile([0.0, 1.0], 20)
    res = clustered_se(x, np.repeat(np.arange(20), 2))
    assert res.icc == pytest.approx(-1.0)
    assert res.design_effect == pytest.approx(0.0, abs=1e-20)


def test_kish_design_effect_approximation_under_equal_cluster_sizes():
    # deff ~ 1 + (m - 1) ICC (Kish 1965) for equal sizes m; a sanity relation, not an identity
    rng = np.random.default_rng(10)
    g, m = 400, 6
    labels = np.repeat(np.arange(g), m)
    x = rng.normal(0, 0.6, g)[labels] + rng.normal(0, 1, g * m)
    res = clustered_se(x, labels)
    assert res.design_effect == pytest.approx(1 + (m - 1) * res.icc, rel=0.1)


def test_fewer_than_two_clusters_is_nan_with_a_reason():
    res = clustered_se([0.0, 1.0, 1.0], ["a", "a", "a"])
    assert math.isnan(res.se) and math.isnan(res.design_effect) and math.isnan(res.icc)
    assert "2 clusters" in res.reason
    assert res.se_iid == pytest.approx(mean_se([0.0, 1.0, 1.0]))


def test_singleton_clusters_have_no_icc_and_constant_scores_no_design_effect():
    single = clustered_se([0.0, 1.0, 1.0, 0.0], [1, 2, 3, 4])
    assert math.isnan(single.icc) and "one item" in single.reason
    const = clustered_se(np.ones(6), [1, 1, 2, 2, 3, 3])
    assert const.se == 0.0 and math.isnan(const.design_effect) and "constant" in const.reason


def test_input_errors():
    with pytest.raises(StatsInputError, match="labels"):
        clustered_se([0.0, 1.0], [1])
    with pytest.raises(StatsInputError, match="NaN"):
        clustered_se([0.0, float("nan")], [1, 2])
    with pytest.raises(StatsInputError, match="NaN"):
        clustered_se([0.0, 1.0], [1.0, float("nan")])


def test_coverage_clustered_se_restores_nominal_where_iid_does_not():
    # items in 40 clusters of 25 share a cluster difficulty (ICC ~ 0.2): the iid interval
    # undercovers badly, the clustered interval is near 95%.
    rng = np.random.default_rng(2025)
    g, m, sims, true_p = 40, 25, 1500, 0.6
    labels = np.repeat(np.arange(g), m)
    logit = np.log(true_p / (1 - true_p))
    hits_iid = hits_cl = 0
    # the population mean of the cluster-level probabilities, by a large Monte Carlo draw
    u = rng.normal(0, 1.2, 2_000_000)
    mu = float(np.mean(1 / (1 + np.exp(-(logit + u)))))
    for _ in range(sims):
        pc = 1 / (1 + np.exp(-(logit + rng.normal(0, 1.2, g))))
        x = (rng.random(g * m) < pc[labels]).astype(float)
        hits_iid += score_interval(x, "clt").contains(mu)
        hits_cl += score_interval(x, "clustered", clusters=labels).contains(mu)
    assert hits_iid / sims < 0.75
    assert 0.92 <= hits_cl / sims <= 0.97


# ---- Korn-Graubard interval of a clustered proportion ---------------------------------------

@pytest.mark.parametrize("seed,g", [(0, 8), (1, 25), (2, 60)])
def test_korn_graubard_equals_an_independent_computation(seed, g):
    """Independent pieces: statsmodels' cluster-robust OLS SE (CR1), scipy's t quantiles and
    statsmodels' Clopper-Pearson (``proportion_confint(method="beta")``, which accepts the
    non-integer effective counts), assembled as Korn & Graubard (1998) and R survey's
    svyciprop(method = "beta") do."""
    from scipy.stats import t as t_dist
    from statsmodels.stats.proportion import proportion_confint

    from evalcore.stats import korn_graubard_interval
    rng = np.random.default_rng(seed)
    n = 300
    groups = rng.integers(0, g, size=n)
    x = (rng.random(n) < rng.beta(2, 5, g)[groups]).astype(float)
    got = score_interval(x, "clustered", clusters=groups)
    p = x.mean()
    se = _ols_cluster_se(x, groups)
    gg = len(np.unique(groups))
    n_eff = p * (1 - p) / se ** 2
    if gg < 30:
        n_eff = min(n_eff, n)
    n_df = n_eff * (t_dist.ppf(0.975, n - 1) / t_dist.ppf(0.975, gg - 1)) ** 2
    low, high = proportion_confint(p * n_df, n_df, alpha=0.05, method="beta")
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-10)
    assert "Korn-Graubard" in got.detail and f"{gg} clusters" in got.detail
    ki = korn_graubard_interval(p, n, se, gg, se_iid=mean_se(x))
    assert (ki.low, ki.high) == pytest.approx((low, high), abs=1e-10)
    assert ki.se_clustered == pytest.approx(se) and ki.df == gg - 1


def _svyciprop_beta(p, n, se, g, level=0.95, cap=False):
    """R survey's ``svyciprop(method = "beta")`` transcribed line by line (scipy's qt/qbeta):
    n.eff <- coef(m) * (1 - coef(m)) / vcov(m);
    n.eff <- n.eff * (qt(alpha/2, nrow(design) - 1) / qt(alpha/2, degf(design)))^2;
    ci <- c(qbeta(alpha/2, n.eff * rval, n.eff * (1 - rval) + 1),
            qbeta(1 - alpha/2, n.eff * rval + 1, n.eff * (1 - rval))).
    ``cap=True``: the NCHS rule (Parker et al. 2017), a design effect below 1 set to 1,
    i.e. n.eff <= n before the degrees-of-freedom factor."""
    from scipy.stats import beta as qbeta
    from scipy.stats import t as qt
    alpha = 1 - level
    n_eff = p * (1 - p) / se ** 2
    if cap:
        n_eff = min(n_eff, n)
    n_eff = n_eff * (qt.ppf(alpha / 2, n - 1) / qt.ppf(alpha / 2, g - 1)) ** 2
    return (qbeta.ppf(alpha / 2, n_eff * p, n_eff * (1 - p) + 1),
            qbeta.ppf(1 - alpha / 2, n_eff * p + 1, n_eff * (1 - p)))


@pytest.mark.parametrize("g", [20, 40])
def test_korn_graubard_caps_the_effective_n_like_nchs_below_30_clusters_and_like_r_above(g):
    """Design effect below 1 (every cluster of 10 items has 4, 5 or 6 right): R survey never
    caps n_eff, NCHS always does; the product caps below 30 clusters only (docstring)."""
    from evalcore.stats import korn_graubard_interval
    sums = np.resize([4, 5, 6], g)
    labels = np.repeat(np.arange(g), 10)
    x = np.concatenate([np.r_[np.ones(s), np.zeros(10 - s)] for s in sums])
    n, p = x.size, x.mean()
    se = _ols_cluster_se(x, labels)
    assert p * (1 - p) / se ** 2 > n                       # design effect < 1
    r_rule = _svyciprop_beta(p, n, se, g)
    nchs = _svyciprop_beta(p, n, se, g, cap=True)
    assert nchs[1] - nchs[0] > r_rule[1] - r_rule[0] + 1e-3
    ki = korn_graubard_interval(p, n, se, g, se_iid=mean_se(x))
    got = score_interval(x, "clustered", clusters=labels)
    expected = nchs if g < 30 else r_rule
    assert (ki.low, ki.high) == pytest.approx(expected, abs=1e-12)
    assert (got.low, got.high) == pytest.approx(expected, abs=1e-12)
    assert ki.floored == (g < 30)


def test_korn_graubard_agrees_with_r_and_nchs_when_the_design_effect_exceeds_1():
    from evalcore.stats import korn_graubard_interval
    rng = np.random.default_rng(3)
    for g in (12, 45):
        labels = np.repeat(np.arange(g), 8)
        x = (rng.random(8 * g) < rng.beta(1, 3, g)[labels]).astype(float)
        n, p, se = x.size, x.mean(), _ols_cluster_se(x, labels)
        assert p * (1 - p) / se ** 2 < n                   # design effect > 1
        ki = korn_graubard_interval(p, n, se, g, se_iid=mean_se(x))
        for cap in (False, True):
            assert (ki.low, ki.high) == pytest.approx(_svyciprop_beta(p, n, se, g, cap=cap),
                                                      abs=1e-12)


def test_korn_graubard_edges():
    from evalcore.stats import clopper_pearson_interval, korn_graubard_interval
    # no successes: no spread, the nominal n is used: Clopper-Pearson's 0 of n with df factor
    ki = korn_graubard_interval(0.0, 200, 0.0, 10, se_iid=0.0)
    assert ki.low == 0.0 and ki.high > clopper_pearson_interval(0, 200).high
    assert "nominal n" in ki.detail
    # independent items, few clusters: never narrower than with the nominal n (cap), flagged
    ki = korn_graubard_interval(0.4, 200, 0.02, 10, se_iid=0.0347)   # deff < 1: n_eff 600
    assert ki.floored and "effective n 200.0 of 200" in ki.detail
    # many clusters: the cap does not apply
    assert not korn_graubard_interval(0.4, 200, 0.02, 40, se_iid=0.0347).floored
    # rare score, few clusters: the page is told coverage can fall short
    assert "no interval evalbars offers reliably reaches 95%" in \
        korn_graubard_interval(0.04, 400, 0.02, 8, se_iid=0.0098).detail
    with pytest.raises(StatsInputError):
        korn_graubard_interval(0.4, 200, 0.02, 1, se_iid=0.03)
    with pytest.raises(StatsInputError):
        korn_graubard_interval(1.4, 200, 0.02, 10, se_iid=0.03)
def test_grouped_clustered_intervals_equal_score_interval_per_group():
    # several runs in one pass: G >= 30 (t interval), G < 30 (union with the iid interval),
    # continuous scores at small n (t_{n-1} for the iid side), one cluster (NaN), one item
    rng = np.random.default_rng(5)
    cases = [(2000, 100, True), (60, 10, True), (25, 4, False), (45, 45, False),
             (12, 1, True), (300, 12, False), (1, 1, True)]
    xs, cs, gs = [], [], []
    for gi, (n, g, binary) in enumerate(cases):
        x = (rng.random(n) < 0.6).astype(float) if binary else rng.random(n) * 1.2 - 0.1
        xs.append(x)
        cs.append(rng.integers(0, g, n) + 3)      # codes shared between groups, with gaps
        gs.append(np.full(n, gi))
    res = grouped_clustered_intervals(np.concatenate(xs), np.concatenate(cs),
                                      np.concatenate(gs), confidence=0.9)
    for gi in range(len(cases)):
        ref = score_interval(xs[gi], "clustered", clusters=cs[gi], confidence=0.9)
        got = (res.low[gi], res.high[gi], res.se[gi])
        assert np.allclose(got, (ref.low, ref.high, ref.se), rtol=1e-12, equal_nan=True), gi
        assert res.n[gi] == xs[gi].size
        assert res.n_clusters[gi] == len(np.unique(cs[gi]))
    with pytest.raises(StatsInputError):
        grouped_clustered_intervals([0.1, np.nan], [0, 1], [0, 0])


def test_clustered_intervals_of_matrices_equal_the_grouped_rows_bit_for_bit():
    # the matrices' columns are the groups; the same numbers as grouped_clustered_intervals
    # on the present entries in item-major order: 0/1 and continuous blocks, codes shared by
    # the columns or not, missing items, a column without items, more items than a pairwise
    # summation block
    rng = np.random.default_rng(21)
    blocks, xs, cs, gs, first = [], [], [], [], 0
    for b, (m, r) in enumerate([(1200, 7), (300, 4), (90, 3), (40, 1)]):
        x = (rng.random((m, r)) < 0.4).astype(float) if b % 2 == 0 else rng.random((m, r))
        codes = (np.repeat(rng.integers(0, 60, size=m)[:, None], r, axis=1) if b != 1
                 else rng.integers(0, 25, size=(m, r)))
        if b >= 1:
            x[rng.random((m, r)) < 0.15] = np.nan
            codes[np.isnan(x)] = -1          # ignored where the item is missing
        if b == 2:
            x[:, 1] = np.nan
        blocks.append((x, codes))
        ii, jj = np.nonzero(~np.isnan(x))
        xs.append(x[ii, jj]), cs.append(codes[ii, jj]), gs.append(jj + first)
        first += r
    got = clustered_intervals_of_matrices(blocks, confidence=0.9)
    ref = grouped_clustered_intervals(np.concatenate(xs), np.concatenate(cs),
                                      np.concatenate(gs), confidence=0.9)
    assert got.estimate.size == first
    for f in ("estimate", "low", "high", "se", "se_iid", "n", "n_clusters"):
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
    assert got.n[7 + 4 + 1] == 0 and np.isnan(got.se[7 + 4 + 1])   # the empty column
    # the blocks split over two calls with one cluster-sum width: the numbers of one call
    width = max(int(c.max()) + 1 for _, c in blocks)
    a = clustered_intervals_of_matrices(blocks[:2], confidence=0.9, n_codes=width)
    b = clustered_intervals_of_matrices(blocks[2:], confidence=0.9, n_codes=width)
    for f in ("estimate", "low", "high", "se", "se_iid", "n", "n_clusters"):
        np.testing.assert_array_equal(np.concatenate([getattr(a, f), getattr(b, f)]),
                                      getattr(ref, f))
    with pytest.raises(StatsInputError, match="n_codes"):
        clustered_intervals_of_matrices(blocks, n_codes=width - 1)
    empty = clustered_intervals_of_matrices([])
    assert empty.n.size == 0 and empty.confidence == 0.95
    with pytest.raises(StatsInputError, match="one shape"):
        clustered_intervals_of_matrices([(np.zeros((3, 2)), np.zeros((3, 1), dtype=int))])
    with pytest.raises(StatsInputError, match="non-negative"):
        clustered_intervals_of_matrices([(np.zeros((2, 1)), np.array([[0], [-1]]))])


def test_codes_repeating_one_column_give_the_numbers_of_the_whole_matrix():
    # codes as a read-only view repeating one column (np.broadcast_to, what the store gives
    # when every run has the same labels): bit for bit the numbers of the same codes as a
    # whole matrix; every item present or not, 0/1 or continuous, one or more columns,
    # codes not in item order, a code column with gaps, split calls with one width
    rng = np.random.default_rng(5)
    blocks, views = [], []
    for b, (m, r) in enumerate([(2000, 50), (300, 4), (90, 3), (40, 1), (25, 2)]):
        x = (rng.random((m, r)) < 0.6).astype(float) if b % 2 == 0 else rng.random((m, r))
        col = rng.choice(np.arange(0, 3 * m, 3), size=m) if b != 4 else np.zeros(m, int)
        if b == 2:
            x[rng.random((m, r)) < 0.2] = np.nan
        view = np.broadcast_to(col[:, None], (m, r))
        assert view.strides[1] == 0 or r == 1
        blocks.append((x, np.repeat(col[:, None], r, axis=1)))
        views.append((x, view))
    want = clustered_intervals_of_matrices(blocks, confidence=0.95)
    got = clustered_intervals_of_matrices(views, confidence=0.95)
    width = max(int(c.max()) + 1 for _, c in blocks)
    half = [clustered_intervals_of_matrices(views[:2], n_codes=width),
            clustered_intervals_of_matrices(views[2:], n_codes=width)]
    for f in ("estimate", "low", "high", "se", "se_iid", "n", "n_clusters"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
        np.testing.assert_array_equal(np.concatenate([getattr(h, f) for h in half]),
                                      getattr(want, f))
    assert (got.n_clusters[:50] == len(np.unique(blocks[0][1][:, 0]))).all()
    assert np.isnan(got.se[-2:]).all()          # one cluster: no clustered SE
    with pytest.raises(StatsInputError, match="non-negative"):
        clustered_intervals_of_matrices([(np.zeros((2, 3)),
                                          np.broadcast_to(np.array([[0], [-1]]), (2, 3)))])


def test_t_quantiles_once_per_distinct_df_equal_scipy_elementwise():
    """``_t_quantiles`` (the board's critical values, one per distinct df) gives scipy's
    elementwise ``t.ppf`` bit for bit, in the input's order."""
    from scipy.stats import t as t_dist

    from evalcore.stats.clustered import _t_quantiles
    df = np.array([99.0, 1.0, 99.0, 4.0, 1999.0, 1.0, 99.0, 29.0])
    for q in (0.975, 0.95, 0.5 + 0.8 / 2):
        got = _t_quantiles(q, df)
        want = t_dist.ppf(q, df)
        assert got.shape == df.shape
        assert np.array_equal(got, want)
    assert _t_quantiles(0.975, np.array([])).shape == (0,)
