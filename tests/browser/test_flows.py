"""The main flows in a real headless Chromium: first run on the demo, upload a real lm_eval
sample log, the leaderboard with error bars, a paired comparison and its disagreement list.

Tables are drawn on a canvas (st.dataframe) and cannot be read here; numbers are asserted in
the AppTest suite. These tests check what a person sees: pages load through app.py's
navigation, uploads are recognised, charts render with error bars, texts of disagreeing items
are shown.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

LM_EVAL = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "lm_eval"
QWEN_SAMPLES = "samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl"
MISTRAL = "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"


def wait_idle(page, timeout: float = 90.0) -> None:
    """Wait until Streamlit has finished running the script (no status widget for 1.5 s)."""
    page.wait_for_selector("[data-testid='stApp']")
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        running = page.locator("[data-testid='stStatusWidget']").count() > 0
        if running:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 1.5:
            return
        time.sleep(0.25)
    raise AssertionError("the app kept running for more than %.0f s" % timeout)


def no_exception(page) -> None:
    errors = page.locator("[data-testid='stException']")
    assert errors.count() == 0, errors.first.inner_text()[:3000]


def main_text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


@pytest.fixture(scope="module")
def fixtures_present():
    if not (LM_EVAL / MISTRAL).exists():
        pytest.skip(f"shared fixtures not found at {LM_EVAL}")


def test_first_run_opens_on_demo_leaderboard_with_error_bars(app_url, page):
    page.goto(app_url + "/")
    wait_idle(page)
    no_exception(page)
    text = main_text(page)
    assert "Leaderboard" in text
    assert "Demo data" in text
    # navigation comes from app.py (titles), not from the pages/ folder's file names
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    assert "Compare two runs" in nav and "Repeats & clusters" in nav
    # a Plotly forest plot with error bars is drawn
    page.wait_for_selector(".js-plotly-plot")
    assert page.locator(".js-plotly-plot .errorbar").count() > 0


def test_shared_url_opens_the_page_inside_the_app(app_url, page):
    page.goto(app_url + "/compare?task=arc_easy_demo")
    wait_idle(page)
    no_exception(page)
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    assert "Compare two runs" in nav and "compare" not in nav.split()
    assert "Compare two runs" in main_text(page)
    assert "task=arc_easy_demo" in page.url


def test_upload_compare_and_disagreements(app_url, page, fixtures_present):
    page.goto(app_url + "/upload")
    wait_idle(page)
    page.locator("input[type=file]").set_input_files(
        [str(LM_EVAL / QWEN_SAMPLES), str(LM_EVAL / MISTRAL), str(LM_EVAL / DIALOGPT)])
    wait_idle(page, timeout=120)
    # the report says what was recognised (its table is a canvas; the headline is text)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=stMain]').innerText.includes('Recognised')")
    no_exception(page)
    text = main_text(page)
    assert "Recognised 3 run(s); 3 added or merged." in text
    assert "What was recognised" in text

    page.goto(app_url + "/leaderboard?task=arc_easy")
    wait_idle(page)
    no_exception(page)
    page.wait_for_selector(".js-plotly-plot .errorbar")
    plot = page.locator(".js-plotly-plot").first.inner_text()
    assert "Mistral-7B-v0.1" in plot or "Mistral" in main_text(page)

    run_a = "mistralai/Mistral-7B-v0.1"
    run_b = "microsoft/DialoGPT-medium"
    page.goto(app_url + f"/compare?run_a={run_a}&run_b={run_b}&task=arc_easy&cell=c")
    wait_idle(page)
    no_exception(page)
    assert page.locator(".st-key-cmp_verdict").count() == 1     # the verdict, first
    # st.metric values can paint a moment after the rest of the page: wait for them
    page.wait_for_function(
        "() => /-46\\.7\\s*pp/.test(document.querySelector('[data-testid=stMain]').innerText)",
        timeout=30_000)
    text = main_text(page)
    assert re.search(r"-46\.7\s*pp", text)
    # the disagreement list: 7 items only A got right, with prompt and both responses
    assert "7 item(s)" in text
    assert "Prompt" in text and "Response A" in text and "Response B" in text
