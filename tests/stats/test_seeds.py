"""evalcore.stats.seeds: seed variance (vs one-way ANOVA and statsmodels MixedLM), the
seed-as-random-effect comparison (vs scipy's Welch test and a direct Satterthwaite formula),
seeds needed (vs statsmodels' noncentral-t power solver)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalcore.stats import (StatsInputError, satterthwaite_df, seed_comparison, seed_variance,
                            seeds_needed)


def _item_level_runs(seed: int, k: int = 6, n: int = 400, tau: float = 0.05, p: float = 0.6):
    """k runs (seeds) of n 0/1 items each, each seed with its own accuracy p + u_s."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, tau, k)
    return [(rng.random(n) < p + u_s).astype(float) for u_s in u]


def test_between_variance_equals_one_way_random_effects_anova():
    runs = _item_level_runs(3)
    n = runs[0].size
    y = [r.mean() for r in runs]
    se = [r.std(ddof=1) / math.sqrt(n) for r in runs]
    res = seed_variance(y, se)
    # ANOVA from sums of squares, written out independently
    grand = np.mean(np.concatenate(runs))
    ssb = sum(n * (r.mean() - grand) ** 2 for r in runs)
    ssw = sum(((r - r.mean()) ** 2).sum() for r in runs)
    msb, msw = ssb / (len(runs) - 1), ssw / (len(runs) * (n - 1))
    assert res.between_var == pytest.approx((msb - msw) / n, rel=1e-10)
    # and scipy's F statistic is MSB / MSW
    assert stats.f_oneway(*runs).statistic == pytest.approx(msb / msw, rel=1e-10)
    assert res.between_sd == pytest.approx(math.sqrt(max(res.between_var, 0.0)))
    assert res.item_se == pytest.approx(math.sqrt(np.mean(np.square(se))))
    assert res.k == 6 and res.mean == pytest.approx(np.mean(y))


def test_between_variance_matches_statsmodels_mixedlm_reml():
    import statsmodels.formula.api as smf
    runs = _item_level_runs(11, k=8, n=300, tau=0.08)
    n = runs[0].size
    res = seed_variance([r.mean() for r in runs], [r.std(ddof=1) / math.sqrt(n) for r in runs])
    assert res.between_var > 0  # REML equals the ANOVA estimator only when it is positive
    df = pd.DataFrame({"y": np.concatenate(runs), "seed": np.repeat(np.arange(len(runs)), n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("y ~ 1", df, groups=df["seed"]).fit(reml=True)
    assert float(fit.cov_re.iloc[0, 0]) == pytest.approx(res.between_var, rel=1e-3)
    assert float(fit.scale) == pytest.approx(np.mean([r.var(ddof=1) for r in runs]), rel=1e-3)


def test_negative_between_variance_is_reported_not_clipped():
    res = seed_variance([0.50, 0.51, 0.505], [0.03, 0.03, 0.03])
    assert res.between_var == pytest.approx(np.var([0.50, 0.51, 0.505], ddof=1) - 0.03 ** 2)
    assert res.between_var < 0 and res.between_sd == 0.0
    assert res.seed_to_item_ratio == 0.0


def test_without_item_ses_the_whole_spread_is_between_seed():
    res = seed_variance([0.4, 0.5, 0.6])
    assert res.between_var == pytest.approx(0.01)
    assert math.isnan(res.item_var) and math.isnan(res.seed_to_item_ratio)


def test_comparison_without_floor_is_welchs_t_test():
    a = [0.512, 0.498, 0.530, 0.507]
    b = [0.551, 0.540, 0.572]
    res = seed_comparison(a, b, confidence=0.95, floor_at_item_variance=False)
    ref = stats.ttest_ind(b, a, equal_var=False)
    assert res.diff == pytest.approx(np.mean(b) - np.mean(a))
    assert res.diff / res.se == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert res.df == pytest.approx(ref.df, rel=1e-12)
    ci = ref.confidence_interval(0.95)
    assert (res.low, res.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert res.floored == (False, False)


def test_satterthwaite_df_direct_formula():
    va, vb, ka, kb = 0.0004, 0.0009, 3, 5
    direct = (va / ka + vb / kb) ** 2 / ((va / ka) ** 2 / (ka - 1) + (vb / kb) ** 2 / (kb - 1))
    assert satterthwaite_df([va / ka, vb / kb], [ka - 1, kb - 1]) == pytest.approx(direct)
    # a known variance adds nothing to the denominator
    assert satterthwaite_df([va / ka, vb / kb], [ka - 1, math.inf]) == pytest.approx(
        (va / ka + vb / kb) ** 2 / ((va / ka) ** 2 / (ka - 1)))
    assert satterthwaite_df([0.1, 0.2], [math.inf, math.inf]) == math.inf
    with pytest.raises(StatsInputError):
        satterthwaite_df([0.1], [0])


def test_item_variance_floor_uses_the_item_variance_with_infinite_df():
    a, b = [0.500, 0.502, 0.501], [0.540, 0.560, 0.520]
    se = [0.02, 0.02, 0.02]
    res = seed_comparison(a, b, se, se)
    # A's seeds spread less than its items allow: A contributes 0.02^2 / 3 with df = inf
    assert res.floored == (True, False)
    va, vb = 0.02 ** 2 / 3, np.var(b, ddof=1) / 3
    assert res.se == pytest.approx(math.sqrt(va + vb))
    assert res.df == pytest.approx((va + vb) ** 2 / (vb ** 2 / 2))
    q = stats.t.ppf(0.975, res.df)
    assert res.high - res.diff == pytest.approx(q * res.se)
    assert "floor" in res.method


def test_comparison_needs_two_seeds_per_side():
    with pytest.raises(StatsInputError, match="two seeds"):
        seed_comparison([0.5], [0.6, 0.61])
    with pytest.raises(StatsInputError):
        seed_comparison([0.5, 0.6], [0.6, 0.61], [0.1], None)


@pytest.mark.parametrize("gap,between,item", [(0.02, 0.0002, 0.0004), (0.05, 0.0001, 0.0003),
                                              (0.03, 0.0004, 0.0), (0.1, 0.001, 0.002)])
def test_seeds_needed_agrees_with_noncentral_t_power(gap, between, item):
    from statsmodels.stats.power import TTestIndPower
    res = seeds_needed(gap, between, item)
    exact = TTestIndPower().solve_power(effect_size=gap / math.sqrt(between + item),
                                        alpha=0.05, power=0.8)
    assert res.seeds in (max(2, math.ceil(exact)), max(2, math.ceil(exact)) + 1)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert res.seeds_normal == max(2, math.ceil(2 * z * z * (between + item) / gap ** 2))
    assert res.seeds >= res.seeds_normal


def test_seeds_needed_edges():
    assert seeds_needed(0.01, 0.0, 0.0).seeds == 2
    assert seeds_needed(1e-6, 0.01, 0.0).seeds is None     # beyond MAX_SEEDS
    # a negative between-seed estimate counts as 0
    assert seeds_needed(0.02, -0.001, 0.0004).run_var == pytest.approx(0.0004)
    with pytest.raises(StatsInputError):
        seeds_needed(0.0, 0.001)


def test_no_variance_anywhere_gives_no_interval_rather_than_a_zero_width_one():
    res = seed_comparison([0.5, 0.5], [0.6, 0.6])
    assert res.diff == pytest.approx(0.1) and res.se == 0.0
    assert math.isnan(res.low) and math.isnan(res.high) and math.isnan(res.p_value)
    assert "noise is unknown, not zero" in res.method
    # with an item SE the floor gives a real interval
    floored = seed_comparison([0.5, 0.5], [0.6, 0.6], [0.02, 0.02], [0.02, 0.02])
    assert floored.floored == (True, True) and floored.high - floored.low > 0
