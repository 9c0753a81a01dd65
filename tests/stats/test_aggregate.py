"""evalcore.stats.aggregate against lm_eval group fixtures, statsmodels' multipletests and
published values of the expected maximum of normals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from evalcore.stats import (StatsInputError, adjust_pvalues, aggregate_tasks, best_of_k_inflation,
                            indistinguishable_from_best, pooled_sample_stderr)


def _leaves(group_subtasks, name):
    kids = group_subtasks.get(name, [])
    if not kids:
        return [name]
    return [leaf for kid in kids for leaf in _leaves(group_subtasks, kid)]


@pytest.mark.parametrize("fname", ["results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json",
                                   "results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"])
def test_mmlu_group_stderr_and_score_from_the_harness_fixture(fixtures_dir, fname):
    data = json.loads((fixtures_dir / "lm_eval" / fname).read_text())
    leaves = _leaves(data["group_subtasks"], "mmlu")
    assert len(leaves) == 57
    se = [data["results"][t]["acc_stderr,none"] for t in leaves]
    acc = [data["results"][t]["acc,none"] for t in leaves]
    ns = [data["n-samples"][t]["effective"] for t in leaves]
    assert sum(ns) == 14042
    group = data["groups"]["mmlu"]
    assert pooled_sample_stderr(se, ns) == pytest.approx(group["acc_stderr,none"], rel=1e-12)
    micro = aggregate_tasks(acc, se, ns, kind="micro")
    assert micro.estimate == pytest.approx(group["acc,none"], rel=1e-12)
    assert micro.se == pytest.approx(group["acc_stderr,none"], rel=1e-12)
    assert micro.n == 14042 and micro.kind == "micro"


def test_negotiationtom_group_stderr_from_the_harness_fixture(fixtures_dir):
    data = json.loads((fixtures_dir / "lm_eval" /
                       "results_v0.4.13dev_qwen3-8b_negotiationtom-group_limit20.json").read_text())
    res = data["results"]
    kids = ["negotiationtom_belief", "negotiationtom_desire"]
    se = [res[t]["acc_stderr,none"] for t in kids]
    acc = [res[t]["acc,none"] for t in kids]
    agg = aggregate_tasks(acc, se, [20, 20], kind="micro")
    assert agg.se == pytest.approx(res["negotiationtom"]["acc_stderr,none"], rel=1e-12)
    assert agg.estimate == pytest.approx(res["negotiationtom"]["acc,none"])


def test_macro_average_se_and_the_sqrt_k_shrinkage():
    # 000: "averaging shrinks the error bar by roughly sqrt(7)"
    agg = aggregate_tasks([0.3, 0.5, 0.4, 0.6, 0.2, 0.7, 0.45], [0.01] * 7)
    assert agg.se == pytest.approx(0.01 / math.sqrt(7))
    assert agg.estimate == pytest.approx(np.mean([0.3, 0.5, 0.4, 0.6, 0.2, 0.7, 0.45]))
    assert agg.kind == "macro" and agg.k == 7
    unequal = aggregate_tasks([0.5, 0.6], [0.03, 0.04])
    assert unequal.se == pytest.approx(0.05 / 2)
    assert unequal.low == pytest.approx(0.55 - 1.959963984540054 * 0.025)


def test_average_of_proportions_is_clipped_to_unit_interval_only():
    near_one = aggregate_tasks([0.99, 1.0], [0.02, 0.0])
    assert near_one.high == 1.0
    raw = aggregate_tasks([2.5, 3.0], [0.5, 0.5])
    assert raw.high > 3.0


def test_aggregate_errors():
    with pytest.raises(StatsInputError, match="differ in length"):
        aggregate_tasks([0.1, 0.2], [0.01])
    with pytest.raises(StatsInputError, match="sizes"):
        aggregate_tasks([0.1, 0.2], [0.01, 0.01], kind="micro")
    with pytest.raises(StatsInputError, match="kind"):
        aggregate_tasks([0.1], [0.01], kind="median")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=1, max_size=40),
       st.sampled_from(["holm", "bh"]))
def test_adjust_pvalues_matches_statsmodels_multipletests(ps, method):
    ref = multipletests(ps, method="holm" if method == "holm" else "fdr_bh")[1]
    assert np.allclose(adjust_pvalues(ps, method), ref, rtol=1e-12, atol=1e-15)


def test_adjust_pvalues_keeps_nan_out_of_the_family():
    out = adjust_pvalues([0.01, np.nan, 0.04], "holm")
    assert math.isnan(out[1])
    assert out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)
    with pytest.raises(StatsInputError):
        adjust_pvalues([0.5, 1.2])
    with pytest.raises(StatsInputError):
        adjust_pvalues([0.5], "bonferroni-ish")


# E[max of k standard normals]: closed forms for k = 2, 3 (1/sqrt(pi), 3/(2 sqrt(pi))) and
# tabulated values (Harter 1961; Teichroew 1956) for k = 4, 5, 10 (10 digits) and 100 (5 digits).
EXPECTED_MAX = [(1, 0.0, 1e-12), (2, 1 / math.sqrt(math.pi), 1e-10),
                (3, 1.5 / math.sqrt(math.pi), 1e-10), (4, 1.0293753730, 1e-9),
                (5, 1.1629644736, 1e-9), (10, 1.5387527308, 1e-9), (100, 2.50759, 1e-5)]


@pytest.mark.parametrize("k,expected,tol", EXPECTED_MAX)
def test_best_of_k_inflation_matches_published_order_statistics(k, expected, tol):
    assert best_of_k_inflation(k) == pytest.approx(expected, abs=tol)
    assert best_of_k_inflation(k, sigma=0.02) == pytest.approx(0.02 * expected, abs=tol)


def test_best_of_27_is_about_two_sigma_and_agrees_with_simulation():
    assert best_of_k_inflation(27) == pytest.approx(2.0, abs=0.01)  # METHODS.md: ~2.0 sigma
    sims = np.random.default_rng(0).standard_normal((40000, 27)).max(axis=1)
    assert best_of_k_inflation(27) == pytest.approx(sims.mean(), abs=4 * sims.std() / 200)
    assert best_of_k_inflation(10_000) < math.sqrt(2 * math.log(10_000))
    with pytest.raises(StatsInputError):
        best_of_k_inflation(0)


def test_indistinguishable_from_best_tiers():
    rng = np.random.default_rng(1)
    n = 3000
    best = (rng.random(n) < 0.7).astype(float)
    near = best.copy()
    near[np.flatnonzero(best == 1)[:3]] = 0.0  # 3 items worse: McNemar p = 0.25
    far = (rng.random(n) < 0.5).astype(float)
    tier = indistinguishable_from_best(np.c_[near, best, far])
    # the routed interval's test (Tango for 3 discordant items, Wald for the far run) and
    # the exact McNemar test, as a compare row of the two runs shows
    assert tier.best == 1 and tier.test == "tango+mcnemar-exact/wald+mcnemar-exact"
    assert tier.indistinguishable == (True, True, False)
    assert tier.diff_vs_best[0] == pytest.approx(-3 / n)
    assert tier.p_raw[0] == pytest.approx(0.25)
    # Holm over the two comparisons: the far run's tiny p is doubled, then 0.25 stays 0.25
    assert tier.p_adjusted[0] == pytest.approx(0.25)
    assert tier.p_adjusted[2] == pytest.approx(2 * tier.p_raw[2])
    assert math.isnan(tier.p_adjusted[1])


def test_indistinguishable_from_best_with_clusters_uses_the_clustered_paired_test():
    """CR1 clustered SE of the differences (statsmodels' OLS on a constant with cluster
    covariance and its small-sample correction G/(G-1) * (n-1)/(n-k), k = 1: CR1), t on
    G - 1 df; 0/1 scores: the larger of that p and the exact McNemar p (scipy's binomial
    test), as a compare row of the two runs shows."""
    sm = pytest.importorskip("statsmodels.api")
    from scipy import stats as ss
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(50), 10)
    a = (rng.random(500) < 0.6).astype(float)
    b = (rng.random(500) < 0.5).astype(float)
    tier = indistinguishable_from_best(np.c_[a, b], clusters=labels)
    assert tier.test == "clustered-t+mcnemar-exact" and tier.best == 0
    d = b - a
    fit = sm.OLS(d, np.ones_like(d)).fit(cov_type="cluster", cov_kwds={"groups": labels})
    se = float(np.sqrt(fit.cov_params()[0, 0]))
    p_t = 2 * ss.t.sf(abs(d.mean()) / se, df=49)
    n_b, n_c = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    p_exact = ss.binomtest(min(n_b, n_c), n_b + n_c, 0.5).pvalue
    assert tier.p_raw[1] == pytest.approx(max(p_t, p_exact), rel=1e-6)


def test_indistinguishable_from_best_small_continuous_uses_t():
    """Below 30 items a continuous score's paired p is the paired t test's (scipy's
    ttest_rel), as the compare row of the two runs shows, not the normal approximation."""
    from scipy import stats as ss
    rng = np.random.default_rng(3)
    x = rng.normal(0.6, 0.2, size=(12, 3))
    x[:, 1] += 0.15
    tier = indistinguishable_from_best(x)
    assert tier.best == 1 and tier.test == "t"
    for j in (0, 2):
        assert tier.p_raw[j] == pytest.approx(ss.ttest_rel(x[:, j], x[:, 1]).pvalue, rel=1e-9)
