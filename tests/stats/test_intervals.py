"""evalcore.stats.intervals against scipy, statsmodels, R's documented output and worked examples."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta as beta_dist
from scipy.optimize import brentq
from scipy.stats import binom, binomtest, poisson
from statsmodels.stats.proportion import proportion_confint

from evalcore.errors import AnalysisError
from evalcore.stats import (StatsInputError, beta_interval, chance_level, clopper_pearson_interval,
                            clt_interval, contains_chance, half_width, mean_se, paired_difference,
                            proportion_interval, required_n_for_half_width, score_interval,
                            wilson_interval)
from evalcore.stats.intervals import wilson_modification_cut

GRID = [(0, 1), (1, 1), (0, 30), (1, 30), (15, 30), (29, 30), (30, 30), (7, 13), (400, 500),
        (682, 925), (1, 10000), (9999, 10000)]


# --- Brown, Cai & DasGupta's modified Wilson ---------------------------------------------

def test_modified_wilson_poisson_bounds_closed_forms():
    """x = 1: lambda_1 = -ln(1 - alpha) (chi2 with 2 df is exponential with mean 2);
    x = 2: P(Poisson(lambda_2) >= 2) = alpha, solved here by root finding, not by chi2."""
    iv = wilson_interval(1, 10)
    assert iv.low == pytest.approx(-math.log(0.95) / 10, abs=1e-15)
    assert "Brown-Cai-DasGupta" in iv.detail and "1 success" in iv.detail
    lam2 = brentq(lambda lam: poisson.sf(1, lam) - 0.05, 1e-6, 5)
    assert wilson_interval(2, 40).low == pytest.approx(lam2 / 40, rel=1e-9)
    lam3 = brentq(lambda lam: poisson.sf(2, lam) - 0.05, 1e-6, 5)
    assert wilson_interval(3, 80).low == pytest.approx(lam3 / 80, rel=1e-9)
    # x* = 2 for n <= 50: 3 of 50 keeps Wilson's bound; 3 of 51 gets the Poisson one
    assert wilson_interval(3, 50).low == wilson_interval(3, 50, modified=False).low
    assert wilson_interval(3, 51).low == pytest.approx(lam3 / 51, rel=1e-9)
    # symmetric at the top: n - 1 of n
    top = wilson_interval(9, 10)
    assert top.high == pytest.approx(1 + math.log(0.95) / 10, abs=1e-15)
    assert "1 failure" in top.detail
    # k = 0 and k = n are untouched (the Wilson bound is already 0 / 1 there)
    assert wilson_interval(0, 10).low == 0.0 and wilson_interval(10, 10).high == 1.0
    assert wilson_interval(0, 10).detail == ""


@pytest.mark.parametrize("k,n,low,high", [
    # Brown, Cai & DasGupta (2001) sec. 4.1.1 read literally: for n <= x* = 2 the lower-bound
    # range x = 1..x* contains x = n and the upper-bound range x = n-x*..n-1 contains x = 0.
    # Expected values from lambda_x solved here by root finding (P(Poisson(lambda) >= x) =
    # 0.05), not by the chi2 form the product uses; BCD print lambda_1 = 0.051, lambda_2 =
    # 0.355, so 0 of 1 -> 1 - 0.0513 = 0.9487 and 0 of 2 -> 1 - 0.3554/2 = 0.8223.
    (0, 1, 0.0, 0.9487), (1, 1, 0.0513, 1.0), (0, 2, 0.0, 0.8223), (2, 2, 0.1777, 1.0)])
def test_modified_wilson_applies_at_k_0_and_k_n_when_n_is_at_most_2(k, n, low, high):
    lam = {x: brentq(lambda v, x=x: poisson.sf(x - 1, v) - 0.05, 1e-9, 10) for x in (1, 2)}
    iv = wilson_interval(k, n)
    exact_low = 0.0 if k == 0 else lam[k] / n
    exact_high = 1.0 if k == n else 1.0 - lam[n - k] / n
    assert (iv.low, iv.high) == pytest.approx((exact_low, exact_high), abs=1e-9)
    assert (round(iv.low, 4), round(iv.high, 4)) == (low, high)
    assert "Brown-Cai-DasGupta" in iv.detail
    # the textbook interval is narrower there (0 of 1: 0.7935; 0 of 2: 0.6576)
    tb = wilson_interval(k, n, modified=False)
    assert iv.high - iv.low > tb.high - tb.low
    # the array form the coverage check and the leaderboard use gives the same bounds
    from evalcore.stats import _interval_arrays as ia
    lo, hi = ia.modified_wilson_bounds(np.array([k]), n, 1.959963984540054, 0.05)
    assert (lo[0], hi[0]) == pytest.approx((iv.low, iv.high), abs=1e-12)
    # from n = 3 on, k = 0 and k = n keep Wilson's bound (outside both ranges)
    assert wilson_interval(0, 3).detail == "" and wilson_interval(3, 3).detail == ""


def test_modified_wilson_only_widens():
    for n in (1, 2, 3, 10, 50, 51, 200, 5000):
        for k in range(0, n + 1, max(1, n // 50)):
            a, b = wilson_interval(k, n), wilson_interval(k, n, modified=False)
            assert a.low <= b.low and a.high >= b.high
            assert 0.0 <= a.low <= a.estimate <= a.high <= 1.0


# --- scipy / statsmodels as references -----------------------------------------------------

@pytest.mark.parametrize("k,n", GRID)
@pytest.mark.parametrize("conf", [0.8, 0.95, 0.99])
def test_wilson_matches_scipy_and_statsmodels(k, n, conf):
    """The textbook Wilson interval equals scipy's and statsmodels'; the product's (modified)
    one equals it except for 1..x* successes or failures (tested below)."""
    ours = wilson_interval(k, n, conf, modified=False)
    modified = wilson_interval(k, n, conf)
    cut = wilson_modification_cut(n)
    if not (1 <= k <= cut or 1 <= n - k <= cut):
        assert (modified.low, modified.high) == (ours.low, ours.high) and not modified.detail
    ref = binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    sm_low, sm_high = proportion_confint(k, n, alpha=1 - conf, method="wilson")
    assert ours.low == pytest.approx(ref.low, abs=1e-12)
    assert ours.high == pytest.approx(ref.high, abs=1e-12)
    assert ours.low == pytest.approx(sm_low, abs=1e-12)
    assert ours.high == pytest.approx(sm_high, abs=1e-12)
    assert ours.estimate == k / n and ours.n == n and ours.method == "wilson"


@pytest.mark.parametrize("k,n", GRID)
@pytest.mark.parametrize("conf", [0.9, 0.95])
def test_clopper_pearson_matches_scipy_exact_and_statsmodels_beta(k, n, conf):
    ours = clopper_pearson_interval(k, n, conf)
    ref = binomtest(k, n).proportion_ci(confidence_level=conf, method="exact")
    sm_low, sm_high = proportion_confint(k, n, alpha=1 - conf, method="beta")
    assert ours.low == pytest.approx(ref.low, abs=1e-10)
    assert ours.high == pytest.approx(ref.high, abs=1e-10)
    assert ours.low == pytest.approx(sm_low, abs=1e-10)
    assert ours.high == pytest.approx(sm_high, abs=1e-10)


def test_clopper_pearson_r_binom_test_documented_example():
    # R documentation, ?binom.test: binom.test(682, 682 + 243, p = 3/4)
    # "95 percent confidence interval: 0.7076683 0.7654066; probability of success 0.7372973"
    ci = clopper_pearson_interval(682, 925)
    assert round(ci.low, 7) == 0.7076683
    assert round(ci.high, 7) == 0.7654066
    assert round(ci.estimate, 7) == 0.7372973


@pytest.mark.parametrize("k,n", GRID)
def test_beta_interval_is_equal_tailed_posterior_quantiles(k, n):
    ours = beta_interval(k, n, 0.95)
    low, high = beta_dist.interval(0.95, 1 + k, 1 + n - k)
    assert ours.low == pytest.approx(low, abs=1e-12)
    assert ours.high == pytest.approx(high, abs=1e-12)
    assert ours.method == "bayes"


@pytest.mark.parametrize("k,n", [(0, 30), (3, 30), (30, 30), (50, 120)])
def test_beta_interval_jeffreys_prior_matches_statsmodels(k, n):
    ours = beta_interval(k, n, 0.95, prior=(0.5, 0.5))
    sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="jeffreys")
    assert ours.low == pytest.approx(sm_low, abs=1e-12)
    assert ours.high == pytest.approx(sm_high, abs=1e-12)


@pytest.mark.parametrize("k,n", [(3, 30), (15, 30), (400, 500), (1, 10000)])
def test_clt_is_statsmodels_normal_with_harness_n_minus_1(k, n):
    # statsmodels' "normal" uses sqrt(p(1-p)/n); the harness (and we) use n - 1:
    # half-widths differ by exactly sqrt(n/(n-1)).
    ours = clt_interval(k, n)
    sm_low, sm_high = proportion_confint(k, n, alpha=0.05, method="normal")
    p = k / n
    assert (ours.high - p) == pytest.approx((sm_high - p) * math.sqrt(n / (n - 1)), rel=1e-12)
    assert ours.se == pytest.approx(math.sqrt(p * (1 - p) / (n - 1)), rel=1e-12)


def test_clt_zero_width_is_labelled_and_clipping_is_stated():
    zero = clt_interval(0, 30)
    assert zero.low == zero.high == 0.0
    assert "zero-width" in zero.detail
    clipped = clt_interval(1, 10)
    assert clipped.low == 0.0 and "clipped" in clipped.detail
    single = clt_interval(1, 1)
    assert math.isnan(single.low) and "undefined" in single.detail


def test_mean_se_equals_scipy_sem():
    from scipy.stats import sem
    x = np.random.default_rng(3).normal(size=57)
    assert mean_se(x) == pytest.approx(float(sem(x)), rel=1e-13)
    assert math.isnan(mean_se([1.0]))


# --- harness fixtures --------------------------------------------------------------------

def test_mean_se_reproduces_lm_eval_v03_arc_easy_stderr(fixtures_dir):
    data = json.loads((fixtures_dir / "lm_eval" /
                       "results_v0.3_bloom-560m_common-sense-reasoning_0shot.json").read_text())
    arc = data["results"]["arc_easy"]
    n = 2376  # arc_easy test set (PROVENANCE.md)
    k = round(arc["acc"] * n)
    assert k / n == pytest.approx(arc["acc"], abs=1e-15)
    scores = np.r_[np.ones(k), np.zeros(n - k)]
    assert mean_se(scores) == pytest.approx(arc["acc_stderr"], rel=1e-12)


@pytest.mark.parametrize("fname", ["results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json",
                                   "results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"])
def test_mean_se_reproduces_every_lm_eval_acc_stderr(fixtures_dir, fname):
    data = json.loads((fixtures_dir / "lm_eval" / fname).read_text())
    checked = 0
    for task, res in data["results"].items():
        if task not in data["n-samples"]:
            continue  # groups
        n = data["n-samples"][task]["effective"]
        for metric in ("acc,none", "acc_norm,none"):
            if metric not in res:
                continue
            k = round(res[metric] * n)
            if abs(k / n - res[metric]) > 1e-12:
                continue  # not a 0/1 mean
            stderr = res[metric.replace(",", "_stderr,")]
            scores = np.r_[np.ones(k), np.zeros(n - k)]
            assert mean_se(scores) == pytest.approx(stderr, rel=1e-9), (task, metric)
            checked += 1
    assert checked >= 70  # 57 MMLU subjects + arc, hellaswag, piqa, winogrande, ...


def test_mean_se_reproduces_lm_eval_v0413_samples_jsonl(fixtures_dir):
    path = fixtures_dir / "lm_eval" / "samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl"
    accs = [float(json.loads(line)["acc"]) for line in path.read_text().splitlines() if line.strip()]
    assert len(accs) == 20
    assert mean_se(accs) == pytest.approx(0.11413288653790232, rel=1e-12)


# --- worked examples in ../shared/reference ---------------------------------------------

def test_reference_004_wilson_zero_of_thirty():
    # 004 sec. 3.1: wilson_ci(0, 30) -> (0.000, 0.114); the normal approximation gives 0 +- 0.
    ci = wilson_interval(0, 30)
    assert (round(ci.low, 3), round(ci.high, 3)) == (0.0, 0.114)
    clt = clt_interval(0, 30)
    assert clt.high - clt.low == 0.0


# 000: "The error bars" table (reproduction values, items per task) -> +- se in points
ERROR_BARS_000 = [  # task, n items, reproduction %, printed se
    ("ceval-valid", 1346, 24.29, 1.17), ("arc_easy", 2376, 28.37, 0.92),
    ("piqa", 1838, 51.03, 1.17), ("openbookqa", 500, 25.80, 1.96),
    ("hellaswag", 10042, 27.82, 0.45), ("social_iqa", 1954, 33.42, 1.07)]


@pytest.mark.parametrize("task,n,pct,se_printed", ERROR_BARS_000)
def test_reference_000_error_bars_follow_from_n(task, n, pct, se_printed):
    k = round(pct / 100 * n)
    scores = np.r_[np.ones(k), np.zeros(n - k)]
    assert round(100 * mean_se(scores), 2) == se_printed


# 000: "dense vs MoE": se(Delta) = sqrt(se_1^2 + se_2^2) with each se = sqrt(p(1-p)/(n-1)).
# The author's se for a model is the one of the scores he measured: the published score for
# MoE, and for the dense openbookqa row his reproduction (25.80, the +-1.96 of the error-bars
# table). ceval-valid is an lm_eval group whose SE is pooled over 52 subjects, so it is
# checked with the printed se 1.17 below instead.
DENSE_MOE_000 = [  # task, n, % behind se_1, % behind se_2, Delta (points), printed se(Delta), Delta/se
    ("arc_easy", 2376, 28.49, 27.74, -0.75, 1.31, 0.57), ("piqa", 1838, 50.65, 50.71, 0.06, 1.65, 0.04),
    ("openbookqa", 500, 25.80, 26.20, 2.60, 2.78, 0.94),
    ("hellaswag", 10042, 28.28, 27.43, -0.85, 0.63, 1.34),
    ("social_iqa", 1954, 34.19, 34.03, -0.16, 1.52, 0.11)]


@pytest.mark.parametrize("task,n,pct1,pct2,delta,se_d,ratio", DENSE_MOE_000)
def test_reference_000_unpaired_difference_table(task, n, pct1, pct2, delta, se_d, ratio):
    k1, k2 = round(pct1 / 100 * n), round(pct2 / 100 * n)
    a = np.r_[np.ones(k1), np.zeros(n - k1)]
    b = np.r_[np.ones(k2), np.zeros(n - k2)]
    res = paired_difference(a, b)  # se_unpaired does not depend on the item order
    assert 100 * res.se_unpaired == pytest.approx(se_d, abs=0.006)  # printed to 2 decimals
    assert abs(delta) / (100 * res.se_unpaired) == pytest.approx(ratio, abs=0.006)
    assert abs(delta) / (100 * res.se_unpaired) < 1.96  # "Zero of six reach 1.96 sigma"


def test_reference_000_ceval_group_row():
    # se 1.17 for both models (lm_eval group stderr): se(Delta) 1.65, Delta/se 0.36 for +0.59
    from evalcore.stats import aggregate_tasks
    # the unpaired se(Delta) is the macro-average SE of two "tasks" times k = 2
    agg = aggregate_tasks([0.2489, 0.2548], [0.0117, 0.0117])
    se_delta = 2 * agg.se
    assert round(100 * se_delta, 2) == 1.65
    assert round(0.59 / (100 * se_delta), 2) == 0.36


def test_reference_000_ceval_scores_are_at_chance():
    # "C-Eval is four-choice ... 24.89 and 25.48 with se ~ 1.17. Both are at chance."
    for pct in (24.89, 25.48):
        k = round(pct / 100 * 1346)
        ci = clt_interval(k, 1346)
        assert contains_chance(ci, 4)
        assert contains_chance(wilson_interval(k, 1346), 4)
    assert chance_level(4) == 0.25


def test_reference_002_exercise_1a_single_scores():
    # 002 sec. 12, exercise 1 (a): A 80.0% of 500 -> SE 0.0179, CI +-3.5%; B 81.6% -> 0.0173, +-3.4%
    a, b = clt_interval(400, 500), clt_interval(408, 500)
    assert round(a.se, 4) == 0.0179 and round(100 * a.half_width, 1) == 3.5
    assert round(b.se, 4) == 0.0173 and round(100 * b.half_width, 1) == 3.4


def test_reference_002_section_3_1_half_widths():
    # "n = 100, p = 0.6: SE ~ 0.049, +-9.6 points; n = 1000: ~ +-3; n = 10000: ~ +-1"
    assert round(half_width(100, 0.6, "clt") / 1.959964, 3) == 0.049
    assert round(100 * half_width(100, 0.6, "clt"), 1) == 9.6
    assert round(100 * half_width(1000, 0.6, "clt")) == 3
    assert round(100 * half_width(10000, 0.6, "clt")) == 1


# --- half-width <-> n ---------------------------------------------------------------------

@pytest.mark.parametrize("n,k", [(100, 30), (500, 400), (37, 0), (20, 20)])
def test_wilson_half_width_is_half_the_wilson_interval(n, k):
    ci = wilson_interval(k, n)
    if 0 < k < n:
        assert half_width(n, k / n, "wilson") == pytest.approx(ci.half_width, rel=1e-12)
    else:  # clipping at the edge changes the interval but not the formula's half-width
        ref = binomtest(k, n).proportion_ci(method="wilson")
        assert half_width(n, k / n, "wilson") == pytest.approx(
            (ref.high - ref.low) / 2 if 0 < k < n else
            1.959963984540054 ** 2 / (2 * n) / (1 + 1.959963984540054 ** 2 / n), rel=1e-9)


def test_required_n_for_half_width_known_survey_figure_and_minimality():
    # the classic survey figure: +-3 points at 95% with p = 0.5 needs n = 1068 (CLT)
    assert required_n_for_half_width(0.03, 0.5, "clt") == 1068
    for p in (0.5, 0.1, 0.02):
        n = required_n_for_half_width(0.03, p, "wilson")
        assert half_width(n, p, "wilson") <= 0.03 < half_width(n - 1, p, "wilson")


# --- dispatcher, score_interval, errors ----------------------------------------------------

def test_proportion_interval_dispatches_by_name():
    assert proportion_interval(3, 30, "wilson") == wilson_interval(3, 30)
    assert proportion_interval(3, 30, "clopper-pearson") == clopper_pearson_interval(3, 30)
    assert proportion_interval(3, 30, "bayes") == beta_interval(3, 30)
    assert proportion_interval(3, 30, "clt") == clt_interval(3, 30)
    with pytest.raises(StatsInputError, match="unknown"):
        proportion_interval(3, 30, "agresti")


def test_score_interval_binary_and_continuous():
    x = np.r_[np.ones(12), np.zeros(18)]
    assert score_interval(x, "wilson") == wilson_interval(12, 30)
    clt = score_interval(x, "clt")
    assert clt.se == pytest.approx(mean_se(x)) and clt.method == "clt"
    cont = np.random.default_rng(0).uniform(size=40)
    with pytest.raises(StatsInputError, match="0/1"):
        score_interval(cont, "wilson")
    c = score_interval(cont, "clt")
    assert c.low < c.estimate < c.high
    boot = score_interval(cont, "bootstrap", n_resamples=500)
    assert boot.method == "bootstrap" and "500 resamples" in boot.detail
    clusters = np.repeat(np.arange(8), 5)
    cl = score_interval(cont, "clustered", clusters=clusters)
    assert cl.method == "clustered" and "8 clusters" in cl.detail
    with pytest.raises(StatsInputError, match="clusters"):
        score_interval(cont, "clt", clusters=clusters)
    with pytest.raises(StatsInputError, match="cluster label"):
        score_interval(cont, "clustered")
    one = score_interval(cont, "clustered", clusters=np.zeros(40))
    assert math.isnan(one.low) and "2 clusters" in one.detail


def test_score_interval_unbounded_scores_are_not_clipped():
    x = np.random.default_rng(1).normal(loc=-3.0, size=50)
    ci = score_interval(x, "clt")
    assert ci.high < 0 and ci.detail == ""


@pytest.mark.parametrize("call", [
    lambda: wilson_interval(0, 0), lambda: wilson_interval(5, 4), lambda: wilson_interval(-1, 4),
    lambda: wilson_interval(1.5, 4), lambda: wilson_interval(float("nan"), 4),
    lambda: wilson_interval(1, 4, confidence=1.0), lambda: clopper_pearson_interval(1, 0),
    lambda: beta_interval(1, 4, prior=(0, 1)), lambda: mean_se([]),
    lambda: mean_se([1.0, float("nan")]), lambda: score_interval([], "clt"),
    lambda: chance_level(1), lambda: half_width(0, 0.5), lambda: half_width(10, 1.5)])
def test_impossible_inputs_raise_a_clear_error(call):
    with pytest.raises(StatsInputError) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, AnalysisError)
    assert str(info.value)


# --- coverage: exact, and a seeded simulation ------------------------------------------------

def _coverage(method, n, p):
    ks = np.arange(n + 1)
    covered = np.array([proportion_interval(int(k), n, method).contains(p) for k in ks])
    return float(np.sum(binom.pmf(ks, n, p) * covered))


@pytest.mark.parametrize("n", [10, 30, 100])
def test_coverage_near_the_edges_wilson_cp_bayes_vs_clt(n):
    # exact coverage sum_k Binom(k; n, p) 1[p in CI(k)], averaged over p near 0 and near 1
    ps = np.r_[np.linspace(0.01, 0.1, 10), np.linspace(0.9, 0.99, 10)]
    cov = {m: np.array([_coverage(m, n, p) for p in ps])
           for m in ("wilson", "clopper-pearson", "bayes", "clt")}
    assert cov["clopper-pearson"].min() >= 0.95 - 1e-12  # exact: never below nominal
    assert cov["wilson"].mean() >= 0.94
    assert cov["bayes"].mean() >= 0.92
    assert cov["clt"].mean() < 0.88  # the normal approximation fails near 0 and 1
    assert cov["clt"].min() < 0.65
    assert cov["clt"].mean() < cov["wilson"].mean() - 0.07


def test_coverage_seeded_simulation_small_n():
    rng = np.random.default_rng(2024)
    n, p, sims = 20, 0.05, 20000
    ks = rng.binomial(n, p, size=sims)
    table = {m: np.array([proportion_interval(int(k), n, m).contains(p) for k in range(n + 1)])
             for m in ("wilson", "clopper-pearson", "bayes", "clt")}
    cov = {m: table[m][ks].mean() for m in table}
    assert cov["wilson"] > 0.9 and cov["clopper-pearson"] > 0.94 and cov["bayes"] > 0.9
    assert cov["clt"] < 0.7  # 0 successes (36% of runs) give a zero-width interval at 0


# --- properties ---------------------------------------------------------------------------

counts = st.integers(min_value=1, max_value=2000).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n)))
METHODS = ["wilson", "clopper-pearson", "bayes", "clt"]


@settings(max_examples=60, deadline=None)
@given(counts, st.sampled_from(METHODS), st.floats(min_value=0.5, max_value=0.995))
def test_property_bounds_inside_unit_interval_and_contain_estimate(kn, method, conf):
    k, n = kn
    ci = proportion_interval(k, n, method, conf)
    if method == "clt" and n == 1:
        assert math.isnan(ci.low)
        return
    assert 0.0 <= ci.low <= ci.high <= 1.0
    if method != "bayes" or 0 < k < n:  # the equal-tailed posterior excludes 0/n and n/n
        assert ci.low - 1e-12 <= ci.estimate <= ci.high + 1e-12
    if method != "clt":
        assert ci.high > ci.low  # never zero-width


@settings(max_examples=60, deadline=None)
@given(counts, st.sampled_from(METHODS))
def test_property_wider_with_confidence(kn, method):
    k, n = kn
    if method == "clt" and n == 1:
        return
    narrow = proportion_interval(k, n, method, 0.8)
    wide = proportion_interval(k, n, method, 0.99)
    assert wide.low <= narrow.low + 1e-12 and wide.high >= narrow.high - 1e-12


@settings(max_examples=60, deadline=None)
@given(counts, st.sampled_from(METHODS))
def test_property_narrower_with_more_items_at_the_same_proportion(kn, method):
    k, n = kn
    if n < 2:
        return
    small = proportion_interval(k, n, method)
    big = proportion_interval(4 * k, 4 * n, method)
    assert (big.high - big.low) <= (small.high - small.low) + 1e-12


def test_mean_se_from_moments_equals_mean_se_on_the_items():
    from evalcore.stats import mean_se_from_moments
    rng = np.random.default_rng(8)
    cols = [rng.random(50), (rng.random(2376) < 0.47).astype(float), np.ones(10), np.array([0.3])]
    n = [c.size for c in cols]
    s = [c.sum() for c in cols]
    ss = [np.sum(c ** 2) for c in cols]
    out = mean_se_from_moments(n, s, ss)
    for j, c in enumerate(cols[:2]):
        assert out[j] == pytest.approx(mean_se(c), rel=1e-9)
    assert out[2] == 0.0 and math.isnan(out[3])
