"""The report in a real browser with every network request blocked, and presentation mode.

The report HTML is opened from a file with all non-file requests aborted: every figure must
draw (an SVG per figure), no request may fail and the console must stay free of errors; a
screenshot is kept in tests/browser/artifacts/. Presentation mode (``?present=1``) must hide
the widgets and enlarge the text of a served page.
"""

from __future__ import annotations

import pytest

from evalcore.ingest import parse_paths
from evalcore.report import ReportSpec, build_report
from evalcore.report.html import write_html
from evalcore.store import Store
from tests.browser.conftest import ARTIFACTS, ROOT
from tests.browser.test_flows import wait_idle

pytestmark = pytest.mark.browser
A, B = "demo-org/atlas-7b", "demo-org/boreal-8b"


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report-browser")
    store = Store(tmp / "store")
    store.ingest(parse_paths([ROOT / "data" / "demo"]))
    report = build_report(store, ReportSpec(comparisons=((A, B),), n_resamples=300))
    return write_html(report, tmp / "report.html")


def test_report_renders_offline_with_every_figure(report_file, page):
    requests, failed, errors = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda r: failed.append(r.url))

    def route(r):
        requests.append(r.request.url)
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            r.abort()
    page.route("**/*", route)
    page.goto(report_file.as_uri())
    n_figures = page.locator("div.plotly-graph-div").count()
    assert n_figures >= 3          # forest plot, one-slide answer, SE against K
    page.wait_for_function(
        f"document.querySelectorAll('div.plotly-graph-div .main-svg').length >= {n_figures}")
    drawn = page.evaluate("""() => [...document.querySelectorAll('div.plotly-graph-div')]
        .map(d => d.querySelectorAll('.main-svg .point, .main-svg path.point, .heatmaplayer, .scatterlayer .trace').length)""")
    assert all(k > 0 for k in drawn), drawn
    assert [u for u in requests if not u.startswith("file://")] == []
    assert failed == [] and errors == []
    assert page.locator("section#methods p").count() >= 4
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report_offline.png"), full_page=False)


def test_presentation_mode_hides_controls_and_enlarges_text(app_url, page):
    page.goto(app_url + "/compare?present=1")
    page.get_by_text("Is ", exact=False).first.wait_for()
    page.wait_for_selector("div.stButton")  # the exit button
    # the page's style element may reach the browser after the button (a busy server):
    # wait for the hidden state (fails after Playwright's timeout if it never comes)
    page.locator("section[data-testid='stSidebar']").wait_for(state="hidden")
    page.locator(".stSelectbox").first.wait_for(state="hidden")
    assert page.locator("section[data-testid='stSidebar']").is_hidden()
    assert page.locator(".stSelectbox").first.is_hidden()
    size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('h1')).fontSize)")
    assert size >= 60
    page.get_by_role("button", name="Exit presentation").click()
    page.wait_for_selector(".stSelectbox")
    assert page.locator(".stSelectbox").first.is_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)


def _first_screen(browser, url: str, width: int, height: int, shot: str):
    """Open ``url`` in a ``width`` x ``height`` window, wait for the key findings, keep a
    screenshot of the first screen; return the page (the caller closes its context)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    pg.goto(url)
    pg.get_by_role("heading", name="Key findings").wait_for()
    pg.get_by_text("the best run is", exact=False).first.wait_for()
    wait_idle(pg)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / shot), full_page=False)
    return context, pg


def test_report_page_opens_on_its_answer(app_url, browser):
    """At 1440 x 900 the first screen holds the downloads and the key findings (the settings
    come below)."""
    context, pg = _first_screen(browser, app_url + "/report", 1440, 900, "report_page_1440.png")
    try:
        heading = pg.get_by_role("heading", name="Key findings").bounding_box()
        button = pg.get_by_role("button", name="HTML report").bounding_box()
        best = pg.get_by_text("the best run is", exact=False).first.bounding_box()
        need = pg.get_by_text("To detect a 2-point gap", exact=False).first.bounding_box()
        settings = pg.get_by_role("heading", name="What goes into the report").bounding_box()
        assert button["y"] + button["height"] <= 900 and best["y"] < 900 and need["y"] < 900
        assert button["y"] < heading["y"] < settings["y"]
    finally:
        context.close()


def test_report_page_in_presentation_mode_shows_only_the_answer(app_url, browser):
    context, pg = _first_screen(browser, app_url + "/report?present=1", 1920, 1080,
                                "report_page_present_1920.png")
    try:
        assert pg.get_by_role("heading", name="Key findings").bounding_box()["y"] < 1080
        for hidden in ("What goes into the report", "Preview", "Methods (ready to paste)"):
            assert pg.get_by_role("heading", name=hidden).count() == 0, hidden
        assert pg.locator("iframe").count() == 0
        assert pg.locator(".stSelectbox").first.is_hidden()
        finding = pg.get_by_text("the best run is", exact=False).first
        size = finding.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert size >= 28                     # readable from the back of the room
    finally:
        context.close()


def test_report_page_downloads_the_report_and_previews_it_on_request(app_url, browser, tmp_path):
    """The HTML download is made on click (not sent with every view) and is the whole
    report; the preview iframe appears only when asked for."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    try:
        pg.goto(app_url + "/report")
        pg.get_by_role("heading", name="Key findings").wait_for()
        wait_idle(pg)
        with pg.expect_download() as info:
            pg.get_by_role("button", name="HTML report").click()
        path = tmp_path / "report.html"
        info.value.save_as(path)
        text = path.read_text(encoding="utf-8")
        assert text.lstrip().lower().startswith("<!doctype html") and "Key findings" in text
        assert path.stat().st_size > 1_000_000          # Plotly inlined: opens offline
        assert pg.locator("iframe[title='st.iframe'], iframe[srcdoc]").count() == 0
        pg.get_by_text("Show the report here", exact=False).click()
        pg.locator("iframe").first.wait_for()
        assert pg.locator("iframe").count() >= 1
    finally:
        context.close()
