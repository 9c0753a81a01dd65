"""Two runs on the same items: pairing, the paired comparison, verdicts, discordant items."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis.board_cells import _submit
from evalcore.analysis.groups import average_weights, task_groups
from evalcore.analysis.leaderboard import _declared_groups, _protocols, metric_infos
from evalcore.analysis._common import (
    AVERAGE_TASK,
    BENIGN_PROTOCOL_CATEGORIES,
    PER_TASK_COLUMNS,
    PROTOCOL_COLUMNS,
    _adjust,
    _check_confidence,
    _empty,
    _fnum,
    _is_binary,
    _mde,
    _natural_key,
    one_version,
    resolve_runs,
    _short,
    _sorted_items,
    _unit_scale,
)
from evalcore.analysis.metric_choice import task_metrics

# ---------------------------------------------------------------------------------------
# two runs: pairing, compare, discordant items
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pairing:
    """Integrity of the pairing of two runs on one task/metric."""

    task: str
    metric: str
    n_shared: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    hash_mismatch: tuple[str, ...]   # shared item ids whose prompt/item hash differs


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of run B against run A (difference = B - A).

    per_task columns: task, metric, n, score_a, score_b, diff, se, low, high, se_unpaired,
        correlation, b, c, both, neither (NaN unless 0/1), p_exact, p_midp, p_adjusted,
        adjustment ("holm" when several tasks), mde (metric units at alpha, power 0.8),
        verdict (str), kind ("paired", "paired, clustered SE" or "unpaired from reported
        stderr"), points_scale (100 when scores lie in [0, 1], else 1: multiply diff/mde by it
        to get "points"), sd_diff (sd of the per-item differences, ddof=1; NaN when unpaired),
        se_iid (sd(d, ddof=1)/sqrt(n), 0 for identical runs), se_clustered (CR1 clustered SE
        of d; NaN without a cluster key), n_clusters (G or NaN), interval_method (the method
        behind low/high: "tango", "newcombe", "bonett-price", "wald", "t", "normal", "bound",
        "clustered-t"), method_reason (that method and why, in words: "Tango score interval:
        15 items, 7 discordant"), mde_basis (what the MDE was planned from), items_needed
        (items for an MDE of the adequate threshold, 5 points on a [0, 1] scale).
        ``se`` is the SE behind the headline interval: the paired SE, the clustered SE (or
        the larger of the two below 30 clusters), or, when the runs never differ, the bound
        (1 + |diff|) sqrt(U/n) from the discordance upper bound U.
    protocol_diff columns: scope ("run" or task name), setting, value_a, value_b
    pairing: one Pairing per task
    overall: the same fields as a per_task row for the macro average over tasks (or None),
        in which a task group counts once (``groups``; as in the leaderboard's average)
    verdict: one sentence for the headline ("different: B is better than A by ...", "no
        difference detected, and this design could have detected X points", "underpowered:
        the MDE here is Y points", "too few items to tell: ... about N items are needed to
        detect 5 points")
    warnings: protocol/pairing problems, meant to be shown BEFORE the numbers.

    ``mde`` is in the metric's units (0.05 = 5 points on a [0, 1] scale); ``p_exact`` is the
    exact McNemar p for 0/1 scores and the normal-approximation paired p otherwise.
    """

    run_a: str
    run_b: str
    confidence: float
    per_task: pd.DataFrame
    protocol_diff: pd.DataFrame
    pairing: tuple[Pairing, ...]
    overall: dict | None
    verdict: str
    warnings: tuple[str, ...] = ()
    groups: dict[str, list[str]] = field(default_factory=dict)   # group -> its compared tasks


def _fmt_points(value: float, scale: float) -> str:
    if scale == 100.0:
        return f"{abs(value) * 100:.1f} points"
    return f"{abs(value):.3g} units"


# Below this many items, or above this MDE (in multiples of the "adequate" MDE threshold:
# 4 x 5 points = 20 points on a [0, 1] scale), nothing can be concluded either way.
MIN_ITEMS_TO_TELL = 10
FLOOR_FACTOR = 4.0


def verdict_text(diff: float, low: float, high: float, mde: float, *, scale: float,
                 threshold: float, name_a: str = "A", name_b: str = "B",
                 direction: str = "higher", n: int | None = None,
                 items_needed: float | None = None, mde_note: str = "") -> str:
    """The verdict rule (module docstring): too few items to tell / different / underpowered /
    no difference detected. ``threshold`` is the largest MDE (metric units) still called
    adequate; below n = 10 items, or with an MDE above 4 x threshold (20 points on a [0, 1]
    scale) and an interval that contains 0, the verdict is "too few items to tell" with the
    ``items_needed`` for an MDE of ``threshold``. ``mde_note`` says how the MDE was planned
    when that needs saying (e.g. from the discordance upper bound).
    ``direction`` (``evalcore.metrics``): "higher" or "lower" is better names the better
    run; "target" / "unknown" only say which run scores higher."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "not enough data for an interval"
    note = f" ({mde_note})" if mde_note else ""
    need = ""
    if items_needed is not None and np.isfinite(items_needed):
        need = (f"; about {int(items_needed):,} items are needed to detect "
                f"{_fmt_points(threshold, scale)}")
    if n is not None and n < MIN_ITEMS_TO_TELL:
        return (f"too few items to tell: {n} item{'s' if n != 1 else ''} (CI "
                f"{_plain(low, scale)} to {_plain(high, scale)})" + need)
    excludes = low > 0 or high < 0
    if not excludes and (not np.isfinite(mde) or mde > FLOOR_FACTOR * threshold):
        what = (f"the MDE here is {_fmt_points(mde, scale)}{note}" if np.isfinite(mde)
                else "the MDE cannot be estimated")
        return f"too few items to tell: {what}" + need
    if excludes:
        # state the gap and its CI as positive numbers in favour of the higher run
        higher, lower = (name_b, name_a) if diff > 0 else (name_a, name_b)
        lo, hi = (low, high) if diff > 0 else (-high, -low)
        gap = f"by {_fmt_points(diff, scale)} (CI {_plain(lo, scale)} to {_plain(hi, scale)})"
        if direction == "lower":
            return f"different: {lower} is better than {higher} (lower is better) {gap}"
        if direction in ("target", "unknown"):
            why = "no direction" if direction == "target" else "direction unknown"
            return f"different: {higher} scores higher than {lower} {gap} ({why}: neither " \
                   f"is called better)"
        return f"different: {higher} is better than {lower} {gap}"
    if mde > threshold:
        return f"underpowered: the MDE here is {_fmt_points(mde, scale)}{note}"
    return (f"no difference detected, and this design could have detected "
            f"{_fmt_points(mde, scale)}{note}")


def _plain(v: float, scale: float) -> str:
    return f"{v * scale:.1f}" if scale == 100.0 else f"{v:.3g}"


def _threshold(mde_threshold: float | None, unit: bool, score_a: float, score_b: float) -> float:
    if mde_threshold is not None:
        return float(mde_threshold)
    if unit:
        return 0.05
    return 0.05 * max(abs(_fnum(score_a)), abs(_fnum(score_b)), 1e-12)


@dataclass(frozen=True)
class _Shared:
    """The items both sides of a pair have (item key order): x_a, x_b and, when any of
    them has a cluster label, ``clusters`` (the label's integer key; an item without a
    label is a cluster of its own, keyed -1 - item key), else None."""

    items: np.ndarray
    x_a: np.ndarray
    x_b: np.ndarray
    clusters: np.ndarray | None

    def __len__(self) -> int:
        return int(self.items.size)


def _shared(p) -> _Shared:
    """``_Shared`` of a ``PairedItems`` (``store.paired_items``)."""
    both = p.shared
    items = np.asarray(p.items, dtype=np.int64)[both]
    cl = np.asarray(p.cluster, dtype=np.int64)[both]
    clusters = np.where(cl >= 0, cl, -1 - items) if bool((cl >= 0).any()) else None
    return _Shared(items, np.asarray(p.score_a, dtype=float)[both],
                   np.asarray(p.score_b, dtype=float)[both], clusters)


def _pairing(store, p) -> Pairing:
    """The pairing report of a ``PairedItems``: shared count, items only in A / only in B
    and shared items whose hashes differ, by item id in natural order (the ids are read
    only for those items)."""
    in_a, in_b = ~np.isnan(p.score_a), ~np.isnan(p.score_b)
    both = in_a & in_b
    mismatch = both & ~np.asarray(p.hash_match, dtype=bool)
    lists = [in_a & ~in_b, in_b & ~in_a, mismatch]
    named = np.logical_or.reduce(lists)
    ids: dict[int, str] = {}
    if named.any():
        keys = np.asarray(p.items, dtype=np.int64)[named]
        ids = dict(zip(keys.tolist(), store.item_labels(p.task, keys)))

    def listed(mask: np.ndarray) -> tuple[str, ...]:
        return tuple(_sorted_items(ids[int(k)] for k in np.asarray(p.items)[mask]))

    return Pairing(task=p.task, metric=p.metric_a, n_shared=int(both.sum()),
                   only_a=listed(lists[0]), only_b=listed(lists[1]),
                   hash_mismatch=listed(lists[2]))


def _paired_reads(store, a: int, b: int, task_metrics: list[tuple[str, str]]) -> list:
    """``store.paired_items`` of two runs on several (task, metric) cells: one store query
    on integer item keys (a ``PairedItems`` per cell, in order)."""
    return store.paired_items(a, b, [(t, m, m) for t, m in task_metrics])


def _paired_cells(store, task_metrics: list[tuple[str, str]], got: list
                  ) -> dict[tuple[str, str], tuple[_Shared, Pairing]]:
    """Shared items and the pairing report (shared, only in A, only in B, hash mismatches)
    of each (task, metric) cell from its ``PairedItems`` (``_paired_reads``)."""
    return {(t, m): (_shared(p), _pairing(store, p)) for (t, m), p in zip(task_metrics, got)}


def _paired_cell(store, a: int, b: int, task: str, metric_a: str,
                 metric_b: str | None = None) -> _Shared:
    """Shared items of (a, metric_a) and (b, metric_b) (``store.paired_items``)."""
    return _shared(store.paired_items(a, b, [(task, metric_a, metric_b or metric_a)])[0])


@dataclass(frozen=True)
class _Headline:
    """One interval of the paired difference with the SE behind it and its method in words."""

    low: float
    high: float
    se: float
    method: str
    reason: str


def _iid_interval(diff: float, n: int, se_iid: float, cells: tuple[int, int, int, int] | None,
                  confidence: float, unit: bool) -> _Headline:
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
        return _Headline(pi.low, pi.high, se, pi.method, reason)
    if se_iid > 0:
        q, df = st.mean_quantile(confidence, n, False)
        name = f"paired t interval ({df} df)" if df else "paired normal interval (CLT)"
        return _Headline(diff - q * se_iid, diff + q * se_iid, se_iid, "t" if df else "normal",
                         f"{name}: {n:,} items")
    if np.isfinite(bound):
        half = (1.0 + abs(diff)) * bound
        return _Headline(max(-1.0, diff - half), min(1.0, diff + half),
                         (1.0 + abs(diff)) * math.sqrt(bound / n), "bound",
                         f"the per-item differences do not vary over {n:,} items: interval from "
                         f"the exact {confidence:.0%} upper bound of the share of items that "
                         f"differ ({100 * bound:.1f}%)")
    return _Headline(float("nan"), float("nan"), float("nan"), "none",
                     f"the per-item differences do not vary over {n:,} items and the scores "
                     f"are not bounded: no interval (a zero-width one would be no result)")


def _cells_of(xa: np.ndarray, xb: np.ndarray) -> tuple[int, int, int, int]:
    """(both right, only B right, only A right, both wrong) of two 0/1 runs."""
    return (int(np.sum((xa == 1) & (xb == 1))), int(np.sum((xa == 0) & (xb == 1))),
            int(np.sum((xa == 1) & (xb == 0))), int(np.sum((xa == 0) & (xb == 0))))


def _paired_row(shared: _Shared, task: str, metric: str, confidence: float,
                mde_threshold: float | None, name_a: str, name_b: str,
                direction: str = "higher") -> dict:
    """One per_task row from the shared items of two runs (or two metrics).

    The headline interval is ``_iid_interval``'s (routed by the data), or with a cluster key
    ``stats.clustered_interval`` (t with G - 1 df; never narrower than the iid one below 30
    clusters). Both SEs travel in the row (``se_iid``, ``se_clustered``); ``se`` is the one
    behind the headline. With no spread in the differences the MDE is planned from the upper
    bound of the discordance rate (sd_d^2 <= U), never from 0.
    """
    xa, xb = shared.x_a, shared.x_b
    n = xa.size
    alpha = 1.0 - confidence
    unit = _unit_scale(xa, xb)
    scale = 100.0 if unit else 1.0
    clusters = None
    kind = "paired"
    cl = shared.clusters
    if cl is not None and cl.size and bool((cl != cl[0]).any()):   # 2+ clusters
        clusters = shared.clusters
        kind = "paired, clustered SE"
    if n < 2:
        raise AnalysisError(f"{task}: only {n} shared item(s); a paired comparison needs at "
                            f"least 2")
    r = st.paired_difference(xa, xb, confidence=confidence, clusters=clusters)
    sd_diff = float(np.std(xb - xa, ddof=1))   # per-item sd of d (the MDE's input)
    binary = _is_binary(xa) and _is_binary(xb)
    cells = _cells_of(xa, xb) if binary else None
    if binary:
        p_exact, p_midp = float(r.mcnemar.p_exact), float(r.mcnemar.p_midp)
    else:
        p_exact, p_midp = _fnum(r.p_value), float("nan")
    diff = float(r.diff)
    iid = _iid_interval(diff, n, float(r.se_iid), cells, confidence, unit)
    head = iid
    n_clusters = float("nan")
    if clusters is not None:
        n_clusters = float(r.n_clusters)
        if r.n_clusters >= 2 and r.se_clustered > 0:
            ci = st.clustered_interval(diff, r.se_clustered, r.n_clusters, confidence,
                                       se_iid=iid.se, iid_low=iid.low, iid_high=iid.high)
            head = _Headline(ci.low, ci.high, ci.se, "clustered-t",
                             f"{ci.detail}; iid interval: {iid.reason}")
        else:
            head = _Headline(iid.low, iid.high, iid.se, iid.method,
                             f"{iid.reason}; clustered SE not used ({r.n_clusters} clusters, "
                             f"clustered SE {r.se_clustered:.3g})")
    score_a, score_b = float(np.mean(xa)), float(np.mean(xb))
    thr = _threshold(mde_threshold, unit, score_a, score_b)
    mde_note = ""
    if not sd_diff > 0 and unit:
        u = st.discordance_upper_bound(n, 0, confidence)
        sd_plan = (1.0 + abs(diff)) * math.sqrt(u)
        basis = "upper bound of the discordance rate"
        mde_note = (f"no item differs, so the discordance rate is only bounded, not 0: planned "
                    f"with its exact {confidence:.0%} upper bound {100 * u:.1f}% "
                    f"(sd_d^2 <= that rate)")
    elif not sd_diff > 0:
        sd_plan, basis = float("nan"), "none (no spread, unbounded scores)"
    elif head.method == "clustered-t":
        sd_plan, basis = head.se * math.sqrt(n), "SE of the headline interval (clustered)"
    else:
        sd_plan, basis = sd_diff, "sd of the per-item differences"
    mde = _mde(n, sd_plan, alpha)
    items_needed = float("nan")
    if np.isfinite(sd_plan) and sd_plan > 0:
        items_needed = float(st.required_items(thr, sd_diff=sd_plan, alpha=alpha))
    return {"task": task, "metric": metric, "n": int(n), "score_a": score_a, "score_b": score_b,
            "diff": diff, "se": float(head.se), "low": float(head.low),
            "high": float(head.high), "se_unpaired": _fnum(r.se_unpaired),
            "correlation": _fnum(r.correlation),
            "b": float(cells[1]) if cells else float("nan"),
            "c": float(cells[2]) if cells else float("nan"),
            "both": float(cells[0]) if cells else float("nan"),
            "neither": float(cells[3]) if cells else float("nan"),
            "p_exact": p_exact, "p_midp": p_midp, "p_adjusted": p_exact, "adjustment": "none",
            "mde": mde,
            "verdict": verdict_text(diff, float(head.low), float(head.high), mde, scale=scale,
                                    threshold=thr, name_a=name_a, name_b=name_b, n=int(n),
                                    items_needed=items_needed, mde_note=mde_note,
                                    direction=direction),
            "kind": kind, "points_scale": scale, "sd_diff": sd_diff,
            "se_iid": float(r.se_iid), "se_clustered": float(r.se_clustered),
            "n_clusters": n_clusters, "interval_method": head.method,
            "method_reason": head.reason, "mde_basis": basis, "items_needed": items_needed}


def _side_numbers(store, rid: int, task: str, metric: str) -> tuple[float, float, float]:
    """(value, stderr, n) of one run for an unpaired comparison: the harness-reported numbers,
    else (a run with items but no summary) the mean of its item means with ``stats.mean_se``."""
    s = store.summaries([rid])
    r = s[(s["task"] == task) & (s["metric"] == metric)]
    if len(r) and np.isfinite(_fnum(r["value"].iloc[0])) and np.isfinite(_fnum(r["stderr"].iloc[0])):
        return _fnum(r["value"].iloc[0]), _fnum(r["stderr"].iloc[0]), _fnum(r["n"].iloc[0])
    im = store.item_means([rid], task=task, metric=metric)
    if len(im) >= 2:
        x = im["score"].to_numpy(dtype=float)
        return float(x.mean()), float(st.mean_se(x)), float(len(x))
    return float("nan"), float("nan"), float("nan")


def _unpaired_row(store, a: int, b: int, task: str, metric: str, confidence: float,
                  mde_threshold: float | None, name_a: str, name_b: str,
                  direction: str = "higher") -> dict | None:
    """Fallback when a run has no item-level data: unpaired difference from the reported
    stderrs, SE = sqrt(SE_A^2 + SE_B^2) (METHODS.md); None when a side has no stderr."""
    va, ea, na = _side_numbers(store, a, task, metric)
    vb, eb, nb = _side_numbers(store, b, task, metric)
    if not all(np.isfinite([va, vb, ea, eb])):
        return None
    z = st.z_value(confidence)
    diff = vb - va
    se = math.hypot(ea, eb)
    # an n the files do not give stays unknown (None), never 0
    n = int(min(na, nb)) if np.isfinite(na) and np.isfinite(nb) else None
    # MDE of a difference whose SE is se: (z_{1-a/2} + z_power) * se (n = 1, sd = se)
    mde = _mde(1, se, 1.0 - confidence)
    unit = 0 <= va <= 1 and 0 <= vb <= 1
    scale = 100.0 if unit else 1.0
    p = float(st.normal_p_value(diff, se)[0])
    return {"task": task, "metric": metric, "n": n, "score_a": va, "score_b": vb, "diff": diff,
            "se": se, "low": diff - z * se, "high": diff + z * se, "se_unpaired": se,
            "correlation": float("nan"), "b": float("nan"), "c": float("nan"), "both": float("nan"), "neither": float("nan"),
            "p_exact": p, "p_midp": float("nan"), "p_adjusted": p, "adjustment": "none",
            "mde": mde,
            "verdict": "unpaired (reported stderr, no item-level data): " + verdict_text(
                diff, diff - z * se, diff + z * se, mde, scale=scale,
                threshold=_threshold(mde_threshold, unit, va, vb), name_a=name_a,
                name_b=name_b, direction=direction),
            "kind": "unpaired from reported stderr", "points_scale": scale,
            "sd_diff": float("nan"), "se_iid": se, "se_clustered": float("nan"),
            "n_clusters": float("nan"), "interval_method": "normal",
            "method_reason": f"normal interval from the harness-reported stderrs (unpaired, "
                             "no item-level data): "
                             + (f"{n:,} items" if n is not None else "n unknown"),
            "mde_basis": "reported stderrs", "items_needed": float("nan")}


def _item_metrics(tasks: pd.DataFrame, rid: int) -> dict[str, set[str]]:
    """task -> metrics with item scores of run ``rid`` (rows of ``store.tasks``)."""
    t = tasks[tasks["run_id"].astype(int) == rid]
    if len(t) and "has_items" in t:
        t = t[t["has_items"].fillna(True).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(t["task"], t["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def _summary_metrics(tasks: pd.DataFrame, rid: int) -> dict[str, set[str]]:
    """task -> reported metrics (not groups) of run ``rid`` without item scores (rows of
    ``store.tasks``; a reported metric with item scores is among ``_item_metrics``)."""
    t = tasks[tasks["run_id"].astype(int) == rid]
    if len(t) and "has_items" in t:
        t = t[~t["has_items"].fillna(True).astype(bool)]
    if len(t) and "is_group" in t:
        t = t[~t["is_group"].fillna(False).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(t["task"], t["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def compare(store, run_a: str | int, run_b: str | int, *, task: str | None = None,
            metric: str | None = None, confidence: float = 0.95,
            adjust: str = "holm", mde_threshold: float | None = None) -> Comparison:
    """Paired difference on shared items, task by task, with McNemar for 0/1 scores.

    For each task both runs have (or ``task``): items are paired on item id (per-item means
    over answers), ``stats.paired_difference`` gives diff = mean(x_B - x_A), its paired SE
    (cluster-robust when a cluster key exists), CI, unpaired SE, correlation and, for 0/1
    scores, b, c and the exact McNemar test. p-values are adjusted across tasks (``adjust``:
    "holm" or "bh") when several tasks are compared. MDE at alpha = 1 - confidence, power
    0.8, from the observed sd of the differences. ``overall`` is the macro average of the
    per-task differences with SE = sqrt(sum SE_t^2)/k. Verdict rule: module docstring.

    When one of the runs has no item-level data for a task, an unpaired comparison from the
    harness-reported stderrs is used (labelled in ``kind`` and the verdict) if both have one.

    Raises AnalysisError: unknown run, same run twice, no common task, no shared items.
    """
    _check_confidence(confidence)
    if adjust not in ("holm", "bh"):
        raise AnalysisError(f"unknown adjustment {adjust!r}; use 'holm' or 'bh'")
    with one_version(store):
        return _compare(store, run_a, run_b, task, metric, confidence, adjust, mde_threshold)


def _compare(store, run_a: str | int, run_b: str | int, task: str | None, metric: str | None,
             confidence: float, adjust: str, mde_threshold: float | None) -> Comparison:
    """``compare`` against one store version (its per-snapshot reads checked once)."""
    run_table = store.runs()
    a, b = resolve_runs(store, [run_a, run_b], run_table)
    names = dict(zip(run_table["run_id"].astype(int).tolist(),
                     run_table["name"].astype(str).tolist()))
    name_a, name_b = names.get(a, str(a)), names.get(b, str(b))
    if a == b:
        raise AnalysisError(f"both runs are {name_a!r}; choose two different runs "
                            f"(for two metrics of one run use metric_variants)")
    tdf = store.tasks([a, b])
    ia, ib = _item_metrics(tdf, a), _item_metrics(tdf, b)
    sa, sb = _summary_metrics(tdf, a), _summary_metrics(tdf, b)
    tasks_a = set(ia) | set(sa)
    tasks_b = set(ib) | set(sb)
    common = sorted(tasks_a & tasks_b)
    if task is not None:
        if task not in tasks_a or task not in tasks_b:
            missing = [n for n, ts in ((name_a, tasks_a), (name_b, tasks_b)) if task not in ts]
            raise AnalysisError(f"task {task!r} is not in run(s) {', '.join(missing)}; "
                                f"tasks both runs have: {', '.join(common) or 'none'}")
        common = [task]
    if not common:
        raise AnalysisError(f"runs {name_a!r} and {name_b!r} have no task in common")

    rows: list[dict] = []
    pairings: list[Pairing] = []
    warnings: list[str] = []
    skipped: list[str] = []
    unpaired: list[str] = []
    no_stderr: list[str] = []
    plan: list[tuple[str, str, bool]] = []  # (task, metric, item-level in both runs)
    # the metric of each task: the one decision every surface uses (``metric_choice``)
    chosen = {} if metric is not None else \
        task_metrics(store, [a, b], common, need="all", names=names)
    for t in common:
        both_items = set(ia.get(t, ())) & set(ib.get(t, ()))
        both_any = (set(ia.get(t, ())) | set(sa.get(t, ()))) & \
            (set(ib.get(t, ())) | set(sb.get(t, ())))
        if metric is not None:
            if metric not in both_any:
                if task is not None:
                    raise AnalysisError(f"task {t!r}: metric {metric!r} is not in both runs; "
                                        f"common metrics: {', '.join(sorted(both_any)) or 'none'}")
                skipped.append(t)
                continue
            m = metric
        else:
            c = chosen.get(t)
            if not both_any or c is None or c.metric is None:
                skipped.append(t)
                continue
            m = str(c.metric)
            if c.fallback_from is not None:
                warnings.append(f"{t}: compared on {c.reason}")
        plan.append((t, m, m in both_items))
    # item-level tasks: every shared item from one store query, read in a worker thread
    # while this one reads the protocols (the store's reads release the GIL)
    paired_cells = [(t, m) for t, m, paired in plan if paired]
    read = _submit(store, _paired_reads, store, a, b, paired_cells) if paired_cells else None
    try:
        # the protocol diff of the tasks planned (filtered to the compared ones below)
        planned = [t for t, _, _ in plan]
        pdf = store.protocol_diff(a, b, planned[0] if len(planned) == 1 else None)
        # direction and scale of each metric (evalcore.metrics): verdicts and macro average
        info = metric_infos(store, [a, b], [(t, m) for t, m, _ in plan])
    finally:
        got = read.result() if read is not None else []   # never leave the read running
    frames = _paired_cells(store, paired_cells, got)
    for t, m, paired in plan:
        d = info[t].direction
        if paired:
            frame, pairing = frames[(t, m)]
            pairings.append(pairing)
            if len(frame) < 2:
                warnings.append(f"{t}: {len(frame)} shared item(s); not compared")
                continue
            rows.append(_paired_row(frame, t, m, confidence, mde_threshold, name_a, name_b, d))
        else:
            row = _unpaired_row(store, a, b, t, m, confidence, mde_threshold, name_a, name_b,
                                d)
            if row is None:
                no_stderr.append(t)
                continue
            unpaired.append(t)
            rows.append(row)
    if unpaired:
        warnings.append(f"no item-level data in one or both runs for {len(unpaired)} task(s) "
                        f"({_short(unpaired)}): UNPAIRED comparison from the harness-reported "
                        f"stderrs (wider; ignores that both runs saw the same items)")
    if no_stderr:
        warnings.append(f"not compared (no item-level data and no reported stderr on both "
                        f"sides): {_short(no_stderr)}")
    if skipped:
        warnings.append(f"not compared (metric not in both runs): {_short(skipped)}")
    if not rows:
        if pairings and all(p.n_shared == 0 for p in pairings):
            raise AnalysisError(f"runs {name_a!r} and {name_b!r} share no items on "
                                f"{', '.join(p.task for p in pairings)}: nothing to pair")
        raise AnalysisError(f"runs {name_a!r} and {name_b!r}: nothing could be compared "
                            f"({'; '.join(warnings) or 'no data'})")

    # pairing integrity and protocol diff, surfaced before the numbers ------------------
    for p in pairings:
        if p.hash_mismatch:
            warnings.insert(0, f"{p.task}: {len(p.hash_mismatch)} shared item(s) have a "
                               f"different prompt/item hash: the runs were not measured with "
                               f"the same instrument")
        if p.only_a or p.only_b:
            warnings.append(f"{p.task}: {len(p.only_a)} item(s) only in {name_a}, "
                            f"{len(p.only_b)} only in {name_b}; compared on "
                            f"{p.n_shared} shared items")
    compared = [r["task"] for r in rows]
    if (len(compared) == 1) != (len(planned) == 1):
        # one task left of several planned: the store's diff of that task alone
        pdf = store.protocol_diff(a, b, compared[0] if len(compared) == 1 else None)
    pdiff = _protocol_diff(pdf, compared)
    if len(pdiff):
        if "category" in pdiff.columns:
            instrument = pdiff[~pdiff["category"].isin(BENIGN_PROTOCOL_CATEGORIES)]
        else:
            instrument = pdiff
        if len(instrument):
            settings = ", ".join(dict.fromkeys(
                s if sc == "run" else f"{sc}:{s}" for sc, s in
                zip(instrument["scope"], instrument["setting"])))
            warnings.insert(0, f"protocols differ ({settings}): the runs were not measured "
                               f"the same way, so a difference may come from the protocol "
                               f"rather than the model")
    per_task = pd.DataFrame(rows)
    if len(per_task) > 1:
        per_task["p_adjusted"] = _adjust(per_task["p_exact"].to_numpy(dtype=float), adjust)
        per_task["adjustment"] = adjust
    overall = None
    # the macro average combines only metrics on one [0, 1] higher-is-better scale
    averaged = per_task[[info[t].averageable for t in per_task["task"]]]
    if len(per_task) > 1 and len(averaged) < len(per_task):
        out = [f"{t} ({info[t].why_not_averaged()})" for t in per_task["task"]
               if not info[t].averageable]
        warnings.append(f"left out of the macro average (not a higher-is-better metric on "
                        f"[0, 1]): {_short(out)}")
    groups = task_groups([str(t) for t in per_task["task"]],
                         _declared_groups(_protocols(store, [a, b])))
    if len(averaged) > 1:
        overall = _overall(averaged, confidence, mde_threshold, name_a, name_b, groups)
        verdict = f"macro average over {len(averaged)} tasks: {overall['verdict']}"
    elif len(per_task) > 1:
        verdict = "no macro average (fewer than 2 tasks with a higher-is-better metric on " \
                  "[0, 1]); see the per-task verdicts"
    else:
        verdict = str(per_task["verdict"].iloc[0])
    per_task = per_task[list(PER_TASK_COLUMNS)]
    return Comparison(run_a=name_a, run_b=name_b, confidence=confidence, per_task=per_task,
                      protocol_diff=pdiff, pairing=tuple(pairings), overall=overall,
                      verdict=verdict, warnings=tuple(warnings), groups=groups)


def _overall(per_task: pd.DataFrame, confidence: float, mde_threshold, name_a, name_b,
             groups: dict[str, list[str]] | None = None) -> dict:
    """Macro average of per-task differences: mean_t diff_t, SE = sqrt(sum SE_t^2)/k; with
    ``groups`` each task group counts once (weights w_t = 1/(tasks of its group),
    ``groups.average_weights``): sum w_t diff_t / W, SE = sqrt(sum w_t^2 SE_t^2) / W.

    Each SE_t is taken as at least the half-width of its task's interval divided by z, so a
    small task's score interval (or its discordance bound) is not narrowed by averaging a
    smaller Wald SE; ``se_iid`` and ``se_clustered`` average the tasks' own SEs the same way
    (a task without clusters contributes its iid SE to ``se_clustered``).
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
    mde = _mde(1, se, 1.0 - confidence)
    unit = bool((per_task["points_scale"] == 100.0).all())
    scale = 100.0 if unit else 1.0
    sa = float(np.sum(wn * per_task["score_a"].to_numpy(dtype=float)))
    sb = float(np.sum(wn * per_task["score_b"].to_numpy(dtype=float)))
    low, high = diff - z * se, diff + z * se
    p = float(st.normal_p_value(diff, se)[0])
    return {"task": AVERAGE_TASK, "metric": ",".join(dict.fromkeys(per_task["metric"])),
            "n": int(per_task["n"].sum()) if per_task["n"].notna().all() else None,
            "score_a": sa, "score_b": sb, "diff": diff,
            "se": se, "low": low, "high": high,
            "se_unpaired": float(np.sqrt(np.sum((wn * per_task["se_unpaired"]
                                                 .to_numpy(float)) ** 2))),
            "correlation": float("nan"), "b": float("nan"), "c": float("nan"),
            "both": float("nan"), "neither": float("nan"),
            "p_exact": p, "p_midp": float("nan"), "p_adjusted": p, "adjustment": "none",
            "mde": mde,
            "verdict": verdict_text(diff, low, high, mde, scale=scale,
                                    threshold=_threshold(mde_threshold, unit, sa, sb),
                                    name_a=name_a, name_b=name_b),
            "kind": "macro average of per-task differences", "points_scale": scale,
            "sd_diff": float("nan"), "se_iid": se_iid, "se_clustered": se_cl,
            "n_clusters": float("nan"), "interval_method": "normal",
            "method_reason": f"normal interval of the macro average over {k} tasks"
                             + (f" ({_grouped_text(per_task, groups)})"
                                if _grouped_text(per_task, groups) else "")
                             + ", SE = sqrt(sum w_t^2 SE_t^2)/sum w_t with each SE_t at least "
                               "its task interval's half-width / z",
            "mde_basis": "SE of the macro average", "items_needed": float("nan")}


def _grouped_text(per_task: pd.DataFrame, groups: dict[str, list[str]] | None) -> str:
    """"mmlu: 57 tasks counted once" for the groups with 2+ of the averaged tasks."""
    tasks = set(per_task["task"].astype(str))
    parts = [f"{g}: {n} tasks" for g, m in sorted((groups or {}).items())
             if (n := len(tasks & set(m))) >= 2]
    return ("each group counted once: " + "; ".join(parts)) if parts else ""


def _protocol_diff(pdf: pd.DataFrame | None, tasks: list[str]) -> pd.DataFrame:
    """Settings that differ: run scope plus the compared tasks, from ``store.protocol_diff``
    of the two runs (for the one task when one is compared, else for all tasks). Extra store
    columns (e.g. ``category``) are kept after the documented ones."""
    if pdf is None or len(pdf) == 0:
        return _empty(PROTOCOL_COLUMNS)
    pdf = pdf[pdf["scope"].isin(["run", *tasks])]
    cols = list(PROTOCOL_COLUMNS) + [c for c in pdf.columns if c not in PROTOCOL_COLUMNS]
    out = pdf[cols].copy()
    for c in ("value_a", "value_b"):
        out[c] = out[c].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return out.reset_index(drop=True)


def discordant_items(store, run_a: str | int, run_b: str | int, task: str, metric: str,
                     cell: str = "b") -> pd.DataFrame:
    """Items in one cell of the 2x2 table, with texts.

    cell: "b" (only B right), "c" (only A right), "both" (both right), "neither".
    columns: item_id, score_a, score_b, prompt, target, response_a, response_b, in natural
    order of item_id (2 before 10). With several answers per item a cell uses the per-item
    means (b: x_B > x_A, c: x_A > x_B, both: both = 1, neither: both = 0) and the texts of
    each run's first answer (the prompt and target of run A, else run B's). Item ids and
    texts are read for the cell's items only.
    """
    cells = ("b", "c", "both", "neither")
    if cell not in cells:
        raise AnalysisError(f"unknown cell {cell!r}; use one of {', '.join(cells)}")
    with one_version(store):
        a, b = resolve_runs(store, [run_a, run_b], store.runs())
        sh = _paired_cell(store, a, b, task, metric)
        xa, xb = sh.x_a, sh.x_b
        mask = {"b": xb > xa, "c": xa > xb, "both": (xa == 1) & (xb == 1),
                "neither": (xa == 0) & (xb == 0)}[cell]
        keys = sh.items[mask]
        label, texts = _first_texts(store, [a, b], task, keys)
    order = sorted(range(keys.size), key=lambda i: _natural_key(label[int(keys[i])]))
    ks = keys[order].tolist()
    ta, tb = texts.get(a, {}), texts.get(b, {})
    out = pd.DataFrame({"item_id": [label[k] for k in ks], "score_a": xa[mask][order],
                        "score_b": xb[mask][order]})
    out["prompt"] = [ta.get(k, {}).get("prompt") or tb.get(k, {}).get("prompt") for k in ks]
    out["target"] = [ta.get(k, {}).get("target") or tb.get(k, {}).get("target") for k in ks]
    out["response_a"] = [ta.get(k, {}).get("response") for k in ks]
    out["response_b"] = [tb.get(k, {}).get("response") for k in ks]
    return out


def _first_texts(store, run_ids: list[int], task: str, keys: np.ndarray
                 ) -> tuple[dict[int, str], dict[int, dict[int, dict]]]:
    """(item key -> item id, run id -> item key -> prompt/target/response of its first
    answer) of some items (``store.first_texts``)."""
    if not keys.size:
        return {}, {}
    t = store.first_texts(run_ids, task, keys)
    label = dict(zip(t["item"].astype(int).tolist(), t["item_id"].astype(str).tolist()))
    out: dict[int, dict[int, dict]] = {}
    for r in t.itertuples(index=False):
        if int(r.run_id) >= 0:
            out.setdefault(int(r.run_id), {})[int(r.item)] = {
                "prompt": r.prompt, "target": r.target, "response": r.response}
    return label, out
