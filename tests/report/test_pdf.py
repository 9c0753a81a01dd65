"""The PDF: Chromium prints the report HTML, one section per page start, no empty page."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from evalcore.report.html import TITLES
from evalcore.report.pdf import find_chromium, write_pdf

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="no Chromium to print with")


def page_count(pdf: bytes) -> int:
    """Pages from the PDF's page objects (no PDF library needed)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


@pytest.fixture(scope="module")
def printed(demo_html, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pdf")
    src = tmp / "report.html"
    src.write_text(demo_html, encoding="utf-8")
    return write_pdf(src, tmp / "report.pdf")


def test_pdf_header_and_pages(printed, demo_report):
    data = printed.read_bytes()
    assert data[:5] == b"%PDF-"
    shown = [s for s in TITLES if demo_report.has(s)]
    assert page_count(data) >= len(shown)
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(printed)], capture_output=True, text=True).stdout
        assert int(re.search(r"Pages:\s+(\d+)", info).group(1)) == page_count(data)


@pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils not installed")
def test_each_section_starts_a_page(printed, demo_report):
    """The first section follows the title on page 1; every other starts a new page (its
    heading is the page's first line), in the order of the report."""
    n = page_count(printed.read_bytes())
    shown = [TITLES[s] for s in TITLES if demo_report.has(s)]
    first: dict[str, int] = {}
    for i in range(1, n + 1):
        text = subprocess.run(["pdftotext", "-f", str(i), "-l", str(i), "-layout",
                               str(printed), "-"], capture_output=True, text=True).stdout
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for title in shown:
            where = lines if title == shown[0] else lines[:1]
            if title in where and title not in first:
                first[title] = i
    assert first.get(shown[0]) == 1
    assert list(first) == shown, first
    pages = list(first.values())
    assert pages == sorted(pages) and len(set(pages)) == len(pages)


@pytest.mark.skipif(not shutil.which("pdftoppm"), reason="poppler-utils not installed")
def test_every_page_has_ink(printed, tmp_path):
    from PIL import Image
    subprocess.run(["pdftoppm", "-r", "20", "-gray", "-png", str(printed), str(tmp_path / "p")],
                   check=True)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) == page_count(printed.read_bytes())
    for p in pages:
        lo, hi = Image.open(p).convert("L").getextrema()
        assert lo < 128, f"{p.name} is blank"
