"""The forest plot: every run's score and interval, one panel per task (and the macro
average), laid out so that a page, a projector and a slide image keep every label.

No statistics and no Streamlit: inputs are ``evalcore.analysis.Leaderboard`` tables. The
names stay importable from ``evalcore.charts`` (the report and the pages use them there).

Layout rules (what a reader of a slide needs):

- Runs are the rows of every panel, in one order (best on top) shared by all panels, so a
  run sits at the same height everywhere. Its name is written once per row of panels, at
  the left, in a margin sized for the longest label: labels never run into a neighbouring
  panel. Names longer than ``RUN_LABEL_CHARS`` are cut in the middle (start and end kept,
  cut labels kept unique); the hover shows the full name and the footnote lists the cut
  ones.
- Panels whose scores are in percent share one x range (``matches``: zooming one zooms
  all), so the same distance means the same number of points in every panel; a panel in
  raw units (perplexity) has its own.
- The chance level of a multiple-choice task is a dotted line, explained in the footnote
  and never written above a panel, where the titles are.
- ``relayout_forest`` fits a figure to a fixed canvas (the 1920x1080 and 1280x720 slide
  exports, presentation mode's larger fonts): panels per row are chosen so that every run
  label fits at the tick font size (Plotly drops category labels that would overlap),
  panel titles are re-wrapped to the panel width, and the margins hold the labels, the
  titles and the footnote, so nothing is clipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from evalcore import charts as base
from evalcore.charts import AVERAGE_PANEL, COLORS, _BASE_LAYOUT, _list, _scale, plot_text

__all__ = ["CHAR_EM", "PAGE_WIDTH", "RUN_LABEL_CHARS", "TITLE_LINES", "TITLE_WIDTH",
           "forest_plot", "is_forest", "relayout_forest", "short_labels", "subplot_grid",
           "wrap_title"]

TITLE_WIDTH = 28       # characters per line of a panel title at the page's 12 px
TITLE_LINES = 3
RUN_LABEL_CHARS = 36   # longest run label; longer names are cut in the middle
PAGE_WIDTH = 1000      # px: the chart's width on a 1440 px wide screen (wrapping titles)
MAX_COLS = 4
TICK_PX, TITLE_PX, AXIS_TITLE_PX, HEAD_PX, NOTE_PX = 12, 12, 11, 13, 11
CHAR_EM = 0.55         # width of an average character in em (Arial digits: 0.556), rounded up
META_KEY = "evalbars_forest"
AXIS_SHORT = {"score (%)": "%", "score": ""}     # x axis titles under a narrow panel


def short_labels(names: Sequence[str], width: int = RUN_LABEL_CHARS) -> list[str]:
    """Display labels of ``names``: a name longer than ``width`` characters is cut in the
    middle (``lab/falcon-1b…step4000-seed2``), keeping its start (model) and end (step,
    seed, date), which tell runs of one series apart. Labels stay unique: names whose cut
    labels would collide keep more characters, up to their full text."""
    names = [str(n) for n in names]
    labels = [_cut_middle(n, width) for n in names]
    w = width
    while len(set(labels)) < len(labels) and w < max(len(n) for n in names):
        w += 4
        seen: dict[str, int] = {}
        for lab in labels:
            seen[lab] = seen.get(lab, 0) + 1
        labels = [_cut_middle(n, w) if seen[lab] > 1 else lab for n, lab in zip(names, labels)]
    return labels


def _cut_middle(name: str, width: int) -> str:
    if len(name) <= width:
        return name
    head = (width - 1) * 11 // 20
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]


def wrap_title(text: str, width: int = TITLE_WIDTH, lines: int = TITLE_LINES) -> str:
    """A panel title that fits its column: broken after ``, : = _ -`` or spaces into lines of
    at most ``width`` characters, at most ``lines`` lines (the rest cut with an ellipsis;
    the hover keeps the full name). Plotly-escaped (``plot_text``), joined by ``<br>``."""
    text = str(text)
    width = max(int(width), 4)
    out: list[str] = []
    while text and len(out) < lines:
        if len(text) <= width:
            out.append(text)
            text = ""
            break
        cut = max((text.rfind(ch, 0, width) for ch in ",:=_- /"), default=-1)
        cut = cut + 1 if cut >= width // 3 else width
        out.append(text[:cut])
        text = text[cut:]
    if text:
        out[-1] = out[-1][:width - 1] + "…"
    return "<br>".join(plot_text(line) for line in out)


def subplot_grid(rows: int, cols: int, horizontal_spacing: float, vertical_spacing: float,
                 titles: Sequence[str] = ()) -> tuple[dict, list[tuple[str, str]], list[dict]]:
    """The layout of ``make_subplots(rows, cols, horizontal_spacing=, vertical_spacing=,
    subplot_titles=titles)`` as plain dicts, without building a Figure (``make_subplots``
    builds and validates one, with the default template, which costs as much as the whole
    forest plot otherwise).

    Returns (axes: {"xaxis3": {"anchor": "y3", "domain": [x0, x1]}, ...}, one (xaxis, yaxis)
    layout-key pair per cell in row-major order from the top left, the title annotations).
    Same arithmetic as plotly's ``_subplots.make_subplots`` (default ``start_cell``
    "top-left", equal widths and heights); a test holds the two equal.
    """
    widths = [(1.0 - horizontal_spacing * (cols - 1)) / cols] * cols
    heights = [(1.0 - vertical_spacing * (rows - 1)) / rows] * rows
    grid = [[(sum(widths[:c]) + c * horizontal_spacing,
              sum(heights[:r]) + r * vertical_spacing) for c in range(cols)]
            for r in range(rows)[::-1]]

    def clamp(v: float) -> float:
        return 0.0 if -0.01 < v < 0.0 else 1.0 if 1.0 < v < 1.01 else v

    axes: dict[str, dict] = {}
    keys: list[tuple[str, str]] = []
    domains: list[tuple[list[float], list[float]]] = []
    for r in range(rows):
        for c in range(cols):
            n = len(keys) + 1
            suffix = str(n) if n > 1 else ""
            x_dom = [grid[r][c][0], grid[r][c][0] + widths[c]]
            y_dom = [clamp(grid[r][c][1]), clamp(grid[r][c][1] + heights[-1 - r])]
            axes["xaxis" + suffix] = {"anchor": "y" + suffix, "domain": x_dom}
            axes["yaxis" + suffix] = {"anchor": "x" + suffix, "domain": y_dom}
            keys.append(("xaxis" + suffix, "yaxis" + suffix))
            domains.append((x_dom, y_dom))
    notes = [{"font": {"size": 16}, "showarrow": False, "text": text,
              "x": sum(x_dom) / 2.0, "xanchor": "center", "xref": "paper",
              "y": y_dom[1], "yanchor": "bottom", "yref": "paper"}
             for text, (x_dom, y_dom) in zip(titles, domains)]
    return axes, keys, notes


# ---- geometry: how many panels per row, margins and spacing, in pixels -----------------

@dataclass(frozen=True)
class Fonts:
    """Font sizes in px: run labels and x ticks, panel titles, axis titles, the figure's
    title, the footnote."""
    tick: float = TICK_PX
    title: float = TITLE_PX
    axis_title: float = AXIS_TITLE_PX
    head: float = HEAD_PX
    note: float = NOTE_PX


@dataclass(frozen=True)
class Geometry:
    """Where everything goes: ``ncols`` x ``nrows`` panels, margins (px), the spacing
    between panels (fractions of the plot area, as ``make_subplots`` takes them), the
    figure height, the panel titles wrapped to ``title_chars`` characters, the run labels'
    font size (smaller than ``Fonts.tick`` only when the canvas cannot hold them all), the
    footnote's offset below the plot, the x ticks a panel has room for and whether the x
    axis title "score (%)" fits under a panel (else "%")."""
    ncols: int
    nrows: int
    margin: dict
    height: int
    horizontal_spacing: float
    vertical_spacing: float
    title_chars: int
    title_lines: int
    label_px: float
    note_shift: float
    x_ticks: int = 6
    axis_title_fits: bool = True


def _text_px(chars: int, px: float) -> float:
    return chars * px * CHAR_EM


def geometry(n_panels: int, n_runs: int, label_chars: int, titles: Sequence[str],
             fonts: Fonts, *, width: int = PAGE_WIDTH, height: int | None = None,
             max_cols: int = MAX_COLS, note_lines: int = 1) -> Geometry:
    """The forest plot's layout for ``n_panels`` panels of ``n_runs`` runs.

    ``height`` None (a page): ``min(max_cols, n_panels)`` panels per row, each row as tall
    as its runs need (22 px per run at 12 px labels). ``height`` given (a slide): of the
    arrangements whose panels are wide enough for two x tick labels (4 tick-font em),
    the one whose rows give the run labels the largest font up to ``fonts.tick`` (each label
    needs 1.2 times its font size of height), the fewest rows among equals; the label margin
    then shrinks with the labels.
    """
    n_panels, n_runs = max(n_panels, 1), max(n_runs, 1)
    right = 1.5 * fonts.tick
    x_band = 1.6 * fonts.tick + 1.6 * fonts.axis_title + 10    # tick labels + axis title
    note_band = note_lines * 1.35 * fonts.note + 8
    head_band = 1.8 * fonts.head
    gap_w = 1.6 * fonts.tick

    def left_of(label_px: float) -> float:
        return _text_px(label_chars, label_px) + 1.2 * label_px

    def arrangement(ncols: int, label_px: float):
        nrows = math.ceil(n_panels / ncols)
        panel_w = (width - left_of(label_px) - right - (ncols - 1) * gap_w) / ncols
        chars = max(int(panel_w / (fonts.title * CHAR_EM)), 6)
        lines = max((wrap_title(t, chars).count("<br>") + 1 for t in titles), default=1)
        title_band = lines * 1.3 * fonts.title + 6
        return nrows, panel_w, chars, lines, title_band

    def row_height(nrows: int, title_band: float) -> float:
        plot_h = height - head_band - title_band - x_band - note_band
        return (plot_h - (nrows - 1) * (x_band + title_band)) / nrows

    if height is None:
        ncols, label_px = max(1, min(max_cols, n_panels)), fonts.tick
        nrows, panel_w, chars, lines, title_band = arrangement(ncols, label_px)
        row_h = 22 * n_runs * fonts.tick / TICK_PX + 12
        total = head_band + title_band + nrows * row_h + (nrows - 1) * (x_band + title_band) \
            + x_band + note_band
    else:
        best: tuple | None = None
        for ncols in sorted({math.ceil(n_panels / r) for r in range(1, n_panels + 1)},
                            reverse=True):
            nrows, panel_w, chars, lines, title_band = arrangement(ncols, fonts.tick)
            if panel_w < 4 * fonts.tick and ncols > 1:
                continue
            label_px = min(fonts.tick, row_height(nrows, title_band) / (1.2 * n_runs))
            if best is None or label_px > best[0] + 1e-9:
                best = (label_px, ncols)
        label_px, ncols = best if best is not None else (fonts.tick, 1)
        label_px = max(label_px, 6.0)
        nrows, panel_w, chars, lines, title_band = arrangement(ncols, label_px)
        total = height
    left = left_of(label_px)
    top = head_band + title_band
    bottom = x_band + note_band
    plot_w, plot_h = width - left - right, total - top - bottom
    return Geometry(
        ncols=ncols, nrows=nrows,
        margin=dict(l=int(math.ceil(left)), r=int(math.ceil(right)), t=int(math.ceil(top)),
                    b=int(math.ceil(bottom))),
        height=int(math.ceil(total)),
        horizontal_spacing=min(gap_w / plot_w, 0.2) if ncols > 1 else 0.04,
        vertical_spacing=((x_band + title_band) / plot_h) if nrows > 1 and plot_h > 0 else 0.0,
        title_chars=chars, title_lines=lines, label_px=float(label_px),
        note_shift=-(x_band + 2), x_ticks=int(min(max(panel_w // (3 * fonts.tick), 2), 6)),
        axis_title_fits=_text_px(len("score (%)"), fonts.axis_title) <= panel_w)


# ---- the figure ------------------------------------------------------------------------

def _panel_columns(frame: pd.DataFrame, position: dict[str, int]
                   ) -> dict[str | None, dict[str, np.ndarray]]:
    """``forest_plot``'s rows of each task (key None: a frame without a task column, the
    averages) as column arrays, ordered by ``position`` (run -> rank); rows of runs without
    a position or without a score are left out. Columns: run (str), score, low, high,
    chance (float, NaN none), n (object), contains_chance (NA -> False), has_items (NA ->
    True)."""
    runs = frame["run"].astype(str).to_numpy(dtype=object)

    def num(c: str) -> np.ndarray:
        return pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    score = num("score")
    rank = np.array([position.get(r, -1) for r in runs], dtype=np.int64)
    keep = (rank >= 0) & ~np.isnan(score)
    cols = {"run": runs, "score": score, "low": num("low"), "high": num("high"),
            "chance": num("chance"), "n": frame["n"].to_numpy(dtype=object),
            "contains_chance": frame["contains_chance"].fillna(False).to_numpy(dtype=bool),
            "has_items": frame["has_items"].fillna(True).to_numpy(dtype=bool)}
    keys = (frame["task"].astype(str).to_numpy(dtype=object) if "task" in frame
            else np.full(len(frame), None, dtype=object))
    out: dict[str | None, dict[str, np.ndarray]] = {}
    for key in dict.fromkeys(keys[keep].tolist()):
        rows = np.flatnonzero(keep & (keys == key))
        rows = rows[np.argsort(rank[rows], kind="stable")]
        out[key] = {c: v[rows] for c, v in cols.items()}
    return out


DIRECTION_WORDS = {"lower": " (lower is better)", "target": " (no direction)",
                   "unknown": " (direction unknown)"}
MARKS_NOTE = ("Filled circle: interval excludes chance · open circle: interval contains "
              "chance · diamond: summary-only run (interval from the reported stderr)")


def forest_plot(cells: pd.DataFrame, averages: pd.DataFrame | None, *, method_label: str,
                confidence: float, percent: bool | dict[str, bool] = True,
                run_order: Sequence[str] | None = None,
                max_cols: int = MAX_COLS, directions: dict[str, str] | None = None) -> go.Figure:
    """Score and interval of every run, one panel per task (+ the macro average).

    Parameters
    ----------
    cells : Leaderboard.cells (run, task, n, score, low, high, chance, contains_chance,
        has_items); a task group's value may come as a row whose ``task`` is the group.
    averages : Leaderboard.averages (run, n_tasks, score, se, low, high) or None; drawn as
        the last panel when there is more than one task.
    method_label, confidence : named in the hover and the title.
    percent : draw scores x100 (proportions); a dict gives it per task (the average panel is
        in percent only when every task is).
    run_order : runs top to bottom (default: by macro average or first task, best on top);
        only runs in it are drawn. Every panel has the same rows; a run without the panel's
        task has no mark there.
    max_cols : panels per row on the page.
    directions : task -> "higher" / "lower" / "target" / "unknown" (named in the panel
        title when not "higher").

    Marks: filled circle = interval excludes chance; open circle = interval contains
    chance (cannot rank anything); diamond = summary-only run (interval from the reported
    stderr). Dotted vertical line = chance level of a multiple-choice task. The module
    docstring has the layout rules; ``relayout_forest`` fits the figure to a canvas.
    """
    tasks = list(dict.fromkeys(cells["task"].astype(str).tolist()))
    by_panel = dict(percent) if isinstance(percent, dict) else {t: bool(percent) for t in tasks}
    by_panel[AVERAGE_PANEL] = all(by_panel.get(t, True) for t in tasks)
    with_average = averages is not None and len(averages) > 0 and len(tasks) > 1
    panels = tasks + ([AVERAGE_PANEL] if with_average else [])
    if not panels:
        return base._base_layout(go.Figure(), "No scores to draw", 200)
    if run_order is None:
        ref = averages if with_average else cells[cells["task"].astype(str) == tasks[0]]
        run_order = list(ref.sort_values("score", ascending=False)["run"].astype(str))
        run_order += [r for r in dict.fromkeys(cells["run"].astype(str).tolist())
                      if r not in run_order]
    position = {str(r): i for i, r in enumerate(run_order)}
    columns = _panel_columns(cells, position)
    if with_average:
        avg = averages.assign(n=averages.get("n_tasks"), contains_chance=False,
                              has_items=True, chance=np.nan)
        columns[AVERAGE_PANEL] = _panel_columns(avg, position).get(None)
    drawn = {r for c in columns.values() if c is not None for r in c["run"].tolist()}
    runs = [str(r) for r in run_order if str(r) in drawn]
    labels = dict(zip(runs, short_labels(runs)))
    directions = directions or {}
    full_titles = [p + DIRECTION_WORDS.get(directions.get(p, "higher"), "") for p in panels]
    notes = _footnote_lines(runs, labels, chance=bool(np.isfinite(
        pd.to_numeric(cells.get("chance", pd.Series(dtype=float)), errors="coerce")).any()))
    note_text, note_lines = _wrapped_note(notes, PAGE_WIDTH, NOTE_PX)
    label_chars = max((len(v) for v in labels.values()), default=1)
    geo = geometry(len(panels), len(runs), label_chars, full_titles, Fonts(),
                   max_cols=max_cols, note_lines=note_lines)
    level = f"{confidence:.0%}"
    traces, x_axes, chance_lines = [], [], []
    for idx, panel in enumerate(panels):
        cols = columns.get(panel)
        if cols is None:
            continue
        traces.append(_panel_trace(panel, idx, cols, labels, by_panel.get(panel, True),
                                   level, method_label))
        chance = cols["chance"][~np.isnan(cols["chance"])]
        if len(chance):
            chance_lines.append((idx, float(chance[0]) * _scale(by_panel.get(panel, True))))
    category = [plot_text(labels[r]) for r in reversed(runs)]
    layout = _forest_layout(panels, full_titles, geo, category, by_panel, columns,
                            chance_lines, note_text)
    layout["title"] = dict(text=f"Scores with {level} intervals ({plot_text(method_label)})",
                           x=0, xanchor="left", pad=dict(l=8))
    # keys in name order: the figure JSON is the same with or without Plotly's validation
    layout["meta"] = {META_KEY: {"label_chars": label_chars, "max_cols": max_cols,
                                 "n_runs": len(runs), "notes": notes, "titles": full_titles}}
    return base.figure_from_dicts(traces, layout)


def _footnote_lines(runs: list[str], labels: dict[str, str], chance: bool) -> list[str]:
    """The footnote under the panels (plain text): what the marks mean (and the chance
    line), and the full names of the runs whose labels were cut (four at most; the hover
    has every one)."""
    lines = [MARKS_NOTE + (" · dotted line: chance level" if chance else "")]
    cut = [r for r in runs if labels[r] != r]
    if cut:
        shown = "; ".join(f"{labels[r]} = {r}" for r in cut[:4])
        more = f"; and {len(cut) - 4} more (hover a mark for its run)" if len(cut) > 4 else ""
        lines.append("Names cut: " + shown + more)
    return lines


def _wrapped_note(lines: list[str], width_px: float, note_px: float) -> tuple[str, int]:
    """The footnote wrapped to the canvas width (Plotly-escaped, ``<br>``-joined) and its
    number of lines."""
    import textwrap

    chars = max(int(width_px / (note_px * CHAR_EM)) - 2, 20)
    out = [part for line in lines for part in textwrap.wrap(line, chars) or [""]]
    return "<br>".join(plot_text(p) for p in out), len(out)


def _panel_trace(panel: str, idx: int, cols: dict[str, np.ndarray], labels: dict[str, str],
                 percent: bool, level: str, method_label: str) -> dict:
    """One panel's marks and error bars as a scatter trace dict on subplot ``idx``."""
    k = _scale(percent)
    unit = "%" if percent else ""
    score, low, high = cols["score"] * k, cols["low"] * k, cols["high"] * k
    open_mark = cols["contains_chance"]
    symbols = np.where(~cols["has_items"], "diamond", np.where(open_mark, "circle-open", "circle"))
    n_text = ["unknown" if pd.isna(v) else str(int(v)) for v in cols["n"]]
    custom = np.column_stack([low, high, np.array(n_text, dtype=object),
                              np.where(open_mark, "yes", "no"),
                              np.array([plot_text(r) for r in cols["run"]], dtype=object)])
    average = panel == AVERAGE_PANEL
    what = "macro average over tasks (SE = sqrt(sum SE_t^2)/k)" if average else method_label
    suffix = str(idx + 1) if idx else ""
    return dict(
        type="scatter", x=_list(score), y=[plot_text(labels[r]) for r in cols["run"]],
        mode="markers",
        marker=dict(symbol=list(symbols), size=10, color=COLORS[0],
                    line=dict(width=2, color=COLORS[0])),
        error_x=dict(type="data", symmetric=False, array=_list(high - score),
                     arrayminus=_list(score - low), thickness=1.6, width=4, color=COLORS[0]),
        customdata=_list(custom), name=plot_text(panel),
        hovertemplate=(f"<b>%{{customdata[4]}}</b> · {plot_text(panel)}<br>score "
                       f"%{{x:.2f}}{unit}<br>{level} CI [%{{customdata[0]:.2f}}, "
                       f"%{{customdata[1]:.2f}}]<br>{'tasks' if average else 'n'} = "
                       f"%{{customdata[2]}}<br>contains chance: %{{customdata[3]}}"
                       f"<br>{plot_text(what)}<extra></extra>"),
        xaxis="x" + suffix, yaxis="y" + suffix)


def _shared_range(panels: list[str], by_panel: dict[str, bool],
                  columns: dict[str, dict[str, np.ndarray] | None],
                  chance_lines: list[tuple[int, float]]) -> list[float] | None:
    """One x range (percent) for every panel in percent: every interval and chance line,
    padded by 4 % of the span, within [-2, 102]."""
    values = [x for i, x in chance_lines if by_panel.get(panels[i], True)]
    for p in panels:
        cols = columns.get(p)
        if cols is not None and by_panel.get(p, True):
            for c in ("low", "high", "score"):
                values += [100.0 * v for v in cols[c].tolist() if np.isfinite(v)]
    if not values:
        return None
    lo, hi = min(values), max(values)
    pad = max(0.04 * (hi - lo), 1.0)
    return [max(lo - pad, -2.0), min(hi + pad, 102.0)]


def _forest_layout(panels: list[str], full_titles: list[str], geo: Geometry,
                   category: list[str], by_panel: dict[str, bool],
                   columns: dict[str, dict[str, np.ndarray] | None],
                   chance_lines: list[tuple[int, float]], note_text: str) -> dict:
    """The layout dict: a panel grid from ``geo``, the shared y categories, the shared x
    range of the percent panels, chance lines and the footnote."""
    axes, keys, titles = _grid(len(panels), geo, full_titles)
    shared = _shared_range(panels, by_panel, columns, chance_lines)
    first_pct = next((keys[i][0] for i, p in enumerate(panels) if by_panel.get(p, True)), None)
    for idx, panel in enumerate(panels):
        xname, yname = keys[idx]
        pct = by_panel.get(panel, True)
        x = dict(axes[xname], title=dict(text="score (%)" if pct else "score",
                                         font=dict(size=AXIS_TITLE_PX)))
        if pct and shared is not None:
            x["range"] = list(shared)
            if xname != first_pct:
                x["matches"] = "x" + first_pct[len("xaxis"):]
        axes[xname] = x
        axes[yname] = dict(axes[yname], categoryorder="array", categoryarray=list(category),
                           type="category", range=[-0.6, len(category) - 0.4],
                           showticklabels=idx % geo.ncols == 0,
                           tickfont=dict(size=round(geo.label_px, 1)))
    shapes = [dict(type="line", x0=x, x1=x, xref="x" + keys[i][0][len("xaxis"):], y0=0, y1=1,
                   yref="y" + keys[i][1][len("yaxis"):] + " domain",
                   line=dict(color="#888", dash="dot"))
              for i, x in chance_lines]
    note = dict(text=note_text, x=0, xref="paper", xanchor="left", xshift=4 - geo.margin["l"],
                y=0, yref="paper", yanchor="top", yshift=geo.note_shift, showarrow=False,
                align="left", font=dict(size=NOTE_PX, color="#555"))
    layout = dict(axes, **_BASE_LAYOUT)
    layout.update(annotations=titles + [note], shapes=shapes, height=geo.height,
                  margin=dict(geo.margin))
    return layout


def _grid(n_panels: int, geo: Geometry, full_titles: list[str]
          ) -> tuple[dict, list[tuple[str, str]], list[dict]]:
    """``subplot_grid`` cut to ``n_panels`` cells (no empty axes in the last row), with the
    titles wrapped to ``geo.title_chars``."""
    wrapped = [wrap_title(t, geo.title_chars, TITLE_LINES) for t in full_titles]
    axes, keys, titles = subplot_grid(geo.nrows, geo.ncols, geo.horizontal_spacing,
                                      geo.vertical_spacing, wrapped)
    keys = keys[:n_panels]
    axes = {k: v for k, v in axes.items() if any(k in pair for pair in keys)}
    titles = [dict(a, font=dict(size=TITLE_PX)) for a in titles[:n_panels]]
    return axes, keys, titles


# ---- fitting a drawn figure to a canvas ----------------------------------------------------

def is_forest(fig: go.Figure) -> bool:
    """True for a figure ``forest_plot`` made."""
    meta = fig.layout.meta
    return isinstance(meta, dict) and META_KEY in meta


def relayout_forest(fig: go.Figure, width: int | None = None, height: int | None = None
                    ) -> go.Figure:
    """A forest plot re-laid out for its current fonts (``ui.export.readable_fonts`` makes
    them larger) and, with ``width`` and ``height``, for that canvas: margins that hold the
    run labels, wrapped titles and footnote at those font sizes, panels per row chosen so
    every run label keeps its row (``geometry``). Other figures are returned unchanged."""
    if not is_forest(fig):
        return fig
    spec = fig.to_plotly_json()
    layout = dict(spec["layout"])
    meta = layout["meta"][META_KEY]
    titles = list(meta["titles"])
    n_panels = len(titles)
    fonts = _fonts_of(layout)
    canvas = int(width or PAGE_WIDTH * fonts.tick / TICK_PX)
    note_text, note_lines = _wrapped_note(list(meta.get("notes", [])), canvas, fonts.note)
    geo = geometry(n_panels, int(meta["n_runs"]), int(meta["label_chars"]), titles, fonts,
                   width=canvas, height=height, max_cols=int(meta.get("max_cols", MAX_COLS)),
                   note_lines=note_lines)
    axes, keys, title_notes = _grid(n_panels, geo, titles)
    for idx, (xname, yname) in enumerate(keys):
        x = dict(layout.get(xname, {}), domain=axes[xname]["domain"], nticks=geo.x_ticks)
        title = dict(x.get("title") or {})
        if not geo.axis_title_fits:
            title["text"] = AXIS_SHORT.get(title.get("text", ""), "")
        x["title"] = title
        layout[xname] = x
        y = dict(layout.get(yname, {}), domain=axes[yname]["domain"],
                 showticklabels=idx % geo.ncols == 0)
        y["tickfont"] = dict(y.get("tickfont", {}), size=round(geo.label_px, 1))
        layout[yname] = y
    old = list(layout.get("annotations", []))
    for i, note in enumerate(title_notes):
        old[i] = dict(old[i], x=note["x"], y=note["y"], text=note["text"])
    if len(old) > n_panels:
        old[n_panels] = dict(old[n_panels], text=note_text, yshift=geo.note_shift,
                             xshift=4 - geo.margin["l"])
    layout["annotations"] = old
    layout["margin"] = dict(layout.get("margin", {}), **geo.margin)
    layout["height"] = height or geo.height
    if width:
        layout.update(width=width, autosize=False)
    return go.Figure(data=spec["data"], layout=layout)


def _fonts_of(layout: dict) -> Fonts:
    """The font sizes a forest figure's layout sets (those ``forest_plot`` wrote, or larger
    ones from ``readable_fonts``)."""
    def size(d: dict | None, default: float) -> float:
        s = (d or {}).get("size")
        return float(s) if s else default

    base_px = size(layout.get("font"), HEAD_PX)
    xaxis, yaxis = layout.get("xaxis", {}), layout.get("yaxis", {})
    notes = layout.get("annotations") or [{}]
    title = layout.get("title", {})
    return Fonts(tick=max(size(yaxis.get("tickfont"), TICK_PX), size(xaxis.get("tickfont"), 0)),
                 title=size(notes[0].get("font"), TITLE_PX),
                 axis_title=size((xaxis.get("title") or {}).get("font"), AXIS_TITLE_PX),
                 head=size(title.get("font"), base_px),
                 note=size(notes[-1].get("font"), NOTE_PX))
