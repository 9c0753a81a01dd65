"""What the leaderboard knows about each task's metric and groups: the stored task protocols,
the harness groups they declare, each metric's direction and range (``MetricInfo``), the
intervals clipped to that range, and whether a chance level applies.

``compare`` reads the same protocols, groups and metric infos, so a task's direction,
range and grouping are one answer on every surface.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore import stats as st
from evalcore.analysis._common import short_list
from evalcore.analysis.groups import leaves_of
from evalcore.analysis.tiers import item_mean_bounds


def protocols_of(store, ids: list[int], task: str | None = None) -> dict[tuple[int, str], dict]:
    """(run id, task) -> stored task protocol, in run order (``store.task_protocol_table``;
    only ``task``'s when given). The table is asked for the ids in ascending order, as
    ``Store.protocol_diff`` asks: one memo entry per run set, whatever the board's order."""
    asked = sorted(ids)
    tp = store.task_protocol_table(asked) if task is None else store.task_protocol_table(asked, task)
    order = {r: i for i, r in enumerate(ids)}
    rows = sorted(zip(tp["run_id"].astype(int).tolist(), tp["task"].astype(str).tolist(),
                      tp["protocol"].tolist()),
                  key=lambda x: order.get(x[0], len(order)))
    return {(r, t): (p if isinstance(p, dict) else {}) for r, t, p in rows}


def declared_groups(protocols: dict[tuple[int, str], dict]) -> dict[str, list[str]]:
    """group -> subtasks as the harness listed them in any run (lm_eval 0.4)."""
    out: dict[str, list[str]] = {}
    for (_, t), p in protocols.items():
        subs = p.get("subtasks") if p.get("is_group") else None
        if isinstance(subs, list) and subs and t not in out:
            out[t] = [str(x) for x in subs]
    return out


def board_metric_infos(store, cells: pd.DataFrame, metrics_by_task: dict[str, str],
                  protocols: dict[tuple[int, str], dict], formats: dict[int, str],
                  bounds: dict | None = None) -> dict[str, mx.MetricInfo]:
    """task -> MetricInfo of the metric shown (``metric_info_of``) for the leaderboard's cells, tasks
    in order of first appearance; ``bounds``: task -> the item means' range (or a function
    computing it, called only when the credit check needs it, which may answer None: no
    matrix) where the board holds or is reading its matrix."""
    task_l = cells["task"].astype(str).tolist()
    metric_l = cells["metric"].astype(str).tolist()
    run_l = [int(r) for r in cells["run_id"].tolist()]
    has_l = cells["has_items"].astype(bool).tolist()
    bin_l = cells["binary"].astype(bool).tolist()
    score_l = cells["score"].astype(float).tolist()
    rows_of: dict[str, list[int]] = {}
    for i, t in enumerate(task_l):
        rows_of.setdefault(t, []).append(i)
    out: dict[str, mx.MetricInfo] = {}
    for t, idx in rows_of.items():
        m = metrics_by_task.get(t, metric_l[idx[0]])
        out[t] = metric_info_of(store, t, m, [run_l[i] for i in idx], protocols, formats,
                       binary=all(bin_l[i] for i in idx),
                       item_runs=[run_l[i] for i in idx if has_l[i]],
                       reported=[score_l[i] for i in idx if not has_l[i]],
                       bounds=(bounds or {}).get(t))
    return out


def metric_info_of(store, task: str, metric: str, run_ids: list[int],
          protocols: dict[tuple[int, str], dict], formats: dict[int, str], *, binary: bool,
          item_runs: list[int], reported: list[float],
          bounds=None) -> mx.MetricInfo:
    """MetricInfo of one task's metric (``evalcore.metrics.metric_info``).

    The harness's declaration is read from the task protocols (first run that has one);
    the credit convention of inspect / tidy applies when every run comes from such a
    format and every value lies in [0, 1]: 0/1 item scores need no look, other item-level
    runs are checked on their per-item means (the values the leaderboard averages),
    summary-only runs on their reported value. ``bounds``: the item means' range
    ({"n", "min", "max"}) or a function returning it, where the caller holds the matrix
    (else, or when the function answers None, one SQL aggregate,
    ``Store.item_mean_bounds``).
    """
    declared = None
    for rid in run_ids:
        p = protocols.get((rid, task))
        if not p or ("higher_is_better" not in p and "metric_list" not in p):
            continue                # declares nothing (thousands of runs: skip the call)
        declared = mx.harness_higher_is_better(p, metric)
        if declared is not None:
            break
    credit = bool(run_ids) and all(formats.get(int(r)) in mx.CREDIT_FORMATS for r in run_ids)
    if credit and not binary:
        vals = list(reported)
        if item_runs:
            # the item means' range (``bounds``: from the matrix the board pulled; else one
            # SQL aggregate): finite_unit only needs the non-NaN values' extremes
            b = bounds() if callable(bounds) else bounds
            if b is None:
                b = store.item_mean_bounds(item_runs, task, metric)
            vals += [b["min"], b["max"]] if b["n"] else []
        credit = mx.finite_unit(vals) and all(0.0 <= v <= 1.0 for v in vals if np.isfinite(v))
    return mx.metric_info(metric, harness_higher=declared, credit_scores=credit)


def metric_infos(store, run_ids: list[int],
                 task_metrics: list[tuple[str, str]]) -> dict[str, mx.MetricInfo]:
    """task -> MetricInfo for (task, metric) pairs of the given runs (the comparison's
    verdict wording and macro average use it; same rules as the leaderboard)."""
    ids = [int(r) for r in run_ids]
    protocols = protocols_of(store, ids)
    rt = store.runs()
    formats = dict(zip(rt["run_id"].astype(int).tolist(), rt["source_format"].astype(str).tolist()))
    tdf = store.tasks(ids)
    # (task, metric) -> [(run_id, has_items, binary)] in one pass (no frame filter per task)
    rows_of: dict[tuple[str, str], list[tuple[int, bool, bool]]] = {}
    for r, t, m, h, b in zip(tdf["run_id"].astype(int).tolist(), tdf["task"].astype(str).tolist(),
                             tdf["metric"].astype(str).tolist(),
                             tdf["has_items"].fillna(True).astype(bool).tolist(),
                             tdf["binary"].fillna(False).astype(bool).tolist()):
        rows_of.setdefault((t, m), []).append((int(r), bool(h), bool(b)))
    out = {}
    for t, m in task_metrics:
        rows = rows_of.get((str(t), str(m)), [])
        item = [(r, b) for r, h, b in rows if h]
        binary = bool(item) and all(b for _, b in item) and len(item) == len(rows)
        reported = []
        if len(rows) > len(item):
            s = store.summaries(ids)
            s = s[(s["task"] == t) & (s["metric"] == m)]
            reported = [float(v) for v in s["value"] if v is not None]
        out[str(t)] = metric_info_of(store, str(t), str(m), sorted({r for r, _, _ in rows}) or ids,
                            protocols, formats, binary=binary,
                            item_runs=[r for r, _ in item], reported=reported)
    return out


def bounds_of(matrix: tuple[np.ndarray, np.ndarray] | None) -> dict | None:
    """``item_mean_bounds`` of a pulled matrix (run ids, items x runs); None for none."""
    return None if matrix is None else item_mean_bounds(*matrix)


def clip_to_metric_range(cells: pd.DataFrame, info: dict[str, mx.MetricInfo]) -> list[str]:
    """Every cell's interval clipped to its metric's range where the range is known
    (``stats.clip_to_range``), in place; a note naming the tasks where some interval was
    cut. The CLT interval of a continuous score and a reported value +- z * stderr know
    nothing of the range (log_streaming.eval: 0.75 +- 1.96 * 0.25 = [0.26, 1.24])."""
    low = cells["low"].to_numpy(dtype=float).copy()
    high = cells["high"].to_numpy(dtype=float).copy()
    cut: list[str] = []
    for t, at in cells.groupby("task", sort=True).indices.items():
        i = info.get(str(t))
        if i is None or (i.low is None and i.high is None):
            continue
        low[at], high[at], clipped = st.clip_to_range(low[at], high[at], i.low, i.high)
        if clipped.any():
            cut.append(f"{t} {st.range_text(i.low, i.high)}")
    cells["low"], cells["high"] = low, high
    return ([f"intervals clipped to the metric's range where the normal approximation "
             f"crossed it: {short_list(cut)}"] if cut else [])


def clip_groups_to_metric_range(gcells: pd.DataFrame, tree: dict[str, list[str]],
                                 metrics_by_task: dict[str, str],
                                 info: dict[str, mx.MetricInfo]) -> list[str]:
    """Every group row's interval clipped, in place, to the range of its metric as its
    subtasks' metric info knows it (a harness's group value +- z * stderr knows nothing of
    the range); a note naming the groups where some interval was cut."""
    if gcells.empty:
        return []
    low = gcells["low"].to_numpy(dtype=float).copy()
    high = gcells["high"].to_numpy(dtype=float).copy()
    cut: list[str] = []
    for g, at in gcells.groupby("group", sort=True).indices.items():
        metric = gcells["metric"].iloc[at[0]]
        leaf = next((info[t] for t in leaves_of(str(g), tree)
                     if t in info and metrics_by_task.get(t) == metric), None)
        if leaf is None or (leaf.low is None and leaf.high is None):
            continue
        low[at], high[at], clipped = st.clip_to_range(low[at], high[at], leaf.low, leaf.high)
        if clipped.any():
            cut.append(f"{g} {st.range_text(leaf.low, leaf.high)}")
    gcells["low"], gcells["high"] = low, high
    return ([f"group intervals clipped to the metric's range: {short_list(cut)}"] if cut else [])


def chance_applies(metric: str, binary: bool) -> bool:
    """Chance is a baseline for accuracies of a multiple-choice task."""
    base = str(metric).split(",")[0].lower()
    return bool(binary) or base.startswith("acc") or base in ("exact_match", "accuracy")
