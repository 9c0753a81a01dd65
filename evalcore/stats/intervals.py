"""Confidence intervals for one score: a proportion (k of n correct) or a mean of per-item scores.

Methods (the ``method`` key travels with every result):

- ``"wilson"``: Wilson (1927) score interval with Brown, Cai & DasGupta's (2001, sec. 4.1.1)
  modification at the edges (a Poisson bound for 1 to 3 successes or failures); the default
  for 0/1 scores. ``wilson_interval(..., modified=False)`` gives the textbook interval.
- ``"clopper-pearson"``: exact interval from Beta quantiles (Clopper & Pearson 1934).
- ``"bayes"``: equal-tailed interval of the Beta(a + k, b + n - k) posterior (uniform prior by
  default).
- ``"clt"``: p +- z * SE with SE = sd(x, ddof=1)/sqrt(n) (= sqrt(p(1-p)/(n-1)) for 0/1
  scores, the lm-evaluation-harness ``*_stderr``). Offered for comparison; it is zero-width at
  p = 0 or 1 and labelled so in ``detail``.
- ``"bootstrap"``: percentile bootstrap over items (whole clusters when given).
- ``"clustered"``: for 0/1 scores the Korn-Graubard interval (Clopper-Pearson on the
  design-effect-adjusted n, :func:`evalcore.stats.korn_graubard_interval`); for other scores
  p +- t_{G-1} * cluster-robust SE. Either is never narrower than the iid interval when G < 30
  (see :func:`evalcore.stats.clustered_interval`).

Wilson, Clopper-Pearson and Bayes never leave [0, 1] and are never zero-width. CLT, bootstrap
and clustered intervals are clipped to [0, 1] whenever every score lies in [0, 1] (the mean
then lies in [0, 1] too; ``detail`` says when clipping happened); other scores are not clipped.

References: Agresti & Coull (1998), "Approximate is better than 'exact' for interval estimation
of binomial proportions", Am. Stat. 52:119; Brown, Cai & DasGupta (2001), "Interval estimation
for a binomial proportion", Stat. Sci. 16:101; Miller (2024), "Adding Error Bars to Evals",
arXiv:2411.00640.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import chi2

from evalcore.stats._checks import (StatsInputError, as_scores, check_confidence, check_count,
                                    check_successes, clip_unit, in_unit_interval, is_binary,
                                    z_value)

PROPORTION_METHODS = ("wilson", "clopper-pearson", "bayes", "clt")
SCORE_METHODS = ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered")


@dataclass(frozen=True)
class Interval:
    """A score with its interval and the method that produced it.

    Attributes
    ----------
    estimate : the score (k/n for a proportion, the mean for scores).
    low, high : interval bounds (NaN when the method cannot produce one; see ``detail``).
    method : one of SCORE_METHODS.
    n : number of items.
    confidence : e.g. 0.95.
    se : standard error where the method has one (CLT, clustered, bootstrap), else NaN.
    detail : empty, or a caveat in words (zero-width CLT, clipping, resampling settings).
    """

    estimate: float
    low: float
    high: float
    method: str
    n: int
    confidence: float
    se: float = float("nan")
    detail: str = ""

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def contains(self, value: float) -> bool:
        """True when ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)


def mean_se(scores: Any) -> float:
    """Standard error of a mean: sd(x, ddof=1) / sqrt(n).

    For 0/1 scores this equals sqrt(p(1-p)/(n-1)), the lm-evaluation-harness convention
    (``mean_stderr``: ``sample_stddev(arr) / sqrt(len(arr))``), so numbers agree with the
    harness's ``*_stderr`` to the printed digit.

    Edge cases: n = 1 returns NaN (one item has no spread); n = 0 or NaN raise StatsInputError.
    """
    x = as_scores(scores)
    if x.size < 2:
        return float("nan")
    return float(np.std(x, ddof=1) / math.sqrt(x.size))


def mean_se_from_moments(n: Any, total: Any, total_sq: Any) -> np.ndarray:
    """sd(ddof=1)/sqrt(n) from sufficient statistics, elementwise: n, sum(x) and sum(x^2).

    var = (sum x^2 - n mean^2) / (n - 1), floored at 0 (rounding can push a constant
    column's variance a hair below 0); SE = sqrt(var / n): the same number as
    :func:`mean_se` on the items (the harness convention), for callers that aggregate in SQL.
    NaN where n < 2. Returns a float array (0-d for scalar input).
    """
    nn = np.asarray(n, dtype=float)
    s = np.asarray(total, dtype=float)
    ss = np.asarray(total_sq, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / nn
        var = (ss - nn * mean * mean) / (nn - 1.0)
        se = np.sqrt(np.where(var < 0, 0.0, var) / nn)
    return np.where(nn >= 2, se, np.nan)


def wilson_modification_cut(n: int) -> int:
    """x*: how many successes (or failures) at the edge get the Poisson bound in the modified
    Wilson interval: 2 for n <= 50, 3 above (Brown, Cai & DasGupta 2001, sec. 4.1.1, give 2 for
    n <= 50 and 3 for 51 <= n <= 100; evalbars keeps 3 beyond 100, where the Poisson
    approximation to 1-3 successes is better still)."""
    return 2 if n <= 50 else 3


def poisson_lower_bound(successes: int, n: int, confidence: float = 0.95) -> float:
    """lambda_x / n with lambda_x = chi2_{2x, alpha} / 2 (alpha = 1 - confidence): the one-sided
    lower bound of a Poisson mean when x >= 1 events were seen, P(Poisson(lambda_x) >= x) = alpha.
    x = 1 gives -ln(confidence) / n (0.0513 / n at 95%)."""
    k, m = check_successes(successes, n)
    if k < 1:
        raise StatsInputError("a Poisson lower bound needs at least one success")
    return float(0.5 * chi2.ppf(1.0 - check_confidence(confidence), 2 * k) / m)


def wilson_interval(successes: int, n: int, confidence: float = 0.95, *,
                    modified: bool = True) -> Interval:
    """Wilson score interval for k successes in n trials, with Brown, Cai & DasGupta's
    modification at the edges (``modified=False``: the textbook interval).

    centre = (p + z^2/(2n)) / (1 + z^2/n),
    half-width = z * sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n),   p = k/n, z = z_{1-alpha/2}.

    Modification (Brown, Cai & DasGupta 2001, "Interval estimation for a binomial proportion",
    Stat. Sci. 16:101, sec. 4.1.1): for k = 1..x* the lower bound is the Poisson bound
    lambda_k / n (:func:`poisson_lower_bound`), and symmetrically the upper bound for
    k = n-x*..n-1 is 1 - lambda_{n-k} / n; x* = :func:`wilson_modification_cut`. As in the
    paper's text, the ranges include k = n (lower bound) and k = 0 (upper bound) when n <= x*:
    0 of 1 gives [0, 1 - lambda_1] = [0, 0.9487] (textbook Wilson: 0.7935), 0 of 2 gives
    [0, 1 - lambda_2 / 2] = [0, 0.8223] (textbook: 0.6576), with lambda_1 = 0.0513 and
    lambda_2 = 0.3554 at 95% (BCD list lambda_1 = 0.051, lambda_2 = 0.355). The bound is
    never moved inwards: the lower bound is min(Wilson, Poisson), the upper max. Why: where
    n p < 1 the textbook Wilson lower bound at k = 1 already exceeds p, so it undercovers there
    (evalbars' Method check, averaged over p in [0.008, 0.012]: 90.4% at n = 10, lowest
    pointwise 88.6%; 86.8% at n = 15, lowest pointwise 83.7%). With the modification no cell of the n in [10, 1000], p in [0.01, 0.5] grid
    undercovers; it overcovers (is conservative) only where n p is about 1 or less, where P(k = 0)
    alone exceeds 90% and no interval can sit at 95%. ``detail`` says when it applied.

    Reference: Wilson (1927), JASA 22:209; recommended by Agresti & Coull (1998) and
    Brown, Cai & DasGupta (2001). Never zero-width: 0 of 30 gives [0, 0.114]. Bounds are exactly
    0 at k = 0 and 1 at k = n, and lie in [0, 1] always.
    """
    k, m = check_successes(successes, n)
    z = z_value(confidence)
    p = k / m
    denom = 1.0 + z * z / m
    centre = (p + z * z / (2 * m)) / denom
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / denom
    low, high = clip_unit(centre - half, centre + half)
    if k == 0:
        low = 0.0
    if k == m:
        high = 1.0
    detail = ""
    if modified:
        cut = wilson_modification_cut(m)
        if 1 <= k <= cut:
            low = min(low, poisson_lower_bound(k, m, confidence))
            detail = (f"Brown-Cai-DasGupta modification: lower bound from the Poisson "
                      f"approximation ({k} success{'es' if k > 1 else ''})")
        if 1 <= m - k <= cut:
            high = max(high, 1.0 - poisson_lower_bound(m - k, m, confidence))
            detail = ((detail + "; ") if detail else "") + (
                f"Brown-Cai-DasGupta modification: upper bound from the Poisson "
                f"approximation ({m - k} failure{'s' if m - k > 1 else ''})")
    return Interval(p, low, high, "wilson", m, float(confidence), detail=detail)


def clopper_pearson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Clopper-Pearson ("exact") interval: Beta quantiles.

    low = B^-1(alpha/2; k, n-k+1) (0 when k = 0), high = B^-1(1-alpha/2; k+1, n-k) (1 when k = n).
    Reference: Clopper & Pearson (1934), Biometrika 26:404. Conservative: coverage >= nominal.
    Equals R's ``binom.test(k, n)$conf.int`` and scipy's ``binomtest(k, n).proportion_ci('exact')``.
    """
    k, m = check_successes(successes, n)
    alpha = 1.0 - check_confidence(confidence)
    low = 0.0 if k == 0 else float(beta_dist.ppf(alpha / 2, k, m - k + 1))
    high = 1.0 if k == m else float(beta_dist.ppf(1 - alpha / 2, k + 1, m - k))
    return Interval(k / m, low, high, "clopper-pearson", m, float(confidence))


def beta_interval(successes: int, n: int, confidence: float = 0.95,
                  prior: tuple[float, float] = (1.0, 1.0)) -> Interval:
    """Equal-tailed Bayesian interval of the Beta(a + k, b + n - k) posterior.

    low = B^-1(alpha/2; a + k, b + n - k), high = B^-1(1 - alpha/2; a + k, b + n - k);
    prior (a, b) = (1, 1) is uniform, (0.5, 0.5) gives the Jeffreys interval (Brown, Cai &
    DasGupta 2001, sec. 4.1.2, without their boundary modification).

    ``estimate`` is the observed k/n (the reported score), not the posterior mean. Because the
    interval is equal-tailed it excludes k/n when k = 0 or k = n (0 of 30 gives
    [0.0008, 0.112]); for 0 < k < n it contains k/n (the posterior mode under a uniform prior).
    """
    k, m = check_successes(successes, n)
    alpha = 1.0 - check_confidence(confidence)
    try:
        a0, b0 = (float(v) for v in prior)
    except (TypeError, ValueError):
        raise StatsInputError(f"prior must be a pair (a, b) of positive numbers, got {prior!r}") from None
    if not (a0 > 0 and b0 > 0) or math.isinf(a0) or math.isinf(b0):
        raise StatsInputError(f"prior parameters must be positive and finite, got {prior!r}")
    a, b = a0 + k, b0 + m - k
    low = float(beta_dist.ppf(alpha / 2, a, b))
    high = float(beta_dist.ppf(1 - alpha / 2, a, b))
    detail = "" if prior == (1.0, 1.0) else f"prior Beta({a0:g}, {b0:g})"
    return Interval(k / m, low, high, "bayes", m, float(confidence), detail=detail)


def clt_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Normal-approximation (CLT) interval for a proportion, harness convention.

    p +- z * sqrt(p(1-p)/(n-1)), clipped to [0, 1] (``detail`` says when clipping happened).
    At p = 0 or 1 the interval is zero-width, which the ``detail`` states: the normal
    approximation fails exactly there (use Wilson). n = 1: the SE is undefined, bounds are NaN.
    """
    k, m = check_successes(successes, n)
    p = k / m
    z = z_value(confidence)
    if m < 2:
        return Interval(p, float("nan"), float("nan"), "clt", m, float(confidence),
                        detail="n = 1: the CLT standard error is undefined")
    se = math.sqrt(p * (1 - p) / (m - 1))
    return _clt_from(p, se, m, z, float(confidence), bounded=True)


def _clt_from(p: float, se: float, n: int, z: float, confidence: float, *, bounded: bool,
              method: str = "clt", note: str = "") -> Interval:
    low, high = p - z * se, p + z * se
    notes = [note] if note else []
    if math.isnan(se):
        notes.append("standard error undefined (n < 2 or fewer than 2 clusters)")
    elif se == 0.0:
        notes.append("zero-width: the normal approximation gives no uncertainty at a constant "
                     "score (p = 0 or 1); use Wilson for 0/1 scores")
    if bounded and not math.isnan(se):
        clow, chigh = clip_unit(low, high)
        if (clow, chigh) != (low, high):
            notes.append("clipped to [0, 1]")
        low, high = clow, chigh
    return Interval(p, low, high, method, n, confidence, se=se, detail="; ".join(notes))


def range_text(lower: float | None, upper: float | None) -> str:
    """A score's range in words: "[0, 1]", "[1, inf)", "(-inf, 0]" (None: unbounded side)."""
    lo = "(-inf" if lower is None else f"[{lower:g}"
    hi = "inf)" if upper is None else f"{upper:g}]"
    return f"{lo}, {hi}"


def clip_to_range(low: Any, high: Any, lower: float | None,
                  upper: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval bounds clipped to a score's range [lower, upper], elementwise.

    A normal-approximation interval p +- z SE (and a harness's value +- z * stderr) knows
    nothing of the range the score lives in: 0.75 +- 1.96 * 0.25 = [0.26, 1.24] for a score
    in [0, 1]. The true value lies in the range, so the part outside it is impossible and is
    cut off; the result says which intervals were cut so the caller can say so
    ("clipped to [0, 1]", :func:`range_text`).

    ``lower`` / ``upper``: the range's bounds, None for an unbounded side. NaN bounds stay
    NaN (no interval) and are never counted as clipped. Returns (low, high, clipped) as float
    arrays and a boolean array.
    """
    lo = np.array(low, dtype=float, ndmin=1)
    hi = np.array(high, dtype=float, ndmin=1)
    clipped = np.zeros(np.broadcast(lo, hi).shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        if lower is not None:
            clipped |= (lo < lower) | (hi < lower)
            lo, hi = np.where(lo < lower, lower, lo), np.where(hi < lower, lower, hi)
        if upper is not None:
            clipped |= (lo > upper) | (hi > upper)
            lo, hi = np.where(lo > upper, upper, lo), np.where(hi > upper, upper, hi)
    return lo, hi, clipped


def proportion_interval(successes: int, n: int, method: str = "wilson",
                        confidence: float = 0.95) -> Interval:
    """Interval for k of n by name: "wilson", "clopper-pearson", "bayes" (uniform prior) or "clt".

    Dispatches to :func:`wilson_interval`, :func:`clopper_pearson_interval`,
    :func:`beta_interval` and :func:`clt_interval` (formulas and references there); the
    ``method`` field of the result is the name given. Raises StatsInputError for an unknown
    name, n = 0 or successes outside [0, n].
    """
    if method == "wilson":
        return wilson_interval(successes, n, confidence)
    if method == "clopper-pearson":
        return clopper_pearson_interval(successes, n, confidence)
    if method == "bayes":
        return beta_interval(successes, n, confidence)
    if method == "clt":
        return clt_interval(successes, n, confidence)
    raise StatsInputError(f"unknown proportion method {method!r}; choose one of {PROPORTION_METHODS}")


def score_interval(scores: Any, method: str = "wilson", confidence: float = 0.95,
                   clusters: Any = None, seed: int = 0, n_resamples: int = 2000) -> Interval:
    """Interval for the mean of per-item scores, 0/1 or continuous, by method name.

    - "wilson", "clopper-pearson", "bayes": 0/1 scores only (k = sum, n = len); a
      StatsInputError names the non-binary values otherwise.
    - "clt": mean +- q * sd(ddof=1)/sqrt(n) (:func:`mean_se`), q = z for 0/1 scores and from
      n = 30 on, t_{n-1} for other scores below n = 30 (said in ``detail``).
    - "bootstrap": percentile bootstrap of the mean over items, or over whole clusters when
      ``clusters`` is given (``n_resamples``, ``seed``; both stated in ``detail``).
    - "clustered": mean +- t_{G-1} * cluster-robust SE (needs ``clusters``; see
      :func:`evalcore.stats.clustered_se` and :func:`evalcore.stats.clustered_interval`):
      with G < 30 never narrower than the CLT interval (``se`` stays the clustered SE). With
      fewer than 2 clusters the bounds are NaN and ``detail`` says why.

    ``clusters`` is accepted only by "bootstrap" and "clustered" (a StatsInputError otherwise,
    so a clustered design is never silently analysed as iid). CLT/bootstrap/clustered intervals
    are clipped to [0, 1] when every score lies in [0, 1].
    """
    check_confidence(confidence)
    x = as_scores(scores)
    n = x.size
    if method not in SCORE_METHODS:
        raise StatsInputError(f"unknown method {method!r}; choose one of {SCORE_METHODS}")
    if clusters is not None and method not in ("bootstrap", "clustered"):
        raise StatsInputError(f"method {method!r} ignores clusters; use 'clustered' or 'bootstrap' "
                              "for clustered items")
    bounded = in_unit_interval(x)
    if method in ("wilson", "clopper-pearson", "bayes"):
        if not is_binary(x):
            bad = np.unique(x[(x != 0.0) & (x != 1.0)])[:3]
            raise StatsInputError(
                f"method {method!r} needs 0/1 scores, found {', '.join(f'{v:g}' for v in bad)}; "
                "use 'clt', 'bootstrap' or 'clustered' for continuous scores")
        return proportion_interval(int(x.sum()), n, method, confidence)
    if method == "clt":
        from evalcore.stats.paired import mean_quantile  # local: avoid an import cycle
        q, df = mean_quantile(confidence, n, is_binary(x))
        note = f"t quantile with {df} df (continuous scores, n < 30)" if df else ""
        return _clt_from(float(x.mean()), mean_se(x), n, q, float(confidence), bounded=bounded,
                         note=note)
    if method == "clustered":
        if clusters is None:
            raise StatsInputError("method 'clustered' needs a cluster label per item")
        # local imports: avoid an import cycle
        from evalcore.stats.clustered import clustered_interval, clustered_se
        from evalcore.stats.paired import mean_quantile
        cs = clustered_se(x, clusters)
        note = f"{cs.n_clusters} clusters" + (f"; {cs.reason}" if cs.reason else "")
        if math.isnan(cs.se):
            return Interval(cs.mean, float("nan"), float("nan"), "clustered", n, float(confidence),
                            se=cs.se, detail=note)
        if is_binary(x):
            from evalcore.stats.clustered import korn_graubard_interval
            ci = korn_graubard_interval(cs.mean, n, cs.se, cs.n_clusters, confidence,
                                        se_iid=cs.se_iid)
        else:
            q, _ = mean_quantile(confidence, n, False)
            ci = clustered_interval(cs.mean, cs.se, cs.n_clusters, confidence, se_iid=cs.se_iid,
                                    iid_low=cs.mean - q * cs.se_iid,
                                    iid_high=cs.mean + q * cs.se_iid)
        low, high = ci.low, ci.high
        if bounded:
            low, high = clip_unit(low, high)
        return Interval(cs.mean, low, high, "clustered", n, float(confidence), se=cs.se,
                        detail=f"{note}; {ci.detail}"
                        + ("; clipped to [0, 1]" if (low, high) != (ci.low, ci.high) else ""))
    from evalcore.stats.bootstrap import bootstrap_interval
    br = bootstrap_interval(x, np.mean, confidence=confidence, n_resamples=n_resamples, seed=seed,
                            method="percentile", clusters=clusters)
    low, high = (clip_unit(br.low, br.high) if bounded else (br.low, br.high))
    detail = br.label + (f"; {br.detail}" if br.detail else "")
    return Interval(br.estimate, low, high, "bootstrap", n, float(confidence), se=br.se,
                    detail=detail)


def chance_level(n_choices: int) -> float:
    """Chance accuracy of a multiple-choice task: 1 / n_choices (needs n_choices >= 2)."""
    k = check_count(n_choices, "n_choices")
    if k < 2:
        raise StatsInputError(f"a multiple-choice task needs at least 2 choices, got {k}")
    return 1.0 / k


def contains_chance(interval: Interval, n_choices: int | None = None, *,
                    chance: float | None = None) -> bool:
    """True when the interval contains the chance level (1/n_choices, or ``chance`` directly).

    A score whose interval contains chance cannot rank anything: it is not distinguishable
    from guessing. NaN bounds give False (no interval, no claim).
    """
    if (n_choices is None) == (chance is None):
        raise StatsInputError("give exactly one of n_choices or chance")
    level = chance_level(n_choices) if n_choices is not None else float(chance)  # type: ignore[arg-type]
    return interval.contains(level)


def _check_p(p: float) -> float:
    pf = float(p)
    if not (0.0 <= pf <= 1.0):
        raise StatsInputError(f"p must lie in [0, 1], got {p!r}")
    return pf


def half_width(n: int, p: float, method: str = "wilson", confidence: float = 0.95) -> float:
    """Expected CI half-width for one score with n items and true proportion p.

    - "wilson": z * sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n) (the Wilson half-width at p-hat = p);
    - "clt": z * sqrt(p(1-p)/n), the textbook planning formula with the true variance of p-hat
      (the reported CLT interval uses n - 1, the harness convention; the two differ by the
      factor sqrt(n/(n-1))).
    Miller (2024) sec. 2: n = 100, p = 0.6 gives about +-9.6 points with "clt".
    """
    m = check_count(n, "n")
    if m < 1:
        raise StatsInputError(f"n must be at least 1, got {m}")
    pf = _check_p(p)
    z = z_value(confidence)
    if method == "clt":
        return z * math.sqrt(pf * (1 - pf) / m)
    if method == "wilson":
        return z * math.sqrt(pf * (1 - pf) / m + z * z / (4.0 * m * m)) / (1.0 + z * z / m)
    raise StatsInputError(f"half_width supports 'wilson' and 'clt', got {method!r}")


def required_n_for_half_width(target: float, p: float, method: str = "wilson",
                              confidence: float = 0.95) -> int:
    """Smallest n whose expected half-width (see :func:`half_width`) is <= ``target``.

    "clt": n = ceil(z^2 p(1-p) / h^2); "wilson": the smallest integer n found by bisection
    (the Wilson half-width decreases in n). p = 0 or 1 with "clt" gives n = 1 (zero variance;
    another reason not to plan with the CLT at the edges).
    """
    h = float(target)
    if not (0.0 < h < 1.0):
        raise StatsInputError(f"target half-width must lie in (0, 1), got {target!r}")
    pf = _check_p(p)
    z = z_value(confidence)
    if method == "clt":
        return max(1, math.ceil(z * z * pf * (1 - pf) / (h * h) - 1e-9))
    if method != "wilson":
        raise StatsInputError(f"required_n_for_half_width supports 'wilson' and 'clt', got {method!r}")
    lo, hi = 1, 1
    while half_width(hi, pf, "wilson", confidence) > h:
        lo, hi = hi, hi * 2
    if half_width(lo, pf, "wilson", confidence) <= h:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if half_width(mid, pf, "wilson", confidence) <= h:
            hi = mid
        else:
            lo = mid
    return hi
