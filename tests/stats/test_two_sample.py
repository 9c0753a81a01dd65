"""Two independent samples: Newcombe (statsmodels) and Welch (scipy) as references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ttest_ind
from statsmodels.stats.proportion import confint_proportions_2indep

from evalcore.stats import StatsInputError
from evalcore.stats.two_sample import two_sample_difference


@pytest.mark.parametrize("k1,n1,k2,n2", [(56, 70, 48, 80), (9, 10, 3, 10), (0, 12, 5, 40),
                                         (30, 30, 0, 7), (412, 600, 70, 120)])
def test_newcombe_matches_statsmodels(k1: int, n1: int, k2: int, n2: int) -> None:
    x1 = np.r_[np.ones(k1), np.zeros(n1 - k1)]
    x2 = np.r_[np.ones(k2), np.zeros(n2 - k2)]
    res = two_sample_difference(x1, x2)
    low, high = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
    assert res.low == pytest.approx(low, abs=1e-10) and res.high == pytest.approx(high, abs=1e-10)
    assert res.delta == pytest.approx(k1 / n1 - k2 / n2) and "Newcombe" in res.method


def test_newcombe_published_example() -> None:
    # Newcombe (1998), Table II example (a): 56/70 - 48/80 -> 0.0524 to 0.3339 (method 10)
    res = two_sample_difference(np.r_[np.ones(56), np.zeros(14)], np.r_[np.ones(48), np.zeros(32)])
    assert (round(res.low, 4), round(res.high, 4)) == (0.0524, 0.3339)


def test_welch_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0, 1, 40), rng.uniform(0.1, 1, 25)
    res = two_sample_difference(a, b, confidence=0.9)
    ci = ttest_ind(a, b, equal_var=False).confidence_interval(0.9)
    assert res.low == pytest.approx(ci.low, rel=1e-10) and res.high == pytest.approx(ci.high, rel=1e-10)
    assert res.method.startswith("Welch")


def test_edges() -> None:
    with pytest.raises(StatsInputError):
        two_sample_difference([], [1.0])
    with pytest.raises(StatsInputError):
        two_sample_difference([0.5], [0.2, 0.3])
    same = two_sample_difference([0.5, 0.5], [0.2, 0.2])
    assert same.low == same.high == pytest.approx(0.3)
