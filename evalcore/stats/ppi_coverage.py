"""Method check for LLM judges: coverage of the judge-only, human-only and PPI++ intervals of a
task's human score when a biased judge grades every item and people label a random sample.

Design (:func:`ppi_coverage`): T items, of which n carry a human label; each item's human
score Y ~ Bernoulli(p); the judge passes a wrong item with probability ``false_pass`` and
fails a right one with probability ``false_fail``, so the judge's mean estimates
q = p (1 - false_fail) + (1 - p) false_pass, not p. The truth is p (the human score of the
population the items are drawn from), drawn per simulated sample from p's neighbourhood as in
:mod:`evalcore.stats.coverage`. Every interval is the product's own formula:

- ``ppi``: PPI++ with power tuning (:func:`evalcore.stats.ppi.ppi_mean`), the default;
- ``ppi-plain``: PPI with lambda = 1 (Angelopoulos et al. 2023);
- ``judge-only``: the Wilson interval of the judge's mean over all T items (what a board
  shows for a judged task): it covers q, so it undercovers p once the bias is larger than
  its width;
- ``human-only``: the Wilson interval of the n labels alone.

Simulated by counts (vectorised, seeded): the labelled items' 2x2 table (human x judge) is
multinomial, the unlabelled items' judge passes binomial; PPI++'s lambda, estimate and SE are
exact functions of those counts (1/n covariance, ddof=1 variance over all T judge scores,
ddof=0 variances in the SE, as ``ppi_mean``; tests pin the two together).
"""

from __future__ import annotations

import numpy as np

from evalcore.stats import _interval_arrays as ia
from evalcore.stats._checks import StatsInputError, check_confidence, check_count, z_value
from evalcore.stats.coverage import (NEIGHBOURHOOD, REPLICATES, CoverageReport,
                                     _check_neighbourhood, _check_rate, _covered, _criterion,
                                     _half_range, _min_criterion, _replicates, _simulated,
                                     _slices, _window)

JUDGE_METHODS = ("ppi", "ppi-plain", "judge-only", "human-only")
JUDGE_LABELS = {"ppi": "PPI++ (power-tuned)", "ppi-plain": "PPI (lambda = 1)",
                "judge-only": "Judge only, Wilson on all items",
                "human-only": "Human labels only, Wilson"}
MAX_ITEMS = 1_000_000


def _counts(rng: np.random.Generator, truth: np.ndarray, n: int, big_n: int,
            false_pass: float, false_fail: float) -> tuple[np.ndarray, ...]:
    """Per sample: the labelled 2x2 cells (both 1, human only, judge only, both 0) and the
    judge's passes among the N unlabelled items."""
    p11 = truth * (1 - false_fail)
    p10 = truth * false_fail
    p01 = (1 - truth) * false_pass
    p00 = (1 - truth) * (1 - false_pass)
    cells = rng.multinomial(n, np.stack([p11, p10, p01, p00], axis=1))
    passes = rng.binomial(big_n, p11 + p01)
    return tuple(cells[:, j].astype(float) for j in range(4)) + (passes.astype(float),)


def _ppi_bounds(a: np.ndarray, b: np.ndarray, c: np.ndarray, passes: np.ndarray, n: int,
                big_n: int, z: float, tuned: bool) -> ia.Bounds:
    """PPI(++) bounds from the counts (module docstring): the ``ppi_mean`` formulas."""
    ybar, fbar, gbar = (a + b) / n, (a + c) / n, passes / big_n
    total = n + big_n
    ones = a + c + passes
    var_all = (ones - ones * ones / total) / (total - 1)
    if tuned:
        cov = a / n - ybar * fbar
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(var_all > 0, cov / ((1 + n / big_n) * var_all), 0.0)
        lam = np.clip(lam, 0.0, 1.0)
    else:
        lam = np.ones_like(ybar)
    mean_r = ybar - lam * fbar
    var_r = (a * (1 - lam) ** 2 + b + c * lam * lam) / n - mean_r * mean_r
    se = np.sqrt(lam * lam * gbar * (1 - gbar) / big_n + np.maximum(var_r, 0.0) / n)
    est = lam * gbar + mean_r
    return est - z * se, est + z * se


def ppi_coverage(n_labelled: int, n_items: int, p: float, false_pass: float,
                 false_fail: float = 0.0, confidence: float = 0.95, *, seed: int = 0,
                 replicates: int = REPLICATES,
                 neighbourhood: float = NEIGHBOURHOOD) -> CoverageReport:
    """Simulated coverage of the human score p by PPI++, plain PPI, the judge-only and the
    human-only intervals (module docstring).

    Edge cases: 2 <= n_labelled <= n_items - 2; n_items <= 1,000,000; 0 < p < 1; the
    judge's error rates in [0, 1); replicates never below 2,000 (the Monte Carlo SE is
    reported).
    """
    total = check_count(n_items, "n_items")
    n = check_count(n_labelled, "n_labelled")
    if not (4 <= total <= MAX_ITEMS):
        raise StatsInputError(f"n_items must lie in [4, {MAX_ITEMS:,}], got {total}")
    if not (2 <= n <= total - 2):
        raise StatsInputError(f"labelled items must lie in [2, n_items - 2 = {total - 2}], "
                              f"got {n}")
    mu = _check_rate(p, "p")
    fp = _check_rate(false_pass, "false pass rate", low_open=False)
    ff = _check_rate(false_fail, "false fail rate", low_open=False)
    c = check_confidence(confidence)
    nb = _check_neighbourhood(neighbourhood)
    big_n = total - n
    r = _replicates(replicates, 1)
    rng = np.random.default_rng(seed)
    h = _half_range(mu, nb)
    u = rng.uniform(-1.0, 1.0, r)
    truth = mu + h * u
    slices = _slices(u if h > 0 else None)
    a, b, cc, _, passes = _counts(rng, truth, n, big_n, fp, ff)
    z, alpha = z_value(c), 1.0 - c
    bounds = {
        "ppi": _ppi_bounds(a, b, cc, passes, n, big_n, z, True),
        "ppi-plain": _ppi_bounds(a, b, cc, passes, n, big_n, z, False),
        "judge-only": ia.modified_wilson_bounds(a + cc + passes, total, z, alpha),
        "human-only": ia.modified_wilson_bounds(a + b, n, z, alpha),
    }
    params = (("p", mu), ("false_pass", fp), ("false_fail", ff), ("items", float(total)))
    methods = tuple(
        _simulated(m, _covered(lo, hi, truth), hi - lo, default=m == "ppi", nominal=c, n=n,
                   setting="judge", params=params, label=JUDGE_LABELS[m], slices=slices)
        for m, (lo, hi) in bounds.items())
    bias = judge_bias_points(mu, fp, ff)
    notes = (f"simulated: {r:,} samples of {total:,} items with {n:,} human labels, seed {seed}",
             f"the judge's mean is off by {100 * bias:+.2f} points at p = {mu:g}: the "
             "judge-only interval is centred there, not on the human score",
             "coverage is of the human score p; n is the number of labelled items")
    return CoverageReport("judge", n, c, params, methods, False, r, seed,
                          _criterion("p", mu, nb, False), notes,
                          _min_criterion("p", mu, nb, False, r), _window("p", mu, nb))


def judge_bias_points(p: float, false_pass: float, false_fail: float) -> float:
    """The judge's mean minus the human score, q - p, in score units."""
    return float(p) * (1 - float(false_fail)) + (1 - float(p)) * float(false_pass) - float(p)

