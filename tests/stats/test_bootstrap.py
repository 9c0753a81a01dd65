"""evalcore.stats.bootstrap against scipy.stats.bootstrap and the analytic clustered SE."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalcore.stats import (StatsInputError, bootstrap_interval, bootstrap_means_shared,
                            bootstrap_proportions, clustered_se, mean_difference,
                            paired_bootstrap_ranks)

B = 20000  # resamples for comparisons with scipy: Monte Carlo error of a 2.5% quantile ~ 1-2% of the SE


@pytest.fixture(scope="module")
def skewed():
    return np.random.default_rng(11).lognormal(size=150)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_mean_interval_agrees_with_scipy_bootstrap(skewed, method):
    ours = bootstrap_interval(skewed, np.mean, n_resamples=B, seed=1, method=method)
    ref = stats.bootstrap((skewed,), np.mean, n_resamples=B, method=method,
                          random_state=np.random.default_rng(2))
    tol = 0.08 * ref.standard_error
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.03)
    assert ours.estimate == pytest.approx(skewed.mean())
    assert ours.method == f"bootstrap-{method}"


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_generic_vectorised_statistic_agrees_with_scipy(skewed, method):
    def trimmed(x, axis):
        return stats.trim_mean(x, 0.1, axis=axis)
    ours = bootstrap_interval(skewed, trimmed, n_resamples=B, seed=3, method=method)
    ref = stats.bootstrap((skewed,), trimmed, n_resamples=B, method=method,
                          random_state=np.random.default_rng(4))
    tol = 0.08 * ref.standard_error
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)


def test_paired_two_column_data_agrees_with_scipy_paired(skewed):
    rng = np.random.default_rng(5)
    a = skewed
    b = a + rng.normal(0.1, 0.3, size=a.size)
    ours = bootstrap_interval(np.c_[a, b], mean_difference, n_resamples=B, seed=6, method="bca")
    ref = stats.bootstrap((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True,
                          n_resamples=B, method="bca", random_state=np.random.default_rng(7))
    tol = 0.08 * ref.standard_error
    assert ours.estimate == pytest.approx(np.mean(b - a))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)


def test_generic_path_equals_fast_path_for_the_mean(skewed):
    # same seed, same index draws: the generic jackknife/resampling must give the fast path's numbers
    fast = bootstrap_interval(skewed, np.mean, n_resamples=1000, seed=9, method="bca")
    slow = bootstrap_interval(skewed, lambda x, axis: np.mean(x, axis=axis), n_resamples=1000,
                              seed=9, method="bca")
    assert slow.low == pytest.approx(fast.low, rel=1e-12)
    assert slow.high == pytest.approx(fast.high, rel=1e-12)


def test_singleton_clusters_reduce_to_item_resampling(skewed):
    iid = bootstrap_interval(skewed, n_resamples=1000, seed=12, method="bca")
    single = bootstrap_interval(skewed, n_resamples=1000, seed=12, method="bca",
                                clusters=np.arange(skewed.size))
    assert single.low == pytest.approx(iid.low, rel=1e-12)
    assert single.high == pytest.approx(iid.high, rel=1e-12)
    assert single.n_clusters == skewed.size and iid.n_clusters is None


def test_cluster_bootstrap_se_matches_the_analytic_clustered_se():
    rng = np.random.default_rng(21)
    g, m = 300, 5
    clusters = np.repeat(np.arange(g), m)
    p = np.clip(0.6 + rng.normal(0, 0.2, g), 0, 1)[clusters]
    x = (rng.random(g * m) < p).astype(float)
    boot = bootstrap_interval(x, n_resamples=5000, seed=1, clusters=clusters)
    analytic = clustered_se(x, clusters)
    assert boot.se == pytest.approx(analytic.se, rel=0.06)
    iid = bootstrap_interval(x, n_resamples=5000, seed=1)
    assert iid.se == pytest.approx(analytic.se_iid, rel=0.06)
    assert boot.se > 1.15 * iid.se  # clustering widens the error bar (sqrt(deff) ~ 1.3 here)


def test_seed_reproducible_and_stated(skewed):
    a = bootstrap_interval(skewed, n_resamples=500, seed=42)
    b = bootstrap_interval(skewed, n_resamples=500, seed=42)
    c = bootstrap_interval(skewed, n_resamples=500, seed=43)
    assert a == b and (a.low, a.high) != (c.low, c.high)
    assert "500 resamples, seed 42" in a.label


def test_constant_scores_give_a_labelled_zero_width_interval():
    res = bootstrap_interval(np.zeros(30), n_resamples=200)
    assert res.low == res.high == 0.0 and "zero-width" in res.detail


def test_two_dimensional_default_is_the_mean_of_item_means():
    x = np.random.default_rng(0).random((40, 3))
    res = bootstrap_interval(x, n_resamples=200)
    assert res.estimate == pytest.approx(x.mean())


@pytest.mark.parametrize("kwargs,match", [
    (dict(scores=[1.0, float("nan")]), "NaN"),
    (dict(scores=[]), "non-empty"),
    (dict(scores=[0.0, 1.0, 1.0], method="studentized"), "percentile"),
    (dict(scores=[0.0, 1.0, 1.0], n_resamples=10), "at least 100"),
    (dict(scores=[0.0, 1.0, 1.0], clusters=[1, 1, 1]), "2 clusters"),
    (dict(scores=[0.0, 1.0, 1.0], clusters=[1, 2]), "labels"),
    (dict(scores=[0.0, 1.0, 1.0], statistic=np.median, clusters=[1, 2, 2]), "mean"),
    (dict(scores=[0.0, 1.0, 1.0], statistic=lambda x, axis: 1.0), "vectorised"),
    (dict(scores=[[0.0, 1.0, 1.0]], statistic=mean_difference), "two columns"),
])
def test_bad_requests_raise(kwargs, match):
    with pytest.raises(StatsInputError, match=match):
        bootstrap_interval(**kwargs)


# --- rank intervals ----------------------------------------------------------------------

def test_rank_intervals_for_well_separated_runs():
    rng = np.random.default_rng(3)
    n = 2000
    m = np.c_[rng.random(n) < 0.3, rng.random(n) < 0.5, rng.random(n) < 0.7].astype(float)
    res = paired_bootstrap_ranks(m, n_resamples=500, seed=0)
    assert res.rank == (3, 2, 1)
    assert res.rank_low == (3, 2, 1) and res.rank_high == (3, 2, 1)
    lower_better = paired_bootstrap_ranks(m, n_resamples=200, higher_is_better=False)
    assert lower_better.rank == (1, 2, 3)


def test_rank_intervals_resample_the_same_items_for_every_run():
    # run B equals run A except on 5 items where only B is right. Paired resampling can
    # never put A ahead of B; independent resampling would, about half the time.
    rng = np.random.default_rng(8)
    a = (rng.random(1000) < 0.5).astype(float)
    b = a.copy()
    b[np.flatnonzero(a == 0)[:5]] = 1.0
    res = paired_bootstrap_ranks(np.c_[a, b], n_resamples=2000, seed=1)
    assert res.rank == (2, 1)
    assert res.rank_low[1] == res.rank_high[1] == 1
    assert res.rank_high[0] == 2


def test_rank_intervals_ties_and_overlap():
    rng = np.random.default_rng(9)
    a = (rng.random(200) < 0.6).astype(float)
    c = (rng.random(200) < 0.6).astype(float)
    res = paired_bootstrap_ranks(np.c_[a, a, c], n_resamples=1000, seed=2,
                                 clusters=np.repeat(np.arange(40), 5))
    assert res.rank[0] == res.rank[1]  # identical runs share a rank
    assert all(lo <= r <= hi for lo, r, hi in zip(res.rank_low, res.rank, res.rank_high))
    assert res.n_clusters == 40
    with pytest.raises(StatsInputError, match="NaN"):
        paired_bootstrap_ranks(np.array([[1.0, np.nan], [0.0, 1.0]]))


# ---- the fast paths: binomial draws for 0/1 scores, shared weights across runs ------------

def test_binary_scores_resample_counts_from_the_binomial():
    # the count of ones among n draws with replacement is Binomial(n, k/n): the interval
    # agrees with scipy's index resampling within Monte Carlo error
    x = (np.random.default_rng(3).random(400) < 0.3).astype(float)
    ours = bootstrap_interval(x, n_resamples=B, seed=2)
    ref = stats.bootstrap((x,), np.mean, n_resamples=B, method="percentile",
                          random_state=np.random.default_rng(5))
    tol = 0.05 * ref.standard_error * 4
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.03)
    # and the draws are exactly binomial: scipy's inverse CDF at the seed's uniforms gives
    # the same counts, so the same quantiles bit for bit (and the sd up to rounding)
    draws = stats.binom.ppf(np.random.default_rng(2).random(B), 400, x.mean()) / 400
    assert ours.low == np.quantile(draws, 0.025) and ours.high == np.quantile(draws, 0.975)
    assert ours.se == pytest.approx(np.std(draws, ddof=1), rel=1e-12)


@pytest.mark.parametrize("n,k", [(2000, 1400), (2000, 1), (2000, 1999), (7, 3), (1, 1),
                                 (25_000, 12_345), (100_000, 4)])
def test_binomial_draws_are_scipys_inverse_cdf(n, k):
    # bootstrap_proportions' counts table against scipy.stats.binom.ppf at the same
    # uniforms, from small n to large n and near 0 and n (the CDF table's window)
    ours = bootstrap_proportions([k], [n], n_resamples=5000, seed=9, confidence=0.9)
    draws = stats.binom.ppf(np.random.default_rng(9).random(5000), n, k / n) / n
    assert ours.low[0] == np.quantile(draws, 0.05)
    assert ours.high[0] == np.quantile(draws, 0.95)
    assert ours.se[0] == pytest.approx(np.std(draws, ddof=1), rel=1e-12, abs=1e-15)
    assert bool(ours.zero_width[0]) == (np.ptp(draws) == 0)


def test_binomial_bootstrap_variance_is_unbiased_over_seeds():
    # the resampled means' variance averages p(1-p)/n over seeds (the distribution of
    # resampling items); 300 seeds: Monte Carlo error of the mean ratio ~ 0.2%
    k, n = np.array([700.0, 1990.0, 20.0]), np.full(3, 2000.0)
    ratio = np.array([(bootstrap_proportions(k, n, n_resamples=2000, seed=s).se) ** 2
                      for s in range(300)]) / (k / n * (1 - k / n) / n)
    assert ratio.mean(axis=0) == pytest.approx(1.0, abs=0.01)


def test_bootstrap_proportions_equal_the_per_cell_bootstrap():
    rng = np.random.default_rng(8)
    cells = [(rng.random(n) < p).astype(float) for n, p in
             [(2000, 0.7), (150, 0.2), (37, 0.5), (10, 0.0), (25, 1.0)]]
    many = bootstrap_proportions([c.sum() for c in cells], [c.size for c in cells],
                                 n_resamples=700, seed=4, confidence=0.9)
    for i, c in enumerate(cells):
        one = bootstrap_interval(c, n_resamples=700, seed=4, confidence=0.9)
        assert (many.low[i], many.high[i], many.se[i]) == (one.low, one.high, one.se)
        assert many.estimate[i] == c.mean()
        assert bool(many.zero_width[i]) == (c.min() == c.max())
    with pytest.raises(StatsInputError):
        bootstrap_proportions([3], [2])


def test_shared_weights_equal_the_per_run_bootstrap():
    rng = np.random.default_rng(9)
    x = rng.lognormal(size=(300, 6))
    shared = bootstrap_means_shared(x, n_resamples=1500, seed=7)
    for j in range(x.shape[1]):
        one = bootstrap_interval(x[:, j], n_resamples=1500, seed=7)
        assert shared.low[j] == pytest.approx(one.low, rel=1e-12)
        assert shared.high[j] == pytest.approx(one.high, rel=1e-12)
        assert shared.se[j] == pytest.approx(one.se, rel=1e-12)


def test_bootstrap_proportions_in_chunks_equal_one_by_one(monkeypatch):
    # many distinct (n, k) go through the counts table in chunks of rows: the same numbers
    # as each cell alone
    import evalcore.stats.bootstrap_binomial as bs
    monkeypatch.setattr(bs, "CHUNK_ELEMENTS", 2_000)
    rng = np.random.default_rng(12)
    n = rng.integers(1, 3000, size=60).astype(float)
    k = np.floor(rng.random(60) * (n + 1))
    many = bootstrap_proportions(k, n, n_resamples=400, seed=6)
    for i in range(n.size):
        one = bootstrap_proportions([k[i]], [n[i]], n_resamples=400, seed=6)
        assert (many.low[i], many.high[i], many.se[i], many.zero_width[i]) == \
            (one.low[0], one.high[0], one.se[0], one.zero_width[0])
