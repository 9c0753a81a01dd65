"""evalcore.stats.paired_binary against published examples, R packages and statsmodels/scipy."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from evalcore.stats import (PAIRED_BINARY_METHODS, StatsInputError, choose_paired_binary_method,
                            discordance_upper_bound, paired_difference,
                            paired_proportion_interval)


def _runs(a: int, b: int, c: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-item 0/1 scores of runs A and B with the given 2x2 cells."""
    xa = np.array([1] * a + [0] * b + [1] * c + [0] * d, dtype=float)
    xb = np.array([1] * a + [1] * b + [0] * c + [0] * d, dtype=float)
    return xa, xb


# --- Newcombe (1998) method 10 ---------------------------------------------------------------

def test_newcombe_paper_example():
    # Newcombe (1998), Stat. Med. 17:2635, worked example (e, f, g, h) = (12, 9, 2, 21):
    # theta = 7/44, method 10 gives 0.0112 to 0.2954 (as in METHODS.md).
    r = paired_proportion_interval(12, 9, 2, 21)
    assert r.method == "newcombe"
    assert r.estimate == pytest.approx(7 / 44)
    assert (round(r.low, 4), round(r.high, 4)) == (0.0112, 0.2954)
    assert (r.n, r.discordant, r.confidence) == (44, 11, 0.95)


def test_newcombe_matches_contingencytables_cavo_example():
    # R contingencytables (Fagerland, Lydersen & Laake), tests/testthat/test-ch8.R:
    # Newcombe_square_and_add_CI_paired_2x2(matrix(c(59, 6, 16, 80), 2, byrow=TRUE))
    # "estimate = -0.0621 (95% CI -0.1186 to -0.0046)"; row variable = B, so b = 6, c = 16.
    r = paired_proportion_interval(59, 6, 16, 80, method="newcombe")
    assert (round(r.estimate, 4), round(r.low, 4), round(r.high, 4)) == (-0.0621, -0.1186, -0.0046)


def test_newcombe_margins_are_statsmodels_wilson():
    # The square-and-add is built from the two margins' Wilson intervals: with phi = 0
    # (a table whose ad - bc <= n/2) the limits are Delta -+ sqrt of the summed squares.
    a, b, c, d = 3, 4, 5, 6     # ad - bc = -2 < 0: phi = -2/sqrt(7*11*8*10)
    n = a + b + c + d
    lb, ub = proportion_confint(a + b, n, alpha=0.05, method="wilson")
    la, ua = proportion_confint(a + c, n, alpha=0.05, method="wilson")
    pb, pa = (a + b) / n, (a + c) / n
    phi = (a * d - b * c) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    low = (pb - pa) - math.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
    high = (pb - pa) + math.sqrt((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
    r = paired_proportion_interval(a, b, c, d, method="newcombe")
    assert r.low == pytest.approx(low, abs=1e-12)
    assert r.high == pytest.approx(high, abs=1e-12)


# --- Tango (1998) --------------------------------------------------------------------------

# R 4.6.1, PropCIs 0.3.0: scoreci.mp(onlyB, onlyA, n, level)$conf.int, i.e. the interval for
# (onlyA - onlyB)/n, recorded by rNLKJA/Australia-Social-Media-Analytics-on-the-Cloud
# (web/src/lib/__fixtures__/paired-diff-parity.json). PropCIs bisects to about 1e-7.
PROPCIS_SCORECI_MP = [
    # (first only, second only, n, level, lower, upper) for (first - second)/n
    (7, 0, 14, 0.95, 0.17703378200531006, 0.73200792074203491),
    (0, 7, 14, 0.95, -0.73200798034667969, -0.17703387141227722),
    (0, 0, 14, 0.95, -0.21531081199645996, 0.21531075239181519),
    (3, 2, 14, 0.95, -0.26107772759028841, 0.38899629882403786),
    (1, 0, 14, 0.95, -0.15926158428192136, 0.31468707748821806),
    (5, 5, 16, 0.95, -0.36750698089599609, 0.36750680208206177),
    (13, 1, 14, 0.95, 0.37062617710658474, 0.97455562864031109),
    (14, 0, 14, 0.95, 0.56937837600708008, 1.0),
    (0, 14, 14, 0.95, -1.0, -0.56937843561172485),
    (2, 9, 20, 0.95, -0.60163156986236577, -0.027414342761039694),
    (10, 3, 50, 0.95, -0.0014977478981018086, 0.28547489047050478),
    (1, 1, 2, 0.95, -0.81093764305114746, 0.81093758344650269),
    (25, 12, 200, 0.95, 0.005635504722595221, 0.12694109946489335),
    (10, 3, 50, 0.90, 0.023380527496337893, 0.26074491620063783),
    (25, 12, 200, 0.90, 0.01547645539045334, 0.11644651859998703),
]


@pytest.mark.parametrize("first,second,n,level,lower,upper", PROPCIS_SCORECI_MP)
def test_tango_matches_propcis_scoreci_mp(first, second, n, level, lower, upper):
    r = paired_proportion_interval(n - first - second, first, second, 0, level, method="tango")
    assert r.low == pytest.approx(lower, abs=1e-6)
    assert r.high == pytest.approx(upper, abs=1e-6)


def test_tango_bentur_example():
    # Fagerland, Lydersen & Laake (2014, Stat. Med. 33:2850; book ch. 8) airway
    # hyper-responsiveness example, table (1, 1 / 7, 12): Tango -0.517 to -0.026 (the limits
    # ratesci's author checks against PropCIs::scoreci.mp(7, 1, 21)).
    r = paired_proportion_interval(1, 1, 7, 12, method="tango")
    assert (round(r.low, 3), round(r.high, 3)) == (-0.517, -0.026)


def test_tango_no_discordant_items_closed_form():
    # b = c = 0: q = 0 on Delta > 0, T = -sqrt(n Delta / (1 - Delta)), so U = z^2 / (n + z^2).
    z = stats.norm.ppf(0.975)
    for n in (3, 14, 50):
        r = paired_proportion_interval(n, 0, 0, 0, method="tango")
        assert r.high == pytest.approx(z * z / (n + z * z), abs=1e-9)
        assert r.low == pytest.approx(-r.high, abs=1e-9)


# --- Bonett & Price (2012) -------------------------------------------------------------------

def test_bonett_price_matches_statpsych():
    # statpsych::ci.prop.ps(.05, f00 = 12, f01 = 4, f10 = 26, f11 = 6) (Bonett's package,
    # citing Bonett & Price 2012): LL 0.2548067, UL 0.6251933 (adjusted estimate 0.44,
    # SE 0.09448809). B = y: a = f11, b = f10, c = f01, d = f00.
    r = paired_proportion_interval(6, 26, 4, 12, method="bonett-price")
    assert r.low == pytest.approx(0.2548067, abs=5e-8)
    assert r.high == pytest.approx(0.6251933, abs=5e-8)
    assert r.estimate == pytest.approx(22 / 48)      # the observed difference is reported
    assert (r.high - r.low) / 2 / stats.norm.ppf(0.975) == pytest.approx(0.09448809, abs=5e-9)


# --- Wald ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cells", [(12, 9, 2, 21), (59, 6, 16, 80), (40, 30, 10, 120)])
def test_wald_matches_statsmodels_zconfint_and_paired_difference(cells):
    xa, xb = _runs(*cells)
    low, high = DescrStatsW(xb - xa).zconfint_mean(alpha=0.05)
    r = paired_proportion_interval(*cells, method="wald")
    assert r.method == "wald"
    assert r.low == pytest.approx(low, abs=1e-12)
    assert r.high == pytest.approx(high, abs=1e-12)
    pd = paired_difference(xa, xb)
    assert (r.low, r.high) == pytest.approx((pd.low, pd.high), abs=1e-12)


def test_wald_with_zero_spread_is_answered_by_tango():
    for cells in ((30, 0, 0, 20), (0, 5, 0, 0), (1, 0, 0, 0)):
        r = paired_proportion_interval(*cells, method="wald")
        assert r.method == "tango"
        assert "zero-width" in r.detail
        assert r.high > r.low


def test_label_names_method_and_counts():
    r = paired_proportion_interval(8, 5, 2, 0, method="tango")
    assert r.label == "Tango score interval: 15 items, 7 discordant"


# --- properties ------------------------------------------------------------------------------

cells = st.tuples(*(st.integers(0, 60) for _ in range(4))).filter(lambda t: sum(t) > 0)


@settings(max_examples=150, deadline=None)
@given(cells, st.sampled_from(PAIRED_BINARY_METHODS), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_property_bounds_contain_estimate_and_are_never_zero_width(t, method, conf):
    r = paired_proportion_interval(*t, confidence=conf, method=method)
    assert -1.0 <= r.low < r.high <= 1.0
    assert r.low - 1e-9 <= r.estimate <= r.high + 1e-9
    assert r.estimate == pytest.approx((t[1] - t[2]) / sum(t))


@settings(max_examples=100, deadline=None)
@given(cells, st.sampled_from(PAIRED_BINARY_METHODS))
def test_property_symmetric_under_swapping_a_and_b(t, method):
    a, b, c, d = t
    one = paired_proportion_interval(a, b, c, d, method=method)
    two = paired_proportion_interval(a, c, b, d, method=method)
    assert two.method == one.method
    assert two.low == pytest.approx(-one.high, abs=1e-9)
    assert two.high == pytest.approx(-one.low, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(cells, st.sampled_from(PAIRED_BINARY_METHODS))
def test_property_wider_at_higher_confidence(t, method):
    narrow = paired_proportion_interval(*t, confidence=0.9, method=method)
    wide = paired_proportion_interval(*t, confidence=0.99, method=method)
    assert wide.low <= narrow.low + 1e-12 and wide.high >= narrow.high - 1e-12


def test_bad_input():
    with pytest.raises(StatsInputError, match="empty"):
        paired_proportion_interval(0, 0, 0, 0)
    with pytest.raises(StatsInputError, match=">= 0"):
        paired_proportion_interval(1, -1, 0, 0)
    with pytest.raises(StatsInputError, match="unknown"):
        paired_proportion_interval(1, 1, 1, 1, method="exact")
    with pytest.raises(StatsInputError):
        paired_proportion_interval(1, 1, 1, 1, confidence=1.0)


# --- routing ---------------------------------------------------------------------------------

def test_choose_method_examples():
    assert choose_paired_binary_method(15, 7) == (
        "tango", "Tango score interval: 15 items, 7 discordant")
    assert choose_paired_binary_method(1000, 12)[0] == "tango"      # many items, few discordant
    assert choose_paired_binary_method(150, 80)[0] == "tango"       # many discordant, n < 200
    method, reason = choose_paired_binary_method(1200, 300)
    assert method == "wald" and reason == "Wald interval: 1,200 items, 300 discordant"
    with pytest.raises(StatsInputError):
        choose_paired_binary_method(10, 11)
    with pytest.raises(StatsInputError):
        choose_paired_binary_method(0, 0)


@functools.lru_cache(maxsize=None)
def _interval(b: int, c: int, n: int, method: str) -> tuple[float, float]:
    r = paired_proportion_interval(n - b - c, b, c, 0, method=method)
    return r.low, r.high


def _coverage(n: int, rho: float, split: float, method: str, reps: int, seed: int) -> float:
    """Share of seeded multinomial tables whose interval contains the true Delta."""
    rng = np.random.default_rng(seed)
    pb, pc = rho * split, rho * (1 - split)
    tables = rng.multinomial(n, [pb, pc, 1 - rho], size=reps)[:, :2]
    uniq, counts = np.unique(tables, axis=0, return_counts=True)
    hit = 0
    for (b, c), k in zip(uniq, counts):
        if method == "routed":
            m = choose_paired_binary_method(n, int(b + c))[0]
        else:
            m = method
        low, high = _interval(int(b), int(c), n, m)
        hit += k * (low <= pb - pc <= high)
    return hit / reps


def test_routing_thresholds_from_coverage():
    """The check behind choose_paired_binary_method's thresholds, on a reduced seeded grid.

    Wald undercovers where few discordant items are expected; where the rule lets it in
    (n >= 200, >= 40 discordant) it is within 1.5 points of 95%, and so are Tango and the
    routed default everywhere on the grid (never more than 1.5 points below nominal).
    """
    reps = 2000
    assert _coverage(200, 0.01, 0.75, "wald", reps, 1) < 0.92
    assert _coverage(20, 0.3, 0.5, "wald", reps, 2) < 0.935
    for n, rho in ((200, 0.3), (500, 0.1), (1000, 0.05)):
        for split in (0.5, 0.75):
            assert _coverage(n, rho, split, "wald", reps, 3) >= 0.935
    for n in (10, 50, 200, 1000):
        for rho in (0.02, 0.1, 0.3, 0.5):
            for split in (0.5, 0.75):
                assert _coverage(n, rho, split, "routed", reps, 4) >= 0.935, (n, rho, split)


# --- discordance upper bound ------------------------------------------------------------------

def test_rule_of_three():
    # k = 0: 1 - 0.05^(1/n), about 3/n (Hanley & Lippman-Hand 1983)
    for n in (30, 50, 300):
        u = discordance_upper_bound(n, 0)
        assert u == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)
        assert u == pytest.approx(3 / n, rel=0.05)
    assert discordance_upper_bound(3, 0) == pytest.approx(1 - 0.05 ** (1 / 3))


@pytest.mark.parametrize("k,n", [(0, 50), (3, 50), (7, 15), (20, 20), (1, 1000)])
def test_discordance_upper_bound_matches_scipy_and_statsmodels(k, n):
    ref = stats.binomtest(k, n, alternative="less").proportion_ci(0.95, method="exact").high
    assert discordance_upper_bound(n, k) == pytest.approx(ref, rel=1e-10)
    # the two-sided Clopper-Pearson interval at 90% has the same upper limit
    _, up = proportion_confint(k, n, alpha=0.10, method="beta")
    assert discordance_upper_bound(n, k) == pytest.approx(1.0 if k == n else up, rel=1e-10)


def test_discordance_upper_bound_input():
    with pytest.raises(StatsInputError):
        discordance_upper_bound(0, 0)
    with pytest.raises(StatsInputError):
        discordance_upper_bound(5, 6)
