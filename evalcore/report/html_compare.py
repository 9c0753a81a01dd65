"""The report's pairwise comparisons: for each, the warnings, compare's verdict, the results
table, the paired details (the 2x2 table flattened, SEs, correlation), the one-slide figure, a
few example disagreements with where to find the rest, and the settings that differ.

Every number and verdict is ``analysis.compare``'s row as it is (never re-decided); method
names are ``evalcore.words``'.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pandas as pd

from evalcore import charts
from evalcore.analysis import AVERAGE_TASK, BENIGN_PROTOCOL_CATEGORIES
from evalcore.analysis.verdicts import ADJUSTMENT_NAMES
from evalcore.report.build import ComparisonSection, Report
from evalcore.report.format import (Figures, cut, e, gap_unit, interval, missing, name, num,
                                    paired_method, pval, table)

PROMPT_CHARS = 300       # example prompts are cut here (said in the report)
TEXT_CHARS = 160         # targets and responses are cut here
SETTING_CHARS = 80       # values of differing settings are cut here
COMPARE_PAGE = "/compare"
ANSWER_BASE, ANSWER_ROW = 270, 40     # px of the one-slide figure: margins, and per row
ANSWER_PRINT = 360                    # px of a printed page the figure may take


def _rows(c) -> list[dict]:
    return c.per_task.to_dict("records") + ([c.overall] if c.overall else [])


def _task_cell(r: dict) -> str:
    if r.get("task") == AVERAGE_TASK:
        return "<b>Macro average</b>"
    return f"{name(r['task'])}<br><span class='muted'>{e(r['metric'])}</span>"


def results_table(c) -> str:
    """Task, n, both scores, B - A with its interval, p, adjusted p, MDE and the verdict."""
    pt = c.per_task
    level = f"{c.confidence:.0%}"
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    unit = gap_unit(100.0 if (pt["points_scale"] == 100.0).all() else 1.0)
    score_unit = " (%)" if (pt["points_scale"] == 100.0).all() else ""
    rows = []
    for r in _rows(c):
        k = float(r.get("points_scale") or 1.0)
        rows.append([_task_cell(r), f"{int(r['n']):,}" if not missing(r.get("n")) else "–",
                     num(r["score_a"], k), num(r["score_b"], k),
                     interval(r["diff"], r["low"], r["high"], k, signed=True),
                     pval(r.get("p_value")), pval(r.get("p_adjusted")), num(r["mde"], k, 1),
                     e(r["verdict"])])
    adj_head = (f"p adj. ({e(', '.join(ADJUSTMENT_NAMES.get(a, a) for a in adj))})"
                if adj else "p adj.")
    return table(["Task", "n (items)", f"A{score_unit}", f"B{score_unit}",
                  f"B − A [{level} CI{', unadjusted' if adj else ''}] ({unit})", "p",
                  adj_head, f"MDE ({unit})", "Verdict"], rows, numeric={1, 2, 3, 4, 5, 6, 7},
                 text={8}, css="results")


def details_table(c) -> str:
    """Per task: the interval method, the simultaneous interval, SEs, correlation, the four
    cells of the 2x2 table and the exact McNemar p."""
    pt = c.per_task
    family = bool((pt["adjustment"] != "none").any())
    binary = pt["b"].notna().any()
    unit = gap_unit(100.0 if (pt["points_scale"] == 100.0).all() else 1.0)
    rows = []
    for r in _rows(c):
        k = float(r.get("points_scale") or 1.0)
        overall = r.get("task") == AVERAGE_TASK
        row = [_task_cell(r) if overall else name(r["task"]),
               "normal interval" if overall else e(paired_method(r.get("interval_method")))]
        if family:
            row.append("–" if missing(r.get("low_simultaneous")) else
                       f"[{num(r['low_simultaneous'], k, 1, True)}, "
                       f"{num(r['high_simultaneous'], k, 1, True)}]")
        row += [num(r["se"], k, 2), num(r.get("se_unpaired"), k, 2),
                "–" if missing(r.get("correlation")) else f"{float(r['correlation']):.2f}"]
        if binary:
            row += [("–" if missing(r.get(x)) else f"{int(r[x]):,}")
                    for x in ("both", "b", "c", "neither")]
            row.append(pval(r["p_exact"]) if not missing(r.get("b")) else "–")
        rows.append(row)
    headers = ["Task", "Interval"]
    if family:
        headers.append(f"Simultaneous CI, Bonferroni over {len(pt)} ({unit})")
    headers += [f"SE paired ({unit})", f"SE ignoring the pairing ({unit})", "Correlation"]
    if binary:
        headers += ["Both right", "Only B right (b)", "Only A right (c)", "Both wrong",
                    "p (exact McNemar)"]
    return table(headers, rows, numeric=set(range(2, len(headers))), css="details")


def _compare_url(c, task: str, cell: str) -> str:
    query = urlencode({"run_a": c.run_a, "run_b": c.run_b, "task": task, "cell": cell},
                      quote_via=quote)
    return f"{COMPARE_PAGE}?{query}"


def examples_block(sec: ComparisonSection, n_examples: int) -> str:
    """A few disagreements (cells b and c, the tasks in turn) and where the full lists are."""
    ex = sec.examples
    if ex is None or not len(ex) or not sec.n_discordant:
        return ""
    c = sec.comparison
    n_b = sum(b for b, _ in sec.n_discordant.values())
    n_c = sum(v for _, v in sec.n_discordant.values())
    tasks = list(sec.n_discordant)
    rows = [[name(x.task), e(x.item_id), "only B right" if x.cell == "b" else "only A right",
             cut(x.prompt, PROMPT_CHARS, True), cut(x.target, TEXT_CHARS, True),
             cut(x.response_a, TEXT_CHARS, True), cut(x.response_b, TEXT_CHARS, True)]
            for x in ex.itertuples(index=False)]
    url = e(_compare_url(c, tasks[0], "b")).replace("&amp;", "&amp;<wbr>")
    return ("<h4>Example disagreements</h4>"
            f"<p class='muted'>{min(n_examples, n_b)} of the {n_b:,} items only B got right "
            f"and {min(n_examples, n_c)} of the {n_c:,} only A got right, over "
            f"{len(tasks)} task{'s' if len(tasks) != 1 else ''} in turn; line breaks shown as "
            f"spaces, prompts cut at {PROMPT_CHARS} characters, other texts at {TEXT_CHARS}. "
            f"The full lists: the "
            f"dashboard's Compare page, <span class='url'>{url}</span> (task = one of "
            f"{', '.join(name(t) for t in tasks)}; cell = b or c).</p>"
            + table(["Task", "Item", "Cell", "Prompt", "Target", "Response A", "Response B"],
                    rows, text={3, 4, 5, 6}, css="examples"))


def settings_block(c) -> str:
    """Recorded settings that differ: the protocol ones in a table, the model's identity and
    other bookkeeping fields named in one line."""
    pdf = c.protocol_diff
    if not len(pdf):
        return ""
    benign = pdf["category"].isin(BENIGN_PROTOCOL_CATEGORIES) if "category" in pdf \
        else pd.Series(False, index=pdf.index)
    out = []
    real = pdf[~benign]
    if len(real):
        out.append("<h4>Recorded settings that differ</h4>")
        out.append(table(["Scope", "Setting", "A", "B"],
                         [[e("whole run" if x["scope"] == "run" else x["scope"]),
                           e(x["setting"]), cut(x["value_a"], SETTING_CHARS),
                           cut(x["value_b"], SETTING_CHARS)] for x in real.to_dict("records")],
                         text={2, 3}, css="settings"))
    rest = pdf[benign]
    if len(rest):
        fields = ", ".join(dict.fromkeys(e(s) for s in rest["setting"]))
        out.append(f"<p class='muted'>Also recorded differently (the model itself and "
                   f"bookkeeping, not a protocol difference): {fields}.</p>")
    return "".join(out)


def _family_sentence(c) -> str:
    """How to read the table in one line (the full rule is in the methods section)."""
    pt = c.per_task
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    alpha = 1 - c.confidence
    text = (f"p: the test the interval inverts (for 0/1 scores no smaller than the exact "
            f"McNemar p); MDE: the smallest difference detectable at alpha = {alpha:.2g} with "
            f"power 80%.")
    if adj:
        how = ", ".join(ADJUSTMENT_NAMES.get(a, a) for a in adj)
        text += (f" Verdicts follow the {how}-adjusted p over {len(pt)} tasks; the intervals "
                 f"are unadjusted (simultaneous ones in the details).")
    return f"<p class='muted'>{text}</p>"


def comparison_block(sec: ComparisonSection, idx: int, fig: Figures, n_examples: int) -> str:
    c = sec.comparison
    level = f"{c.confidence:.0%}"
    out = [f'<div class="comparison"><h3 id="comparison-{idx}">{name(c.run_b)} (B) against '
           f'{name(c.run_a)} (A)</h3>']
    if c.warnings:
        out.append("<div class='warning'><b>Check before reading the numbers:</b><ul>"
                   + "".join(f"<li>{e(w)}</li>" for w in c.warnings) + "</ul></div>")
    out.append(f'<div class="verdict">Verdict: {e(c.verdict)}</div>')
    pt = c.per_task
    shown = pt.assign(interval_method=[paired_method(m) for m in pt["interval_method"]])
    answer = charts.answer_figure(shown, c.overall, run_a=c.run_a, run_b=c.run_b,
                                  confidence=c.confidence, verdict=c.verdict)
    # on paper the rows sit closer than on a slide: the same margins, less space per row
    rows = len(pt) + (1 if c.overall and len(pt) > 1 else 0)
    answer.update_layout(height=min(int(answer.layout.height or 0) or 10_000,
                                    ANSWER_BASE + ANSWER_ROW * rows))
    out.append(fig(answer, f"Is {e(c.run_b)} better than {e(c.run_a)}? The paired difference "
                           f"B − A with its {level} interval per task and on the macro "
                           f"average.", print_height=ANSWER_PRINT))
    out.append(results_table(c))
    out.append(_family_sentence(c))
    out.append("<h4>Paired details</h4>" + details_table(c))
    out.append(examples_block(sec, n_examples))
    out.append(settings_block(c))
    out.append("</div>")
    return "".join(out)


def comparisons_section(report: Report, fig: Figures) -> str:
    parts = ['<section id="comparisons" class="page"><h2>Pairwise comparisons</h2>',
             "<p>Each comparison pairs the two runs on the items both answered; differences "
             "are B − A.</p>"]
    for i, sec in enumerate(report.comparisons, 1):
        parts.append(comparison_block(sec, i, fig, report.spec.n_examples))
    parts.append("</section>")
    return "".join(parts)
