"""The Method check for LLM judges: the count-based PPI++ bounds equal ppi_mean on the same
simulated items, PPI++ covers the human score under a biased judge, the judge-only interval
does not, and PPI++ is narrower than the human labels alone."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.stats import ppi_coverage as pc
from evalcore.stats import StatsInputError, ppi_mean, wilson_interval
from tests.pages.conftest import _isolated, no_exception, page  # noqa: F401


@pytest.mark.parametrize("tuned", [True, False])
def test_count_formulas_equal_ppi_mean(tuned):
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, big_n = int(rng.integers(10, 200)), int(rng.integers(10, 500))
        y = (rng.random(n) < 0.6).astype(float)
        f = np.where(rng.random(n) < 0.8, y, 1 - y)
        g = (rng.random(big_n) < 0.65).astype(float)
        a, b, c = [np.array([float(np.sum((y == i) & (f == j)))]) for i, j in
                   ((1, 1), (1, 0), (0, 1))]
        lo, hi = pc._ppi_bounds(a, b, c, np.array([g.sum()]), n, big_n, 1.959963984540054,
                                tuned)
        ref = ppi_mean(y, f, g, 0.95, lam=None if tuned else 1.0)
        assert (lo[0], hi[0]) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_judge_only_bound_is_the_products_wilson():
    lo, hi = pc.ia.modified_wilson_bounds(np.array([37.0]), 50, 1.959963984540054, 0.05)
    ref = wilson_interval(37, 50, 0.95)
    assert (lo[0], hi[0]) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_biased_judge_ppi_covers_judge_only_fails():
    rep = pc.ppi_coverage(200, 2000, 0.6, false_pass=0.3, false_fail=0.05, seed=1,
                          replicates=20_000)
    ppi, judge, human = rep.method("ppi"), rep.method("judge-only"), rep.method("human-only")
    assert rep.default is ppi
    assert abs(ppi.coverage - 0.95) < 0.015          # nominal within the product's tolerance
    assert judge.coverage < 0.5                      # centred on the judge's 9-point bias
    assert abs(human.coverage - 0.95) < 0.02
    assert ppi.mean_width < human.mean_width         # the width gain of using the judge
    assert "+9.00 points" in " ".join(rep.notes)


def test_unbiased_judge_all_cover():
    """At p = 0.5 exactly (no neighbourhood) symmetric errors leave the judge unbiased; over
    p's neighbourhood [0.4, 0.6] its bias 0.1 - 0.2 p reaches 2 points and it undercovers."""
    rep = pc.ppi_coverage(100, 1000, 0.5, false_pass=0.1, false_fail=0.1, seed=2,
                          replicates=20_000, neighbourhood=0.0)
    assert rep.method("judge-only").coverage > 0.93   # bias 0 at p = 0.5
    assert abs(rep.method("ppi").coverage - 0.95) < 0.02


@pytest.mark.parametrize("kwargs", [dict(n_labelled=1), dict(n_labelled=999),
                                    dict(false_pass=1.0), dict(p=0.0), dict(n_items=3)])
def test_bad_designs(kwargs):
    args = dict(n_labelled=100, n_items=1000, p=0.6, false_pass=0.2)
    args.update(kwargs)
    with pytest.raises(StatsInputError):
        pc.ppi_coverage(**args)


def test_method_check_page_judge_design(_isolated):
    """The Method check's judge design shows PPI++'s coverage next to the judge-only
    interval's, the numbers of ppi_coverage."""
    at = page("method_check")
    for k, v in {"design": "judge", "n": "150", "items": "1500", "p": "0.6", "fpass": "0.3",
                 "ffail": "0.05"}.items():
        at.query_params[k] = v
    at.run()
    no_exception(at)
    ref = pc.ppi_coverage(150, 1500, 0.6, 0.3, 0.05, 0.95, seed=0)
    table = next(d.value for d in at.dataframe if "Coverage, average (%)" in d.value.columns)
    assert list(table["Method"]) == [m.label for m in ref.methods]
    for m in ref.methods:
        row = table[table["Method"] == m.label].iloc[0]
        assert float(row["Coverage, average (%)"]) == pytest.approx(100 * m.coverage, abs=0.01)
        assert float(row["Mean width (pp)"]) == pytest.approx(100 * m.mean_width, abs=0.01)
    assert table[table["Default"] == "yes"]["Method"].tolist() == ["PPI++ (power-tuned)"]
    judge = table[table["Method"].str.startswith("Judge only")].iloc[0]
    assert judge["Verdict"] == "undercovers"
