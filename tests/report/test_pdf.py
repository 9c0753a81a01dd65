"""The PDF: Chromium prints the report HTML. A lab reads it: the key findings on page 1, at
most 12 pages for the demo's default report and for docs/report.md's example, names never broken
inside a word, no internal name or raw missing value anywhere, no blank page."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from evalcore.report.findings import key_findings
from evalcore.report.html import TITLES, render_html
from evalcore.report.pdf import find_chromium, write_pdf
from tests.report.conftest import forbidden_in

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="no Chromium to print with")
needs_poppler = pytest.mark.skipif(not shutil.which("pdftotext"),
                                   reason="poppler-utils not installed")
MAX_PAGES = 12
SEPARATORS = set("-/_ .@:,")


def page_count(pdf: bytes) -> int:
    """Pages from the PDF's page objects (no PDF library needed)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


def pdf_text(path, first: int | None = None, last: int | None = None) -> str:
    """pdftotext in reading order (``-raw``: a line-end hyphen stays in the text)."""
    pages = (["-f", str(first)] if first else []) + (["-l", str(last)] if last else [])
    return subprocess.run(["pdftotext", "-raw", *pages, str(path), "-"], capture_output=True,
                          text=True, check=True).stdout


def joined(text: str) -> str:
    """Lines joined as a reader joins them: after a hyphen or slash directly, else with a
    space; whitespace runs made one space."""
    text = re.sub(r"([-/])[ \t]*\n[ \t]*", r"\1", text)
    return " ".join(text.split())


@pytest.fixture(scope="module")
def printed(demo_html, tmp_path_factory):
    """docs/report.md's example: the demo store with its two comparisons."""
    tmp = tmp_path_factory.mktemp("pdf")
    src = tmp / "report.html"
    src.write_text(demo_html, encoding="utf-8")
    return write_pdf(src, tmp / "report.pdf")


@pytest.fixture(scope="module")
def printed_default(default_report, tmp_path_factory):
    """``python -m evalcore report --out r.html --pdf`` on the demo store."""
    tmp = tmp_path_factory.mktemp("pdf-default")
    src = tmp / "report.html"
    src.write_text(render_html(default_report), encoding="utf-8")
    return write_pdf(src, tmp / "report.pdf")


def test_pdf_header_and_pages(printed):
    data = printed.read_bytes()
    assert data[:5] == b"%PDF-"
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(printed)], capture_output=True, text=True).stdout
        assert int(re.search(r"Pages:\s+(\d+)", info).group(1)) == page_count(data)


@pytest.mark.parametrize("which", ["printed", "printed_default"])
def test_a_report_a_lab_reads_is_at_most_12_pages(which, request):
    pages = page_count(request.getfixturevalue(which).read_bytes())
    assert 2 <= pages <= MAX_PAGES, pages


@needs_poppler
@pytest.mark.parametrize("which, report", [("printed", "demo_report"),
                                           ("printed_default", "default_report")])
def test_key_findings_are_page_one(which, report, request):
    """Page 1 holds every comparison's verdict sentence with its interval, the
    leaderboard's top group and the items needed for the gap of interest."""
    path, rep = request.getfixturevalue(which), request.getfixturevalue(report)
    first = joined(pdf_text(path, 1, 1))
    found = key_findings(rep)
    assert "Key findings" in first
    for f in found.comparisons:
        assert f.verdict in first, f.verdict
        ci = f"{100 * f.diff:+.1f} [{100 * f.low:+.1f}, {100 * f.high:+.1f}]"
        assert ci in first, ci
        for r in f.rows:
            assert r.verdict in first, r.verdict
    assert found.top_groups
    for g in found.top_groups:
        for m in g.members:
            assert m.run in first
            assert f"{100 * m.score:.1f}% [{100 * m.low:.1f}, {100 * m.high:.1f}]" in first
    assert found.plan is not None
    for x in found.plan.needs:
        assert f"{x.task} {x.items:,}" in first


@needs_poppler
def test_sections_follow_in_order(printed, demo_report):
    """Key findings on page 1, then the evidence in the report's order; the leaderboard,
    the comparisons and the appendix each start a page (their heading is its first line)."""
    n = page_count(printed.read_bytes())
    first: dict[str, int] = {}
    tops: dict[int, str] = {}
    for i in range(1, n + 1):
        lines = [ln.strip() for ln in pdf_text(printed, i, i).splitlines() if ln.strip()]
        tops[i] = lines[0] if lines else ""
        for title in TITLES.values():
            if title in lines and title not in first:
                first[title] = i
    assert first["Key findings"] == 1
    assert list(first) == list(TITLES.values()), first
    for title in ("Leaderboard", "Pairwise comparisons", "Appendix"):
        assert tops[first[title]] == title


def _splits(name: str):
    """(left, right) around every place inside an alphanumeric run of ``name``, each side
    reaching to the nearest separator (at most 8 characters), both at least 2 long."""
    for k in range(1, len(name)):
        if not (name[k - 1].isalnum() and name[k].isalnum()):
            continue
        i = k
        while i > 0 and name[i - 1] not in SEPARATORS:
            i -= 1
        j = k
        while j < len(name) and name[j] not in SEPARATORS:
            j += 1
        left, right = name[max(i, k - 8):k], name[k:min(j, k + 8)]
        if len(left) >= 2 and len(right) >= 2 and len(left) + len(right) >= 5:
            yield left, right


@needs_poppler
@pytest.mark.parametrize("which", ["printed", "printed_default"])
def test_names_never_break_inside_a_word(which, request, demo_store):
    """A run or task name may wrap after '-', '/', '_' or a space, never inside a word
    (the old report printed "demo-org/bor" / "eal-8b" in a squeezed verdict column)."""
    text = pdf_text(request.getfixturevalue(which))
    names = [str(n) for n in demo_store.runs()["name"]] + \
        sorted(set(map(str, demo_store.tasks()["task"])))
    broken = {(name, f"{left}|{right}") for name in names for left, right in _splits(name)
              if re.search(re.escape(left) + r"[ \t]*\n[ \t]*" + re.escape(right), text)}
    assert not broken, sorted(broken)


@needs_poppler
@pytest.mark.parametrize("which", ["printed", "printed_default"])
def test_no_internal_name_in_the_pdf(which, request):
    assert forbidden_in(pdf_text(request.getfixturevalue(which))) == []


@pytest.mark.skipif(not shutil.which("pdftoppm"), reason="poppler-utils not installed")
def test_every_page_has_ink(printed, tmp_path):
    from PIL import Image
    subprocess.run(["pdftoppm", "-r", "40", "-gray", "-png", str(printed), str(tmp_path / "p")],
                   check=True)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) == page_count(printed.read_bytes())
    for p in pages:
        lo, hi = Image.open(p).convert("L").getextrema()
        assert lo < 128, f"{p.name} is blank"
