"""Which metric each task is shown on: one decision for the leaderboard, compare, tiers,
noise, items, repeats and the report.

The task's primary metric is the harness's own (``evalcore.metrics.task_primary_metric``:
lm_eval's first ``metric_list`` entry, HELM's schema main metric, the Open LLM Leaderboard's
ranked metric), decided from the task protocols of every run in the store that has the
task (in run-id order) and every metric those runs have for it. So a board of some runs, a
comparison of two and the full board name the same primary metric for a task; when the runs
asked about lack it, ``evalcore.metrics.choose_task_metric`` falls back to the default rule
among the metrics they have and says so (``MetricChoice.reason``).
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from evalcore.metrics import MetricChoice, choose_task_metric, task_primary_metric

NEEDS = ("any", "all")


def _store_tasks(store) -> pd.DataFrame:
    """``store.tasks()`` of every run (one memoized read per store version)."""
    return store.tasks()


def _protocols_by_task(store, all_ids: list[int], tasks: list[str]
                       ) -> dict[str, list[dict]]:
    """task -> the task protocols of every run that has it, in run-id order. The protocols
    are asked for all run ids in ascending order (one task's rows when one task is asked),
    as the leaderboard asks for a board of every run: one memo entry serves both."""
    asked = sorted(int(r) for r in all_ids)
    if not asked or not tasks:
        return {}
    tp = store.task_protocol_table(asked, tasks[0]) if len(tasks) == 1 else \
        store.task_protocol_table(asked)
    wanted = set(tasks)
    out: dict[str, list[tuple[int, dict]]] = {}
    for r, t, p in zip(tp["run_id"].astype(int).tolist(), tp["task"].astype(str).tolist(),
                       tp["protocol"].tolist()):
        if t in wanted and isinstance(p, dict):
            out.setdefault(t, []).append((r, p))
    return {t: [p for _, p in sorted(rows, key=lambda x: x[0])] for t, rows in out.items()}


def primary_metrics(store, tasks: Iterable[str], *, store_tasks: pd.DataFrame | None = None
                    ) -> dict[str, tuple[str | None, str]]:
    """task -> (primary metric or None, where it comes from), from every run of the store
    (``evalcore.metrics.task_primary_metric``). ``store_tasks``: ``store.tasks()`` when the
    caller holds it."""
    st = _store_tasks(store) if store_tasks is None else store_tasks
    tasks = list(dict.fromkeys(str(t) for t in tasks))
    avail: dict[str, set[str]] = {}
    for t, m in zip(st["task"].astype(str).tolist(), st["metric"].astype(str).tolist()):
        avail.setdefault(t, set()).add(m)
    ids = sorted({int(r) for r in st["run_id"].tolist()}) if len(st) else []
    protos = _protocols_by_task(store, ids, [t for t in tasks if t in avail])
    return {t: task_primary_metric(protos.get(t, ()), avail.get(t, ())) for t in tasks}


def task_metrics(store, run_ids: Iterable[int], tasks: Iterable[str] | None = None, *,
                 need: str = "any", items_only: bool = False,
                 names: dict[int, str] | None = None,
                 store_tasks: pd.DataFrame | None = None) -> dict[str, MetricChoice]:
    """task -> ``MetricChoice`` for the runs ``run_ids`` (every task they have, or ``tasks``).

    need : "any" for a board column (the primary metric when one of the runs has it; runs
        lacking it are named), "all" for a comparison (a metric every run has).
    items_only : only metrics with item scores count as available in the runs (analyses
        that need items: repeats, noise splits, item quality); the primary metric is still
        decided from every metric of the store.
    names : run id -> name for the reasons (default: the store's run names).
    Group rows (``is_group`` summaries) are tasks like any other. A task none of the runs
    has is left out of the answer.
    """
    if need not in NEEDS:
        raise ValueError(f"need must be one of {NEEDS}, got {need!r}")
    st = _store_tasks(store) if store_tasks is None else store_tasks
    ids = [int(r) for r in run_ids]
    if names is None:
        rt = store.runs()
        names = dict(zip(rt["run_id"].astype(int).tolist(), rt["name"].astype(str).tolist()))
    rows = st[st["run_id"].astype(int).isin(ids)]
    if items_only and "has_items" in rows:
        rows = rows[rows["has_items"].fillna(True).astype(bool)]
    have: dict[str, dict[int, set[str]]] = {}
    for r, t, m in zip(rows["run_id"].astype(int).tolist(), rows["task"].astype(str).tolist(),
                       rows["metric"].astype(str).tolist()):
        have.setdefault(t, {}).setdefault(r, set()).add(m)
    wanted = list(have) if tasks is None else [str(t) for t in tasks if str(t) in have]
    primaries = primary_metrics(store, wanted, store_tasks=st)
    order = {r: i for i, r in enumerate(ids)}
    out: dict[str, MetricChoice] = {}
    for t in wanted:
        by_run = sorted(have[t].items(), key=lambda x: order[x[0]])
        primary, source = primaries[t]
        out[t] = choose_task_metric(t, primary, source,
                                    {names.get(r, str(r)): ms for r, ms in by_run}, need=need)
    return out


def task_metric(store, run_ids: Iterable[int], task: str, *, need: str = "all",
                items_only: bool = False, names: dict[int, str] | None = None
                ) -> MetricChoice:
    """``task_metrics`` for one task (a ``MetricChoice`` with ``metric`` None and the reason
    when the runs do not have the task)."""
    got = task_metrics(store, run_ids, [task], need=need, items_only=items_only, names=names)
    if task in got:
        return got[task]
    primary, source = primary_metrics(store, [task]).get(task, (None, ""))
    return MetricChoice(str(task), None, primary, source, None, (),
                        f"{task}: none of the runs has it"
                        + (" with item scores" if items_only else ""))
