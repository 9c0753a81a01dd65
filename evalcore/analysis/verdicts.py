"""The verdict of a comparison row in words, decided by the p-value the row calls adjusted.

One rule for every surface (``compare`` rows, the macro average, metric variants, the CLI,
pages, report and slides, which all show these strings and never re-decide):

- **different** iff p_adjusted < alpha = 1 - confidence. Without an adjustment p_adjusted
  is the row's own p, whose test the row's interval inverts (``stats.paired_tests``), so
  "different" also means "the interval excludes 0". With an adjustment (Holm or
  Benjamini-Hochberg across tasks) the verdict follows the adjusted p and the sentence says
  so; the interval beside it stays unadjusted and is labelled so.
- otherwise, by the minimum detectable effect (MDE, alpha and power 0.8): *too few items
  to tell* below 10 items or with an MDE above 4 x the adequate threshold (20 points on a
  [0, 1] scale), *underpowered* above the threshold, else *no difference detected, and this
  design could have detected X points*. When the unadjusted p was below alpha but the
  adjusted one is not, the sentence starts "no difference detected after Holm adjustment"
  with both p-values and the unadjusted interval.
"""

from __future__ import annotations

import numpy as np

# Below this many items, or above this MDE (in multiples of the "adequate" MDE threshold:
# 4 x 5 points = 20 points on a [0, 1] scale), nothing can be concluded either way.
MIN_ITEMS_TO_TELL = 10
FLOOR_FACTOR = 4.0
ADJUSTMENT_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def fmt_points(value: float, scale: float) -> str:
    """|value| as "4.0 points" on a [0, 1] scale (``scale`` 100), else "0.3 units"."""
    if scale == 100.0:
        return f"{abs(value) * 100:.1f} points"
    return f"{abs(value):.3g} units"


def plain(v: float, scale: float) -> str:
    """A bound as printed in a verdict: points with one decimal, else 3 significant digits."""
    return f"{v * scale:.1f}" if scale == 100.0 else f"{v:.3g}"


def _bound(v: float, scale: float) -> str:
    """``plain``, except that a bound which is not 0 never prints as 0: an interval that
    excludes 0 beside a "different" verdict must not read "CI 0.0 to 0.4" (two significant
    digits then: "0.046")."""
    text = plain(v, scale)
    if v != 0 and float(text) == 0:
        return f"{v * scale:.2g}"
    return text


def p_words(p: float, alpha: float = 0.05) -> str:
    """A p-value as a verdict prints it: three significant digits ("0.0694", "0.00123"),
    "< 0.0001" below that, and more digits where rounding would put it on the other side of
    alpha (0.04996 is "0.04996", never "0.05")."""
    if not np.isfinite(p):
        return "n/a"
    if p < 1e-4:
        return "< 0.0001"
    for digits in range(3, 12):
        text = f"{p:.{digits}g}"
        if (float(text) < alpha) == (p < alpha):
            return text
    return repr(float(p))


def threshold_of(mde_threshold: float | None, unit: bool, score_a: float,
                 score_b: float) -> float:
    """The largest MDE still called adequate: ``mde_threshold`` when given, 5 points on a
    [0, 1] scale, else 5% of the larger absolute mean of the two runs."""
    if mde_threshold is not None:
        return float(mde_threshold)
    if unit:
        return 0.05
    big = max(abs(float(score_a)) if np.isfinite(score_a) else 0.0,
              abs(float(score_b)) if np.isfinite(score_b) else 0.0, 1e-12)
    return 0.05 * big


def better_side(diff: float, different: bool, direction: str = "higher") -> str:
    """"B" or "A": the run a "different" verdict calls better ("" when none is called
    better: no difference, or a metric without a direction)."""
    if not different or direction not in ("higher", "lower") or not np.isfinite(diff) \
            or diff == 0:
        return ""
    b_higher = diff > 0
    return "B" if b_higher == (direction == "higher") else "A"


def _gap_sentence(diff: float, low: float, high: float, scale: float, name_a: str,
                  name_b: str, direction: str, ci_word: str) -> str:
    """"B is better than A by 4.0 points (CI 0.2 to 9.8)" with the gap and its interval as
    positive numbers in favour of the higher-scoring run."""
    higher, lower = (name_b, name_a) if diff > 0 else (name_a, name_b)
    lo, hi = (low, high) if diff > 0 else (-high, -low)
    gap = (f"by {fmt_points(diff, scale)} ({ci_word} {_bound(lo, scale)} to "
           f"{_bound(hi, scale)}")
    if direction == "lower":
        return f"{lower} is better than {higher} (lower is better) {gap}"
    if direction in ("target", "unknown"):
        why = "no direction" if direction == "target" else "direction unknown"
        return f"{higher} scores higher than {lower} {gap}; {why}: neither is called better"
    return f"{higher} is better than {lower} {gap}"


def verdict_text(diff: float, low: float, high: float, mde: float, *, scale: float,
                 threshold: float, name_a: str = "A", name_b: str = "B",
                 direction: str = "higher", n: int | None = None,
                 items_needed: float | None = None, mde_note: str = "",
                 p: float | None = None, p_adjusted: float | None = None,
                 adjustment: str = "none", confidence: float = 0.95) -> str:
    """The verdict sentence of one comparison row (rule: module docstring).

    ``p`` is the row's p-value (the test its interval inverts, or the intersection-union
    p of ``stats.paired_p_values``) and ``p_adjusted`` the same after ``adjustment``
    ("none", "holm", "bh"; p_adjusted defaults to p). The decision is
    p_adjusted < 1 - confidence. Without any p (``p`` None) the interval decides: it must
    then be the inversion of the row's test. ``threshold`` is the largest MDE (metric units)
    still called adequate; ``items_needed`` the items for an MDE of ``threshold``;
    ``mde_note`` how the MDE was planned when that needs saying. ``direction``
    (``evalcore.metrics``): "higher" or "lower" is better names the better run; "target" /
    "unknown" only say which run scores higher.
    """
    if not (np.isfinite(low) and np.isfinite(high)):
        return "not enough data for an interval"
    alpha = 1.0 - confidence
    adjusted = adjustment not in ("none", "", None)
    if p is None:
        p_dec = float("nan")
        different = bool(low > 0 or high < 0)
    else:
        p_dec = float(p if p_adjusted is None or not adjusted else p_adjusted)
        different = bool(p_dec < alpha)
    name = ADJUSTMENT_NAMES.get(str(adjustment), str(adjustment))
    ci_word = "unadjusted CI" if adjusted else "CI"
    note = f" ({mde_note})" if mde_note else ""
    few = n is not None and n < MIN_ITEMS_TO_TELL
    if different:
        gap = _gap_sentence(diff, low, high, scale, name_a, name_b, direction, ci_word)
        tail = f"; {name}-adjusted p {p_words(p_dec, alpha)}" if adjusted else ""
        if few:
            tail += f"; only {n} item{'s' if n != 1 else ''}"
        return f"different: {gap}{tail})"
    need = ""
    if items_needed is not None and np.isfinite(items_needed):
        need = (f"; about {int(items_needed):,} items are needed to detect "
                f"{fmt_points(threshold, scale)}")
    if adjusted and p is not None and float(p) < alpha:
        # significant alone, not after the adjustment: say both, and the interval's status
        return (f"no difference detected after {name} adjustment (adjusted p "
                f"{p_words(p_dec, alpha)}; unadjusted p {p_words(float(p), alpha)}, "
                f"unadjusted CI "
                f"{plain(low, scale)} to {plain(high, scale)})"
                + _power_clause(mde, scale, threshold, note, few, n))
    if few:
        return (f"too few items to tell: {n} item{'s' if n != 1 else ''} (CI "
                f"{plain(low, scale)} to {plain(high, scale)})" + need)
    if not np.isfinite(mde) or mde > FLOOR_FACTOR * threshold:
        what = (f"the MDE here is {fmt_points(mde, scale)}{note}" if np.isfinite(mde)
                else "the MDE cannot be estimated")
        return f"too few items to tell: {what}" + need
    if mde > threshold:
        return f"underpowered: the MDE here is {fmt_points(mde, scale)}{note}"
    return (f"no difference detected, and this design could have detected "
            f"{fmt_points(mde, scale)}{note}")


def _power_clause(mde: float, scale: float, threshold: float, note: str, few: bool,
                  n: int | None) -> str:
    """"; underpowered: the MDE here is 11.0 points" after a not-significant-after-
    adjustment sentence (empty when the design is adequately powered)."""
    if few:
        return f"; only {n} item{'s' if n != 1 else ''}"
    if not np.isfinite(mde):
        return "; the MDE cannot be estimated"
    if mde > threshold:
        return f"; underpowered: the MDE here is {fmt_points(mde, scale)}{note}"
    return f"; this design could have detected {fmt_points(mde, scale)}{note}"
