"""Leaderboard: runs x tasks with intervals, macro averages, tiers and rank intervals."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis.groups import leaves_of, task_groups
from evalcore.analysis.tiers import (_compared_runs, _in_board_order, _item_mean_bounds,
                                     _pull_matrices, _ranks, _tiers)
from evalcore.analysis.tiers import rank_intervals  # noqa: F401  (public, re-exported)
from evalcore.analysis.board_average import macro_averages
from evalcore.analysis.board_groups import group_cells, group_tree
from evalcore.analysis.metric_choice import task_metrics
from evalcore.analysis.board_cells import (_bootstrap_cells, _clustered_columns,
                                           _continuous_runs, _pull_matrices_and_items, _submit)
from evalcore.analysis._common import (
    AVERAGE_COLUMNS,
    BINARY_ONLY_METHODS,
    CELL_COLUMNS,
    GROUP_COLUMNS,
    METHODS,
    METHOD_LABELS,
    RANK_COLUMNS,
    TASK_NOTE_COLUMNS,
    TIER_COLUMNS,
    _chance,
    _check_confidence,
    _empty,
    _fnum,
    _proportion_bounds,
    _short,
    group_rows,
    one_version,
    resolve_runs,
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
    task_notes: pd.DataFrame = field(default_factory=lambda: _empty(TASK_NOTE_COLUMNS))
    metric_info: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    group_cells: pd.DataFrame = field(default_factory=lambda: _empty(GROUP_COLUMNS))
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
    task group counts once, as the mean of its tasks (``_macro_averages``).
    """
    with one_version(store):        # the small-table memos checked against one version
        return _leaderboard(store, task=task, metric=metric, method=method,
                            confidence=confidence, runs=runs, n_resamples=n_resamples,
                            seed=seed, include_tiers=include_tiers,
                            include_ranks=include_ranks, include_audit=include_audit,
                            rank_tasks=rank_tasks)


def _leaderboard(store, *, task, metric, method, confidence, runs, n_resamples, seed,
                 include_tiers, include_ranks, include_audit, rank_tasks) -> Leaderboard:
    """``leaderboard``'s body (inside one ``store.one_version()`` block)."""
    if method not in METHODS:
        raise AnalysisError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    _check_confidence(confidence)
    notes: list[str] = []
    tnotes: list[tuple[str, str, str]] = []   # (task, kind, note)
    run_table = store.runs()
    names = {int(r): str(n) for r, n in zip(run_table["run_id"], run_table["name"])}
    if runs is not None:
        ids = list(dict.fromkeys(resolve_runs(store, runs, run_table)))
    else:
        ids = [int(r) for r in run_table["run_id"]]
    if not ids:
        return Leaderboard(method, confidence, metric, _empty(CELL_COLUMNS),
                           _empty(AVERAGE_COLUMNS), _empty(TIER_COLUMNS), _empty(RANK_COLUMNS),
                           ("The store is empty: ingest some results first.",), {})

    # a group's board (``task`` names a harness group, e.g. mmlu_humanities): its leaf
    # subtasks, with the group and its nested groups in ``group_cells``
    store_tasks = store.tasks()
    tasks_df = store_tasks[store_tasks["run_id"].astype(int).isin(ids)].reset_index(drop=True)
    scope = _group_scope(store, ids, tasks_df, task) if task is not None else None
    read_task = None if scope is not None else task

    # reads that need only the runs go to worker threads now (each its own cursor; the
    # store's reads release the GIL) and are collected where used
    # (under the version this call pinned, ``board_cells._submit``)
    audit_job = None if not include_audit else \
        _submit(store, store.audit, ids) if read_task is None else \
        _submit(store, store.audit, ids, task=read_task)
    cells_job = _submit(store, store.cell_stats, ids, task=read_task, metric=metric)
    summ_job = _submit(store, store.summaries, ids)
    # a one-task board needs that task's protocols only (no group can form from one task)
    protocols_job = _submit(store, _protocols, store, ids, read_task)
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

    # metric per task: one decision for every surface (``metric_choice``) -------------
    item_rows = tasks_df[tasks_df["has_items"].fillna(True).astype(bool)] if len(tasks_df) else tasks_df
    avail: dict[str, set[str]] = {}
    for t, m in zip(item_rows["task"].tolist(), item_rows["metric"].tolist()):
        avail.setdefault(str(t), set()).add(str(m))
    for t, m in zip(summ["task"].tolist(), summ["metric"].tolist()):
        avail.setdefault(str(t), set()).add(str(m))
    metrics_by_task, choices = _board_metrics(store, ids, names, avail, metric, task,
                                              store_tasks, notes, tnotes)

    # item-level cells from SQL sufficient statistics --------------------------------
    cs = cells_job.result()
    cs = cs[_shown(cs, metrics_by_task) & (cs["n"].to_numpy(dtype=float) > 0)].reset_index(
        drop=True)
    cs["run_id"] = cs["run_id"].astype(int)
    # every items x runs matrix the tiers and rank intervals need, one query (ascending run
    # ids; put in the board's order below), read in a worker thread while this one computes
    # the intervals and reads the rest (the runs compared are the item-level cells', known
    # now: the cells below are these rows, in this order, plus summary-only ones)
    item_cells = pd.DataFrame({"task": cs["task"].astype(str).to_numpy(),
                               "run_id": cs["run_id"].to_numpy(dtype=int), "has_items": True})
    wanted = _compared_runs(item_cells, metrics_by_task) if include_tiers else \
        _compared_runs(item_cells, metrics_by_task, None if rank_tasks is None
                       else {str(t) for t in rank_tasks}) if include_ranks else {}
    # (clustered: one read serves the cluster codes and the matrices, ``_clustered_cells``)
    shared = method == "clustered" and (hasattr(store, "item_code_matrices")
                                        or hasattr(store, "item_matrices_and_codes"))
    n = cs["n"].to_numpy(dtype=float)
    ssum = cs["sum"].to_numpy(dtype=float)
    # 0/1 per-item scores: raw scores 0/1 and every item mean 0 or 1 (with K answers per
    # item the means can be fractions); for scores in [0, 1], sum m_i^2 = sum m_i exactly
    # when every m_i is 0 or 1.
    binary = (cs["binary"].fillna(False).astype(bool).to_numpy()
              & np.isclose(cs["sumsq"].to_numpy(dtype=float), ssum, rtol=0, atol=1e-9))
    # (bootstrap: the continuous cells' matrices come with the tiers' read when it covers
    # them, ``_bootstrap_cells``)
    boot_runs = _continuous_runs(cs, binary) if method == "bootstrap" else {}
    with_items = bool(boot_runs) and all(set(r) <= set(wanted.get(t, ())) for t, r in
                                         boot_runs.items())
    pulling = None
    if wanted and not shared:
        pulling = _submit(store, _pull_matrices_and_items if with_items else _pull_matrices,
                          store, wanted, metrics_by_task)
    pulled: dict = {}
    clustered = None            # the clustered cells' job (method "clustered")
    with np.errstate(invalid="ignore", divide="ignore"):
        score = ssum / n
    se = st.mean_se_from_moments(n, ssum, cs["sumsq"].to_numpy(dtype=float))
    z = st.z_value(confidence)
    low = np.full(len(cs), np.nan)
    high = np.full(len(cs), np.nan)
    used = np.array([method] * len(cs), dtype=object)

    # number of choices per task (the largest any run recorded) for the chance level
    n_choices: dict[str, float] = {}
    for t, k in zip(tasks_df["task"].tolist(), tasks_df["n_choices"].tolist()):
        k = _fnum(k)
        if np.isfinite(k):
            n_choices[str(t)] = max(n_choices.get(str(t), 0.0), k)

    if method in BINARY_ONLY_METHODS or method == "clt":
        cont = ~binary
        if cont.any() and method != "clt":
            bad = sorted(set(cs.loc[cont, "task"]))
            notes.append(f"{METHOD_LABELS[method]} needs 0/1 scores; CLT used for the "
                         f"continuous scores of: {_short(bad)}")
        rows = np.flatnonzero(binary)
        low[rows], high[rows] = _proportion_bounds(method, np.round(ssum[rows]), n[rows],
                                                   confidence)
        used[cont] = "clt"
        # the quantile score_interval("clt") uses: t_{n-1} below 30 items, else z
        q = st.mean_quantiles(confidence, n[cont], np.zeros(int(cont.sum()), dtype=bool))
        low[cont] = score[cont] - q * se[cont]
        high[cont] = score[cont] + q * se[cont]
        small = sorted(set(cs.loc[cont & (n < st.SMALL_N) & (n >= 2), "task"]))
        if small:
            notes.append(f"CLT intervals of continuous scores with fewer than {st.SMALL_N} "
                         f"items use Student's t with n - 1 df: {_short(small)}")
    elif method == "bootstrap":
        _bootstrap_cells(store, cs, metrics_by_task, binary, se, low, high, confidence,
                         n_resamples, seed, pulling if with_items else None)
        notes.append(f"bootstrap: {n_resamples} resamples of items, seed {seed}")
    else:
        # the clustered cells (their read, codes and intervals) in a worker thread while this
        # one builds the frame and merges the reported values and audit flags; the job hands
        # the matrices over (``read``) as soon as they are read, and this thread computes
        # the metric info, order and rank intervals while the job computes the intervals
        # (not the tiers: they need the macro averages, i.e. the clustered SEs); their
        # columns are filled in below, before anything reads them
        read: Future = Future()
        clustered = _submit(store, _clustered_columns, store, cs, metrics_by_task, score,
                            se.copy(), st.mean_quantiles(confidence, n, binary), confidence, wanted if shared else None, read)
        clustered_note_at = len(notes)

    cells = pd.DataFrame({
        "run_id": cs["run_id"].to_numpy(dtype=int),
        "run": [names.get(int(r), str(r)) for r in cs["run_id"].tolist()],
        "task": cs["task"].astype(str).to_numpy(),
        "metric": cs["metric"].astype(str).to_numpy(),
        "n": n.astype(int),
        "score": score, "se": se, "low": low, "high": high,
        "method": used, "binary": binary, "has_items": True,
    })

    # reported numbers, summary-only cells ------------------------------------------------
    rep = summ[_shown(summ, metrics_by_task)][
        ["run_id", "task", "metric", "value", "stderr", "n"]].reset_index(drop=True)
    rep["run_id"] = rep["run_id"].astype(int)
    rep = rep.drop_duplicates(["run_id", "task", "metric"])
    rep = rep.rename(columns={"value": "reported", "stderr": "reported_stderr",
                              "n": "n_reported"})
    # each cell's reported value and stderr (a left join on run, task and metric: one
    # summary row per key after the drop above)
    keys = list(zip(cells["run_id"].tolist(), cells["task"].tolist(), cells["metric"].tolist()))
    rep_keys = list(zip(rep["run_id"].tolist(), rep["task"].tolist(), rep["metric"].tolist()))
    at = {k: i for i, k in enumerate(rep_keys)}
    where = np.array([at.get(k, -1) for k in keys], dtype=np.int64)
    for col in ("reported", "reported_stderr"):
        vals = rep[col].to_numpy(dtype=float)
        cells[col] = np.where(where >= 0, vals[np.maximum(where, 0)] if len(vals) else np.nan,
                              np.nan)
    have = set(keys)
    so = rep[[k not in have for k in rep_keys]]
    if len(so):
        val = so["reported"].to_numpy(dtype=float)
        rse = so["reported_stderr"].to_numpy(dtype=float)
        extra = pd.DataFrame({
            "run_id": so["run_id"].to_numpy(dtype=int),
            "run": [names.get(int(r), str(r)) for r in so["run_id"]],
            "task": so["task"].astype(str).to_numpy(),
            "metric": so["metric"].astype(str).to_numpy(),
            "n": pd.array(so["n_reported"], dtype="Int64"),
            "score": val, "se": rse, "low": val - z * rse, "high": val + z * rse,
            "method": "reported", "binary": False, "has_items": False,
            "reported": val, "reported_stderr": rse,
        })
        item_level = len(cells)
        cells = pd.concat([cells if len(cells) else None, extra], ignore_index=True)
        if not item_level:
            # nothing on the board has items: one note, not one per task
            notes.append("no run shown has item-level data: every cell is the harness-reported "
                         "value with interval value +- z * reported stderr (no paired tiers or "
                         "rank intervals)")
        else:
            for t in sorted(set(extra["task"])):
                k = int((extra["task"] == t).sum())
                tnotes.append((t, "reported", f"{k} run(s) have no item-level data; shown "
                               f"from the harness-reported value and stderr"))
        if np.isnan(rse).any():
            notes.append("summary-only cells without a reported stderr have no interval")
    cells["n"] = pd.array(cells["n"], dtype="Int64")

    # audit flags -----------------------------------------------------------------------
    # a cell's flags: the distinct flags of its summary rows, sorted, joined with "; "
    aud = audit_job.result() if audit_job is not None else None
    flags: dict[tuple[int, str, str], set[str]] = {}
    if aud is not None and len(aud):
        flagged = aud[aud["flag"].notna().to_numpy()]
        for r, t, m, f in zip(flagged["run_id"].astype(int).tolist(), flagged["task"].tolist(),
                              flagged["metric"].tolist(), flagged["flag"].tolist()):
            flags.setdefault((r, t, m), set()).add(str(f))
    cells["audit_flag"] = pd.Series(
        [("; ".join(sorted(flags[k])) if k in flags else None) for k in
         zip(cells["run_id"].tolist(), cells["task"].tolist(), cells["metric"].tolist())],
        index=cells.index, dtype=object) if flags else None

    def matrices() -> dict:
        """The pulled matrices of the tasks of ``wanted`` (waiting for their read:
        ``pulling``, or the clustered job's, which hands them over before its intervals)."""
        if pulling is not None:
            return pulling.result()[0] if with_items else pulling.result()
        if clustered is not None and shared:
            return read.result()
        return pulled

    # direction and scale of each task's metric ------------------------------------------
    # (computed while the matrices are read: their extremes serve the metric info where
    # the credit check needs them, then waited for; a task without one: SQL, ``_info``)
    info = _metric_infos(store, cells, metrics_by_task, protocols,
                         dict(zip(run_table["run_id"].astype(int),
                                  run_table["source_format"].astype(str))),
                         {t: (lambda t=t: _bounds_of(matrices().get(t))) for t in wanted})
    cells["direction"] = [info[str(t)].direction if str(t) in info else mx.UNKNOWN
                          for t in cells["task"].tolist()]
    board_tasks = set(cells["task"].tolist())
    direction_notes = [(t, "direction", f"{i.metric}: {i.label} ({i.source}); runs are not "
                        f"ranked, tiered or called best on this task")
                       for t, i in sorted(info.items()) if t in board_tasks and not i.rankable]
    sign = np.where(cells["direction"].to_numpy() == mx.LOWER, 1.0, -1.0)
    cells = cells.assign(_key=sign * cells["score"].to_numpy(dtype=float))
    cells = cells.sort_values(["task", "_key"], kind="stable")
    before_sort = cells.index.to_numpy()     # each row's position before the sort
    cells = cells.reset_index(drop=True)
    declared = scope.tree if scope is not None else _declared_groups(protocols)
    groups = task_groups(list(dict.fromkeys(cells["task"].astype(str).tolist())), declared)
    tree = group_tree(groups, declared)
    pulled = matrices()
    ranks = _empty(RANK_COLUMNS)
    # the pulled matrices serve both: rank intervals put the columns in the board's order
    # (their rows follow it); tiers look runs up by id, so 0/1 matrices stay in ascending id
    # order (their paired sums are whole numbers, exact in any order) and the others take
    # the board's order (float sums follow the column order: the same numbers as before)
    compared = _compared_runs(cells, metrics_by_task)
    rank_notes: list[tuple[str, str, str]] = []     # put after the average's notes, below
    if include_ranks:
        ranked = pulled if rank_tasks is None else \
            {t: m for t, m in pulled.items() if t in {str(x) for x in rank_tasks}}
        ranks = _ranks(_in_board_order(ranked, compared), names, confidence, n_resamples, seed,
                       rank_notes, lower={t for t, i in info.items() if i.direction == mx.LOWER},
                       skip={t for t, i in info.items() if not i.rankable})
    if include_tiers:
        whole = set(cells.loc[cells["has_items"].astype(bool), "task"].tolist()) - set(
            cells.loc[cells["has_items"].astype(bool) & ~cells["binary"].astype(bool),
                      "task"].tolist())
        mats = {t: (r.tolist(), x) for t, (r, x) in pulled.items() if t in compared and t in whole}
        mats |= _in_board_order({t: m for t, m in pulled.items() if t not in whole}, compared)
    if clustered is not None:
        # the clustered cells' columns: the rows that were cs's cells (the first len(cs)
        # rows before the sort: the merges above keep the left frame's order, summary-only
        # cells come after them), at their sorted positions
        (se_c, low_c, high_c, used_c), nocl, _ = clustered.result()
        at = np.flatnonzero(before_sort < len(cs))
        src = before_sort[at]
        for name, values in (("se", se_c), ("low", low_c), ("high", high_c)):
            cells.iloc[at, cells.columns.get_loc(name)] = values[src]
        fell_back = used_c[src] != "clustered"             # CLT: no cluster key
        cells.iloc[at[fell_back], cells.columns.get_loc("method")] = used_c[src][fell_back]
        if nocl:
            notes.insert(clustered_note_at, "no cluster key, CLT used for: " + _short(nocl))

    notes.extend(_clip_to_metric_range(cells, info))

    # chance ------------------------------------------------------------------------------
    # one level per distinct (task, metric, binary): thousands of runs share a few keys
    keys = list(zip(cells["task"].tolist(), cells["metric"].tolist(),
                    cells["binary"].tolist()))
    level = {k: _chance(n_choices.get(k[0])) if _chance_applies(k[1], k[2]) else np.nan
             for k in dict.fromkeys(keys)}
    chance = np.array([level[k] for k in keys], dtype=float)
    cells["chance"] = chance
    lo, hi = cells["low"].to_numpy(dtype=float), cells["high"].to_numpy(dtype=float)
    # stats.contains_chance on each cell; a NaN bound or level makes no claim (False)
    finite = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(chance)
    cells["contains_chance"] = finite & (lo <= chance) & (chance <= hi)
    for t in sorted(set(cells.loc[cells["contains_chance"], "task"])):
        tnotes.append((t, "chance", "some intervals contain the chance level; those scores "
                       "cannot rank anything"))
    tnotes.extend(direction_notes)
    cells = cells[list(CELL_COLUMNS)]
    averages = macro_averages(cells, confidence, notes, info, tnotes, groups)
    tnotes.extend(rank_notes)
    tiers = _empty(TIER_COLUMNS) if not include_tiers else \
        _tiers(store, cells, averages, metrics_by_task, names, confidence, mats, info, groups,
               codes=getattr(pulled, "codes", None))
    gcells = group_cells(cells, groups, tree, summ_all, metrics_by_task, confidence, declared)
    notes.extend(_clip_groups_to_metric_range(gcells, tree, metrics_by_task, info))
    task_notes = pd.DataFrame(tnotes, columns=list(TASK_NOTE_COLUMNS)) if tnotes else \
        _empty(TASK_NOTE_COLUMNS)
    return Leaderboard(method, confidence, metric, cells, averages, tiers, ranks,
                       tuple(notes), metrics_by_task, task_notes, info, groups, gcells,
                       tree, choices)


def _board_metrics(store, ids: list[int], names: dict[int, str], avail: dict[str, set[str]],
                   metric: str | None, task: str | None, store_tasks: pd.DataFrame,
                   notes: list[str], tnotes: list[tuple[str, str, str]]
                   ) -> tuple[dict[str, str], dict[str, mx.MetricChoice]]:
    """The metric of each task on the board and the notes saying why.

    Default: ``metric_choice.task_metrics`` (need "any": the task's primary metric when a
    run shown has it, else the default rule among the metrics the runs shown have); a task
    note (kind "metric") gives the choice and the other metrics available, and one (kind
    "missing") names every run that has the task but not the metric shown, with the metrics
    it has. ``metric`` forces one metric: tasks without it are named in ``notes``.
    """
    has: dict[str, dict[int, set[str]]] = {}       # task -> run -> its metrics
    rows = store_tasks[store_tasks["run_id"].astype(int).isin(ids)
                       & store_tasks["task"].astype(str).isin(list(avail))]
    for r, t, m, g in zip(rows["run_id"].astype(int).tolist(), rows["task"].astype(str).tolist(),
                          rows["metric"].astype(str).tolist(), group_rows(rows).tolist()):
        if not g:
            has.setdefault(t, {}).setdefault(r, set()).add(m)
    metrics_by_task: dict[str, str] = {}
    choices: dict[str, mx.MetricChoice] = {}
    if metric is not None:
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
    else:
        choices = task_metrics(store, ids, sorted(avail), need="any", names=names,
                               store_tasks=store_tasks)
        for t in sorted(avail):
            c = choices[t]
            metrics_by_task[t] = str(c.metric)
            others = sorted(avail[t] - {c.metric})
            if others or c.fallback_from is not None:
                tnotes.append((t, "metric", f"showing metric {c.reason}"
                               + (f"; also available: {', '.join(others)}" if others else "")))
    lacking = 0
    for t in sorted(metrics_by_task):
        m = metrics_by_task[t]
        absent = [(r, sorted(ms)) for r, ms in has.get(t, {}).items() if m not in ms]
        if absent:
            lacking += len(absent)
            tnotes.append((t, "missing", f"not shown on this task ({len(absent)} run(s) without "
                           f"{m!r}): " + "; ".join(f"{names.get(r, r)} (has {', '.join(ms)})"
                                                     for r, ms in absent)))
    if lacking:
        notes.append(f"{lacking} run x task cell(s) are not shown because the run lacks the "
                     f"task's metric; each is named in the task notes (kind 'missing')")
    return metrics_by_task, choices


@dataclass(frozen=True)
class _GroupScope:
    """A board restricted to one harness group: its leaf subtasks, and the group tree below
    it (group -> direct subtasks, the group itself included)."""

    group: str
    leaves: list[str]
    tree: dict[str, list[str]]


def _group_scope(store, ids: list[int], tasks_df: pd.DataFrame, task: str) -> _GroupScope | None:
    """The scope of ``task`` when it is a harness group (an ``is_group`` task protocol with
    subtasks in a run shown), else None. Nested groups are expanded to their leaves."""
    rows = tasks_df[tasks_df["task"].astype(str) == task]
    if len(rows) and not group_rows(rows).all():
        return None                        # a task with scores of its own
    declared = _declared_groups(_protocols(store, ids))
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
    return _GroupScope(task, leaves, tree)


def _clip_to_metric_range(cells: pd.DataFrame, info: dict[str, mx.MetricInfo]) -> list[str]:
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
             f"crossed it: {_short(cut)}"] if cut else [])


def _clip_groups_to_metric_range(gcells: pd.DataFrame, tree: dict[str, list[str]],
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
    return ([f"group intervals clipped to the metric's range: {_short(cut)}"] if cut else [])


def _shown(df: pd.DataFrame, metrics_by_task: dict[str, str]) -> np.ndarray:
    """Which rows of ``df`` (columns task, metric) are of the metric shown for their task."""
    return np.array([metrics_by_task.get(t) == m for t, m in
                     zip(df["task"].tolist(), df["metric"].tolist())], dtype=bool)


def _bounds_of(matrix: tuple[np.ndarray, np.ndarray] | None) -> dict | None:
    """``_item_mean_bounds`` of a pulled matrix (run ids, items x runs); None for none."""
    return None if matrix is None else _item_mean_bounds(*matrix)


def _protocols(store, ids: list[int], task: str | None = None) -> dict[tuple[int, str], dict]:
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


def _declared_groups(protocols: dict[tuple[int, str], dict]) -> dict[str, list[str]]:
    """group -> subtasks as the harness listed them in any run (lm_eval 0.4)."""
    out: dict[str, list[str]] = {}
    for (_, t), p in protocols.items():
        subs = p.get("subtasks") if p.get("is_group") else None
        if isinstance(subs, list) and subs and t not in out:
            out[t] = [str(x) for x in subs]
    return out


def _metric_infos(store, cells: pd.DataFrame, metrics_by_task: dict[str, str],
                  protocols: dict[tuple[int, str], dict], formats: dict[int, str],
                  bounds: dict | None = None) -> dict[str, mx.MetricInfo]:
    """task -> MetricInfo of the metric shown (``_info``) for the leaderboard's cells, tasks
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
        out[t] = _info(store, t, m, [run_l[i] for i in idx], protocols, formats,
                       binary=all(bin_l[i] for i in idx),
                       item_runs=[run_l[i] for i in idx if has_l[i]],
                       reported=[score_l[i] for i in idx if not has_l[i]],
                       bounds=(bounds or {}).get(t))
    return out


def _info(store, task: str, metric: str, run_ids: list[int],
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
    protocols = _protocols(store, ids)
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
        out[str(t)] = _info(store, str(t), str(m), sorted({r for r, _, _ in rows}) or ids,
                            protocols, formats, binary=binary,
                            item_runs=[r for r, _ in item], reported=reported)
    return out


def _chance_applies(metric: str, binary: bool) -> bool:
    """Chance is a baseline for accuracies of a multiple-choice task."""
    base = str(metric).split(",")[0].lower()
    return bool(binary) or base.startswith("acc") or base in ("exact_match", "accuracy")
