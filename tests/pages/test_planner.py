"""Planner page: CI half-widths, MDE and required n against scipy/statsmodels closed forms,
URL state, the pair-of-runs mode and the pre-registration sheet."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from tests.pages.conftest import charts, metric, no_exception, page, texts

Z = norm.ppf(0.975)


def test_defaults_match_closed_forms():
    at = page("planner").run()
    no_exception(at)
    # one score, n = 500, p = 0.7: Wilson half-width = half the statsmodels Wilson interval
    low, high = proportion_confint(350, 500, alpha=0.05, method="wilson")
    assert metric(at, "Wilson 95% half-width at n = 500") == f"± {100 * (high - low) / 2:.2f} pp"
    assert metric(at, "CLT 95% half-width at n = 500") == \
        f"± {100 * Z * math.sqrt(0.21 / 500):.2f} pp"
    # paired MDE with disagreement 0.2 (sd_d^2 = 0.2), alpha 0.05, power 0.8, n = 500
    zsum = Z + norm.ppf(0.8)
    assert metric(at, "MDE at n = 500") == f"{100 * zsum * math.sqrt(0.2 / 500):.2f} pp"
    need = math.ceil(zsum ** 2 * 0.2 / 0.02 ** 2)
    assert metric(at, "Items needed for a 2.0 pp gap") == f"{need:,}"
    power = next(f for f in charts(at) if "Minimum detectable" in f["layout"]["title"]["text"])
    xs, ys = power["data"][0]["x"], power["data"][0]["y"]
    assert ys[xs.index(1000)] == pytest.approx(100 * zsum * math.sqrt(0.2 / 1000))


def test_widgets_and_url_round_trip():
    at = page("planner")
    at.query_params.update({"n": "2000", "p": "0.5", "spread": "sd", "sd": "0.3",
                            "alpha": "0.01", "power": "0.9", "gap": "1.5", "deff": "2.0"})
    at.run()
    no_exception(at)
    assert at.select_slider(key="pl_n").value == "2000"
    zsum = norm.ppf(0.995) + norm.ppf(0.9)
    assert metric(at, "MDE at n = 2,000") == f"{100 * zsum * 0.3 * math.sqrt(2.0 / 2000):.2f} pp"
    assert metric(at, "Items needed for a 1.5 pp gap") == \
        f"{math.ceil(zsum ** 2 * 0.09 * 2.0 / 0.015 ** 2):,}"
    at.number_input(key="pl_gap").set_value(3.0).run()
    assert at.query_params["gap"] in ("3.0", ["3.0"])
    assert metric(at, "Items needed for a 3.0 pp gap") == \
        f"{math.ceil(zsum ** 2 * 0.09 * 2.0 / 0.03 ** 2):,}"


def test_preregistration_sheet_contents():
    at = page("planner").run()
    at.text_input(key="pl_cmp").set_value("<b>new</b> vs old | arc").run()
    sheet = at.code[-1].value
    assert sheet.startswith("# Pre-registration")
    assert "| Items n |" in sheet and "Minimum detectable effect" in sheet
    assert "<b>" not in sheet                               # user text escaped
    assert any(b.label.startswith("Download pre-registration") for b in at.download_button)


def test_estimate_from_a_pair_in_the_store(fixture_store):
    at = page("planner")
    at.query_params["src"] = "store"
    at.run()
    no_exception(at)
    assert metric(at, "Observed difference B − A") in ("+46.7 pp", "-46.7 pp")
    assert metric(at, "Disagreement rate") == f"{100 * 7 / 15:.1f}%"
    assert any("15 shared items" in t for t in texts(at.caption))


def test_pair_mode_on_empty_store_is_a_message():
    at = page("planner")
    at.query_params["src"] = "store"
    at.run()
    no_exception(at)
    assert any("The store is empty" in t for t in texts(at.info))
