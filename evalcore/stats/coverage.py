"""Method check: the actual coverage and width of every interval method evalbars offers, for the
user's own design.

A 95% interval should contain the true value in 95% of repeated experiments. Whether it does
depends on n, on the score and on the method: the CLT interval of a proportion covers 64.7%
at n = 10 on average over p in [0.08, 0.12] (56.5% at the lowest point of that range);
Wilson's coverage oscillates around 95%; Clopper-Pearson covers more than 95%
by construction and is wider for it. Users should not have to take the method choice on trust,
so this module computes, for the user's inputs, how often each method covers and how wide it
is. Four settings:

- :func:`proportion_coverage`: one 0/1 score, n items, true accuracy p. Computed EXACTLY by
  summing binomial probabilities over k = 0..n (no simulation error). Methods: wilson
  (default: with Brown, Cai & DasGupta's Poisson bounds for 1-3 successes or failures),
  wilson-textbook (unmodified), clopper-pearson, bayes (uniform prior, equal-tailed), clt (sd ddof=1, the harness
  stderr), bootstrap (percentile, infinite-resample limit).
- :func:`mean_coverage`: one score of continuous per-item values in [0, 1] (partial credit),
  simulated from a Beta distribution with the given mean and sd. Methods: clt (z) and t
  (t_{n-1}); the percentile bootstrap is not simulated here (a bootstrap inside each of
  thousands of simulated samples exceeds the one-second budget).
- :func:`paired_coverage`: the difference between two 0/1 runs on the same items, with true
  discordance rate rho (share of items the runs disagree on), true difference Delta and run
  A's accuracy. Simulated 2x2 tables (seeded). Methods: newcombe, tango, bonett-price, wald,
  and "default": the method the product routes each table to (``choose_paired_binary_method``).
- :func:`clustered_coverage`: one 0/1 score on n items in G clusters with intra-cluster
  correlation ICC (beta-binomial: a cluster's accuracy ~ Beta with mean p and ICC = 1/(a+b+1),
  items Bernoulli given it). Simulated cluster sums (seeded). Methods: iid (CLT ignoring
  clusters), wilson (ignoring clusters), clustered-z (CR1 SE, normal quantile), cr1-t (CR1 SE,
  t_{G-1}), cr1-t-floor (cr1-t, never narrower than iid below 30 clusters: the rule for means
  and paired differences) and "default" (the product's headline for a 0/1 score: Korn-Graubard).

Criterion: average coverage over a neighbourhood
-----------------------------------------------
The coverage of any interval for a discrete count oscillates as the true p moves: it jumps
each time p crosses one of the n + 1 possible interval endpoints (Brown, Cai & DasGupta 2001,
"Interval estimation for a binomial proportion", Stat. Sci. 16:101, sec. 2 and Fig. 1-5).
Wilson's pointwise coverage at n = 10 swings between 84% and 98% within p in [0.016, 0.024].
A user does not know p to that precision, so a pointwise minimum rewards only conservative
methods and a single point is luck. Following BCD's and Agresti & Coull's (1998) use of
average coverage, ``coverage`` here is the coverage AVERAGED over the parameter's
neighbourhood: p (or rho) uniform on [x - h, x + h] with h = 0.2 * min(x, 1 - x) (x +- 20%
on the near side of 0 or 1), 41 evenly spaced points for the exact computation, a uniform draw
per simulated sample otherwise. Every coverage figure says so in words (``criterion``), and
``min_coverage`` shows the lowest coverage over the same neighbourhood beside it
(``min_criterion`` says how it was found): for exact computations the pointwise minimum over
the 41-point grid; for simulations the lowest of ``SLICES`` (10) equal slices of the
neighbourhood, each from the samples whose drawn parameter fell in it, with its Monte Carlo
SE (``min_coverage_se``; the lowest of 10 noisy slices also reads low by chance, by about
1.5 of those SEs). ``neighbourhood=0`` gives pointwise coverage at x itself (then
``min_coverage`` = ``coverage``).

Verdict: within ``TOLERANCE`` (1.5 points) of nominal, "undercovers" below, "overcovers
(conservative)" above: a conservative interval is honest but wider than it needs to be.

Simulations are seeded (``seed``) and vectorised; every call for realistic inputs takes well
under a second. The interval formulas are the product's, on arrays
(:mod:`evalcore.stats._interval_arrays`, pinned to the product's functions by the tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binom

from evalcore.stats import _interval_arrays as ia
from evalcore.stats._checks import StatsInputError, check_confidence, check_count, z_value
from evalcore.stats.clustered import FEW_CLUSTERS
from evalcore.stats.paired import mcnemar_exact_p, mean_quantile
from evalcore.stats.paired_binary import choose_paired_binary_method
from evalcore.stats.paired_tests import widen_to_zero

TOLERANCE = 0.015
NEIGHBOURHOOD = 0.2
NEIGHBOURHOOD_POINTS = 41
SLICES = 10
REPLICATES = 20_000
MAX_N = 100_000
MAX_N_MEAN = 1_000
_DRAW_BUDGET = 1_000_000      # simulated values per call (keeps a call under a second)
_MIN_REPLICATES = 2_000

LABELS = {
    "wilson": "Wilson score (edge-modified: Brown, Cai & DasGupta)",
    "clopper-pearson": "Clopper-Pearson (exact)",
    "wilson-textbook": "Wilson score, textbook (no edge modification)",
    "bayes": "Bayes, uniform prior (equal-tailed)",
    "clt": "CLT (normal, sd ddof=1)",
    "bootstrap": "Percentile bootstrap (limit of many resamples)",
    "t": "t, n - 1 degrees of freedom",
    "newcombe": "Newcombe hybrid score",
    "tango": "Tango score",
    "bonett-price": "Bonett-Price adjusted Wald",
    "wald": "Wald (paired CLT; Tango where its SE is 0)",
    "iid": "iid CLT (ignores clusters)",
    "wilson-iid": "Wilson (ignores clusters)",
    "clustered-z": "Clustered CR1, normal quantile",
    "cr1-t": "Clustered CR1, t with G - 1 df",
    "cr1-t-floor": "Clustered CR1, t with G - 1 df, never narrower than iid below 30 clusters",
    "default": "Product default",
}


@dataclass(frozen=True)
class MethodCoverage:
    """Coverage and width of one interval method in one design.

    Attributes
    ----------
    method, label : method key and its name in words.
    is_default : True for the method the product uses by default in this setting.
    nominal : the confidence level asked for (0.95).
    coverage : share of samples whose interval contains the true value, averaged over the
        parameter's neighbourhood (module docstring); a proportion, not percent.
    coverage_se : Monte Carlo standard error of ``coverage`` (0.0 when computed exactly).
    min_coverage : the lowest coverage over the neighbourhood: pointwise minimum on the grid
        (exact), or the lowest of ``SLICES`` equal slices of it (simulated); the report's
        ``min_criterion`` says which.
    mean_width : expected interval width (high - low), in the score's units.
    n : items. setting : "proportion", "mean", "paired" or "clustered".
    parameters : the design, as (name, value) pairs (``params`` gives a dict).
    exact : True when computed by enumeration rather than simulation.
    replicates : simulated samples (0 when exact).
    """

    method: str
    label: str
    is_default: bool
    nominal: float
    coverage: float
    coverage_se: float
    min_coverage: float
    mean_width: float
    n: int
    setting: str
    parameters: tuple[tuple[str, float], ...]
    exact: bool
    replicates: int
    tolerance: float = TOLERANCE
    min_coverage_se: float = 0.0

    @property
    def params(self) -> dict[str, float]:
        return dict(self.parameters)

    @property
    def gap(self) -> float:
        """coverage - nominal (negative: undercoverage)."""
        return self.coverage - self.nominal

    @property
    def verdict(self) -> str:
        """'within 1.5 points of nominal', 'undercovers' or 'overcovers (conservative)'."""
        if self.gap < -self.tolerance:
            return "undercovers"
        if self.gap > self.tolerance:
            return "overcovers (conservative)"
        return f"within {100 * self.tolerance:g} points of nominal"

    @property
    def undercovers(self) -> bool:
        return self.gap < -self.tolerance


@dataclass(frozen=True)
class CoverageReport:
    """Coverage of every method offered for one design (see the module docstring).

    ``methods`` is ordered as the product offers them, the default first; ``notes`` says what
    was simulated and what was left out, in words. ``criterion`` and ``min_criterion`` say
    what ``coverage`` and ``min_coverage`` are; ``window`` = (parameter, low, high) of the
    neighbourhood averaged over (None: pointwise at the parameter itself).
    """

    setting: str
    n: int
    nominal: float
    parameters: tuple[tuple[str, float], ...]
    methods: tuple[MethodCoverage, ...]
    exact: bool
    replicates: int
    seed: int | None
    criterion: str
    notes: tuple[str, ...] = field(default=())
    min_criterion: str = ""
    window: tuple[str, float, float] | None = None

    @property
    def params(self) -> dict[str, float]:
        return dict(self.parameters)

    def method(self, name: str) -> MethodCoverage:
        for m in self.methods:
            if m.method == name:
                return m
        raise KeyError(f"no method {name!r} in this report; have {[m.method for m in self.methods]}")

    @property
    def default(self) -> MethodCoverage:
        return next(m for m in self.methods if m.is_default)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-able after NaN -> None) with each method's verdict included."""
        out = asdict(self)
        out["parameters"] = self.params
        out["methods"] = [dict(asdict(m), parameters=m.params, verdict=m.verdict)
                          for m in self.methods]
        return out


# ---- shared pieces ---------------------------------------------------------------------

def _check_rate(x: float, name: str, *, low_open: bool = True) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise StatsInputError(f"{name} must be a number in (0, 1), got {x!r}") from None
    if not (0.0 < v < 1.0) if low_open else not (0.0 <= v < 1.0):
        interval = "(0, 1)" if low_open else "[0, 1)"
        raise StatsInputError(f"{name} must lie in {interval}, got {x!r}")
    return v


def _check_neighbourhood(neighbourhood: float) -> float:
    v = float(neighbourhood)
    if not (0.0 <= v < 1.0):
        raise StatsInputError(f"neighbourhood must lie in [0, 1), got {neighbourhood!r}")
    return v


def _half_range(x: float, neighbourhood: float) -> float:
    return neighbourhood * min(x, 1.0 - x)


def neighbourhood_window(x: float, neighbourhood: float = NEIGHBOURHOOD) -> tuple[float, float]:
    """The range a coverage is averaged over: x +- neighbourhood * min(x, 1 - x)."""
    h = _half_range(float(x), float(neighbourhood))
    return float(x) - h, float(x) + h


def _criterion(name: str, x: float, neighbourhood: float, exact: bool) -> str:
    if neighbourhood == 0:
        return f"pointwise coverage at {name} = {x:g}"
    h = _half_range(x, neighbourhood)
    how = (f"{NEIGHBOURHOOD_POINTS} evenly spaced values" if exact else
           "a uniform draw per simulated sample")
    return (f"coverage averaged over {name} in [{x - h:.4g}, {x + h:.4g}] ({how}); "
            "pointwise coverage of a discrete count oscillates (Brown, Cai & DasGupta 2001)")


def _window(name: str, x: float, neighbourhood: float) -> tuple[str, float, float] | None:
    if neighbourhood == 0:
        return None
    h = _half_range(x, neighbourhood)
    return name, x - h, x + h


def _min_criterion(name: str, x: float, neighbourhood: float, exact: bool,
                   replicates: int = 0) -> str:
    """How ``min_coverage`` was found, in words (shown beside it)."""
    if neighbourhood == 0:
        return f"lowest = the coverage at {name} = {x:g} (a single point)"
    h = _half_range(x, neighbourhood)
    where = f"{name} in [{x - h:.4g}, {x + h:.4g}]"
    if exact:
        return f"lowest: pointwise minimum over the {NEIGHBOURHOOD_POINTS} values of {where}"
    return (f"lowest: the lowest of {SLICES} equal slices of {where}, about "
            f"{replicates // SLICES:,} samples each (± its Monte Carlo SE; the lowest of "
            f"{SLICES} noisy slices also reads low by chance)")


def _replicates(replicates: int, per_sample: int) -> int:
    r = check_count(replicates, "replicates")
    if r < 100:
        raise StatsInputError(f"replicates must be at least 100, got {r}")
    return max(min(r, _MIN_REPLICATES), min(r, _DRAW_BUDGET // max(per_sample, 1)))


def _mc_se(cov: float, r: int) -> float:
    """Monte Carlo SE of a coverage from r samples (floored as if coverage were 1/2 at
    r = 1/(4 SE^2): a coverage of exactly 1 or 0 still has an uncertainty)."""
    return math.sqrt(max(cov * (1 - cov), 0.25 / r) / r)


def _slices(draws: np.ndarray | None) -> np.ndarray | None:
    """Slice index 0..SLICES-1 of each sample from its U(-1, 1) draw of the parameter (None:
    the neighbourhood is a single point)."""
    if draws is None:
        return None
    return np.minimum(((np.asarray(draws) + 1.0) / 2.0 * SLICES).astype(np.int64), SLICES - 1)


def _simulated(method: str, covered: np.ndarray, width: np.ndarray, *, default: bool,
               nominal: float, n: int, setting: str, params: tuple, label: str = "",
               slices: np.ndarray | None = None) -> MethodCoverage:
    """One method's simulated coverage; ``slices`` (``_slices``): the lowest slice's coverage
    and its Monte Carlo SE become ``min_coverage`` / ``min_coverage_se``."""
    cov = float(covered.mean())
    r = covered.size
    low, low_se = cov, _mc_se(cov, r)
    if slices is not None:
        hits = np.bincount(slices, weights=covered.astype(float), minlength=SLICES)
        counts = np.bincount(slices, minlength=SLICES)
        per = hits[counts > 0] / counts[counts > 0]
        at = int(np.argmin(per))
        low, low_se = float(per[at]), _mc_se(float(per[at]), int(counts[counts > 0][at]))
    return MethodCoverage(method=method, label=label or LABELS[method], is_default=default,
                          nominal=nominal, coverage=cov, coverage_se=_mc_se(cov, r),
                          min_coverage=low, mean_width=float(np.mean(width)), n=n,
                          setting=setting, parameters=params, exact=False, replicates=r,
                          min_coverage_se=low_se)


def _covered(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return (low <= truth) & (truth <= high)


# ---- one 0/1 score: exact ---------------------------------------------------------------

PROPORTION_METHODS = ("wilson", "wilson-textbook", "clopper-pearson", "bayes", "clt", "bootstrap")
PROPORTION_DEFAULT = "wilson"


def _proportion_bounds(k: np.ndarray, n: int, confidence: float) -> dict[str, ia.Bounds]:
    """Bounds of every proportion method for the counts k (of n)."""
    k = np.asarray(k, dtype=float)
    z, alpha = z_value(confidence), 1.0 - confidence
    return {"wilson": ia.modified_wilson_bounds(k, n, z, alpha),
            "wilson-textbook": ia.wilson_bounds(k, n, z),
            "clopper-pearson": ia.clopper_pearson_bounds(k, n, alpha),
            "bayes": ia.bayes_bounds(k, n, alpha),
            "clt": ia.proportion_clt_bounds(k, n, z),
            "bootstrap": ia.bootstrap_limit_bounds(k, n, alpha)}


def _pointwise(n: int, ps: np.ndarray, confidence: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Exact coverage and expected width of each method at each p: sum_k pmf(k) 1[p in CI_k].

    k is summed over the central range holding all but 1e-14 of the binomial mass at each p
    (the omitted mass bounds the error, far below any printed digit); bounds are computed once
    for the union of those ranges.
    """
    k_lo = np.maximum(binom.ppf(1e-14, n, ps).astype(int) - 1, 0)
    k_hi = np.minimum(binom.isf(1e-14, n, ps).astype(int) + 1, n)
    first = int(k_lo.min())
    bounds = _proportion_bounds(np.arange(first, int(k_hi.max()) + 1), n, confidence)
    out = {m: (np.empty(ps.size), np.empty(ps.size)) for m in bounds}
    for i, p in enumerate(ps):
        k = np.arange(k_lo[i], k_hi[i] + 1)
        w = binom.pmf(k, n, p)
        for m, (low, high) in bounds.items():
            lo, hi = low[k - first], high[k - first]
            out[m][0][i] = float(np.sum(w * _covered(lo, hi, p)))
            out[m][1][i] = float(np.sum(w * (hi - lo)))
    return out


def _check_n(n: int, minimum: int = 2, maximum: int = MAX_N) -> int:
    m = check_count(n, "n")
    if m < minimum:
        raise StatsInputError(f"n must be at least {minimum} items, got {m}")
    if m > maximum:
        raise StatsInputError(f"n above {maximum:,} is not simulated here (got {m:,}): the "
                              "check would exceed its time budget")
    return m


def proportion_coverage(n: int, p: float, confidence: float = 0.95, *,
                        neighbourhood: float = NEIGHBOURHOOD) -> CoverageReport:
    """Exact coverage and expected width of every interval for one 0/1 score.

    coverage(p) = sum_{k=0}^{n} Binom(k; n, p) * 1[low_k <= p <= high_k], averaged over p in
    the neighbourhood (module docstring); expected width sum_k Binom(k; n, p) (high_k - low_k).
    No simulation: ``coverage_se`` is 0 and the result does not depend on a seed.

    Edge cases: n >= 2 (the CLT interval needs n - 1 > 0); 0 < p < 1 (at p = 0 or 1 there is
    nothing to cover: every sample is constant); n up to 100,000.
    """
    m = _check_n(n)
    pf = _check_rate(p, "p")
    c = check_confidence(confidence)
    nb = _check_neighbourhood(neighbourhood)
    h = _half_range(pf, nb)
    ps = np.linspace(pf - h, pf + h, NEIGHBOURHOOD_POINTS) if nb > 0 else np.array([pf])
    curves = _pointwise(m, ps, c)
    params = (("p", pf),)
    methods = tuple(
        MethodCoverage(method=meth, label=LABELS[meth], is_default=meth == PROPORTION_DEFAULT,
                       nominal=c, coverage=float(cov.mean()), coverage_se=0.0,
                       min_coverage=float(cov.min()), mean_width=float(width.mean()), n=m,
                       setting="proportion", parameters=params, exact=True, replicates=0)
        for meth, (cov, width) in curves.items())
    notes = ("exact: binomial probabilities summed over k (no simulation error)",
             ("bootstrap: percentile interval in the limit of many resamples (binomial quantiles "
             "of k/n); the product's 2,000-resample bootstrap adds its own Monte Carlo noise"))
    return CoverageReport("proportion", m, c, params, methods, True, 0, None,
                          _criterion("p", pf, nb, True), notes, _min_criterion("p", pf, nb, True),
                          _window("p", pf, nb))


@dataclass(frozen=True)
class CoverageCurve:
    """Pointwise exact coverage of each proportion method against the true p (for a chart)."""

    n: int
    nominal: float
    p: tuple[float, ...]
    coverage: tuple[tuple[str, tuple[float, ...]], ...]

    def of(self, method: str) -> tuple[float, ...]:
        return dict(self.coverage)[method]


def proportion_coverage_curve(n: int, p: float, confidence: float = 0.95,
                              points: int = 201) -> CoverageCurve:
    """Pointwise exact coverage of every proportion method against the true p (the figures of
    Brown, Cai & DasGupta 2001), at ``points`` values of [p - h, p + h] around the user's p,
    h = min(0.6 min(p, 1 - p), 6 sqrt(p (1 - p)/n)) (six standard errors, so the window holds
    the oscillations that matter at this n); for the Method check chart."""
    m = _check_n(n)
    pf = _check_rate(p, "p")
    c = check_confidence(confidence)
    k = check_count(points, "points")
    if not 3 <= k <= 2000:
        raise StatsInputError(f"points must lie in [3, 2000], got {k}")
    h = min(0.6 * min(pf, 1 - pf), 6.0 * math.sqrt(pf * (1 - pf) / m))
    ps = np.linspace(pf - h, pf + h, k)
    curves = _pointwise(m, ps, c)
    return CoverageCurve(m, c, tuple(float(x) for x in ps),
                         tuple((meth, tuple(float(v) for v in cov))
                               for meth, (cov, _w) in curves.items()))


# ---- one continuous score: simulated ----------------------------------------------------

MEAN_METHODS = ("t", "clt")


def mean_default(n: int, confidence: float = 0.95) -> str:
    """The product's interval for a mean of continuous scores (``mean_quantile``): t_{n-1}
    below 30 items, z from 30 on."""
    return "clt" if mean_quantile(confidence, n, False)[1] is None else "t"


def mean_coverage(n: int, mean: float, sd: float, confidence: float = 0.95, *, seed: int = 0,
                  replicates: int = REPLICATES,
                  neighbourhood: float = NEIGHBOURHOOD) -> CoverageReport:
    """Simulated coverage of mean +- q * sd(x, ddof=1)/sqrt(n) for continuous scores in [0, 1].

    Scores ~ Beta(mean * kappa, (1 - mean) * kappa) with kappa = mean (1 - mean)/sd^2 - 1, so
    the per-item sd is ``sd`` (partial credit between 0 and 1). q = z (clt) or t_{n-1} (t);
    both intervals are clipped to [0, 1] as the product clips them. Each simulated sample
    draws its own true mean from the neighbourhood, sd held fixed.

    Edge cases: 0 < mean < 1; 0 < sd < sqrt(mean (1 - mean)) (the sd of 0/1 scores is the
    upper limit); 2 <= n <= 1,000; replicates shrink with n to keep a call near a second,
    never below 2,000 (the Monte Carlo SE is reported).
    """
    m = _check_n(n, maximum=MAX_N_MEAN)
    mu = _check_rate(mean, "mean")
    c = check_confidence(confidence)
    nb = _check_neighbourhood(neighbourhood)
    s = float(sd)
    h = _half_range(mu, nb)
    ceiling = math.sqrt(min((mu - h) * (1 - mu + h), (mu + h) * (1 - mu - h)))
    if not (0.0 < s < ceiling):
        raise StatsInputError(f"sd must lie in (0, {ceiling:.4f}) for scores in [0, 1] with mean "
                              f"{mu:g} (0/1 scores have the largest sd), got {sd!r}")
    r = _replicates(replicates, m)
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1.0, 1.0, r)
    truth = mu + h * u
    slices = _slices(u if h > 0 else None)
    kappa = truth * (1 - truth) / (s * s) - 1.0
    x = rng.beta((truth * kappa)[:, None], ((1 - truth) * kappa)[:, None], size=(r, m))
    est = x.mean(axis=1)
    se = x.std(axis=1, ddof=1) / math.sqrt(m)
    params = (("mean", mu), ("sd", s))
    q = {"t": float(ia.t_quantile(c, m - 1)), "clt": z_value(c)}
    default = mean_default(m, c)
    methods = []
    for meth in MEAN_METHODS:
        low, high = ia.clt_bounds(est, se, q[meth])
        methods.append(_simulated(meth, _covered(low, high, truth), high - low,
                                  default=meth == default, nominal=c, n=m, setting="mean",
                                  params=params, slices=slices))
    notes = (f"simulated: {r:,} samples of {m:,} Beta-distributed scores, seed {seed}",
             ("percentile bootstrap not simulated for continuous scores (a bootstrap inside "
             "every simulated sample exceeds the time budget)"))
    return CoverageReport("mean", m, c, params, tuple(methods), False, r, seed,
                          _criterion("mean", mu, nb, False), notes,
                          _min_criterion("mean", mu, nb, False, r), _window("mean", mu, nb))


# ---- paired difference of two 0/1 runs: simulated ---------------------------------------

PAIRED_METHODS = ("newcombe", "tango", "bonett-price", "wald")


def _paired_route(n: int) -> Callable[[int], str]:
    """The product's routing of a paired 0/1 comparison: discordant count -> method."""
    return lambda discordant: choose_paired_binary_method(n, discordant)[0]


def _paired_cells(discordance: float, difference: float, accuracy_a: float) -> tuple[float, float]:
    """Validate the design; return q = P(both right | concordant) and Delta / rho."""
    rho = _check_rate(discordance, "discordance")
    delta = float(difference)
    if abs(delta) > rho:
        raise StatsInputError(f"|difference| cannot exceed the discordance rate: |{delta:g}| > "
                              f"{rho:g} (the runs differ only on discordant items)")
    pa = _check_rate(accuracy_a, "accuracy of run A", low_open=False)
    pi_c = (rho - delta) / 2
    pi_a = pa - pi_c
    if not (0.0 <= pi_a <= 1.0 - rho):
        raise StatsInputError(
            f"run A's accuracy {pa:g} is impossible with discordance {rho:g} and difference "
            f"{delta:g}: it must lie in [{pi_c:.4g}, {1 - rho + pi_c:.4g}]")
    return pi_a / (1.0 - rho), delta / rho


def paired_coverage(n: int, discordance: float, difference: float = 0.0,
                    accuracy_a: float = 0.5, confidence: float = 0.95, *, seed: int = 0,
                    replicates: int = REPLICATES,
                    neighbourhood: float = NEIGHBOURHOOD) -> CoverageReport:
    """Simulated coverage of the paired-difference intervals for two 0/1 runs on n items.

    Cells (a both right, b only B right, c only A right, d both wrong) ~ Multinomial(n; pi)
    with pi_b = (rho + Delta)/2, pi_c = (rho - Delta)/2, pi_a = q (1 - rho), pi_d = (1 - q)(1 - rho)
    and q = P(both right | the runs agree), set from run A's accuracy (pi_a + pi_c). Each
    sample draws its rho from the neighbourhood and scales Delta with it (Delta/rho and q
    fixed); its own true Delta is the target. "default" routes every sample as the product
    does (``choose_paired_binary_method(n, b + c)``) and uses that method's interval, widened
    to 0 where the exact McNemar test does not reject no difference, as a comparison row
    shows it (``stats.widen_to_zero``).

    Edge cases: 0 < rho < 1; |Delta| <= rho; run A's accuracy must be compatible; n >= 2.
    """
    m = _check_n(n)
    rho = _check_rate(discordance, "discordance")
    q, ratio = _paired_cells(discordance, difference, accuracy_a)
    c = check_confidence(confidence)
    nb = _check_neighbourhood(neighbourhood)
    h = _half_range(rho, nb)
    r = _replicates(replicates, 4)
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1.0, 1.0, r)
    rho_s = rho + h * u
    slices = _slices(u if h > 0 else None)
    delta_s = ratio * rho_s
    pvals = np.column_stack([q * (1 - rho_s), (rho_s + delta_s) / 2, (rho_s - delta_s) / 2,
                             (1 - q) * (1 - rho_s)])
    a, b, cc, d = rng.multinomial(m, pvals).T
    z = z_value(c)
    bounds = {"newcombe": ia.newcombe_bounds(a, b, cc, d, z),
              "tango": ia.tango_bounds(b, cc, m, z),
              "bonett-price": ia.bonett_price_bounds(b, cc, m, z),
              "wald": ia.paired_wald_bounds(b, cc, m, z)}
    route = _paired_route(m)
    discordant = b + cc
    chosen = {int(k): route(int(k)) for k in np.unique(discordant)}
    pick = np.array([chosen[int(k)] for k in discordant])
    low = np.full(r, np.nan)
    high = np.full(r, np.nan)
    for meth, (lo, hi) in bounds.items():
        sel = pick == meth
        low[sel], high[sel] = lo[sel], hi[sel]
    if np.isnan(low).any():
        raise StatsInputError(f"the product routed to a method this check does not simulate: "
                              f"{sorted(set(pick) - set(bounds))}")
    low, high, _ = widen_to_zero(low, high, mcnemar_exact_p(b, cc), c)
    params = (("discordance", rho), ("difference", float(difference)),
              ("accuracy_a", float(accuracy_a)))
    routed = ", ".join(f"{LABELS.get(meth, meth)} {np.mean(pick == meth):.0%}"
                       for meth in PAIRED_METHODS if np.any(pick == meth))
    methods = [_simulated("default", _covered(low, high, delta_s), high - low, default=True,
                          nominal=c, n=m, setting="paired", params=params,
                          label=f"Product default (routed: {routed}; widened to 0 where the "
                                f"exact McNemar test does not reject)", slices=slices)]
    for meth, (lo, hi) in bounds.items():
        methods.append(_simulated(meth, _covered(lo, hi, delta_s), hi - lo, default=False,
                                  nominal=c, n=m, setting="paired", params=params,
                                  slices=slices))
    notes = (f"simulated: {r:,} 2x2 tables of {m:,} items, seed {seed}",
             f"default = the product's routing by discordant count, widened to 0 where the "
             f"exact McNemar p >= {1 - c:.2g} (a comparison row's interval); samples routed: "
             f"{routed}")
    return CoverageReport("paired", m, c, params, tuple(methods), False, r, seed,
                          _criterion("discordance", rho, nb, False), notes,
                          _min_criterion("discordance", rho, nb, False, r),
                          _window("discordance", rho, nb))


# ---- one 0/1 score on clustered items: simulated ----------------------------------------

CLUSTERED_METHODS = ("default", "cr1-t", "clustered-z", "iid", "wilson-iid")


def cluster_sizes(n: int, clusters: int) -> np.ndarray:
    """n items split into G clusters as evenly as possible (sizes differ by at most one)."""
    base, extra = divmod(n, clusters)
    return np.array([base + 1] * extra + [base] * (clusters - extra), dtype=np.int64)


def clustered_coverage(n: int, clusters: int, icc: float, p: float = 0.5,
                       confidence: float = 0.95, *, seed: int = 0, replicates: int = REPLICATES,
                       neighbourhood: float = NEIGHBOURHOOD) -> CoverageReport:
    """Simulated coverage of the clustered and iid intervals for one 0/1 score.

    Design: G clusters of (near-)equal size m_g; cluster accuracy p_g ~ Beta(p (1 - ICC)/ICC,
    (1 - p)(1 - ICC)/ICC) (p_g = p when ICC = 0), cluster sum S_g ~ Binomial(m_g, p_g): a
    beta-binomial whose intra-cluster correlation is exactly ICC. From the sums alone:
    p_hat = sum S_g / n, SE_iid = sqrt(p_hat (1 - p_hat)/(n - 1)),
    SE_CR1^2 = G/(G-1) * sum_g (S_g - m_g p_hat)^2 / n^2 (METHODS: clustered SE).
    Intervals (clipped to [0, 1]): iid p_hat +- z SE_iid; wilson-iid; clustered-z
    p_hat +- z SE_CR1; cr1-t p_hat +- t_{G-1} SE_CR1; cr1-t-floor p_hat +- max(t_{G-1} SE_CR1,
    z SE_iid) below 30 clusters (the rule for clustered means and differences,
    ``clustered_interval``); default = the product's headline for a clustered 0/1 score, the
    Korn-Graubard interval (``korn_graubard_interval``).

    Edge cases: 2 <= G <= n; 0 <= ICC < 1; 0 < p < 1. Each sample draws its p from the
    neighbourhood.
    """
    m = _check_n(n)
    g = check_count(clusters, "clusters")
    if not 2 <= g <= m:
        raise StatsInputError(f"clusters must lie in [2, n = {m}] (a clustered SE needs at least "
                              f"2 clusters of at least one item), got {g}")
    rho = _check_rate(icc, "ICC", low_open=False)
    pf = _check_rate(p, "p")
    c = check_confidence(confidence)
    nb = _check_neighbourhood(neighbourhood)
    h = _half_range(pf, nb)
    sizes = cluster_sizes(m, g)
    r = _replicates(replicates, 2 * g)
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1.0, 1.0, r)
    truth = pf + h * u
    slices = _slices(u if h > 0 else None)
    if rho > 0:
        scale = (1 - rho) / rho
        pg = rng.beta((truth * scale)[:, None], ((1 - truth) * scale)[:, None], size=(r, g))
    else:
        pg = np.broadcast_to(truth[:, None], (r, g))
    sums = rng.binomial(sizes[None, :], pg)
    total = sums.sum(axis=1)
    est = total / m
    se_iid = np.sqrt(est * (1 - est) / (m - 1))
    se_cr = ia.cluster_robust_se(sums, sizes)
    z, t = z_value(c), float(ia.t_quantile(c, g - 1))
    bounds = {"default": ia.korn_graubard_bounds(est, se_cr, m, g, c, FEW_CLUSTERS),
              "cr1-t-floor": ia.clustered_headline_bounds(est, se_cr, se_iid, g, c, FEW_CLUSTERS),
              "cr1-t": ia.clt_bounds(est, se_cr, t),
              "clustered-z": ia.clt_bounds(est, se_cr, z),
              "iid": ia.clt_bounds(est, se_iid, z),
              "wilson-iid": ia.wilson_bounds(total, m, z)}
    params = (("clusters", float(g)), ("icc", rho), ("p", pf))
    head = "Korn-Graubard: Clopper-Pearson on the effective n, t_{G-1}" + (
        ", never narrower than iid (G < 30)" if g < FEW_CLUSTERS else "")
    methods = tuple(_simulated(meth, _covered(lo, hi, truth), hi - lo, default=meth == "default",
                               nominal=c, n=m, setting="clustered", params=params,
                               label=f"Product default ({head})" if meth == "default" else "",
                               slices=slices)
                    for meth, (lo, hi) in bounds.items())
    notes = ((f"simulated: {r:,} designs of {g} clusters ({sizes.min()}-{sizes.max()} items each), "
             f"beta-binomial with ICC {rho:g}, seed {seed}"),)
    return CoverageReport("clustered", m, c, params, methods, False, r, seed,
                          _criterion("p", pf, nb, False), notes,
                          _min_criterion("p", pf, nb, False, r), _window("p", pf, nb))


# ---- one entry point for the CLI and the page --------------------------------------------

SETTINGS = {"proportion": "one 0/1 score", "mean": "one score of continuous values in [0, 1]",
            "paired": "paired difference of two 0/1 runs",
            "clustered": "one 0/1 score on clustered items",
            "judge": "one human score, a biased LLM judge on every item and human labels on n"}


def method_check(n: int, *, p: float | None = None, sd: float | None = None,
                 discordance: float | None = None, difference: float = 0.0,
                 clusters: int | None = None, icc: float | None = None,
                 confidence: float = 0.95, seed: int = 0,
                 replicates: int = REPLICATES) -> CoverageReport:
    """The coverage report for a design described by which quantities are given.

    - ``discordance`` (with optional ``difference`` and ``p`` = run A's accuracy, default 0.5):
      :func:`paired_coverage`;
    - ``clusters`` and ``icc`` (optional ``p``, default 0.5): :func:`clustered_coverage`;
    - ``sd`` and ``p`` (the mean): :func:`mean_coverage`;
    - ``p`` alone: :func:`proportion_coverage` (exact).
    Mixing the quantities of two settings raises StatsInputError naming them.
    """
    paired, clustered = discordance is not None, clusters is not None or icc is not None
    given = [name for name, on in (("discordance", paired), ("clusters/ICC", clustered),
                                   ("sd", sd is not None)) if on]
    if len(given) > 1:
        raise StatsInputError(f"give the quantities of one design only, got {' and '.join(given)}")
    if paired:
        return paired_coverage(n, discordance, difference, 0.5 if p is None else p, confidence,
                               seed=seed, replicates=replicates)
    if difference:
        raise StatsInputError("difference applies to a paired comparison: give discordance too")
    if clustered:
        if clusters is None or icc is None:
            raise StatsInputError("a clustered design needs both the number of clusters and the ICC")
        return clustered_coverage(n, clusters, icc, 0.5 if p is None else p, confidence,
                                  seed=seed, replicates=replicates)
    if p is None:
        raise StatsInputError("give p (the expected score) for a one-score check")
    if sd is not None:
        return mean_coverage(n, p, sd, confidence, seed=seed, replicates=replicates)
    return proportion_coverage(n, p, confidence)


def coverage_sentence(report: CoverageReport, method: MethodCoverage | None = None) -> str:
    """One method's coverage in words, saying it is an average and giving the lowest beside
    it, e.g. "covers 95.3% on average over p in [0.08, 0.12] (lowest pointwise 91.7%)"."""
    m = report.default if method is None else method
    if report.window is None:
        return f"covers {100 * m.coverage:.1f}% ({report.criterion})"
    name, lo, hi = report.window
    kind = "lowest pointwise" if m.exact else f"lowest of {SLICES} slices"
    se = "" if m.exact else f" ± {100 * m.min_coverage_se:.1f}"
    return (f"covers {100 * m.coverage:.1f}% on average over {name} in [{lo:.4g}, {hi:.4g}] "
            f"({kind} {100 * m.min_coverage:.1f}%{se})")


# a design parameter's name in the line that describes it (the key itself when not listed)
PARAMETER_NAMES = {"accuracy_a": "accuracy of run A", "icc": "ICC", "clusters": "clusters G",
                   "sd": "sd of the item scores", "false_pass": "judge passes wrong items",
                   "false_fail": "judge fails right items", "items": "judged items"}


def describe(report: CoverageReport) -> str:
    """One line naming the design in words, e.g. "paired difference of two 0/1 runs: n = 15,
    discordance 0.467, difference 0, accuracy of run A 0.5"."""
    pars = ", ".join(f"{PARAMETER_NAMES.get(k, k)} {v:g}" for k, v in report.parameters)
    return f"{SETTINGS[report.setting]}: n = {report.n:,}, {pars}"
