"""The p-value of a paired comparison from the test its interval inverts, and the verdict's p.

A comparison row shows an interval, a p-value and a verdict. They agree only when the
p-value belongs to the test the interval inverts: Tango's score interval is the set of
differences the score test does not reject, the Wald interval the set the Wald z test does
not reject, a t interval the set its t test does not reject. This module gives each routed
interval's own test, and the rule that joins it with the exact McNemar test for two 0/1
runs (METHODS.md, "Verdicts: one procedure per row").

**Intersection-union rule for 0/1 scores.** With only a handful of discordant items the
score test and the exact conditional McNemar test can disagree: (a, b, c, d) =
(50, 4, 0, 46) gives z = 4/sqrt(4) = 2, p = 0.0455, and Tango's 95% interval excludes 0,
while the exact p = 2 * 0.5^4 = 0.125. The row's p-value is

    p = max(p_interval, p_exact)

which rejects only when both tests reject. It is a valid p-value whenever either test is
valid: P(max(p1, p2) <= alpha) <= min(P(p1 <= alpha), P(p2 <= alpha)) (Berger 1982,
"Multiparameter hypothesis testing and acceptance sampling", Technometrics 24:295, for the
intersection-union principle; Berger & Hsu 1996, Stat. Sci. 11:283). The interval shown is
the set of differences that no test of the row rejects: the routed interval, plus Delta = 0
when the exact test does not reject it (the exact test speaks only about Delta = 0). Its
convex hull is shown (:func:`widen_to_zero`): the bound nearer 0 moves to 0. So the interval
excludes 0 exactly when p < alpha, and widening can only raise coverage.

Newcombe's hybrid interval is not the inversion of any test (it squares and adds two
Wilson intervals), so :func:`paired_binary_test_p` gives it no p-value; the product never
routes a comparison to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, stdtr

from evalcore.stats._checks import StatsInputError, check_confidence
from evalcore.stats.clustered import FEW_CLUSTERS
from evalcore.stats.paired import SMALL_N, mcnemar_exact_p
from evalcore.stats.paired_binary import WALD_MIN_DISCORDANT, WALD_MIN_ITEMS

# The test each interval method inverts, in words (the ``interval_method`` names of
# ``evalcore.analysis.compare``).
TEST_NAMES = {
    "tango": "score test (McNemar's z without continuity correction)",
    "wald": "Wald z test",
    "bonett-price": "Bonett-Price adjusted Wald z test",
    "t": "paired t test",
    "normal": "paired z test",
    "bound": "test of the discordance bound",
    "clustered-t": "cluster-robust t test",
}


def _arr(x: Any) -> np.ndarray:
    return np.atleast_1d(np.asarray(x, dtype=float))


def _two_sided_normal(z: np.ndarray) -> np.ndarray:
    return 2.0 * ndtr(-np.abs(z))


def _two_sided_t(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return 2.0 * stdtr(df, -np.abs(t))


def score_test_p(b: Any, c: Any) -> np.ndarray:
    """Two-sided p of the score test of Delta = 0 for two paired 0/1 runs, elementwise.

    z = (b - c) / sqrt(b + c), p = 2 Phi(-|z|): Tango's score statistic at Delta = 0 (its
    restricted estimate of P(only A right) is (b + c)/(2n) there, so the variance term
    n (2q + Delta(1 - Delta)) is b + c), i.e. McNemar's z without continuity correction
    (the square is R's ``mcnemar.test(correct = FALSE)`` statistic). b + c = 0: p = 1.
    Tango's interval excludes 0 exactly when this p < alpha.
    """
    bb, cc = _arr(b), _arr(c)
    m = bb + cc
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (bb - cc) / np.sqrt(m)
    return np.where(m > 0, _two_sided_normal(z), 1.0).astype(float)


def _wald_se(b: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
    """sqrt((b + c - n Delta^2)/(n (n - 1))) = sd(d, ddof=1)/sqrt(n), Delta = (b - c)/n: the
    SE of the Wald interval (``paired_binary._wald_se``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = (b - c) / n
        return np.sqrt(np.maximum(b + c - n * delta * delta, 0.0) / (n * (n - 1.0)))


def wald_test_p(b: Any, c: Any, n: Any) -> np.ndarray:
    """Two-sided p of the Wald z test of Delta = 0, elementwise: z = Delta / SE with
    Delta = (b - c)/n and SE = sqrt((b + c - n Delta^2)/(n (n - 1))) = sd(d, ddof=1)/sqrt(n),
    the SE of the Wald interval. Where that SE is 0 the product answers a Wald request with
    Tango's interval (``paired_proportion_interval``), so the score test's p is returned."""
    bb, cc, nn = _arr(b), _arr(c), _arr(n)
    se = _wald_se(bb, cc, nn)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = _two_sided_normal((bb - cc) / nn / se)
    return np.where(se > 0, p, score_test_p(bb, cc)).astype(float)


def bonett_price_test_p(b: Any, c: Any, n: Any) -> np.ndarray:
    """Two-sided p of the adjusted Wald test the Bonett-Price interval inverts:
    z = (p12 - p21) / sqrt((p12 + p21 - (p12 - p21)^2)/(n + 2)), p12 = (b + 1)/(n + 2),
    p21 = (c + 1)/(n + 2) (truncation of the interval to [-1, 1] never moves it across 0)."""
    bb, cc, nn = _arr(b), _arr(c), _arr(n)
    p12, p21 = (bb + 1.0) / (nn + 2.0), (cc + 1.0) / (nn + 2.0)
    diff = p12 - p21
    se = np.sqrt(np.maximum(p12 + p21 - diff * diff, 0.0) / (nn + 2.0))
    return _two_sided_normal(diff / se).astype(float)


def paired_binary_test_p(b: Any, c: Any, n: Any, method: str) -> np.ndarray:
    """p of the test that the paired 0/1 interval ``method`` inverts (at Delta = 0).

    "tango": :func:`score_test_p`; "wald": :func:`wald_test_p`; "bonett-price":
    :func:`bonett_price_test_p`. "newcombe" raises StatsInputError: Newcombe's hybrid
    interval is not a test inversion, so no p-value agrees with it by construction.
    """
    if method == "tango":
        return score_test_p(b, c)
    if method == "wald":
        return wald_test_p(b, c, n)
    if method == "bonett-price":
        return bonett_price_test_p(b, c, n)
    if method == "newcombe":
        raise StatsInputError("Newcombe's hybrid score interval is not the inversion of a test: "
                              "it has no p-value of its own (use 'tango')")
    raise StatsInputError(f"unknown paired-proportion method {method!r}")


def bound_test_p(diff: Any, n: Any) -> np.ndarray:
    """p of the discordance-bound interval of scores in [0, 1] with no spread in d.

    That interval is diff -+ (1 + |diff|) U with U = 1 - alpha^(1/n), the exact upper bound
    of the share of items that differ when none of n does (``discordance_upper_bound``).
    It contains 0 iff U >= u0 = |diff|/(1 + |diff|), i.e. iff alpha <= (1 - u0)^n, so its
    p-value (the smallest alpha at which it excludes 0) is p = (1 + |diff|)^(-n): 1 when
    diff = 0.
    """
    d, m = _arr(diff), _arr(n)
    return np.power(1.0 + np.abs(d), -m).astype(float)


@dataclass(frozen=True)
class PairedPValues:
    """The p-values behind comparison rows (arrays, one entry per comparison).

    Attributes
    ----------
    p_interval : p of the test the headline interval inverts (``test`` names it).
    p_exact : exact two-sided McNemar p (NaN where the scores are not 0/1).
    p_value : the row's p: max(p_interval, p_exact) for 0/1 scores (intersection-union),
        else p_interval. NaN when no interval exists (no spread in d, unbounded scores).
    test : the interval method whose test gave p_interval ("tango", "wald", "t", "normal",
        "bound", "clustered-t", or "none").
    """

    p_interval: np.ndarray
    p_exact: np.ndarray
    p_value: np.ndarray
    test: np.ndarray


def _iid_p(n: np.ndarray, diff: np.ndarray, se: np.ndarray, b: np.ndarray, c: np.ndarray,
           binary: np.ndarray, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, method) of the interval that ignores clusters, routed as the product routes it."""
    k = b + c
    wald = binary & (n >= WALD_MIN_ITEMS) & (k >= WALD_MIN_DISCORDANT)
    wald = wald & (_wald_se(b, c, n) > 0)    # else the Wald request is answered by Tango
    p_bin = np.where(wald, wald_test_p(b, c, n), score_test_p(b, c))
    m_bin = np.where(wald, "wald", "tango")
    small = (n < SMALL_N) & (n >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = diff / se
    p_t = np.where(small, _two_sided_t(stat, n - 1.0), _two_sided_normal(stat))
    m_t = np.where(small, "t", "normal")
    spread = se > 0
    p_cont = np.where(spread, p_t, np.where(unit, bound_test_p(diff, n), np.nan))
    m_cont = np.where(spread, m_t, np.where(unit, "bound", "none"))
    return np.where(binary, p_bin, p_cont), np.where(binary, m_bin, m_cont)


def paired_p_values(n: Any, diff: Any, se_iid: Any, *, b: Any = None, c: Any = None,
                    unit: Any = True, se_clustered: Any = None,
                    n_clusters: Any = None) -> PairedPValues:
    """The p-value each paired comparison row shows, from the test its interval inverts.

    Elementwise over comparisons (n items, diff = mean(d), se_iid = sd(d, ddof=1)/sqrt(n)):

    - two 0/1 runs (b, c given and not NaN): the test of the interval
      ``choose_paired_binary_method`` routes to: the Wald z test (:func:`wald_test_p`) when
      n >= 200 and b + c >= 40 and its SE is positive, else Tango's score test
      (:func:`score_test_p`);
    - other scores: diff / se_iid against t with n - 1 df below n = 30, else the normal
      (``mean_quantile``'s rule for the interval); no spread (se_iid = 0): scores in [0, 1]
      (``unit``) get :func:`bound_test_p`, others no p (NaN, test "none");
    - clusters (n_clusters G >= 2 and se_clustered > 0): t with G - 1 df on
      diff / se_clustered; below 30 clusters the interval is the union of the clustered and
      the iid interval (``clustered_interval``), which excludes 0 only when both do, so
      p_interval = max(p_clustered, p_iid) there;
    - p_value = max(p_interval, exact McNemar p) for 0/1 scores, else p_interval.

    Returns :class:`PairedPValues` (1-D arrays). The arguments broadcast together.
    """
    given = [_arr(v) for v in (n, diff, se_iid, b, c, se_clustered, n_clusters)
             if v is not None] + [np.atleast_1d(np.asarray(unit, dtype=bool))]
    shape = np.broadcast_shapes(*(v.shape for v in given))

    def full(v: Any) -> np.ndarray:
        return np.full(shape, np.nan) if v is None else np.broadcast_to(_arr(v), shape)

    nn, d, se, bb, cc, sec, g = (full(v).astype(float) for v in
                                 (n, diff, se_iid, b, c, se_clustered, n_clusters))
    binary = np.isfinite(bb) & np.isfinite(cc)
    u = np.broadcast_to(np.atleast_1d(np.asarray(unit, dtype=bool)), shape)
    b0, c0 = np.where(binary, bb, 0.0), np.where(binary, cc, 0.0)
    p_iid, m_iid = _iid_p(nn, d, se, b0, c0, binary, u)
    clustered = (g >= 2) & (sec > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_cl = _two_sided_t(d / sec, g - 1.0)
    union = clustered & (g < FEW_CLUSTERS) & np.isfinite(p_iid)
    p_int = np.where(clustered, np.where(union, np.fmax(p_cl, p_iid), p_cl), p_iid)
    test = np.where(clustered, "clustered-t", m_iid)
    p_ex = np.where(binary, mcnemar_exact_p(b0, c0), np.nan)
    p_row = np.where(binary, np.fmax(p_int, p_ex), p_int)
    return PairedPValues(p_interval=p_int.astype(float), p_exact=p_ex.astype(float),
                         p_value=p_row.astype(float), test=test)


def widen_to_zero(low: Any, high: Any, p_exact: Any, confidence: float = 0.95
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval shown beside p = max(p_interval, p_exact), elementwise.

    Where the exact test does not reject Delta = 0 (p_exact >= alpha = 1 - confidence), 0
    joins the routed interval [low, high] and the convex hull [min(low, 0), max(high, 0)]
    is shown; elsewhere (and where p_exact is NaN: no exact test) [low, high] is unchanged.
    The result excludes 0 iff the routed interval does and p_exact < alpha, i.e. (when the
    routed interval inverts its test) iff max(p_interval, p_exact) < alpha. Returns
    (low, high, widened) with ``widened`` True where a bound moved.
    """
    alpha = 1.0 - check_confidence(confidence)
    lo, hi, pe = _arr(low), _arr(high), _arr(p_exact)
    lo, hi, pe = np.broadcast_arrays(lo, hi, pe)
    keep0 = pe >= alpha
    new_lo = np.where(keep0, np.fmin(lo, 0.0), lo)
    new_hi = np.where(keep0, np.fmax(hi, 0.0), hi)
    widened = keep0 & ((lo > 0) | (hi < 0))
    return new_lo.astype(float), new_hi.astype(float), widened
