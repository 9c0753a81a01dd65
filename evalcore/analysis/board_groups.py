"""Task groups on the leaderboard: every group of the board (nested ones included) per run,
with the value the harness reported for it and, where its subtasks' scores are on the board,
the value recomputed from them.

Groups and their nesting come from ``analysis.groups`` (the harness's declared groups; name
families for files without). A group's value is recomputed over its leaf subtasks (nested
groups expanded), as lm-evaluation-harness aggregates a group (``lm_eval/api/group.py``
``Group.aggregate``: ``get_all_tasks()``, then ``aggregate_subtask_metrics`` with
``weight_by_size``), with one of two weightings:

- **size**: item-weighted, sum_t n_t s_t / N, SE = the harness's ``pooled_sample_stderr``
  (``stats.aggregate_tasks(kind="micro")``), so a size-weighted group agrees with the harness
  to the printed digit;
- **equal**: the mean of the leaf scores, SE = sqrt(sum_t SE_t^2) / k
  (``stats.aggregate_tasks(kind="macro")``). The harness prints ``pooled_sample_stderr`` for
  this weighting too, which is the SE of the size-weighted mean, not of this one.

The results files do not carry the group's ``aggregate_metric_list``; the weighting is read
from the numbers: the one whose mean of the subtasks' reported values equals the group value
the harness reported (within 1e-9). Without a reported value to check against, size weighting
is used (``weight_by_size`` defaults to true in lm_eval's ``AggMetricConfig``, and MMLU's group
config sets it), and the row says it was assumed.

No SQL here: everything comes from the board's cells and the stored summaries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import GROUP_COLUMNS, empty_frame, fnum, short_list
from evalcore.analysis.groups import leaves_of

MATCH_TOLERANCE = 1e-9
SIZE, EQUAL = "size", "equal"


def group_tree(groups: dict[str, list[str]], declared: dict[str, list[str]]
               ) -> dict[str, list[str]]:
    """group -> its direct subtasks, for every group of the board: each outermost group of
    ``groups`` (``task_groups``) and the declared groups nested in it; a name family (no
    declaration) lists its board tasks."""
    tree: dict[str, list[str]] = {}
    for g, members in groups.items():
        if g not in declared:
            tree[g] = list(members)
            continue
        todo = [g]
        while todo and len(tree) < 10_000:
            h = todo.pop()
            if h in tree:
                continue
            tree[h] = [str(s) for s in declared[h]]
            todo.extend(s for s in declared[h] if s in declared)
    return tree


def _parents(tree: dict[str, list[str]], roots: list[str]) -> dict[str, tuple[str, int]]:
    """group -> (parent group, "" at the top; depth) walking down from the outermost groups."""
    out: dict[str, tuple[str, int]] = {}
    todo = [(g, "", 0) for g in roots]
    while todo:
        g, parent, depth = todo.pop(0)
        if g in out or depth > 20:
            continue
        out[g] = (parent, depth)
        todo.extend((s, g, depth + 1) for s in tree.get(g, []) if s in tree)
    return out


def _weighted(scores: np.ndarray, ns: np.ndarray, weighting: str) -> float:
    if weighting == SIZE:
        return float(np.sum(ns * scores) / np.sum(ns))
    return float(np.mean(scores))


def infer_weighting(reported: float, leaf_values: np.ndarray, leaf_ns: np.ndarray
                    ) -> str | None:
    """The weighting ("size" or "equal") whose mean of ``leaf_values`` equals the group value
    the harness ``reported`` (within ``MATCH_TOLERANCE``); "size" when both do (equal
    sizes); None when neither does or the inputs are incomplete."""
    if not np.isfinite(reported) or not leaf_values.size or not np.all(np.isfinite(leaf_values)):
        return None
    sizes_known = bool(np.all(np.isfinite(leaf_ns)) and np.all(leaf_ns > 0))
    for w in (SIZE, EQUAL):
        if w == SIZE and not sizes_known:
            continue
        if abs(_weighted(leaf_values, leaf_ns, w) - reported) <= \
                MATCH_TOLERANCE * max(1.0, abs(reported)):
            return w
    return None


def _reported_groups(summaries: pd.DataFrame) -> dict[tuple[int, str, str], tuple[float, float, float]]:
    """(run, group, metric) -> (value, stderr, n) of the harness's group rows."""
    if not len(summaries):
        return {}
    g = summaries[summaries["is_group"].fillna(False).astype(bool)]
    return {(int(r), str(t), str(m)): (fnum(v), fnum(e), fnum(n)) for r, t, m, v, e, n in zip(
        g["run_id"], g["task"], g["metric"], g["value"], g["stderr"], g["n"])}


def _group_metric(leaves: list[str], metrics_by_task: dict[str, str],
                  reported_metrics: set[str]) -> tuple[str | None, str]:
    """(metric of a group, why none) from the metrics its leaves are shown on and the metrics
    the harness reported the group on."""
    shown = {metrics_by_task[t] for t in leaves if t in metrics_by_task}
    if len(shown) == 1:
        return shown.pop(), ""
    if len(reported_metrics) == 1:
        return next(iter(reported_metrics)), ""
    if not shown:
        return None, "none of its subtasks is on the board"
    listed = "; ".join(f"{m}: {short_list(sorted(t for t in leaves if metrics_by_task.get(t) == m), 3)}"
                       for m in sorted(shown))
    return None, f"no aggregate: its subtasks are shown on different metrics ({listed})"


def _weightings(tree: dict[str, list[str]], cells_by: dict, reported: dict,
                metric_of: dict[str, str | None], families: set[str]
                ) -> dict[str, tuple[str, str]]:
    """group -> (weighting, how it was found), from the first run whose reported group value
    one weighting reproduces from the reported leaf values. A task-name family (no harness
    group) is the plain mean of its tasks."""
    out: dict[str, tuple[str, str]] = {}
    runs = sorted({r for r, _ in cells_by})
    for g in tree:
        if g in families:
            out[g] = (EQUAL, "a task-name family, not a harness group: the plain mean of its "
                             "tasks")
            continue
        m = metric_of.get(g)
        leaves = leaves_of(g, tree)
        found = None
        for r in runs:
            rep = reported.get((r, g, m))
            rows = [cells_by.get((r, t)) for t in leaves]
            if rep is None or any(x is None or x["metric"] != m for x in rows):
                continue
            vals = np.array([fnum(x["reported"]) if np.isfinite(fnum(x["reported"]))
                             else fnum(x["score"]) for x in rows], dtype=float)
            ns = np.array([fnum(x["n"]) for x in rows], dtype=float)
            found = infer_weighting(rep[0], vals, ns)
            if found is not None:
                break
        if found is not None:
            out[g] = (found, "matches the group value the harness reported")
        else:
            out[g] = (SIZE, "assumed: no reported group value to check against, or neither "
                            "weighting reproduces it; lm_eval's default (weight_by_size: true)")
    return out


def group_cells(cells: pd.DataFrame, groups: dict[str, list[str]],
                tree: dict[str, list[str]], summaries: pd.DataFrame,
                metrics_by_task: dict[str, str], confidence: float,
                declared: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """One row per run and group of ``tree`` (columns ``GROUP_COLUMNS``).

    score/se/low/high: the value shown for the group: recomputed from the leaf subtasks
    when every leaf has item scores on the board ("recomputed"), else the harness's own
    group value with value +- z * reported stderr ("harness"), else recomputed from the
    leaves' board cells without item scores ("recomputed from reported"), else NaN
    ("incomplete", with ``missing`` and ``note`` saying why). ``reported``/``reported_stderr``
    and ``recomputed``/``recomputed_se`` carry both numbers whatever is shown. A run that has
    none of a group's leaves and no reported value for it gets no row. ``declared``: the
    harness's groups (others in ``tree`` are task-name families, averaged with equal
    weights).
    """
    if not tree or cells.empty:
        return empty_frame(GROUP_COLUMNS)
    z = st.z_value(confidence)
    reported = _reported_groups(summaries)
    cols = ("run", "metric", "score", "se", "n", "has_items", "reported")
    cells_by = {(int(r), str(t)): dict(zip(cols, v)) for r, t, *v in zip(
        cells["run_id"], cells["task"], *(cells[c] for c in cols))}
    run_names = dict(zip(cells["run_id"].astype(int).tolist(), cells["run"].astype(str).tolist()))
    reported_metrics: dict[str, set[str]] = {}
    for (r, g, m) in reported:
        reported_metrics.setdefault(g, set()).add(m)
        run_names.setdefault(r, str(r))
    metric_of: dict[str, str | None] = {}
    why_none: dict[str, str] = {}
    for g in tree:
        metric_of[g], why_none[g] = _group_metric(leaves_of(g, tree), metrics_by_task,
                                                  reported_metrics.get(g, set()))
    families = {g for g in tree if g not in (declared or {})}
    weighting = _weightings(tree, cells_by, reported, metric_of, families)
    place = _parents(tree, list(groups))
    runs = list(dict.fromkeys(cells["run_id"].astype(int).tolist()))
    rows = []
    for g in tree:
        parent, depth = place.get(g, ("", 0))
        leaves = leaves_of(g, tree)
        m = metric_of[g]
        for r in runs:
            row = _group_row(r, run_names.get(r, str(r)), g, parent, depth, leaves, m,
                             why_none[g], cells_by, reported.get((r, g, m)) if m else None,
                             weighting[g], z, confidence)
            if row is not None:
                rows.append(row)
    if not rows:
        return empty_frame(GROUP_COLUMNS)
    return pd.DataFrame(rows, columns=list(GROUP_COLUMNS))


def _group_row(rid: int, run: str, g: str, parent: str, depth: int, leaves: list[str],
               metric: str | None, why_none: str, cells_by: dict,
               rep: tuple[float, float, float] | None, weighting: tuple[str, str], z: float,
               confidence: float) -> dict | None:
    """One run's row of one group (``group_cells``)."""
    have = [(t, cells_by[(rid, t)]) for t in leaves if (rid, t) in cells_by]
    if not have and rep is None:
        return None
    nan = float("nan")
    missing = [t for t in leaves if (rid, t) not in cells_by]
    other = [t for t, c in have if metric is not None and c["metric"] != metric]
    ok = [(t, c) for t, c in have if metric is not None and c["metric"] == metric]
    rep_v, rep_e, rep_n = rep if rep is not None else (nan, nan, nan)
    base = {"run_id": rid, "run": run, "group": g, "parent": parent, "depth": depth,
            "metric": metric, "n_tasks": len(ok), "n_tasks_group": len(leaves),
            "reported": rep_v, "reported_stderr": rep_e, "weighting": weighting[0],
            "weighting_note": weighting[1],
            "missing": ", ".join(missing + other)}
    notes = []
    if missing:
        notes.append(f"missing {len(missing)} of {len(leaves)} subtasks: {short_list(missing, 6)}")
    if other:
        notes.append(f"{len(other)} subtask(s) shown on another metric than {metric!r}: "
                     f"{short_list(other, 6)}")
    rec, rec_se, rec_low, rec_high, n_items, from_items = nan, nan, nan, nan, nan, False
    scores = np.array([fnum(c["score"]) for _, c in ok], dtype=float)
    ses = np.array([fnum(c["se"]) for _, c in ok], dtype=float)
    ns = np.array([fnum(c["n"]) for _, c in ok], dtype=float)
    if metric is None:
        notes.append(why_none)
    elif ok and not missing and not other:
        if not np.all(np.isfinite(scores)):
            notes.append("not recomputed: a subtask has no score")
        elif weighting[0] == SIZE and not (np.all(np.isfinite(ns)) and np.all(ns >= 1)):
            notes.append("not recomputed: the item count of a subtask is unknown (size "
                         "weighting needs it)")
        elif not np.all(np.isfinite(ses)):
            notes.append("not recomputed: a subtask has no standard error")
        else:
            if weighting[0] == SIZE and len(ok) >= 1 and ns.sum() > len(ok):
                agg = st.aggregate_tasks(scores, ses, ns=ns.astype(int), kind="micro",
                                         confidence=confidence)
            else:
                agg = st.aggregate_tasks(scores, ses, kind="macro", confidence=confidence)
            rec, rec_se = float(agg.estimate), float(agg.se)
            rec_low, rec_high = float(agg.low), float(agg.high)
            n_items = float(ns.sum()) if np.all(np.isfinite(ns)) else nan
            from_items = all(bool(c["has_items"]) for _, c in ok)
    if np.isfinite(rec) and (from_items or not np.isfinite(rep_v)):
        source = "recomputed" if from_items else "recomputed from reported"
        v, e, low, high = rec, rec_se, rec_low, rec_high
    elif np.isfinite(rep_v):
        source, v, e = "harness", rep_v, rep_e
        low, high = (v - z * e, v + z * e) if np.isfinite(e) else (nan, nan)
        if np.isfinite(rep_n):
            n_items = rep_n
        if not np.isfinite(e):
            notes.append("the harness reported no stderr for the group: no interval")
    else:
        source, v, e, low, high = "incomplete", nan, nan, nan, nan
    return base | {"n": n_items, "score": v, "se": e, "low": low, "high": high,
                   "source": source, "recomputed": rec, "recomputed_se": rec_se,
                   "note": "; ".join(n for n in notes if n)}
