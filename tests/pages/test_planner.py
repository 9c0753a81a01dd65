"""Planner page: the answer sentence at the top against scipy/statsmodels closed forms, and the
sequences where a control could show one thing and the page compute another (a run pair
without a shared task in between, a switch between typed and store assumptions): after each
step every displayed input equals the input of the displayed answer and of the
pre-registration sheet."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (charts, metric, no_exception, page, plain, store_file, texts,
                                  toy_runs)
from tests.pages.test_url_widgets import check_shown_equals_value

SENTENCE = re.compile(
    r"To detect a (?P<gap>[\d.]+)-point gap between two models at (?P<conf>[\d.]+)% "
    r"confidence and (?P<power>[\d.]+)% power, you need about (?P<n>[\d,]+) items "
    r"\((?P<why>.*)\)\.$")
SHEET_ROW = re.compile(r"^\| (?P<field>[^|]+) \| (?P<value>.*) \|$", re.M)


def answer(at) -> re.Match | None:
    """The answer sentence at the top of the page, parsed (None when there is none)."""
    for s in at.subheader:
        m = SENTENCE.match(plain(s.value))
        if m:
            return m
    return None


def sheet_fields(at) -> dict[str, str]:
    sheet = next(c.value for c in at.code if c.value.startswith("# Pre-registration"))
    return {m["field"]: m["value"] for m in SHEET_ROW.finditer(sheet)}


def required_n(conf: float, power: float, var: float, gap_points: float, deff: float) -> int:
    """n = ceil((z_{1-alpha/2} + z_power)^2 var deff / gap^2) with scipy's quantiles."""
    z = norm.ppf(1 - (1 - conf) / 2) + norm.ppf(power)
    return math.ceil(z ** 2 * var * deff / (gap_points / 100) ** 2)


def check_answer(at, var: float, deff: float = 1.0) -> re.Match:
    """Every control shows its value; the sentence and the sheet state exactly the displayed
    gap, confidence and power; the items needed equal the closed form for them."""
    no_exception(at)
    check_shown_equals_value(at)
    m = answer(at)
    assert m is not None, [s.value for s in at.subheader]
    gap = at.number_input(key="pl_gap").value
    conf = float(at.selectbox(key="pl_conf").value)
    power = float(at.select_slider(key="pl_power").value)
    assert float(m["gap"]) == pytest.approx(gap)
    assert float(m["conf"]) == pytest.approx(100 * conf)
    assert float(m["power"]) == pytest.approx(100 * power)
    need = required_n(conf, power, var, gap, deff)
    assert int(m["n"].replace(",", "")) == need
    fields = sheet_fields(at)
    alpha_text, level = fields["Significance level alpha (two-sided)"].split(" ", 1)
    assert float(alpha_text) == pytest.approx(1 - conf)
    assert level == f"({100 * conf:.4g}% confidence)" == f"({m['conf']}% confidence)"
    power_text, percent = fields["Power"].split(" ", 1)
    assert float(power_text) == pytest.approx(power) and percent == f"({m['power']}%)"
    assert float(fields["Design effect (clustering)"]) == pytest.approx(deff, rel=1e-3)
    assert fields["Items n"] == f"{need:,}"
    return m


def test_opens_on_the_answer_sentence():
    at = page("planner").run()
    no_exception(at)
    assert plain(at.subheader[0].value) == (
        "To detect a 2-point gap between two models at 95% confidence and 80% power, you need "
        "about 3,925 items (assuming they disagree on 20% of items).")
    check_answer(at, var=0.2)
    # what n items detect: MDE = (z_{1-a/2} + z_pow) sqrt(0.2 / n) at n = 500
    zsum = norm.ppf(0.975) + norm.ppf(0.8)
    mde = 100 * zsum * math.sqrt(0.2 / 500)
    assert any(f"With 500 items, the smallest gap detectable at 95% confidence with 80% power "
               f"is {mde:.2f} points." == t for t in texts(at.markdown))
    curve = next(f for f in charts(at) if "Smallest detectable gap" in f["layout"]["title"]["text"])
    xs, ys = curve["data"][0]["x"], curve["data"][0]["y"]
    assert ys[xs.index(1000)] == pytest.approx(100 * zsum * math.sqrt(0.2 / 1000))
    # one score at n = 500, p = 0.7: Wilson half-width = half the statsmodels Wilson interval
    low, high = proportion_confint(350, 500, alpha=0.05, method="wilson")
    assert metric(at, "Wilson score interval, 95%, n = 500") == \
        f"± {100 * (high - low) / 2:.2f} points"
    assert metric(at, "Normal-approximation interval, 95%, n = 500") == \
        f"± {100 * norm.ppf(0.975) * math.sqrt(0.21 / 500):.2f} points"


def test_no_developer_words_or_raw_values_on_the_page():
    at = page("planner").run()
    shown = " ".join(texts(at.caption) + texts(at.markdown) + texts(at.subheader)
                     + [m.label for m in at.metric] + [m.value for m in at.metric])
    for word in ("evalcore", "METHODS", "None", "nan", "sd_d", " pp", "MDE", "Closed forms"):
        assert word not in shown, word


def test_url_round_trip_and_an_old_alpha_link():
    at = page("planner")
    at.query_params.update({"n": "2000", "p": "0.5", "spread": "sd", "sd": "0.3",
                            "alpha": "0.01", "power": "0.9", "gap": "1.5", "deff": "2.0"})
    at.run()
    assert at.selectbox(key="pl_conf").value == "0.99"          # ?alpha=0.01 -> 99%
    m = check_answer(at, var=0.09, deff=2.0)
    assert m["why"] == ("assuming per-item score differences with an SD of 0.3; design effect "
                        "2.00 for clustered items")
    assert "alpha" not in at.query_params
    at.number_input(key="pl_gap").set_value(3.0).run()
    assert at.query_params["gap"] in ("3.0", ["3.0"])
    check_answer(at, var=0.09, deff=2.0)


def test_answers_per_item_and_their_noise_share():
    at = page("planner")
    at.query_params.update({"dis": "0.3", "k": "4", "wshare": "0.5"})
    at.run()
    m = check_answer(at, var=0.3 * 0.5 + 0.3 * 0.5 / 4)
    assert "mean of 4 answers, 50% of the variance being answer-to-answer noise" in m["why"]


def test_preregistration_sheet_contents():
    at = page("planner").run()
    key = next(w.key for w in at.text_input if w.label == "Planned comparison")
    at.text_input(key=key).set_value("<b>new</b> vs old | arc").run()
    sheet = next(c.value for c in at.code if c.value.startswith("# Pre-registration"))
    assert "| Items n | 3,925 |" in sheet and "Minimum detectable effect" in sheet
    assert "<b>" not in sheet                               # user text escaped
    assert any(b.label.startswith("Download pre-registration") for b in at.download_button)


# ---- store mode ---------------------------------------------------------------------------
def other_task_runs() -> list:
    """delta and epsilon on task "other" only (40 items; delta right on 0-19, epsilon on
    10-29: they differ on 20 items, 10 each way); no task shared with alpha/beta/gamma."""
    d = np.zeros(40)
    d[:20] = 1
    e = np.zeros(40)
    e[10:30] = 1
    return [parsed_run("delta", {("other", "acc"): d}), parsed_run("epsilon", {("other", "acc"): e})]


@pytest.fixture
def pair_store(tmp_path) -> Store:
    store = Store(store_file(tmp_path))
    store.ingest(toy_runs() + other_task_runs())
    return store


def var_other() -> float:
    d = np.r_[np.ones(10), -np.ones(10), np.zeros(20)]      # epsilon - delta
    return float(np.var(d, ddof=1))


def mc_pilot() -> tuple[float, float]:
    """beta - alpha on mc: 10 items +1 (all in cluster c6), 90 items 0, clusters of 10.
    Returns (var(d, ddof=1), design effect) with the clustered SE of docs/methods.md:
    SE_c^2 = G/(G-1) n^-2 sum_g (sum_{i in g} (d_i - mean))^2 over SE_iid^2 = var/n."""
    d = np.zeros(100)
    d[60:70] = 1
    var = float(np.var(d, ddof=1))
    sums = np.array([np.sum(d[g * 10:(g + 1) * 10] - d.mean()) for g in range(10)])
    se_c2 = 10 / 9 * np.sum(sums ** 2) / 100 ** 2
    return var, float(se_c2 / (var / 100))


def test_a_pair_without_a_shared_task_in_between_changes_no_control(pair_store):
    """Store mode; gap 3, 99%, power 90%; Run A becomes a run that shares no task with Run B
    (a message, no answer, the controls as they were); then Run B becomes a run that shares
    one; then "+" on the gap: every step shows what it computes."""
    at = page("planner")
    at.query_params.update({"src": "store", "plan_a": "alpha", "plan_b": "beta",
                            "plan_task": "mc"})
    at.run()
    var_mc, deff_mc = mc_pilot()
    check_answer(at, var=var_mc, deff=deff_mc)
    at.number_input(key="pl_gap").set_value(3.0).run()
    at.selectbox(key="pl_conf").set_value("0.99").run()
    at.select_slider(key="pl_power").set_value("0.9").run()
    check_answer(at, var=var_mc, deff=deff_mc)

    at.selectbox(key="pl_a").set_value("delta").run()
    no_exception(at)
    assert any("share no task" in t for t in texts(at.info))
    assert answer(at) is None and not any("With " in t for t in texts(at.markdown))
    check_shown_equals_value(at)
    assert (at.number_input(key="pl_gap").value, at.selectbox(key="pl_conf").value,
            at.select_slider(key="pl_power").value) == (3.0, "0.99", "0.9")

    at.selectbox(key="pl_b").set_value("epsilon").run()
    m = check_answer(at, var=var_other())
    assert (m["gap"], m["conf"], m["power"]) == ("3", "99", "90")
    assert "the two runs disagree on 50% of 40 shared items of other" in m["why"]

    at.number_input(key="pl_gap").increment().run()
    m = check_answer(at, var=var_other())
    assert (m["gap"], m["conf"], m["power"]) == ("3.1", "99", "90")


def test_store_mode_takes_the_pilot_estimate_and_typed_mode_keeps_the_typed_value(pair_store):
    at = page("planner")
    at.query_params.update({"dis": "0.2"})
    at.run()
    assert check_answer(at, var=0.2)["why"] == "assuming they disagree on 20% of items"

    at.radio(key="pl_src").set_value("store").run()
    at.selectbox(key="pl_a").set_value("alpha").run()
    at.selectbox(key="pl_b").set_value("beta").run()
    at.selectbox(key="pl_task").set_value("mc").run()
    var_mc, deff_mc = mc_pilot()
    m = check_answer(at, var=var_mc, deff=deff_mc)
    assert m["why"].startswith(f"using the pilot's SD of per-item differences, "
                               f"{math.sqrt(var_mc):.4g}")
    assert "20%" not in m["why"]
    assert not [w for w in at.number_input if w.key in ("pl_dis", "pl_sd", "pl_deff")]
    assert any(t.startswith("From the pilot: SD of per-item differences "
                            f"{math.sqrt(var_mc):.4f}; design effect {deff_mc:.2f}")
               for t in texts(at.caption))
    assert sheet_fields(at)["Assumed spread"].startswith(
        f"SD of per-item differences {math.sqrt(var_mc):.4g}")

    at.radio(key="pl_src").set_value("typed").run()
    assert at.number_input(key="pl_dis").value == pytest.approx(0.2)
    assert check_answer(at, var=0.2)["why"] == "assuming they disagree on 20% of items"


def test_a_pilot_whose_runs_never_differ_plans_with_the_upper_bound(tmp_path):
    """Identical runs on 30 items: the exact 95% upper bound of the disagreement rate,
    1 - 0.05^(1/30) (Clopper-Pearson with 0 of 30), not 0."""
    store = Store(store_file(tmp_path))
    x = np.r_[np.ones(20), np.zeros(10)]
    store.ingest([parsed_run("same1", {("t", "acc"): x}), parsed_run("same2", {("t", "acc"): x})])
    at = page("planner")
    at.query_params.update({"src": "store"})
    at.run()
    upper = 1 - 0.05 ** (1 / 30)
    m = check_answer(at, var=upper)
    assert m["why"].startswith(f"assuming they disagree on at most {100 * upper:.4g}% of items")
    assert any("never differ" in t for t in texts(at.warning))


def test_store_mode_on_an_empty_store_is_a_message_and_no_answer():
    at = page("planner")
    at.query_params["src"] = "store"
    at.run()
    no_exception(at)
    assert any("The store is empty" in t for t in texts(at.info))
    assert answer(at) is None
    check_shown_equals_value(at)


def test_settings_that_are_not_one_keep_their_expander_open():
    at = page("planner").run()
    assert not at.expander[0].proto.expanded
    at = page("planner")
    at.query_params.update({"k": "3"})
    at.run()
    assert at.expander[0].proto.expanded
