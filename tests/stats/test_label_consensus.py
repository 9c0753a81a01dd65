"""The suspect-label rule and its chance expectation, against brute force and simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binom

from evalcore.stats import StatsInputError
from evalcore.stats.label_consensus import (consensus_suspects, default_strong_size,
                                            expected_suspects, flag_probability, strongest)


def brute_force(acc: list[float], k: int, m: int) -> float:
    """Every joint choice of the models (gold = option 0), weighted by its probability."""
    total = 0.0
    for choice in itertools.product(range(k), repeat=len(acc)):
        w = 1.0
        for p, c in zip(acc, choice):
            w *= p if c == 0 else (1 - p) / (k - 1)
        counts = np.bincount(np.array(choice), minlength=k)[1:]
        if counts.max(initial=0) >= m:
            total += w
    return total


@pytest.mark.parametrize("acc,k,m", [
    ([0.9, 0.8, 0.7], 4, 3), ([0.9, 0.8, 0.7], 4, 2), ([0.6, 0.5, 0.55, 0.4, 0.3], 4, 2),
    ([0.6, 0.5, 0.55, 0.4, 0.3], 5, 3), ([0.5, 0.5, 0.5, 0.5], 2, 3), ([0.95] * 6, 3, 4),
    ([0.2, 0.1, 0.3, 0.25, 0.2, 0.1], 4, 2), ([1.0, 0.9], 4, 2), ([0.0, 0.0, 0.0], 3, 2),
])
def test_flag_probability_equals_enumeration(acc: list[float], k: int, m: int) -> None:
    assert flag_probability(acc, k, m) == pytest.approx(brute_force(acc, k, m), abs=1e-12)


def test_flag_probability_closed_forms() -> None:
    # three models, m = 3: all three on the same one of K - 1 wrong options
    acc = [0.9, 0.8, 0.7]
    q = [(1 - p) / 3 for p in acc]
    assert flag_probability(acc, 4, 3) == pytest.approx(3 * q[0] * q[1] * q[2], rel=1e-12)
    # two options: "same wrong option" is "wrong", a binomial tail for equal accuracies
    assert flag_probability([0.7] * 5, 2, 3) == pytest.approx(binom.sf(2, 5, 0.3), rel=1e-12)
    assert flag_probability([0.7] * 2, 4, 3) == 0.0            # m above the number of models
    assert flag_probability([0.7] * 3, 1, 1) == 0.0            # no wrong option


def test_expectation_matches_simulation() -> None:
    """Seeded simulation of the chance model: mean count and tail agree with the exact values."""
    rng = np.random.default_rng(20261130)
    acc = np.array([0.85, 0.78, 0.72, 0.66, 0.6])
    ks = np.array([4] * 300 + [5] * 100)
    m = 2
    exp = expected_suspects(acc, ks, m, observed=12)
    sims = 4000
    counts = np.empty(sims)
    gold = np.zeros(ks.size, dtype="int64")
    for s in range(sims):
        right = rng.random((acc.size, ks.size)) < acc[:, None]
        wrong = 1 + (rng.random((acc.size, ks.size)) * (ks - 1)).astype("int64")
        picks = np.where(right, 0, wrong)
        counts[s] = consensus_suspects(picks, gold, range(acc.size), m).n_flagged
    se = counts.std(ddof=1) / np.sqrt(sims)
    assert abs(counts.mean() - exp.expected) < 4 * se
    tail = (counts >= 12).mean()
    assert abs(tail - exp.p_value) < 4 * np.sqrt(exp.p_value * (1 - exp.p_value) / sims) + 1e-3


def test_planted_label_errors_are_found_at_the_expected_rate() -> None:
    """Generated task: 2,000 items, 40 with a wrong gold. Strong models mostly pick the true
    answer, so planted items are flagged at the rate P(at least m strong models right); the
    other items are flagged at about the chance expectation."""
    rng = np.random.default_rng(7)
    n, k, planted = 2000, 4, 40
    acc = np.array([0.92, 0.88, 0.85, 0.7, 0.6, 0.5])
    truth = rng.integers(0, k, n)
    gold = truth.copy()
    bad = rng.choice(n, planted, replace=False)
    gold[bad] = (truth[bad] + rng.integers(1, k, planted)) % k
    right = rng.random((acc.size, n)) < acc[:, None]
    wrong = (truth + rng.integers(1, k, (acc.size, n))) % k
    picks = np.where(right, truth, wrong)
    observed_acc = (picks == gold).mean(axis=1)
    strong = strongest(observed_acc, default_strong_size(acc.size))
    assert strong == (0, 1, 2)
    res = consensus_suspects(picks, gold, strong, 3)
    found = res.flagged[bad].mean()
    assert found == pytest.approx(0.92 * 0.88 * 0.85, abs=0.2)      # all three right on 40 items
    clean = np.setdiff1d(np.arange(n), bad)
    false_pos = int(res.flagged[clean].sum())
    exp = expected_suspects(observed_acc[list(strong)], np.full(clean.size, k), 3)
    assert false_pos <= binom.isf(1e-4, clean.size, exp.expected / clean.size)
    whole = expected_suspects(observed_acc[list(strong)], np.full(n, k), 3, observed=res.n_flagged)
    assert whole.p_value < 1e-6 and whole.ratio > 5                 # far above chance
    assert (res.option[bad][res.flagged[bad]] == truth[bad][res.flagged[bad]]).all()


def test_rule_details() -> None:
    picks = np.array([[1, 0, 2, -1], [1, 0, 2, -1], [1, 3, 1, -1], [2, 3, 1, 0]])
    gold = np.array([0, 0, 2, 0])
    res = consensus_suspects(picks, gold, (0, 1, 2), 2)
    assert res.flagged.tolist() == [True, False, False, False]
    assert res.option.tolist() == [1, 3, 1, -1] and res.count.tolist() == [3, 1, 1, 0]
    two = consensus_suspects(picks, gold, (0, 1, 2, 3), 2)         # gold and a wrong option tie
    assert two.flagged.tolist() == [True, True, True, False]
    assert res.answered.tolist() == [3, 3, 3, 0]
    assert not consensus_suspects(picks, np.array([-1, 0, 2, 0]), (0, 1, 2), 2).flagged[0]
    with pytest.raises(StatsInputError):
        consensus_suspects(picks, gold, (0, 9), 2)
    with pytest.raises(StatsInputError):
        flag_probability([1.2], 4, 1)
    with pytest.raises(StatsInputError):
        expected_suspects([0.5], [4], 0)
    assert default_strong_size(5) == 3 and default_strong_size(2) == 2 and default_strong_size(10) == 5
    assert expected_suspects([0.5, 0.5], [], 2, observed=0).p_value == 1.0


def test_conditional_expectation_is_an_occupancy_probability() -> None:
    from evalcore.stats.label_consensus import expected_suspects_given_errors
    # 3 wrong picks over 3 wrong options, m = 3: all in one bin, 3 * (1/3)^3 = 1/9
    e = expected_suspects_given_errors([3, 3, 2, 0], 4, 3, observed=1)
    assert e.expected == pytest.approx(2 / 9, rel=1e-12)
    assert e.p_value == pytest.approx(1 - (8 / 9) ** 2, rel=1e-12)
    # 4 wrong picks over 3 options, m = 2: only all-distinct is impossible, so always flagged
    assert expected_suspects_given_errors([4], 4, 2).expected == pytest.approx(1.0)
    # simulation of the occupancy model
    rng = np.random.default_rng(5)
    w = rng.integers(0, 6, 500)
    exp = expected_suspects_given_errors(w, 5, 3)
    picks = rng.integers(0, 4, (400, w.size, 5))                   # sims x items x slot
    used = np.arange(5)[None, None, :] < w[None, :, None]
    occupancy = ((picks[..., None] == np.arange(4)) & used[..., None]).sum(axis=2)
    sims = (occupancy.max(axis=2) >= 3).sum(axis=1)
    assert abs(sims.mean() - exp.expected) < 4 * sims.std(ddof=1) / np.sqrt(sims.size)
    assert expected_suspects_given_errors([], 4, 3, observed=0).p_value == 1.0
