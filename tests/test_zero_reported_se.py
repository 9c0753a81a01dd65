"""A harness-reported stderr of 0 at a score of 0 or 1 (every item right: lm_eval's sample
SE is 0) never gives a zero-width interval or an exact-looking difference. Real files:
gemma-2b on afrihate_swa, 0-shot 0.99779 +- 0.00083 and 5-shot 1.0 +- 0.0 over 3,168 items
(tests/fixtures/wild/lm_eval/african_nlp, PROVENANCE.md there)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats as ss

from evalcore import analysis as an
from evalcore.analysis.verdicts import verdict_text
from evalcore.ingest import parse_paths
from evalcore.store import Store

D = Path(__file__).resolve().parent / "fixtures" / "wild" / "lm_eval" / "african_nlp"
ZERO_SHOT = D / "sw_afrihate_0shot_final_2026-01-29T12-37-35.981928.json"
FIVE_SHOT = D / "sw_afrihate_5shot_final_2026-01-29T12-42-53.207581.json"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    s = Store(tmp_path_factory.mktemp("zse") / "s")
    s.ingest(parse_paths([ZERO_SHOT, FIVE_SHOT]))
    return s


def test_leaderboard_gives_the_perfect_score_its_wilson_interval(store):
    lb = an.leaderboard(store, include_ranks=False)
    c = lb.cells.set_index("run")
    perfect = c.loc["google/gemma-2b (2)"]
    assert perfect["score"] == 1.0 and perfect["reported_stderr"] == 0.0
    # Wilson for 3168 of 3168 (statsmodels' proportion_confint, method "wilson")
    sm = pytest.importorskip("statsmodels.stats.proportion")
    low, high = sm.proportion_confint(3168, 3168, alpha=0.05, method="wilson")
    assert perfect["method"] == "wilson"
    assert perfect["low"] == pytest.approx(low, rel=1e-9) and perfect["high"] == 1.0
    assert perfect["low"] < 1.0
    other = c.loc["google/gemma-2b"]
    assert other["method"] == "reported"
    assert any("reported stderr of 0" in n for n in lb.notes)


def test_unpaired_compare_uses_agresti_caffo_for_the_zero_side(store):
    cmp = an.compare(store, "google/gemma-2b", "google/gemma-2b (2)")
    r = cmp.per_task.iloc[0]
    se_a = 0.0008343572870805355   # the 0-shot reported stderr, as in the file
    p_b = (3168 + 1) / (3168 + 2)
    se_b = math.sqrt(p_b * (1 - p_b) / 3170)
    assert r["se"] == pytest.approx(math.hypot(se_a, se_b), rel=1e-12)
    assert r["p_value"] > 0.01       # a zero SE gave p = 0.0081
    # Fisher's exact test on the implied counts: the same order of evidence
    fisher = ss.fisher_exact([[3161, 7], [3168, 0]]).pvalue
    assert 0.5 * fisher < r["p_value"] < 2 * fisher
    assert "Agresti and Caffo" in r["method_reason"]


def test_a_bound_that_is_not_zero_never_prints_as_zero():
    text = verdict_text(0.0022, 0.00046, 0.0040, 0.0025, scale=100.0, threshold=0.05,
                        p=0.013)
    assert text.startswith("different") and "CI 0.046 to 0.4" in text
