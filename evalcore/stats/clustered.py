"""Cluster-robust standard error of a mean, design effect and ICC(1).

Items are often not independent: five questions on one reading passage, the 57 subjects of
MMLU, the instructions inside one IFEval prompt. Items of one cluster get easier or harder
together, so the iid standard error is too small. Reference: Miller (2024), "Adding Error
Bars to Evals: A Statistical Approach to Language Model Evaluations", arXiv:2411.00640, sec. 2.2.

Few clusters: Cameron & Miller (2015), "A Practitioner's Guide to Cluster-Robust Inference",
J. Human Resources 50:317. With G clusters the CR1 SE is noisy and biased down when G is
small; intervals use t quantiles with G - 1 degrees of freedom (:func:`clustered_interval`),
and below 30 clusters the headline interval is never narrower than the iid one. CR2 /
Bell-McCaffrey is not offered: it is not pinned to a published worked example here.

0/1 scores: a Wald interval p +- t SE is poor near 0 or 1 even with the right SE (the cluster
sums are skewed; 78% coverage at p = 0.05, ICC = 0.2, G = 8 in the Method check, on average
over p in [0.04, 0.06], 74% in the lowest tenth of that range), so the
headline for a clustered proportion is the Korn-Graubard interval
(:func:`korn_graubard_interval`), which carries the design effect and the G - 1 degrees of
freedom into a Clopper-Pearson interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import t as t_dist

from evalcore.stats._checks import (StatsInputError, as_clusters, as_scores, check_confidence,
                                    check_count, z_value)
from evalcore.stats._distributions import t_ppf


@dataclass(frozen=True)
class ClusteredSE:
    """Clustered vs iid standard error of one mean.

    Attributes
    ----------
    mean : the mean score p.
    se : cluster-robust SE (NaN when G < 2; see ``reason``).
    se_iid : sd(x, ddof=1)/sqrt(n) (NaN when n < 2).
    design_effect : se**2 / se_iid**2 (NaN when either is NaN or se_iid = 0).
    icc : ICC(1) from a one-way ANOVA of x on cluster; may be negative, never clipped.
    n_clusters, n : G and n.
    reason : empty, or why some field is NaN.
    method : "clustered".
    """

    mean: float
    se: float
    se_iid: float
    design_effect: float
    icc: float
    n_clusters: int
    n: int
    reason: str = ""
    method: str = "clustered"

    @property
    def sqrt_design_effect(self) -> float:
        """How many times wider the clustered interval is than the iid one."""
        return math.sqrt(self.design_effect) if self.design_effect >= 0 else float("nan")

    @property
    def df(self) -> int:
        """G - 1: degrees of freedom of a clustered t interval (:func:`clustered_interval`)."""
        return self.n_clusters - 1

    @property
    def effective_n(self) -> float:
        """n / design effect: the number of independent items this sample is worth."""
        if not self.design_effect > 0:
            return float("nan")
        return self.n / self.design_effect


def _cluster_sums(x: np.ndarray, codes: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    sums = np.bincount(codes, weights=x, minlength=g)
    sizes = np.bincount(codes, minlength=g).astype(float)
    return sums, sizes


def clustered_variance_of_mean(x: np.ndarray, codes: np.ndarray, g: int) -> float:
    """SE_c^2 = G/(G-1) * (1/n^2) * sum_g (sum_{i in g} (x_i - mean))^2 (NaN when G < 2)."""
    if g < 2:
        return float("nan")
    n = x.size
    resid_sums = np.bincount(codes, weights=x - x.mean(), minlength=g)
    return float(g / (g - 1) * np.sum(resid_sums ** 2) / n ** 2)


def icc1(x: np.ndarray, codes: np.ndarray, g: int) -> tuple[float, str]:
    """ICC(1) from a one-way ANOVA with unequal cluster sizes.

    MSB = sum_g m_g (mean_g - mean)^2 / (G - 1), MSW = sum_g sum_i (x_i - mean_g)^2 / (n - G),
    n0 = (n - sum_g m_g^2 / n) / (G - 1), ICC(1) = (MSB - MSW) / (MSB + (n0 - 1) MSW).
    Reference: Shrout & Fleiss (1979); n0 for unequal sizes: Snedecor & Cochran, one-way
    random-effects ANOVA. Returns (NaN, reason) when G < 2, n = G (no within-cluster
    replication) or the denominator is 0 (constant scores).
    """
    n = x.size
    if g < 2:
        return float("nan"), "fewer than 2 clusters"
    if n <= g:
        return float("nan"), "every cluster has one item: no within-cluster variance, ICC undefined"
    sums, sizes = _cluster_sums(x, codes, g)
    means = sums / sizes
    grand = x.mean()
    msb = float(np.sum(sizes * (means - grand) ** 2) / (g - 1))
    msw = float(np.sum((x - means[codes]) ** 2) / (n - g))
    n0 = (n - float(np.sum(sizes ** 2)) / n) / (g - 1)
    denom = msb + (n0 - 1.0) * msw
    if denom == 0.0:
        return float("nan"), "constant scores: ICC undefined"
    return (msb - msw) / denom, ""


def clustered_se(scores: Any, clusters: Any) -> ClusteredSE:
    """Cluster-robust standard error of the mean of ``scores`` with clusters ``clusters``.

    Formula (Miller 2024, eq. 4; the CR1-style sandwich of an intercept-only regression)::

        SE_c^2 = G/(G-1) * (1/n^2) * sum_g ( sum_{i in g} (x_i - p) )^2

    design effect = SE_c^2 / SE_iid^2 with SE_iid = sd(x, ddof=1)/sqrt(n); ICC(1) from a one-way
    ANOVA of x on cluster (see :func:`icc1`), reported even when negative.

    Relation to statsmodels: ``OLS(x, ones).fit(cov_type="cluster", cov_kwds={"groups": c})``
    multiplies the sandwich by G/(G-1) * (n-1)/(n-k) with k = 1 parameter, i.e. by G/(G-1):
    its SE equals this one exactly; with ``use_correction=False`` it is this one times
    sqrt((G-1)/G).

    Parameters
    ----------
    scores : per-item scores (0/1 or real), no NaN.
    clusters : one label per item (any hashable values).

    Edge cases
    ----------
    G < 2: ``se``, ``design_effect`` and ``icc`` are NaN and ``reason`` says why (a clustered
    SE needs at least two clusters; it is not silently replaced by the iid SE).
    n = 1: ``se_iid`` is NaN. Constant scores: se = se_iid = 0, design effect and ICC NaN.
    Raises StatsInputError for empty/NaN scores or a label count that differs from n.
    """
    x = as_scores(scores)
    codes, g = as_clusters(clusters, x.size)
    n = x.size
    se_iid = float(np.std(x, ddof=1) / math.sqrt(n)) if n >= 2 else float("nan")
    reasons = []
    if g < 2:
        reasons.append("fewer than 2 clusters: a clustered SE needs G >= 2")
        se = float("nan")
    else:
        se = math.sqrt(clustered_variance_of_mean(x, codes, g))
    icc, icc_reason = icc1(x, codes, g)
    if icc_reason and g >= 2:
        reasons.append(icc_reason)
    if math.isnan(se) or math.isnan(se_iid) or se_iid == 0.0:
        deff = float("nan")
        if se_iid == 0.0:
            reasons.append("constant scores: design effect undefined")
    else:
        deff = se ** 2 / se_iid ** 2
    return ClusteredSE(mean=float(x.mean()), se=se, se_iid=se_iid, design_effect=deff, icc=icc,
                       n_clusters=g, n=n, reason="; ".join(reasons))


# Below this many clusters the cluster-robust SE is itself noisy and biased down (Cameron &
# Miller 2015, sec. VI): the headline interval is then never narrower than the iid one.
FEW_CLUSTERS = 30
# Below this many clusters, with a score within RARE_SCORE of 0 or 1, every clustered interval
# the Method check simulates undercovers for strongly clustered items: said in the detail.
RARE_FEW_CLUSTERS = 15
RARE_SCORE = 0.1


def cluster_t_value(confidence: float, n_clusters: int) -> float:
    """t_{G-1, 1-alpha/2}: the quantile for a cluster-robust interval with G clusters (G >= 2)."""
    conf = check_confidence(confidence)
    g = check_count(n_clusters, "n_clusters")
    if g < 2:
        raise StatsInputError(f"a cluster-robust interval needs at least 2 clusters, got {g}")
    return t_ppf(0.5 + conf / 2.0, g - 1)   # scipy's t.ppf, bit for bit


@dataclass(frozen=True)
class ClusteredInterval:
    """The headline interval of an estimate that has a cluster-robust and an iid SE.

    Attributes
    ----------
    estimate, low, high : the estimate and its headline interval.
    se : the SE behind the headline (``se_clustered``, or the iid SE when the floor applied).
    se_iid, se_clustered : both SEs, always reported side by side.
    n_clusters : G. df : G - 1 (degrees of freedom of the clustered t interval).
    clustered_low, clustered_high : estimate -+ t_{G-1} * se_clustered.
    floored : True when G < FEW_CLUSTERS and the iid interval was wider on some side, so the
        headline took the iid bound there.
    confidence. detail : the rule that was applied, in words.
    """

    estimate: float
    low: float
    high: float
    se: float
    se_iid: float
    se_clustered: float
    n_clusters: int
    df: int
    clustered_low: float
    clustered_high: float
    floored: bool
    confidence: float
    detail: str = ""


def clustered_interval(estimate: float, se_clustered: float, n_clusters: int,
                       confidence: float = 0.95, *, se_iid: float,
                       iid_low: float | None = None,
                       iid_high: float | None = None) -> ClusteredInterval:
    """Cluster-robust interval with t quantiles, never narrower than iid when G < 30.

    clustered: estimate -+ t_{G-1, 1-alpha/2} * SE_c, SE_c the CR1 cluster-robust SE (with
    its G/(G-1) factor, :func:`clustered_se`); the t reference with G - 1 degrees of freedom
    is Cameron & Miller (2015), "A Practitioner's Guide to Cluster-Robust Inference",
    J. Human Resources 50:317, sec. VI.C (Stata's and statsmodels' default for few clusters).

    With G < FEW_CLUSTERS (30) SE_c is noisy and biased down, so the headline interval is
    the union of the clustered interval and the iid one: low = min(clustered low, iid low),
    high = max(clustered high, iid high); ``se`` = max(SE_c, SE_iid). The iid interval is
    (iid_low, iid_high) when given (a score interval for 0/1 scores), else
    estimate -+ z * se_iid. ``se_clustered`` always keeps the clustered SE, so a narrower
    clustered SE is shown beside the headline, labelled, never instead of it.

    Edge cases: G < 2 raises StatsInputError; a NaN SE gives NaN bounds and says so.
    """
    conf = check_confidence(confidence)
    g = check_count(n_clusters, "n_clusters")
    q = cluster_t_value(conf, g)
    est, sec, sei = float(estimate), float(se_clustered), float(se_iid)
    c_low, c_high = est - q * sec, est + q * sec
    if iid_low is None or iid_high is None:
        z = z_value(conf)
        i_low, i_high = est - z * sei, est + z * sei
    else:
        i_low, i_high = float(iid_low), float(iid_high)
    base = (f"cluster-robust SE (CR1) over {g} clusters, t quantile with {g - 1} df")
    if math.isnan(sec):
        return ClusteredInterval(est, float("nan"), float("nan"), sec, sei, sec, g, g - 1,
                                 c_low, c_high, False, conf,
                                 base + "; the clustered SE is undefined")
    if g >= FEW_CLUSTERS or math.isnan(i_low) or math.isnan(i_high):
        return ClusteredInterval(est, c_low, c_high, sec, sei, sec, g, g - 1, c_low, c_high,
                                 False, conf, base)
    low, high = min(c_low, i_low), max(c_high, i_high)
    floored = (low, high) != (c_low, c_high)
    if floored:
        detail = (f"{base}; with fewer than {FEW_CLUSTERS} clusters the clustered SE is noisy "
                  f"and biased down, so the interval is not allowed to be narrower than the "
                  f"iid one (the clustered SE is shown beside it)")
    else:
        detail = base + f" (fewer than {FEW_CLUSTERS} clusters: wider than the iid interval)"
    se = max(sec, sei) if not math.isnan(sei) else sec
    return ClusteredInterval(est, low, high, se, sei, sec, g, g - 1, c_low, c_high, floored,
                             conf, detail)


def korn_graubard_interval(estimate: float, n: int, se_clustered: float, n_clusters: int,
                           confidence: float = 0.95, *, se_iid: float) -> ClusteredInterval:
    """Korn-Graubard interval for a proportion estimated from clustered items.

    n_eff = p (1 - p) / SE_c^2 (the effective sample size: n / design effect),
    n_df = n_eff * (t_{n-1, 1-alpha/2} / t_{G-1, 1-alpha/2})^2 (degrees-of-freedom adjustment),
    x = p * n_df;  low = Beta_{alpha/2}(x, n_df - x + 1),  high = Beta_{1-alpha/2}(x + 1, n_df - x),
    i.e. Clopper-Pearson with x successes of n_df, non-integer. SE_c is the CR1 cluster-robust SE.

    Reference: Korn & Graubard (1998), "Confidence intervals for proportions with small expected
    number of positive counts estimated from survey data", Survey Methodology 24:193.

    Which rule for the effective n: implementations differ on whether n_eff may exceed n (a
    design effect below 1, i.e. clusters that vary less than independent items would).

    - R survey's ``svyciprop(method = "beta")`` never caps it: n.eff = p (1 - p) / vcov,
      times (qt(alpha/2, n - 1) / qt(alpha/2, degf))^2, straight into ``qbeta``.
    - The NCHS data presentation standard for proportions (Parker et al. 2017, Vital Health
      Stat 2(175)) always caps it: a design effect below 1 is set to 1, so n_eff <= n.
    - evalbars caps it below ``FEW_CLUSTERS`` (30) clusters only, where a design effect below
      1 is mostly the noise of a CR1 variance estimated from few clusters; from 30 clusters on
      it computes what R survey computes. So the interval equals R survey's whenever G >= 30
      or n_eff <= n, and NCHS's whenever G < 30 or n_eff >= n.

    Why the product uses it: in the Method check (beta-binomial clusters; coverage averaged over
    p in [0.04, 0.06], the lowest of 10 slices of that range in brackets) it covers 92.3-94.5%
    (88.2-93.0%) where the t-Wald interval covers 83.7-88.3% (78.6-86.8%) (p = 0.05,
    ICC = 0.2, G = 15 to 30), and 87.0% (83.9%) against 77.7% (74.1%) in the hardest cell
    evalbars simulates (p = 0.05, ICC = 0.2, G = 8): no interval reaches 95% there, and the
    page says so. It is conservative (about 99%) when the items are in fact independent and G
    is 8.

    Edge cases: p = 0 or 1, or SE_c = 0: n_eff = n (the design effect cannot be estimated, so the
    nominal n is used; ``detail`` says so). G < 30: n_eff is capped at n, so the interval is never
    narrower than the iid one of the same kind (``floored`` says when the cap applied). G < 2
    raises StatsInputError.
    """
    conf = check_confidence(confidence)
    g = check_count(n_clusters, "n_clusters")
    m = check_count(n, "n")
    q = cluster_t_value(conf, g)
    p, sec, sei = float(estimate), float(se_clustered), float(se_iid)
    if not 0.0 <= p <= 1.0:
        raise StatsInputError(f"a Korn-Graubard interval needs a proportion in [0, 1], got {p}")
    base = (f"Korn-Graubard: Clopper-Pearson on the effective n (cluster-robust SE over {g} "
            f"clusters, t with {g - 1} df)")
    notes = []
    if 0.0 < p < 1.0 and sec > 0 and not math.isnan(sec):
        n_eff = p * (1 - p) / (sec * sec)
    else:
        n_eff = float(m)
        notes.append("no spread to estimate the design effect from: the nominal n is used")
    floored = False
    if g < FEW_CLUSTERS and n_eff > m:
        n_eff, floored = float(m), True
        notes.append(f"with fewer than {FEW_CLUSTERS} clusters the effective n is not allowed to "
                     f"exceed n (the interval is never narrower than the iid one)")
    ratio = float(t_dist.ppf(0.5 + conf / 2.0, m - 1) / t_dist.ppf(0.5 + conf / 2.0, g - 1)) \
        if m > 1 else 1.0
    n_df = n_eff * ratio * ratio
    x = p * n_df
    alpha = 1.0 - conf
    low = float(beta_dist.ppf(alpha / 2, x, n_df - x + 1)) if x > 0 else 0.0
    high = float(beta_dist.ppf(1 - alpha / 2, x + 1, n_df - x)) if x < n_df else 1.0
    if g < RARE_FEW_CLUSTERS and min(p, 1 - p) < RARE_SCORE:
        notes.append(f"with fewer than {RARE_FEW_CLUSTERS} clusters and a score this close to "
                     f"0 or 1 no interval evalbars offers reliably reaches {conf:.0%} when "
                     f"clusters differ strongly (about 87% on average over p in [0.04, 0.06], "
                     f"84% at the lowest, at ICC = 0.2 and 8 clusters in the Method check)")
    detail = base + f"; effective n {n_eff:,.1f} of {m:,}" + "".join(f"; {s}" for s in notes)
    se = sec if not math.isnan(sec) else sei
    return ClusteredInterval(p, low, high, se, sei, sec, g, g - 1, p - q * sec, p + q * sec,
                             floored, conf, detail)
@dataclass(frozen=True)
class GroupedClusteredIntervals:
    """Cluster-robust intervals of several means at once (arrays, one entry per group, in
    group order 0..R-1). Each entry equals ``score_interval(x_r, "clustered", clusters=c_r)``
    for that group's scores x_r and cluster labels c_r: ``estimate``, ``low``, ``high``,
    ``se`` (the clustered SE), ``se_iid``, ``n``, ``n_clusters``; ``confidence``."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    se_iid: np.ndarray
    n: np.ndarray
    n_clusters: np.ndarray
    confidence: float


def grouped_clustered_intervals(scores: Any, codes: Any, groups: Any,
                                confidence: float = 0.95) -> GroupedClusteredIntervals:
    """Clustered intervals of the mean of each group (e.g. each run of a task) in one pass.

    ``scores`` are per-item values, ``codes`` integer cluster codes (>= 0; equal codes in one
    group are one cluster; codes may be shared by several groups, e.g. the same passage in
    every run), ``groups`` integer group numbers 0..R-1. Per group, with the formulas of
    :func:`clustered_se` and :func:`clustered_interval`:
    SE_c^2 = G/(G-1) * (1/n^2) * sum_g (sum_{i in g} (x_i - mean))^2 over the G clusters the
    group has; SE_iid = sd(ddof=1)/sqrt(n). A group of 0/1 scores gets the Korn-Graubard
    interval (:func:`korn_graubard_interval`: Clopper-Pearson on the effective n, capped at n
    when G < FEW_CLUSTERS); other groups mean -+ t_{G-1} * SE_c, and with G < FEW_CLUSTERS the
    union with the iid interval mean -+ q * SE_iid (q = z for n >= 30, else t_{n-1}); clipped to
    [0, 1] when every score of the group lies in [0, 1] (``score_interval``'s rules).
    Sums are bincounts over (group, cluster) pairs, so there is no loop over groups or
    string labels (Miller 2024, arXiv:2411.00640, eq. 4; Cameron & Miller 2015, sec. VI).

    Edge cases: a group with G < 2 clusters gets NaN SE and bounds; n = 1 gives NaN se_iid.
    A group number without items gets n = 0 and NaN everywhere.
    """
    conf = check_confidence(confidence)
    x = np.asarray(scores, dtype=float).ravel()
    c = np.asarray(codes, dtype=np.int64).ravel()
    r = np.asarray(groups, dtype=np.int64).ravel()
    if not (x.size == c.size == r.size):
        raise StatsInputError("scores, codes and groups must have the same length")
    if x.size and (np.isnan(x).any() or np.isinf(x).any()):
        raise StatsInputError("scores contain NaN or infinite values")
    if x.size and (c.min() < 0 or r.min() < 0):
        raise StatsInputError("codes and groups must be non-negative integers")
    n_groups = int(r.max()) + 1 if r.size else 0
    n_codes = int(c.max()) + 1 if c.size else 0
    n = np.bincount(r, minlength=n_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(r, weights=x, minlength=n_groups) / n
        resid = x - mean[r]
        ss = np.bincount(r, weights=resid * resid, minlength=n_groups)
        pair = r * n_codes + c
        cl_sums = np.bincount(pair, weights=resid, minlength=n_groups * n_codes)
        cl_sizes = np.bincount(pair, minlength=n_groups * n_codes)
    g = (cl_sizes.reshape(n_groups, n_codes) > 0).sum(axis=1)
    sq = (cl_sums.reshape(n_groups, n_codes) ** 2).sum(axis=1)
    binary = np.bincount(r, weights=((x != 0.0) & (x != 1.0)).astype(float),
                         minlength=n_groups) == 0
    unit = np.bincount(r, weights=((x < 0.0) | (x > 1.0)).astype(float),
                       minlength=n_groups) == 0
    return _intervals_from_moments(mean, n, ss, sq, g, binary, unit, conf)


def clustered_intervals_of_matrices(blocks: list[tuple[Any, Any]], confidence: float = 0.95,
                                    *, n_codes: int | None = None
                                    ) -> GroupedClusteredIntervals:
    """Clustered intervals of the mean of every column of several items x runs matrices.

    ``blocks``: (scores, codes) pairs, ``scores`` an items x columns matrix of per-item
    values (NaN where a column lacks the item), ``codes`` the same shape of integer cluster
    codes (>= 0 where the score is present; ignored where it is NaN; a read-only view
    repeating one column, ``np.broadcast_to``, is read as that column: the same numbers
    without an items x columns copy of the codes). The groups are the
    columns, block after block (group 0 is the first block's first column). Each entry
    equals :func:`grouped_clustered_intervals` on the present entries in item-major order
    (item by item, columns within an item) with group = column number: the same formulas
    and the same floating-point sums (per group, item order; cluster sums laid out group x
    code with G_max = the largest code + 1, as there), so the same numbers bit for bit,
    without building the long rows. A column without a present entry gets n = 0 and NaN.

    ``n_codes``: G_max to lay the sums out with (default: the largest code + 1 over these
    blocks; not smaller). Blocks split over several calls with one G_max (the largest over
    all of them) give the numbers of one call.
    """
    conf = check_confidence(confidence)
    mats, n_codes = _checked_blocks(blocks, n_codes)
    with np.errstate(invalid="ignore", divide="ignore"):
        parts = [_block_moments(x, c, present, sums, one, n_codes)
                 for x, c, present, sums, one in mats]
    if not parts:
        empty = np.empty(0)
        return GroupedClusteredIntervals(empty, empty, empty, empty, empty,
                                         np.empty(0, dtype=int), np.empty(0, dtype=int), conf)
    mean, n, ss, sq, g, binary, unit = (np.concatenate([p[i] for p in parts])
                                        for i in range(7))
    return _intervals_from_moments(mean, n, ss, sq, g, binary.astype(bool), unit.astype(bool),
                                   conf)


def _checked_blocks(blocks: list[tuple[Any, Any]], wanted_width: int | None
                    ) -> tuple[list[tuple], int]:
    """Each block as (scores, codes, present mask or None, column sums or None, the one code
    column or None), checked, and G_max (``wanted_width`` when given, never smaller than the
    largest code + 1)."""
    mats = []
    n_codes = 0
    for scores, codes in blocks:
        x = np.ascontiguousarray(np.asarray(scores, dtype=float))
        c = np.asarray(codes)
        if x.ndim != 2 or c.shape != x.shape:
            raise StatsInputError(f"scores and codes must be matrices of one shape, got "
                                  f"{x.shape} and {c.shape}")
        # codes repeating one column (``np.broadcast_to``, column stride 0: every column has
        # the same clusters) are kept as that column
        one = c[:, 0].astype(np.int64) if c.shape[0] and c.shape[1] >= 2 \
            and c.strides[1] == 0 else None
        c = np.ascontiguousarray(c, dtype=np.int64) if one is None else \
            np.broadcast_to(one[:, None], c.shape)
        sums = _column_sums(x)
        # finite column sums: no NaN (every item present) and no infinity
        every = bool(np.isfinite(sums).all())
        present = None
        if not every:
            if np.isinf(x).any():
                raise StatsInputError("scores contain infinite values")
            present = ~np.isnan(x)
            sums = None
        whole = one if one is not None else c       # every entry's code, once
        if x.size and (whole.min() if every else c[present].min(initial=0)) < 0:
            raise StatsInputError("codes must be non-negative integers where a score is present")
        if x.size and (every or present.any()):
            n_codes = max(n_codes, int(whole.max() if every else c[present].max()) + 1)
        mats.append((x, c, present, sums, one))
    if wanted_width is not None:
        if int(wanted_width) < n_codes:
            raise StatsInputError(f"n_codes must be at least the largest code + 1 "
                                  f"({n_codes}), got {wanted_width}")
        n_codes = int(wanted_width)
    return mats, n_codes


def _block_moments(x: np.ndarray, c: np.ndarray, present: np.ndarray | None,
                   sums: np.ndarray | None, one: np.ndarray | None, n_codes: int) -> tuple:
    """Per column of one block: mean, n, sum of squared residuals, sum of squared cluster
    sums of residuals, G, and whether the column is 0/1 and lies in [0, 1]."""
    rows, cols = x.shape
    # axis-0 sums of a C-ordered matrix add row after row: per column the item order
    # of the rows' bincount (0.0 added where absent leaves every sum unchanged)
    if present is None:
        n = np.full(cols, float(rows))
        mean = sums / n
        resid = x - mean
        w, pair = resid, c + (np.arange(cols, dtype=np.int64) * n_codes)[None, :]
        low_x, high_x = x.min(axis=0, initial=0.0), x.max(axis=0, initial=1.0)
        if one is not None:
            # one code column, every entry present: every column has the same G
            g = np.full(cols, np.count_nonzero(np.bincount(one)), dtype=np.int64)
    else:
        n = present.sum(axis=0).astype(float)
        mean = _column_sums(np.where(present, x, 0.0)) / n
        resid = x - mean
        resid[~present] = 0.0
        pair = (c + (np.arange(cols, dtype=np.int64) * n_codes)[None, :])[present]
        w = resid[present]
        low_x = np.where(present, x, 0.0).min(axis=0, initial=0.0)
        high_x = np.where(present, x, 1.0).max(axis=0, initial=1.0)
    ss = _column_sums(resid * resid)
    cl_sums = np.bincount(pair.ravel(), weights=w.ravel(), minlength=cols * n_codes)
    if present is not None or one is None:
        cl_sizes = np.bincount(pair.ravel(), minlength=cols * n_codes)
        g = (cl_sizes.reshape(cols, n_codes) > 0).sum(axis=1)
    sq = (cl_sums.reshape(cols, n_codes) ** 2).sum(axis=1)
    # in [0, 1] by the extremes; 0/1 when also x (1 - x), >= 0 on [0, 1] and 0 only
    # at 0 and 1, adds up to 0 (absent entries are 0 there)
    unit = (low_x >= 0.0) & (high_x <= 1.0)
    spread = x * (1.0 - x)
    if present is not None:
        spread[~present] = 0.0
    binary = unit & (_column_sums(spread) == 0.0)
    return mean, n, ss, sq, g, binary, unit


def _column_sums(a: np.ndarray) -> np.ndarray:
    """Column sums of a C-ordered matrix added row after row (the order of a bincount over
    the rows). numpy reduces axis 0 of a C-ordered matrix with two or more columns that way;
    one column is contiguous, where numpy sums pairwise, so it takes a running sum."""
    if a.shape[0] == 0:
        return np.zeros(a.shape[1])
    if a.shape[1] >= 2:
        return a.sum(axis=0)
    return np.cumsum(a, axis=0)[-1]


def _t_quantiles(q: float, df: np.ndarray) -> np.ndarray:
    """``t_dist.ppf(q, df)`` elementwise, computed once per distinct ``df`` (a board's
    cells share a few item and cluster counts: 1,000 cells, one or two distinct values)."""
    distinct, at = np.unique(df, return_inverse=True)
    return t_dist.ppf(q, distinct)[at.reshape(-1)]


def _intervals_from_moments(mean: np.ndarray, n: np.ndarray, ss: np.ndarray, sq: np.ndarray,
                            g: np.ndarray, binary: np.ndarray, unit: np.ndarray,
                            conf: float) -> GroupedClusteredIntervals:
    """The intervals of :func:`grouped_clustered_intervals` from each group's moments: mean,
    n, ss = sum (x - mean)^2, sq = sum over clusters of (cluster residual sum)^2, G, whether
    every score is 0/1 (``binary``) and in [0, 1] (``unit``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se_iid = np.where(n >= 2, np.sqrt(ss / np.maximum(n - 1, 1)) / np.sqrt(n), np.nan)
        se = np.where(g >= 2, np.sqrt(g / np.maximum(g - 1, 1) * sq / n ** 2), np.nan)
    n_groups = mean.size
    z = z_value(conf)
    q_iid = np.full(n_groups, z)
    small = ~binary & (n < 30) & (n >= 2)
    if small.any():
        q_iid[small] = _t_quantiles(0.5 + conf / 2.0, n[small] - 1)
    q_cl = np.full(n_groups, np.nan)
    ok = g >= 2
    if ok.any():
        q_cl[ok] = _t_quantiles(0.5 + conf / 2.0, g[ok] - 1)
    with np.errstate(invalid="ignore"):
        c_low, c_high = mean - q_cl * se, mean + q_cl * se
        i_low, i_high = mean - q_iid * se_iid, mean + q_iid * se_iid
    union = (g < FEW_CLUSTERS) & np.isfinite(i_low) & np.isfinite(i_high)
    low = np.where(union, np.fmin(c_low, i_low), c_low)
    high = np.where(union, np.fmax(c_high, i_high), c_high)
    kg = binary & (g >= 2) & (n >= 1) & ~np.isnan(se)
    if kg.any():   # Korn-Graubard for 0/1 groups, as korn_graubard_interval computes it
        p, m, gk, sek = mean[kg], n[kg], g[kg], se[kg]
        spread = (p > 0) & (p < 1) & (sek > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            n_eff = np.where(spread, p * (1 - p) / np.where(spread, sek * sek, 1.0), m)
        n_eff = np.where(gk < FEW_CLUSTERS, np.minimum(n_eff, m), n_eff)
        qq = 0.5 + conf / 2.0
        ratio = np.ones_like(m)
        big = m > 1
        ratio[big] = _t_quantiles(qq, m[big] - 1) / _t_quantiles(qq, gk[big] - 1)
        n_df = n_eff * ratio * ratio
        xk = p * n_df
        alpha = 1.0 - conf
        with np.errstate(invalid="ignore", divide="ignore"):
            lo = np.where(xk > 0, beta_dist.ppf(alpha / 2, np.where(xk > 0, xk, 1.0),
                                                n_df - xk + 1), 0.0)
            hi = np.where(xk < n_df, beta_dist.ppf(1 - alpha / 2, xk + 1,
                                                   np.where(xk < n_df, n_df - xk, 1.0)), 1.0)
        low[kg], high[kg] = lo, hi
    low = np.where(np.isnan(se), np.nan, low)
    high = np.where(np.isnan(se), np.nan, high)
    clip = unit & np.isfinite(low)
    low = np.where(clip, np.clip(low, 0.0, 1.0), low)
    high = np.where(clip, np.clip(high, 0.0, 1.0), high)
    return GroupedClusteredIntervals(estimate=mean, low=low, high=high, se=se, se_iid=se_iid,
                                     n=n.astype(int), n_clusters=g.astype(int), confidence=conf)
