"""Training-seed noise: between-seed variance and comparisons with the seed as a random effect.

Several runs of one training configuration that differ only in the training seed form a
*seed group*. Each run's score y_s carries two kinds of noise:

    y_s = mu + u_s + e_s,   u_s ~ (0, sigma_seed^2)  (the seed),
                            e_s ~ (0, SE_s^2)        (the sample of items, SE_s known).

Madaan et al. (2024), "Quantifying Variance in Evaluation Benchmarks", arXiv:2406.10229,
sec. 3, measure the *seed variance* as the spread of a benchmark score over models trained
from different initialisation seeds, and compare it with the item-sampling interval of one
run; more items lower the item part only. The variance component here is the one-way
random-effects ANOVA estimator (method of moments; Searle, Casella & McCulloch 1992,
"Variance Components", sec. 3.5) with the runs as groups and their items as replicates:

    MS_between = n * S^2,  MS_within = n * mean_s(SE_s^2)  (SE_s = sd(x_s, ddof=1)/sqrt(n))
    sigma_seed^2 = (MS_between - MS_within) / n = S^2 - mean_s(SE_s^2)

with S^2 the sample variance (ddof = 1) of the k seed scores. It may come out negative
(the seeds spread no more than item noise alone would make them): it is reported as is,
and its SD is then 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from evalcore.stats._checks import StatsInputError, as_scores, check_confidence

MAX_SEEDS = 10_000


def _seed_inputs(scores: Any, item_ses: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    y = as_scores(scores, f"{name} seed scores")
    if item_ses is None:
        se = np.full(y.shape, np.nan)
    else:
        se = np.asarray(item_ses, dtype=float).ravel()
        if se.shape != y.shape:
            raise StatsInputError(f"{name}: {se.size} item SEs for {y.size} seed scores")
        if np.any(se[np.isfinite(se)] < 0):
            raise StatsInputError(f"{name}: an item SE is negative")
    return y, se


@dataclass(frozen=True)
class SeedVariance:
    """Between-seed variance of one configuration's score.

    Attributes
    ----------
    k : number of seeds (runs).
    mean : mean of the seed scores.
    sd_observed : S, the sample SD (ddof = 1) of the seed scores (seed + item noise).
    item_var : mean_s(SE_s^2), the item-sampling variance of one run's score (NaN when no
        run has an item SE).
    between_var : sigma_seed^2 = S^2 - item_var (may be negative; not clipped). With no
        item SE known it is S^2 (seed and item noise cannot be told apart).
    between_sd : sqrt(max(between_var, 0)).
    item_se : sqrt(item_var).
    """

    k: int
    mean: float
    sd_observed: float
    item_var: float
    between_var: float
    between_sd: float
    item_se: float

    @property
    def seed_to_item_ratio(self) -> float:
        """between_sd / item_se: above 1, retraining moves the score more than the items do."""
        if not (math.isfinite(self.item_se) and self.item_se > 0):
            return float("nan")
        return self.between_sd / self.item_se

    @property
    def run_var(self) -> float:
        """Variance of one run's score: max(between_var, 0) + item_var (item_var 0 if unknown)."""
        iv = self.item_var if math.isfinite(self.item_var) else 0.0
        return max(self.between_var, 0.0) + iv


def seed_variance(scores: Any, item_ses: Any = None) -> SeedVariance:
    """Between-seed variance component of k >= 2 runs of one configuration.

    sigma_seed^2 = S^2 - mean_s(SE_s^2)   (one-way random-effects ANOVA, module docstring)

    ``item_ses``: each run's item standard error sd(x, ddof=1)/sqrt(n) (NaN where unknown;
    the mean is over the known ones). Edge cases: k < 2 raises StatsInputError (one run has
    no seed spread); a negative estimate is kept and ``between_sd`` is 0.
    """
    y, se = _seed_inputs(scores, item_ses, "configuration")
    if y.size < 2:
        raise StatsInputError("a seed variance needs at least two seeds (runs)")
    s2 = float(np.var(y, ddof=1))
    known = se[np.isfinite(se)]
    item_var = float(np.mean(known ** 2)) if known.size else float("nan")
    between = s2 - (item_var if known.size else 0.0)
    return SeedVariance(k=int(y.size), mean=float(np.mean(y)), sd_observed=math.sqrt(s2),
                        item_var=item_var, between_var=between,
                        between_sd=math.sqrt(max(between, 0.0)),
                        item_se=math.sqrt(item_var) if known.size else float("nan"))


@dataclass(frozen=True)
class SeedComparison:
    """Difference of two configurations' seed means, the seed as a random effect.

    Attributes
    ----------
    diff : mean(B) - mean(A).
    se : sqrt(v_A + v_B), v_c = V_c / k_c with V_c the variance of one run's score of
        configuration c (see ``seed_comparison``).
    df : Welch-Satterthwaite degrees of freedom (inf when both variances are known item
        variances).
    low, high : diff -+ t_{df, 1 - alpha/2} * se.
    p_value : two-sided, from the t distribution with df degrees of freedom.
    confidence : the confidence level of the interval.
    a, b : the two configurations' ``SeedVariance``.
    floored : (A, B) True where the observed seed variance fell below the item variance
        and the item variance was used instead (its df taken as infinite).
    method : a short description of the interval.
    """

    diff: float
    se: float
    df: float
    low: float
    high: float
    p_value: float
    confidence: float
    a: SeedVariance
    b: SeedVariance
    floored: tuple[bool, bool]
    method: str


def satterthwaite_df(variances: Any, dfs: Any) -> float:
    """Welch-Satterthwaite df of a sum of independent variance estimates v_c with df_c:

        df = (sum_c v_c)^2 / sum_c (v_c^2 / df_c)

    (Satterthwaite 1946; Welch 1947). Terms with infinite df (a known variance) add
    nothing to the denominator; when every term is known the result is inf.
    """
    v = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    if v.shape != d.shape or v.size == 0:
        raise StatsInputError("satterthwaite_df needs one df per variance")
    if np.any(v < 0) or np.any(d <= 0):
        raise StatsInputError("variances must be >= 0 and dfs > 0")
    finite = np.isfinite(d)
    denom = float(np.sum(v[finite] ** 2 / d[finite]))
    total = float(np.sum(v))
    if denom == 0.0:
        return float("inf")
    return total * total / denom


def seed_comparison(scores_a: Any, scores_b: Any, item_ses_a: Any = None,
                    item_ses_b: Any = None, confidence: float = 0.95, *,
                    floor_at_item_variance: bool = True) -> SeedComparison:
    """Compare configurations A and B, each trained with k_A, k_B >= 2 seeds.

    diff = ybar_B - ybar_A
    V_c = S_c^2 (observed variance of c's seed scores: seed plus item noise), or, when
          ``floor_at_item_variance`` and S_c^2 < mean_s(SE_s^2), the item variance
          mean_s(SE_s^2) (a run's score cannot vary less than its items make it; S_c^2 from
          two or three seeds is often that small by chance)
    SE^2 = V_A / k_A + V_B / k_B
    df   = Welch-Satterthwaite with df_c = k_c - 1 for an observed S_c^2 and infinity for a
           floored one (``satterthwaite_df``)
    CI   = diff -+ t_{df, 1-alpha/2} * SE;  p = 2 * (1 - T_df(|diff| / SE)).

    Without flooring this is Welch's unequal-variance t-test on the seed scores (scipy's
    ``ttest_ind(equal_var=False)``). The SE includes the between-seed and the item variance
    because S_c^2 estimates sigma_seed^2 + SE^2. Runs are treated as independent
    measurements; when all runs share one item set, the item noise common to every run
    cancels in the difference, so the item part is then conservative.

    Edge cases: fewer than two seeds on either side raises StatsInputError (the seed
    variance of that configuration is unknown: train another seed); SE = 0 (identical
    seed scores and no item SE, or item SEs of 0) gives NaN bounds and p with the reason in
    ``method`` - never a zero-width interval.
    """
    c = check_confidence(confidence)
    ya, sa = _seed_inputs(scores_a, item_ses_a, "configuration A")
    yb, sb = _seed_inputs(scores_b, item_ses_b, "configuration B")
    if ya.size < 2 or yb.size < 2:
        raise StatsInputError("each configuration needs at least two seeds to estimate its "
                              f"seed variance (got {ya.size} and {yb.size})")
    va, vb = seed_variance(ya, sa), seed_variance(yb, sb)
    parts, dfs, floored = [], [], []
    for sv in (va, vb):
        s2 = sv.sd_observed ** 2
        if floor_at_item_variance and math.isfinite(sv.item_var) and s2 < sv.item_var:
            parts.append(sv.item_var / sv.k)
            dfs.append(math.inf)
            floored.append(True)
        else:
            parts.append(s2 / sv.k)
            dfs.append(sv.k - 1.0)
            floored.append(False)
    se = math.sqrt(sum(parts))
    diff = vb.mean - va.mean
    df = satterthwaite_df(parts, dfs)
    method = ("seed as random effect: Welch-Satterthwaite t on seed means"
              + (" (item variance floor)" if any(floored) else ""))
    if not se > 0:
        # no spread and no item variance: the noise is unknown, not zero (no zero-width
        # interval of a difference is ever shown)
        nan = float("nan")
        return SeedComparison(diff=diff, se=se, df=df, low=nan, high=nan, p_value=nan,
                              confidence=c, a=va, b=vb, floored=(floored[0], floored[1]),
                              method=method + "; no interval: the seed scores do not vary "
                              "within either configuration and no item SE is known, so the "
                              "noise is unknown, not zero")
    q = float(sps.norm.ppf(0.5 + c / 2)) if math.isinf(df) else float(sps.t.ppf(0.5 + c / 2, df))
    stat = abs(diff) / se
    p = float(2 * (sps.norm.sf(stat) if math.isinf(df) else sps.t.sf(stat, df)))
    return SeedComparison(diff=diff, se=se, df=df, low=diff - q * se, high=diff + q * se,
                          p_value=p, confidence=c, a=va, b=vb,
                          floored=(floored[0], floored[1]), method=method)


@dataclass(frozen=True)
class SeedsNeeded:
    """Seeds per configuration needed to detect a gap.

    seeds : smallest k (>= 2) with (t_{1-alpha/2, 2k-2} + t_{power, 2k-2}) * sqrt(2 V / k)
        <= gap, or None when more than ``MAX_SEEDS`` would be needed.
    seeds_normal : the normal-approximation count ceil(2 (z_{1-alpha/2} + z_power)^2 V / gap^2).
    run_var : V, the variance of one run's score (between-seed plus item variance).
    gap, alpha, power : the inputs.
    """

    seeds: int | None
    seeds_normal: int
    run_var: float
    gap: float
    alpha: float
    power: float


def seeds_needed(gap: float, between_var: float, item_var: float = 0.0,
                 alpha: float = 0.05, power: float = 0.8) -> SeedsNeeded:
    """Seeds per configuration for a two-sided test at ``alpha`` to detect ``gap`` with ``power``.

    With k seeds per configuration, SE(diff) = sqrt(2 V / k), V = max(sigma_seed^2, 0) +
    SE_item^2 (the same V both sides). The planning rule is the usual one,
    (q_{1-alpha/2} + q_power) * SE <= gap, with t quantiles on 2k - 2 df (Welch with equal
    variances and sizes), so a handful of seeds costs the t penalty it really pays. More
    items lower only SE_item^2: sigma_seed^2 / k is a floor that only more seeds lower.

    Edge cases: gap <= 0 or a non-finite input raises StatsInputError; V = 0 gives 2.
    """
    g = float(gap)
    if not (math.isfinite(g) and g > 0):
        raise StatsInputError(f"gap must be a positive number, got {gap!r}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise StatsInputError("alpha and power must lie in (0, 1)")
    bv, iv = float(between_var), float(item_var)
    if not (math.isfinite(bv) and math.isfinite(iv)) or iv < 0:
        raise StatsInputError("between_var and item_var must be finite (item_var >= 0)")
    v = max(bv, 0.0) + iv
    zsum = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    k_norm = max(2, math.ceil(2 * zsum * zsum * v / (g * g)))
    if v == 0.0:
        return SeedsNeeded(2, 2, v, g, alpha, power)
    k_found: int | None = None
    ks = np.arange(2, MAX_SEEDS + 1)
    df = 2.0 * ks - 2.0
    need = (sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(power, df)) * np.sqrt(2 * v / ks)
    ok = np.flatnonzero(need <= g)
    if ok.size:
        k_found = int(ks[ok[0]])
    return SeedsNeeded(k_found, int(k_norm), v, g, alpha, power)
