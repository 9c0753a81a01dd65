"""Leaderboard: runs x tasks with intervals, macro averages, tiers and rank intervals.

``leaderboard`` is a pipeline of named stages: read the runs, cells and protocols
(``board_read``) -> the metric of each task -> intervals (``board_intervals``, with
``board_cells`` for the item-level methods) -> metric info, direction and order
(``board_info``) -> rank intervals and tiers (``tiers``) -> macro averages
(``board_average``) -> group rows (``board_groups``) -> the result with its notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore.errors import AnalysisError
from evalcore.analysis.groups import task_groups
from evalcore.analysis.tiers import (compared_runs, in_board_order, rank_table,
                                     tier_table)
from evalcore.analysis.tiers import rank_intervals  # noqa: F401  (public, re-exported)
from evalcore.analysis.board_average import macro_averages
from evalcore.analysis.board_groups import group_cells, group_tree
from evalcore.analysis.board_info import (bounds_of, board_metric_infos,
                                          clip_groups_to_metric_range, clip_to_metric_range,
                                          declared_groups)
from evalcore.analysis.board_intervals import (ItemCells, finish_clustered, item_level_cells,
                                               runs_to_pull, shown_cell_stats,
                                               with_audit_flags, with_chance, with_reported)
from evalcore.analysis.board_read import BoardRead, board_metrics, read_board
from evalcore.analysis._plumbing import one_version
from evalcore.analysis._common import (
    AVERAGE_COLUMNS,
    CELL_COLUMNS,
    GROUP_COLUMNS,
    METHODS,
    RANK_COLUMNS,
    TASK_NOTE_COLUMNS,
    TIER_COLUMNS,
    check_confidence,
    empty_frame,
)

# ---------------------------------------------------------------------------------------
# leaderboard
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaderboard:
    """Runs x tasks with score, interval and method.

    cells columns: run_id, run, task, metric, n, score, se, low, high, method,
        binary (all scores 0/1), chance (float|NaN), contains_chance (bool),
        reported (harness value|NaN), reported_stderr (NaN if none), audit_flag (str|None),
        has_items (bool; False = summary-only run, interval from reported stderr if any)
    averages columns (``analysis.board_average``): run_id, run, n_tasks (tasks averaged),
        n_units (units averaged: a task group counts once), score, se, low, high, kind
        ("macro"), tasks (comma list of the tasks averaged), left_out (the run's tasks
        left out for want of a score or a standard error, with the reason; "" when none)
    tiers columns: run_id, run, task ("__average__" for the macro average), best_run,
        diff_vs_best, p_raw, p_holm, indistinguishable_from_best (bool), n_shared
    ranks columns: run_id, run, task, rank, rank_low, rank_high  (paired bootstrap over
        shared items; same resampled items for every run)
    notes: board-level caveats, one line each (method fallbacks, what the macro average
        leaves out); per-task caveats are in ``task_notes``
    task_notes columns: task, kind, note. Kinds: "metric" (which metric is shown and
        why), "direction" (no ranking: direction unknown or a target value), "chance",
        "reported" (summary-only runs), "ranks", "average" (left out of the macro average)
    metrics_by_task: the metric shown for each task.
    metric_info: task -> ``evalcore.metrics.MetricInfo`` of the metric shown (direction,
        range, source of that knowledge).
    groups: outermost group -> its leaf tasks on the board (``analysis.groups.task_groups``;
        the macro average counts each once).
    group_cells columns (``analysis.board_groups.group_cells``): run_id, run, group, parent
        (the enclosing group, "" at the top), depth, metric, n_tasks (leaf subtasks of the
        run on the group's metric), n_tasks_group (leaf subtasks of the group), n (items),
        score, se, low, high (the value shown), source ("recomputed" from the subtasks' item
        scores, "harness" = the group value the harness reported, "recomputed from reported"
        subtask values when the harness reported none, "incomplete"), reported,
        reported_stderr, recomputed, recomputed_se, weighting ("size" or "equal"),
        weighting_note (how the weighting was found), missing (comma list of the leaf
        subtasks the run lacks or has on another metric), note (why a value is missing).
        Every group of the board has rows, nested ones included (mmlu and mmlu_humanities).
    group_tree: group -> its direct subtasks (subgroups and tasks), for every group with rows.
    metric_choices: task -> ``evalcore.metrics.MetricChoice`` (the default metric's choice
        and reason; empty when a metric was forced).

    Direction: cells are sorted best first within a task (lowest first when lower is
    better); tiers and rank intervals use the direction and are not computed for tasks whose
    metric has no direction (unknown, or best at a target value such as CrowS-Pairs
    ``pct_stereotype``). The macro average combines only tasks whose metric is
    higher-is-better on [0, 1] (``MetricInfo.averageable``); the others are named in
    ``task_notes`` (kind "average") with the reason.

    ``se`` is the CLT standard error (sd ddof=1 / sqrt(n), the harness convention) for the
    closed-form methods, the cluster-robust SE for "clustered", the bootstrap standard
    deviation for "bootstrap" and the reported stderr for summary-only cells. ``method`` is
    the method actually used for the cell (a binary-only method asked for a continuous score
    falls back to "clt", said in ``notes``).
    """

    method: str
    confidence: float
    metric: str | None
    cells: pd.DataFrame
    averages: pd.DataFrame
    tiers: pd.DataFrame
    ranks: pd.DataFrame
    notes: tuple[str, ...] = ()
    metrics_by_task: dict = field(default_factory=dict)
    task_notes: pd.DataFrame = field(default_factory=lambda: empty_frame(TASK_NOTE_COLUMNS))
    metric_info: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    group_cells: pd.DataFrame = field(default_factory=lambda: empty_frame(GROUP_COLUMNS))
    group_tree: dict = field(default_factory=dict)
    metric_choices: dict = field(default_factory=dict)


def leaderboard(store, *, task: str | None = None, metric: str | None = None,
                method: str = "wilson", confidence: float = 0.95,
                runs: list[str | int] | None = None, n_resamples: int = 2000,
                seed: int = 0, include_tiers: bool = True,
                include_ranks: bool = True, include_audit: bool = True,
                rank_tasks: list[str] | None = None) -> Leaderboard:
    """Scores with intervals for every run x task.

    Parameters
    ----------
    task, metric : restrict to one task (or to a harness group's subtasks: ``task`` may
        name a group such as ``mmlu_humanities``) / force one metric (default metric per
        task: ``metric_choice.task_metrics``, the task's primary metric when a run shown has
        it, else the default rule among the runs' metrics, with the reason in the notes).
    method : one of ``METHODS``. Closed-form methods (wilson, clopper-pearson, bayes, clt)
        use ``store.cell_stats`` only (n, sum, sum of squares per cell, computed in SQL);
        bootstrap and clustered pull item means. Binary-only methods on continuous scores
        fall back to CLT; "clustered" without a cluster key falls back to CLT (both noted).
    include_tiers, include_ranks : compute the paired tiers / rank intervals (these need
        item-level data; pages may ask for them lazily). Both work on the tasks' items x runs
        matrices, pulled in one ``store.item_matrices`` query (``analysis.tiers``). Rank
        intervals bootstrap each task's matrix (~50 ms per task of 50 runs x 2,000 items):
        ``rank_tasks`` limits them to the tasks named (None: every task; names not on the
        board are ignored).
    include_audit : fill ``audit_flag`` from ``store.audit`` (False leaves it None).

    Summary-only runs (results JSON without items) are shown from the reported value with
    interval value +- z * reported stderr (NaN when no stderr) and ``has_items=False``.
    The macro average per run is mean_t(score_t) with SE = sqrt(sum_t SE_t^2) / k over the
    k tasks the run has (``stats.aggregate_tasks`` convention, METHODS.md), except that a
    task group counts once, as the mean of its tasks (``board_average.macro_averages``).
    """
    with one_version(store):        # the small-table memos checked against one version
        return _leaderboard(store, task=task, metric=metric, method=method,
                            confidence=confidence, runs=runs, n_resamples=n_resamples,
                            seed=seed, include_tiers=include_tiers,
                            include_ranks=include_ranks, include_audit=include_audit,
                            rank_tasks=rank_tasks)



def _leaderboard(store, *, task, metric, method, confidence, runs, n_resamples, seed,
                 include_tiers, include_ranks, include_audit, rank_tasks) -> Leaderboard:
    """``leaderboard``'s stages (inside one ``store.one_version()`` block)."""
    if method not in METHODS:
        raise AnalysisError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    check_confidence(confidence)
    notes: list[str] = []
    tnotes: list[tuple[str, str, str]] = []   # (task, kind, note)
    board = read_board(store, runs=runs, task=task, metric=metric, include_audit=include_audit)
    if board is None:
        return Leaderboard(method, confidence, metric, empty_frame(CELL_COLUMNS),
                           empty_frame(AVERAGE_COLUMNS), empty_frame(TIER_COLUMNS), empty_frame(RANK_COLUMNS),
                           ("The store is empty: ingest some results first.",), {})
    # metric per task: one decision for every surface (``metric_choice``)
    metrics_by_task, choices = board_metrics(store, board, metric, task, notes, tnotes)
    # intervals: item-level cells, then the reported values and summary-only cells
    cs = shown_cell_stats(board.cells_job.result(), metrics_by_task)
    wanted = runs_to_pull(cs, metrics_by_task, include_tiers, include_ranks, rank_tasks)
    items = item_level_cells(store, cs, board.names, metrics_by_task, method, confidence,
                             n_resamples, seed, wanted, notes)
    cells = with_reported(items.cells, board.summaries, board.names, metrics_by_task,
                          confidence, notes, tnotes)
    cells = with_audit_flags(cells, board.audit_job)
    # direction and scale of each task's metric, and the cells best first
    info = _metric_info(store, cells, board, metrics_by_task, items, wanted)
    cells, before_sort, direction_notes = _in_direction_order(cells, info)
    declared = board.scope.tree if board.scope is not None else declared_groups(board.protocols)
    groups = task_groups(list(dict.fromkeys(cells["task"].astype(str).tolist())), declared)
    tree = group_tree(groups, declared)
    # rank intervals and the tiers' matrices, from the matrices read meanwhile
    pulled = items.matrices.result()
    rank_notes: list[tuple[str, str, str]] = []     # put after the average's notes, below
    ranks = _board_ranks(cells, pulled, board, metrics_by_task, info, confidence, n_resamples,
                         seed, rank_tasks, rank_notes) if include_ranks else empty_frame(RANK_COLUMNS)
    if items.clustered is not None:
        finish_clustered(cells, items, before_sort, notes)
    notes.extend(clip_to_metric_range(cells, info))
    with_chance(cells, board.tasks, tnotes)
    tnotes.extend(direction_notes)
    cells = cells[list(CELL_COLUMNS)]
    averages = macro_averages(cells, confidence, notes, info, tnotes, groups)
    tnotes.extend(rank_notes)
    tiers = empty_frame(TIER_COLUMNS) if not include_tiers else \
        tier_table(store, cells, averages, metrics_by_task, board.names, confidence,
                   _tier_matrices(cells, pulled, metrics_by_task), info, groups,
                   codes=getattr(pulled, "codes", None))
    gcells = group_cells(cells, groups, tree, board.summaries_all, metrics_by_task, confidence,
                         declared)
    notes.extend(clip_groups_to_metric_range(gcells, tree, metrics_by_task, info))
    task_notes = pd.DataFrame(tnotes, columns=list(TASK_NOTE_COLUMNS)) if tnotes else \
        empty_frame(TASK_NOTE_COLUMNS)
    return Leaderboard(method, confidence, metric, cells, averages, tiers, ranks,
                       tuple(notes), metrics_by_task, task_notes, info, groups, gcells,
                       tree, choices)


def _metric_info(store, cells: pd.DataFrame, board: BoardRead, metrics_by_task: dict[str, str],
                 items: ItemCells, wanted: dict[str, list[int]]) -> dict[str, mx.MetricInfo]:
    """task -> MetricInfo of the metric shown (``board_info.board_metric_infos``), computed
    while the matrices are read: their extremes serve the credit check where it needs them
    (then waited for); a task without one asks SQL."""
    bounds = {t: (lambda t=t: bounds_of(items.matrices.result().get(t))) for t in wanted}
    return board_metric_infos(store, cells, metrics_by_task, board.protocols, board.formats,
                              bounds)


def _in_direction_order(cells: pd.DataFrame, info: dict[str, mx.MetricInfo]
                        ) -> tuple[pd.DataFrame, np.ndarray, list[tuple[str, str, str]]]:
    """(the cells with their ``direction``, sorted best first within a task (lowest first
    when lower is better), each row's position before the sort, the task notes (kind
    "direction") of the tasks whose metric ranks nothing)."""
    cells["direction"] = [info[str(t)].direction if str(t) in info else mx.UNKNOWN
                          for t in cells["task"].tolist()]
    board_tasks = set(cells["task"].tolist())
    direction_notes = [(t, "direction", f"{i.metric}: {i.label} ({i.source}); runs are not "
                        f"ranked, tiered or called best on this task")
                       for t, i in sorted(info.items()) if t in board_tasks and not i.rankable]
    sign = np.where(cells["direction"].to_numpy() == mx.LOWER, 1.0, -1.0)
    cells = cells.assign(_key=sign * cells["score"].to_numpy(dtype=float))
    cells = cells.sort_values(["task", "_key"], kind="stable")
    before_sort = cells.index.to_numpy()
    return cells.reset_index(drop=True), before_sort, direction_notes


def _board_ranks(cells: pd.DataFrame, pulled: dict, board: BoardRead,
                 metrics_by_task: dict[str, str], info: dict[str, mx.MetricInfo],
                 confidence: float, n_resamples: int, seed: int, rank_tasks: list[str] | None,
                 rank_notes: list[tuple[str, str, str]]) -> pd.DataFrame:
    """Rank intervals of the tasks of ``rank_tasks`` (None: every task) whose metric has a
    direction (``tiers.rank_table``), the matrices' columns in the board's order."""
    compared = compared_runs(cells, metrics_by_task)
    ranked = pulled if rank_tasks is None else \
        {t: m for t, m in pulled.items() if t in {str(x) for x in rank_tasks}}
    return rank_table(in_board_order(ranked, compared), board.names, confidence, n_resamples,
                      seed, rank_notes,
                      lower={t for t, i in info.items() if i.direction == mx.LOWER},
                      skip={t for t, i in info.items() if not i.rankable})


def _tier_matrices(cells: pd.DataFrame, pulled: dict, metrics_by_task: dict[str, str]) -> dict:
    """The pulled matrices as the tiers take them: runs are looked up by id, so 0/1 matrices
    stay in ascending id order (their paired sums are whole numbers, exact in any order)
    and the others take the board's order (float sums follow the column order)."""
    compared = compared_runs(cells, metrics_by_task)
    with_items = cells["has_items"].astype(bool)
    whole = set(cells.loc[with_items, "task"].tolist()) - set(
        cells.loc[with_items & ~cells["binary"].astype(bool), "task"].tolist())
    mats = {t: (r.tolist(), x) for t, (r, x) in pulled.items() if t in compared and t in whole}
    mats |= in_board_order({t: m for t, m in pulled.items() if t not in whole}, compared)
    return mats
