"""evalcore.stats.planning against statsmodels' power solver and the lecture's worked numbers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.power import NormalIndPower

from evalcore.stats import (StatsInputError, effective_n, minimum_detectable_effect,
                            minimum_detectable_effect_unpaired, preregistration_markdown,
                            required_items, required_items_unpaired, sd_diff_with_answers)


def _sm_solve(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(NormalIndPower().solve_power(**kw))


def test_the_7_85_constant():
    # (z_0.975 + z_0.8)^2 = 7.849: n = 7.85 sd^2 / delta^2 at 95% / 80%
    assert required_items(1.0, sd_diff=1.0) == 8
    assert (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 == pytest.approx(7.849, abs=1e-3)
    assert required_items(0.01, sd_diff=1.0) == math.ceil(7.848879734 * 1e4)


@pytest.mark.parametrize("delta,sd,alpha,power", [(0.016, 0.4, 0.05, 0.8), (0.01, 0.6, 0.05, 0.8),
                                                  (0.05, 0.5, 0.01, 0.9), (0.021, 0.6, 0.05, 0.8)])
def test_required_items_matches_statsmodels_one_sample_z_power(delta, sd, alpha, power):
    # a paired test is a one-sample z-test on d: NormalIndPower with ratio=0
    n_sm = _sm_solve(effect_size=delta / sd, alpha=alpha, power=power, ratio=0)
    # statsmodels also counts the (tiny) power of the wrong tail, so its n can be a hair smaller
    assert required_items(delta, sd_diff=sd, alpha=alpha, power=power) in (math.ceil(n_sm),
                                                                           math.ceil(n_sm) + 1)


@pytest.mark.parametrize("n,sd", [(500, 0.4), (6400, 0.6), (100, 0.3)])
def test_mde_matches_statsmodels_effect_size(n, sd):
    es = _sm_solve(nobs1=n, alpha=0.05, power=0.8, ratio=0)
    assert minimum_detectable_effect(n, sd_diff=sd) == pytest.approx(es * sd, rel=1e-4)


def test_reference_002_worked_numbers():
    # sec. 3.4: sigma_d = 0.6, 2.1 points -> n ~ 6400; exercise 2: 1 point -> ~28,000;
    # exercise 1(c): sigma_d = 0.4, 1.6 points -> ~4900
    assert required_items(0.021, sd_diff=0.6) == pytest.approx(6400, rel=0.005)
    assert required_items(0.01, sd_diff=0.6) == pytest.approx(28000, rel=0.01)
    assert required_items(0.016, sd_diff=0.4) == pytest.approx(4900, rel=0.005)
    # the paired SE of 0.0075 at 6400 items is sigma_d ~ 0.6
    assert minimum_detectable_effect(6400, sd_diff=0.6) == pytest.approx(2.8 * 0.0075, rel=0.01)


def test_disagreement_rate_is_the_conservative_variance():
    assert minimum_detectable_effect(1000, disagreement=0.16) == pytest.approx(
        minimum_detectable_effect(1000, sd_diff=0.4))
    assert required_items(0.02, disagreement=0.1) == required_items(0.02, sd_diff=math.sqrt(0.1))
    # for 0/1 scores sd_d^2 = rho_d - Delta^2 <= rho_d: the bound is conservative
    rng = np.random.default_rng(0)
    a = (rng.random(5000) < 0.7).astype(float)
    b = np.where(rng.random(5000) < 0.2, 1 - a, a)
    d = b - a
    rho = float(np.mean(d != 0))
    assert np.var(d) == pytest.approx(rho - d.mean() ** 2)
    assert np.var(d) <= rho


def test_unpaired_versions_match_statsmodels_two_sample():
    # two groups of n: SE = sqrt((v_a + v_b)/n) = sigma sqrt(2/n) with sigma^2 = (v_a + v_b)/2
    pa, pb = 0.70, 0.73
    sigma = math.sqrt((pa * (1 - pa) + pb * (1 - pb)) / 2)
    n_sm = _sm_solve(effect_size=0.03 / sigma, alpha=0.05, power=0.8, ratio=1)
    assert required_items_unpaired(0.03, pa, pb) in (math.ceil(n_sm), math.ceil(n_sm) + 1)
    assert required_items_unpaired(0.03, pa) == required_items_unpaired(0.03, pa, pa + 0.03)
    es = _sm_solve(nobs1=2000, alpha=0.05, power=0.8, ratio=1)
    assert minimum_detectable_effect_unpaired(2000, 0.7) == pytest.approx(
        es * math.sqrt(0.7 * 0.3), rel=1e-4)


def test_design_effect_and_answers_per_item():
    base = required_items(0.02, sd_diff=0.5)
    assert required_items(0.02, sd_diff=0.5, design_effect=2.0) in (2 * base - 1, 2 * base)
    assert minimum_detectable_effect(800, sd_diff=0.5, design_effect=2.0) == pytest.approx(
        minimum_detectable_effect(400, sd_diff=0.5))
    assert effective_n(1000, 2.5) == 400
    assert sd_diff_with_answers(0.04, 0.2, 4) == pytest.approx(math.sqrt(0.09))
    assert sd_diff_with_answers(-0.01, 0.2, 1) == pytest.approx(math.sqrt(0.2))


@pytest.mark.parametrize("call", [
    lambda: required_items(0.0, sd_diff=0.4), lambda: required_items(0.01),
    lambda: required_items(0.01, sd_diff=0.4, disagreement=0.2),
    lambda: required_items(0.01, disagreement=1.5), lambda: minimum_detectable_effect(0, sd_diff=1),
    lambda: minimum_detectable_effect(10, sd_diff=1, alpha=1.2),
    lambda: minimum_detectable_effect(10, sd_diff=1, power=0.0),
    lambda: minimum_detectable_effect(10, sd_diff=1, design_effect=0),
    lambda: required_items_unpaired(0.01, 0.0, 0.0)])
def test_planning_errors(call):
    with pytest.raises(StatsInputError):
        call()


def test_preregistration_sheet_lists_every_field_and_escapes_user_text():
    md = preregistration_markdown(comparison="model <b>B</b> vs A | gsm8k", n=2000,
                                  disagreement=0.2, stopping_rule="stop at 2000 items",
                                  assumptions="items independent", author="me", date="2026-11-30")
    mde = minimum_detectable_effect(2000, disagreement=0.2)
    for needle in ("Planned comparison", "alpha", "Power", "0.8", "rho_d = 0.2", "2,000",
                   f"{mde:.4f}", "Stopping rule", "stop at 2000 items", "items independent",
                   "Multiple-comparison adjustment"):
        assert needle in md
    assert "<b>" not in md and "&lt;b&gt;" in md
    assert "B&lt;/b&gt; vs A \\| gsm8k" in md  # a pipe cannot break the table
    sd_md = preregistration_markdown(comparison="x", n=100, sd_diff=0.5)
    assert "sd_d = 0.5" in sd_md
