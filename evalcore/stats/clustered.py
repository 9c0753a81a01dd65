"""Cluster-robust standard error of a mean, design effect and ICC(1).

Items are often not independent: five questions on one reading passage, the 57 subjects of
MMLU, the instructions inside one IFEval prompt. Items of one cluster get easier or harder
together, so the iid standard error is too small. Reference: Miller (2024), "Adding Error
Bars to Evals: A Statistical Approach to Language Model Evaluations", arXiv:2411.00640, sec. 2.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalcore.stats._checks import as_clusters, as_scores


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
