"""LLM judges: prediction-powered inference (PPI++) and judge-human agreement.

A judge's score f_i exists for every item; a human label Y_i for a random subset of n
labelled items; the other N items have only the judge's score. The judge-only mean estimates
E[f], not E[Y]; the human-only mean is unbiased but uses only n items. PPI++ combines them:

    theta_lambda = lambda * mean_N(f) + mean_n(Y - lambda * f)
    SE^2         = lambda^2 var_N(f) / N + var_n(Y - lambda f) / n        (variances ddof=0)
    CI           = theta_lambda +- z_{1-alpha/2} * SE

unbiased for E[Y] for every fixed lambda (the labelled residual corrects the judge's bias).
lambda = 1 is PPI (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, "Prediction-powered
inference", Science 382:669); lambda = 0 is the human-only CLT mean. Power tuning picks the
lambda that minimises the variance (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient
prediction-powered inference", arXiv:2311.01453, Example 6.1), estimated as

    lambda = cov_n(Y, f) / ((1 + n/N) * var_{n+N}(f))       clipped to [0, 1]

with cov_n the 1/n covariance on the labelled items and var_{n+N} the ddof=1 variance of the
judge's scores on all n + N items. This is exactly what ``ppi_py`` 0.2.3's ``ppi_mean_ci``
(``lam=None``) computes (``_calc_lam_glm`` with ``clip=True``); tests compare the two.
The PPI++ interval is never much wider than the human-only one (lambda = 0 is allowed) and
is narrower the better the judge tracks the humans.

Paired difference of two runs graded by the same judge (:func:`ppi_paired_difference`): the
same estimator on per-item differences Y_B - Y_A and f_B - f_A.

Agreement on the labelled items: Cohen's kappa with the large-sample SE of Fleiss, Cohen &
Everitt (1969, "Large sample standard errors of kappa and weighted kappa", Psychol. Bull.
72:323), the ASE of SAS PROC FREQ and of ``statsmodels.stats.inter_rater.cohens_kappa``; the
judge's bias mean(f - Y) with a t_{n-1} interval.

Edge cases: at least 2 labelled and 2 unlabelled items; NaN anywhere raises; a judge constant
on every item has var(f) = 0, and lambda is then 0 (the human-only CLT interval), as the
variance formula requires. The labelled items must be a random sample of the task's items:
PPI's guarantee rests on that, and :func:`label_shift` checks the visible part of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from evalcore.stats._checks import (StatsInputError, as_scores, check_confidence, same_length,
                                    z_value)
from evalcore.stats._distributions import t_ppf

PPI_METHOD = "PPI++ (power-tuned, Angelopoulos, Duchi & Zrnic 2023)"
KAPPA_METHOD = "Cohen's kappa, Fleiss-Cohen-Everitt (1969) large-sample SE"
MIN_LABELLED = 10


@dataclass(frozen=True)
class PPIMean:
    """A prediction-powered mean (or paired difference) with its interval.

    estimate, low, high, se : theta_lambda, its z interval and SE (module docstring).
    lam : the power-tuning parameter used (in [0, 1]; 1 = plain PPI, 0 = human only).
    tuned : True when lam was estimated from the data (PPI++), False when given.
    n_labelled, n_unlabelled : n and N. confidence : e.g. 0.95. method : in words.
    judge_term, rectifier : lam * mean_N(f) and mean_n(Y - lam f), the two parts of the
    estimate.
    """

    estimate: float
    low: float
    high: float
    se: float
    lam: float
    tuned: bool
    n_labelled: int
    n_unlabelled: int
    confidence: float
    method: str
    judge_term: float
    rectifier: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of two raters on the same items, with a z interval.

    kappa, se, low, high : kappa, the Fleiss-Cohen-Everitt SE, kappa +- z * se.
    observed, expected : agreement p_o and chance agreement p_e.
    categories : the rating values, in the table's order.
    table : counts, rows = first rater (human), columns = second rater (judge).
    """

    kappa: float
    se: float
    low: float
    high: float
    observed: float
    expected: float
    categories: tuple[float, ...]
    table: tuple[tuple[int, ...], ...]
    n: int
    confidence: float
    method: str = KAPPA_METHOD


@dataclass(frozen=True)
class MeanT:
    """A mean with a t_{n-1} interval (the judge's bias mean(f - Y), or a human-only mean)."""

    estimate: float
    low: float
    high: float
    se: float
    n: int
    confidence: float
    method: str


@dataclass(frozen=True)
class LabelShift:
    """Do the labelled items look like a random sample? The judge's scores on the labelled
    items against those on the unlabelled ones: the difference of means and a two-sided
    Mann-Whitney U p-value (a small p says the labelled items differ systematically)."""

    mean_labelled: float
    mean_unlabelled: float
    p_value: float
    method: str = "two-sided Mann-Whitney U test of the judge's scores, labelled vs unlabelled"

    def suspicious(self, alpha: float = 0.01) -> bool:
        return bool(self.p_value < alpha)


def _ppi_inputs(human: Any, judge_labelled: Any, judge_unlabelled: Any
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = as_scores(human, "human labels")
    f = as_scores(judge_labelled, "judge scores on the labelled items")
    g = as_scores(judge_unlabelled, "judge scores on the unlabelled items")
    same_length(y, f, "human labels", "judge scores on the labelled items")
    if y.size < 2 or g.size < 2:
        raise StatsInputError(f"PPI needs at least 2 labelled and 2 unlabelled items, got "
                              f"{y.size} labelled and {g.size} unlabelled")
    return y, f, g


def power_tuning_lambda(human: Any, judge_labelled: Any, judge_unlabelled: Any) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1] (module docstring):
    cov_n(Y, f) / ((1 + n/N) var_{n+N}(f)), 1/n covariance, ddof=1 variance over all items.
    A judge constant on every item gives 0 (nothing to borrow from it)."""
    y, f, g = _ppi_inputs(human, judge_labelled, judge_unlabelled)
    n, big_n = y.size, g.size
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    var_f = float(np.var(np.concatenate([f, g]), ddof=1))
    if var_f == 0.0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(human: Any, judge_labelled: Any, judge_unlabelled: Any,
             confidence: float = 0.95, *, lam: float | None = None) -> PPIMean:
    """PPI++ estimate of the human mean E[Y] and its z interval (module docstring).

    ``lam=None`` tunes lambda (:func:`power_tuning_lambda`); a number in [0, 1] fixes it
    (1: plain PPI). Equal to ``ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=1 -
    confidence, lam=lam)`` and ``ppi_mean_pointestimate``.
    """
    c = check_confidence(confidence)
    y, f, g = _ppi_inputs(human, judge_labelled, judge_unlabelled)
    tuned = lam is None
    if tuned:
        lam = power_tuning_lambda(y, f, g)
    elif not (0.0 <= float(lam) <= 1.0):
        raise StatsInputError(f"lambda must lie in [0, 1], got {lam!r}")
    lam = float(lam)
    judge_term = lam * float(g.mean())
    rectifier = float(np.mean(y - lam * f))
    se = math.sqrt(lam * lam * float(np.var(g)) / g.size + float(np.var(y - lam * f)) / y.size)
    est = judge_term + rectifier
    z = z_value(c)
    return PPIMean(estimate=est, low=est - z * se, high=est + z * se, se=se, lam=lam,
                   tuned=tuned, n_labelled=int(y.size), n_unlabelled=int(g.size), confidence=c,
                   method=PPI_METHOD if tuned else f"PPI, fixed lambda = {lam:g}",
                   judge_term=judge_term, rectifier=rectifier)


def ppi_paired_difference(human_a: Any, human_b: Any, judge_a_labelled: Any,
                          judge_b_labelled: Any, judge_a_unlabelled: Any,
                          judge_b_unlabelled: Any, confidence: float = 0.95, *,
                          lam: float | None = None) -> PPIMean:
    """PPI++ for the paired difference B - A of two runs graded by one judge: :func:`ppi_mean`
    of Y_B - Y_A on the labelled items, with judge differences f_B - f_A on every item. The
    item pairing is the caller's (index i is the same item in every array)."""
    ya, yb = as_scores(human_a, "human labels of A"), as_scores(human_b, "human labels of B")
    fa = as_scores(judge_a_labelled, "judge scores of A (labelled)")
    fb = as_scores(judge_b_labelled, "judge scores of B (labelled)")
    ga = as_scores(judge_a_unlabelled, "judge scores of A (unlabelled)")
    gb = as_scores(judge_b_unlabelled, "judge scores of B (unlabelled)")
    same_length(ya, yb, "human labels of A", "human labels of B")
    same_length(ga, gb, "judge scores of A (unlabelled)", "judge scores of B (unlabelled)")
    res = ppi_mean(yb - ya, fb - fa, gb - ga, confidence, lam=lam)
    return PPIMean(**{**res.__dict__, "method": res.method + ", paired difference B - A"})


def ppi_variance(n: int, n_unlabelled: int, var_human: float, var_judge: float,
                 cov: float) -> tuple[float, float]:
    """(variance of the PPI++ estimate, lambda) for n labelled and N unlabelled items, from
    population moments: lambda = cov / ((1 + n/N) var_f) clipped to [0, 1],
    Var = lambda^2 var_f / N + (var_Y - 2 lambda cov + lambda^2 var_f) / n (module docstring;
    PPI++ eq. (6)). For planning: at lambda = 0 it is var_Y / n (human labels only)."""
    if n < 1 or n_unlabelled < 1:
        raise StatsInputError("n and N must be at least 1")
    if var_human < 0 or var_judge < 0:
        raise StatsInputError("variances must be non-negative")
    lam = 0.0 if var_judge == 0 else float(np.clip(cov / ((1 + n / n_unlabelled) * var_judge),
                                                   0.0, 1.0))
    var = lam * lam * var_judge / n_unlabelled + (var_human - 2 * lam * cov
                                                  + lam * lam * var_judge) / n
    return max(var, 0.0), lam


def _t_mean(x: np.ndarray, confidence: float, method: str) -> MeanT:
    m = float(x.mean())
    se = float(np.std(x, ddof=1) / math.sqrt(x.size))
    q = t_ppf(0.5 + confidence / 2.0, x.size - 1)
    return MeanT(m, m - q * se, m + q * se, se, int(x.size), confidence, method)


def judge_bias(human: Any, judge: Any, confidence: float = 0.95) -> MeanT:
    """mean(f - Y) over the labelled items with a t_{n-1} interval: how far the judge's
    average sits above (positive) or below the humans'. Needs n >= 2."""
    c = check_confidence(confidence)
    y, f = as_scores(human, "human labels"), as_scores(judge, "judge scores")
    same_length(y, f, "human labels", "judge scores")
    if y.size < 2:
        raise StatsInputError("the judge's bias needs at least 2 labelled items")
    return _t_mean(f - y, c, "mean(judge - human), t interval with n - 1 df")


def t_mean_interval(scores: Any, confidence: float = 0.95) -> MeanT:
    """mean +- t_{n-1} sd(x, ddof=1)/sqrt(n): the human-only interval for non-0/1 labels."""
    c = check_confidence(confidence)
    x = as_scores(scores, "human labels")
    if x.size < 2:
        raise StatsInputError("a t interval needs at least 2 values")
    return _t_mean(x, c, "mean, t interval with n - 1 df")


def cohens_kappa(first: Any, second: Any, confidence: float = 0.95) -> Kappa:
    """Unweighted Cohen's kappa of two raters, with the Fleiss-Cohen-Everitt (1969) SE.

    kappa = (p_o - p_e)/(1 - p_e), p_o = sum_i p_ii, p_e = sum_i p_i. p_.i;
    Var = [sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2
           + (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
           - (kappa - p_e (1 - kappa))^2] / ((1 - p_e)^2 n)
    (statsmodels' ``cohens_kappa(table).std_kappa``). Categories: the distinct values of
    both raters. Edge case: p_e = 1 (both raters give one value to every item) leaves kappa
    undefined: NaN with NaN interval.
    """
    c = check_confidence(confidence)
    a, b = as_scores(first, "first rater"), as_scores(second, "second rater")
    same_length(a, b, "first rater", "second rater")
    cats = np.unique(np.concatenate([a, b]))
    ia, ib = np.searchsorted(cats, a), np.searchsorted(cats, b)
    k = cats.size
    table = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k)
    n = int(a.size)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(np.sum(rows * cols))
    counts = tuple(tuple(int(v) for v in r) for r in table)
    if p_e >= 1.0:
        nan = float("nan")
        return Kappa(nan, nan, nan, nan, p_o, p_e, tuple(map(float, cats)), counts, n, c)
    kappa = (p_o - p_e) / (1.0 - p_e)
    diag = np.diag(p)
    term_a = float(np.sum(diag * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = p * (cols[:, None] + rows[None, :]) ** 2
    np.fill_diagonal(off, 0.0)
    term_b = (1 - kappa) ** 2 * float(off.sum())
    term_c = (kappa - p_e * (1 - kappa)) ** 2
    se = math.sqrt(max(term_a + term_b - term_c, 0.0) / ((1 - p_e) ** 2 * n))
    z = z_value(c)
    return Kappa(kappa, se, kappa - z * se, kappa + z * se, p_o, p_e,
                 tuple(map(float, cats)), counts, n, c)


def label_shift(judge_labelled: Any, judge_unlabelled: Any) -> LabelShift:
    """The judge's scores on labelled vs unlabelled items: means and the two-sided
    Mann-Whitney U p-value (asymptotic, tie-corrected; scipy). A random sample of items gives
    uniform p-values; a small one says the labelled items were chosen by something the judge
    sees (easy items, one source). NaN p when every score is equal (nothing to compare)."""
    f = as_scores(judge_labelled, "judge scores on the labelled items")
    g = as_scores(judge_unlabelled, "judge scores on the unlabelled items")
    if np.ptp(np.concatenate([f, g])) == 0:
        p = float("nan")
    else:
        p = float(mannwhitneyu(f, g, alternative="two-sided", method="asymptotic").pvalue)
    return LabelShift(float(f.mean()), float(g.mean()), p)


@dataclass(frozen=True)
class LabelsNeeded:
    """Human labels needed for a target SE of the PPI++ estimate (:func:`ppi_labels_needed`).

    n_labels : the smallest n (of ``n_items``, at most n_items - 2) whose PPI++ SE is at
        most ``target_se``; None when even n_items - 2 labels do not reach it.
    n_human_only : labels needed by the human-only mean, ceil(var_Y / target_se^2) (may
        exceed n_items).
    floor_se : the judge-limited floor sqrt(rho^2 var_Y / n_items) that no number of labels
        goes below while the judge is used (unclipped lambda).
    lam : the tuning parameter at n_labels (NaN when unreachable).
    best_se : the SE with n_items - 2 labels (the most this task allows).
    """

    target_se: float
    n_items: int
    n_labels: int | None
    n_human_only: int
    floor_se: float
    lam: float
    best_se: float


def ppi_labels_needed(target_se: float, n_items: int, var_human: float, var_judge: float,
                      cov: float) -> LabelsNeeded:
    """The fewest human labels on a task of ``n_items`` items for a PPI++ SE <= target_se.

    Labelled items are part of the task (N = n_items - n): Var(n) from :func:`ppi_variance`
    (lambda tuned for each n, clipped to [0, 1]). Unclipped, Var(n) = var_Y [(1 - rho^2)/n +
    rho^2 / n_items] with rho the judge-human correlation, so
    n = var_Y (1 - rho^2) / (target_se^2 - rho^2 var_Y / n_items): the judge replaces a share
    rho^2 of the human variance. Var(n) decreases in n, so the first n that reaches the target
    is the answer (searched over every n from 2 to n_items - 2).
    """
    se = float(target_se)
    total = int(n_items)
    if not (se > 0.0) or math.isinf(se):
        raise StatsInputError(f"target SE must be a positive number, got {target_se!r}")
    if total < 4:
        raise StatsInputError(f"a task needs at least 4 items to plan labels, got {total}")
    if var_human <= 0:
        raise StatsInputError("the human labels' variance must be positive")
    if var_judge < 0 or cov * cov > var_human * var_judge * (1 + 1e-9):
        raise StatsInputError("judge variance and covariance must satisfy cov^2 <= "
                              "var_human * var_judge")
    n = np.arange(2, total - 1, dtype=float)
    big_n = total - n
    lam = (np.zeros_like(n) if var_judge == 0 else
           np.clip(cov / ((1 + n / big_n) * var_judge), 0.0, 1.0))
    var = lam ** 2 * var_judge / big_n + (var_human - 2 * lam * cov + lam ** 2 * var_judge) / n
    ok = np.flatnonzero(var <= se * se)
    rho2 = 0.0 if var_judge == 0 else cov * cov / (var_human * var_judge)
    return LabelsNeeded(
        target_se=se, n_items=total,
        n_labels=int(n[ok[0]]) if ok.size else None,
        n_human_only=int(math.ceil(var_human / (se * se) - 1e-9)),
        floor_se=math.sqrt(rho2 * var_human / total),
        lam=float(lam[ok[0]]) if ok.size else float("nan"),
        best_se=math.sqrt(max(float(var[-1]), 0.0)))


def binary_agreement_moments(p_human: float, p_judge: float,
                             agreement: float) -> tuple[float, float, float]:
    """(var_Y, var_f, cov) of two 0/1 raters from their rates and the share of items they
    agree on: P(both 1) = (agreement - 1 + p_Y + p_f) / 2, cov = P(both 1) - p_Y p_f. The
    three inputs must describe a 2x2 table with non-negative cells."""
    py, pf, a = float(p_human), float(p_judge), float(agreement)
    for name, v in (("human rate", py), ("judge rate", pf), ("agreement", a)):
        if not (0.0 <= v <= 1.0):
            raise StatsInputError(f"{name} must lie in [0, 1], got {v!r}")
    both = (a - 1 + py + pf) / 2
    cells = (both, py - both, pf - both, 1 - py - pf + both)
    if min(cells) < -1e-12:
        raise StatsInputError(f"no 2x2 table has human rate {py:g}, judge rate {pf:g} and "
                              f"agreement {a:g} (agreement must lie in "
                              f"[{abs(py - pf):g}, {1 - abs(py + pf - 1):g}])")
    return py * (1 - py), pf * (1 - pf), both - py * pf
