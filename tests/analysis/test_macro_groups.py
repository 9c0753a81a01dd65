"""The macro average and its tier count a task group once (MMLU's subjects are one unit,
the mean of its tasks, beside each ungrouped task), in ``analysis.leaderboard``."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore import analysis
from evalcore import stats as st
from evalcore.analysis._common import AVERAGE_TASK
from evalcore.analysis.groups import average_weights
from tests.analysis_helpers import make_run, make_store

SUBJECTS = ("mmlu_anatomy", "mmlu_astronomy", "mmlu_virology")   # the "mmlu_" family


def test_average_weights_give_each_unit_weight_one():
    groups = {"mmlu": list(SUBJECTS)}
    w = average_weights(["arc", *SUBJECTS, "piqa"], groups)
    assert w == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3, 1.0])
    assert average_weights(["arc", "piqa"], {}) == [1.0, 1.0]
    # a group with one task present is a unit of one
    assert average_weights(["arc", "mmlu_virology"], groups) == [1.0, 1.0]


def test_weighted_macro_aggregate_formula_and_equal_weights():
    s, e, w = np.array([0.5, 0.7, 0.9]), np.array([0.02, 0.03, 0.04]), np.array([0.5, 0.5, 1.0])
    agg = st.aggregate_tasks(s, e, weights=w)
    assert agg.estimate == pytest.approx((0.25 + 0.35 + 0.9) / 2.0)
    assert agg.se == pytest.approx(np.sqrt((0.5 * 0.02) ** 2 + (0.5 * 0.03) ** 2 + 0.04 ** 2) / 2)
    plain = st.aggregate_tasks(s, e)
    same = st.aggregate_tasks(s, e, weights=[2.0, 2.0, 2.0])
    assert (same.estimate, same.se) == pytest.approx((plain.estimate, plain.se))
    with pytest.raises(st.StatsInputError):
        st.aggregate_tasks(s, e, weights=[1.0, 0.0, 1.0])
    with pytest.raises(st.StatsInputError):
        st.aggregate_tasks(s, e, weights=[1.0, 1.0])
    with pytest.raises(st.StatsInputError):
        st.aggregate_tasks(s, e, ns=[10, 10, 10], kind="micro", weights=[1.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    rng = np.random.default_rng(11)
    runs = []
    for r, p in enumerate((0.55, 0.62, 0.70)):
        scores = {(t, "acc"): (rng.random(150) < p - 0.1 * (t == "mmlu_virology")).astype(float)
                  for t in SUBJECTS}
        scores[("arc_easy", "acc")] = (rng.random(200) < p).astype(float)
        runs.append(make_run(f"m{r}", scores))
    store = make_store(runs, tmp_path_factory.mktemp("groups"))
    yield store, analysis.leaderboard(store, include_ranks=False)
    close = getattr(store, "close", None)
    if close:
        close()


def test_the_macro_average_is_the_mean_over_units(board):
    _, lb = board
    assert lb.groups == {"mmlu": list(SUBJECTS)}
    cells = lb.cells.set_index(["run", "task"])
    for row in lb.averages.itertuples():
        mmlu = [cells.loc[(row.run, t)] for t in SUBJECTS]
        arc = cells.loc[(row.run, "arc_easy")]
        want = (np.mean([c["score"] for c in mmlu]) + arc["score"]) / 2
        want_se = np.sqrt(sum((c["se"] / 3) ** 2 for c in mmlu) + arc["se"] ** 2) / 2
        assert row.score == pytest.approx(want, rel=1e-12)
        assert row.se == pytest.approx(want_se, rel=1e-12)
        assert row.n_tasks == 4
    assert any("mmlu: 3 tasks" in n for n in lb.notes)


def test_the_average_tier_uses_the_same_weights(board):
    _, lb = board
    avg = lb.tiers[lb.tiers["task"] == AVERAGE_TASK].set_index("run")
    best = str(avg["best_run"].iloc[0])
    assert best == lb.averages["run"].iloc[0]
    per_task = lb.tiers[lb.tiers["task"] != AVERAGE_TASK]
    for run in avg.index:
        if run == best:
            continue
        # the per-task differences against the best average's run: every task's best run
        # here is that run too (the abilities are ordered), so diff_vs_best is that difference
        d = per_task[per_task["run"] == run].set_index("task")["diff_vs_best"]
        assert set(per_task["best_run"]) == {best}
        want = (np.mean([d[t] for t in SUBJECTS]) + d["arc_easy"]) / 2
        assert avg.loc[run, "diff_vs_best"] == pytest.approx(want, rel=1e-12)


def test_the_compare_macro_average_counts_the_group_once(board):
    store, _ = board
    cmp = analysis.compare(store, "m0", "m2")
    assert cmp.groups == {"mmlu": list(SUBJECTS)}
    d = cmp.per_task.set_index("task")
    want = (np.mean([d.loc[t, "diff"] for t in SUBJECTS]) + d.loc["arc_easy", "diff"]) / 2
    assert cmp.overall["diff"] == pytest.approx(want, rel=1e-12)
    z = st.z_value(0.95)
    se_t = np.fmax(d["se"], (d["high"] - d["low"]) / (2 * z))
    w = {t: (1 / 3 if t in SUBJECTS else 1.0) for t in d.index}
    want_se = np.sqrt(sum((w[t] * se_t[t]) ** 2 for t in d.index)) / 2
    assert cmp.overall["se"] == pytest.approx(want_se, rel=1e-12)
    assert "mmlu: 3 tasks" in cmp.overall["method_reason"]
