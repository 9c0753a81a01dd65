"""Interval for the difference of two paired proportions (two 0/1 runs on the same items).

Cells of the paired 2x2 table (run A against run B on the same n items)::

    a = both right     b = only B right     c = only A right     d = both wrong

p_B = (a + b)/n, p_A = (a + c)/n, Delta = p_B - p_A = (b - c)/n. Only the b + c discordant
items carry information about Delta; with few of them (a 15-item smoke test, or two runs that
nearly agree) the Wald interval Delta +- z * sd(d)/sqrt(n) undercovers badly and is zero-width
when b + c = 0. The score-type intervals here do not.

Methods (``method`` names):

- ``"tango"``: Tango (1998) score interval, the set of Delta whose constrained score statistic
  is at most z in absolute value (R: ``PropCIs::scoreci.mp``). The routed default.
- ``"newcombe"``: Newcombe (1998) hybrid score interval, method 10 (square-and-add of the two
  margins' Wilson intervals with a continuity-adjusted phi correlation).
- ``"bonett-price"``: Bonett & Price (2012) adjusted Wald interval (one pseudo-observation
  added to each discordant cell).
- ``"wald"``: Delta +- z * sd(d, ddof=1)/sqrt(n), the project's paired SE (Miller 2024, eq. 8).

References: Tango (1998), "Equivalence test and confidence interval for the difference in
proportions for the paired-sample design", Stat. Med. 17:891 (erratum 18:3511);
Newcombe (1998), "Improved confidence intervals for the difference between binomial
proportions based on paired data", Stat. Med. 17:2635; Bonett & Price (2012), "Adjusted Wald
confidence interval for a difference of binomial proportions based on paired data",
J. Educ. Behav. Stat. 37:479; Fagerland, Lydersen & Laake (2014), "Recommended tests and
confidence intervals for paired binomial proportions", Stat. Med. 33:2850.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.stats import beta as beta_dist

from evalcore.stats._checks import StatsInputError, check_confidence, check_count, z_value

PAIRED_BINARY_METHODS = ("tango", "newcombe", "bonett-price", "wald")

# Routing thresholds of :func:`choose_paired_binary_method` (see its docstring for the check).
WALD_MIN_ITEMS = 200
WALD_MIN_DISCORDANT = 40

_METHOD_NAMES = {"tango": "Tango score interval", "newcombe": "Newcombe hybrid score interval",
                 "bonett-price": "Bonett-Price adjusted Wald interval",
                 "wald": "Wald interval"}


@dataclass(frozen=True)
class PairedProportionInterval:
    """Delta = p_B - p_A = (b - c)/n with its interval and the method that produced it.

    Attributes
    ----------
    estimate : (b - c)/n (the observed difference; Bonett-Price centres its interval on a
        shrunken estimate but reports this one).
    low, high : bounds, inside [-1, 1]; never equal when n > 0.
    method : one of PAIRED_BINARY_METHODS (the method actually computed; see ``detail``).
    n : items. discordant : b + c. confidence : e.g. 0.95.
    detail : empty, or a note in words (e.g. why a Wald request was answered by Tango).
    """

    estimate: float
    low: float
    high: float
    method: str
    n: int
    discordant: int
    confidence: float
    detail: str = ""

    @property
    def label(self) -> str:
        """"Tango score interval: 15 items, 7 discordant"."""
        return describe_method(self.method, self.n, self.discordant)

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def describe_method(method: str, n: int, discordant: int) -> str:
    """The method in words with the counts it was chosen for."""
    name = _METHOD_NAMES.get(method, method)
    items = "item" if n == 1 else "items"
    return f"{name}: {n:,} {items}, {discordant:,} discordant"


def _cells(a: int, b: int, c: int, d: int) -> tuple[int, int, int, int, int]:
    cells = tuple(check_count(v, name) for v, name in ((a, "a"), (b, "b"), (c, "c"), (d, "d")))
    if min(cells) < 0:
        raise StatsInputError(f"cell counts must be >= 0, got (a, b, c, d) = {cells}")
    n = sum(cells)
    if n == 0:
        raise StatsInputError("the 2x2 table is empty (n = 0): no interval without items")
    return (*cells, n)  # type: ignore[return-value]


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _newcombe(a: int, b: int, c: int, d: int, n: int, z: float) -> tuple[float, float]:
    p_b, p_a = (a + b) / n, (a + c) / n
    l_b, u_b = _wilson(a + b, n, z)
    l_a, u_a = _wilson(a + c, n, z)
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    num = a * d - b * c
    if denom == 0:
        phi = 0.0
    else:
        if num > 0:
            num = max(num - n / 2.0, 0.0)
        phi = num / math.sqrt(denom)
    delta = p_b - p_a
    dl = (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2
    du = (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2
    return max(-1.0, delta - math.sqrt(max(dl, 0.0))), min(1.0, delta + math.sqrt(max(du, 0.0)))


def _tango_statistic(delta: float, b: int, c: int, n: int) -> float:
    """Tango's score statistic at Delta: (b - c - n Delta) / sqrt(n (2 q + Delta (1 - Delta)))."""
    aa = 2.0 * n
    bb = -b - c + (2.0 * n - b + c) * delta
    cc = -c * delta * (1.0 - delta)
    q = (math.sqrt(max(bb * bb - 4.0 * aa * cc, 0.0)) - bb) / (2.0 * aa)
    var = n * (2.0 * q + delta * (1.0 - delta))
    num = b - c - n * delta
    if var <= 0.0:
        return math.copysign(math.inf, num) if num != 0 else 0.0
    return num / math.sqrt(var)


def _tango(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    est = (b - c) / n
    eps = 1e-12

    def f_low(x: float) -> float:
        return _tango_statistic(x, b, c, n) - z

    def f_high(x: float) -> float:
        return _tango_statistic(x, b, c, n) + z

    lo_end, hi_end = -1.0 + eps, 1.0 - eps
    if est <= -1.0 or f_low(lo_end) <= 0.0:
        low = -1.0
    else:
        low = brentq(f_low, lo_end, min(est, hi_end), xtol=1e-13)
    if est >= 1.0 or f_high(hi_end) >= 0.0:
        high = 1.0
    else:
        high = brentq(f_high, max(est, lo_end), hi_end, xtol=1e-13)
    return float(low), float(high)


def _bonett_price(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    p12 = (b + 1.0) / (n + 2.0)
    p21 = (c + 1.0) / (n + 2.0)
    centre = p12 - p21
    se = math.sqrt((p12 + p21 - centre ** 2) / (n + 2.0))
    return max(-1.0, centre - z * se), min(1.0, centre + z * se)


def _wald_se(b: int, c: int, n: int) -> float:
    """sd(d, ddof=1)/sqrt(n) of d_i in {-1, 0, 1}: sqrt((b + c - n Delta^2) / (n (n - 1)))."""
    if n < 2:
        return float("nan")
    delta = (b - c) / n
    return math.sqrt(max(b + c - n * delta * delta, 0.0) / (n * (n - 1.0)))


def paired_proportion_interval(a: int, b: int, c: int, d: int, confidence: float = 0.95,
                               method: str = "newcombe") -> PairedProportionInterval:
    """Interval for Delta = p_B - p_A = (b - c)/n from the paired 2x2 table.

    a both right, b only B right, c only A right, d both wrong; n = a + b + c + d.

    - ``"newcombe"`` (Newcombe 1998, method 10): Wilson intervals (l_B, u_B), (l_A, u_A) of
      p_B = (a+b)/n and p_A = (a+c)/n; phi = (ad - bc)/sqrt((a+b)(c+d)(a+c)(b+d)) with
      ad - bc replaced by max(ad - bc - n/2, 0) when ad > bc, and phi = 0 when the
      denominator is 0;
      L = Delta - sqrt((p_B-l_B)^2 - 2 phi (p_B-l_B)(u_A-p_A) + (u_A-p_A)^2),
      U = Delta + sqrt((u_B-p_B)^2 - 2 phi (u_B-p_B)(p_A-l_A) + (p_A-l_A)^2).
      Newcombe's example (12, 9, 2, 21) gives [0.0112, 0.2954].
    - ``"tango"`` (Tango 1998): {Delta : |T(Delta)| <= z},
      T(Delta) = (b - c - n Delta) / sqrt(n (2 q + Delta (1 - Delta))), q the constrained
      maximum-likelihood estimate of P(only A right): q = (sqrt(B^2 - 4AC) - B)/(2A) with
      A = 2n, B = -b - c + (2n - b + c) Delta, C = -c Delta (1 - Delta). Limits by root
      finding (T decreases in Delta); L = -1 when Delta = -1, U = 1 when Delta = 1. Equals R's
      ``PropCIs::scoreci.mp(c, b, n)`` (that function's estimand is (second - first)/n).
    - ``"bonett-price"`` (Bonett & Price 2012): p~12 = (b+1)/(n+2), p~21 = (c+1)/(n+2),
      (p~12 - p~21) +- z sqrt((p~12 + p~21 - (p~12 - p~21)^2)/(n+2)), truncated to [-1, 1].
      Equals ``statpsych::ci.prop.ps`` (Bonett's own package).
    - ``"wald"``: Delta +- z * sd(d, ddof=1)/sqrt(n), d_i = x_Bi - x_Ai in {-1, 0, 1}; the
      same interval as :func:`evalcore.stats.paired_difference`. Zero-width when the SE is
      0 (b + c = 0, or every item discordant one way) and undefined at n = 1: those requests
      are answered with the Tango interval, ``method="tango"`` and a ``detail`` saying why.

    Edge cases: n = 0 or a negative cell raises StatsInputError. No result has low == high.
    Swapping A and B (b <-> c) maps [L, U] to [-U, -L] for every method.
    """
    conf = check_confidence(confidence)
    if method not in PAIRED_BINARY_METHODS:
        raise StatsInputError(f"unknown paired-proportion method {method!r}; choose one of "
                              f"{PAIRED_BINARY_METHODS}")
    a, b, c, d, n = _cells(a, b, c, d)
    z = z_value(conf)
    detail = ""
    if method == "wald":
        se = _wald_se(b, c, n)
        if not se > 0.0:
            method = "tango"
            detail = ("Wald interval requested but its SE is "
                      + ("undefined at n = 1" if n < 2 else "0 (no spread in the differences)")
                      + ": a zero-width interval is no result, Tango score interval shown")
        else:
            delta = (b - c) / n
            low, high = max(-1.0, delta - z * se), min(1.0, delta + z * se)
    if method == "newcombe":
        low, high = _newcombe(a, b, c, d, n, z)
    elif method == "tango":
        low, high = _tango(b, c, n, z)
    elif method == "bonett-price":
        low, high = _bonett_price(b, c, n, z)
    return PairedProportionInterval(estimate=(b - c) / n, low=float(low), high=float(high),
                                    method=method, n=n, discordant=b + c, confidence=conf,
                                    detail=detail)


def choose_paired_binary_method(n: int, discordant: int) -> tuple[str, str]:
    """The default interval for a paired difference of two 0/1 runs, and why, in words.

    Rule: the Wald interval only when n >= 200 items AND at least 40 items are discordant;
    the Tango score interval otherwise. Returns (method, reason), e.g.
    ``("tango", "Tango score interval: 15 items, 7 discordant")``.

    Why these thresholds (seeded coverage check; a reduced grid of it runs in
    ``tests/stats/test_paired_binary.py::test_routing_thresholds_from_coverage``): tables
    drawn from a multinomial with P(only B) + P(only A) = rho, split 50:50 (Delta = 0) or
    75:25, 4,000 tables per cell, n in {10, 20, 50, 100, 200, 300, 500, 1000},
    rho in {0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5}, 95% intervals. Wald falls to 89-92% when
    about 10 or fewer discordant items are expected (90.3% at n = 200, rho = 0.01, 75:25;
    89.3% at n = 10, rho = 0.3) and is still 92.7-93.7% around 10-30 at small n; with 40
    or more expected discordant items and n >= 200 it lies in 94.0-95.7%, as good as Tango.
    Tango's lowest coverage on the whole grid is 93.9% (n = 300, rho = 0.02, 75:25); where
    fewer than about 5 discordant items are expected it over-covers (up to 100%, the
    discreteness of a handful of possible tables), never under. So Tango is the default and
    Wald is used only where it is equally good (there it equals the paired SE interval shown
    beside it). Tango is also never zero-width, which matters most where the rule sends it.
    """
    m = check_count(n, "n")
    k = check_count(discordant, "discordant")
    if m < 1:
        raise StatsInputError(f"n must be at least 1, got {m}")
    if not 0 <= k <= m:
        raise StatsInputError(f"discordant must lie in [0, n], got {k} with n = {m}")
    method = "wald" if (m >= WALD_MIN_ITEMS and k >= WALD_MIN_DISCORDANT) else "tango"
    return method, describe_method(method, m, k)


def discordance_upper_bound(n: int, discordant: int, confidence: float = 0.95) -> float:
    """One-sided exact (Clopper-Pearson) upper confidence bound of a discordance rate.

    With k discordant of n items: U = B^-1(confidence; k + 1, n - k) (U = 1 when k = n), the
    largest rate still compatible with seeing only k. With k = 0 this is 1 - (1 - conf)^(1/n),
    about 3/n at 95% (the "rule of three"; Hanley & Lippman-Hand 1983, JAMA 249:1743;
    Clopper & Pearson 1934, Biometrika 26:404). Two runs that agree on every item have not
    shown a discordance rate of 0, only one below U: plan and judge with rho_d = U
    (sd_d^2 <= rho_d), never with 0.
    """
    m = check_count(n, "n")
    k = check_count(discordant, "discordant")
    conf = check_confidence(confidence)
    if m < 1:
        raise StatsInputError(f"n must be at least 1, got {m}")
    if not 0 <= k <= m:
        raise StatsInputError(f"discordant must lie in [0, n], got {k} with n = {m}")
    if k == m:
        return 1.0
    return float(beta_dist.ppf(conf, k + 1, m - k))
