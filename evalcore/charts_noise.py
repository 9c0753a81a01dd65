"""Plotly chart builders of the Noise page (no statistics, no Streamlit; the same
conventions as ``evalcore.charts``: inputs are ``evalcore.analysis.noise`` tables, hover
shows the exact numbers, user strings pass through ``plot_text``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from evalcore.charts import COLORS, _base_layout, _list, _scale, plot_text

__all__ = ["protocol_spread_plot", "learning_curve_plot", "seed_scores_plot"]


def _interval_dots(fig: go.Figure, labels, scores, lows, highs, s: float, color: str,
                   name: str, unit: str) -> None:
    sc, lo, hi = (pd.Series(scores, dtype=float) * s, pd.Series(lows, dtype=float) * s,
                  pd.Series(highs, dtype=float) * s)
    fig.add_trace(go.Scatter(
        x=_list(sc), y=[plot_text(v) for v in labels], mode="markers", name=plot_text(name),
        marker=dict(size=10, color=color),
        error_x=dict(type="data", symmetric=False, array=_list(hi - sc), arrayminus=_list(sc - lo),
                     color=color, thickness=1.5),
        customdata=_list(pd.concat([lo, hi], axis=1).to_numpy()),
        hovertemplate=f"%{{y}}<br>%{{x:.2f}} {unit} [%{{customdata[0]:.2f}}, "
                      f"%{{customdata[1]:.2f}}]<extra></extra>"))


def protocol_spread_plot(cells: pd.DataFrame, *, title: str, percent: bool = True,
                         confidence: float = 0.95) -> go.Figure:
    """One model's score under each protocol with its interval; the shaded band is the
    protocol range. cells: ProtocolReport.cells rows of one group."""
    s = _scale(percent)
    unit = "%" if percent else ""
    fig = go.Figure()
    lo, hi = float(cells["score"].min()) * s, float(cells["score"].max()) * s
    fig.add_vrect(x0=lo, x1=hi, fillcolor=COLORS[0], opacity=0.12, line_width=0)
    _interval_dots(fig, cells["protocol"], cells["score"], cells["low"], cells["high"], s,
                   COLORS[0], "protocol", unit)
    fig.update_xaxes(title_text=f"score ({'%' if percent else 'raw'}), {confidence:.0%} intervals")
    fig.update_yaxes(autorange="reversed")
    return _base_layout(fig, plot_text(title), 140 + 45 * len(cells))


def learning_curve_plot(curve: pd.DataFrame, *, task: str, percent: bool = True,
                        confidence: float = 0.95) -> go.Figure:
    """Score against training step per series, each checkpoint with its interval.
    curve: CheckpointReport.curve rows of one task."""
    s = _scale(percent)
    unit = "%" if percent else ""
    fig = go.Figure()
    for i, (name, g) in enumerate(curve.groupby("series", sort=True)):
        g = g.sort_values("step")
        sc = g["score"].astype(float) * s
        color = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(
            x=_list(g["step"].astype(int)), y=_list(sc), mode="lines+markers", name=plot_text(name),
            line=dict(color=color), marker=dict(size=7, color=color),
            error_y=dict(type="data", symmetric=False, array=_list(g["high"].astype(float) * s - sc),
                         arrayminus=_list(sc - g["low"].astype(float) * s), color=color,
                         thickness=1.2),
            customdata=_list((g[["low", "high"]].astype(float) * s).to_numpy()),
            hovertemplate=f"{plot_text(name)}<br>step %{{x}}<br>%{{y:.2f}} {unit} "
                          f"[%{{customdata[0]:.2f}}, %{{customdata[1]:.2f}}]<extra></extra>"))
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text=f"score ({'%' if percent else 'raw'}), {confidence:.0%} intervals")
    fig = _base_layout(fig, f"Learning curve on {plot_text(task)}", 420)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.2))
    return fig


def seed_scores_plot(runs: pd.DataFrame, *, task: str, percent: bool = True,
                     confidence: float = 0.95) -> go.Figure:
    """Each seed's score with its interval, one colour per configuration.
    runs: SeedReport.runs rows of one task."""
    s = _scale(percent)
    unit = "%" if percent else ""
    fig = go.Figure()
    for i, (cfg, g) in enumerate(runs.groupby("config", sort=True)):
        _interval_dots(fig, [f"{cfg} · seed {sd}" for sd in g["seed"]], g["score"], g["low"],
                       g["high"], s, COLORS[i % len(COLORS)], cfg, unit)
    fig.update_xaxes(title_text=f"score ({'%' if percent else 'raw'}), {confidence:.0%} intervals")
    fig.update_yaxes(autorange="reversed")
    return _base_layout(fig, f"Seeds on {plot_text(task)}", 140 + 40 * len(runs))
