"""One run: several answers per item, reruns, clusters and metric variants."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis._plumbing import one_version
from evalcore.analysis._common import (
    PER_TASK_COLUMNS,
    PROTOCOL_COLUMNS,
    check_confidence,
    empty_frame,
    fnum,
    is_binary,
    resolve_run,
    run_names,
    unit_scale,
)
from evalcore.analysis.metric_choice import task_metric
from evalcore.analysis.compare import Comparison, Pairing, paired_cell, paired_items_row

# ---------------------------------------------------------------------------------------
# one run: repeats, reruns, clusters, metric variants
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RepeatsReport:
    """Several answers per item for one run/task/metric.

    curve columns: k, se, low_floor (between-item floor SE), measured (bool: the K observed)
    pass_at_k columns: k, estimate, se, low, high, n_items, method
    """

    run: str
    task: str
    metric: str
    n_items: int
    k_observed: int
    between: float
    within: float
    se_observed: float
    k_sufficient: int
    curve: pd.DataFrame
    pass_at_k: pd.DataFrame


def one_metric(store, rid: int, task: str, metric: str | None) -> str:
    t = store.tasks([rid])
    t = t[t["task"] == task]
    if "has_items" in t:
        t = t[t["has_items"].fillna(True).astype(bool)]
    if t.empty:
        raise AnalysisError(f"run {run_names(store).get(rid, rid)!r} has no item-level data "
                            f"for task {task!r}")
    ms = set(map(str, t["metric"]))
    if metric is None:
        return str(task_metric(store, [rid], task, items_only=True).metric)
    if metric not in ms:
        raise AnalysisError(f"task {task!r} has no metric {metric!r}; it has "
                            f"{', '.join(sorted(ms))}")
    return metric


def repeats(store, run: str | int, task: str, metric: str | None = None,
            k_max: int = 50, confidence: float = 0.95) -> RepeatsReport:
    """Variance components and the SE-vs-answers curve for a run with K answers per item.

    ``stats.variance_components`` on the items x answers matrix (NaN where an item has fewer
    answers): s_w^2 = mean_i v_i, s_b^2 = var(m_i) - s_w^2/K, SE(k) = sqrt((s_b^2 + s_w^2/k)/n)
    (METHODS.md). ``low_floor`` = sqrt(s_b^2 / n), the SE no number of answers gets below.
    pass@k (unbiased, ``stats.pass_at_k_summary``) for k = 1..K when scores are 0/1.
    Raises AnalysisError when the run has one answer per item.
    """
    with one_version(store):
        rid = resolve_run(store, run)
        m = one_metric(store, rid, task, metric)
        _, _, x = store.answer_matrix(rid, task, m)
        name = run_names(store).get(rid, str(rid))
    if x.size == 0:
        raise AnalysisError(f"no item scores for {task!r} / {m!r}")
    k_obs = int(np.max(np.sum(np.isfinite(x), axis=1)))
    if k_obs < 2:
        raise AnalysisError(f"{task!r}: one answer per item; repeats need several answers "
                            f"per item (epochs, repeats)")
    vc = st.variance_components(x)
    n_items = int(vc.n_items)
    between, within = float(vc.between), float(vc.within)
    ks = np.arange(1, max(int(k_max), k_obs) + 1)
    ses = np.array([float(vc.se(int(k))) for k in ks])
    floor = math.sqrt(max(between, 0.0) / n_items) if n_items else float("nan")
    curve = pd.DataFrame({"k": ks, "se": ses, "low_floor": floor, "measured": ks == k_obs})
    pak = empty_frame(("k", "estimate", "se", "low", "high", "n_items"))
    if is_binary(x[np.isfinite(x)]):
        num = np.sum(np.isfinite(x), axis=1).astype(int)
        cor = np.nansum(x, axis=1).astype(int)
        rows = []
        for k in range(1, int(num.min()) + 1):
            r = st.pass_at_k_summary(num, cor, k, confidence=confidence)
            rows.append({"k": k, "estimate": float(r.estimate), "se": float(r.se),
                         "low": float(r.low), "high": float(r.high),
                         "n_items": int(r.n_items), "method": r.method})
        pak = pd.DataFrame(rows)
    return RepeatsReport(run=name, task=task, metric=m, n_items=n_items, k_observed=k_obs, between=between, within=within,
                         se_observed=float(vc.se(k_obs)),
                         k_sufficient=int(vc.k_sufficient()), curve=curve, pass_at_k=pak)


@dataclass(frozen=True)
class RerunReport:
    """Two passes (two runs) of the same model/protocol on the same items."""

    run_a: str
    run_b: str
    task: str
    metric: str
    n: int
    flip_rate: float
    variance_term: float        # f / (2n)
    share_of_paired_se2: float | None  # share of a paired comparison's squared SE


def rerun_noise(store, run_a: str | int, run_b: str | int, task: str,
                metric: str | None = None, against: str | int | None = None) -> RerunReport:
    """Rerun noise from two passes of one run (``stats.rerun_noise``).

    f = share of shared items whose score flipped between the passes; its variance term in
    a mean is f/(2n). With ``against`` (a third run), ``share_of_paired_se2`` is the share of
    the squared paired SE of (run_a vs against) that rerun noise explains, (f + f)/(2n) /
    SE_paired^2 -- assuming the other run reruns as noisily; else None.
    """
    with one_version(store):
        a, b = resolve_run(store, run_a), resolve_run(store, run_b)
        names = run_names(store)
        m = one_metric(store, a, task, metric)
        frame = paired_cell(store, a, b, task, m)
        if len(frame) == 0:
            raise AnalysisError(f"the two passes share no items on {task!r}")
        paired_se = None
        if against is not None:
            c = resolve_run(store, against)
            fc = paired_cell(store, a, c, task, m)
            if len(fc) >= 2:
                paired_se = float(st.paired_difference(fc.x_a, fc.x_b).se)
    r = st.rerun_noise(frame.x_a, frame.x_b, paired_se)
    return RerunReport(run_a=names.get(a, str(a)), run_b=names.get(b, str(b)), task=task,
                       metric=m, n=int(len(frame)), flip_rate=float(r.flip_rate),
                       variance_term=float(r.variance_term),
                       share_of_paired_se2=(None if paired_se is None else
                                            fnum(r.share_of_paired_se2)))


@dataclass(frozen=True)
class ClusterReport:
    """Clustered vs iid SE and intervals for one run/task/metric (cluster key from ingest).

    low, high : the clustered interval, the leaderboard's for the same cell (method
        "clustered"): Korn-Graubard for 0/1 scores, else t with G - 1 df on the CR1 SE, never
        narrower than the iid interval below 30 clusters; clipped to [0, 1] for scores there.
    iid_low, iid_high : the interval ignoring clusters (Wilson for 0/1 scores, the
        leaderboard's default; else the CLT/t interval), iid_method its name.
    width_ratio : (high - low) / (iid_high - iid_low): how many times wider the clustered
        interval shown is than the iid one shown (NaN when the iid one has no width).
    clustered_low, clustered_high, df : score -+ t_{G-1} * SE_c and G - 1 (the t interval on
        the CR1 SE, shown for reference; for 0/1 scores it is not the headline).
    method_reason : the rule that gave low/high, in words.
    """

    run: str
    task: str
    metric: str
    n: int
    n_clusters: int
    score: float
    se_iid: float
    se_clustered: float
    design_effect: float
    icc: float
    low: float
    high: float
    df: int = 0
    clustered_low: float = float("nan")
    clustered_high: float = float("nan")
    method_reason: str = ""
    iid_low: float = float("nan")
    iid_high: float = float("nan")
    iid_method: str = ""
    width_ratio: float = float("nan")


def _dense_codes(items: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Cluster codes 0..G-1 as the store numbers them for the clustered leaderboard
    (``store.item_code_matrices``): the label keys ranked, then each unlabelled item a
    cluster of its own, in item order."""
    labelled = cluster >= 0
    keys, codes = np.unique(cluster[labelled], return_inverse=True)
    out = np.empty(cluster.size, dtype=np.int64)
    out[labelled] = codes
    out[~labelled] = keys.size + np.arange(int((~labelled).sum()))
    return out


def clusters(store, run: str | int, task: str, metric: str | None = None,
             confidence: float = 0.95) -> ClusterReport:
    """Clustered vs iid SE (``stats.clustered_se``) over per-item means, with the clustered
    interval the leaderboard shows for this cell: ``stats.grouped_clustered_intervals``, the
    function the clustered leaderboard calls (Korn-Graubard for 0/1 scores, ``stats.
    korn_graubard_interval``; else t with G - 1 df, never narrower than the iid interval
    below 30 clusters), beside the iid interval (Wilson for 0/1 scores, else the CLT/t
    interval of ``stats.score_interval(x, "clt")``) and the ratio of their widths.

    Items without a cluster key count as clusters of their own. Raises AnalysisError when
    the task has no cluster key or fewer than 2 clusters.
    """
    check_confidence(confidence)
    with one_version(store):
        rid = resolve_run(store, run)
        m = one_metric(store, rid, task, metric)
        # the run's item means and cluster keys (the run paired with itself): integer
        # columns only; an item without a cluster key is a cluster of its own
        items = store.paired_items(rid, rid, [(task, m, m)])[0]
        name = run_names(store).get(rid, str(rid))
    if items.items.size == 0 or not (items.cluster >= 0).any():
        raise AnalysisError(f"{task!r} has no cluster key in this run")
    x = np.asarray(items.score_a, dtype=float)
    codes = _dense_codes(np.asarray(items.items), np.asarray(items.cluster, dtype=np.int64))
    r = st.clustered_se(x, codes)
    if not np.isfinite(r.se):
        raise AnalysisError(f"{task!r}: {r.reason or 'clustered SE undefined'}")
    g = st.grouped_clustered_intervals(x, codes, np.zeros(x.size, dtype=np.int64), confidence)
    low, high = float(g.low[0]), float(g.high[0])
    score = float(r.mean)
    binary = is_binary(x)
    if binary:
        iid = st.wilson_interval(int(x.sum()), int(x.size), confidence)
        iid_name = "Wilson"
        rule = st.korn_graubard_interval(score, int(x.size), r.se, r.n_clusters, confidence,
                                         se_iid=r.se_iid).detail
    else:
        iid = st.score_interval(x, "clt", confidence)
        iid_name = "t" if "t quantile" in iid.detail else "CLT"
        rule = st.clustered_interval(score, r.se, r.n_clusters, confidence, se_iid=r.se_iid,
                                     iid_low=iid.low, iid_high=iid.high).detail
    q = st.cluster_t_value(confidence, r.n_clusters)
    width = iid.high - iid.low
    ratio = (high - low) / width if width > 0 else float("nan")
    return ClusterReport(run=name, task=task, metric=m, n=int(items.items.size),
                         n_clusters=int(r.n_clusters), score=score,
                         se_iid=float(r.se_iid), se_clustered=float(r.se),
                         design_effect=float(r.design_effect), icc=float(r.icc),
                         low=low, high=high, df=int(r.n_clusters) - 1,
                         clustered_low=score - q * float(r.se),
                         clustered_high=score + q * float(r.se),
                         method_reason=f"{rule}; iid interval: {iid_name}",
                         iid_low=float(iid.low), iid_high=float(iid.high), iid_method=iid_name,
                         width_ratio=float(ratio))


def metric_variants(store, run: str | int, task: str, metric_a: str, metric_b: str,
                    confidence: float = 0.95, mde_threshold: float | None = None) -> Comparison:
    """Two metric variants of one run compared as a paired difference (B - A).

    E.g. strict-match vs flexible-extract: diff > 0 is the share of items the looser grader
    rescued, with its paired interval. ``run_a``/``run_b`` of the result read
    "<run> [<metric>]".
    """
    check_confidence(confidence)
    with one_version(store):
        return _metric_variants(store, run, task, metric_a, metric_b, confidence,
                                mde_threshold)


def _metric_variants(store, run: str | int, task: str, metric_a: str, metric_b: str,
                     confidence: float, mde_threshold: float | None) -> Comparison:
    """``metric_variants`` against one store version."""
    rid = resolve_run(store, run)
    name = run_names(store).get(rid, str(rid))
    for mm in (metric_a, metric_b):
        one_metric(store, rid, task, mm)
    if metric_a == metric_b:
        raise AnalysisError("choose two different metrics")
    frame = paired_cell(store, rid, rid, task, metric_a, metric_b)
    if len(frame) < 2:
        raise AnalysisError(f"{task!r}: metrics {metric_a!r} and {metric_b!r} share "
                            f"{len(frame)} item(s); need at least 2")
    la, lb = f"{name} [{metric_a}]", f"{name} [{metric_b}]"
    row = paired_items_row(frame, task, f"{metric_b} - {metric_a}", confidence, mde_threshold,
                      metric_a, metric_b)
    per_task = pd.DataFrame([row])[list(PER_TASK_COLUMNS)]
    # each variant's item count from the maintained cell table (no item pull)
    cells = store.tasks([rid])
    cells = cells[(cells["task"] == task) & cells["has_items"].fillna(True).astype(bool)]
    n_of = dict(zip(cells["metric"].astype(str), cells["n_items"].astype(int)))
    n_a, n_b = n_of.get(metric_a, 0), n_of.get(metric_b, 0)
    warnings = []
    if n_a != len(frame) or n_b != len(frame):
        warnings.append(f"{metric_a}: {n_a} items, {metric_b}: {n_b} items; compared on "
                        f"{len(frame)} shared items")
    pairing = Pairing(task=task, metric=f"{metric_a} vs {metric_b}", n_shared=len(frame),
                      only_a=(), only_b=(), hash_mismatch=())
    return Comparison(run_a=la, run_b=lb, confidence=confidence, per_task=per_task,
                      protocol_diff=empty_frame(PROTOCOL_COLUMNS), pairing=(pairing,),
                      overall=None, verdict=str(row["verdict"]), warnings=tuple(warnings))


