"""Tables and charts on a page with their downloads (CSV, Markdown, LaTeX; the chart's slide
images), and the link to the Method check for a design."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from evalcore.tables import slug, to_latex, to_markdown

def table_downloads(df: pd.DataFrame, name: str, key: str) -> None:
    """Download buttons for ``df`` as CSV, Markdown and LaTeX (generated on click)."""
    frame = df.copy()
    base = slug(name)
    row = st.container(horizontal=True, gap="small")
    row.download_button("CSV", data=lambda: frame.to_csv(index=False), file_name=f"{base}.csv",
                        mime="text/csv", key=f"{key}_csv", on_click="ignore",
                        icon=":material/download:")
    row.download_button("Markdown", data=lambda: to_markdown(frame), file_name=f"{base}.md",
                        mime="text/markdown", key=f"{key}_md", on_click="ignore")
    row.download_button("LaTeX", data=lambda: to_latex(frame), file_name=f"{base}.tex",
                        mime="application/x-tex", key=f"{key}_tex", on_click="ignore")


def show_table(df: pd.DataFrame, name: str, key: str, *, column_config: dict | None = None,
               height: int | str = "auto") -> None:
    """``st.dataframe`` (text-only rendering) plus its CSV/Markdown/LaTeX downloads."""
    st.dataframe(df, hide_index=True, column_config=column_config, key=f"{key}_df",
                 height=height)
    table_downloads(df, name, key)


PLOTLY_CONFIG = {"displaylogo": False,
                 "toImageButtonOptions": {"format": "png", "scale": 2}}


def show_chart(fig: Any, name: str, key: str, *, export_fig: Any = None) -> None:
    """Draw a Plotly figure (exact values on hover) with slide-size PNG/SVG downloads
    (``ui.export``; the figure also joins the page's "all figures" zip) and larger fonts in
    presentation mode (``ui.present``, which also hides the chart's toolbar).

    ``export_fig``: the figure the downloads and the zip hold when it differs from the one
    drawn (a page that prints a chart's title and notes as text around it draws the chart
    alone and exports it with them, so a slide stands on its own)."""
    from ui import export, present

    config = {**PLOTLY_CONFIG,
              "toImageButtonOptions": {**PLOTLY_CONFIG["toImageButtonOptions"],
                                       "filename": slug(name)}}
    if present.is_on():
        config["displayModeBar"] = False
    st.plotly_chart(present.present_figure(fig), key=key, config=config)
    export.chart_exports(fig if export_fig is None else export_fig, name, key)


def method_check_link(design: str, **params: float | int | None) -> str:
    """Markdown link to the Method check page with the design's numbers in its URL (coverage
    of every interval method for this n; see pages/method_check.py for the parameters)."""
    from urllib.parse import urlencode

    query = {"design": design, **{k: (f"{v:.4g}" if isinstance(v, float) else str(v))
                                  for k, v in params.items() if v is not None}}
    return (f"[Method check: how often each interval method covers at this n]"
            f"(method_check?{urlencode(query)})")
