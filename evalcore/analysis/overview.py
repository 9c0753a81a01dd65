"""What the store holds, for the upload page and empty-state messages."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from evalcore.analysis._common import (
    empty_frame,
)

@dataclass(frozen=True)
class Overview:
    """What the store holds, for the upload page and empty-state messages.

    runs columns: run_id, name, model, source_format, harness, harness_version, tags,
        created_at, n_tasks, n_scores, has_items
    tasks columns: run_id, run, task, metric, n_items, k_max, has_cluster, n_choices
    audit: store.audit() (run_id, task, metric, reported, reported_stderr, stderr_raw,
        n_reported, recomputed_stderr, n_items, flag) plus the run name in ``run``
    """

    runs: pd.DataFrame
    tasks: pd.DataFrame
    audit: pd.DataFrame
    notes: tuple[str, ...] = field(default_factory=tuple)


OVERVIEW_RUN_COLUMNS = ("run_id", "name", "model", "source_format", "harness",
                        "harness_version", "tags", "created_at", "n_tasks", "n_scores",
                        "has_items")
OVERVIEW_TASK_COLUMNS = ("run_id", "run", "task", "metric", "n_items", "k_max", "has_cluster",
                         "n_choices")


def overview(store) -> Overview:
    """Runs, tasks and audit rows of the whole store, with empty-state notes."""
    runs = store.runs()
    if runs.empty:
        return Overview(empty_frame(OVERVIEW_RUN_COLUMNS), empty_frame(OVERVIEW_TASK_COLUMNS),
                        empty_frame(("run_id", "run", "task", "metric", "flag")),
                        ("The store is empty: upload results (lm_eval, inspect, HELM or a tidy "
                         "table) to begin.",))
    names = {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}
    runs = runs[[c for c in OVERVIEW_RUN_COLUMNS if c in runs.columns]].reset_index(drop=True)
    tasks = store.tasks()
    tasks = tasks.assign(run=[names.get(int(r), str(r)) for r in tasks["run_id"]])
    tasks = tasks[[c for c in OVERVIEW_TASK_COLUMNS if c in tasks.columns] +
                  [c for c in ("has_items", "binary") if c in tasks.columns]]
    audit = store.audit()
    if len(audit):
        audit = audit.assign(run=[names.get(int(r), str(r)) for r in audit["run_id"]])
    notes = []
    if len(runs) == 1:
        notes.append("Only one run in the store: upload another to compare.")
    summary_only = [str(n) for n, h in zip(runs["name"], runs["has_items"]) if not bool(h)]
    if summary_only:
        notes.append("No item-level data (results only; intervals come from the reported "
                      "stderr and paired comparisons are impossible): " + ", ".join(summary_only))
    if len(audit) and "flag" in audit:
        k = int(audit["flag"].notna().sum())
        if k:
            notes.append(f"{k} reported stderr(s) flagged by the audit")
    return Overview(runs=runs, tasks=tasks.reset_index(drop=True), audit=audit,
                    notes=tuple(notes))
