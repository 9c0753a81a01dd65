"""Slide-size figures: 16:9 sizes, fonts readable when projected, PNG/SVG and the zip."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from evalcore import analysis
from evalcore.charts import answer_figure, forest_plot
from tests.report.conftest import A, B
from ui import export


@pytest.fixture(scope="module")
def figures(demo_store):
    cmp = analysis.compare(demo_store, A, B)
    board = analysis.leaderboard(demo_store, include_ranks=False)
    return [("answer", answer_figure(cmp.per_task, cmp.overall, run_a=A, run_b=B,
                                     confidence=0.95, verdict=cmp.verdict)),
            ("forest", forest_plot(board.cells, board.averages, method_label="Wilson score",
                                   confidence=0.95))]


@pytest.mark.parametrize("size", list(export.SLIDE_SIZES))
def test_slide_figure_size_and_fonts(figures, size):
    w, h = export.SLIDE_SIZES[size]
    assert w / h == pytest.approx(16 / 9)
    for _, fig in figures:
        slide = export.slide_figure(fig, w, h)
        assert (slide.layout.width, slide.layout.height) == (w, h)
        scale = w / 1920
        for axis in [k for k in slide.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
            assert slide.layout[axis].tickfont.size >= 18 * scale
            assert slide.layout[axis].title.font.size >= 18 * scale
        for ann in slide.layout.annotations:
            assert ann.font.size >= 18 * scale
        assert slide.layout.font.size >= 18 * scale
        assert fig.layout.width != w           # the page's figure is left as it was


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.skipif(not export.images_available(), reason="kaleido cannot start Chromium")
def test_png_and_svg_at_slide_sizes(figures):
    _, fig = figures[0]
    assert _png_size(export.figure_image(fig, "png", "1920x1080")) == (1920, 1080)
    assert _png_size(export.figure_image(fig, "png", "1280x720")) == (1280, 720)
    svg = export.figure_image(fig, "svg", "1920x1080").decode()
    assert svg.lstrip().startswith("<svg") and 'width="1920"' in svg and 'height="1080"' in svg


@pytest.mark.skipif(not export.images_available(), reason="kaleido cannot start Chromium")
def test_zip_of_all_figures(figures):
    data = export.figures_zip(figures, images=True)
    names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    for base in ("01_answer", "02_forest"):
        for size in export.SLIDE_SIZES:
            assert f"png/{base}_{size}.png" in names and f"svg/{base}_{size}.svg" in names
        assert f"json/{base}.json" in names
    z = zipfile.ZipFile(io.BytesIO(data))
    assert _png_size(z.read("png/02_forest_1280x720.png")) == (1280, 720)


def test_zip_without_a_browser_degrades_to_offline_html(figures):
    z = zipfile.ZipFile(io.BytesIO(export.figures_zip(figures, images=False)))
    names = set(z.namelist())
    assert {"html/plotly.min.js", "html/01_answer.html", "html/02_forest.html",
            "README.txt"} <= names
    page = z.read("html/01_answer.html").decode()
    assert 'src="plotly.min.js"' in page and "https://" not in page.split("<body>")[0]
    assert "No Chromium" in z.read("README.txt").decode()
