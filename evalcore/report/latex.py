"""LaTeX tables with their intervals: booktabs rules and a caption that names the method.

Two styles for a cell (``style``):

* ``"brackets"``: ``71.9 [68.1, 75.5]`` (estimate and interval);
* ``"pm"``: ``71.9 $\\pm$ 3.8`` when the interval is symmetric to the printed digit (CLT,
  paired differences, reported stderrs); an asymmetric interval (Wilson, Clopper-Pearson,
  Bayesian, bootstrap) is written ``71.9$^{+3.6}_{-3.8}$`` instead, because a single
  half-width would misstate one side; the caption says so when it happens.

Proportions are in percent and differences in percentage points, as in the HTML report.
User strings are escaped for LaTeX (``latex_escape``). ``latex_document`` wraps the tables
in a minimal ``article`` (booktabs) that compiles with pdflatex.
"""

from __future__ import annotations

import math

import pandas as pd

from evalcore import words
from evalcore.analysis import AVERAGE_TASK

STYLES = ("brackets", "pm")
_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_escape(value) -> str:
    """``value`` as LaTeX text (special characters escaped, newlines as spaces)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(value).replace("\n", " ").replace("\r", " "))


def _missing(x) -> bool:
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _fmt(x: float, scale: float, digits: int, signed: bool = False) -> str:
    v = float(x) * scale
    if scale == 100.0:
        text = f"{v:{'+' if signed else ''}.{digits}f}"
    else:
        text = f"{v:{'+' if signed else ''}.4g}"
    return text.replace("-", "$-$") if not signed else text.replace("-", "$-$").replace("+", "$+$")


def interval_cell(est, low, high, *, scale: float, style: str, digits: int = 1,
                  signed: bool = False) -> tuple[str, bool]:
    """(cell text, asymmetric) of an estimate with its interval in ``style``."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; use one of {', '.join(STYLES)}")
    if _missing(est):
        return "--", False
    if _missing(low) or _missing(high):
        return _fmt(est, scale, digits, signed), False
    if style == "brackets":
        return (f"{_fmt(est, scale, digits, signed)} [{_fmt(low, scale, digits, signed)}, "
                f"{_fmt(high, scale, digits, signed)}]"), False
    up, down = (float(high) - float(est)) * scale, (float(est) - float(low)) * scale
    q = 10 ** digits if scale == 100.0 else None
    same = (round(up * q) == round(down * q)) if q else math.isclose(up, down, rel_tol=1e-3)
    if same:
        half = f"{up:.{digits}f}" if scale == 100.0 else f"{up:.3g}"
        return f"{_fmt(est, scale, digits, signed)} $\\pm$ {half}", False
    fu = f"{up:.{digits}f}" if scale == 100.0 else f"{up:.3g}"
    fd = f"{down:.{digits}f}" if scale == 100.0 else f"{down:.3g}"
    return f"{_fmt(est, scale, digits, signed)}$^{{+{fu}}}_{{-{fd}}}$", True


def _scale(values) -> float:
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    return 100.0 if len(v) and bool(((v >= 0) & (v <= 1)).all()) else 1.0


def _table(caption: str, label: str, header: list[str], rows: list[list[str]],
           align: str) -> str:
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small",
             f"\\caption{{{caption}}}", f"\\label{{{label}}}",
             f"\\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(header) + r" \\",
             r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _asym_note(any_asym: bool) -> str:
    return (" Asymmetric intervals are written as estimate$^{+\\text{up}}_{-\\text{down}}$."
            .replace("\\text{up}", "u").replace("\\text{down}", "d") if any_asym else "")


def leaderboard_table(board, *, style: str = "brackets") -> str:
    """Runs x tasks (and the macro average over at least two tasks) with intervals."""
    cells = board.cells
    level = f"{board.confidence:.0%}".replace("%", r"\%")
    tasks = list(dict.fromkeys(cells["task"].astype(str)))
    scales = {t: _scale(cells.loc[cells["task"] == t, ["score", "low", "high"]].stack())
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
    v = sorted({int(x) for x in values if not _missing(x)})
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
                     str(int(r["n"])), _fmt(r["score_a"], k, 1), _fmt(r["score_b"], k, 1), text,
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
    if _missing(p):
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
