"""The leaderboard's scores table: runs as rows; the macro average, tasks and task groups as
columns.

No statistics: every number comes from ``evalcore.analysis.Leaderboard``.

- Columns (``board_columns``): the macro average, then the tasks in name order, each harness
  group (``Leaderboard.groups``: MMLU's subjects, BBH ...) folded into one column showing
  the group's aggregate (``Leaderboard.group_cells``) until the group is expanded or a task
  search matches its subtasks. A board of 100+ tasks thus starts with a few columns.
- Cells (``scores_table``): two frames of one shape, the number a column sorts by (the
  score in the units shown) and the text shown (``score [low, high]`` with its marks);
  ``styled`` joins them, so the table shows the interval and sorts by the score.
- Rows (``filter_runs``, ``rank_runs``): the runs whose name, tag, harness or model series
  match, best first by the macro average or by one column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Sequence

import pandas as pd

from evalcore.charts_forest import short_labels
from evalcore.words import label
from ui.common import fmt_interval

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
    chance level, ``(reported)`` for a run without items, else the cell's own method (its
    short name, ``evalcore.words``) when it is not the one chosen."""
    if bool(chance):
        text += " ~chance"
    if not bool(has_items):
        text += " (reported)"
    elif str(method) != chosen_method:
        text += f" ({label('score_short', method)})"
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


def _group_metrics(lb) -> dict[str, str | None]:
    """group -> its metric (None when its rows have none)."""
    gc = lb.group_cells
    if not len(gc):
        return {}
    return {str(g): (m if isinstance(m, str) else None)
            for g, m in zip(gc["group"].tolist(), gc["metric"].tolist())}


def _leaves(group: str, tree: dict, depth: int = 0) -> list[str]:
    out: list[str] = []
    for sub in tree.get(group, []):
        out += _leaves(sub, tree, depth + 1) if sub in tree and depth < 20 else [sub]
    return out


RUN = "Run"
AVERAGE = "Macro average"           # the macro average's column and its key
HEADER_CHARS = 24                   # a column header longer than this is cut in the middle


@dataclass(frozen=True)
class BoardColumn:
    """One column of the scores table.

    key : the task or group name (AVERAGE for the macro average); the frame's column name.
    kind : "average", "task" or "group".
    label : the header shown (the name cut to ``HEADER_CHARS``, a group marked ▸ folded or
        ▾ open with its size, a direction mark when lower is better or there is none).
    help : the header's tooltip: full name, metric with its direction, notes.
    members : a group's leaf tasks on the board.
    """
    key: str
    kind: str
    label: str
    help: str
    members: tuple[str, ...] = ()


def _header(name: str, mark: str = "") -> str:
    return short_labels([name], HEADER_CHARS)[0] + mark


def _direction_mark(info) -> str:
    if info is None or info.direction == "higher":
        return ""
    return " " + DIRECTION_MARKS.get(info.direction, "?")


def board_columns(lb, *, expanded: Sequence[str] = (), query: str = "",
                  with_average: bool = True) -> list[BoardColumn]:
    """The macro average (``with_average``), then the tasks in name order with each group
    folded into one column at its first task.

    expanded : groups whose columns are followed by their nested groups (MMLU's four under
        ``mmlu``, each followed by its tasks) and their own tasks.
    query : case-insensitive substring; only tasks (or groups) whose name contains it are
        listed, and a group with a matching subtask lists those subtasks.
    """
    cells = lb.cells
    metric_of = dict(zip(cells["task"].astype(str).tolist(), cells["metric"].astype(str).tolist()))
    kinds = _note_kinds(lb.task_notes)
    group_of = {t: g for g, ts in lb.groups.items() for t in ts}
    tree = getattr(lb, "group_tree", {}) or {}
    gmetric = _group_metrics(lb)

    def task_column(t: str) -> BoardColumn:
        info = lb.metric_info.get(t)
        note = kinds.get(t, "")
        return BoardColumn(t, "task", _header(t, _direction_mark(info)),
                           f"{t}: {metric_text(metric_of.get(t), info)}"
                           + (f"; notes: {note}" if note else ""))

    def group_column(g: str, members: list[str], is_open: bool) -> BoardColumn:
        first = next((m for m in members if m in metric_of), None)
        info = lb.metric_info.get(first) if gmetric.get(g) and first else None
        sign = "▾ " if is_open else "▸ "
        note = ", ".join(sorted({k for m in members for k in kinds.get(m, "").split(", ") if k}))
        return BoardColumn(g, "group", sign + _header(g, f" ({len(members)})"),
                           f"Task group {g} ({len(members)} tasks): "
                           f"{metric_text(gmetric.get(g), info)}"
                           + ("" if is_open else "; expand it under Expand groups")
                           + (f"; notes: {note}" if note else ""), tuple(members))

    def below(g: str, listed: set[str]) -> list[BoardColumn]:
        """Columns after an open group: its nested groups (each followed by its tasks), then
        its own tasks, in name order; only what leads to a listed task."""
        out: list[BoardColumn] = []
        subs = [c for c in tree.get(g, []) if c in tree] if g in tree else []
        for sub in sorted(subs):
            members = _leaves(sub, tree)
            if listed & set(members):
                out.append(group_column(sub, members, True))
                out += below(sub, listed)
        own = [c for c in tree.get(g, []) if c not in tree] if g in tree else lb.groups[g]
        out += [task_column(m) for m in sorted(t for t in own if t in listed)]
        return out

    out: list[BoardColumn] = []
    if with_average:
        out.append(BoardColumn(AVERAGE, "average", AVERAGE, _average_help(lb)))
    seen_groups: set[str] = set()
    for t in sorted(set(metric_of)):
        g = group_of.get(t)
        if g is None:
            if _matches(t, query):
                out.append(task_column(t))
            continue
        if g in seen_groups:
            continue
        seen_groups.add(g)
        members = lb.groups[g]
        hits = [m for m in members if _matches(m, query)]
        if not hits and not _matches(g, query):
            continue
        is_open = g in expanded or bool(query and hits)
        out.append(group_column(g, members, is_open))
        listed = members if g in expanded and not (query and not _matches(g, query)) else \
            hits if query else []
        out += below(g, set(listed))
    return out


def _average_help(lb) -> str:
    averages = lb.averages
    k = int(averages["n_tasks"].max()) if len(averages) else 0
    u = int(averages["n_units"].max()) if len(averages) and "n_units" in averages else k
    units = f"{k} tasks" if u == k else f"{k} tasks as {u} units (a task group counts once)"
    return (f"Macro average over {units} whose metric is higher-is-better on [0, 1], in %; "
            "SE = sqrt(sum SE_t^2)/k, normal interval")


def average_texts(averages: pd.DataFrame) -> dict[str, str]:
    """run -> its macro average as ``score [low, high]`` in %, marked ``(only k tasks)`` when
    it averages fewer tasks than the most complete run (not comparable with the others)."""
    if not len(averages):
        return {}
    full = int(averages["n_tasks"].max())
    out = {}
    for run, score, low, high, k in zip(averages["run"].astype(str).tolist(),
                                        averages["score"].tolist(), averages["low"].tolist(),
                                        averages["high"].tolist(),
                                        averages["n_tasks"].astype(int).tolist()):
        text = fmt_interval(score, low, high, True)
        if k < full:
            text += f" (only {k} task{'s' if k > 1 else ''})"
        out[run] = text
    return out


@dataclass(frozen=True)
class BoardTable:
    """The scores table: ``values`` (Run, then one float column per ``BoardColumn.key``: the
    score in the units shown, what a column sorts by) and ``texts`` (the same shape, every
    cell text: "score [low, high]" with marks, "–" when missing).

    A missing score is -inf (+inf in a lower-is-better column), not NaN: the table draws a
    missing number as "None" whatever its display text, and an infinite one sorts after
    every score when a column is sorted best first; its display text is "–"."""
    values: pd.DataFrame
    texts: pd.DataFrame
    columns: tuple[BoardColumn, ...]


JUDGE_MARK = " ⚖"
JUDGE_HELP = ("⚖: scored by an LLM judge (the judge model is in the run's protocol); the "
              "interval shows the judge's noise, not its bias: correct it with human labels "
              "on the LLM judges page")


def scores_table(lb, runs: Sequence[str], columns: Sequence[BoardColumn],
                 percent_by_task: dict[str, bool],
                 average_text: dict[str, str] | None = None,
                 judged: Collection[tuple[str, str]] = ()) -> BoardTable:
    """One row per run of ``runs`` (in that order), one column per ``columns`` item.

    Task cells: ``cell_text`` (score [low, high] in % for proportions, else in the metric's
    units; ``~chance``, ``(reported)`` or another method in brackets). Group cells:
    ``group_text``. The macro average: ``average_text`` (``average_texts``). Missing values
    are "–", never None or NaN. ``judged``: the (run, task) cells scored by an LLM judge
    (``analysis.judged_cells``), marked ``JUDGE_MARK``.
    """
    cells = lb.cells
    text = _cell_texts(cells, percent_by_task, lb.method)
    for key in judged:
        if key in text:
            text[key] += JUDGE_MARK
    value = {(r, t): v for r, t, v in zip(cells["run"].astype(str).tolist(),
                                          cells["task"].astype(str).tolist(),
                                          cells["score"].astype(float).tolist())}
    gtext, _ = _group_texts(lb, percent_by_task)
    gvalue = {(str(r), str(g)): v for r, g, v in zip(
        lb.group_cells.get("run", pd.Series(dtype=str)).tolist(),
        lb.group_cells.get("group", pd.Series(dtype=str)).tolist(),
        pd.to_numeric(lb.group_cells.get("score", pd.Series(dtype=float)),
                      errors="coerce").tolist())}
    avalue = dict(zip(lb.averages["run"].astype(str).tolist(),
                      lb.averages["score"].astype(float).tolist())) if len(lb.averages) else {}
    runs = [str(r) for r in runs]
    values: dict[str, list] = {RUN: runs}
    texts: dict[str, list] = {RUN: runs}
    for col in columns:
        if col.kind == "average":
            k, vals, txts = 100.0, avalue, average_text or {}
            vs = [vals.get(r, math.nan) for r in runs]
            ts = [txts.get(r, "–") for r in runs]
        elif col.kind == "group":
            k = 100.0 if all(percent_by_task.get(t, False) for t in col.members) else 1.0
            vs = [gvalue.get((r, col.key), math.nan) for r in runs]
            ts = [gtext.get((r, col.key), "–") for r in runs]
        else:
            k = 100.0 if percent_by_task.get(col.key, False) else 1.0
            vs = [value.get((r, col.key), math.nan) for r in runs]
            ts = [text.get((r, col.key), "–") for r in runs]
        missing = math.inf if _lower_is_better(lb, col) else -math.inf
        values[col.key] = [k * v if v == v else missing for v in vs]
        texts[col.key] = ts
    names = [RUN] + [c.key for c in columns]
    value_frame = pd.DataFrame({n: values[n] for n in names}, columns=names)
    value_frame[RUN] = value_frame[RUN].astype("str")
    for n in names[1:]:
        value_frame[n] = value_frame[n].astype(float)
    text_frame = pd.DataFrame({n: texts[n] for n in names}, columns=names).astype("str")
    return BoardTable(value_frame, text_frame, tuple(columns))


def _lower_is_better(lb, col: BoardColumn) -> bool:
    keys = col.members if col.kind == "group" else (col.key,)
    info = next((lb.metric_info[t] for t in keys if t in lb.metric_info), None)
    return info is not None and info.direction == "lower"


def styled(table: BoardTable):
    """The values frame as a pandas ``Styler`` whose display text is ``table.texts``: the
    table shows "score [low, high]" while sorting a column sorts by the score.

    Each cell gets its own display function: ``Styler.format`` passes a formatter only the
    value, and two runs with one score can have different intervals (different n), so the
    per-cell map ``Styler.format`` itself fills (``_display_funcs``) is filled directly
    (``tests/pages/test_leaderboard_view.py`` holds the display values equal to the texts).
    """
    styler = table.values.style
    funcs = styler._display_funcs
    for j, name in enumerate(table.values.columns):
        if name == RUN:
            continue
        for i, t in enumerate(table.texts[name].tolist()):
            funcs[(i, j)] = (lambda _v, shown=t: shown)
    return styler


def rank_runs(lb, runs: Sequence[str], by: str) -> list[str]:
    """``runs`` best first by the column ``by``: the macro average (runs averaged over the
    most tasks first, so a one-task average never tops the board), a task (the board's own
    order: highest first, lowest when lower is better) or a group (its value, in its metric's
    direction). Runs without a value on it follow in their given order."""
    runs = [str(r) for r in runs]
    if by == AVERAGE and len(lb.averages):
        av = lb.averages.sort_values(["n_tasks", "score"], ascending=[False, False])
        ranked = av["run"].astype(str).tolist()
    elif by in lb.groups or by in (getattr(lb, "group_tree", {}) or {}):
        gc = lb.group_cells[lb.group_cells["group"].astype(str) == by]
        gc = gc[pd.to_numeric(gc["score"], errors="coerce").notna()]
        members = lb.groups.get(by) or _leaves(by, lb.group_tree)
        info = next((lb.metric_info[m] for m in members if m in lb.metric_info), None)
        lower = info is not None and info.direction == "lower"
        ranked = gc.sort_values("score", ascending=lower)["run"].astype(str).tolist()
    else:
        ranked = lb.cells.loc[lb.cells["task"].astype(str) == by, "run"].astype(str).tolist()
    wanted = set(runs)
    first = [r for r in dict.fromkeys(ranked) if r in wanted]
    placed = set(first)
    return first + [r for r in runs if r not in placed]


def filter_runs(runs: pd.DataFrame, series_of: dict[str, str], *, query: str = "",
                tags: Sequence[str] = (), harnesses: Sequence[str] = (),
                series: Sequence[str] = ()) -> list[str]:
    """Names of the runs (``Store.runs()`` rows, in their order) that pass every filter
    given: ``query`` a case-insensitive substring of the name or the model, ``tags`` any
    of them, ``harnesses`` the run's ``source_format``, ``series`` its model series
    (``series_of``: run name -> ``analysis.run_groups``' config). Empty filters pass all."""
    q = query.strip().lower()
    tags, harnesses, series = set(tags), set(harnesses), set(series)
    out = []
    for name, model, fmt, run_tags in zip(runs["name"].astype(str).tolist(),
                                          runs["model"].tolist(),
                                          runs["source_format"].tolist(),
                                          runs["tags"].tolist()):
        if q and q not in name.lower() and q not in str(model or "").lower():
            continue
        if tags and not tags & {str(t) for t in (list(run_tags) if run_tags is not None else [])}:
            continue
        if harnesses and str(fmt) not in harnesses:
            continue
        if series and series_of.get(name) not in series:
            continue
        out.append(name)
    return out


def tag_options(runs: pd.DataFrame) -> list[str]:
    """Every tag of the runs, sorted."""
    return sorted({str(t) for tags in runs["tags"].tolist() if tags is not None for t in tags})


def series_options(series_of: dict[str, str]) -> dict[str, int]:
    """Model series with two or more runs -> their number of runs, largest first (ties by
    name)."""
    counts: dict[str, int] = {}
    for s in series_of.values():
        counts[s] = counts.get(s, 0) + 1
    return dict(sorted(((s, n) for s, n in counts.items() if n > 1),
                       key=lambda kv: (-kv[1], kv[0])))
