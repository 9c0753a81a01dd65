"""Planning: minimum detectable effect, required number of items, pre-registration sheet.

Paired design (two runs on the same items), two-sided test at level alpha with power 1 - beta:

    MDE = (z_{1-alpha/2} + z_{1-beta}) * sd_d / sqrt(n)
    n   = (z_{1-alpha/2} + z_{1-beta})^2 * sd_d^2 / Delta^2      (about 7.85 sd_d^2 / Delta^2)

Given only a disagreement rate rho_d (share of items where the two runs differ, 0/1 scores),
sd_d^2 = rho_d - Delta^2 <= rho_d, so using sd_d^2 = rho_d is a conservative bound that can be
committed to before running (Miettinen 1968, "The matched pairs design in the case of
all-or-none responses", Biometrics 24:339; Connor 1987, Biometrics 43:207).
Unpaired design: sd^2 = p_A(1 - p_A) + p_B(1 - p_B). Clustered designs inflate the variance by
the design effect; K answers per item replace sd_d^2 by between + within / K.
Reference: Miller (2024), "Adding Error Bars to Evals", arXiv:2411.00640, sec. 5 (power).
"""

from __future__ import annotations

import html
import math
from typing import Any

from scipy.special import ndtri

from evalcore.stats._checks import StatsInputError, check_count


def _z_sum(alpha: float, power: float) -> float:
    a, p = float(alpha), float(power)
    if not (0.0 < a < 1.0):
        raise StatsInputError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not (0.0 < p < 1.0):
        raise StatsInputError(f"power must lie in (0, 1), got {power!r}")
    return float(ndtri(1.0 - a / 2.0) + ndtri(p))


def _sd_diff(sd_diff: float | None, disagreement: float | None) -> float:
    if (sd_diff is None) == (disagreement is None):
        raise StatsInputError("give exactly one of sd_diff or disagreement")
    if disagreement is not None:
        r = float(disagreement)
        if not (0.0 < r <= 1.0):
            raise StatsInputError(f"disagreement must lie in (0, 1], got {disagreement!r}")
        return math.sqrt(r)
    s = float(sd_diff)  # type: ignore[arg-type]
    if not (s > 0.0) or math.isinf(s):
        raise StatsInputError(f"sd_diff must be a positive number, got {sd_diff!r}")
    return s


def _deff(design_effect: float) -> float:
    d = float(design_effect)
    if not (d > 0.0) or math.isinf(d):
        raise StatsInputError(f"design_effect must be a positive number, got {design_effect!r}")
    return d


def _positive_n(n: Any) -> int:
    m = check_count(n, "n")
    if m < 1:
        raise StatsInputError(f"n must be at least 1, got {m}")
    return m


def _ceil(x: float) -> int:
    return max(1, math.ceil(x - 1e-9 * max(1.0, x)))


def minimum_detectable_effect(n: int, *, sd_diff: float | None = None,
                              disagreement: float | None = None, alpha: float = 0.05,
                              power: float = 0.8, design_effect: float = 1.0) -> float:
    """Paired MDE = (z_{1-alpha/2} + z_{power}) * sd_d * sqrt(design_effect / n).

    Give ``sd_diff`` (sd of d_i from a pilot pair) or ``disagreement`` (rho_d; sd_d^2 = rho_d,
    the conservative bound). ``design_effect`` > 1 for clustered items (effective n = n/deff).
    """
    m = _positive_n(n)
    return _z_sum(alpha, power) * _sd_diff(sd_diff, disagreement) * math.sqrt(_deff(design_effect) / m)


def required_items(delta: float, *, sd_diff: float | None = None,
                   disagreement: float | None = None, alpha: float = 0.05, power: float = 0.8,
                   design_effect: float = 1.0) -> int:
    """Items needed to detect a paired gap ``delta``: ceil((z_{1-a/2} + z_pow)^2 sd_d^2 deff / delta^2).

    Example (lecture exercise, sd_d = 0.4, delta = 0.016): 7.85 * 0.16 / 0.016^2, about 4,900.
    """
    d = abs(float(delta))
    if not (d > 0.0) or math.isinf(d):
        raise StatsInputError(f"delta must be a non-zero finite number, got {delta!r}")
    s = _sd_diff(sd_diff, disagreement)
    return _ceil((_z_sum(alpha, power) * s / d) ** 2 * _deff(design_effect))


def _unpaired_sd(p_a: float, p_b: float) -> float:
    for name, p in (("p_a", p_a), ("p_b", p_b)):
        if not (0.0 <= float(p) <= 1.0):
            raise StatsInputError(f"{name} must lie in [0, 1], got {p!r}")
    v = p_a * (1 - p_a) + p_b * (1 - p_b)
    if v <= 0.0:
        raise StatsInputError("p_a and p_b are both 0 or 1: no variance to plan with")
    return math.sqrt(v)


def minimum_detectable_effect_unpaired(n: int, p_a: float, p_b: float | None = None, *,
                                       alpha: float = 0.05, power: float = 0.8,
                                       design_effect: float = 1.0) -> float:
    """Unpaired MDE with n items per run: (z_{1-a/2} + z_pow) * sqrt((p_A(1-p_A) + p_B(1-p_B)) deff / n).

    ``p_b`` defaults to ``p_a`` (the usual "similar models" planning assumption).
    """
    m = _positive_n(n)
    pb = float(p_a) if p_b is None else float(p_b)
    return _z_sum(alpha, power) * _unpaired_sd(float(p_a), pb) * math.sqrt(_deff(design_effect) / m)


def required_items_unpaired(delta: float, p_a: float, p_b: float | None = None, *,
                            alpha: float = 0.05, power: float = 0.8,
                            design_effect: float = 1.0) -> int:
    """Items per run for an unpaired comparison: ceil((z_{1-a/2} + z_pow)^2 (p_A q_A + p_B q_B) deff / delta^2).

    ``p_b`` defaults to ``p_a + delta``.
    """
    d = abs(float(delta))
    if not (d > 0.0) or math.isinf(d):
        raise StatsInputError(f"delta must be a non-zero finite number, got {delta!r}")
    pb = float(p_a) + float(delta) if p_b is None else float(p_b)
    s = _unpaired_sd(float(p_a), pb)
    return _ceil((_z_sum(alpha, power) * s / d) ** 2 * _deff(design_effect))


def effective_n(n: int, design_effect: float) -> float:
    """n / design effect: how many independent items a clustered sample is worth."""
    return _positive_n(n) / _deff(design_effect)


def sd_diff_with_answers(between: float, within: float, k: float) -> float:
    """sd to plan with when each item is scored as the mean of k answers: sqrt(between + within/k).

    ``between``/``within`` are the components of the per-item differences (or of one run's
    scores), e.g. from :func:`evalcore.stats.variance_components`; a negative between-item
    estimate is treated as 0. Plug the result into ``sd_diff=``.
    """
    kk = float(k)
    if not kk >= 1:
        raise StatsInputError(f"k must be >= 1, got {k!r}")
    w = float(within)
    if w < 0:
        raise StatsInputError(f"within-item variance must be >= 0, got {within!r}")
    v = max(float(between), 0.0) + w / kk
    if v <= 0:
        raise StatsInputError("between + within/k is 0: no variance to plan with")
    return math.sqrt(v)


def _md(value: Any) -> str:
    """User text for a Markdown table cell: HTML-escaped, pipes and newlines neutralised."""
    return html.escape(str(value)).replace("|", "\\|").replace("\n", " ")


def preregistration_markdown(*, comparison: str, n: int, sd_diff: float | None = None,
                             disagreement: float | None = None, alpha: float = 0.05,
                             power: float = 0.8, design_effect: float = 1.0,
                             answers_per_item: int = 1, metric: str = "accuracy",
                             stopping_rule: str = "Run all n items once; no peeking and no "
                                                  "early stopping on interim results.",
                             assumptions: str = "", adjustment: str = "none (single comparison)",
                             author: str = "", date: str = "") -> str:
    """Render the pre-registration sheet as Markdown.

    Lists the planned comparison, metric, alpha, power, the assumed sd_d (or disagreement rate
    rho_d and the bound sd_d^2 = rho_d), design effect, answers per item, n, the minimum
    detectable effect it implies (:func:`minimum_detectable_effect`), the multiple-comparison
    adjustment and the stopping rule. User-supplied text is HTML-escaped, so the sheet can be
    shown with ``unsafe_allow_html`` off or on without injecting markup.
    """
    m = _positive_n(n)
    mde = minimum_detectable_effect(m, sd_diff=sd_diff, disagreement=disagreement, alpha=alpha,
                                    power=power, design_effect=design_effect)
    if disagreement is not None:
        r = float(disagreement)
        sd_line = (f"share of items where the runs disagree {r:.4g} (rho_d = {r:.4g}); SD of "
                   f"per-item differences planned with sqrt(rho_d) = {math.sqrt(r):.4g}, the "
                   "conservative bound")
    else:
        s = float(sd_diff)  # type: ignore[arg-type]
        sd_line = f"SD of per-item differences {s:.4g} (sd_d = {s:.4g})"
    rows = [
        ("Planned comparison", _md(comparison)),
        ("Metric", _md(metric)),
        ("Design", "paired: both runs on the same items, difference B - A"),
        ("Significance level alpha (two-sided)",
         f"{float(alpha):g} ({100 * (1 - float(alpha)):.4g}% confidence)"),
        ("Power", f"{float(power):g} ({100 * float(power):.4g}%)"),
        ("Assumed spread", sd_line),
        ("Design effect (clustering)", f"{float(design_effect):.4g}"),
        ("Answers per item", str(int(answers_per_item))),
        ("Items n", f"{m:,}"),
        ("Minimum detectable effect", f"{mde:.4f} ({100 * mde:.2f} points)"),
        ("Multiple-comparison adjustment", _md(adjustment)),
        ("Stopping rule", _md(stopping_rule)),
    ]
    if assumptions:
        rows.append(("Other assumptions", _md(assumptions)))
    if author:
        rows.append(("Author", _md(author)))
    if date:
        rows.append(("Date", _md(date)))
    lines = ["# Pre-registration", "", "| Field | Value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    lines += ["", f"MDE = (z_(1-alpha/2) + z_(power)) * sd_d * sqrt(deff / n) = {mde:.4f}. "
              "A true difference smaller than this will often go undetected; a null result is "
              "evidence only against differences of at least this size.",
              "", "Written before the run; any deviation is reported next to the result."]
    return "\n".join(lines) + "\n"
