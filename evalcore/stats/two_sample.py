"""Difference of the mean scores of two disjoint item sets (two independent samples).

Used where the items on the two sides differ, e.g. one run's score on the items that overlap a
corpus against its score on the clean items. (Two runs on the *same* items are paired:
``evalcore.stats.paired``.)

- 0/1 scores: Newcombe (1998) hybrid score interval for the difference of two independent
  proportions, method 10 in Newcombe, "Interval estimation for the difference between
  independent proportions: comparison of eleven methods", Stat. Med. 17:873-890. With Wilson
  intervals (l1, u1) of p1 and (l2, u2) of p2 and delta = p1 - p2:
  L = delta - sqrt((p1 - l1)^2 + (u2 - p2)^2), U = delta + sqrt((u1 - p1)^2 + (p2 - l2)^2).
  statsmodels' ``confint_proportions_2indep(method="newcomb")`` computes the same.
- other scores: Welch's interval, delta +- t_{df} * sqrt(s1^2/n1 + s2^2/n2) with the
  Welch-Satterthwaite df (scipy's ``ttest_ind(equal_var=False)``).

Edge cases: a side with no items gives no interval (StatsInputError); Welch needs at least two
items per side, and when both sides have zero variance the interval is the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy.stats import t as t_dist

from evalcore.stats._checks import StatsInputError, as_scores, check_confidence, is_binary, z_value


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    """Textbook Wilson score bounds (Newcombe's method 10 is built on these, not on a
    modified Wilson interval)."""
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class TwoSampleDifference:
    """delta = mean(x1) - mean(x2) with its interval; method names the interval."""

    mean_1: float
    mean_2: float
    n_1: int
    n_2: int
    delta: float
    low: float
    high: float
    confidence: float
    method: str


def two_sample_difference(x1: Any, x2: Any, confidence: float = 0.95) -> TwoSampleDifference:
    """mean(x1) - mean(x2) of two independent samples (Newcombe for 0/1, else Welch)."""
    conf = check_confidence(confidence)
    a, b = as_scores(x1, "x1", min_n=0), as_scores(x2, "x2", min_n=0)
    if a.size == 0 or b.size == 0:
        raise StatsInputError("both samples need at least one item")
    m1, m2 = float(a.mean()), float(b.mean())
    delta = m1 - m2
    if is_binary(a) and is_binary(b):
        z = z_value(conf)
        l1, u1 = _wilson(int(a.sum()), int(a.size), z)
        l2, u2 = _wilson(int(b.sum()), int(b.size), z)
        low = delta - math.sqrt((m1 - l1) ** 2 + (u2 - m2) ** 2)
        high = delta + math.sqrt((u1 - m1) ** 2 + (m2 - l2) ** 2)
        return TwoSampleDifference(m1, m2, int(a.size), int(b.size), delta, max(-1.0, low),
                                   min(1.0, high), conf,
                                   "Newcombe hybrid score interval (independent proportions)")
    if a.size < 2 or b.size < 2:
        raise StatsInputError("Welch's interval needs at least two items on each side")
    v1, v2 = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    se = math.sqrt(v1 + v2)
    if se == 0.0:
        return TwoSampleDifference(m1, m2, int(a.size), int(b.size), delta, delta, delta, conf,
                                   "Welch t interval (both sides constant)")
    df = (v1 + v2) ** 2 / (v1 ** 2 / (a.size - 1) + v2 ** 2 / (b.size - 1))
    q = float(t_dist.ppf(0.5 + conf / 2.0, df))
    return TwoSampleDifference(m1, m2, int(a.size), int(b.size), delta, delta - q * se,
                               delta + q * se, conf, f"Welch t interval (df {df:.1f})")


