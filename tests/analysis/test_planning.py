"""analysis.paired_plan: items needed and the smallest detectable gap against scipy's normal
quantiles, the pilot rules (its SD, the upper bound when its runs never differ, a design effect
of at least 1) and the sentences the page, the CLI and the report share."""

from __future__ import annotations

import math

import pytest
from scipy.stats import beta, norm

from evalcore import analysis as an
from evalcore.analysis.planning import percent, points
from evalcore.errors import EvalbarsError


def z_sum(alpha: float, power: float) -> float:
    return norm.ppf(1 - alpha / 2) + norm.ppf(power)


def pilot(sd: float, disagreement: float, n: int = 200, deff: float | None = None,
          upper: float = float("nan")) -> an.PlanFromPair:
    return an.PlanFromPair(run_a="a", run_b="b", task="arc", metric="acc", n=n, sd_diff=sd,
                           disagreement=disagreement, diff=0.01, design_effect=deff,
                           disagreement_upper=upper)


def test_the_sentence_of_the_default_question():
    plan = an.paired_plan(gap=0.02, disagreement=0.2)
    assert plan.required_n == math.ceil(z_sum(0.05, 0.8) ** 2 * 0.2 / 0.02 ** 2) == 3925
    assert plan.items_sentence() == (
        "To detect a 2-point gap between two models at 95% confidence and 80% power, you need "
        "about 3,925 items (assuming they disagree on 20% of items).")
    mde = z_sum(0.05, 0.8) * math.sqrt(0.2 / 500)
    assert plan.mde_at(500) == pytest.approx(mde)
    assert plan.mde_sentence(500) == (f"With 500 items, the smallest gap detectable at 95% "
                                      f"confidence with 80% power is {100 * mde:.2f} points.")


def test_typed_sd_design_effect_and_answers_per_item():
    """K = 4 answers with half the variance answer-to-answer: sd^2 = v/2 + v/2/4."""
    plan = an.paired_plan(gap=0.015, sd_diff=0.3, alpha=0.01, power=0.9, design_effect=2.0,
                          answers_per_item=4, within_share=0.5)
    var = 0.09 * 0.5 + 0.09 * 0.5 / 4
    assert plan.spread_kwargs()["sd_diff"] == pytest.approx(math.sqrt(var))
    assert plan.required_n == math.ceil(z_sum(0.01, 0.9) ** 2 * var * 2.0 / 0.015 ** 2)
    text = plan.items_sentence()
    assert text.startswith("To detect a 1.5-point gap between two models at 99% confidence and "
                           "90% power")
    assert ("(assuming per-item score differences with an SD of 0.3; design effect 2.00 for "
            "clustered items; each item scored as the mean of 4 answers, 50% of the variance "
            "being answer-to-answer noise)") in text


def test_a_pilot_gives_its_sd_and_a_design_effect_of_at_least_one():
    plan = an.paired_plan(gap=0.05, pilot=pilot(0.4482, 0.2, deff=0.7))
    assert (plan.spread, plan.spread_value, plan.source) == ("sd", 0.4482, "pilot")
    assert plan.design_effect == 1.0                   # 0.7 from a pilot is not planned with
    assert plan.required_n == math.ceil(z_sum(0.05, 0.8) ** 2 * 0.4482 ** 2 / 0.05 ** 2)
    assert "using the pilot's SD of per-item differences, 0.4482: the two runs disagree on " \
           "20% of 200 shared items of arc" in plan.items_sentence()
    clustered = an.paired_plan(gap=0.05, pilot=pilot(0.4482, 0.2, deff=2.5))
    assert clustered.design_effect == 2.5
    typed = an.paired_plan(gap=0.05, pilot=pilot(0.4482, 0.2, deff=2.5), disagreement=0.3,
                           design_effect=1.2)
    assert (typed.spread, typed.spread_value, typed.design_effect) == ("disagreement", 0.3, 1.2)


def test_a_pilot_that_never_differs_plans_with_the_exact_upper_bound():
    """0 of 200 discordant: Clopper-Pearson's one-sided 95% bound, Beta(0.95; 1, 200)."""
    upper = float(beta.ppf(0.95, 1, 200))
    plan = an.paired_plan(gap=0.02, pilot=pilot(0.0, 0.0, upper=upper))
    assert (plan.spread, plan.source) == ("disagreement", "pilot bound")
    assert plan.spread_value == pytest.approx(upper)
    assert plan.required_n == math.ceil(z_sum(0.05, 0.8) ** 2 * upper / 0.02 ** 2)
    assert f"at most {percent(upper)} of items" in plan.items_sentence()


def test_formats_and_bad_inputs():
    assert (percent(0.2), percent(0.975), percent(0.18333)) == ("20%", "97.5%", "18.33%")
    assert (points(0.02), points(0.015), points(0.001)) == ("2", "1.5", "0.1")
    with pytest.raises(EvalbarsError):
        an.paired_plan(gap=0.02)                          # no spread
    with pytest.raises(EvalbarsError):
        an.paired_plan(gap=0.02, sd_diff=0.3, disagreement=0.2)
    with pytest.raises(EvalbarsError):
        an.paired_plan(gap=0.02, disagreement=0.2, answers_per_item=0)
    with pytest.raises(EvalbarsError):
        an.paired_plan(gap=0.02, disagreement=0.2, within_share=1.0)
    with pytest.raises(EvalbarsError):
        an.paired_plan(disagreement=0.2).items_sentence()  # no gap asked
