"""The clustered board's cells from code matrices (analysis/board_cells.py): a run of the
matrix that the board does not show is left out, and codes repeating one column (the
store's view when every run has the same labels) give the numbers of the whole matrix.
The clustered job hands its matrices to the board before its intervals (the board orders
its cells and computes rank intervals meanwhile): the tiers are those of the finished
board, from the clustered SEs' macro averages, and an error in the job reaches the caller
whether it comes before or after that hand-over."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from evalcore import analysis as an
from evalcore import stats as st
from evalcore.analysis import board_cells, board_intervals
from evalcore.analysis.board_cells import _clustered_of_matrices
from evalcore.analysis.tiers import tier_table
from evalcore.model import ItemMatrix
from tests.analysis_helpers import make_run, make_store



def test_clustered_of_matrices_with_one_code_column_and_a_run_left_out():
    rng = np.random.default_rng(3)
    m, runs = 120, [4, 7, 9]
    x = (rng.random((m, 3)) < 0.5).astype(float)
    col = rng.integers(0, 15, size=m)
    whole = np.repeat(col[:, None], 3, axis=1)
    view = np.broadcast_to(col[:, None], (m, 3))
    im = ItemMatrix("t", "acc", np.array(runs), np.arange(m), x, True)
    # the board shows runs 9 and 4 (rows 0, 1 of its cells), not 7
    run_ids = np.array([9, 4])
    rows_of = {"t": np.array([0, 1])}
    got = {}
    for codes, has in ((whole, np.ones((m, 3), bool)),
                       (view, np.broadcast_to(np.ones((1, 1), bool), (m, 3)))):
        res, owner, labelled = _clustered_of_matrices({("t", "acc"): (im, codes, has)},
                                                      [("t", "acc")], rows_of, run_ids, 2, 0.95)
        got[codes is view] = res
        assert owner.tolist() == [1, 0] and labelled.tolist() == [True, True]
    ref = st.clustered_intervals_of_matrices([(x[:, [0, 2]], whole[:, [0, 2]])], 0.95)
    for f in ("estimate", "low", "high", "se", "n", "n_clusters"):
        np.testing.assert_array_equal(getattr(got[True], f), getattr(ref, f))
        np.testing.assert_array_equal(getattr(got[False], f), getattr(ref, f))


def _board_runs() -> list:
    # five runs on two clustered 0/1 tasks, a continuous clustered task and a task without
    # cluster labels (CLT there)
    rng = np.random.default_rng(11)
    clusters = [f"c{j // 5}" for j in range(60)]
    runs = []
    for i, p in enumerate([0.35, 0.5, 0.55, 0.7, 0.72]):
        runs.append(make_run(f"m{i}", {
            ("a", "acc"): (rng.random(60) < p).astype(float),
            ("b", "acc"): (rng.random(60) < p).astype(float),
            ("c", "f1"): np.clip(rng.normal(p, 0.2, 60), 0, 1),
            ("d", "acc"): (rng.random(40) < p).astype(float)},
            clusters={"a": clusters, "b": clusters, "c": clusters}))
    return runs


@pytest.fixture(scope="module")
def board_store(tmp_path_factory):
    return make_store(_board_runs(), tmp_path_factory.mktemp("board_cells"), kind="real")


def _names(store) -> dict[int, str]:
    rt = store.runs()
    return {int(r): str(n) for r, n in zip(rt["run_id"], rt["name"])}


def _final_tiers(store, lb) -> pd.DataFrame:
    """The tiers of a finished board, computed from its own cells and averages."""
    return tier_table(store, lb.cells, lb.averages, lb.metrics_by_task, _names(store),
                  lb.confidence, None, lb.metric_info, lb.groups)


def test_clustered_board_tiers_are_the_finished_boards(board_store):
    # the matrices reach the board before the clustered intervals: its tiers equal the
    # tiers computed from the finished board, and the CLT board's (the tiers depend on the
    # SEs only through which are finite)
    lb = an.leaderboard(board_store, method="clustered", include_ranks=False)
    assert (lb.cells["method"] == "clustered").sum() and (lb.cells["method"] == "clt").sum()
    assert (lb.tiers["task"] == "__average__").sum() == 5
    pd.testing.assert_frame_equal(lb.tiers, _final_tiers(board_store, lb))
    clt = an.leaderboard(board_store, method="clt", include_ranks=False)
    pd.testing.assert_frame_equal(lb.tiers, clt.tiers)
    one = an.leaderboard(board_store, method="clustered", task="a", rank_tasks=["a"])
    pd.testing.assert_frame_equal(one.tiers, _final_tiers(board_store, one))
    assert len(one.ranks) == 5


def test_clustered_board_tiers_follow_the_clustered_ses(board_store, monkeypatch):
    # a clustered SE that is NaN where the CLT one is finite takes the run's cell out of
    # its macro average: the average tier follows the clustered SEs, not the CLT ones
    real = board_intervals.clustered_columns

    def nan_for_m4_on_b(store, cs, *args, **kwargs):
        (se, low, high, used), nocl, pulled = real(store, cs, *args, **kwargs)
        rid = {v: k for k, v in _names(store).items()}["m4"]
        at = np.flatnonzero((cs["task"].to_numpy(dtype=object) == "b")
                            & (cs["run_id"].to_numpy(dtype=int) == rid))
        se = se.copy()
        se[at] = np.nan
        return (se, low, high, used), nocl, pulled
    monkeypatch.setattr(board_intervals, "clustered_columns", nan_for_m4_on_b)
    lb = an.leaderboard(board_store, method="clustered", include_ranks=False)
    avg = lb.averages.set_index("run")
    assert avg.loc["m4", "n_tasks"] == 3
    pd.testing.assert_frame_equal(lb.tiers, _final_tiers(board_store, lb))
    avg_tier = lb.tiers[lb.tiers["task"] == "__average__"]
    assert "m4" not in set(avg_tier["run"])          # m4's average is over other tasks


def _within(seconds: float, fn):
    """fn() in a thread, failing instead of hanging when it does not return in time."""
    with ThreadPoolExecutor(max_workers=1) as ex:
        return ex.submit(fn).result(timeout=seconds)


def test_an_error_in_the_clustered_read_reaches_the_caller(board_store, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("read failed")
    monkeypatch.setattr(board_store, "item_code_matrices", boom)
    with pytest.raises(RuntimeError, match="read failed"):
        _within(60, lambda: an.leaderboard(board_store, method="clustered"))


def test_an_error_in_the_clustered_intervals_reaches_the_caller(board_store, monkeypatch):
    # after the job has handed its matrices over
    def boom(*args, **kwargs):
        raise RuntimeError("intervals failed")
    monkeypatch.setattr(board_cells, "_clustered_of_matrices", boom)
    with pytest.raises(RuntimeError, match="intervals failed"):
        _within(60, lambda: an.leaderboard(board_store, method="clustered"))
    monkeypatch.undo()
    assert len(an.leaderboard(board_store, method="clustered").tiers)
