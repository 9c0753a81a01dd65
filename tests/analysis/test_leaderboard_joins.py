"""The leaderboard's cells take each cell's reported value, reported stderr and audit flags
from the summaries and the audit by (run, task, metric), the metric shown only: checked
against the same joins written as pandas merges here, on a store where some cells have
reported numbers, some have several flags, a metric not shown has summaries of its own
and one run has reported numbers only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore import analysis as an
from evalcore.analysis.board_read import shown
from tests.analysis_helpers import make_run, make_store

RNG = np.random.default_rng(7)
X = {f"m{i}": (RNG.random(50) < p).astype(float) for i, p in enumerate([0.3, 0.6, 0.8])}


def _runs():
    runs = []
    for i, (name, x) in enumerate(X.items()):
        summ = [{"task": "arc", "metric": "acc_norm", "value": 0.1, "stderr": 0.2, "n": 50}]
        if i == 0:      # a value and stderr that disagree with the items, n wrong: 3 flags
            summ.append({"task": "arc", "metric": "acc", "value": 0.99, "stderr": 0.5, "n": 7})
        elif i == 1:    # agrees with the items: no flag
            summ.append({"task": "arc", "metric": "acc", "value": float(x.mean()),
                         "stderr": float(np.std(x, ddof=1) / np.sqrt(50)), "n": 50})
        runs.append(make_run(name, {("arc", "acc"): x, ("arc", "acc_norm"): 1 - x,
                                    ("hs", "acc"): 1 - x}, summaries=summ))
    runs.append(make_run("sumonly", None, summaries=[
        {"task": "arc", "metric": "acc", "value": 0.5, "stderr": float("nan"),
         "stderr_raw": "N/A", "n": 50}]))
    return runs


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(_runs(), tmp_path_factory.mktemp("joins"), kind="real")


def test_shown_marks_the_rows_of_the_metricshown():
    df = pd.DataFrame({"task": ["a", "a", "b", "c"], "metric": ["acc", "f1", "acc", "acc"]})
    assert shown(df, {"a": "f1", "b": "acc"}).tolist() == [False, True, True, False]
    assert shown(df.iloc[:0], {"a": "f1"}).tolist() == []


@pytest.mark.parametrize("method", ["wilson", "clustered"])
def test_reported_numbers_and_flags_equal_the_merges(store, method):
    lb = an.leaderboard(store, method=method, include_ranks=False)
    cells = lb.cells
    key = ["run_id", "task", "metric"]
    chosen = pd.DataFrame({"task": list(lb.metrics_by_task),
                           "metric": list(lb.metrics_by_task.values())})
    summ = store.summaries()
    rep = summ.merge(chosen, on=["task", "metric"])[key + ["value", "stderr"]]
    rep = rep.assign(run_id=rep["run_id"].astype(int)).drop_duplicates(key)
    want = cells[key].merge(rep, on=key, how="left")
    np.testing.assert_array_equal(cells["reported"].to_numpy(dtype=float),
                                  want["value"].to_numpy(dtype=float))
    np.testing.assert_array_equal(cells["reported_stderr"].to_numpy(dtype=float),
                                  want["stderr"].to_numpy(dtype=float))
    aud = store.audit()
    aud = aud[aud["flag"].notna()].assign(run_id=lambda d: d["run_id"].astype(int))
    flags = aud.groupby(key, as_index=False)["flag"].agg(
        lambda s: "; ".join(sorted(set(map(str, s)))))
    want = cells[key].merge(flags, on=key, how="left")
    got = [None if f is None else str(f) for f in cells["audit_flag"].tolist()]
    assert got == [None if pd.isna(f) else str(f) for f in want["flag"].tolist()]
    assert cells["audit_flag"].dtype == object
    # the cases are there: a cell with several flags, one without, a summary-only cell
    m0 = cells[(cells["run"] == "m0") & (cells["task"] == "arc")].iloc[0]
    assert str(m0["audit_flag"]).count(";") >= 1 and m0["reported"] == 0.99
    m1 = cells[(cells["run"] == "m1") & (cells["task"] == "arc")].iloc[0]
    assert m1["audit_flag"] is None and np.isfinite(m1["reported"])
    so = cells[cells["run"] == "sumonly"].iloc[0]
    assert not bool(so["has_items"]) and "N/A stderr" in str(so["audit_flag"])
    # the metric not shown (acc_norm) brings no reported number
    assert lb.metrics_by_task["arc"] == "acc"
    assert cells.loc[cells["task"] == "hs", "reported"].isna().all()


def test_a_board_without_audit_has_no_flags(store):
    lb = an.leaderboard(store, include_audit=False, include_ranks=False)
    assert lb.cells["audit_flag"].isna().all() and lb.cells["audit_flag"].dtype == object
