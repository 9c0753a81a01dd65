"""Plotly chart builders shared by the pages and the report (no statistics: inputs are
evalcore results; no Streamlit: ``ui.charts`` re-exports them for the pages and
``evalcore.report`` draws the same figures into its HTML).

Each builder takes the frames/values an ``evalcore.analysis`` result already holds and
returns a ``plotly.graph_objects.Figure`` whose hover shows the exact numbers (estimate,
interval, n, method). User strings (run and task names) pass through :func:`plot_text`.
Proportions are drawn in percent (differences in percentage points) when ``percent``.
"""

from __future__ import annotations

import html
import math
import re
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
# marks of a comparison row by its verdict (``verdict_colors``)
B_BETTER_COLOR, A_BETTER_COLOR, NO_DIFFERENCE_COLOR = "#2ca02c", "#d62728", "#7f7f7f"
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=13)
AVERAGE_PANEL = "Macro average"


def plot_text(value) -> str:
    """``value`` for a Plotly label/hover: Plotly reads a subset of HTML tags in text, so
    ``<``, ``>`` and ``&`` become entities (Plotly shows them as the characters)."""
    return html.escape(str(value), quote=False)


def _list(values) -> list:
    """Plain Python list (Plotly would otherwise encode numpy arrays as binary typed arrays;
    lists keep the figure JSON readable, e.g. for tests and exported specs)."""
    return np.asarray(values, dtype=object if isinstance(values, np.ndarray) and
                      values.dtype == object else None).tolist()


def _scale(percent: bool) -> float:
    return 100.0 if percent else 1.0


def _vline_log(fig: go.Figure, x: float, text: str) -> None:
    """A dotted vertical line with a label on a log x axis (Plotly places annotations on log
    axes in log10 units, shapes in data units)."""
    fig.add_vline(x=x, line_dash="dot", line_color="#666")
    fig.add_annotation(x=math.log10(x), y=1.0, xref="x", yref="paper", text=text,
                       showarrow=False, yanchor="bottom", font=dict(size=11))


_BASE_LAYOUT = dict(font=FONT, template="plotly_white", showlegend=False,
                    margin=dict(l=10, r=20, t=60, b=40), hoverlabel=dict(align="left"))


def _base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """Title, height and the shared look (``_BASE_LAYOUT``). Returns a new figure, the same
    JSON as ``fig.update_layout(..., template="plotly_white")`` (held by a test) without
    validating the named template again for every figure (about 10 ms each)."""
    fig.update_layout(title=dict(text=title, x=0, xanchor="left"), height=height,
                      **{k: v for k, v in _BASE_LAYOUT.items() if k != "template"})
    # the figure's own property dicts (what to_dict deep-copies, default template
    # included): the new figure copies what it is given, and ``fig`` is not used again
    data, layout = fig._data, fig._layout
    if "template" not in layout:     # no default template (pio.templates.default is None)
        return fig.update_layout(template=_BASE_LAYOUT["template"])
    # the default template a figure got at its creation is replaced in place, as
    # update_layout does
    layout = dict(layout, template=_template(_BASE_LAYOUT["template"]))
    return go.Figure(data=data, layout=layout, _validate=False)


def _template(name: str) -> dict:
    """A named Plotly template as the dict validation would put in the layout (built once
    per process; each figure gets its own deep copy through Plotly)."""
    got = _TEMPLATES.get(name)
    if got is None:
        got = _TEMPLATES[name] = go.Layout(template=name).to_plotly_json()["template"]
    return got


_TEMPLATES: dict[str, dict] = {}


def figure_from_dicts(data: list[dict], layout: dict) -> go.Figure:
    """``go.Figure(data=data, layout=layout)`` without Plotly's property-by-property
    validation (``_validate=False``): the same figure and the same JSON for the plain dicts
    the builders here write (lists, not numpy arrays; a template named by a string is
    replaced by its dict, as validation does), about 10x faster for a figure with 20
    panels. ``tests/test_charts_layout.py`` holds the JSON equal to the validated
    construction. Only for dicts built in this module: anything else goes through
    ``go.Figure``."""
    template = layout.get("template")
    if isinstance(template, str):
        layout = dict(layout, template=_template(template))
    layout = _sorted_keys(layout, subplots=True)
    data = [dict(_sorted_keys({k: v for k, v in t.items() if k != "type"}), type=t["type"])
            if "type" in t else _sorted_keys(t) for t in data]
    return go.Figure(data=data, layout=layout, _validate=False)


_SUBPLOT_KEY = re.compile(r"^[a-z]+axis[0-9]+$")


def _sorted_keys(value, subplots: bool = False):
    """``value`` with every dict's keys in the order validation writes them (by name; a
    trace's ``type`` last, done by the caller; in the layout, numbered axes after the other
    keys, in the order given, and the template as validation wrote it), so the figure JSON is byte for byte the validated one. Lists
    of numbers or strings are kept as they are."""
    if isinstance(value, dict):
        keys = sorted(k for k in value if not (subplots and _SUBPLOT_KEY.match(k)))
        if subplots:
            keys += [k for k in value if _SUBPLOT_KEY.match(k)]
        return {k: value[k] if subplots and k == "template" else _sorted_keys(value[k])
                for k in keys}
    if isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        return [_sorted_keys(v) for v in value]
    return value


# the forest plot (``evalcore.charts_forest``) builds on this module; its names stay
# importable from here, loaded on first use (PEP 562)
_FOREST_NAMES = frozenset({"CHAR_EM", "PAGE_WIDTH", "RUN_LABEL_CHARS", "TITLE_LINES",
                           "TITLE_WIDTH", "forest_plot", "is_forest", "relayout_forest",
                           "short_labels", "subplot_grid", "wrap_title"})


def __getattr__(name: str):
    if name in _FOREST_NAMES:
        from evalcore import charts_forest
        return getattr(charts_forest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def verdict_colors(rows: pd.DataFrame, confidence: float) -> list[str]:
    """The colour of each comparison row's mark, from its verdict: green where B is called
    better, red where A is, blue where the runs differ on a metric without a direction, grey
    where no difference was detected. The decision is the row's ``different`` column (the
    adjusted p below alpha, ``analysis.compare``); rows without one fall back to
    p_adjusted < 1 - confidence, and without a p to the interval excluding 0."""
    n = len(rows)
    diff = rows["diff"].astype(float).to_numpy()
    excl = ((rows["low"].astype(float) > 0) | (rows["high"].astype(float) < 0)).to_numpy()
    p_adj = rows["p_adjusted"].astype(float).to_numpy() if "p_adjusted" in rows \
        else np.full(n, np.nan)
    decided = np.where(np.isfinite(p_adj), p_adj < 1.0 - confidence, excl)
    if "different" in rows:
        given = rows["different"].to_numpy(dtype=object)
        decided = np.array([bool(g) if isinstance(g, (bool, np.bool_)) else bool(d)
                            for g, d in zip(given, decided)])
    better = rows["better"].to_numpy(dtype=object) if "better" in rows else \
        np.full(n, None, dtype=object)
    out = []
    for dec, bet, d in zip(decided, better, diff):
        side = bet if isinstance(bet, str) else ("B" if d > 0 else "A" if d < 0 else "")
        if not dec:
            out.append(NO_DIFFERENCE_COLOR)
        elif side == "B":
            out.append(B_BETTER_COLOR)
        elif side == "A":
            out.append(A_BETTER_COLOR)
        else:
            out.append(COLORS[0])
    return out


def difference_plot(per_task: pd.DataFrame, overall: dict | None, *, label_a: str, label_b: str,
                    confidence: float, scales: Sequence[float] | None = None) -> go.Figure:
    """Paired difference B − A per task (and overall) with its interval, zero line drawn.

    per_task : Comparison.per_task (task, n, diff, se, low, high, p_value or p_exact,
        p_adjusted, and ``different``/``better`` for the colours: ``verdict_colors``).
    overall : Comparison.overall (same keys) or None.
    scales : per-task display factor (100 = percentage points, 1 = raw units); default 100.
        The overall row is in pp only when every task is.
    """
    rows = per_task.copy()
    rows["label"] = rows["task"].astype(str)
    rows["scale"] = list(scales) if scales is not None else 100.0
    if overall and len(per_task) > 1:
        extra = {c: overall.get(c, np.nan) for c in rows.columns}
        extra["label"] = AVERAGE_PANEL
        extra["scale"] = 100.0 if (rows["scale"] == 100.0).all() else 1.0
        rows = pd.concat([rows, pd.DataFrame([extra])], ignore_index=True)
    k = rows["scale"].astype(float)
    percent = bool((k == 100.0).all())
    diff, low, high = (rows[c].astype(float) * k for c in ("diff", "low", "high"))
    p_adj = rows["p_adjusted"] if "p_adjusted" in rows else pd.Series(np.nan, index=rows.index)
    p_col = "p_value" if "p_value" in rows else "p_exact"
    p_raw = rows[p_col] if p_col in rows else pd.Series(np.nan, index=rows.index)
    colors = verdict_colors(rows, confidence)
    words = ["different" if c != NO_DIFFERENCE_COLOR else "no difference detected"
             for c in colors]
    custom = np.column_stack([low, high, rows["se"].astype(float) * k, rows["n"].astype(object),
                              p_raw.map(_p_text), p_adj.map(_p_text),
                              np.where(k == 100.0, "pp", "raw"), words])
    labels = [plot_text(v) for v in rows["label"]]
    unit = "pp" if percent else "pp or raw units"
    trace = dict(
        type="scatter", x=_list(diff), y=labels, mode="markers",
        marker=dict(size=11, color=colors, symbol="square"),
        error_x=dict(type="data", symmetric=False, array=_list(high - diff),
                     arrayminus=_list(diff - low), thickness=1.8, width=5, color="#444"),
        customdata=_list(custom),
        hovertemplate=(f"<b>%{{y}}</b><br>B − A = %{{x:+.2f}} %{{customdata[6]}}<br>"
                       f"{confidence:.0%} CI [%{{customdata[0]:.2f}}, %{{customdata[1]:.2f}}]<br>"
                       f"SE %{{customdata[2]:.2f}}<br>n = %{{customdata[3]}}<br>"
                       f"p %{{customdata[4]}}<br>p adjusted %{{customdata[5]}}<br>"
                       f"verdict: %{{customdata[7]}}<extra></extra>"))
    return _difference_figure(
        trace, zero_line=dict(color="#444", width=1),
        xaxis=dict(title=dict(text=f"difference {plot_text(label_b)} − {plot_text(label_a)} "
                                   f"({unit})"), zeroline=False),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(labels)),
                   type="category"),
        title=f"Paired difference with {confidence:.0%} intervals (colour: the verdict)",
        height=140 + 40 * len(labels))


def _difference_figure(trace: dict, *, zero_line: dict, xaxis: dict, yaxis: dict, title: str,
                       height: int, annotations: list[dict] | None = None,
                       margin: dict | None = None) -> go.Figure:
    """One scatter trace of differences with a vertical line at 0: the figure of
    ``go.Figure(go.Scatter(**trace))``, ``add_vline(x=0, line=zero_line)``,
    ``update_xaxes(**xaxis)``, ``update_yaxes(**yaxis)``, ``add_annotation`` of each
    ``annotations`` item, ``_base_layout(fig, title, height)`` and
    ``update_layout(margin=margin)``, built by ``_one_trace_figure``."""
    shapes = [dict(type="line", x0=0, x1=0, xref="x", y0=0, y1=1, yref="y domain",
                   line=zero_line)]
    extra = {"annotations": annotations} if annotations else {}
    return _one_trace_figure(trace, title=title, height=height, margin=margin, shapes=shapes,
                             xaxis=xaxis, yaxis=yaxis, **extra)


def _one_trace_figure(trace: dict, *, title: str, height: int, margin: dict | None = None,
                      **layout) -> go.Figure:
    """One trace and a few layout entries (axes, shapes, annotations) from plain dicts,
    without Plotly's validation: the same figure and JSON, key for key, as the trace's
    ``go.Figure(go.<Type>(...))``, the entries set by Plotly's ``update_*axes`` /
    ``add_shape`` / ``add_annotation``, then ``_base_layout(fig, title, height)`` and
    ``update_layout(margin=margin)`` (``tests/test_charts_layout.py`` holds the JSON
    equal). Objects Plotly constructs (the trace, each shape and annotation, the title)
    list their keys by name; the axes and the margin keep the order they were updated in,
    as Plotly does, so axis dicts are passed in update order."""
    out = dict(_BASE_LAYOUT, template=_template(_BASE_LAYOUT["template"]),
               margin=dict(_BASE_LAYOUT["margin"], **(margin or {})),
               title=_sorted_keys(dict(text=title, x=0, xanchor="left")), height=height)
    for key, value in layout.items():
        out[key] = [_sorted_keys(v) for v in value] if key in ("shapes", "annotations") \
            else value
    data = [dict(_sorted_keys({k: v for k, v in trace.items() if k != "type"}),
                 type=trace["type"])]
    return go.Figure(data=data, layout=dict(sorted(out.items())), _validate=False)


def _p_text(p: float) -> str:
    if p is None or pd.isna(p):
        return "–"
    return "<0.0001" if p < 1e-4 else f"{float(p):.4f}"


def mcnemar_table(both: int | None, b: int, c: int, neither: int | None, *, label_a: str,
                  label_b: str, p_exact: float | None = None) -> go.Figure:
    """The 2x2 agreement table of two runs on shared 0/1 items.

    Rows: run A right / wrong; columns: run B right / wrong. b = only B right (A wrong,
    B right), c = only A right. Only the b + c discordant cells carry evidence; they are
    highlighted. ``both``/``neither`` may be None when unknown.
    """
    a, bb = plot_text(label_a), plot_text(label_b)
    counts = [[both, c], [b, neither]]
    total = sum(v for v in (both, b, c, neither) if v is not None)
    z = [[0.15, 1.0], [1.0, 0.15]]
    text = [[_cell_text(v, name, total) for v, name in zip(r, names)]
            for r, names in zip(counts, [("both right", "c: only A right"),
                                         ("b: only B right", "neither right")])]
    trace = dict(
        type="heatmap", z=z, x=[f"{bb} right", f"{bb} wrong"], y=[f"{a} right", f"{a} wrong"],
        text=text, texttemplate="%{text}", textfont=dict(size=16), showscale=False,
        colorscale=[[0, "#eef2f7"], [1, "#f6c9a8"]], hoverinfo="text", xgap=3, ygap=3)
    title = "2x2 on shared items"
    if p_exact is not None and not pd.isna(p_exact):
        title += f" · exact McNemar p {_p_text(p_exact)}"
    return _one_trace_figure(trace, title=title, height=330, yaxis=dict(autorange="reversed"))


def _cell_text(v: int | None, name: str, total: int) -> str:
    if v is None or pd.isna(v):
        return f"{name}<br>–"
    share = f" ({100 * v / total:.1f}%)" if total else ""
    return f"{name}<br><b>{int(v)}</b>{share}"


def se_vs_k_plot(curve: pd.DataFrame, *, k_observed: int, se_observed: float,
                 k_sufficient: int | None = None, percent: bool = True) -> go.Figure:
    """Standard error of the mean against answers per item K.

    curve : RepeatsReport.curve (k, se, low_floor = between-item floor SE, measured).
    The floor is the SE with infinitely many answers: only more items lower it.
    """
    s = _scale(percent)
    unit = "pp" if percent else ""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=_list(curve["k"]), y=_list(curve["se"] * s), mode="lines+markers",
                             marker=dict(size=5), line=dict(color=COLORS[0]), name="SE(K)",
                             hovertemplate=f"K = %{{x}}<br>SE %{{y:.3f}} {unit}<extra></extra>"))
    fig.add_trace(go.Scatter(x=_list(curve["k"]), y=_list(curve["low_floor"] * s), mode="lines",
                             line=dict(color="#888", dash="dash"), name="between-item floor",
                             hovertemplate=f"floor (K → ∞) %{{y:.3f}} {unit}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[k_observed], y=[se_observed * s], mode="markers",
                             marker=dict(size=14, color=COLORS[1], symbol="star"),
                             name="measured",
                             hovertemplate=f"measured: K = %{{x}}<br>SE %{{y:.3f}} {unit}"
                                           f"<extra></extra>"))
    if k_sufficient:
        fig.add_vline(x=k_sufficient, line_dash="dot", line_color=COLORS[2],
                      annotation_text=f"sufficient K = {k_sufficient}", annotation_position="top")
    fig.update_xaxes(title_text="answers per item (K)")
    fig.update_yaxes(title_text=f"SE of the mean ({unit or 'raw'})", rangemode="tozero")
    fig = _base_layout(fig, "Standard error against answers per item", 420)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.2))
    return fig


def pass_at_k_plot(table: pd.DataFrame, *, confidence: float) -> go.Figure:
    """pass@k (unbiased estimator) with intervals against k. table: k, estimate, se, low, high."""
    est, low, high = (table[c].astype(float) * 100 for c in ("estimate", "low", "high"))
    fig = go.Figure(go.Scatter(
        x=_list(table["k"]), y=_list(est), mode="lines+markers", line=dict(color=COLORS[3]),
        error_y=dict(type="data", symmetric=False, array=_list(high - est),
                     arrayminus=_list(est - low)),
        customdata=_list(np.column_stack([low, high, table["se"].astype(float) * 100,
                                          table["n_items"]])),
        hovertemplate=(f"k = %{{x}}<br>pass@k %{{y:.2f}}%<br>{confidence:.0%} CI "
                       f"[%{{customdata[0]:.2f}}, %{{customdata[1]:.2f}}]<br>SE %{{customdata[2]:.2f}} pp"
                       f"<br>items %{{customdata[3]}}<extra></extra>")))
    fig.update_xaxes(title_text="k", dtick=1)
    fig.update_yaxes(title_text="pass@k (%)")
    return _base_layout(fig, "pass@k (unbiased estimator, SE over items)", 380)


def ci_width_plot(n: Sequence[int], wilson: Sequence[float], clt: Sequence[float], *, p: float,
                  confidence: float, chosen_n: int | None = None) -> go.Figure:
    """Half-width of the interval for one score against the number of items, in points.

    wilson, clt : half-widths (proportions) from evalcore.stats for each n.
    """
    w = np.asarray(wilson, dtype=float) * 100
    c = np.asarray(clt, dtype=float) * 100
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=_list(n), y=_list(w), mode="lines", name="Wilson score interval",
                             line=dict(color=COLORS[0]),
                             hovertemplate="n = %{x:,}<br>Wilson ± %{y:.2f} points"
                                           "<extra></extra>"))
    fig.add_trace(go.Scatter(x=_list(n), y=_list(c), mode="lines",
                             name="normal-approximation interval",
                             line=dict(color=COLORS[1], dash="dash"),
                             hovertemplate="n = %{x:,}<br>normal approximation ± %{y:.2f} "
                                           "points<extra></extra>"))
    if chosen_n:
        _vline_log(fig, chosen_n, f"n = {chosen_n:,}")
    fig.update_xaxes(title_text="number of items n", type="log")
    fig.update_yaxes(title_text="half-width of the interval (points)", rangemode="tozero")
    fig = _base_layout(fig, f"{confidence:.0%} interval half-width for a score of {100 * p:.0f}%",
                       420)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.2))
    return fig


def power_curve(n: Sequence[int], mde: Sequence[float], *, alpha: float, power: float,
                required_n: int | None = None, target: float | None = None,
                label: str = "paired") -> go.Figure:
    """Smallest detectable gap (minimum detectable effect, points) against the number of
    items, with the gap asked for and the items it needs marked."""
    y = np.asarray(mde, dtype=float) * 100
    level = f"{100 * (1 - alpha):.4g}% confidence, {100 * power:.4g}% power"
    fig = go.Figure(go.Scatter(
        x=_list(n), y=_list(y), mode="lines", line=dict(color=COLORS[2]),
        name=f"smallest detectable gap ({label})",
        hovertemplate=(f"n = %{{x:,}}<br>smallest detectable gap %{{y:.2f}} points<br>{level}"
                       f"<extra></extra>")))
    if target:
        fig.add_hline(y=target * 100, line_dash="dot", line_color=COLORS[1],
                      annotation_text=f"gap to detect {100 * target:.4g} points")
    if required_n:
        _vline_log(fig, required_n, f"items needed {required_n:,}")
    fig.update_xaxes(title_text="number of items n", type="log")
    fig.update_yaxes(title_text="smallest detectable gap (points)", rangemode="tozero")
    return _base_layout(fig, f"Smallest detectable gap against the number of items ({label}, "
                             f"{level})", 420)


def coverage_plot(methods: Sequence, *, nominal: float, tolerance: float,
                  title: str) -> go.Figure:
    """Coverage of each interval method (Method check): a dot per method with +-2 Monte Carlo
    SE, the nominal level and the +-tolerance band; hover shows width and verdict.

    methods : evalcore.stats.coverage.MethodCoverage objects (the default is drawn filled).
    """
    labels = [("★ " if m.is_default else "") + m.label for m in methods][::-1]
    cov = [100 * m.coverage for m in methods][::-1]
    err = [200 * m.coverage_se for m in methods][::-1]
    custom = [[100 * m.mean_width, m.verdict,
               "exact" if m.exact else f"± {100 * m.coverage_se:.2f} (MC SE)"]
              for m in methods][::-1]
    colors = [COLORS[2] if not m.undercovers else COLORS[1] for m in methods][::-1]
    fig = go.Figure()
    fig.add_vrect(x0=100 * (nominal - tolerance), x1=100 * (nominal + tolerance),
                  fillcolor="#2ca02c", opacity=0.08, line_width=0)
    fig.add_vline(x=100 * nominal, line_dash="dot", line_color="#666",
                  annotation_text=f"nominal {nominal:.0%}", annotation_position="top")
    fig.add_trace(go.Scatter(
        x=cov, y=[plot_text(x) for x in labels], mode="markers", customdata=custom,
        error_x=dict(type="data", array=err, visible=True, color="#888"),
        marker=dict(size=11, color=colors, symbol=["diamond" if lab.startswith("★") else "circle"
                                                   for lab in labels]),
        hovertemplate=("%{y}<br>coverage %{x:.2f}% %{customdata[2]}<br>mean width "
                       "%{customdata[0]:.2f} pts<br>%{customdata[1]}<extra></extra>")))
    low = min(min(cov), 100 * (nominal - 2 * tolerance))
    fig.update_xaxes(title_text="coverage (%): share of samples whose interval holds the truth",
                     range=[max(0.0, low - 1), 100.5])
    return _base_layout(fig, title, 110 + 42 * len(labels))


def coverage_curve_plot(p: Sequence[float], curves: dict[str, Sequence[float]], *,
                        labels: dict[str, str], nominal: float, chosen_p: float,
                        window: tuple[float, float], n: int) -> go.Figure:
    """Pointwise exact coverage against the true score p, one line per method (the figures of
    Brown, Cai & DasGupta 2001), with the user's p and the averaging window marked."""
    fig = go.Figure()
    fig.add_vrect(x0=100 * window[0], x1=100 * window[1], fillcolor="#1f77b4", opacity=0.07,
                  line_width=0)
    fig.add_hline(y=100 * nominal, line_dash="dot", line_color="#666")
    x = [100 * v for v in p]
    for i, (method, cov) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(
            x=x, y=[100 * v for v in cov], mode="lines", name=labels.get(method, method),
            line=dict(color=COLORS[i % len(COLORS)], width=2 if i == 0 else 1.2),
            hovertemplate=f"{labels.get(method, method)}<br>p = %{{x:.2f}}%<br>coverage "
                          "%{y:.2f}%<extra></extra>"))
    fig.add_vline(x=100 * chosen_p, line_color="#444",
                  annotation_text=f"p = {100 * chosen_p:.1f}%", annotation_position="top")
    fig.update_xaxes(title_text="true score p (%)")
    lowest = min(min(c) for c in curves.values()) * 100
    fig.update_yaxes(title_text="coverage (%)", range=[max(0.0, lowest - 2), 100.5])
    fig = _base_layout(fig, f"Pointwise coverage against the true score, n = {n:,} (shaded: "
                            "the window averaged in the table)", 440)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.25))
    return fig


def _wrap(text: str, width: int) -> str:
    """Plain text wrapped for a Plotly label: escaped, lines joined with ``<br>``."""
    import textwrap
    return "<br>".join(plot_text(line) for line in textwrap.wrap(str(text), width) or [""])


ANSWER_LABEL_CHARS = 40   # a task name longer than this is shortened in the chart (full on hover)
ANSWER_LIST_TASKS = 6     # up to this many tasks the footer names each task's n


def short_label(text: str, limit: int = ANSWER_LABEL_CHARS) -> str:
    """``text`` cut in the middle to ``limit`` characters ("mmlu_high_school_…_history"), so
    the start and the distinguishing end of a long task or run name both stay readable."""
    text = str(text)
    if len(text) <= limit:
        return text
    head = (limit - 1) * 3 // 5
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def _answer_rows(per_task: pd.DataFrame, overall: dict | None) -> pd.DataFrame:
    """The per-task rows and, with several tasks, the macro average as the last row
    (``is_overall``), with the display factor of each row (``k``: 100 = percentage points)."""
    rows = per_task.copy()
    rows["label"] = rows["task"].astype(str)
    rows["is_overall"] = False
    if overall and len(per_task) > 1:
        extra = {c: overall.get(c, np.nan) for c in rows.columns}
        extra["label"] = f"Macro average ({len(per_task)} tasks)"
        extra["is_overall"] = True
        rows = pd.concat([rows, pd.DataFrame([extra])], ignore_index=True)
    # the tasks decide the unit; the macro average is drawn in theirs
    scale = per_task["points_scale"].astype(float) if "points_scale" in per_task else \
        pd.Series(100.0, index=per_task.index)
    rows["k"] = 100.0 if bool((scale == 100.0).all()) else 1.0
    return rows


def _row_words(rows: pd.DataFrame, colors: Sequence[str]) -> list[str]:
    """Each row's verdict in a few words (``words.verdict_word``), from its own verdict and
    ``better`` columns; rows without a verdict say what their colour says."""
    from evalcore import words
    if "verdict" in rows:
        better = rows["better"] if "better" in rows else pd.Series("", index=rows.index)
        return [words.verdict_word(v, b) for v, b in zip(rows["verdict"], better)]
    return ["no difference detected" if c == NO_DIFFERENCE_COLOR else "different"
            for c in colors]


def answer_notes(per_task: pd.DataFrame, *, run_a: str, run_b: str,
                 confidence: float) -> list[str]:
    """The footer of the one-slide answer as plain-text lines (escape them for the surface):
    which run is A and B, the shared items per task, the interval methods by their readable
    names (``evalcore.words``), the confidence level and the adjustment the verdicts used."""
    from evalcore import words
    ns = list(per_task["n"]) if "n" in per_task else []
    known = [int(n) for n in ns if n is not None and not pd.isna(n)]
    if len(per_task) <= ANSWER_LIST_TASKS:
        n_text = ", ".join(f"{t} " + ("n unknown" if n is None or pd.isna(n) else f"{int(n):,}")
                           for t, n in zip(per_task["task"], ns))
    else:
        n_text = (f"{sum(known):,} over {len(per_task)} tasks "
                  f"({min(known):,} to {max(known):,} per task)" if known
                  else f"unknown for {len(per_task)} tasks")
        if known and len(known) < len(per_task):
            n_text += f", unknown for {len(per_task) - len(known)}"
    col = "interval_method" if "interval_method" in per_task else "kind"
    methods = ([words.label("paired" if col == "interval_method" else "kind", m)
                for m in dict.fromkeys(map(str, per_task[col]))] if col in per_task
               else [words.label("kind", "paired")])
    adj = sorted(set(map(str, per_task.get("adjustment", pd.Series(dtype=str)))) - {"none"})
    level = f"{confidence:.0%}"
    decision = (f"{level} CI, unadjusted; colour and verdict follow the "
                f"{' / '.join(words.label('adjust', a) for a in adj)}-adjusted p" if adj
                else f"{level} CI; colour: the verdict")
    return [f"A = {run_a} · B = {run_b}", f"n shared items: {n_text}",
            f"Interval: {' / '.join(methods)}; {decision}"]


def answer_figure(per_task: pd.DataFrame, overall: dict | None, *, run_a: str, run_b: str,
                  confidence: float, verdict: str, method_note: str | None = None,
                  headline: bool = True) -> go.Figure:
    """"Is B better than A?" on one slide: the paired difference B - A with its interval per
    task and for the macro average, each row's verdict in words beside its name, and (with
    ``headline``) the question and the verdict as the title and n and method in the footer.

    per_task, overall, verdict : from ``evalcore.analysis.compare`` (``Comparison``); rows are
    drawn in percentage points when every task is on a [0, 1] scale (``points_scale``).
    Colour says what the row's verdict says (``verdict_colors``): green = B called better,
    red = A called better, blue = different on a metric without a direction, grey = no
    difference detected (after the adjustment, when one was applied: the interval drawn is
    then unadjusted and may exclude 0 on a grey row). Each row's label carries its numbers
    and its verdict in words (``words.verdict_word``); a task name longer than
    ``ANSWER_LABEL_CHARS`` is shortened in the middle, whole on hover. method_note : extra
    footer text. ``headline=False`` gives the chart alone, for a page that prints the verdict
    and :func:`answer_notes` as text around it.
    """
    rows = _answer_rows(per_task, overall)
    k = float(rows["k"].iloc[0]) if len(rows) else 100.0
    percent = k == 100.0
    diff, low, high = (rows[c].astype(float) * k for c in ("diff", "low", "high"))
    colors = verdict_colors(rows, confidence)
    said = _row_words(rows, colors)
    unit = "pp" if percent else "units"
    num = (lambda v: f"{v:.1f}") if percent else (lambda v: f"{v:.3g}")   # noqa: E731
    labels = []
    for name, top, d, lo, hi, c, w in zip(rows["label"], rows["is_overall"], diff, low, high,
                                          colors, said):
        first = plot_text(short_label(name))
        first = f"<b>{first}</b>" if top else first
        numbers = (f"{'+' if d > 0 else ''}{num(d)} [{num(lo)}, {num(hi)}] {unit}"
                   if np.isfinite(d) else "–")
        labels.append(f"{first}<br><span style='font-size:0.85em;color:{c}'>"
                      f"{numbers} · {plot_text(w)}</span>")
    overall_row = rows["is_overall"].to_numpy(dtype=bool)
    full = [plot_text(v) for v in rows["label"]]
    trace = dict(
        type="scatter", x=_list(diff), y=labels, mode="markers",
        marker=dict(size=np.where(overall_row, 18, 13).tolist(), color=list(colors),
                    symbol=np.where(overall_row, "diamond", "square").tolist()),
        error_x=dict(type="data", symmetric=False, array=_list(high - diff),
                     arrayminus=_list(diff - low), thickness=3, width=8, color="#444"),
        customdata=_list(np.column_stack([low, high, rows["n"].astype(object), full,
                                          [plot_text(w) for w in said]])),
        hovertemplate=(f"<b>%{{customdata[3]}}</b><br>B − A = %{{x:+.2f}} {unit}<br>"
                       f"{confidence:.0%} CI [%{{customdata[0]:.2f}}, %{{customdata[1]:.2f}}]"
                       f"<br>n = %{{customdata[2]}}<br>verdict: %{{customdata[4]}}"
                       f"<extra></extra>"))
    row_px = 52 if len(labels) <= 12 else 40
    axes = dict(
        zero_line=dict(color="#222", width=2),
        xaxis=dict(title=dict(text=f"difference B − A ({'percentage points' if percent else 'score units'}), "
                                   f"{confidence:.0%} interval"), zeroline=False),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(labels)),
                   type="category", automargin=True))
    if not headline:
        return _difference_figure(trace, **axes, title="", height=110 + row_px * len(labels),
                                  margin=dict(l=10, r=30, t=20, b=60))
    notes = answer_notes(per_task, run_a=run_a, run_b=run_b, confidence=confidence)
    footer = "<br>".join(plot_text(line) for line in notes) + \
        (f"; {plot_text(method_note)}" if method_note else "")
    title = (f"<b>Is {plot_text(run_b)} better than {plot_text(run_a)}?</b><br>"
             f"<span style='font-size:0.8em'>{_wrap(verdict[:1].upper() + verdict[1:], 110)}</span>")
    return _difference_figure(
        trace, **axes,
        annotations=[dict(text=footer, xref="paper", yref="paper", x=0, y=0, yshift=-62,
                          yanchor="top", xanchor="left", showarrow=False, align="left",
                          font=dict(size=12, color="#555"))],
        title=title, height=300 + row_px * len(labels) + 60,
        margin=dict(l=10, r=30, t=110, b=150))
