"""The forest plot builds its layout from plain dicts (``charts.subplot_grid``) instead of
``plotly.subplots.make_subplots``: the grid must be the one make_subplots makes, and the
figure must carry every panel, axis setting and chance line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from plotly.subplots import make_subplots

from evalcore import charts


@pytest.mark.parametrize("rows,cols,hs,vs,n_titles", [
    (1, 1, 0.04, 0.0, 1), (1, 3, 0.22, 0.0, 3), (2, 3, 0.22, 0.13, 5), (7, 3, 0.22, 0.021, 21),
    (3, 2, 0.22, 0.1, 3), (34, 3, 0.22, 0.004, 100)])
def test_subplot_grid_equals_make_subplots(rows, cols, hs, vs, n_titles):
    titles = [f"t{i}<br>x" for i in range(n_titles)]
    ref = make_subplots(rows=rows, cols=cols, subplot_titles=titles, shared_yaxes=False,
                        horizontal_spacing=hs, vertical_spacing=vs)
    want = ref.layout.to_plotly_json()
    axes, keys, notes = charts.subplot_grid(rows, cols, hs, vs, titles)
    assert axes == {k: v for k, v in want.items() if k.startswith(("xaxis", "yaxis"))}
    assert notes == want["annotations"]
    assert keys == [ref._grid_ref[r][c][0].layout_keys for r in range(rows) for c in range(cols)]


def _cells(n_runs: int = 4, tasks=("arc", "hellaswag", "mmlu")) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for t in tasks:
        for r in range(n_runs):
            p = rng.uniform(0.3, 0.9)
            rows.append(dict(run=f"run<{r}>", task=t, n=100, score=p, low=p - 0.05,
                             high=p + 0.05, chance=0.25 if t == "arc" else np.nan,
                             contains_chance=False, has_items=r != 3))
    return pd.DataFrame(rows)


def test_forest_plot_panels_axes_and_chance_line():
    cells = _cells()
    averages = cells.groupby("run", as_index=False).agg(score=("score", "mean"),
                                                        low=("low", "mean"), high=("high", "mean"))
    averages["n_tasks"] = 3
    fig = charts.forest_plot(cells, averages, method_label="Wilson", confidence=0.95,
                             directions={"mmlu": "lower"})
    spec = json.loads(fig.to_json())
    traces = spec["data"]
    assert [t["name"] for t in traces] == ["arc", "hellaswag", "mmlu", "Macro average"]
    # each trace sits on its own subplot, whose y axis lists its runs best first (top)
    assert [(t["xaxis"], t["yaxis"]) for t in traces] == [("x", "y"), ("x2", "y2"),
                                                          ("x3", "y3"), ("x4", "y4")]
    lay = spec["layout"]
    arc = cells[cells.task == "arc"].set_index("run")
    order = list(averages.sort_values("score", ascending=False)["run"])
    assert lay["yaxis"]["categoryarray"] == [charts.plot_text(r) for r in reversed(order)]
    assert traces[0]["x"] == pytest.approx([100 * arc.loc[r, "score"] for r in order])
    assert lay["xaxis"]["title"]["text"] == "score (%)"
    assert lay["xaxis2"]["domain"][0] > lay["xaxis"]["domain"][1]
    # the lower-is-better task is named so in its panel title; titles at 12 px
    titles = [a for a in lay["annotations"] if a["text"] != "chance"]
    assert [a["text"] for a in titles][2] == "mmlu (lower is better)"
    assert {a["font"]["size"] for a in titles} == {12}
    # one chance line, in the arc panel, at 25 %
    (shape,) = lay["shapes"]
    assert (shape["xref"], shape["yref"], shape["x0"]) == ("x", "y domain", 25.0)
    assert [a["xref"] for a in lay["annotations"] if a["text"] == "chance"] == ["x"]
    # a summary-only run is a diamond; run names are escaped for Plotly
    assert "diamond" in traces[0]["marker"]["symbol"]
    assert "run&lt;0&gt;" in traces[0]["y"]
    assert lay["template"]["layout"]["plot_bgcolor"] == "white"       # plotly_white


@pytest.mark.parametrize("case", ["average", "one task", "points per task", "two columns"])
def test_forest_plot_json_is_the_validated_figure_byte_for_byte(case, monkeypatch):
    """charts.figure_from_dicts skips Plotly's validation: the figure JSON (the page's chart
    spec) must be exactly what go.Figure(data=, layout=) writes for the same dicts."""
    import plotly.graph_objects as go
    import plotly.io as pio

    cells = _cells(n_runs=5)
    cells.loc[2, "n"] = np.nan                              # "unknown" n in the hover
    averages = cells.groupby("run", as_index=False).agg(score=("score", "mean"),
                                                        low=("low", "mean"), high=("high", "mean"))
    averages["n_tasks"] = 3
    kwargs = dict(method_label="Wilson <a&b>", confidence=0.9)
    if case == "one task":
        cells, averages = cells[cells.task == "arc"], None
    if case == "points per task":
        kwargs["percent"] = {"arc": True, "hellaswag": False, "mmlu": True}
    if case == "two columns":
        kwargs.update(max_cols=2, directions={"arc": "lower", "mmlu": "target"})

    def draw() -> str:
        return pio.to_json(charts.forest_plot(cells, averages, **kwargs), validate=False)

    fast = draw()
    monkeypatch.setattr(charts, "figure_from_dicts",
                        lambda data, layout: go.Figure(data=data, layout=layout))
    validated = draw()
    assert fast == validated
    spec = json.loads(fast)
    assert spec["layout"]["template"]["layout"]["plot_bgcolor"] == "white"   # plotly_white


def test_changing_one_figure_leaves_the_shared_template_alone():
    """_base_layout and figure_from_dicts put one cached template dict into every figure:
    a figure changed afterwards (presentation mode, a caller's update_layout) must not
    change the next figure."""
    first = charts.mcnemar_table(5, 2, 3, 4, label_a="A", label_b="B")
    first.layout.template.layout.font.size = 99
    first.update_layout(template_layout_paper_bgcolor="red")
    forest = charts.forest_plot(_cells(), None, method_label="Wilson", confidence=0.95)
    forest.layout.template.layout.colorway = ["#000"]
    for fig in (charts.mcnemar_table(5, 2, 3, 4, label_a="A", label_b="B"),
                charts.forest_plot(_cells(), None, method_label="Wilson", confidence=0.95)):
        lay = fig.layout.template.layout
        assert lay.paper_bgcolor == "white" and lay.font.size is None
        assert lay.colorway[0] == "#636efa"


def _validated_difference_figure(trace, *, zero_line, xaxis, yaxis, title, height,
                                 annotations=None, margin=None):
    """What charts._difference_figure must equal: the figure built by Plotly's validated
    calls (the way answer_figure and difference_plot drew it before)."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(**{k: v for k, v in trace.items() if k != "type"}))
    fig.add_vline(x=0, line_color=zero_line["color"], line_width=zero_line["width"])
    # the keyword order of the former calls (an updated axis keeps it in the JSON)
    fig.update_yaxes(categoryorder=yaxis["categoryorder"], categoryarray=yaxis["categoryarray"],
                     type=yaxis["type"], **({"automargin": yaxis["automargin"]}
                                            if "automargin" in yaxis else {}))
    assert set(yaxis) <= {"categoryorder", "categoryarray", "type", "automargin"}
    fig.update_xaxes(title_text=xaxis["title"]["text"],
                     **{k: v for k, v in xaxis.items() if k != "title"})
    for note in annotations or []:
        fig.add_annotation(**note)
    fig = charts._base_layout(fig, title, height)
    if margin:
        fig.update_layout(margin=margin)
    return fig


def _per_task(n_tasks: int, scale, unknown_n: bool) -> pd.DataFrame:
    rng = np.random.default_rng(n_tasks)
    d = rng.normal(0, 0.05, n_tasks)
    pt = pd.DataFrame({
        "task": [f"t<{i}>&" for i in range(n_tasks)],
        "n": pd.array([None if unknown_n and i == 0 else 100 + i for i in range(n_tasks)],
                      dtype="Int64"),
        "diff": d, "se": np.abs(d) / 2 + 0.01, "low": d - 0.03, "high": d + 0.03,
        "p_exact": rng.uniform(0, 1, n_tasks), "p_adjusted": rng.uniform(0, 1, n_tasks),
        "points_scale": scale if scale != "mixed" else
        [100.0 if i % 2 == 0 else 1.0 for i in range(n_tasks)],
        "interval_method": "wald", "adjustment": "holm"})
    if unknown_n:
        pt.loc[0, ["p_exact", "p_adjusted"]] = [np.nan, 1e-7]
    return pt


@pytest.mark.parametrize("n_tasks,scale,unknown_n,overall", [
    (1, 100.0, False, False), (2, 100.0, True, True), (5, 1.0, False, True),
    (5, "mixed", True, True), (20, 100.0, False, True)])
def test_difference_figures_json_is_the_validated_figure_byte_for_byte(
        n_tasks, scale, unknown_n, overall, monkeypatch):
    """answer_figure and difference_plot build their figure from plain dicts
    (charts._difference_figure): the JSON must be what Plotly's validated calls write."""
    import plotly.io as pio

    pt = _per_task(n_tasks, scale, unknown_n)
    ov = {"diff": 0.01, "low": -0.01, "high": 0.03, "n": 300, "se": 0.01,
          "p_exact": 0.2} if overall else None

    def draw() -> list[str]:
        return [pio.to_json(charts.answer_figure(pt, ov, run_a="A<x>", run_b="B & c",
                                                 confidence=0.9, verdict="no clear winner",
                                                 method_note="note <i>"), validate=False),
                pio.to_json(charts.difference_plot(pt, ov, label_a="A<x>", label_b="B",
                                                   confidence=0.95,
                                                   scales=list(pt["points_scale"])),
                            validate=False)]

    fast = draw()
    monkeypatch.setattr(charts, "_difference_figure", _validated_difference_figure)
    assert fast == draw()
    spec = json.loads(fast[0])
    assert spec["layout"]["template"]["layout"]["plot_bgcolor"] == "white"   # plotly_white
    assert spec["layout"]["shapes"][0]["yref"] == "y domain"


def test_changing_a_difference_figure_leaves_the_shared_layout_alone():
    pt = _per_task(2, 100.0, False)
    fig = charts.answer_figure(pt, None, run_a="A", run_b="B", confidence=0.95, verdict="x")
    fig.layout.font.size = 99
    fig.update_layout(margin_l=77, hoverlabel_align="right")
    again = charts.difference_plot(pt, None, label_a="A", label_b="B", confidence=0.95)
    assert again.layout.font.size == 13 and again.layout.margin.l == 10
    assert again.layout.hoverlabel.align == "left"


@pytest.mark.parametrize("counts,p", [((5, 2, 3, 4), 0.03), ((5, 2, 3, None), None),
                                      ((None, 0, 0, None), float("nan")),
                                      ((0, 7, 1, 0), 1e-9)])
def test_mcnemar_table_json_is_the_validated_figure_byte_for_byte(counts, p):
    """mcnemar_table builds its figure from plain dicts (charts._one_trace_figure): the
    JSON must be what the former validated calls write."""
    import plotly.graph_objects as go
    import plotly.io as pio

    both, b, c, neither = counts
    fig = charts.mcnemar_table(both, b, c, neither, label_a="A<x>", label_b="B & c",
                               p_exact=p)
    # the former construction
    total = sum(v for v in counts if v is not None)
    text = [[charts._cell_text(v, name, total) for v, name in zip(r, names)]
            for r, names in zip([[both, c], [b, neither]],
                                [("both right", "c: only A right"),
                                 ("b: only B right", "neither right")])]
    ref = go.Figure(go.Heatmap(
        z=[[0.15, 1.0], [1.0, 0.15]], x=["B &amp; c right", "B &amp; c wrong"],
        y=["A&lt;x&gt; right", "A&lt;x&gt; wrong"], text=text, texttemplate="%{text}",
        textfont=dict(size=16), showscale=False, colorscale=[[0, "#eef2f7"], [1, "#f6c9a8"]],
        hoverinfo="text", xgap=3, ygap=3))
    ref.update_yaxes(autorange="reversed")
    title = "2x2 on shared items" + (f" · exact McNemar p {charts._p_text(p)}"
                                     if p is not None and not np.isnan(p) else "")
    ref = charts._base_layout(ref, title, 330)
    assert pio.to_json(fig, validate=False) == pio.to_json(ref, validate=False)
