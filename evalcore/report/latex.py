"""LaTeX tables with their intervals: booktabs rules and a caption that names the method.

Two styles for a cell (``style``):

* ``"brackets"``: ``71.9 [68.1, 75.5]`` (estimate and interval);
* ``"pm"``: ``71.9 $\\pm$ 3.8`` when the interval is symmetric to the printed digit (CLT,
  paired differences, reported stderrs); an asymmetric interval (Wilson, Clopper-Pearson,
  Bayesian, bootstrap) is written ``71.9$^{+3.6}_{-3.8}$`` instead, because a single
  half-width would misstate one side; the caption says so when it happens.

Proportions are in percent and differences in percentage points, as in the HTML report.
User strings are escaped for LaTeX; cells and tabulars come from ``evalcore.tables``
(``latex_escape``, ``interval_cell``, ``latex_tabular``, shared with the CLI and the pages).
``latex_document`` wraps the tables in a minimal ``article`` (booktabs) that compiles with
pdflatex.
"""

from __future__ import annotations

import pandas as pd

from evalcore import words
from evalcore.metrics import percent_scale
from evalcore.analysis import AVERAGE_TASK
from evalcore.tables import (STYLES, format_number, interval_cell, is_missing,  # noqa: F401
                             latex_escape, latex_tabular)


def _table(caption: str, label: str, header: list[str], rows: list[list[str]],
           align: str) -> str:
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small",
             f"\\caption{{{caption}}}", f"\\label{{{label}}}",
             latex_tabular(header, rows, align), r"\end{table}"]
    return "\n".join(lines) + "\n"


def _asym_note(any_asym: bool) -> str:
    return (" Asymmetric intervals are written as estimate$^{+\\text{up}}_{-\\text{down}}$."
            .replace("\\text{up}", "u").replace("\\text{down}", "d") if any_asym else "")


def leaderboard_table(board, *, style: str = "brackets") -> str:
    """Runs x tasks (and the macro average over at least two tasks) with intervals."""
    cells = board.cells
    level = f"{board.confidence:.0%}".replace("%", r"\%")
    tasks = list(dict.fromkeys(cells["task"].astype(str)))
    infos = getattr(board, "metric_info", None) or {}
    scales = {t: percent_scale(cells.loc[cells["task"] == t, "score"], infos.get(t))
              for t in tasks}
    avg = board.averages.set_index(board.averages["run"].astype(str)) if len(board.averages) else None
    if avg is not None:
        avg = avg[avg["n_tasks"].astype(int) >= 2]
    runs = list(dict.fromkeys(cells["run"].astype(str)))
    if avg is not None and len(avg):
        first = list(avg.assign(_k=-avg["n_tasks"], _s=-avg["score"]).sort_values(["_k", "_s"]).index)
        runs = first + [r for r in runs if r not in first]
    by = {(str(c.run), str(c.task)): c for c in cells.itertuples(index=False)}
    asym = False
    rows = []
    for run in runs:
        row = [latex_escape(run)]
        for t in tasks:
            c = by.get((run, t))
            if c is None:
                row.append("--")
                continue
            text, a = interval_cell(c.score, c.low, c.high, scale=scales[t], style=style)
            asym |= a
            row.append(text)
        if avg is not None and len(avg):
            a_ = avg.loc[run] if run in avg.index else None
            k = 100.0 if all(v == 100.0 for v in scales.values()) else 1.0
            if a_ is None:
                row.append("--")
            else:
                text, a = interval_cell(a_.score, a_.low, a_.high, scale=k, style=style)
                asym |= a
                row.append(text)
        rows.append(row)
    header = ["Run"] + [latex_escape(t) for t in tasks] + (["Macro avg."] if avg is not None and len(avg) else [])
    methods = ", ".join(words.label("score", m) for m in dict.fromkeys(cells["method"].astype(str)))
    ns = "; ".join(f"{latex_escape(t)}: n = {_n(cells[cells['task'] == t]['n'])}" for t in tasks)
    unit = " in percent" if all(v == 100.0 for v in scales.values()) else ""
    caption = (f"Scores{unit} with {level} intervals ({latex_escape(methods)}). Items per task: "
               f"{ns}." + (" Macro average: mean over tasks, SE = $\\sqrt{\\sum_t SE_t^2}/k$."
                            if avg is not None and len(avg) else "") + _asym_note(asym))
    return _table(caption, "tab:leaderboard", header, rows, "l" + "r" * (len(header) - 1))


def _n(values) -> str:
    v = sorted({int(x) for x in values if not is_missing(x)})
    return "--" if not v else (f"{v[0]}" if len(v) == 1 else f"{v[0]}--{v[-1]}")


def comparison_table(cmp, *, style: str = "brackets", label: str = "tab:comparison") -> str:
    """Per task (and overall): n, A, B, B - A with its paired interval, the row's p (the test
    the interval inverts; for 0/1 scores the larger of it and the exact McNemar p) and the
    adjusted p the verdict follows."""
    pt = cmp.per_task
    level = f"{cmp.confidence:.0%}".replace("%", r"\%")
    rows = []
    asym = False
    for r in pt.to_dict("records") + ([cmp.overall] if cmp.overall else []):
        k = float(r.get("points_scale") or 1.0)
        overall = r.get("task") == AVERAGE_TASK
        text, a = interval_cell(r["diff"], r["low"], r["high"], scale=k, style=style, signed=True)
        asym |= a
        rows.append([r"\textit{Macro average}" if overall else latex_escape(r["task"]),
                     str(int(r["n"])), format_number(r["score_a"], k, 1), format_number(r["score_b"], k, 1), text,
                     _p(r.get("p_value", r.get("p_exact"))), _p(r.get("p_adjusted"))])
    kinds = ", ".join(dict.fromkeys(words.label("paired", m) for m in pt["interval_method"]))
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    names = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
    points = bool((pt["points_scale"] == 100.0).all())
    caption = (f"{latex_escape(cmp.run_b)} (B) against {latex_escape(cmp.run_a)} (A): paired "
               f"difference B $-$ A{' in percentage points' if points else ''} with {level} "
               f"intervals ({latex_escape(kinds)}); p: the test the interval inverts, for 0/1 "
               f"scores the larger of it and the exact two-sided McNemar p (the interval is "
               f"widened to 0 where the exact test does not reject no difference)"
               + (f"; adjusted across tasks with {', '.join(names.get(a, a) for a in adj)}; "
                  f"the verdicts follow the adjusted p and the intervals are unadjusted"
                  if adj else "")
               + f". Verdict: {latex_escape(cmp.verdict)}." + _asym_note(asym))
    return _table(caption, label, ["Task", "$n$", "A", "B", f"B $-$ A [{level} CI]",
                                   "$p$", "$p_{\\mathrm{adj}}$"], rows, "lrrrrrr")


def _p(p) -> str:
    if is_missing(p):
        return "--"
    return "$<$0.0001" if float(p) < 1e-4 else f"{float(p):.4f}"


def report_tables(report, *, style: str = "brackets") -> str:
    """Every table of a report (leaderboard, each comparison) as LaTeX."""
    parts = []
    if report.leaderboard is not None and len(report.leaderboard.cells):
        parts.append(leaderboard_table(report.leaderboard, style=style))
    for i, sec in enumerate(report.comparisons, 1):
        parts.append(comparison_table(sec.comparison, style=style, label=f"tab:comparison-{i}"))
    return "\n".join(parts)


def latex_document(body: str) -> str:
    """A minimal article around ``body`` (booktabs, amsmath); compiles with pdflatex."""
    return ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[utf8]{inputenc}\n"
            "\\usepackage{booktabs}\n\\usepackage{amsmath}\n"
            "\\usepackage[a4paper,landscape,margin=15mm]{geometry}\n"
            "\\begin{document}\n" + body + "\\end{document}\n")
