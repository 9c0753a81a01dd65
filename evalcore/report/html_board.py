"""The report's leaderboard: runs x tasks with intervals, rank intervals, the forest plot, and
the one line (plus appendix table) that stands for the summary-only runs.

Numbers are ``analysis.leaderboard``'s, formatted only. Rows: the runs with the most
complete macro average first, then by score. Summary-only runs (``Report.collapsed_runs``)
are named in one line per checkpoint series or seed configuration under the table, and
listed in the appendix (``summary_only_table``) with the same columns.
"""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from evalcore import charts
from evalcore.analysis import AVERAGE_TASK
from evalcore.metrics import percent_scale
from evalcore.report.build import Report, SummaryOnlyGroup
from evalcore.report.format import (Figures, e, interval, missing, name, scale_of,
                                    score_method, table)

STAR = "★"
FEWER = "†"          # marks an average over fewer tasks than the most complete one
JUDGE = "⚖"          # marks a cell scored by an LLM judge (the leaderboard page's mark)
COLUMNS_PER_TABLE = 6    # score columns per printed table (a wider board is split)
FOREST_TASKS = 12        # the forest plot draws at most this many tasks (most runs first)


def _scales(cells: pd.DataFrame, tasks: list[str], board) -> dict[str, float]:
    infos = getattr(board, "metric_info", None) or {}
    return {t: percent_scale(cells.loc[cells["task"] == t, "score"], infos.get(t))
            for t in tasks}


def _order(board, runs: set[str]) -> list[str]:
    """Runs with the most complete average first, then by average; the others after, in the
    cells' order (best first within a task)."""
    avg = board.averages
    order: list[str] = []
    if len(avg):
        ranked = avg.assign(_k=-avg["n_tasks"].astype(float), _s=-avg["score"].astype(float))
        order = [str(r) for r in ranked.sort_values(["_k", "_s"])["run"]]
    order += [r for r in dict.fromkeys(board.cells["run"].astype(str)) if r not in order]
    return [r for r in order if r in runs]


def _best_marks(board) -> set[tuple[str, str]]:
    """(run, task) pairs that are the best run or not distinguishable from it."""
    t = board.tiers
    if not len(t):
        return set()
    best = {(str(r), str(k)) for r, k, ok in zip(t["run"], t["task"],
                                                t["indistinguishable_from_best"]) if bool(ok)}
    return best | {(str(r), str(k)) for r, k, b in zip(t["run"], t["task"], t["best_run"])
                   if str(r) == str(b)}


def _rank_texts(board) -> dict[tuple[str, str], str]:
    """(run, task) -> the rank interval as a small suffix of the cell ("1–3", or "2" when
    the interval is one rank)."""
    r = board.ranks
    out = {}
    for x in r.itertuples(index=False):
        lo, hi = int(x.rank_low), int(x.rank_high)
        out[(str(x.run), str(x.task))] = (f" <span class='rank'>{lo}"
                                          f"{'' if lo == hi else f'–{hi}'}</span>")
    return out


def board_table(board, runs: list[str], css: str = "board",
                judged: Collection[tuple[str, str]] = ()) -> str:
    """Runs (rows) x the macro average and tasks (columns), score [interval] per cell, one
    line each; a cell's n is shown only where it differs from the task's usual n. More than
    ``COLUMNS_PER_TABLE`` columns are split into several tables (the run column repeated,
    each table with the runs that have a cell in it), so a wide board prints whole.
    ``judged``: the (run, task) cells scored by an LLM judge, marked ``JUDGE``."""
    cells = board.cells[board.cells["run"].astype(str).isin(runs)]
    tasks = list(dict.fromkeys(board.cells["task"].astype(str)))
    tasks = [t for t in tasks if (cells["task"].astype(str) == t).any()]
    scales = _scales(cells, tasks, board)
    usual = {t: cells.loc[cells["task"] == t, "n"].mode() for t in tasks}
    usual = {t: (int(m.iloc[0]) if len(m) else None) for t, m in usual.items()}
    best = _best_marks(board)
    ranks = _rank_texts(board)
    by = {(str(r.run), str(r.task)): r for r in cells.itertuples(index=False)}
    avg = board.averages[board.averages["run"].astype(str).isin(runs)]
    avg = avg.set_index(avg["run"].astype(str))
    show_avg = bool(len(avg)) and bool((avg["n_tasks"] >= 2).any())
    most = int(avg["n_tasks"].max()) if len(avg) else 0

    def task_cell(run: str, t: str) -> str:
        c = by.get((run, t))
        if c is None:
            return ""
        mark = f" {STAR}" if (run, t) in best else ""
        if (run, t) in judged:
            mark += f" {JUDGE}"
        n_note = "" if missing(c.n) or int(c.n) == usual[t] else \
            f" <span class='muted'>n = {int(c.n):,}</span>"
        return (f"{interval(c.score, c.low, c.high, scales[t])}{mark}"
                f"{ranks.get((run, t), '')}{n_note}")

    def average_cell(run: str) -> str:
        a = avg.loc[run] if run in avg.index else None
        if a is None or int(a.n_tasks) < 2:            # one task is not an average
            return ""
        mark = f" {STAR}" if (run, AVERAGE_TASK) in best else ""
        fewer = (f" <span class='muted'>{FEWER} {int(a.n_tasks)} of {most}</span>"
                 if int(a.n_tasks) < most else "")
        return f"{interval(a.score, a.low, a.high, 100.0)}{mark}{fewer}"

    columns: list[tuple[str, object]] = []
    if show_avg:
        columns.append((f"Macro average<br><span class='muted'>(%), {most} tasks</span>",
                        average_cell))
    for t in tasks:
        unit = " (%)" if scales[t] == 100 else ""
        n = f", n = {usual[t]:,}" if usual[t] is not None else ""
        columns.append((f"{name(t)}<br><span class='muted'>"
                        f"{e(board.metrics_by_task.get(t, ''))}{unit}{n}</span>",
                        lambda run, t=t: task_cell(run, t)))
    out = []
    for k in range(0, len(columns), COLUMNS_PER_TABLE):
        chunk = columns[k:k + COLUMNS_PER_TABLE]
        rows = []
        for run in runs:
            values = [render(run) for _, render in chunk]
            if any(values):
                rows.append([name(run), *values])
        out.append(table(["Run", *(h for h, _ in chunk)], rows,
                         numeric=set(range(1, len(chunk) + 1)), css=css))
    return "".join(out)


def summary_only_line(groups: tuple[SummaryOnlyGroup, ...]) -> str:
    """"18 summary-only runs (checkpoint series X (6 checkpoints), ...): see the appendix"."""
    parts = []
    for g in groups:
        k = len(g.runs)
        if g.kind == "checkpoint series":
            parts.append(f"checkpoint series {name(g.name)} ({k} checkpoints)")
        elif g.kind == "seeds":
            parts.append(f"seeds of {name(g.name)} ({k} seeds)")
        else:
            parts.append(f"{k} other run{'s' if k != 1 else ''}")
    total = sum(len(g.runs) for g in groups)
    return (f"<p class='collapsed'>+ {total} summary-only run{'s' if total != 1 else ''} "
            f"(no item scores, so no paired test or tier): {'; '.join(parts)}. Their scores, "
            f"with intervals from the harness's reported SE, are listed in the appendix.</p>")


def leaderboard_section(report: Report, fig: Figures) -> str:
    board = report.leaderboard
    level = f"{board.confidence:.0%}"
    collapsed = report.collapsed_runs()
    runs = _order(board, set(map(str, board.cells["run"])) - collapsed)
    methods = ", ".join(score_method(m) for m in dict.fromkeys(
        board.cells.loc[board.cells["run"].astype(str).isin(runs), "method"].astype(str)))
    out = ['<section id="leaderboard" class="page"><h2>Leaderboard</h2>',
           f"<p>Score with its {level} interval per run and task ({e(methods)}); {STAR} = the "
           f"best run or not distinguishable from it (paired tests on the items both runs "
           f"share, Holm-adjusted); {FEWER} = an average over fewer tasks, not comparable "
           f"with the others"
           + (f"; small grey numbers = the run's {level} rank interval on that task (a paired "
              f"bootstrap resampling the same items for every run)" if len(board.ranks) else "")
           + (f"; {JUDGE} = scored by an LLM judge: the interval shows the judge's noise, "
              f"not its bias" if report.judged else "")
           + ".</p>",
           board_table(board, runs, judged=set(report.judged))]
    if collapsed:
        out.append(summary_only_line(report.summary_only))
    if board.notes:
        out.append("<ul class='notes'>" + "".join(f"<li>{e(n)}</li>" for n in board.notes)
                   + "</ul>")
    cells = board.cells[board.cells["run"].astype(str).isin(runs)]
    averages = board.averages[board.averages["run"].astype(str).isin(runs)]
    counts = cells.groupby(cells["task"].astype(str))["run"].nunique()
    order = list(dict.fromkeys(cells["task"].astype(str)))
    drawn = sorted(order, key=lambda t: (-counts[t], order.index(t)))[:FOREST_TASKS]
    cells = cells[cells["task"].astype(str).isin(drawn)]
    scales = _scales(cells, list(dict.fromkeys(cells["task"].astype(str))), board)
    forest = charts.forest_plot(cells, averages if len(averages) else None,
                                method_label=score_method(board.method),
                                confidence=board.confidence,
                                percent={t: s == 100.0 for t, s in scales.items()},
                                run_order=[r for r in runs if r in set(cells["run"].astype(str))
                                           or r in set(averages["run"].astype(str))])
    some = (f" Drawn: the {FOREST_TASKS} tasks with the most runs of {len(order)}; the "
            f"table above has every task." if len(order) > FOREST_TASKS else "")
    out.append('<div class="newpage">' + fig(
        forest, f"Scores with {level} intervals; open circles: the interval contains the "
                f"chance level.{some}") + "</div>")
    out.append("</section>")
    return "".join(out)


def summary_only_table(report: Report) -> str:
    """The appendix's list of the collapsed summary-only runs: per series, each run's score
    and interval per task, in running text (they are many and alike)."""
    collapsed = report.collapsed_runs()
    if not collapsed:
        return ""
    board = report.leaderboard
    cells = board.cells[board.cells["run"].astype(str).isin(collapsed)]
    tasks = list(dict.fromkeys(cells["task"].astype(str)))
    scales = _scales(cells, tasks, board)
    by_run: dict[str, list] = {}
    for c in cells.itertuples(index=False):
        by_run.setdefault(str(c.run), []).append(c)
    one_task = len(tasks) == 1
    level = f"{board.confidence:.0%}"
    what = (f"{name(tasks[0])} ({e(board.metrics_by_task.get(tasks[0], ''))}"
            f"{', %' if scales[tasks[0]] == 100 else ''})" if one_task else "each task")
    out = [f"<h3>Summary-only runs</h3><p class='muted'>Runs without item scores: the "
           f"harness's reported value on {what} with a {level} interval from its reported SE "
           f"(the value alone where it reported none); no paired test or tier is computed "
           f"for them.</p>"]
    for g in report.summary_only:
        runs = [r for r in g.runs if r in collapsed]
        if not runs:
            continue
        title = {"checkpoint series": f"Checkpoint series {name(g.name)}",
                 "seeds": f"Seeds of {name(g.name)}"}.get(g.kind, "Other runs")
        entries = []
        prefix = g.name if g.kind != "other" and all(r.startswith(g.name) for r in runs) else ""
        for run in runs:
            scores = [(f"" if one_task else f"{name(c.task)} ")
                      + interval(c.score, c.low, c.high, scales[str(c.task)])
                      for c in by_run.get(run, [])]
            short = run[len(prefix):].lstrip("-_/.") if prefix else run
            entries.append(f"{name(short or run)} {'; '.join(scores)}")
        out.append(f"<p class='series'><b>{title}</b> ({len(runs)}): {' · '.join(entries)}.</p>")
    return "".join(out)
