"""The leaderboard's first stages: what the store holds for the runs asked (runs, tasks,
summaries, protocols, and the cell statistics and audit flags being read in worker
threads), restricted to one task or one harness group's subtasks, and the metric shown for
each task with the notes saying why.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore.errors import AnalysisError
from evalcore.analysis._common import group_rows, resolve_runs
from evalcore.analysis._plumbing import submit
from evalcore.analysis.board_info import declared_groups, protocols_of
from evalcore.analysis.groups import leaves_of
from evalcore.analysis.metric_choice import task_metrics


@dataclass(frozen=True)
class GroupScope:
    """A board restricted to one harness group: its leaf subtasks, and the group tree below
    it (group -> direct subtasks, the group itself included)."""

    group: str
    leaves: list[str]
    tree: dict[str, list[str]]


@dataclass(frozen=True)
class BoardRead:
    """What the board is built from.

    ids, names, formats: the runs shown (in the order asked, else by id), their names and
    source formats; store_tasks: ``store.tasks()`` of the whole store; tasks: its rows of
    the runs shown, in scope; summaries_all: ``store.summaries`` of the runs shown (group
    rows included), summaries: their task rows in scope; protocols: (run id, task) -> task
    protocol; scope: the group asked for (None: a task or the whole board); cells_job,
    audit_job: ``store.cell_stats`` and ``store.audit`` being read (audit None when not
    asked for)."""

    ids: list[int]
    names: dict[int, str]
    formats: dict[int, str]
    store_tasks: pd.DataFrame
    tasks: pd.DataFrame
    summaries_all: pd.DataFrame
    summaries: pd.DataFrame
    protocols: dict[tuple[int, str], dict]
    scope: GroupScope | None
    cells_job: Future
    audit_job: Future | None


def read_board(store, *, runs: list[str | int] | None, task: str | None,
               metric: str | None, include_audit: bool) -> BoardRead | None:
    """The board's reads (None: no run to show). ``task`` may name a harness group: its
    leaf subtasks are shown, with the group and its nested groups in ``group_cells``.

    Reads that need only the runs go to worker threads (``_plumbing.submit``, under the
    version the board pinned); the summaries and protocols are waited for here, the cell
    statistics and audit flags where they are used. Raises AnalysisError when no run has
    ``task``."""
    run_table = store.runs()
    names = {int(r): str(n) for r, n in zip(run_table["run_id"], run_table["name"])}
    if runs is not None:
        ids = list(dict.fromkeys(resolve_runs(store, runs, run_table)))
    else:
        ids = [int(r) for r in run_table["run_id"]]
    if not ids:
        return None
    store_tasks = store.tasks()
    tasks_df = store_tasks[store_tasks["run_id"].astype(int).isin(ids)].reset_index(drop=True)
    scope = group_scope(store, ids, tasks_df, task) if task is not None else None
    read_task = None if scope is not None else task
    audit_job = None if not include_audit else \
        submit(store, store.audit, ids) if read_task is None else \
        submit(store, store.audit, ids, task=read_task)
    cells_job = submit(store, store.cell_stats, ids, task=read_task, metric=metric)
    summ_job = submit(store, store.summaries, ids)
    # a one-task board needs that task's protocols only (no group can form from one task)
    protocols_job = submit(store, protocols_of, store, ids, read_task)
    summ_all = summ_job.result()
    summ = summ_all
    if len(summ):
        summ = summ[~summ["is_group"].fillna(False).astype(bool)]
    protocols = protocols_job.result()
    if scope is not None:
        tasks_df = tasks_df[tasks_df["task"].isin(scope.leaves)]
        summ = summ[summ["task"].isin(scope.leaves)]
    elif task is not None:
        tasks_df = tasks_df[tasks_df["task"] == task]
        summ = summ[summ["task"] == task]
        if tasks_df.empty and summ.empty:
            raise AnalysisError(f"no run has task {task!r}")
    formats = dict(zip(run_table["run_id"].astype(int), run_table["source_format"].astype(str)))
    return BoardRead(ids, names, formats, store_tasks, tasks_df, summ_all, summ, protocols,
                     scope, cells_job, audit_job)


def group_scope(store, ids: list[int], tasks_df: pd.DataFrame, task: str) -> GroupScope | None:
    """The scope of ``task`` when it is a harness group (an ``is_group`` task protocol with
    subtasks in a run shown), else None. Nested groups are expanded to their leaves."""
    rows = tasks_df[tasks_df["task"].astype(str) == task]
    if len(rows) and not group_rows(rows).all():
        return None                        # a task with scores of its own
    declared = declared_groups(protocols_of(store, ids))
    if task not in declared:
        return None
    tree: dict[str, list[str]] = {}
    todo = [task]
    while todo and len(tree) < 10_000:
        g = todo.pop()
        if g in tree:
            continue
        tree[g] = list(declared[g])
        todo.extend(s for s in declared[g] if s in declared)
    leaves = leaves_of(task, tree)
    return GroupScope(task, leaves, tree)


def shown(df: pd.DataFrame, metrics_by_task: dict[str, str]) -> np.ndarray:
    """Which rows of ``df`` (columns task, metric) are of the metric shown for their task."""
    return np.array([metrics_by_task.get(t) == m for t, m in
                     zip(df["task"].tolist(), df["metric"].tolist())], dtype=bool)


# ---------------------------------------------------------------------------------------
# the metric of each task
# ---------------------------------------------------------------------------------------

def board_metrics(store, board: BoardRead, metric: str | None, task: str | None,
                  notes: list[str], tnotes: list[tuple[str, str, str]]
                  ) -> tuple[dict[str, str], dict[str, mx.MetricChoice]]:
    """The metric of each task on the board and the notes saying why.

    Default: ``metric_choice.task_metrics`` (need "any": the task's primary metric when a
    run shown has it, else the default rule among the metrics the runs shown have); a task
    note (kind "metric") gives the choice and the other metrics available, and one (kind
    "missing") names every run that has the task but not the metric shown, with the metrics
    it has. ``metric`` forces one metric: tasks without it are named in ``notes``.
    """
    avail = _available_metrics(board.tasks, board.summaries)
    choices: dict[str, mx.MetricChoice] = {}
    if metric is not None:
        metrics_by_task = _forced_metric(avail, metric, task, notes)
    else:
        choices = task_metrics(store, board.ids, sorted(avail), need="any", names=board.names,
                               store_tasks=board.store_tasks)
        metrics_by_task = _chosen_metrics(avail, choices, tnotes)
    _missing_notes(board, avail, metrics_by_task, notes, tnotes)
    return metrics_by_task, choices


def _available_metrics(tasks_df: pd.DataFrame, summ: pd.DataFrame) -> dict[str, set[str]]:
    """task -> the metrics the runs shown have on it (with item scores, or reported)."""
    item_rows = tasks_df[tasks_df["has_items"].fillna(True).astype(bool)] if len(tasks_df) \
        else tasks_df
    avail: dict[str, set[str]] = {}
    for t, m in zip(item_rows["task"].tolist(), item_rows["metric"].tolist()):
        avail.setdefault(str(t), set()).add(str(m))
    for t, m in zip(summ["task"].tolist(), summ["metric"].tolist()):
        avail.setdefault(str(t), set()).add(str(m))
    return avail


def _forced_metric(avail: dict[str, set[str]], metric: str, task: str | None,
                   notes: list[str]) -> dict[str, str]:
    """``metric`` on every task that has it; the others are named in ``notes`` (an error
    when the one task asked for lacks it, or when no task has it)."""
    metrics_by_task: dict[str, str] = {}
    for t in sorted(avail):
        if metric in avail[t]:
            metrics_by_task[t] = metric
        elif task is not None and len(avail) == 1:
            raise AnalysisError(f"task {t!r} has no metric {metric!r}; it has: "
                                f"{', '.join(sorted(avail[t]))}")
    if not metrics_by_task:
        raise AnalysisError(f"no task has metric {metric!r}")
    skipped = sorted(set(avail) - set(metrics_by_task))
    if skipped:
        notes.append(f"tasks without metric {metric!r} are not shown: {', '.join(skipped)}")
    return metrics_by_task


def _chosen_metrics(avail: dict[str, set[str]], choices: dict[str, mx.MetricChoice],
                    tnotes: list[tuple[str, str, str]]) -> dict[str, str]:
    """The default metric of each task, with a task note when another was available or the
    choice fell back."""
    metrics_by_task: dict[str, str] = {}
    for t in sorted(avail):
        c = choices[t]
        metrics_by_task[t] = str(c.metric)
        others = sorted(avail[t] - {c.metric})
        if others or c.fallback_from is not None:
            tnotes.append((t, "metric", f"showing metric {c.reason}"
                           + (f"; also available: {', '.join(others)}" if others else "")))
    return metrics_by_task


def _missing_notes(board: BoardRead, avail: dict[str, set[str]],
                   metrics_by_task: dict[str, str], notes: list[str],
                   tnotes: list[tuple[str, str, str]]) -> None:
    """A task note (kind "missing") per task naming the runs that have the task but not the
    metric shown, and one board note counting those cells."""
    has: dict[str, dict[int, set[str]]] = {}       # task -> run -> its metrics
    st_ = board.store_tasks
    rows = st_[st_["run_id"].astype(int).isin(board.ids)
               & st_["task"].astype(str).isin(list(avail))]
    for r, t, m, g in zip(rows["run_id"].astype(int).tolist(), rows["task"].astype(str).tolist(),
                          rows["metric"].astype(str).tolist(), group_rows(rows).tolist()):
        if not g:
            has.setdefault(t, {}).setdefault(r, set()).add(m)
    lacking = 0
    for t in sorted(metrics_by_task):
        m = metrics_by_task[t]
        absent = [(r, sorted(ms)) for r, ms in has.get(t, {}).items() if m not in ms]
        if absent:
            lacking += len(absent)
            tnotes.append((t, "missing", f"not shown on this task ({len(absent)} run(s) without "
                           f"{m!r}): " + "; ".join(f"{board.names.get(r, r)} (has {', '.join(ms)})"
                                                     for r, ms in absent)))
    if lacking:
        notes.append(f"{lacking} run x task cell(s) are not shown because the run lacks the "
                     f"task's metric; each is named in the task notes (kind 'missing')")
