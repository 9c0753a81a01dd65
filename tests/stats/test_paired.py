"""evalcore.stats.paired against scipy, statsmodels, R's documented mcnemar.test and the fixtures."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evalcore.stats import (StatsInputError, clustered_se, mcnemar, mean_se, paired_difference,
                            required_items)


# --- McNemar -------------------------------------------------------------------------------

@pytest.mark.parametrize("b,c", [(1, 0), (7, 0), (9, 1), (6, 4), (86, 150), (30, 12), (3, 17)])
def test_mcnemar_matches_statsmodels(b, c):
    ours = mcnemar(b, c)
    table = [[0, b], [c, 0]]
    exact = sm_mcnemar(table, exact=True)
    chi = sm_mcnemar(table, exact=False, correction=True)
    assert ours.p_exact == pytest.approx(exact.pvalue, rel=1e-12)
    assert ours.chi2_cc == pytest.approx(chi.statistic, rel=1e-12)
    assert ours.p_chi2_cc == pytest.approx(chi.pvalue, rel=1e-12)


@pytest.mark.parametrize("b,c", [(1, 0), (9, 1), (6, 4), (20, 35)])
def test_mcnemar_exact_and_midp_against_scipy_binomial(b, c):
    m, lo = b + c, min(b, c)
    ref = stats.binomtest(lo, m, 0.5).pvalue  # two-sided exact, symmetric at 1/2
    assert mcnemar(b, c).p_exact == pytest.approx(min(1.0, ref), rel=1e-12)
    # mid-p (Fagerland et al. 2013): exact p minus the probability of the observed table
    midp = 2 * stats.binom.cdf(lo, m, 0.5) - stats.binom.pmf(lo, m, 0.5)
    assert mcnemar(b, c).p_midp == pytest.approx(min(1.0, midp), rel=1e-12)
    assert mcnemar(b, c).p_midp < mcnemar(b, c).p_exact


def test_mcnemar_r_documented_example():
    # R ?mcnemar.test, Agresti (1990) presidential approval: Performance matrix(c(794, 86, 150, 570))
    # "McNemar's chi-squared = 16.818, df = 1, p-value = 4.115e-05"
    res = mcnemar(86, 150)
    assert round(res.chi2_cc, 3) == 16.818
    assert f"{res.p_chi2_cc:.3e}" == "4.115e-05"


def test_mcnemar_reference_004_worked_example():
    # 004 sec. 4: 100 questions, 79% vs 71%, 10 discordant (9 vs 1) "only just crosses p = 0.05";
    # b = 6, c = 4 "you'd get chi^2 = 0.1, not remotely significant".
    assert mcnemar(9, 1).chi2_cc == pytest.approx(4.9)
    assert 0.01 < mcnemar(9, 1).p_chi2_cc < 0.05
    assert mcnemar(6, 4).chi2_cc == pytest.approx(0.1)
    assert mcnemar(6, 4).p_chi2_cc > 0.5


def test_mcnemar_edge_cases():
    none = mcnemar(0, 0)
    assert (none.p_exact, none.p_midp, none.chi2_cc, none.p_chi2_cc) == (1.0, 1.0, 0.0, 1.0)
    # b = c: R applies no continuity correction (statistic 0, p = 1); statsmodels' formula
    # would give (|b-c|-1)^2/(b+c) = 1/(2b). We follow R; documented in mcnemar().
    tie = mcnemar(5, 5)
    assert tie.chi2_cc == 0.0 and tie.p_chi2_cc == 1.0 and tie.p_exact == 1.0
    assert sm_mcnemar([[0, 5], [5, 0]], exact=False).statistic == pytest.approx(0.1)
    with pytest.raises(StatsInputError):
        mcnemar(-1, 3)
    with pytest.raises(StatsInputError):
        mcnemar(1.5, 3)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 500), st.integers(0, 500))
def test_property_mcnemar_symmetric_in_b_and_c(b, c):
    one, two = mcnemar(b, c), mcnemar(c, b)
    assert (one.p_exact, one.p_midp, one.chi2_cc, one.p_chi2_cc) == \
        (two.p_exact, two.p_midp, two.chi2_cc, two.p_chi2_cc)
    assert 0.0 <= one.p_midp <= one.p_exact <= 1.0


# --- paired difference -----------------------------------------------------------------------

def test_paired_se_matches_scipy_paired_t_statistic():
    rng = np.random.default_rng(0)
    difficulty = rng.normal(size=300)
    a = difficulty + rng.normal(0, 0.5, 300)
    b = difficulty + 0.1 + rng.normal(0, 0.5, 300)
    res = paired_difference(a, b)
    t = stats.ttest_rel(b, a).statistic
    assert res.diff == pytest.approx(np.mean(b - a))
    assert res.se == pytest.approx(res.diff / t, rel=1e-12)
    assert res.se_unpaired == pytest.approx(math.hypot(stats.sem(a), stats.sem(b)), rel=1e-12)
    assert res.correlation == pytest.approx(stats.pearsonr(a, b).statistic, rel=1e-12)
    assert res.low == pytest.approx(res.diff - stats.norm.ppf(0.975) * res.se)
    assert res.p_value == pytest.approx(2 * stats.norm.sf(abs(t)), rel=1e-9)
    assert res.b is None and res.mcnemar is None  # not 0/1 scores


def test_paired_fixture_mistral_vs_dialogpt(fixtures_dir):
    # PROVENANCE.md: same 15 arc_easy docs, "Paired discordance on acc: b=7 (Mistral right,
    # DialoGPT wrong), c=0". A = DialoGPT, B = Mistral.
    def acc(name):
        data = json.loads((fixtures_dir / "lm_eval" / name).read_text())
        rows = sorted(data["samples"]["arc_easy"], key=lambda r: r["doc_id"])
        return np.array([float(r["acc"]) for r in rows]), data["results"]["arc_easy"]
    a, res_a = acc("results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json")
    b, res_b = acc("results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json")
    res = paired_difference(a, b)
    assert (res.b, res.c) == (7, 0)
    assert res.mcnemar.p_exact == pytest.approx(2 * 0.5 ** 7)  # 0.015625
    assert res.diff == pytest.approx(res_b["acc,none"] - res_a["acc,none"])
    assert mean_se(a) == pytest.approx(res_a["acc_stderr,none"], rel=1e-12)
    assert res.se_unpaired == pytest.approx(math.hypot(res_a["acc_stderr,none"],
                                                       res_b["acc_stderr,none"]), rel=1e-12)


def test_reference_002_exercise_1bc():
    # 002 sec. 12 exercise 1: A 80.0% and B 81.6% of 500 items.
    # (b) unpaired: SE 0.0249, CI 1.6% +- 4.9%, contains 0. (c) paired, sigma_d = 0.4:
    # SE 0.4/sqrt(500) = 0.0179, CI 1.6% +- 3.5%, still contains 0; ~4900 items needed.
    # Paired table with b = 44 (only B right), c = 36 (only A right), 364 both right:
    # mean(d) = 0.016, sd(d) = 0.400.
    a = np.r_[np.ones(364), np.zeros(44), np.ones(36), np.zeros(56)]
    b = np.r_[np.ones(364), np.ones(44), np.zeros(36), np.zeros(56)]
    res = paired_difference(a, b)
    assert (a.mean(), b.mean()) == (0.8, 0.816)
    assert round(res.se_unpaired, 4) == 0.0249
    assert round(100 * 1.96 * res.se_unpaired, 1) == 4.9
    assert round(float(np.std(b - a, ddof=1)), 3) == 0.4
    assert round(res.se, 4) == 0.0179
    assert round(100 * (res.high - res.diff), 1) == 3.5
    assert res.low < 0 < res.high
    assert (res.b, res.c) == (44, 36)
    assert required_items(0.016, sd_diff=0.4) == pytest.approx(4900, rel=0.005)


def test_paired_with_clusters_uses_clustered_se_of_d():
    rng = np.random.default_rng(5)
    labels = np.repeat(np.arange(30), 8)
    a = (rng.random(240) < 0.5).astype(float)
    b = (rng.random(240) < 0.55).astype(float)
    res = paired_difference(a, b, clusters=labels)
    assert res.se == pytest.approx(clustered_se(b - a, labels).se, rel=1e-13)
    assert res.method == "paired-clustered" and res.n_clusters == 30
    one = paired_difference(a, b, clusters=np.zeros(240))
    assert math.isnan(one.se) and "2 clusters" in one.detail


def test_correlation_of_a_constant_run_is_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = paired_difference(np.ones(10), np.r_[np.ones(5), np.zeros(5)])
    assert math.isnan(res.correlation)
    assert (res.b, res.c) == (0, 5)


def test_paired_input_errors():
    with pytest.raises(StatsInputError, match="same items"):
        paired_difference([0.0, 1.0], [1.0])
    with pytest.raises(StatsInputError, match="NaN"):
        paired_difference([0.0, float("nan")], [1.0, 1.0])
    with pytest.raises(StatsInputError):
        paired_difference([], [])


def test_simulation_paired_se_smaller_than_unpaired_when_positively_correlated():
    # shared item difficulty makes the two runs' scores positively correlated
    rng = np.random.default_rng(7)
    n, sims = 400, 200
    ratios = []
    for _ in range(sims):
        ability = rng.normal(0, 1.5, n)
        a = (rng.random(n) < 1 / (1 + np.exp(-ability))).astype(float)
        b = (rng.random(n) < 1 / (1 + np.exp(-(ability + 0.1)))).astype(float)
        res = paired_difference(a, b)
        assert res.correlation > 0
        ratios.append(res.se / res.se_unpaired)
    assert max(ratios) < 1.0
    assert np.mean(ratios) < 0.9
    # identity: se^2 = (var_a + var_b - 2 cov_ab)/n and se_unpaired^2 = (var_a + var_b)/n


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=-100, max_value=100, allow_nan=False), min_size=2, max_size=60))
def test_property_run_against_itself_is_exactly_zero(values):
    res = paired_difference(values, values)
    assert res.diff == 0.0 and res.se == 0.0 and res.low == res.high == 0.0
    assert res.p_value == 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=80),
       st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=80))
def test_property_binary_swap_negates_and_swaps_b_c(xs, ys):
    n = min(len(xs), len(ys))
    a, b = np.array(xs[:n]), np.array(ys[:n])
    ab, ba = paired_difference(a, b), paired_difference(b, a)
    assert ab.diff == -ba.diff and ab.se == ba.se
    assert (ab.b, ab.c) == (ba.c, ba.b)
    assert ab.diff == pytest.approx((ab.b - ab.c) / n)
    assert ab.mcnemar.p_exact == ba.mcnemar.p_exact


# --- column-vectorised version ----------------------------------------------------------------

def test_paired_columns_equals_paired_difference_per_column_with_missing_items():
    from evalcore.stats import paired_columns
    rng = np.random.default_rng(12)
    x = (rng.random((300, 5)) < np.array([0.5, 0.55, 0.6, 0.5, 0.7])).astype(float)
    x[rng.random((300, 5)) < 0.05] = np.nan  # some items missing in some runs
    res = paired_columns(x, 2)
    assert res.test == "mcnemar-exact" and math.isnan(res.p_value[2])
    for j in (0, 1, 3, 4):
        ok = ~np.isnan(x[:, j]) & ~np.isnan(x[:, 2])
        one = paired_difference(x[ok, 2], x[ok, j])
        assert res.n_shared[j] == ok.sum()
        assert res.diff[j] == pytest.approx(one.diff, abs=1e-14)
        assert res.se[j] == pytest.approx(one.se, rel=1e-12)
        assert (res.b[j], res.c[j]) == (one.b, one.c)
        assert res.p_value[j] == pytest.approx(one.mcnemar.p_exact, rel=1e-12)


def test_paired_columns_continuous_uses_the_paired_z_test():
    from evalcore.stats import paired_columns
    rng = np.random.default_rng(13)
    x = rng.normal(size=(80, 3)) + rng.normal(size=(80, 1))
    res = paired_columns(x, 0)
    one = paired_difference(x[:, 0], x[:, 1])
    assert res.test == "paired-z" and res.b is None
    assert res.p_value[1] == pytest.approx(one.p_value, rel=1e-10)
    assert res.diff[0] == 0.0 and math.isnan(res.p_value[0])
    with pytest.raises(StatsInputError, match="ref"):
        paired_columns(x, 3)


def test_vectorised_p_values_against_scipy():
    """normal_p_value and mcnemar_exact_p: elementwise, equal to scipy's tests."""
    from evalcore.stats import mcnemar_exact_p, normal_p_value

    diff = np.array([0.1, -0.3, 0.0, 0.2, np.nan, 0.05])
    se = np.array([0.05, 0.1, 0.0, 0.0, 0.1, np.inf])
    p = normal_p_value(diff, se)
    assert p[:2] == pytest.approx(2 * stats.norm.sf(np.abs(diff[:2] / se[:2])), rel=1e-12)
    assert (p[2], p[3]) == (1.0, 0.0)
    assert np.isnan(p[4]) and np.isnan(p[5])
    b = np.array([0, 3, 12, 40, 7])
    c = np.array([0, 9, 12, 25, 0])
    want = [1.0] + [stats.binomtest(min(x, y), x + y, 0.5).pvalue for x, y in zip(b[1:], c[1:])]
    assert mcnemar_exact_p(b, c) == pytest.approx(want, rel=1e-12)
    assert mcnemar_exact_p(b, c)[1:] == pytest.approx(
        [mcnemar(int(x), int(y)).p_exact for x, y in zip(b[1:], c[1:])], rel=1e-12)
    with pytest.raises(ValueError):
        mcnemar_exact_p([1, -1], [2, 2])
