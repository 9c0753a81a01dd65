"""Render a ``Report`` as one self-contained HTML file.

* Offline: Plotly's JavaScript is inlined once in ``<head>`` (``plotly.offline.get_plotlyjs``)
  and every figure is written with ``include_plotlyjs=False``; there is no external ``src``
  or ``href``, and a Content-Security-Policy (``default-src 'none'``) tells the browser to
  make no request at all, so the file can be mailed and opened anywhere.
* Safe: every user string (run, task, metric, file names, prompts, responses, settings)
  goes through ``html.escape``; text inside figures goes through ``charts.plot_text``.
* Printable: each section starts on a new page (``break-before: page``), on A4 landscape,
  figures have a fixed width that fits the printable page; ``evalcore.report.pdf`` prints it.

Numbers are the analysis layer's, formatted only: proportions in percent (differences in
percentage points), other scales as they are.
"""

from __future__ import annotations

import html as _html
import math
from pathlib import Path

import pandas as pd

from evalcore import charts
from evalcore.analysis import AVERAGE_TASK, METHOD_LABELS
from evalcore.report.build import Report
from evalcore.report.methods import methods_paragraphs

FIG_WIDTH = 960          # px; fits A4 landscape with 12 mm margins (1,031 px at 96 dpi)
PROMPT_CHARS = 400       # texts of example disagreements are cut here (said in the report)

CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --rule:#d9dde5; --accent:#1f77b4; }
* { box-sizing: border-box; }
body { font: 15px/1.5 Inter, "Helvetica Neue", Helvetica, Arial, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1040px; padding: 24px 28px 60px; }
h1 { font-size: 28px; margin: 0 0 4px; } h2 { font-size: 22px; margin: 0 0 10px;
     border-bottom: 2px solid var(--accent); padding-bottom: 4px; }
h3 { font-size: 17px; margin: 22px 0 6px; } h4 { font-size: 15px; margin: 14px 0 4px; }
p { margin: 6px 0 10px; } .muted { color: var(--muted); font-size: 13px; }
.verdict { font-size: 17px; font-weight: 600; padding: 8px 12px; border-left: 4px solid var(--accent);
           background: #f2f6fb; margin: 8px 0 12px; }
.warning { padding: 6px 12px; border-left: 4px solid #d62728; background: #fdf1f1; margin: 6px 0; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { border-bottom: 1.5px solid var(--ink); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text { max-width: 260px; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
code, .hash { font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 11px; word-break: break-all; }
.fig { margin: 8px 0 16px; overflow-x: auto; }
nav ol { margin: 6px 0 0 18px; padding: 0; } nav a { color: var(--accent); }
section { break-before: page; page-break-before: always; padding-top: 8px; }
header + section, section:first-of-type { break-before: auto; page-break-before: auto; }
.methods p { text-align: justify; }
@page { size: A4 landscape; margin: 12mm; }
@media print { body { max-width: none; padding: 0; } nav { display: none; }
               .fig { overflow: visible; } tr, .fig { break-inside: avoid; } }
"""

CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'unsafe-inline'; img-src data: blob:; font-src data:")


def e(value) -> str:
    """A user string as HTML text (``<``, ``>``, ``&`` and quotes escaped)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return _html.escape(str(value), quote=True)


# ---- number formatting (display only) ----------------------------------------------------

def _missing(x) -> bool:
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def num(x, scale: float = 1.0, digits: int = 1, signed: bool = False) -> str:
    """``x * scale`` with ``digits`` decimals (percent/points) or 4 significant digits."""
    if _missing(x):
        return "–"
    v = float(x) * scale
    sign = "+" if signed else ""
    if scale == 100.0:
        return f"{v:{sign}.{digits}f}"
    return f"{v:{sign}.4g}"


def interval(est, low, high, scale: float, signed: bool = False) -> str:
    return f"{num(est, scale, 1, signed)} [{num(low, scale, 1, signed)}, {num(high, scale, 1, signed)}]"


def pval(p) -> str:
    if _missing(p):
        return "–"
    return "&lt;0.0001" if float(p) < 1e-4 else f"{float(p):.4f}"


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(),
           text: set[int] = frozenset()) -> str:
    """An HTML table from already-escaped cells."""
    def cls(i: int) -> str:
        return ' class="num"' if i in numeric else (' class="text"' if i in text else "")
    head = "".join(f"<th{cls(i)}>{h}</th>" for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---- figures -------------------------------------------------------------------------------

class _Figures:
    """Numbered figure divs; Plotly's JS is not included (it is inlined once in <head>)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, fig, caption: str = "") -> str:
        self.count += 1
        fig = fig.update_layout(width=FIG_WIDTH)
        div = fig.to_html(full_html=False, include_plotlyjs=False,
                          div_id=f"figure-{self.count}",
                          config={"displaylogo": False, "responsive": False,
                                  "displayModeBar": False},
                          default_width=f"{FIG_WIDTH}px",
                          default_height=f"{int(fig.layout.height or 450)}px")
        cap = f'<div class="muted">Figure {self.count}. {caption}</div>' if caption else ""
        return f'<div class="fig">{div}{cap}</div>'


def plotly_js() -> str:
    """The plotly.js bundle of the installed plotly (inlined once per report)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


# ---- sections ------------------------------------------------------------------------------

def _scale_of(values) -> float:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return 100.0 if len(v) and bool(((v >= 0) & (v <= 1)).all()) else 1.0


def leaderboard_section(report: Report, fig: _Figures) -> str:
    board = report.leaderboard
    cells = board.cells
    level = f"{board.confidence:.0%}"
    tasks = list(dict.fromkeys(cells["task"].astype(str)))
    scales = {t: _scale_of(cells.loc[cells["task"] == t, ["score", "low", "high"]].stack())
              for t in tasks}
    avg = board.averages.set_index(board.averages["run"].astype(str)) if len(board.averages) else None
    # runs with the most complete average first (an average over fewer tasks is not
    # comparable), then by score; runs without an average keep the cells' order after them
    order = (list(avg.assign(_k=-avg["n_tasks"].astype(float), _s=-avg["score"].astype(float))
                  .sort_values(["_k", "_s"]).index) if avg is not None else [])
    order += [r for r in dict.fromkeys(cells["run"].astype(str)) if r not in order]
    best = set()
    if len(board.tiers):
        t = board.tiers
        best = {(str(r), str(k)) for r, k, ok in zip(t["run"], t["task"],
                                                    t["indistinguishable_from_best"]) if bool(ok)}
        best |= {(str(r), str(k)) for r, k, b in zip(t["run"], t["task"], t["best_run"])
                 if str(r) == str(b)}
    by = {(str(r.run), str(r.task)): r for r in cells.itertuples(index=False)}
    headers = ["Run"] + [f"{e(t)}<br><span class='muted'>{e(board.metrics_by_task.get(t, ''))}"
                         f"{' (%)' if scales[t] == 100 else ''}</span>" for t in tasks]
    if avg is not None:
        headers.append("Macro average")
    most = int(avg["n_tasks"].max()) if avg is not None else 0
    rows = []
    for run in order:
        row = [e(run)]
        for t in tasks:
            c = by.get((run, t))
            if c is None:
                row.append("")
                continue
            mark = " ★" if (run, t) in best else ""
            row.append(f"{interval(c.score, c.low, c.high, scales[t])}{mark}"
                       f"<br><span class='muted'>n = {e(c.n)}</span>")
        if avg is not None:
            a = avg.loc[run] if run in avg.index else None
            k = 100.0 if all(s == 100.0 for s in scales.values()) else 1.0
            mark = " ★" if (run, AVERAGE_TASK) in best else ""
            if a is None or int(a.n_tasks) < 2:       # one task is not an average
                row.append("")
            else:
                fewer = int(a.n_tasks) < most
                row.append(f"{interval(a.score, a.low, a.high, k)}{mark}<br><span "
                           f"class='muted'>{int(a.n_tasks)}{f' of {most}' if fewer else ''} "
                           f"tasks{' (not comparable)' if fewer else ''}</span>")
        rows.append(row)
    methods = ", ".join(METHOD_LABELS.get(m, m) for m in dict.fromkeys(cells["method"].astype(str)))
    out = ['<section id="leaderboard"><h2>Leaderboard</h2>',
           f"<p>Score [{level} interval] per run and task; ★ = the best run or not "
           f"distinguishable from it (paired tests on shared items, Holm-adjusted). Interval "
           f"methods used: {e(methods)}.</p>",
           _table(headers, rows, numeric=set(range(1, len(headers))))]
    forest = charts.forest_plot(cells, board.averages if len(board.averages) else None,
                                method_label=METHOD_LABELS.get(board.method, board.method),
                                confidence=board.confidence,
                                percent={t: scales[t] == 100.0 for t in tasks}, run_order=order)
    out.append(fig(forest, f"Scores with {level} intervals (forest plot); open circles: the "
                           f"interval contains the chance level."))
    if len(board.ranks):
        r = board.ranks
        out.append("<h3>Rank intervals</h3>")
        out.append(_table(["Task", "Run", "Rank", f"{level} rank interval"],
                          [[e(x.task), e(x.run), e(x.rank), f"{e(x.rank_low)} – {e(x.rank_high)}"]
                           for x in r.sort_values(["task", "rank"]).itertuples(index=False)],
                          numeric={2, 3}))
    if board.notes:
        out.append("<h4>Notes</h4><ul>" + "".join(f"<li>{e(n)}</li>" for n in board.notes) + "</ul>")
    out.append("</section>")
    return "".join(out)


def comparison_block(sec, idx: int, fig: _Figures, n_examples: int) -> str:
    c = sec.comparison
    pt = c.per_task
    level = f"{c.confidence:.0%}"
    out = [f'<h3 id="comparison-{idx}">{e(c.run_b)} (B) against {e(c.run_a)} (A)</h3>']
    for w in c.warnings:
        out.append(f'<div class="warning">{e(w)}</div>')
    out.append(f'<div class="verdict">Verdict: {e(c.verdict)}</div>')
    rows = []
    frame = pt.to_dict("records") + ([c.overall] if c.overall else [])
    family = bool((pt["adjustment"] != "none").any())
    for r in frame:
        k = float(r.get("points_scale") or 1.0)
        overall = r.get("task") == AVERAGE_TASK
        sim = []
        if family:
            sim = ["–" if _missing(r.get("low_simultaneous")) else
                   f"[{num(r['low_simultaneous'], k, 1, True)}, "
                   f"{num(r['high_simultaneous'], k, 1, True)}]"]
        rows.append([
            "<b>Macro average</b>" if overall else e(r["task"]), e(r["metric"]), e(r["n"]),
            num(r["score_a"], k), num(r["score_b"], k),
            interval(r["diff"], r["low"], r["high"], k, signed=True), *sim,
            num(r["se"], k, 2), num(r["se_unpaired"], k, 2),
            "–" if _missing(r.get("correlation")) else f"{float(r['correlation']):.3f}",
            "–" if _missing(r.get("b")) else f"{int(r['b'])} / {int(r['c'])}",
            pval(r["p_exact"]) if not _missing(r.get("b")) else "–",
            pval(r.get("p_value", r["p_exact"])), pval(r["p_adjusted"]), num(r["mde"], k, 1),
            e(r.get("interval_method") or r["kind"]), e(r["verdict"])])
    unit = "points" if (pt["points_scale"] == 100.0).all() else "metric units"
    ci_head = f"B − A [{level} CI{', unadjusted' if family else ''}]"
    sim_head = [f"Simultaneous CI (Bonferroni, {len(pt)} tasks)"] if family else []
    width = 16 + len(sim_head)
    out.append(_table(["Task", "Metric", "n", "A", "B", ci_head, *sim_head, "SE paired",
                       "SE unpaired", "Corr.", "b / c", "p (McNemar)", "p", "p adj.", "MDE",
                       "Method", "Verdict"], rows, numeric=set(range(2, width - 2)),
                      text={width - 1}))
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    out.append(f"<p class='muted'>Scores and differences in {unit}. b = items only B got "
               f"right, c = items only A got right; p (McNemar) = exact two-sided McNemar; "
               f"p = the test the row's interval inverts, and for 0/1 scores the larger of it "
               f"and the exact McNemar p (the interval is widened to 0 where the exact test "
               f"does not reject no difference, so it excludes 0 exactly when p &lt; "
               f"{1 - c.confidence:.2g})"
               + (f"; p adj. = {e(', '.join(adj))} across {len(pt)} tasks; the verdicts "
                  f"follow p adj. and the intervals are unadjusted" if adj else "")
               + "; MDE at alpha = " + f"{1 - c.confidence:.2g}, power 0.8.</p>")
    if getattr(c, "family_note", ""):
        out.append(f"<p class='muted'>{e(c.family_note[:1].upper() + c.family_note[1:])}.</p>")
    out.append(fig(charts.answer_figure(pt, c.overall, run_a=c.run_a, run_b=c.run_b,
                                        confidence=c.confidence, verdict=c.verdict),
                   f"Is {e(c.run_b)} better than {e(c.run_a)}? Paired difference B − A with "
                   f"its {level} interval per task and overall."))
    for r in pt.itertuples(index=False):
        if _missing(r.b):
            continue
        out.append(f"<h4>{e(r.task)}: the 2x2 table of shared items (n = {int(r.n)})</h4>")
        out.append(_table(["", "B right", "B wrong"],
                          [["A right", f"{int(r.both)} (both)", f"{int(r.c)} (c: only A)"],
                           ["A wrong", f"{int(r.b)} (b: only B)", f"{int(r.neither)} (neither)"]],
                          numeric={1, 2}))
        ex = sec.examples.get(str(r.task))
        if ex is not None and len(ex):
            out.append(f"<p class='muted'>Example disagreements (the first {n_examples} of "
                       f"b = {int(r.b)} and of c = {int(r.c)}, by item id; texts cut at "
                       f"{PROMPT_CHARS} characters).</p>")
            out.append(_table(["Item", "Cell", "Prompt", "Target", "Response A", "Response B"],
                              [[e(x.item_id), "only B right" if x.cell == "b" else "only A right",
                                _cut(x.prompt), _cut(x.target), _cut(x.response_a),
                                _cut(x.response_b)] for x in ex.itertuples(index=False)],
                              text={2, 3, 4, 5}))
    if len(c.protocol_diff):
        pdf = c.protocol_diff
        out.append("<h4>Recorded settings that differ</h4>")
        out.append(_table(["Scope", "Setting", "A", "B"] + (["Category"] if "category" in pdf else []),
                          [[e(x["scope"]), e(x["setting"]), _cut(x["value_a"], 120),
                            _cut(x["value_b"], 120)] + ([e(x["category"])] if "category" in pdf else [])
                           for x in pdf.to_dict("records")], text={2, 3}))
    return "".join(out)


def _cut(text, limit: int = PROMPT_CHARS) -> str:
    if _missing(text):
        return "–"
    s = str(text)
    return e(s if len(s) <= limit else s[:limit] + " …")


def comparisons_section(report: Report, fig: _Figures) -> str:
    parts = ['<section id="comparisons"><h2>Pairwise comparisons</h2>',
             "<p>Each comparison pairs the two runs on the items both answered; differences "
             "are B − A.</p>"]
    for i, sec in enumerate(report.comparisons, 1):
        parts.append(comparison_block(sec, i, fig, report.spec.n_examples))
    parts.append("</section>")
    return "".join(parts)


def repeats_section(report: Report, fig: _Figures) -> str:
    level = f"{report.spec.confidence:.0%}"
    out = ['<section id="repeats"><h2>Repeats and clusters</h2>']
    if report.clusters:
        out.append("<h3>Clustered standard errors</h3>")
        rows = []
        for c in report.clusters:
            k = _scale_of([c.score, c.low, c.high])
            rows.append([e(c.run), e(c.task), e(c.metric), f"{c.n:,}", f"{c.n_clusters:,}",
                         num(c.score, k), num(c.se_iid, k, 2), num(c.se_clustered, k, 2),
                         f"{c.design_effect:.2f}",
                         "–" if _missing(c.width_ratio) else f"{c.width_ratio:.2f}",
                         f"{c.icc:.3f}", f"[{num(c.iid_low, k)}, {num(c.iid_high, k)}]",
                         f"[{num(c.low, k)}, {num(c.high, k)}]"])
        out.append(_table(["Run", "Task", "Metric", "n", "G", "Score", "SE iid", "SE clustered",
                           "Design effect", "× wider", "ICC", f"{level} CI (iid)",
                           f"{level} CI (clustered)"], rows,
                          numeric=set(range(3, 13))))
        out.append("<p class='muted'>CI (clustered): the leaderboard's (Korn-Graubard for 0/1 "
                   "scores); CI (iid): Wilson for 0/1 scores; × wider: the ratio of their "
                   "widths.</p>")
    if report.repeats:
        out.append("<h3>Several answers per item</h3>")
        rows = []
        for r in report.repeats:
            rows.append([e(r.run), e(r.task), e(r.metric), f"{r.n_items:,}", str(r.k_observed),
                         f"{r.between:.4g}", f"{r.within:.4g}", num(r.se_observed, 100.0, 2),
                         str(r.k_sufficient)])
        out.append(_table(["Run", "Task", "Metric", "Items", "K", "s_b²", "s_w²",
                           "SE at K (pp)", "Sufficient K"], rows, numeric=set(range(3, 9))))
        r0 = report.repeats[0]
        out.append(fig(charts.se_vs_k_plot(r0.curve, k_observed=r0.k_observed,
                                           se_observed=r0.se_observed,
                                           k_sufficient=r0.k_sufficient),
                       f"SE against answers per item for {e(r0.run)} on {e(r0.task)}; the "
                       f"dashed floor is what only more items lower."))
        out.append("<p class='muted'>Sufficient K: the smallest K after which one more answer "
                   "cuts the SE by less than 1%.</p>")
    out.append("</section>")
    return "".join(out)


def planner_section(report: Report) -> str:
    out = ['<section id="planner"><h2>Planning the next evaluation</h2>']
    sentences = []
    rows = []
    for p in report.plans:
        pl = p.pilot
        need = {d: n for d, n in p.required}
        rows.append([e(pl.run_a), e(pl.run_b), e(pl.task), e(pl.metric), f"{pl.n:,}",
                     f"{pl.sd_diff:.4f}", f"{pl.disagreement:.3f}", f"{p.design_effect:.2f}",
                     num(p.mde, 100.0, 1)] + [f"{n:,}" for n in need.values()])
        if p is report.plans[0] or len(report.plans) <= 4:
            parts = [f"{num(d, 100.0, 0)} point{'' if round(d * 100) == 1 else 's'} you "
                     f"need {n:,} items" for d, n in p.required]
            sentences.append(f"<li>{e(pl.task)} ({e(pl.run_b)} vs {e(pl.run_a)}, n = {pl.n:,}): "
                             f"to detect {', '.join(parts)}; with n = {pl.n:,} the smallest "
                             f"detectable gap is {num(p.mde, 100.0, 1)} points.</li>")
    deltas = [d for d, _ in report.plans[0].required]
    p0 = report.plans[0]
    out.append(f"<p>Items needed for a paired comparison at alpha = {p0.alpha:.2g} (two-sided) "
               f"and power {p0.power:g}, with the sd of the per-item differences (and the "
               f"design effect, where items are clustered) taken from each pilot pair.</p>")
    out.append("<ul>" + "".join(sentences) + "</ul>")
    out.append(_table(["A", "B", "Task", "Metric", "Pilot n", "sd(d)", "Disagreement",
                       "Design effect", "MDE at n (points)"]
                      + [f"n for {num(d, 100.0, 0)} pt" for d in deltas], rows,
                      numeric=set(range(4, 9 + len(deltas)))))
    sources = sorted({p.source for p in report.plans})
    out.append(f"<p class='muted'>Pilot pairs: {e(', '.join(sources))}. Gaps are in points "
               f"of a score on a [0, 1] scale.</p></section>")
    return "".join(out)


def methods_section(report: Report) -> str:
    paras = "".join(f"<p><b>{e(h)}.</b> {e(t)}</p>" for h, t in methods_paragraphs(report))
    return f'<section id="methods" class="methods"><h2>Methods</h2>{paras}</section>'


def provenance_section(report: Report) -> str:
    out = ['<section id="provenance"><h2>Provenance</h2>',
           "<p>Each run as the store records it: harness and version, upload time, and its "
           "source files with their SHA-256 content hashes.</p>"]
    for p in report.provenance:
        harness = " ".join(x for x in (p.harness or p.source_format, p.harness_version) if x)
        out.append(f"<h4>{e(p.name)}</h4><p class='muted'>model {e(p.model)} · {e(harness)} · "
                   f"uploaded {e(p.created_at)}</p>")
        if p.files:
            out.append(_table(["File", "SHA-256", "Bytes", "Format", "Added"],
                              [[e(f["name"]), f"<span class='hash'>{e(f['sha256'])}</span>",
                                f"{f['size']:,}", e(f["format"]), e(f["added_at"])]
                               for f in p.files], numeric={2}))
        else:
            out.append("<p class='muted'>No source file recorded.</p>")
    out.append("</section>")
    return "".join(out)


TITLES = {"leaderboard": "Leaderboard", "comparisons": "Pairwise comparisons",
          "repeats": "Repeats and clusters", "planner": "Planning the next evaluation",
          "methods": "Methods", "provenance": "Provenance"}


def render_html(report: Report) -> str:
    """The report as one HTML document (str)."""
    fig = _Figures()
    body = []
    shown = [s for s in ("leaderboard", "comparisons", "repeats", "planner", "methods",
                         "provenance") if report.has(s)]
    for s in shown:
        if s == "leaderboard":
            body.append(leaderboard_section(report, fig))
        elif s == "comparisons":
            body.append(comparisons_section(report, fig))
        elif s == "repeats":
            body.append(repeats_section(report, fig))
        elif s == "planner":
            body.append(planner_section(report))
        elif s == "methods":
            body.append(methods_section(report))
        else:
            body.append(provenance_section(report))
    notes = ("<ul class='muted'>" + "".join(f"<li>{e(n)}</li>" for n in report.notes) + "</ul>"
             if report.notes else "")
    nav = "<nav><ol>" + "".join(f'<li><a href="#{s}">{TITLES[s]}</a></li>' for s in shown) + \
        "</ol></nav>"
    head = (f"<header><h1>{e(report.spec.title)}</h1><p class='muted'>Generated "
            f"{e(report.created_at)} by evalbars {e(report.version)} · "
            f"{len(report.provenance)} run(s) · confidence {report.spec.confidence:.0%}</p>"
            f"{nav}{notes}</header>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta name=\"generator\" content=\"evalbars {e(report.version)}\">"
            f"<title>{e(report.spec.title)}</title><style>{CSS}</style>"
            + (f"<script type=\"text/javascript\">{plotly_js()}</script>" if fig.count else "")
            + "</head><body>"
            f"{head}{''.join(body)}</body></html>\n")


def write_html(report: Report, path: str | Path) -> Path:
    """Write ``render_html(report)`` to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(render_html(report), encoding="utf-8")
    return path
