"""The Planner in a real Chromium, on the bundled demo: what the browser shows in every control
equals what the answer sentence says it used, through the sequences where they once parted
(a run pair without a shared task in between, then "+"; typed -> store -> typed), and the
answer is in the first screen at 1440 x 900.

The numbers behind the sentence are checked against scipy in tests/pages/test_planner.py; here
the items needed are recomputed from what the page shows (the inputs and the pilot's SD)."""

from __future__ import annotations

import math
import re

import pytest
from scipy.stats import norm

from tests.browser.test_flows import main_text, no_exception, wait_idle

pytestmark = pytest.mark.browser

SENTENCE = re.compile(
    r"To detect a (?P<gap>[\d.]+)-point gap between two models at (?P<conf>[\d.]+)% "
    r"confidence and (?P<power>[\d.]+)% power, you need about (?P<n>[\d,]+) items "
    r"\((?P<why>.*)\)\.")
PILOT_SD = re.compile(r"From the pilot: SD of per-item differences (?P<sd>[\d.]+); design "
                      r"effect (?P<deff>[\d.]+)\.")


def shown(page) -> dict[str, str]:
    """What the browser draws in the question's controls."""
    gap = page.get_by_test_id("stNumberInput").filter(has_text="Gap to detect (points)")
    power = page.get_by_test_id("stSlider").filter(has_text="Power")
    out = {"gap": gap.locator("input").input_value(),
           "conf": page.get_by_role("combobox", name="Confidence").input_value(),
           "power": power.locator("input[type='range']").get_attribute("aria-valuetext")}
    share = page.get_by_test_id("stNumberInput").filter(has_text="Share of items where")
    if share.count():
        out["dis"] = share.locator("input").input_value()
    return out


def sentence(page) -> re.Match | None:
    return SENTENCE.search(main_text(page))


def check_answer_uses_what_is_shown(page) -> tuple[re.Match, dict[str, str]]:
    """The sentence's gap, confidence and power are the ones drawn in the controls, and its
    item count follows from them (and the pilot's SD and design effect shown beside them)."""
    no_exception(page)
    controls = shown(page)
    m = sentence(page)
    assert m is not None, main_text(page)[:2000]
    assert float(m["gap"]) == pytest.approx(float(controls["gap"]))
    assert m["conf"] + "%" == controls["conf"]
    assert m["power"] + "%" == controls["power"]
    pilot = PILOT_SD.search(main_text(page))
    if pilot is not None:
        var, deff = float(pilot["sd"]) ** 2, float(pilot["deff"])
    else:
        var, deff = float(controls["dis"]), 1.0
    conf, power = float(m["conf"]) / 100, float(m["power"]) / 100
    z = norm.ppf(1 - (1 - conf) / 2) + norm.ppf(power)
    need = z ** 2 * var * deff / (float(m["gap"]) / 100) ** 2
    # the pilot's SD is shown to 4 decimals: the count from it may differ by a rounding step
    assert abs(int(m["n"].replace(",", "")) - math.ceil(need)) <= max(1, 2e-3 * need)
    return m, controls


def pick(page, label: str, option: str) -> None:
    box = page.get_by_role("combobox", name=label)
    box.click()
    box.fill("")
    page.keyboard.type(option)
    page.get_by_role("option").filter(has_text=option).first.click()
    wait_idle(page)


def test_a_pair_without_a_shared_task_then_plus_keeps_every_control(app_url, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(app_url + "/planner?src=store&gap=3.0&conf=0.99&power=0.9")
    wait_idle(page, 180)
    m, controls = check_answer_uses_what_is_shown(page)
    assert (controls["gap"], controls["conf"], controls["power"]) == ("3.0", "99%", "90%")
    # the answer is in the first screen
    box = page.get_by_text(re.compile(r"^To detect a")).bounding_box()
    assert box is not None and box["y"] + box["height"] < 900

    pick(page, "Run A", "hf/demo-org/atlas-7b")        # inspect run: no task shared with B
    no_exception(page)
    assert "share no task" in main_text(page) and sentence(page) is None
    assert shown(page) == controls                      # nothing else moved

    pick(page, "Run B", "hf/demo-org/boreal-8b")        # shares trivia_demo with A
    m, after = check_answer_uses_what_is_shown(page)
    assert after == controls and (m["gap"], m["conf"], m["power"]) == ("3", "99", "90")
    assert "trivia_demo" in m["why"]

    gap = page.get_by_test_id("stNumberInput").filter(has_text="Gap to detect (points)")
    gap.get_by_role("button").last.click()              # "+"
    wait_idle(page)
    m, after = check_answer_uses_what_is_shown(page)
    assert (after["gap"], after["conf"], after["power"]) == ("3.1", "99%", "90%")
    assert (m["gap"], m["conf"], m["power"]) == ("3.1", "99", "90")


def test_typed_then_store_then_typed(app_url, page):
    page.goto(app_url + "/planner?dis=0.2")
    wait_idle(page, 180)
    m, controls = check_answer_uses_what_is_shown(page)
    assert controls["dis"] == "0.200" and m["why"] == "assuming they disagree on 20% of items"

    page.get_by_text("Estimated from two runs in the store").click()
    wait_idle(page)
    m, controls = check_answer_uses_what_is_shown(page)
    assert m["why"].startswith("using the pilot's SD of per-item differences")
    assert "dis" not in controls and "20% of items)" not in m.group(0)

    page.get_by_text("Typed assumptions").click()
    wait_idle(page)
    m, controls = check_answer_uses_what_is_shown(page)
    assert controls["dis"] == "0.200" and m["why"] == "assuming they disagree on 20% of items"
