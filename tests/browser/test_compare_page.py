"""The Compare page in a real Chromium on the demo: the answer in the first screen at
1440x900, every setting box showing what the page computed with after passing through a
run pair with no shared task, a segmented control that cannot be emptied, and presentation
mode at 1920x1080 showing the answer only (no toolbar, help icons or hashes), on Compare
and on every other page."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.test_flows import no_exception, wait_idle

pytestmark = pytest.mark.browser

ATLAS, BOREAL = "demo-org/atlas-7b", "demo-org/boreal-8b"
BOREAL_CHAT = "demo-org/boreal-8b @ 2026-03-03 14:40"
NO_SHARED = "hf/demo-org/atlas-13b"          # trivia_demo only: no task shared with BOREAL
HEX40 = re.compile(r"\b[0-9a-f]{40}\b")
PAGES = ("leaderboard", "compare", "repeats", "noise", "planner", "items", "method_check",
         "upload", "report")


def box(page, label: str):
    return page.get_by_role("combobox", name=label, exact=True)


def pick(page, label: str, option: str) -> None:
    """Choose ``option`` in the selectbox ``label`` (typed, then clicked) and wait."""
    field = box(page, label)
    field.click()
    field.fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()
    wait_idle(page)


def verdict_text(page) -> str:
    page.wait_for_selector(".st-key-cmp_verdict")
    return page.locator(".st-key-cmp_verdict").inner_text()


def axis_title(page) -> str:
    return page.locator(".st-key-cmp_answer .xtitle").first.text_content()


@pytest.fixture
def sized(browser, request):
    """A page of the size the test asks for (``request.param``: (width, height))."""
    width, height = getattr(request, "param", (1440, 900))
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


def test_answer_in_the_first_screen_and_boxes_in_step(app_url, sized):
    page = sized
    page.goto(app_url + f"/compare?run_a={ATLAS}&run_b={BOREAL}")
    wait_idle(page)
    no_exception(page)
    top = page.locator(".st-key-cmp_verdict").bounding_box()
    chart = page.locator(".st-key-cmp_answer .js-plotly-plot").bounding_box()
    assert top["y"] < 900 and chart["y"] < 900, (top, chart)
    assert page.locator(".js-plotly-plot .errorbar").count() >= 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare_1440x900.png"))
    # 90% and Benjamini-Hochberg, then a pair with no shared task, then back
    pick(page, "Confidence", "90%")
    pick(page, "Adjustment", "Benjamini-Hochberg")
    assert "90% intervals · Benjamini-Hochberg adjustment over 4 tasks" in verdict_text(page)
    pick(page, "Run B (compared with A)", NO_SHARED)
    assert "no task in common" in page.locator("[data-testid='stMain']").inner_text()
    assert box(page, "Confidence").input_value() == "90%"
    assert box(page, "Task").is_disabled()
    pick(page, "Run B (compared with A)", BOREAL)
    no_exception(page)
    assert box(page, "Confidence").input_value() == "90%"
    assert box(page, "Adjustment").input_value() == "Benjamini-Hochberg"
    assert box(page, "Task").input_value() == "All shared tasks"
    assert box(page, "Metric").input_value() == "primary metric"
    assert "90% intervals · Benjamini-Hochberg adjustment over 4 tasks · primary metric of " \
           "each task" in verdict_text(page)
    assert "90% interval" in axis_title(page)
    page.wait_for_function("() => document.querySelector('[data-testid=stMain]')"
                           ".innerText.includes('B − A (90% CI)')")
    # one task through run A: the adjustment box says none, as the result applies none
    pick(page, "Task", "gsm8k_demo")
    pick(page, "Run A (baseline)", NO_SHARED)
    pick(page, "Run A (baseline)", ATLAS)
    assert box(page, "Task").input_value() == "gsm8k_demo"
    assert box(page, "Confidence").input_value() == "90%"
    assert box(page, "Adjustment").input_value() == "Benjamini-Hochberg"
    assert box(page, "Adjustment").is_disabled()
    assert "90% intervals · no adjustment (one task)" in verdict_text(page)
    assert verdict_text(page).rstrip().endswith("gsm8k_demo")
    # back to all tasks: the box is in use again and shows what the result used
    pick(page, "Task", "All shared tasks")
    assert not box(page, "Adjustment").is_disabled()
    assert box(page, "Adjustment").input_value() == "Benjamini-Hochberg"
    assert "90% intervals · Benjamini-Hochberg adjustment over 4 tasks" in verdict_text(page)


def test_cell_control_cannot_be_emptied(app_url, sized):
    """Clicking the chosen cell again keeps it chosen: the control never shows no cell while
    the page lists one."""
    page = sized
    page.goto(app_url + f"/compare?run_a={ATLAS}&run_b={BOREAL}&task=arc_easy_demo&cell=b")
    wait_idle(page)
    chosen = page.get_by_role("radio", name="Only B right (b)", exact=True)
    assert chosen.get_attribute("aria-checked") == "true"
    chosen.click()
    wait_idle(page)
    no_exception(page)
    selected = page.locator("[role=radio][aria-checked=true]")
    assert selected.count() == 1 and selected.inner_text() == "Only B right (b)"
    assert "item(s) in 'Only B right (b)'" in page.locator("[data-testid='stMain']").inner_text()


@pytest.mark.parametrize("sized", [(1920, 1080)], indirect=True)
def test_presentation_mode_shows_the_answer_only(app_url, sized):
    page = sized
    page.goto(app_url + f"/compare?run_a={BOREAL}&run_b={BOREAL_CHAT}&present=1")
    wait_idle(page)
    no_exception(page)
    page.locator("section[data-testid='stSidebar']").wait_for(state="hidden")
    verdict = page.locator(".st-key-cmp_verdict").bounding_box()
    assert verdict["y"] + verdict["height"] < 1080, verdict
    assert page.locator(".st-key-cmp_answer .js-plotly-plot").bounding_box()["y"] < 1080
    assert page.locator("h1").first.inner_text().startswith(f"Is {BOREAL_CHAT} better than")
    size = page.evaluate("parseFloat(getComputedStyle(document.querySelector("
                         "'.st-key-cmp_verdict [data-testid=stAlert] p')).fontSize)")
    assert size >= 28
    assert page.locator(".modebar:visible").count() == 0
    assert page.locator("[data-testid='stTooltipIcon']:visible").count() == 0
    assert page.locator("[data-testid='stDataFrame']").count() == 0
    assert not HEX40.search(page.locator("[data-testid='stMain']").inner_text())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare_present_1920x1080.png"))


@pytest.mark.parametrize("sized", [(1920, 1080)], indirect=True)
def test_presentation_mode_on_every_page_hides_the_technical(app_url, sized):
    page = sized
    for name in PAGES:
        page.goto(app_url + f"/{name}?present=1")
        wait_idle(page)
        no_exception(page)
        page.locator("section[data-testid='stSidebar']").wait_for(state="hidden")
        assert page.locator(".modebar:visible").count() == 0, name
        assert page.locator("[data-testid='stTooltipIcon']:visible").count() == 0, name
        assert page.locator("[data-testid='stHeaderActionElements']:visible").count() == 0
        assert not HEX40.search(page.locator("[data-testid='stMain']").inner_text()), name
