"""The chart builders skip Plotly's validation of the shared template (``charts._base_layout``)
and of the forest plot (``charts.figure_from_dicts``): every chart of the chart pages, on the
bundled demo, must be the figure the validated construction gives (the same JSON object)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import streamlit as st

from evalcore import charts as chart_builders
from evalcore import charts_noise

from .conftest import charts, no_exception, page

PAGES = [("leaderboard", {}), ("leaderboard", {"method": "clustered"}),
         ("compare", {"run_a": "demo-lab/kite-1b-mixA-step12000",
                      "run_b": "demo-lab/kite-1b-mixA-step2000"}),
         ("repeats", {}), ("noise", {}), ("noise", {"nz_tab": "Seeds"}),
         ("noise", {"nz_tab": "Checkpoints"}), ("planner", {}), ("method_check", {})]


def _validated(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0, xanchor="left"), height=height,
                      **chart_builders._BASE_LAYOUT)
    return fig


def _specs(name: str, params: dict) -> list[dict]:
    st.cache_data.clear()
    at = page(name)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    no_exception(at)
    return charts(at)


@pytest.mark.parametrize("name,params", PAGES)
def test_page_charts_equal_the_validated_figures(name, params, demo_store, monkeypatch):
    fast = _specs(name, params)
    assert fast, f"{name} drew no chart on the demo"
    monkeypatch.setattr(chart_builders, "_base_layout", _validated)
    monkeypatch.setattr(charts_noise, "_base_layout", _validated)
    monkeypatch.setattr(chart_builders, "figure_from_dicts",
                        lambda data, layout: go.Figure(data=data, layout=layout))
    validated = _specs(name, params)
    assert fast == validated
    assert all(s["layout"]["template"]["layout"]["plot_bgcolor"] == "white" for s in fast)
