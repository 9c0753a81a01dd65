"""Leaderboard tiers from items x runs matrices (evalcore/analysis/tiers.py) against the SQL
path they replaced: ``reference_moments`` (paired sums joined on item keys in SQL, kept as a
test oracle in tests/sql_reference.py) on a
real store with missing items, several answers per item, a lower-is-better metric and
continuous scores; and rank intervals through the page's second call."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from evalcore import analysis
from evalcore import stats as st
from evalcore.analysis._common import AVERAGE_TASK
from tests import sql_reference
from tests.analysis_helpers import make_run, make_store, real_store_available

pytestmark = pytest.mark.skipif(not real_store_available(), reason="needs the real store")


def _runs() -> list:
    rng = np.random.default_rng(7)
    out = []
    for r in range(5):
        p = 0.45 + 0.08 * r
        acc = (rng.random(120) < p).astype(float)
        # K = 3 answers per item, some missing: item means are fractions
        rep = (rng.random((90, 3)) < p).astype(float)
        rep[rng.random((90, 3)) < 0.1] = np.nan
        rep[rep.shape[0] - 1, :] = 1.0
        ppl = rng.gamma(4.0, 2.0 + 0.3 * r, size=80)          # lower is better
        cont = np.clip(rng.normal(0.5 + 0.03 * r, 0.2, size=100), 0, 1)
        scores = {("mc", "acc"): acc, ("rep", "acc"): rep, ("lm", "word_perplexity"): ppl,
                  ("cont", "f1"): cont}
        if r == 3:      # a run missing a third of the mc items and half of cont's
            scores[("mc", "acc")] = {str(i): acc[i] for i in range(120) if i % 3}
            scores[("cont", "f1")] = {str(i): cont[i] for i in range(0, 100, 2)}
        out.append(make_run(f"m{r}", scores))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = make_store(_runs(), tmp_path_factory.mktemp("tiers"), kind="real")
    yield s
    s.close()


def _expected(store, lb, task: str, ref_name: str) -> dict[str, tuple[float, float, int]]:
    """run -> (diff vs ref, raw p, n shared) from the SQL reference_moments (the old path)
    and scipy's tests (``_reference_p``)."""
    names = dict(zip(store.runs()["name"], store.runs()["run_id"].astype(int)))
    ids = {int(r): n for n, r in names.items()}
    metric = lb.metrics_by_task[task]
    binary = bool(lb.cells.loc[lb.cells["task"] == task, "binary"].all())
    mom = sql_reference.reference_moments(store, [(task, metric, names[ref_name])])
    out = {}
    for row in mom.itertuples():
        n = float(row.n)
        diff = row.sum_d / n
        se = float(st.mean_se_from_moments(n, row.sum_d, row.sum_d2))
        out[ids[int(row.run_id)]] = (diff, _reference_p(binary, n, diff, se, row.b, row.c)
                                     if n >= 2 else np.nan, int(n))
    return out


def _reference_p(binary: bool, n: float, diff: float, se: float, b: float, c: float) -> float:
    """The p-value a ``compare`` row of the two runs shows, from scipy: for 0/1 scores the
    larger of the uncorrected McNemar chi-square p (Tango's score test at 0; the boards here
    have fewer than 200 items, so no Wald routing) and the exact binomial p; else t with
    n - 1 df below 30 items, z above."""
    if binary:
        if b + c == 0:
            return 1.0
        score = float(scipy_stats.chi2.sf((b - c) ** 2 / (b + c), 1))
        exact = float(scipy_stats.binomtest(int(b), int(b + c), 0.5).pvalue)
        return max(score, exact)
    if se == 0:         # the reference against itself (no other run here has constant d)
        return 1.0 if diff == 0 else float("nan")
    if n < 30:
        return float(2 * scipy_stats.t.sf(abs(diff / se), n - 1))
    return float(2 * scipy_stats.norm.sf(abs(diff / se)))


def test_tiers_from_matrices_equal_the_sql_moments(store):
    lb = analysis.leaderboard(store, include_ranks=False)
    tiers = lb.tiers
    assert set(tiers["task"]) == {"mc", "rep", "lm", "cont", AVERAGE_TASK}
    assert lb.metric_info["lm"].direction == "lower"
    assert not lb.cells.loc[lb.cells["task"] == "rep", "binary"].any()   # fractions
    assert lb.cells.loc[lb.cells["task"] == "mc", "binary"].all()
    for task in ("mc", "rep", "lm", "cont"):
        t = tiers[tiers["task"] == task].set_index("run")
        best = str(t["best_run"].iloc[0])
        exp = _expected(store, lb, task, best)
        assert set(exp) == set(t.index)
        for run, (diff, p, n) in exp.items():
            assert t.loc[run, "n_shared"] == n
            if run == best:
                assert t.loc[run, "diff_vs_best"] == 0.0 and np.isnan(t.loc[run, "p_raw"])
                continue
            assert t.loc[run, "diff_vs_best"] == pytest.approx(diff, rel=1e-12, abs=1e-12)
            assert t.loc[run, "p_raw"] == pytest.approx(p, rel=1e-9, abs=1e-12)
    # the lower-is-better task's best run has the lowest mean
    lm = lb.cells[lb.cells["task"] == "lm"]
    assert tiers.loc[tiers["task"] == "lm", "best_run"].iloc[0] == \
        lm.loc[lm["score"].idxmin(), "run"]
    # missing items: m3 shares only 80 of mc's 120 items with the best run
    mc = tiers[tiers["task"] == "mc"].set_index("run")
    assert mc.loc["m3", "n_shared"] == 80 or mc.loc["m3", "best_run"] == "m3"


def test_average_tier_uses_the_per_task_differences_against_the_best_average(store):
    lb = analysis.leaderboard(store, include_ranks=False)
    avg = lb.tiers[lb.tiers["task"] == AVERAGE_TASK].set_index("run")
    ref = str(avg["best_run"].iloc[0])
    averaged = [t for t, i in lb.metric_info.items() if i.averageable]
    assert sorted(averaged) == ["cont", "mc", "rep"]
    for run in avg.index:
        if run == ref:
            continue
        dd, ses = [], []
        for task in averaged:
            exp = _expected(store, lb, task, ref)
            metric = lb.metrics_by_task[task]
            names = dict(zip(store.runs()["name"], store.runs()["run_id"].astype(int)))
            mom = sql_reference.reference_moments(store, [(task, metric, names[ref])]).set_index("run_id")
            row = mom.loc[names[run]]
            dd.append(exp[run][0])
            ses.append(float(st.mean_se_from_moments(row.n, row.sum_d, row.sum_d2)))
        agg = st.aggregate_tasks(np.array(dd), np.array(ses))
        assert avg.loc[run, "diff_vs_best"] == pytest.approx(agg.estimate, rel=1e-12)
        assert avg.loc[run, "p_raw"] == pytest.approx(
            st.normal_p_value(agg.estimate, agg.se)[0], rel=1e-9, abs=1e-12)


def test_one_task_board_with_ranks_gives_the_all_task_tiers(store):
    """The tiers of a task do not depend on whether its matrix was pulled for the rank
    intervals or for the tiers alone, nor on the other tasks on the board."""
    full = analysis.leaderboard(store, include_ranks=False).tiers
    for task in ("mc", "rep", "lm", "cont"):
        one = analysis.leaderboard(store, task=task, rank_tasks=[task])
        a = full[full["task"] == task].reset_index(drop=True)
        b = one.tiers[one.tiers["task"] == task].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
        assert set(one.ranks["task"]) == {task}


def test_rank_intervals_equal_the_board_ranks_and_the_stats_function(store):
    lb = analysis.leaderboard(store, rank_tasks=["mc"])
    cells = lb.cells[(lb.cells["task"] == "mc") & lb.cells["has_items"].astype(bool)]
    r = analysis.rank_intervals(store, "mc", lb.metrics_by_task["mc"],
                                tuple(int(x) for x in cells["run_id"]))
    pd.testing.assert_frame_equal(r.reset_index(drop=True),
                                  lb.ranks[lb.ranks["task"] == "mc"].reset_index(drop=True))
    # the items every run has (m3 lacks a third), in the matrix's item order
    mats = analysis.tiers._item_matrices(store, {"mc": "acc"},
                                         {"mc": [int(x) for x in cells["run_id"]]})
    cols, x = mats["mc"]
    complete = np.all(np.isfinite(x), axis=1)
    assert complete.sum() == 80
    ref = st.paired_bootstrap_ranks(x[complete])
    assert list(r["rank_low"]) == list(ref.rank_low)
    assert list(r["rank_high"]) == list(ref.rank_high)
    lower = analysis.rank_intervals(store, "lm", "word_perplexity", ("m0", "m4"),
                                    lower_is_better=True)
    means = lb.cells[lb.cells["task"] == "lm"].set_index("run")["score"]
    best = "m0" if means["m0"] < means["m4"] else "m4"
    assert lower.set_index("run").loc[best, "rank"] == 1


def test_item_mean_bounds_of_a_pulled_matrix_equal_the_sql_aggregate(store):
    from evalcore.analysis.tiers import item_mean_bounds, pull_matrices
    ids = [int(r) for r in store.runs()["run_id"]]
    for task, metric in (("cont", "f1"), ("rep", "acc"), ("lm", "word_perplexity")):
        (have, x), = pull_matrices(store, {task: ids}, {task: metric}).values()
        assert item_mean_bounds(have, x) == pytest.approx(
            store.item_mean_bounds(ids, task, metric))

