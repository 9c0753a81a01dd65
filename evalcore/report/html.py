"""Render a ``Report`` as one self-contained HTML file.

* Answer first: page 1 holds the key findings (``evalcore.report.findings``): each
  comparison's verdict with its interval, the leaderboard's top group and the items needed for
  the gap of interest. The evidence follows: leaderboard, comparisons, repeats and clusters,
  planner, methods, and an appendix (summary-only runs, provenance, notes).
* Offline: Plotly's JavaScript is inlined once in ``<head>`` (``plotly.offline.get_plotlyjs``)
  and every figure is written with ``include_plotlyjs=False``; there is no external ``src``
  or ``href``, and a Content-Security-Policy (``default-src 'none'``) tells the browser to
  make no request at all, so the file can be mailed and opened anywhere.
* Safe: every user string (run, task, metric, file names, prompts, responses, settings)
  goes through ``html.escape``; text inside figures goes through ``charts.plot_text``.
* Printable: A4 landscape; the leaderboard, the comparisons, the methods and the appendix
  start new pages; tall figures are scaled down for print so each fits a page; names break
  only after '/', '-' and '_' (``format.name``). ``evalcore.report.pdf`` prints it.

Numbers are the analysis layer's, formatted only: proportions in percent (differences in
percentage points), other scales as they are; method names are ``evalcore.words``'.
"""

from __future__ import annotations

from pathlib import Path

from evalcore import charts
from evalcore.metrics import percent_scale
from evalcore.report.build import Report
from evalcore.report.findings import key_findings
from evalcore.report.format import (PRINT_ZOOM, Figures, e, gap_unit, missing, name, num,
                                    scale_of, table)
from evalcore.report.html_appendix import appendix_section
from evalcore.report.html_board import leaderboard_section
from evalcore.report.html_compare import comparisons_section
from evalcore.report.html_findings import findings_section
from evalcore.report.methods import methods_paragraphs

CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --rule:#d9dde5; --accent:#1f77b4; }
* { box-sizing: border-box; }
body { font: 14px/1.45 Inter, "Helvetica Neue", Helvetica, Arial, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1200px; padding: 20px 28px 60px; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 19px; margin: 0 0 8px; border-bottom: 2px solid var(--accent);
     padding-bottom: 3px; }
h3 { font-size: 15.5px; margin: 16px 0 5px; } h4 { font-size: 14px; margin: 12px 0 4px; }
h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
p { margin: 4px 0 8px; } ul { margin: 4px 0 8px; padding-left: 20px; } li { margin: 2px 0; }
.muted, .caption { color: var(--muted); font-size: 12px; }
.verdict { font-size: 14px; font-weight: 600; padding: 4px 10px; margin: 6px 0 4px;
           border-left: 4px solid var(--accent); background: #f2f6fb; }
.warning { padding: 4px 10px; border-left: 4px solid #d62728; background: #fdf1f1;
           margin: 6px 0; font-size: 12px; }
.warning ul { margin: 2px 0; }
.collapsed { font-size: 12.5px; padding: 4px 8px; background: #f6f7f9; }
.name { overflow-wrap: normal; word-break: normal; hyphens: none; }
.name.short { white-space: nowrap; }
.rank { color: var(--muted); font-size: 0.85em; }
table { border-collapse: collapse; margin: 4px 0 10px; font-size: 12px; }
th, td { padding: 2px 7px; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { border-bottom: 1.5px solid var(--ink); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.text { min-width: 16em; }
table.results td.text, table.findings td.text { min-width: 24em; }
table.findings, table.examples { width: 100%; }
table.examples { font-size: 10px; }
table.examples td.text { overflow-wrap: break-word; min-width: 9em; }
table.examples td.text:nth-child(4) { min-width: 22em; }
table.small, table.settings { font-size: 10.5px; }
table.provenance { font-size: 9px; line-height: 1.15; width: 100%; }
table.provenance td { padding: 0 5px; white-space: nowrap; border-bottom: none; }
table.provenance tr.first td { border-top: 1px solid var(--rule); }
table.provenance .hash { font-size: 9px; }
p.series { font-size: 10.5px; margin: 2px 0 4px; }
table.details td:nth-child(2), table.examples td:nth-child(3) { white-space: nowrap; }
code, .hash, .url { font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 10.5px; }
.url { overflow-wrap: break-word; }
.fig { margin: 6px 0 10px; overflow-x: auto; }
nav ol { margin: 4px 0 0 18px; padding: 0; } nav a { color: var(--accent); }
nav li { display: inline; margin-right: 14px; }
section { padding-top: 6px; }
section.page, .newpage { break-before: page; page-break-before: always; }
.methods .columns { columns: 2; column-gap: 26px; font-size: 11.5px; line-height: 1.4; }
.methods p { text-align: justify; margin: 0 0 7px; }
@page { size: A4 landscape; margin: 11mm; }
@media print { body { max-width: none; padding: 0; zoom: PRINT_ZOOM; } nav { display: none; }
               .fig { overflow: visible; zoom: var(--print-zoom, 1); }
               tr, .fig, .verdict, .warning, .collapsed { break-inside: avoid; } }
"""

CSS = CSS.replace("PRINT_ZOOM", f"{PRINT_ZOOM:g}")

CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
       "style-src 'unsafe-inline'; img-src data: blob:; font-src data:")

TITLES = {"findings": "Key findings", "leaderboard": "Leaderboard",
          "comparisons": "Pairwise comparisons", "repeats": "Repeats and clusters",
          "planner": "Planning the next evaluation", "methods": "Methods",
          "appendix": "Appendix"}


def plotly_js() -> str:
    """The plotly.js bundle of the installed plotly (inlined once per report)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


# ---- repeats and clusters ------------------------------------------------------------------

def _cell_scale(report: Report, run: str, task: str) -> float:
    """100 when the leaderboard's cell for (run, task) is a proportion, else 1 (metric units:
    the safe label when the board does not say)."""
    board = report.leaderboard
    if board is None:
        return 1.0
    c = board.cells[(board.cells["run"].astype(str) == run) & (board.cells["task"] == task)]
    infos = getattr(board, "metric_info", None) or {}
    return percent_scale(c["score"], infos.get(task)) if len(c) else 1.0


def _clusters_table(report: Report, level: str) -> str:
    rows = []
    for c in report.clusters:
        k = scale_of([c.score, c.low, c.high])
        rows.append([name(c.run), name(c.task), e(c.metric), f"{c.n:,}", f"{c.n_clusters:,}",
                     num(c.score, k), num(c.se_iid, k, 2), num(c.se_clustered, k, 2),
                     f"{c.design_effect:.2f}",
                     "–" if missing(c.width_ratio) else f"{c.width_ratio:.2f}",
                     f"{c.icc:.3f}", f"[{num(c.iid_low, k)}, {num(c.iid_high, k)}]",
                     f"[{num(c.low, k)}, {num(c.high, k)}]"])
    unit = "%" if all(scale_of([c.score, c.low, c.high]) == 100 for c in report.clusters) \
        else "metric units"
    se_unit = "points" if unit == "%" else "metric units"
    return (table(["Run", "Task", "Metric", "n (items)", "Clusters (G)", f"Score ({unit})",
                   f"SE if items were independent ({se_unit})",
                   f"SE allowing for clusters ({se_unit})", "Design effect (variance ratio)",
                   "Interval × wider", "ICC", f"{level} CI, items independent ({unit})",
                   f"{level} CI, allowing for clusters ({unit})"], rows,
                  numeric=set(range(3, 13)), css="small")
            + "<p class='muted'>The interval allowing for clusters is the leaderboard's "
              "(Korn-Graubard for 0/1 scores); the one for independent items is the Wilson "
              "score interval for 0/1 scores; × wider is the ratio of their widths; ICC: the "
              "intra-cluster correlation (may be negative).</p>")


def _repeats_table(report: Report) -> str:
    rows, units = [], set()
    for r in report.repeats:
        k = _cell_scale(report, r.run, r.task)
        units.add(k)
        rows.append([name(r.run), name(r.task), e(r.metric), f"{r.n_items:,}", str(r.k_observed),
                     num(r.between, k * k, 3), num(r.within, k * k, 3),
                     num(r.se_observed, k, 2), str(r.k_sufficient)])
    unit = gap_unit(units.pop()) if len(units) == 1 else "points or metric units"
    return table(["Run", "Task", "Metric", "Items", "Answers per item (K)",
                  f"Between-item variance ({unit}²)", f"Within-item variance ({unit}²)",
                  f"SE at K ({unit})", "Enough answers (K)"], rows,
                 numeric=set(range(3, 9)), css="small")


def repeats_section(report: Report, fig: Figures) -> str:
    level = f"{report.spec.confidence:.0%}"
    out = ['<section id="repeats"><h2>Repeats and clusters</h2>']
    if report.clusters:
        out.append("<h3>Clustered standard errors</h3>" + _clusters_table(report, level))
    if report.repeats:
        out.append("<h3>Several answers per item</h3>" + _repeats_table(report))
        r0 = report.repeats[0]
        out.append(fig(charts.se_vs_k_plot(r0.curve, k_observed=r0.k_observed,
                                           se_observed=r0.se_observed,
                                           k_sufficient=r0.k_sufficient),
                       f"SE against answers per item for {e(r0.run)} on {e(r0.task)}; the "
                       f"dashed floor is what only more items lower.", print_height=260))
        out.append("<p class='muted'>Enough answers: the smallest K after which one more "
                   "answer cuts the SE by less than 1%.</p>")
    out.append("</section>")
    return "".join(out)


# ---- planner, methods ----------------------------------------------------------------------

def planner_section(report: Report) -> str:
    p0 = report.plans[0]
    deltas = [d for d, _ in p0.required]
    rows = []
    for p in report.plans:
        pl = p.pilot
        rows.append([name(pl.run_a), name(pl.run_b), name(pl.task), e(pl.metric), f"{pl.n:,}",
                     num(pl.sd_diff, 100.0, 1), num(pl.disagreement, 100.0, 1),
                     f"{p.design_effect:.2f}", num(p.mde, 100.0, 1)]
                    + [f"{n:,}" for _, n in p.required])
    sources = sorted({p.source for p in report.plans})
    heads = [f"Items for {num(d, 100.0, 0)} point{'' if round(d * 100) == 1 else 's'}"
             for d in deltas]
    return ('<section id="planner"><h2>Planning the next evaluation</h2>'
            f"<p>Items needed for a paired comparison at alpha = {p0.alpha:.2g} (two-sided) "
            f"and power {p0.power:.0%}, with the SD of the per-item differences (and the "
            f"design effect, where items are clustered) taken from each pilot pair "
            f"({e(', '.join(sources))}). Gaps and SDs are in points of a score on a [0, 1] "
            f"scale.</p>"
            + table(["A", "B", "Task", "Metric", "Pilot n (items)", "SD of differences "
                     "(points)", "Items that differ (%)", "Design effect",
                     "Smallest detectable gap at pilot n (points)", *heads], rows,
                    numeric=set(range(4, 9 + len(deltas))), css="small")
            + "</section>")


def methods_section(report: Report) -> str:
    paras = "".join(f"<p><b>{e(h)}.</b> {e(t)}</p>" for h, t in methods_paragraphs(report))
    return (f'<section id="methods" class="methods"><h2>Methods</h2>'
            f'<div class="columns">{paras}</div></section>')


# ---- the document --------------------------------------------------------------------------

def _body(report: Report, fig: Figures) -> tuple[list[str], list[str]]:
    """(section ids shown, their HTML) in the report's order."""
    shown, body = [], []
    findings = key_findings(report)
    parts = [("findings", lambda: findings_section(findings) if findings else ""),
             ("leaderboard", lambda: leaderboard_section(report, fig)
              if report.has("leaderboard") else ""),
             ("comparisons", lambda: comparisons_section(report, fig)
              if report.has("comparisons") else ""),
             ("repeats", lambda: repeats_section(report, fig) if report.has("repeats") else ""),
             ("planner", lambda: planner_section(report) if report.has("planner") else ""),
             ("methods", lambda: methods_section(report) if report.has("methods") else ""),
             ("appendix", lambda: appendix_section(report))]
    for sid, render in parts:
        html = render()
        if html:
            shown.append(sid)
            body.append(html)
    return shown, body


def render_html(report: Report) -> str:
    """The report as one HTML document (str)."""
    fig = Figures()
    shown, body = _body(report, fig)
    nav = "<nav><ol>" + "".join(f'<li><a href="#{s}">{TITLES[s]}</a></li>' for s in shown) + \
        "</ol></nav>"
    runs = len(report.provenance)
    head = (f"<header><h1>{e(report.spec.title)}</h1><p class='muted'>Generated "
            f"{e(report.created_at)} by evalbars {e(report.version)}"
            + (f" · {runs} run{'s' if runs != 1 else ''}" if runs else "")
            + f" · confidence {report.spec.confidence:.0%}</p>{nav}</header>")
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

