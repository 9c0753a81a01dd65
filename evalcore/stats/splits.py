"""Split consistency: do disjoint parts of a benchmark agree as much as sampling allows?

Cut the n items of one run into k disjoint parts of m = floor(n / k) items (the n - k m
left over are set aside, at random) and take each part's mean score. If the items were
exchangeable, the SD of the k part means would be close to the sampling reference

    ref = s / sqrt(m),   s = sd(x, ddof=1) over the n' = k m items used,

which for 0/1 scores is sqrt(p(1-p)/m * n'/(n'-1)), the binomial sqrt(p(1-p)/m) with the
finite-population factor. ``ref^2`` is exactly the expected sample variance (ddof = 1) of
the part means under a uniformly random partition (the k parts are a simple random sample
without replacement: Var(part mean) = sigma^2/m * (n'-m)/(n'-1), sigma^2 = s^2 (n'-1)/n',
and E[sample variance] = k/(k-1) * Var(part mean) = s^2/m). So:

* **random splits** have ratio sqrt(mean variance) / ref close to 1 *by construction*: they
  are the calibration (the null distribution), not a test of exchangeability;
* **ordered splits** (contiguous blocks in the benchmark's item order) test for drift: a
  ratio well above 1 says difficulty changes along the file (sorted sources, appended
  subsets);
* **cluster splits** (items grouped by cluster, clusters in random order, then cut into
  blocks) test for clustering: a ratio well above 1 says items of one passage/subject
  move together (compare the design effect of a clustered SE).

The p-value of an ordered or cluster split is the share of random splits whose SD is at
least as large, (1 + #{random SD >= observed}) / (1 + R) (a permutation test; Phipson &
Smyth 2010 for the +1): under exchangeability any fixed partition rule gives a part-mean
variance distributed like a random partition's. The cluster statistic is the mean
part-mean variance over ``CLUSTER_ORDERS`` random cluster orders; its null distribution
comes from the same orders applied to randomly permuted scores (``repetitions`` times).
``exchangeable`` is False when either test rejects at 0.05 / (number of tests run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalcore.stats._checks import StatsInputError, as_scores, check_count

ALPHA = 0.05
CLUSTER_ORDERS = 20


@dataclass(frozen=True)
class SplitConsistency:
    """SD of k part means against the sampling reference.

    k, m : parts and items per part; n_used = k m (of n_items).
    mean : mean score of the items used (p for 0/1 scores).
    reference_sd : s / sqrt(m) (see module docstring); binomial_sd : sqrt(p(1-p)/m) when
        the scores are 0/1, else NaN.
    repetitions, seed : random partitions drawn and the seed of the generator.
    random_sd : sqrt(mean over repetitions of the part-mean variance); random_ratio =
        random_sd / reference_sd (about 1 by construction).
    ordered_sd, ordered_ratio, ordered_p : one partition into contiguous blocks in the
        item order given; p from the random-split distribution.
    cluster_sd, cluster_ratio, cluster_p : the same with items grouped by cluster
        (clusters in ``CLUSTER_ORDERS`` random orders, RMS; p from permuted scores); NaN
        without clusters.
    n_clusters : distinct clusters (0 without).
    """

    k: int
    m: int
    n_items: int
    n_used: int
    mean: float
    reference_sd: float
    binomial_sd: float
    repetitions: int
    seed: int
    random_sd: float
    random_ratio: float
    ordered_sd: float
    ordered_ratio: float
    ordered_p: float
    cluster_sd: float
    cluster_ratio: float
    cluster_p: float
    n_clusters: int

    @property
    def exchangeable(self) -> bool:
        """False when the ordered or the cluster split's p-value is below ALPHA / 2 (the two
        tests Bonferroni-adjusted to a joint ALPHA = 0.05)."""
        tests = [p for p in (self.ordered_p, self.cluster_p) if math.isfinite(p)]
        return not any(p < ALPHA / len(tests) for p in tests) if tests else True


def _part_var(x: np.ndarray, k: int, m: int) -> float:
    """Sample variance (ddof=1) of the means of k consecutive blocks of m values."""
    return float(np.var(x[: k * m].reshape(k, m).mean(axis=1), ddof=1))


def split_consistency(scores: Any, k: int = 10, repetitions: int = 200, seed: int = 0,
                      clusters: Any = None) -> SplitConsistency:
    """SD of the scores of k disjoint item splits against s / sqrt(m) (module docstring).

    ``scores``: per-item scores in the benchmark's own item order (that order defines the
    ordered split). ``clusters``: optional cluster label per item (None/NaN = own cluster).
    Randomness only through ``numpy.random.default_rng(seed)``.

    Edge cases: k < 2, m < 2 (fewer than 2k items) or repetitions < 1 raise
    StatsInputError; a constant score column has reference 0 and NaN ratios.
    """
    x = as_scores(scores, "item scores")
    k = check_count(k, "k")
    reps = check_count(repetitions, "repetitions")
    if k < 2:
        raise StatsInputError("split consistency needs at least two splits (k >= 2)")
    if reps < 1:
        raise StatsInputError("repetitions must be at least 1")
    n = int(x.size)
    m = n // k
    if m < 2:
        raise StatsInputError(f"{n} items cannot be cut into {k} splits of at least 2 items")
    rng = np.random.default_rng(int(seed))
    n_used = k * m

    # the ordered split uses the first k m items in order; the others drop items at random
    ordered = x[:n_used]
    s = float(np.std(ordered, ddof=1))
    ref = s / math.sqrt(m)
    mean = float(np.mean(ordered))
    binary = bool(np.all((x == 0) | (x == 1)))
    binom = math.sqrt(mean * (1 - mean) / m) if binary else float("nan")

    random_vars = np.empty(reps)
    for r in range(reps):
        random_vars[r] = _part_var(x[rng.permutation(n)], k, m)
    # each permutation's first k m items is a random subset partitioned at random; its
    # reference differs from the ordered one only through the dropped items (n - k m < k)
    random_sd = math.sqrt(float(np.mean(random_vars)))
    ordered_var = _part_var(ordered, k, m)

    def ratio(sd: float) -> float:
        return sd / ref if ref > 0 else float("nan")

    def p_above(var: float) -> float:
        return float((1 + np.sum(random_vars >= var - 1e-15)) / (1 + reps))

    cl_sd = cl_ratio = cl_p = float("nan")
    n_cl = 0
    if clusters is not None:
        observed, cl_p, n_cl = _cluster_test(x, clusters, k, m, n_used, reps, rng)
        cl_sd = math.sqrt(observed)
        cl_ratio = ratio(cl_sd)
    ordered_sd = math.sqrt(ordered_var)
    return SplitConsistency(k=k, m=m, n_items=n, n_used=n_used, mean=mean, reference_sd=ref,
                            binomial_sd=binom, repetitions=reps, seed=int(seed),
                            random_sd=random_sd, random_ratio=ratio(random_sd),
                            ordered_sd=ordered_sd, ordered_ratio=ratio(ordered_sd),
                            ordered_p=p_above(ordered_var), cluster_sd=cl_sd,
                            cluster_ratio=cl_ratio, cluster_p=cl_p, n_clusters=n_cl)


def _cluster_test(x: np.ndarray, clusters: Any, k: int, m: int, n_used: int, reps: int,
                  rng: np.random.Generator) -> tuple[float, float, int]:
    """Splits that keep clusters together: the observed between-split variance (averaged
    over ``CLUSTER_ORDERS`` random orders of whole clusters, items shuffled within), its
    permutation p (the same statistic on ``reps`` item permutations) and the number of
    clusters. A missing label makes the item a cluster of its own."""
    n = x.size
    labels = np.asarray(clusters, dtype=object).ravel()
    if labels.size != n:
        raise StatsInputError(f"{labels.size} cluster labels for {n} items")
    keys = [f"\x00item{i}" if (v is None or (isinstance(v, float) and math.isnan(v)))
            else str(v) for i, v in enumerate(labels)]
    uniq, codes = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
    n_cl = int(uniq.size)
    orders = []
    for _ in range(min(CLUSTER_ORDERS, reps)):
        rank = rng.permutation(n_cl)[codes]
        orders.append(np.lexsort((rng.random(n), rank)))
    cut = np.stack(orders)[:, :n_used]      # every order's first k m items

    def cluster_stat(values: np.ndarray) -> float:
        # _part_var of each order at once: the orders' block means, their variances
        means = values[cut].reshape(len(orders), k, m).mean(axis=2)
        return float(np.mean(np.var(means, axis=1, ddof=1)))

    observed = cluster_stat(x)
    null = np.array([cluster_stat(x[rng.permutation(n)]) for _ in range(reps)])
    return observed, float((1 + np.sum(null >= observed - 1e-15)) / (1 + reps)), n_cl
