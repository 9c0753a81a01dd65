"""One row of a comparison: the difference, its interval and p-value from one procedure, the
MDE and the verdict; the macro-average row; the family (adjusted) decisions of several rows.

Every row's interval and p-value come from one procedure (``stats.paired_tests``): the p is
the test the interval inverts (Tango -> score test, Wald -> Wald z, t -> t, clustered ->
cluster-robust t with G - 1 df, below 30 clusters together with the iid test), and for two
0/1 runs also the exact McNemar test (p = the larger of the two; the interval then gains 0
when the exact test does not reject it). The verdict follows the p-value the row calls
adjusted (``analysis.verdicts``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis.groups import average_weights
from evalcore.analysis._common import AVERAGE_TASK, adjust_p_values, fnum, is_binary, mde_of, unit_scale
from evalcore.analysis.verdicts import (ADJUSTMENT_NAMES, better_side, threshold_of,
                                        verdict_text)
from evalcore.stats.paired_tests import TEST_NAMES

DISCORDANCE_BASIS = "upper bound of the discordance rate"
UNPAIRED_PREFIX = "unpaired (reported stderr, no item-level data): "


@dataclass(frozen=True)
class SharedItems:
    """The items both sides of a pair have (item key order): x_a, x_b and, when any of
    them has a cluster label, ``clusters`` (the label's integer key; an item without a
    label is a cluster of its own, keyed -1 - item key), else None."""

    items: np.ndarray
    x_a: np.ndarray
    x_b: np.ndarray
    clusters: np.ndarray | None

    def __len__(self) -> int:
        return int(self.items.size)


@dataclass(frozen=True)
class _Interval:
    """One interval of the paired difference with the SE behind it and its method in words."""

    low: float
    high: float
    se: float
    method: str
    reason: str


@dataclass(frozen=True)
class Headline:
    """The interval and p-value a paired row shows, from one procedure.

    low, high : the interval shown (the routed one, widened to 0 when the exact McNemar
        test does not reject no difference). se : the SE behind the routed interval.
    method : the routed interval ("tango", "wald", "t", "normal", "bound", "clustered-t",
        "none"). reason : the method and why, in words.
    p_interval : p of the test the routed interval inverts. p_exact : exact McNemar p (NaN
        unless 0/1). p_value : the row's p (the larger of the two for 0/1 scores).
    test : the test(s) behind p_value in words. widened : True when 0 was added.
    """

    low: float
    high: float
    se: float
    method: str
    reason: str
    p_interval: float
    p_exact: float
    p_value: float
    test: str
    widened: bool


def _cells_of(xa: np.ndarray, xb: np.ndarray) -> tuple[int, int, int, int]:
    """(both right, only B right, only A right, both wrong) of two 0/1 runs."""
    return (int(np.sum((xa == 1) & (xb == 1))), int(np.sum((xa == 0) & (xb == 1))),
            int(np.sum((xa == 1) & (xb == 0))), int(np.sum((xa == 0) & (xb == 0))))


def _iid_interval(diff: float, n: int, se_iid: float, cells: tuple[int, int, int, int] | None,
                  confidence: float, unit: bool) -> _Interval:
    """The interval ignoring clusters, routed by the data.

    Two 0/1 runs: the score-type (or, at large n and many discordant items, Wald) interval of
    ``stats.choose_paired_binary_method``. Other scores: diff -+ q * SE_iid with
    q = t_{n-1} below n = 30, else z. No spread in the differences (identical runs): never
    a zero-width interval; for scores in [0, 1] the share of items on which the runs differ
    is bounded by its exact upper bound U (none of n differ), so |Delta - diff| <=
    (1 + |diff|) U and the SE is at most (1 + |diff|) sqrt(U/n).
    """
    bound = float("nan")
    if not se_iid > 0 and unit:
        bound = st.discordance_upper_bound(n, 0, confidence)
    if cells is not None:
        both, b, c, neither = cells
        method, _ = st.choose_paired_binary_method(n, b + c)
        pi = st.paired_proportion_interval(both, b, c, neither, confidence, method)
        reason = pi.label + (f" ({pi.detail})" if pi.detail else "")
        se = se_iid if se_iid > 0 else math.sqrt(bound / n)
        return _Interval(pi.low, pi.high, se, pi.method, reason)
    if se_iid > 0:
        q, df = st.mean_quantile(confidence, n, False)
        name = f"paired t interval ({df} df)" if df else "paired normal interval (CLT)"
        return _Interval(diff - q * se_iid, diff + q * se_iid, se_iid, "t" if df else "normal",
                         f"{name}: {n:,} items")
    if np.isfinite(bound):
        half = (1.0 + abs(diff)) * bound
        return _Interval(max(-1.0, diff - half), min(1.0, diff + half),
                         (1.0 + abs(diff)) * math.sqrt(bound / n), "bound",
                         f"the per-item differences do not vary over {n:,} items: interval from "
                         f"the exact {confidence:.0%} upper bound of the share of items that "
                         f"differ ({100 * bound:.1f}%)")
    return _Interval(float("nan"), float("nan"), float("nan"), "none",
                     f"the per-item differences do not vary over {n:,} items and the scores "
                     f"are not bounded: no interval (a zero-width one would be no result)")


@dataclass(frozen=True)
class PairedData:
    """What a paired row is computed from: the shared items' paired difference
    (``stats.paired_difference``, with clusters when the items fall in 2+ clusters), the
    2x2 cells of two 0/1 runs (else None) and whether every score lies in [0, 1]."""

    n: int
    diff: float
    r: st.PairedDifference
    cells: tuple[int, int, int, int] | None
    unit: bool
    clustered: bool
    sd_diff: float

    @property
    def uses_clusters(self) -> bool:
        """True when the headline is the cluster-robust interval (G >= 2, SE_c > 0)."""
        return bool(self.clustered and (self.r.n_clusters or 0) >= 2
                    and self.r.se_clustered > 0)


def paired_data(shared: SharedItems, task: str) -> PairedData:
    """``PairedData`` of the shared items of two runs (or two metrics); raises
    AnalysisError below 2 shared items."""
    xa, xb = shared.x_a, shared.x_b
    n = xa.size
    if n < 2:
        raise AnalysisError(f"{task}: only {n} shared item(s); a paired comparison needs at "
                            f"least 2")
    cl = shared.clusters
    clustered = bool(cl is not None and cl.size and (cl != cl[0]).any())   # 2+ clusters
    r = st.paired_difference(xa, xb, clusters=shared.clusters if clustered else None)
    binary = is_binary(xa) and is_binary(xb)
    return PairedData(n=int(n), diff=float(r.diff), r=r,
                      cells=_cells_of(xa, xb) if binary else None, unit=unit_scale(xa, xb),
                      clustered=clustered, sd_diff=float(np.std(xb - xa, ddof=1)))


def p_values_of(datas: list[PairedData]) -> st.PairedPValues:
    """The p-values of several paired rows in one call (``stats.paired_p_values``): the test
    each row's routed interval inverts and, for 0/1 scores, the exact McNemar test."""
    def col(f) -> np.ndarray:
        return np.array([f(d) for d in datas], dtype=float)
    nan = float("nan")
    return st.paired_p_values(
        col(lambda d: d.n), col(lambda d: d.diff), col(lambda d: d.r.se_iid),
        b=col(lambda d: d.cells[1] if d.cells else nan),
        c=col(lambda d: d.cells[2] if d.cells else nan),
        unit=np.array([d.unit for d in datas], dtype=bool),
        se_clustered=col(lambda d: d.r.se_clustered if d.uses_clusters else nan),
        n_clusters=col(lambda d: d.r.n_clusters if d.uses_clusters else nan))


def _test_words(data: PairedData, p_interval: float, p_exact: float, routed: str,
                iid_method: str) -> str:
    """The test(s) behind the row's p, in words."""
    if routed == "clustered-t":
        g = int(data.r.n_clusters)
        text = f"cluster-robust t test ({g - 1} df)"
        if g < st.FEW_CLUSTERS:
            text += (f" and, below {st.FEW_CLUSTERS} clusters, the "
                     f"{TEST_NAMES.get(iid_method, iid_method)} (p is the larger: the "
                     f"interval is their union)")
    elif routed == "t":
        text = f"{TEST_NAMES['t']} ({data.n - 1} df)"
    else:
        text = TEST_NAMES.get(routed, routed)
    if data.cells is not None:
        text = (f"{text}, p {p_interval:.3g}, and the exact McNemar test, p {p_exact:.3g}: "
                f"the row's p is the larger")
    return text


def headline(data: PairedData, confidence: float,
             pv: st.PairedPValues | None = None, k: int = 0) -> Headline:
    """The interval and p-value of a paired row at ``confidence``.

    The routed interval is ``_iid_interval``'s, or with a cluster key
    ``stats.clustered_interval`` (t with G - 1 df; never narrower than the iid one below 30
    clusters). Its p-value is ``stats.paired_p_values``' (the test the interval inverts,
    and the larger of it and the exact McNemar p for 0/1 scores; entry ``k`` of ``pv`` when
    given, from ``p_values_of``); ``stats.widen_to_zero`` adds 0 to the interval where the
    exact test does not reject it, so the interval excludes 0 iff p < 1 - confidence.
    """
    r = data.r
    iid = _iid_interval(data.diff, data.n, float(r.se_iid), data.cells, confidence, data.unit)
    head = iid
    if data.uses_clusters:
        ci = st.clustered_interval(data.diff, r.se_clustered, r.n_clusters, confidence,
                                   se_iid=iid.se, iid_low=iid.low, iid_high=iid.high)
        head = _Interval(ci.low, ci.high, ci.se, "clustered-t",
                         f"{ci.detail}; iid interval: {iid.reason}")
    elif data.clustered:
        head = _Interval(iid.low, iid.high, iid.se, iid.method,
                         f"{iid.reason}; clustered SE not used ({r.n_clusters} clusters, "
                         f"clustered SE {r.se_clustered:.3g})")
    if pv is None:
        pv, k = p_values_of([data]), 0
    p_int, p_ex, p_row = (float(pv.p_interval[k]), float(pv.p_exact[k]),
                          float(pv.p_value[k]))
    low, high, widened = st.widen_to_zero(head.low, head.high, p_ex, confidence)
    reason = head.reason
    if bool(widened[0]):
        reason += (f"; widened to 0: the exact McNemar test does not reject no difference "
                   f"(p = {p_ex:.3g})")
    return Headline(float(low[0]), float(high[0]), float(head.se), head.method, reason,
                    p_int, p_ex, p_row, _test_words(data, p_int, p_ex, head.method, iid.method),
                    bool(widened[0]))


def _mde_note(n: int, confidence: float) -> str:
    u = st.discordance_upper_bound(n, 0, confidence)
    return (f"no item differs, so the discordance rate is only bounded, not 0: planned with "
            f"its exact {confidence:.0%} upper bound {100 * u:.1f}% (sd_d^2 <= that rate)")


def _planning(data: PairedData, head: Headline, confidence: float,
              thr: float) -> tuple[float, str, float]:
    """(MDE, its basis, items needed for an MDE of ``thr``). With no spread in the
    differences the MDE is planned from the upper bound of the discordance rate
    (sd_d^2 <= U), never from 0."""
    alpha = 1.0 - confidence
    sd_diff, n = data.sd_diff, data.n
    if not sd_diff > 0 and data.unit:
        u = st.discordance_upper_bound(n, 0, confidence)
        sd_plan, basis = (1.0 + abs(data.diff)) * math.sqrt(u), DISCORDANCE_BASIS
    elif not sd_diff > 0:
        sd_plan, basis = float("nan"), "none (no spread, unbounded scores)"
    elif head.method == "clustered-t":
        sd_plan, basis = head.se * math.sqrt(n), "SE of the headline interval (clustered)"
    else:
        sd_plan, basis = sd_diff, "sd of the per-item differences"
    items_needed = float("nan")
    if np.isfinite(sd_plan) and sd_plan > 0:
        items_needed = float(st.required_items(thr, sd_diff=sd_plan, alpha=alpha))
    return mde_of(n, sd_plan, alpha), basis, items_needed


def paired_row(data: PairedData, task: str, metric: str, confidence: float,
               mde_threshold: float | None, name_a: str, name_b: str,
               direction: str = "higher", pv: st.PairedPValues | None = None,
               k: int = 0, unit_range: bool = True) -> dict:
    """One per_task row (``PER_TASK_COLUMNS``) from a ``PairedData``: the headline interval
    and p of ``headline`` (entry ``k`` of ``pv`` when the p-values of several rows were
    computed at once), both SEs (``se_iid``, ``se_clustered``; ``se`` is the one behind
    the headline), the MDE, and the verdict with no adjustment (``decide``).
    ``unit_range``: False when the metric is known to live on a range other than [0, 1]
    (``metrics.range_allows_percent``): then differences stay in the metric's units."""
    r, cells = data.r, data.cells
    head = headline(data, confidence, pv, k)
    shown_unit = data.unit and unit_range
    scale = 100.0 if shown_unit else 1.0
    score_a, score_b = float(r.mean_a), float(r.mean_b)
    thr = threshold_of(mde_threshold, shown_unit, score_a, score_b)
    mde, basis, items_needed = _planning(data, head, confidence, thr)
    p_row = head.p_value
    row = {"task": task, "metric": metric, "n": data.n, "score_a": score_a,
           "score_b": score_b, "diff": data.diff, "se": head.se, "low": head.low,
           "high": head.high, "se_unpaired": fnum(r.se_unpaired),
           "correlation": fnum(r.correlation),
           "b": float(cells[1]) if cells else float("nan"),
           "c": float(cells[2]) if cells else float("nan"),
           "both": float(cells[0]) if cells else float("nan"),
           "neither": float(cells[3]) if cells else float("nan"),
           "p_exact": head.p_exact if cells else p_row,
           "p_midp": float(r.mcnemar.p_midp) if cells else float("nan"),
           "p_value": p_row, "p_interval": head.p_interval, "test": head.test,
           "p_adjusted": p_row, "adjustment": "none", "mde": mde,
           "kind": "paired, clustered SE" if data.clustered else "paired",
           "points_scale": scale, "sd_diff": data.sd_diff, "se_iid": float(r.se_iid),
           "se_clustered": float(r.se_clustered),
           "n_clusters": float(r.n_clusters) if data.clustered else float("nan"),
           "interval_method": head.method, "method_reason": head.reason,
           "widened": head.widened, "low_simultaneous": float("nan"),
           "high_simultaneous": float("nan"), "mde_basis": basis,
           "items_needed": items_needed}
    return decide(row, confidence, mde_threshold, name_a, name_b, direction)


def unpaired_row(task: str, metric: str, sides: tuple[tuple[float, float, float], ...],
                 confidence: float, mde_threshold: float | None, name_a: str, name_b: str,
                 direction: str = "higher", unit_range: bool = True) -> dict:
    """Fallback row when a run has no item-level data: unpaired difference from the reported
    stderrs ((value, stderr, n) of A and of B), SE = sqrt(SE_A^2 + SE_B^2) (METHODS.md);
    normal interval and the normal p of the same SE (one procedure). ``unit_range`` as in
    :func:`paired_row`."""
    (va, ea, na), (vb, eb, nb) = sides
    ea, eb = _edge_se(va, ea, na), _edge_se(vb, eb, nb)
    edge = (ea, eb) != (sides[0][1], sides[1][1])
    z = st.z_value(confidence)
    diff = vb - va
    se = math.hypot(ea, eb)
    # an n the files do not give stays unknown (None), never 0
    n = int(min(na, nb)) if np.isfinite(na) and np.isfinite(nb) else None
    # MDE of a difference whose SE is se: (z_{1-a/2} + z_power) * se (n = 1, sd = se)
    mde = mde_of(1, se, 1.0 - confidence)
    unit = 0 <= va <= 1 and 0 <= vb <= 1 and unit_range
    p = float(st.normal_p_value(diff, se)[0])
    nan = float("nan")
    row = {"task": task, "metric": metric, "n": n, "score_a": va, "score_b": vb, "diff": diff,
           "se": se, "low": diff - z * se, "high": diff + z * se, "se_unpaired": se,
           "correlation": nan, "b": nan, "c": nan, "both": nan, "neither": nan,
           "p_exact": p, "p_midp": nan, "p_value": p, "p_interval": p,
           "test": "z test on the reported stderrs", "p_adjusted": p, "adjustment": "none",
           "mde": mde, "kind": "unpaired from reported stderr",
           "points_scale": 100.0 if unit else 1.0, "sd_diff": nan, "se_iid": se,
           "se_clustered": nan, "n_clusters": nan, "interval_method": "normal",
           "method_reason": "normal interval from the harness-reported stderrs (unpaired, "
                            "no item-level data): "
                            + (f"{n:,} items" if n is not None else "n unknown")
                            + ("; a side at a score of 0 or 1 with a reported stderr of 0 "
                               "gets Agresti and Caffo's SE sqrt(p(1-p)/(n+2)) with "
                               "p = (k+1)/(n+2) instead of 0" if edge else ""),
           "widened": False, "low_simultaneous": nan, "high_simultaneous": nan,
           "mde_basis": "reported stderrs", "items_needed": nan}
    return decide(row, confidence, mde_threshold, name_a, name_b, direction)


def _edge_se(value: float, stderr: float, n: float) -> float:
    """A side's SE for the unpaired difference: the reported one, except at a score of 0 or
    1 with a reported stderr of 0 (every item right or wrong; the sample SE is 0, and a zero
    SE would make the difference look exact): then Agresti and Caffo's add-one-success-and-
    one-failure term sqrt(p~(1-p~)/(n+2)), p~ = (k+1)/(n+2) (Agresti & Caffo 2000, Am. Stat.
    54:280, whose interval for a difference of two proportions sums these terms). Without a
    known n the reported 0 stays."""
    if stderr == 0 and value in (0.0, 1.0) and np.isfinite(n) and n >= 1:
        p = (value * n + 1.0) / (n + 2.0)
        return math.sqrt(p * (1.0 - p) / (n + 2.0))
    return stderr


def decide(row: dict, confidence: float, mde_threshold: float | None, name_a: str,
           name_b: str, direction: str = "higher") -> dict:
    """``row`` with its verdict, ``different`` (p_adjusted < 1 - confidence) and ``better``
    ("A", "B" or "": the run the verdict calls better) from its own columns (p_value,
    p_adjusted, adjustment, interval, MDE): the one place a row's decision is made."""
    unit = float(row["points_scale"]) == 100.0
    macro = row["task"] == AVERAGE_TASK
    unpaired = str(row["kind"]).startswith("unpaired")
    n = None if (macro or unpaired or row["n"] is None) else int(row["n"])
    note = _mde_note(int(row["n"]), confidence) if row["mde_basis"] == DISCORDANCE_BASIS \
        else ""
    items = fnum(row.get("items_needed"))
    text = verdict_text(
        float(row["diff"]), float(row["low"]), float(row["high"]), float(row["mde"]),
        scale=float(row["points_scale"]),
        threshold=threshold_of(mde_threshold, unit, fnum(row["score_a"]),
                               fnum(row["score_b"])),
        name_a=name_a, name_b=name_b, direction=direction, n=n,
        items_needed=None if macro or unpaired else items, mde_note=note,
        p=fnum(row["p_value"]), p_adjusted=fnum(row["p_adjusted"]),
        adjustment=str(row["adjustment"]), confidence=confidence)
    different = bool(fnum(row["p_adjusted"]) < 1.0 - confidence)
    out = dict(row, verdict=(UNPAIRED_PREFIX + text) if unpaired else text,
               different=different)
    out["better"] = better_side(float(row["diff"]), different, direction)
    return out


def adjust_family(rows: list[dict], adjust: str, confidence: float,
                  simultaneous: list[tuple[float, float]], mde_threshold: float | None,
                  name_a: str, name_b: str, directions: list[str]) -> list[dict]:
    """The rows of several tasks as one family: p_adjusted = ``adjust`` ("holm" or "bh") of
    their p_value, the verdicts re-decided on it (``decide``), and ``simultaneous`` (each
    row's interval at confidence 1 - alpha/k, Bonferroni) as low/high_simultaneous."""
    p_adj = adjust_p_values(np.array([fnum(r["p_value"]) for r in rows], dtype=float), adjust)
    out = []
    for row, p, (lo, hi), d in zip(rows, p_adj, simultaneous, directions):
        row = dict(row, p_adjusted=float(p), adjustment=adjust, low_simultaneous=float(lo),
                   high_simultaneous=float(hi))
        out.append(decide(row, confidence, mde_threshold, name_a, name_b, d))
    return out


def family_note(adjust: str, k: int, confidence: float) -> str:
    """One line saying what an adjusted family's columns mean."""
    name = ADJUSTMENT_NAMES.get(adjust, adjust)
    level = 1.0 - (1.0 - confidence) / k
    return (f"verdicts follow the {name}-adjusted p over {k} tasks; the intervals low/high "
            f"are unadjusted ({confidence:.0%} each); low/high_simultaneous are Bonferroni "
            f"intervals at {level:.2%} each, jointly {confidence:.0%} (a {name}-adjusted "
            f"p < {1 - confidence:.2g} does not imply that the simultaneous interval "
            f"excludes 0)")


def overall_row(per_task: pd.DataFrame, confidence: float, mde_threshold, name_a, name_b,
                groups: dict[str, list[str]] | None = None) -> dict:
    """Macro average of per-task differences: mean_t diff_t, SE = sqrt(sum SE_t^2)/k; with
    ``groups`` each task group counts once (weights w_t = 1/(tasks of its group),
    ``groups.average_weights``): sum w_t diff_t / W, SE = sqrt(sum w_t^2 SE_t^2) / W.

    Each SE_t is taken as at least the half-width of its task's interval divided by z, so a
    small task's score interval (or its discordance bound, or its widening to 0) is not
    narrowed by averaging a smaller Wald SE; ``se_iid`` and ``se_clustered`` average the
    tasks' own SEs the same way (a task without clusters contributes its iid SE to
    ``se_clustered``). Normal interval and the normal p of the same SE (one procedure); the
    average is its own question, not a member of the per-task family (adjustment "none").
    """
    z = st.z_value(confidence)
    se_t = per_task["se"].to_numpy(dtype=float)
    half = (per_task["high"].to_numpy(dtype=float) - per_task["low"].to_numpy(dtype=float)) / (2 * z)
    se_t = np.where(np.isfinite(half), np.fmax(se_t, half), se_t)
    w = np.asarray(average_weights(per_task["task"].astype(str), groups or {}), dtype=float)
    wn = w / w.sum()      # normalised: sum wn = 1 (1/k each without groups)
    agg = st.aggregate_tasks(per_task["diff"].to_numpy(dtype=float), se_t, weights=w)
    diff = float(agg.estimate)
    se = float(agg.se)  # bounds below are not agg.low/high: a difference is not clipped
    k = len(per_task)
    se_iid_t = per_task["se_iid"].to_numpy(dtype=float)
    se_cl_t = per_task["se_clustered"].to_numpy(dtype=float)
    se_iid = float(np.sqrt(np.sum((wn * se_iid_t) ** 2)))
    se_cl = float("nan")
    if np.isfinite(se_cl_t).any():
        se_cl = float(np.sqrt(np.sum((wn * np.where(np.isfinite(se_cl_t), se_cl_t,
                                                    se_iid_t)) ** 2)))
    # MDE of an estimate whose SE is se: (z_{1-a/2} + z_power) * se, i.e. the paired MDE
    # formula with n = 1 and sd = se
    mde = mde_of(1, se, 1.0 - confidence)
    unit = bool((per_task["points_scale"] == 100.0).all())
    sa = float(np.sum(wn * per_task["score_a"].to_numpy(dtype=float)))
    sb = float(np.sum(wn * per_task["score_b"].to_numpy(dtype=float)))
    p = float(st.normal_p_value(diff, se)[0])
    grouped = _grouped_text(per_task, groups)
    nan = float("nan")
    row = {"task": AVERAGE_TASK, "metric": ",".join(dict.fromkeys(per_task["metric"])),
           "n": int(per_task["n"].sum()) if per_task["n"].notna().all() else None,
           "score_a": sa, "score_b": sb, "diff": diff,
           "se": se, "low": diff - z * se, "high": diff + z * se,
           "se_unpaired": float(np.sqrt(np.sum((wn * per_task["se_unpaired"]
                                                .to_numpy(float)) ** 2))),
           "correlation": nan, "b": nan, "c": nan, "both": nan, "neither": nan,
           "p_exact": p, "p_midp": nan, "p_value": p, "p_interval": p,
           "test": "z test of the macro average", "p_adjusted": p, "adjustment": "none",
           "mde": mde, "kind": "macro average of per-task differences",
           "points_scale": 100.0 if unit else 1.0,
           "sd_diff": nan, "se_iid": se_iid, "se_clustered": se_cl,
           "n_clusters": nan, "interval_method": "normal",
           "method_reason": f"normal interval of the macro average over {k} tasks"
                            + (f" ({grouped})" if grouped else "")
                            + ", SE = sqrt(sum w_t^2 SE_t^2)/sum w_t with each SE_t at least "
                              "its task interval's half-width / z",
           "widened": False, "low_simultaneous": nan, "high_simultaneous": nan,
           "mde_basis": "SE of the macro average", "items_needed": nan}
    return decide(row, confidence, mde_threshold, name_a, name_b)


def _grouped_text(per_task: pd.DataFrame, groups: dict[str, list[str]] | None) -> str:
    """"mmlu: 57 tasks counted once" for the groups with 2+ of the averaged tasks."""
    tasks = set(per_task["task"].astype(str))
    parts = [f"{g}: {n} tasks" for g, m in sorted((groups or {}).items())
             if (n := len(tasks & set(m))) >= 2]
    return ("each group counted once: " + "; ".join(parts)) if parts else ""
