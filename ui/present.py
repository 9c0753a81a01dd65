"""Presentation mode: the page itself, projected.

A sidebar toggle, mirrored in the URL (``?present=1``, so a presentation link opens in it),
hides the controls (widgets, download buttons, the sidebar), the notes (captions, expanders),
help icons, heading anchors and the toolbars (Streamlit's and Plotly's), and enlarges text,
metrics and chart fonts. An "Exit presentation" button stays at the top of the page.
``app.py`` calls :func:`setup` before every page; ``common.show_chart`` passes each figure
through :func:`present_figure` and turns Plotly's toolbar off. A page asks :func:`is_on` to
show its answer only (Compare: the question, the verdict, the chart and its notes).

The stylesheet is a constant (no user text) injected with ``st.html``; it only hides and
resizes Streamlit's own elements.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

PARAM = "present"
KEY = "present_mode"
FIGURE_FACTOR = 0.9      # chart fonts at 0.9 x the 1920-px slide sizes of ui.export

CSS = """
<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
header[data-testid="stHeader"], [data-testid="stToolbar"],
.stSelectbox, .stMultiSelect, .stRadio, .stSlider, .stSelectSlider, .stNumberInput,
.stTextInput, .stTextArea, .stCheckbox, .stToggle, .stDateInput, .stFileUploader,
.stDownloadButton, .stButton, [data-testid="stButtonGroup"], .stSegmentedControl,
[data-testid="stCaptionContainer"], .stCaption, [data-testid="stExpander"],
[data-testid="stPopover"], [data-testid="stElementToolbar"], [data-testid="stTooltipIcon"],
[data-testid="stHeaderActionElements"], .modebar-container, .modebar
{ display: none !important; }
.st-key-present_exit, .st-key-present_exit .stButton { display: block !important; }
html, body, [data-testid="stAppViewContainer"] { font-size: 22px; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding: 1.5rem 3rem !important; }
.stMarkdown p, .stMarkdown li, [data-testid="stAlert"] p { font-size: 1.45rem !important; line-height: 1.45; }
.stMarkdown small { font-size: 1.0rem !important; }
h1 { font-size: 3.2rem !important; } h2 { font-size: 2.5rem !important; } h3 { font-size: 2.1rem !important; }
[data-testid="stMetricValue"] { font-size: 3.4rem !important; }
[data-testid="stMetricLabel"] p { font-size: 1.4rem !important; }
</style>
"""


def url_value() -> bool:
    """True when the URL asks for presentation mode (``?present=1``/``true``/``yes``)."""
    raw = st.query_params.get(PARAM)
    return str(raw).strip().lower() in ("1", "true", "yes", "on") if raw is not None else False


def _sync_url() -> None:
    if st.session_state.get(KEY):
        st.query_params[PARAM] = "1"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def _exit() -> None:
    st.session_state[KEY] = False
    _sync_url()


def is_on() -> bool:
    """Whether presentation mode is on in this session."""
    return bool(st.session_state.get(KEY, False))


def setup() -> bool:
    """The sidebar toggle (URL first), the stylesheet and the exit button; returns the mode."""
    if KEY not in st.session_state:
        st.session_state[KEY] = url_value()
    st.sidebar.toggle("Presentation mode", key=KEY, on_change=_sync_url,
                      help="Hide controls and notes and enlarge text, to project this page "
                           "(also ?present=1 in the URL).")
    _sync_url()
    if is_on():
        st.html(CSS)
        st.button("Exit presentation", key="present_exit", on_click=_exit,
                  icon=":material/close_fullscreen:")
    return is_on()


def present_figure(fig: Any) -> Any:
    """In presentation mode, ``fig`` with projection-size fonts; otherwise ``fig`` itself."""
    if not is_on():
        return fig
    from ui.export import readable_fonts
    out = readable_fonts(fig, FIGURE_FACTOR)
    if out.layout.height:
        out.update_layout(height=int(out.layout.height * 1.3))
    return out
