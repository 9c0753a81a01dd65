"""evalcore.stats.splits: the reference s/sqrt(m) is the exact expectation of the part-mean
variance under random partitions (checked by enumerating every partition), random splits
calibrate to 1, ordered and cluster splits detect drift and clustering."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evalcore.stats import StatsInputError, split_consistency


def _all_partitions_mean_variance(x, k):
    """Mean over every equal-size partition of x into k parts of the part-mean variance."""
    n = len(x)
    m = n // k
    vals = []
    for perm in itertools.permutations(range(n)):
        parts = [tuple(sorted(perm[j * m:(j + 1) * m])) for j in range(k)]
        means = [np.mean([x[i] for i in p]) for p in parts]
        vals.append(np.var(means, ddof=1))
    return float(np.mean(vals))


def test_reference_is_the_exact_expectation_under_random_partitions():
    x = np.array([1, 0, 1, 1, 0, 0], dtype=float)
    exact = _all_partitions_mean_variance(x, k=3)           # m = 2
    res = split_consistency(x, k=3, repetitions=1)
    assert res.reference_sd ** 2 == pytest.approx(exact, rel=1e-12)
    p = x.mean()
    # binomial form with the finite-population factor n/(n-1)
    assert res.reference_sd ** 2 == pytest.approx(p * (1 - p) / 2 * 6 / 5)
    assert res.binomial_sd == pytest.approx(math.sqrt(p * (1 - p) / 2))


def test_random_splits_calibrate_to_one():
    rng = np.random.default_rng(2)
    x = (rng.random(1000) < 0.7).astype(float)
    res = split_consistency(x, k=10, repetitions=4000, seed=5)
    assert res.random_ratio == pytest.approx(1.0, abs=0.03)
    assert res.m == 100 and res.n_used == 1000


def test_drift_in_item_order_is_detected():
    rng = np.random.default_rng(3)
    p = np.linspace(0.9, 0.3, 800)                          # items get harder along the file
    x = (rng.random(800) < p).astype(float)
    res = split_consistency(x, k=8, repetitions=500)
    assert res.ordered_ratio > 3 and res.ordered_p < 0.01
    assert not res.exchangeable
    shuffled = split_consistency(rng.permutation(x), k=8, repetitions=500)
    assert shuffled.ordered_ratio < 2


def test_clusters_are_detected_by_cluster_splits():
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(40), 15)                 # 40 passages x 15 questions
    p = rng.choice([0.15, 0.9], size=40)[clusters]           # passages easy or hard
    order = rng.permutation(600)                              # file order unrelated to clusters
    x, cl = (rng.random(600) < p).astype(float)[order], clusters[order]
    res = split_consistency(x, k=6, repetitions=300, clusters=cl)
    assert res.n_clusters == 40
    assert res.cluster_ratio > 2 and res.cluster_p < 0.05
    assert res.ordered_ratio < 2
    assert not res.exchangeable


def test_seeded_and_edges():
    x = np.tile([0.0, 1.0], 50)
    a, b = split_consistency(x, seed=7), split_consistency(x, seed=7)
    assert (a.random_sd, a.ordered_p) == (b.random_sd, b.ordered_p)
    const = split_consistency(np.ones(40), k=4)
    assert const.reference_sd == 0 and math.isnan(const.random_ratio)
    with pytest.raises(StatsInputError):
        split_consistency(x, k=1)
    with pytest.raises(StatsInputError):
        split_consistency(np.ones(5), k=3)
    with pytest.raises(StatsInputError):
        split_consistency(x, clusters=[1, 2])
