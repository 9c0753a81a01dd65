"""The leaderboard's scores table as text: tasks (and task groups) as rows, runs as columns.

No statistics: every number comes from ``evalcore.analysis.Leaderboard``. A board of 100+
tasks stays readable because tasks of one harness group (``Leaderboard.groups``) fold into
one group row showing the group's aggregate (``Leaderboard.group_cells``) until the group
is expanded or a search matches its subtasks.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ui.common import fmt_interval

AVERAGE_ROW = "Macro average"
SUBTASK_PREFIX = "  · "
DIRECTION_MARKS = {"higher": "↑", "lower": "↓", "target": "◎", "unknown": "?"}
DIRECTION_HELP = ("↑ higher is better, ↓ lower is better, ◎ best at a target value "
                  "(neither direction, not ranked), ? direction unknown (not ranked)")


def metric_text(metric: str | None, info) -> str:
    """``"acc ↑"``: the metric with its direction mark (``◎ 0.5`` for a target value)."""
    if metric is None:
        return "(mixed metrics)"
    if info is None:
        return str(metric)
    mark = DIRECTION_MARKS.get(info.direction, "?")
    if info.direction == "target" and info.ideal is not None:
        mark += f" {info.ideal:g}"
    return f"{metric} {mark}"


def cell_text(row: pd.Series | dict, percent: bool, chosen_method: str) -> str:
    """One run x task cell (a cells row or record): ``score [low, high]`` plus its marks."""
    return _marked(fmt_interval(row["score"], row["low"], row["high"], percent),
                   row.get("contains_chance", False), row.get("has_items", True),
                   row.get("method", chosen_method), chosen_method)


def _marked(text: str, chance, has_items, method, chosen_method: str) -> str:
    """A cell's interval text with its marks: ``~chance`` when the interval contains the
    chance level, ``(reported)`` for a run without items, else the cell's own method when
    it is not the one chosen."""
    if bool(chance):
        text += " ~chance"
    if not bool(has_items):
        text += " (reported)"
    elif str(method) != chosen_method:
        text += f" ({method})"
    return text


def _cell_texts(cells: pd.DataFrame, percent_by_task: dict[str, bool], chosen_method: str
                ) -> dict[tuple[str, str], str]:
    """``cell_text`` of every cells row, keyed by (run, task): the same texts from plain
    column lists (no record per cell; an absent column reads as cell_text's default)."""
    n = len(cells)

    def column(name: str, default) -> list:
        return cells[name].tolist() if name in cells.columns else [default] * n

    out: dict[tuple[str, str], str] = {}
    for run, task, score, low, high, chance, items, method in zip(
            column("run", None), column("task", None), column("score", None),
            column("low", None), column("high", None), column("contains_chance", False),
            column("has_items", True), column("method", chosen_method)):
        task = str(task)
        out[(str(run), task)] = _marked(
            fmt_interval(score, low, high, percent_by_task.get(task, False)), chance, items,
            method, chosen_method)
    return out


GROUP_SOURCE_MARKS = {"recomputed": " (recomputed)", "harness": " (harness)"}


def group_text(row: pd.Series | dict, percent: bool) -> str:
    """A run's group value and where it comes from (``Leaderboard.group_cells``): recomputed
    from the subtasks' item scores, the harness's own value, the mean of the subtasks'
    reported values, or, when there is none, what is missing."""
    source = str(row["source"])
    if source == "incomplete":
        k, big_k = int(row["n_tasks"]), int(row["n_tasks_group"])
        missing = [m for m in str(row.get("missing") or "").split(", ") if m]
        why = (f"missing {_few(missing)}" if missing else str(row.get("note") or "no value"))
        return f"– ({k} of {big_k} tasks; {why})"
    text = fmt_interval(row["score"], row["low"], row["high"], percent)
    if source in GROUP_SOURCE_MARKS:
        return text + GROUP_SOURCE_MARKS[source]
    return text + (" (mean)" if row.get("weighting") == "equal" else " (size-weighted)")


def _few(names: list[str], limit: int = 3) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _note_kinds(notes: pd.DataFrame) -> dict[str, str]:
    """task -> the kinds of its notes, sorted and comma-joined (tasks without a name left
    out)."""
    by_task: dict[str, set[str]] = {}
    if len(notes):
        for task, kind in zip(notes["task"].tolist(), notes["kind"].tolist()):
            if task is not None and task == task:                 # not None, not NaN
                by_task.setdefault(task, set()).add(kind)
    return {t: ", ".join(sorted(k)) for t, k in by_task.items()}


def _matches(name: str, query: str) -> bool:
    return not query or query.lower() in name.lower()


def _group_texts(lb, percent_by_task: dict[str, bool]
                 ) -> tuple[dict[tuple[str, str], str], dict[str, str | None]]:
    """((run, group) -> ``group_text``, group -> its metric) from ``lb.group_cells``."""
    tree = getattr(lb, "group_tree", {}) or {}
    gtext: dict[tuple[str, str], str] = {}
    gmetric: dict[str, str | None] = {}
    for row in lb.group_cells.to_dict("records"):
        g = str(row["group"])
        leaves = lb.groups.get(g) or _leaves(g, tree)
        pct = all(percent_by_task.get(t, False) for t in leaves)
        gtext[(str(row["run"]), g)] = group_text(row, pct)
        gmetric[g] = row["metric"] if isinstance(row["metric"], str) else None
    return gtext, gmetric


def _leaves(group: str, tree: dict, depth: int = 0) -> list[str]:
    out: list[str] = []
    for sub in tree.get(group, []):
        out += _leaves(sub, tree, depth + 1) if sub in tree and depth < 20 else [sub]
    return out


def scores_table(lb, run_order: Sequence[str], percent_by_task: dict[str, bool], *,
                 average_text: dict[str, str] | None = None, expanded: Sequence[str] = (),
                 query: str = "") -> pd.DataFrame:
    """Rows: the macro average, then tasks in name order with each group folded into one
    row at its first task; columns: Task, Metric, one per run (``run_order``), Notes.

    expanded : groups whose subtasks are listed under the group row; nested groups (MMLU's
        four under ``mmlu``) are rows of their own there, their tasks under them.
    query : case-insensitive substring; only tasks (or groups) whose name contains it are
        listed, and a group with a matching subtask lists those subtasks.
    Missing values are "–", never None.
    """
    cells = lb.cells
    # plain lists first: iterating an Arrow-backed column reads one value at a time
    present = set(cells["run"].astype(str).tolist())
    runs = [r for r in run_order if r in present]
    text = _cell_texts(cells, percent_by_task, lb.method)
    kinds = _note_kinds(lb.task_notes)
    metric_of = dict(zip(cells["task"].astype(str).tolist(), cells["metric"].astype(str).tolist()))
    group_of = {t: g for g, ts in lb.groups.items() for t in ts}
    tree = getattr(lb, "group_tree", {}) or {}
    gtext, gmetric = _group_texts(lb, percent_by_task)

    def line(label: str, metric: str, values: dict[str, str], note: str) -> dict:
        return {"Task": label, "Metric": metric, **{r: values.get(r, "–") for r in runs},
                "Notes": note}

    def group_line(g: str, label: str, members: list[str]) -> dict:
        first = next((m for m in members if m in metric_of), None)
        info = lb.metric_info.get(first) if gmetric.get(g) and first else None
        return line(label, metric_text(gmetric.get(g), info),
                    {r: gtext.get((r, g), "–") for r in runs},
                    ", ".join(sorted({k for m in members for k in
                                      kinds.get(m, "").split(", ") if k})))

    def task_line(t: str, label: str) -> dict:
        return line(label, metric_text(metric_of.get(t), lb.metric_info.get(t)),
                    {r: text.get((r, t), "–") for r in runs}, kinds.get(t, ""))

    def below(g: str, listed: set[str], depth: int) -> list[dict]:
        """Rows under an open group: its nested groups (with their tasks under them), then
        its own tasks, in name order; only what leads to a listed task."""
        out: list[dict] = []
        indent = "  " * depth
        subs = [c for c in tree.get(g, []) if c in tree] if g in tree else []
        for sub in sorted(subs):
            members = _leaves(sub, tree)
            if listed & set(members):
                out.append(group_line(sub, f"{indent}  ▾ {sub} ({len(members)} tasks)", members))
                out += below(sub, listed, depth + 1)
        own = [c for c in tree.get(g, []) if c not in tree] if g in tree else lb.groups[g]
        for m in sorted(t for t in own if t in listed):
            out.append(task_line(m, indent + SUBTASK_PREFIX + m))
        return out

    rows = []
    if average_text:
        k = int(lb.averages["n_tasks"].max()) if len(lb.averages) else 0
        u = int(lb.averages["n_units"].max()) if len(lb.averages) and \
            "n_units" in lb.averages else k
        label = f"{k} tasks ↑ on [0, 1]" if u == k else f"{k} tasks as {u} units ↑ on [0, 1]"
        rows.append(line(AVERAGE_ROW, label, {r: average_text.get(r, "–") for r in runs}, ""))
    seen_groups: set[str] = set()
    for t in sorted(set(metric_of)):
        g = group_of.get(t)
        if g is None:
            if _matches(t, query):
                rows.append(task_line(t, t))
            continue
        if g in seen_groups:
            continue
        seen_groups.add(g)
        members = lb.groups[g]
        hits = [m for m in members if _matches(m, query)]
        if not hits and not _matches(g, query):
            continue
        sign = "▾" if g in expanded or (query and hits) else "▸"
        rows.append(group_line(g, f"{sign} {g} ({len(members)} tasks)", members))
        listed = members if g in expanded and not (query and not _matches(g, query)) else hits \
            if query else []
        rows += below(g, set(listed), 0)
    names = ["Task", "Metric", *runs, "Notes"]
    if not rows:
        return pd.DataFrame({n: [] for n in names}, columns=names)
    # every value is text: one object block, then the str dtype pandas would infer per column
    grid = np.array([[row[n] for n in names] for row in rows], dtype=object).reshape(-1, len(names))
    return pd.DataFrame(grid, columns=names).astype("str")


def task_name(label: str) -> str:
    """The task (or group) name behind a table label (subtask and nested-group rows are
    indented)."""
    s = str(label)
    bare = s.lstrip(" ")
    if bare != s and bare.startswith("· "):
        return bare[2:]
    if bare[:2] in ("▸ ", "▾ "):
        return bare[2:].rsplit(" (", 1)[0]
    return s
