"""PPI++ and judge agreement against independent implementations.

References: ``ppi_py`` 0.2.3 (PyPI ``ppi-python``, Angelopoulos et al.'s own package:
``ppi_mean_ci``, ``ppi_mean_pointestimate``, ``classical_mean_ci``) and statsmodels'
``cohens_kappa`` (SAS PROC FREQ's ASE)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.stats import StatsInputError
from evalcore.stats import ppi

ppi_py = pytest.importorskip("ppi_py")
inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")


def _biased_judge(seed: int, n: int, big_n: int, *, binary: bool = True):
    """Human labels Y ~ Bernoulli(0.6); the judge agrees 85% of the time and says 'correct'
    on a further 20% of the wrong items (a lenient judge: biased upwards)."""
    rng = np.random.default_rng(seed)
    total = n + big_n
    y = (rng.random(total) < 0.6).astype(float)
    agree = rng.random(total) < 0.85
    f = np.where(agree, y, 1 - y)
    f = np.where((y == 0) & (rng.random(total) < 0.2), 1.0, f)
    if not binary:
        y = y * 5 + rng.integers(0, 5, total)
        f = np.clip(f * 5 + rng.integers(0, 5, total) + rng.normal(0, 1, total), 0, 9)
    return y[:n], f[:n], f[n:], y[n:]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("conf", [0.9, 0.95])
def test_ppi_mean_equals_ppi_py(seed, binary, conf):
    y, f, g, _ = _biased_judge(seed, 150 + 40 * seed, 1200, binary=binary)
    ours = ppi.ppi_mean(y, f, g, conf)
    lo, hi = ppi_py.ppi_mean_ci(y, f, g, alpha=1 - conf)
    point = ppi_py.ppi_mean_pointestimate(y, f, g)
    assert ours.low == pytest.approx(float(np.ravel(lo)[0]), abs=1e-3)
    assert ours.high == pytest.approx(float(np.ravel(hi)[0]), abs=1e-3)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-3)
    # in fact the same floating-point formula
    assert ours.low == pytest.approx(float(np.ravel(lo)[0]), abs=1e-12)
    assert 0.0 <= ours.lam <= 1.0 and ours.tuned


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_fixed_lambda_equals_ppi_py(lam):
    y, f, g, _ = _biased_judge(11, 200, 800)
    ours = ppi.ppi_mean(y, f, g, 0.95, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, f, g, alpha=0.05, lam=lam)
    assert (ours.low, ours.high) == pytest.approx((float(np.ravel(lo)[0]),
                                                    float(np.ravel(hi)[0])), abs=1e-9)
    assert not ours.tuned and ours.lam == lam


def test_lambda_zero_is_classical_interval():
    y, f, g, _ = _biased_judge(3, 120, 500)
    ours = ppi.ppi_mean(y, f, g, 0.95, lam=0.0)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert (ours.low, ours.high) == pytest.approx((float(lo), float(hi)), abs=1e-9)


def test_ppi_narrower_than_human_only_and_corrects_bias():
    y, f, g, y_rest = _biased_judge(5, 300, 3000)
    res = ppi.ppi_mean(y, f, g)
    human = ppi.ppi_mean(y, f, g, lam=0.0)
    assert res.width < human.width
    judge_only = float(np.concatenate([f, g]).mean())
    truth = float(np.concatenate([y, y_rest]).mean())
    assert judge_only - truth > 0.02             # the lenient judge over-scores (by 0.038)
    assert res.low <= truth <= res.high


def test_paired_difference_is_ppi_of_differences():
    ya, fa, ga, _ = _biased_judge(1, 200, 900)
    yb, fb, gb, _ = _biased_judge(2, 200, 900)
    res = ppi.ppi_paired_difference(ya, yb, fa, fb, ga, gb)
    lo, hi = ppi_py.ppi_mean_ci(yb - ya, fb - fa, gb - ga, alpha=0.05)
    assert (res.low, res.high) == pytest.approx((float(np.ravel(lo)[0]),
                                                  float(np.ravel(hi)[0])), abs=1e-9)
    assert "paired difference" in res.method


def test_constant_judge_gives_lambda_zero():
    y = np.array([0, 1] * 10, dtype=float)
    res = ppi.ppi_mean(y, np.ones(20), np.ones(50))
    assert res.lam == 0.0
    assert res.estimate == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [dict(n=1), dict(big_n=1), dict(nan=True)])
def test_ppi_rejects_bad_input(bad):
    y, f, g = np.ones(bad.get("n", 5)), np.ones(bad.get("n", 5)), np.zeros(bad.get("big_n", 5))
    if bad.get("nan"):
        y = y.copy()
        y[0] = np.nan
    with pytest.raises(StatsInputError):
        ppi.ppi_mean(y, f, g)
    with pytest.raises(StatsInputError):
        ppi.ppi_mean(np.ones(5), np.ones(5), np.zeros(5), lam=1.5)


@pytest.mark.parametrize("seed", range(5))
def test_kappa_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 3
    a = rng.integers(0, k, 80)
    b = np.where(rng.random(80) < 0.7, a, rng.integers(0, k, 80))
    ours = ppi.cohens_kappa(a, b, 0.95)
    table = np.array(ours.table)
    ref = inter_rater.cohens_kappa(table)
    assert ours.kappa == pytest.approx(ref.kappa, abs=1e-12)
    assert ours.se == pytest.approx(ref.std_kappa, abs=1e-12)
    assert ours.low == pytest.approx(ref.kappa_low, abs=1e-9)
    assert ours.high == pytest.approx(ref.kappa_upp, abs=1e-9)
    # the table really counts (human, judge) pairs
    assert table.sum() == 80 and np.trace(table) == int(np.sum(a == b))


def test_kappa_fleiss_worked_example():
    """Fleiss, Levin & Paik (2003), Statistical Methods for Rates and Proportions, 3rd ed.,
    Table 18.1 (two psychiatrists, 100 subjects, three diagnoses): kappa = 0.676."""
    table = np.array([[75, 1, 4], [5, 4, 1], [0, 0, 10]])
    a = np.repeat(np.repeat(np.arange(3), 3), table.ravel())
    b = np.repeat(np.tile(np.arange(3), 3), table.ravel())
    ours = ppi.cohens_kappa(a, b)
    assert ours.kappa == pytest.approx(0.676, abs=5e-4)
    assert ours.se == pytest.approx(inter_rater.cohens_kappa(table).std_kappa, abs=1e-12)


def test_kappa_undefined_when_one_category():
    res = ppi.cohens_kappa(np.ones(12), np.ones(12))
    assert np.isnan(res.kappa) and res.observed == 1.0


def test_judge_bias_t_interval():
    from scipy import stats
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 40).astype(float)
    f = np.where(rng.random(40) < 0.8, y, 1 - y)
    res = ppi.judge_bias(y, f, 0.95)
    ref = stats.ttest_1samp(f - y, 0.0).confidence_interval(0.95)
    assert (res.low, res.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_t_mean_interval_matches_scipy():
    from scipy import stats
    x = np.array([3.0, 4, 4, 5, 2, 5, 4, 3, 3, 4, 5])
    res = ppi.t_mean_interval(x, 0.9)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.9)
    assert (res.low, res.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_label_shift_flags_a_chosen_subset():
    rng = np.random.default_rng(9)
    f = rng.random(1000)
    random_pick = rng.permutation(1000)[:100]
    rest = np.setdiff1d(np.arange(1000), random_pick)
    assert not ppi.label_shift(f[random_pick], f[rest]).suspicious()
    order = np.argsort(f)
    easy, others = order[-100:], order[:-100]        # the 100 items the judge rates highest
    shift = ppi.label_shift(f[easy], f[others])
    assert shift.suspicious() and shift.mean_labelled > shift.mean_unlabelled


def test_ppi_variance_matches_simulated_estimator():
    """The planning variance at lambda* equals the sampling variance of ppi_mean over many
    simulated label draws (within Monte Carlo error)."""
    rng = np.random.default_rng(0)
    n, big_n, reps = 100, 900, 3000
    est = np.empty(reps)
    for r in range(reps):
        y, f, g, _ = _biased_judge(int(rng.integers(1 << 30)), n, big_n)
        est[r] = ppi.ppi_mean(y, f, g).estimate
    y, f, g, y_rest = _biased_judge(123, 200_000, 200_000)
    yy, ff = np.concatenate([y, y_rest]), np.concatenate([f, g])
    cov = float(np.cov(yy, ff)[0, 1])
    var, lam = ppi.ppi_variance(n, big_n, float(yy.var()), float(ff.var()), cov)
    assert 0 < lam < 1
    assert float(est.var()) == pytest.approx(var, rel=0.1)


def test_labels_needed_closed_form_and_monotone():
    var_y, rho = 0.24, 0.8
    var_f = 0.25
    cov = rho * math.sqrt(var_y * var_f)
    total, se = 2000, 0.02
    res = ppi.ppi_labels_needed(se, total, var_y, var_f, cov)
    # unclipped closed form: n = var_Y (1 - rho^2) / (se^2 - rho^2 var_Y / T)
    closed = var_y * (1 - rho ** 2) / (se ** 2 - rho ** 2 * var_y / total)
    assert res.n_labels == math.ceil(closed) or res.n_labels == math.ceil(closed) + 1
    var, _ = ppi.ppi_variance(res.n_labels, total - res.n_labels, var_y, var_f, cov)
    before, _ = ppi.ppi_variance(res.n_labels - 1, total - res.n_labels + 1, var_y, var_f, cov)
    assert var <= se ** 2 < before
    assert res.n_human_only == math.ceil(var_y / se ** 2)
    assert res.n_labels < res.n_human_only
    assert res.floor_se == pytest.approx(math.sqrt(rho ** 2 * var_y / total))


def test_labels_needed_unreachable_and_no_judge():
    assert ppi.ppi_labels_needed(0.001, 100, 0.25, 0.25, 0.2).n_labels is None
    res = ppi.ppi_labels_needed(0.03, 5000, 0.25, 0.25, 0.0)
    assert res.n_labels == res.n_human_only == math.ceil(0.25 / 0.03 ** 2)


def test_labels_needed_reaches_target_in_simulation():
    """Planned from the population moments, the labels actually give intervals of about the
    target width (mean SE over simulated draws within 5% of the target)."""
    y_all, f_all, _, _ = _biased_judge(21, 4000, 1)
    var_y, var_f = float(y_all.var()), float(f_all.var())
    cov = float(np.mean((y_all - y_all.mean()) * (f_all - f_all.mean())))
    plan = ppi.ppi_labels_needed(0.025, 4000, var_y, var_f, cov)
    rng = np.random.default_rng(1)
    ses = []
    for _ in range(200):
        pick = rng.permutation(4000)
        lab, rest = pick[:plan.n_labels], pick[plan.n_labels:]
        ses.append(ppi.ppi_mean(y_all[lab], f_all[lab], f_all[rest]).se)
    assert float(np.mean(ses)) == pytest.approx(0.025, rel=0.05)


def test_binary_agreement_moments():
    y = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0], dtype=float)
    f = np.array([1, 1, 0, 0, 1, 1, 0, 1, 1, 1], dtype=float)
    vy, vf, cov = ppi.binary_agreement_moments(y.mean(), f.mean(), float(np.mean(y == f)))
    assert (vy, vf) == pytest.approx((y.var(), f.var()))
    assert cov == pytest.approx(float(np.mean((y - y.mean()) * (f - f.mean()))))
    with pytest.raises(StatsInputError):
        ppi.binary_agreement_moments(0.9, 0.1, 0.9)
