"""Planning human labels for PPI++: the sentence's numbers against the closed form with
scipy's quantiles, and the binary agreement inputs against a 2x2 table."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from evalcore import analysis as an
from evalcore.errors import AnalysisError
from evalcore.stats import ppi_variance
from tests.pages.conftest import _isolated, no_exception, page, plain  # noqa: F401


def _closed_form_n(se: float, total: int, var_y: float, rho: float) -> float:
    return var_y * (1 - rho ** 2) / (se ** 2 - rho ** 2 * var_y / total)


def test_half_width_plan_numeric():
    plan = an.judge_labels_plan(n_items=5000, target="half-width", value=0.02,
                                confidence=0.95, sd_human=0.5, sd_judge=0.45,
                                correlation=0.7)
    se = 0.02 / norm.ppf(0.975)
    n = plan.needed.n_labels
    assert n in (math.ceil(_closed_form_n(se, 5000, 0.25, 0.7)),
                 math.ceil(_closed_form_n(se, 5000, 0.25, 0.7)) + 1)
    cov = 0.7 * 0.5 * 0.45
    assert ppi_variance(n, 5000 - n, 0.25, 0.45 ** 2, cov)[0] <= se ** 2
    assert plan.needed.n_human_only == math.ceil(0.25 / se ** 2)
    assert f"about {n:,} human labels with PPI++" in plan.sentence()
    assert "±0.02-unit interval at 95% confidence" in plan.sentence()


def test_gap_plan_uses_power():
    plan = an.judge_labels_plan(n_items=3000, target="gap", value=0.05, confidence=0.95,
                                power=0.8, p_human=0.6, p_judge=0.65, agreement=0.85)
    se = 0.05 / (norm.ppf(0.975) + norm.ppf(0.8))
    assert plan.needed.target_se == pytest.approx(se)
    assert "80% power" in plan.sentence() and "5-point gap" in plan.sentence()
    # a 2x2 table with these margins and agreement: P(both right) = (0.85 - 1 + 1.25)/2
    both = 0.55
    assert plan.correlation == pytest.approx((both - 0.6 * 0.65)
                                             / math.sqrt(0.24 * 0.65 * 0.35))


def test_unreachable_says_what_is_reachable():
    plan = an.judge_labels_plan(n_items=2000, target="half-width", value=0.02,
                                p_human=0.6, p_judge=0.65, agreement=0.85)
    assert plan.needed.n_labels is None
    text = plan.sentence()
    assert "no number of human labels is enough" in text
    assert f"{100 * plan.best_value:.2f} points" in text and plan.best_value > 0.02


@pytest.mark.parametrize("kwargs", [dict(target="width", value=0.02),
                                    dict(target="gap", value=0.0),
                                    dict(target="gap", value=0.02, power=1.0)])
def test_bad_plan_inputs(kwargs):
    with pytest.raises(AnalysisError):
        an.judge_labels_plan(n_items=1000, p_human=0.5, p_judge=0.5, agreement=0.8, **kwargs)


def test_numeric_plan_speaks_in_label_units():
    plan = an.judge_labels_plan(n_items=5000, target="half-width", value=0.3,
                                sd_human=2.0, sd_judge=2.0, correlation=0.8)
    assert "±0.3-unit interval" in plan.sentence()
    assert not plan.binary


def test_planner_page_block(_isolated):
    """The Planner's labels block shows the analysis sentence for the controls' values."""
    at = page("planner")
    for k, v in {"jl_items": "5000", "jl_value": "2", "jl_ph": "0.6", "jl_pj": "0.65",
                 "jl_agree": "0.85"}.items():
        at.query_params[k] = v
    at.run()
    no_exception(at)
    want = an.judge_labels_plan(n_items=5000, target="half-width", value=0.02,
                                confidence=0.95, p_human=0.6, p_judge=0.65,
                                agreement=0.85).sentence()
    shown = [plain(m.value).strip("*") for m in at.markdown]
    assert want in shown
    at.radio(key="jl_target_w").set_value("gap").run()
    no_exception(at)
    gap = an.judge_labels_plan(n_items=5000, target="gap", value=0.02, confidence=0.95,
                               power=0.8, p_human=0.6, p_judge=0.65, agreement=0.85)
    assert gap.sentence() in [plain(m.value).strip("*") for m in at.markdown]
