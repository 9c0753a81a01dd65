"""The leaderboard's macro average per run, with every task and run it leaves out named.

Per run, the mean over the tasks whose metric is higher-is-better on [0, 1]
(``MetricInfo.averageable``). A task group (``groups``, from ``task_groups``: MMLU's
subjects, BBH's subtasks) counts once: its tasks share one unit's weight
(``groups.average_weights``), so the average is the mean over units of (the group's mean
over its tasks, or an ungrouped task's score), SE = sqrt(sum_t w_t^2 SE_t^2) / sum_t w_t
(``stats.aggregate_tasks``, tasks as independent item sets, METHODS.md).

What is left out is said where it is left out: tasks whose metric cannot be averaged (a task
note and a board note with the count), and, per run, tasks without a score or a standard
error (the row's ``left_out`` column); a run none of whose tasks can enter is named in the
notes instead of vanishing from the table. Counts say what was averaged: ``n_tasks`` tasks
as ``n_units`` units.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore import stats as st
from evalcore.analysis._common import AVERAGE_COLUMNS, empty_frame, short_list
from evalcore.analysis.groups import average_weights


def units_of(tasks: list[str], groups: dict[str, list[str]]) -> int:
    """How many units ``tasks`` form when each task group counts once."""
    unit_of = {str(t): str(g) for g, members in groups.items() for t in members}
    return len({unit_of.get(t, "task:" + t) for t in tasks})


def _left_out_tasks(all_tasks: list[str], info: dict[str, mx.MetricInfo], notes: list[str],
                    tnotes: list[tuple[str, str, str]]) -> dict[str, str]:
    """Tasks whose metric cannot be averaged, with the reason (noted per task and counted)."""
    left_out = {t: str(info[t].why_not_averaged()) for t in all_tasks
                if t in info and not info[t].averageable}
    for t, why in sorted(left_out.items()):
        tnotes.append((t, "average", f"left out of the macro average: {info[t].metric} "
                       f"({why})"))
    if left_out:
        reasons: dict[str, int] = {}
        for why in left_out.values():
            reasons[why] = reasons.get(why, 0) + 1
        notes.append(f"macro average over the tasks with a higher-is-better metric on "
                     f"[0, 1]; {len(left_out)} of {len(all_tasks)} task(s) left out ("
                     + "; ".join(f"{why}: {k}" for why, k in sorted(reasons.items()))
                     + "; see the task notes)")
    return left_out


def _run_rows(cells: pd.DataFrame, groups: dict[str, list[str]], confidence: float
              ) -> tuple[list[dict], dict[str, list[str]]]:
    """One average row per run that has a usable task, and run -> what it leaves out (tasks
    without a score or a standard error, with the reason)."""
    task_col = cells["task"].astype(str).to_numpy(dtype=object)
    score_col = cells["score"].to_numpy(dtype=float)
    se_col = cells["se"].to_numpy(dtype=float)
    run_col = cells["run_id"].to_numpy(dtype=np.int64)
    name_col = cells["run"].astype(str).tolist()
    first: dict[int, list[int]] = {}
    for i, rid in enumerate(run_col.tolist()):      # runs in order of first appearance
        first.setdefault(rid, []).append(i)
    rows: list[dict] = []
    dropped: dict[str, list[str]] = {}
    weights_of: dict[tuple[str, ...], list[float]] = {}        # runs share task sets
    for rid, idx in first.items():
        idx = np.asarray(idx)[np.argsort(task_col[idx], kind="stable")]   # by task
        ok = np.isfinite(score_col[idx]) & np.isfinite(se_col[idx])
        out = [f"{task_col[i]} ({'no score' if not np.isfinite(score_col[i]) else 'no stderr'})"
               for i in idx[~ok]]
        name = name_col[idx[0]]
        if out:
            dropped[name] = out
        idx = idx[ok]
        if not idx.size:
            continue
        run_tasks = tuple(task_col[idx].tolist())
        if run_tasks not in weights_of:
            weights_of[run_tasks] = average_weights(run_tasks, groups)
        agg = st.aggregate_tasks(score_col[idx], se_col[idx], kind="macro",
                                 confidence=confidence, weights=weights_of[run_tasks])
        rows.append({"run_id": int(rid), "run": name, "n_tasks": len(idx),
                     "n_units": units_of(list(run_tasks), groups),
                     "score": float(agg.estimate), "se": float(agg.se), "low": float(agg.low),
                     "high": float(agg.high), "kind": "macro", "tasks": ",".join(run_tasks),
                     "left_out": "; ".join(out)})
    return rows, dropped


def macro_averages(cells: pd.DataFrame, confidence: float, notes: list[str],
                   info: dict[str, mx.MetricInfo], tnotes: list[tuple[str, str, str]],
                   groups: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """The macro average of each run (columns ``AVERAGE_COLUMNS``; module docstring), best
    first. Empty for a board of fewer than 2 tasks (one task is not an average), fewer than
    2 averageable tasks, or tasks that form one unit (one group's subtasks: the group's own
    value is the aggregate), each said in ``notes``."""
    groups = groups or {}
    all_tasks = sorted(set(cells["task"].astype(str).tolist()))
    if len(all_tasks) < 2:
        return empty_frame(AVERAGE_COLUMNS)
    left_out = _left_out_tasks(all_tasks, info, notes, tnotes)
    cells = cells[~cells["task"].isin(list(left_out))]
    if len(set(cells["task"].tolist())) < 2:
        if left_out:
            notes.append("no macro average: fewer than 2 tasks have a higher-is-better "
                         "metric on [0, 1]")
        return empty_frame(AVERAGE_COLUMNS)
    board_tasks = sorted(set(cells["task"].astype(str).tolist()))
    if units_of(board_tasks, groups) < 2:
        one = next((g for g, m in groups.items() if set(board_tasks) <= set(m)), None)
        notes.append("no macro average: the tasks shown form one unit"
                     + (f", the group {one} (its value is in the group rows)" if one else ""))
        return empty_frame(AVERAGE_COLUMNS)
    rows, dropped = _run_rows(cells, groups, confidence)
    averaged = sorted({t for r in rows for t in r["tasks"].split(",")})
    grouped = {g: [t for t in members if t in set(averaged)] for g, members in groups.items()}
    grouped = {g: m for g, m in grouped.items() if len(m) >= 2}
    if grouped:
        notes.append(f"macro average over {len(averaged)} tasks as "
                     f"{units_of(averaged, groups)} units: each task group counts once, as "
                     f"the mean of its tasks ("
                     + "; ".join(f"{g}: {len(m)} tasks" for g, m in sorted(grouped.items()))
                     + "), beside each ungrouped task")
    no_row = [r for r in dropped if r not in {x["run"] for x in rows}]
    if no_row:
        notes.append(f"no macro average for {len(no_row)} run(s), none of whose averageable "
                     f"tasks has a score with a standard error: "
                     + "; ".join(f"{r} ({short_list(dropped[r], 4)})" for r in no_row))
    partial = [r for r in dropped if r not in no_row]
    if partial:
        notes.append(f"{len(partial)} run(s) are averaged without some of their tasks (no "
                     f"score or no standard error; the left_out column names them): "
                     + short_list(partial, 6))
    if len({r["tasks"] for r in rows}) > 1:
        notes.append("macro averages are over different task sets (see the tasks column); "
                     "compare averages only between runs with the same tasks")
    if not rows:
        return empty_frame(AVERAGE_COLUMNS)
    return pd.DataFrame(rows, columns=list(AVERAGE_COLUMNS)).sort_values(
        "score", ascending=False, kind="stable").reset_index(drop=True)
