"""The forest plot builds its layout from plain dicts (``charts.subplot_grid``) instead of
``plotly.subplots.make_subplots``: the grid must be the one make_subplots makes, and the
figure must carry every panel, axis setting and chance line."""

from __future__ import annotations

import html
import json
import re

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


def _averages(cells: pd.DataFrame) -> pd.DataFrame:
    averages = cells.groupby("run", as_index=False).agg(score=("score", "mean"),
                                                        low=("low", "mean"), high=("high", "mean"))
    averages["n_tasks"] = cells["task"].nunique()
    return averages


def test_forest_plot_panels_axes_and_chance_line():
    cells = _cells()
    averages = _averages(cells)
    fig = charts.forest_plot(cells, averages, method_label="Wilson", confidence=0.95,
                             directions={"mmlu": "lower"})
    spec = json.loads(fig.to_json())
    traces = spec["data"]
    assert [t["name"] for t in traces] == ["arc", "hellaswag", "mmlu", "Macro average"]
    # each trace sits on its own subplot, whose y axis lists every run best first (top)
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
    titles = lay["annotations"][:4]
    assert [a["text"] for a in titles][2] == "mmlu (lower is better)"
    assert {a["font"]["size"] for a in titles} == {12}
    # one chance line, in the arc panel, at 25 %, explained in the footnote, never written
    # above a panel (where the titles are)
    (shape,) = lay["shapes"]
    assert (shape["xref"], shape["yref"], shape["x0"]) == ("x", "y domain", 25.0)
    assert not any(a["text"] == "chance" for a in lay["annotations"])
    assert "dotted line: chance level" in lay["annotations"][-1]["text"].replace("<br>", " ")
    # a summary-only run is a diamond; run names are escaped for Plotly
    assert "diamond" in traces[0]["marker"]["symbol"]
    assert "run&lt;0&gt;" in traces[0]["y"]
    assert lay["template"]["layout"]["plot_bgcolor"] == "white"       # plotly_white


def test_forest_panels_share_rows_and_one_x_range_in_percent():
    """Every panel lists the same runs (one categoryarray; labels only left of the first
    panel of a row, so they never run into a neighbour) and the panels in percent share one
    x range that holds every interval and chance line; a raw-unit panel keeps its own."""
    cells = _cells(n_runs=6, tasks=("arc", "hellaswag", "mmlu", "gsm8k", "ppl"))
    cells.loc[cells.task == "ppl", ["score", "low", "high"]] *= 40
    cells = cells[~((cells.task == "gsm8k") & (cells.run == "run<2>"))]      # one gap
    fig = charts.forest_plot(cells, _averages(cells), method_label="Wilson", confidence=0.95,
                             percent={"arc": True, "hellaswag": True, "mmlu": True,
                                      "gsm8k": True, "ppl": False}, max_cols=4)
    lay = json.loads(fig.to_json())["layout"]
    n_runs = 6
    ys = [lay["yaxis" + s] for s in ("", "2", "3", "4", "5", "6")]
    assert all(len(y["categoryarray"]) == n_runs for y in ys)
    assert len({tuple(y["categoryarray"]) for y in ys}) == 1
    assert [y["showticklabels"] for y in ys] == [True, False, False, False, True, False]
    xs = {t["name"]: lay["xaxis" + t["xaxis"][1:]] for t in json.loads(fig.to_json())["data"]}
    # the macro average is in % only when every task is: here ppl is not
    pct = [xs[p] for p in ("arc", "hellaswag", "mmlu", "gsm8k")]
    assert len({tuple(x["range"]) for x in pct}) == 1
    low, high = pct[0]["range"]
    pcells = cells[cells.task != "ppl"]
    assert low <= 100 * pcells["low"].min() and high >= 100 * pcells["high"].max()
    assert low <= 25.0                                  # the arc chance line is inside
    assert all(x.get("matches") == "x" for x in pct[1:]) and "matches" not in pct[0]
    assert "range" not in xs["ppl"] and "matches" not in xs["ppl"]
    # no empty axes in the unfilled last row (6 panels in 2 rows of 4)
    assert "xaxis7" not in lay and "xaxis8" not in lay


def test_long_run_names_are_cut_unique_with_the_full_name_on_hover_and_in_the_footnote():
    names = ["demo-org/boreal-8b @ 2026-03-03 14:40", "demo-org/boreal-8b @ 2026-03-03 08:21",
             "lab/falcon-1b-mix3-stage1-step140000-tokens587B-seed1",
             "lab/falcon-1b-mix3-stage1-step140000-tokens587B-seed2", "short"]
    labels = charts.short_labels(names)
    assert len(set(labels)) == len(labels)
    assert all(len(x) <= charts.RUN_LABEL_CHARS for x in labels)
    assert labels[4] == "short"
    # the start (model) and the end (step, seed, date) survive the cut
    assert labels[2].startswith("lab/falcon-1b") and labels[2].endswith("seed1")
    assert labels[0].endswith("14:40") and "…" in labels[0]
    rows = [dict(run=n, task="t", n=50, score=0.5 + i / 20, low=0.4, high=0.7, chance=np.nan,
                 contains_chance=False, has_items=True) for i, n in enumerate(names)]
    fig = charts.forest_plot(pd.DataFrame(rows), None, method_label="Wilson", confidence=0.95)
    spec = json.loads(fig.to_json())
    trace = spec["data"][0]
    assert sorted(trace["y"]) == sorted(charts.plot_text(x) for x in labels)
    assert sorted(c[4] for c in trace["customdata"]) == sorted(names)
    assert "%{customdata[4]}" in trace["hovertemplate"]
    note = spec["layout"]["annotations"][-1]["text"].replace("<br>", " ")
    assert "Names cut:" in note and names[0] in note
    # the label margin holds the longest label at the tick font
    lay = spec["layout"]
    assert lay["margin"]["l"] >= max(map(len, labels)) * 12 * charts.CHAR_EM


SLIDES = {"1920x1080": (1920, 1080), "1280x720": (1280, 720)}


def _board(n_runs: int, n_tasks: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    tasks = tuple(f"task_{i:02d}" if i % 3 else
                  f"bbq:subject=all,method=multiple_choice_joint,split={i}" for i in range(n_tasks))
    cells = _cells(n_runs=n_runs, tasks=tasks)
    cells["run"] = [f"lab/falcon-1b-mix{i % 3}-step{1000 * (i + 1)}-seed{i % 2}"
                    for i in range(len(cells))]
    cells["run"] = cells.groupby("task").cumcount().map(
        lambda i: f"lab/falcon-1b-mix{i % 3}-stage1-step{1000 * (i + 1)}-tokens587B-seed{i % 2}")
    return cells, _averages(cells)


@pytest.mark.parametrize("size", list(SLIDES))
@pytest.mark.parametrize("n_runs,n_tasks", [(30, 5), (12, 11), (30, 11)])
def test_slide_relayout_keeps_every_label_and_title(size, n_runs, n_tasks):
    """ui.export.slide_figure re-lays a forest plot out for the slide: every run label has
    room for its font (Plotly drops category labels that would overlap), every title line
    fits its panel, the label margin holds the longest label, and the footnote fits."""
    from ui import export

    cells, averages = _board(n_runs, n_tasks)
    fig = charts.forest_plot(cells, averages, method_label="Wilson score interval",
                             confidence=0.95)
    w, h = SLIDES[size]
    slide = json.loads(export.slide_figure(fig, w, h).to_json())["layout"]
    assert (slide["width"], slide["height"]) == (w, h)
    m = slide["margin"]
    plot_w, plot_h = w - m["l"] - m["r"], h - m["t"] - m["b"]
    n_panels = n_tasks + 1
    tick = slide["yaxis"]["tickfont"]["size"]
    assert tick >= 18 * w / 1920 - 1e-9             # readable from the back of a room
    labels = slide["yaxis"]["categoryarray"]
    assert len(labels) == n_runs
    assert m["l"] >= max(map(len, labels)) * tick * charts.CHAR_EM
    title_px = slide["annotations"][0]["font"]["size"]
    for i in range(n_panels):
        s = str(i + 1) if i else ""
        y, x = slide["yaxis" + s], slide["xaxis" + s]
        rows_px = (y["domain"][1] - y["domain"][0]) * plot_h
        assert rows_px >= n_runs * y["tickfont"]["size"] * 1.15       # every label has a row
        panel_px = (x["domain"][1] - x["domain"][0]) * plot_w
        for line in slide["annotations"][i]["text"].split("<br>"):
            assert len(html.unescape(line)) * title_px * charts.CHAR_EM <= panel_px + 1
        assert y["showticklabels"] == (x["domain"][0] < 1e-9)
    head = slide["title"]["font"]["size"]
    assert len("Scores with 95% intervals (Wilson score interval)") * head * 0.5 < w
    note = slide["annotations"][-1]
    note_lines = note["text"].count("<br>") + 1
    assert -note["yshift"] + note_lines * note["font"]["size"] * 1.3 <= m["b"] + 1


@pytest.mark.parametrize("size", list(SLIDES))
def test_slide_svg_draws_every_run_label(size):
    """In the exported image (kaleido, the system Chromium), the first panel of each row
    carries one tick label per run: none dropped, and the figure title is drawn whole."""
    from ui import export

    if not export.images_available():
        pytest.skip("kaleido cannot start Chromium")
    cells, averages = _board(30, 11)
    fig = charts.forest_plot(cells, averages, method_label="Wilson score interval",
                             confidence=0.95)
    svg = export.figure_image(fig, "svg", size).decode()
    ticks = re.findall(r'class="ytick"><text[^>]*>([^<]*)</text>', svg)
    labels = [html.unescape(t) for t in ticks if t]
    rows = json.loads(export.slide_figure(fig, *SLIDES[size]).to_json())["layout"]
    first_col = sum(1 for k, v in rows.items() if k.startswith("yaxis") and v.get("showticklabels"))
    assert len(labels) == 30 * first_col
    assert len(set(labels)) == 30
    assert "Scores with 95% intervals (Wilson score interval)" in html.unescape(svg)


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
