"""Slide-size exports of the pages' charts, and a "download all figures" zip per page.

Every chart drawn through ``common.show_chart`` gets PNG and SVG downloads at the two 16:9
slide sizes (1920x1080 and 1280x720) and is registered for the page's zip (sidebar button,
built on click). Slide figures are re-laid out at the slide size with fonts meant to be read
from the back of a room: at 1920 px wide, axis tick labels are 20 px, axis titles 24 px,
titles 34 px, every other text at least 18 px; at 1280 px everything scales by 1280/1920,
so a projected slide looks the same.

Images come from kaleido with the system Chromium (``$BROWSER_PATH`` or ``chromium``).
Without it, a chart offers no server-side image (the chart toolbar's camera button still
saves a PNG in the browser) and the zip holds each figure as a standalone interactive HTML
file next to one shared ``plotly.min.js`` (offline), plus the figure JSON, and says why.
"""

from __future__ import annotations

import copy
import io
import json
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

import streamlit as st

from evalcore.charts_forest import is_forest, relayout_forest
from evalcore.tables import slug

SLIDE_SIZES = {"1920x1080": (1920, 1080), "1280x720": (1280, 720)}
REFERENCE_WIDTH = 1920
# font sizes in px at 1920 px wide (scaled linearly for other widths)
TICK_PX, AXIS_TITLE_PX, BASE_PX, TITLE_PX, MIN_TEXT_PX = 20, 24, 22, 34, 18
REGISTRY_KEY = "_export_figures"


def readable_fonts(fig: Any, factor: float = 1.0) -> Any:
    """A copy of ``fig`` with every text at slide size times ``factor`` (1 = 1920 px wide);
    a forest plot is re-laid out for the larger fonts (``charts.relayout_forest``: margins
    that hold its run labels and titles)."""
    out = copy.deepcopy(fig)
    tick, axis_title = round(TICK_PX * factor), round(AXIS_TITLE_PX * factor)
    base, title, least = round(BASE_PX * factor), round(TITLE_PX * factor), round(MIN_TEXT_PX * factor)
    out.update_layout(font=dict(size=base), title_font_size=title,
                      legend=dict(font=dict(size=base)), hoverlabel=dict(font_size=base))
    out.update_xaxes(tickfont_size=tick, title_font_size=axis_title)
    out.update_yaxes(tickfont_size=tick, title_font_size=axis_title)
    for ann in out.layout.annotations or ():
        size = ann.font.size if ann.font and ann.font.size else 0
        ann.font.size = max(round(size * factor * 1.4), least)
    for trace in out.data:
        if getattr(trace, "textfont", None) is not None and hasattr(trace.textfont, "size"):
            trace.textfont.size = max(round((trace.textfont.size or 0) * factor * 1.4), least)
    return relayout_forest(out)


def slide_figure(fig: Any, width: int, height: int) -> Any:
    """``fig`` laid out for a slide of ``width`` x ``height`` px with readable fonts. A
    forest plot is re-laid out for the canvas (panels per row, label margin, wrapped titles:
    ``charts.relayout_forest``), so every run label and title is kept."""
    factor = width / REFERENCE_WIDTH
    out = readable_fonts(fig, factor)
    if is_forest(out):
        return relayout_forest(out, width, height)
    m = out.layout.margin
    pad = lambda v, lo: max(int((v or 0) * factor * 1.6), lo)   # noqa: E731
    out.update_layout(width=width, height=height, autosize=False,
                      margin=dict(l=pad(m.l, int(40 * factor)), r=pad(m.r, int(40 * factor)),
                                  t=pad(m.t, int(110 * factor)), b=pad(m.b, int(90 * factor))))
    return out


_PROBE: dict[str, Any] = {}
_PROBE_LOCK = threading.Lock()


def _render_probe() -> bool:
    """True when kaleido renders a tiny PNG with a working Chromium (several seconds: it
    starts the browser)."""
    try:
        import plotly.graph_objects as go
        go.Figure().to_image(format="png", width=20, height=20)
    except Exception:   # no kaleido, no browser, or a browser that cannot start
        return False
    return True


def start_image_probe() -> threading.Thread:
    """Start the render probe in a background thread, once per process (``app.py`` calls it
    at start-up, so the first chart page does not wait for Chromium to start)."""
    with _PROBE_LOCK:
        if "thread" not in _PROBE:
            def run() -> None:
                _PROBE["ok"] = _render_probe()
            _PROBE["thread"] = threading.Thread(target=run, name="evalbars-image-probe",
                                                daemon=True)
            _PROBE["thread"].start()
        return _PROBE["thread"]


def _browser_found() -> bool:
    """kaleido importable and a Chromium executable found (``$BROWSER_PATH``, else
    ``chromium`` / ``chromium-browser`` / ``google-chrome`` on PATH): the quick guess used
    until the render probe has finished."""
    import importlib.util
    import os
    import shutil
    if importlib.util.find_spec("kaleido") is None:
        return False
    named = os.environ.get("BROWSER_PATH")
    if named:
        return Path(named).exists() or shutil.which(named) is not None
    return any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome"))


def images_available(wait: bool = True) -> bool:
    """True when kaleido can render with a working Chromium (probed once per process, in a
    background thread). ``wait=False`` (drawing a page) does not wait for the probe: until it
    has finished, the answer is ``_browser_found()``; a download clicked in that window on a
    machine whose Chromium cannot start fails with kaleido's error."""
    thread = start_image_probe()
    if wait:
        thread.join()
    return _PROBE["ok"] if "ok" in _PROBE else _browser_found()


def figure_image(fig: Any, fmt: str, size: str) -> bytes:
    """PNG or SVG bytes of ``fig`` at a slide size ("1920x1080" or "1280x720")."""
    w, h = SLIDE_SIZES[size]
    return slide_figure(fig, w, h).to_image(format=fmt, width=w, height=h, scale=1)


def _slug(text: str) -> str:
    return slug(text, fallback="figure")


def figures_zip(figures: list[tuple[str, Any]], *, images: bool | None = None) -> bytes:
    """A zip of every figure: PNG and SVG at both slide sizes (one kaleido batch), plus each
    figure's JSON; without a browser, standalone offline HTML files instead of images."""
    images = images_available() if images is None else images
    buf = io.BytesIO()
    names = []
    for i, (name, _) in enumerate(figures, 1):
        names.append(f"{i:02d}_{_slug(name)}")
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for base, (_, fig) in zip(names, figures):
            zf.writestr(f"json/{base}.json", fig.to_json())
        if images and figures:
            import plotly.io as pio
            with tempfile.TemporaryDirectory(prefix="evalbars-figs-") as tmp:
                figs, paths, widths, heights = [], [], [], []
                for base, (_, fig) in zip(names, figures):
                    for size, (w, h) in SLIDE_SIZES.items():
                        slide = slide_figure(fig, w, h)
                        for fmt in ("png", "svg"):
                            figs.append(slide)
                            paths.append(Path(tmp) / f"{base}_{size}.{fmt}")
                            widths.append(w)
                            heights.append(h)
                pio.write_images(figs, paths, width=widths, height=heights)
                for p in paths:
                    zf.write(p, f"{p.suffix[1:]}/{p.name}")
            note = ("PNG and SVG at 1920x1080 and 1280x720 (16:9), fonts sized for "
                    "projection; json/ holds each Plotly figure.\n")
        else:
            from plotly.offline import get_plotlyjs
            zf.writestr("html/plotly.min.js", get_plotlyjs())
            for base, (_, fig) in zip(names, figures):
                zf.writestr(f"html/{base}.html", fig.to_html(include_plotlyjs="plotly.min.js",
                                                             full_html=True))
            note = ("No Chromium on the server, so no PNG/SVG here: html/ holds each figure "
                    "as an interactive page that works offline (its toolbar saves a PNG); "
                    "json/ holds each Plotly figure.\n")
        zf.writestr("README.txt", note)
    return buf.getvalue()


# ---- per page ------------------------------------------------------------------------------

def start_page() -> list:
    """A fresh figure registry for this script run (``app.py`` calls it before the page)."""
    figs: list = []
    st.session_state[REGISTRY_KEY] = figs
    return figs


def register(fig: Any, name: str) -> None:
    """Add a drawn chart to the page's zip."""
    st.session_state.setdefault(REGISTRY_KEY, []).append((name, fig))


def zip_button(figs: list, page_name: str, container: Any = None) -> None:
    """The page's "Download all figures" button (the zip is built when clicked)."""
    box = container if container is not None else st
    box.download_button("Download all figures (zip)", data=lambda: figures_zip(list(figs)),
                        file_name=f"evalbars_{_slug(page_name)}_figures.zip",
                        mime="application/zip", key="export_all_zip", on_click="ignore",
                        icon=":material/folder_zip:",
                        help="Every chart on this page as PNG and SVG at 1920x1080 and "
                             "1280x720, with fonts readable when projected.")


def chart_exports(fig: Any, name: str, key: str) -> None:
    """Slide-size PNG/SVG downloads for one chart (rendered on click), and its registration
    for the page's zip."""
    register(fig, name)
    if not images_available(wait=False):
        st.caption("Slide images need Chromium on the server; use the camera button in the "
                   "chart's toolbar for a PNG.")
        return
    row = st.container(horizontal=True, gap="small")
    for size in SLIDE_SIZES:
        for fmt in ("png", "svg"):
            row.download_button(f"{fmt.upper()} {size}",
                                data=lambda f=fmt, s=size: figure_image(fig, f, s),
                                file_name=f"{_slug(name)}_{size}.{fmt}",
                                mime="image/png" if fmt == "png" else "image/svg+xml",
                                key=f"{key}_{fmt}_{size}", on_click="ignore",
                                icon=":material/image:" if fmt == "png" else None)


def spec_json(fig: Any) -> dict:
    """The figure as a plain dict (for tests and the zip)."""
    return json.loads(fig.to_json())
