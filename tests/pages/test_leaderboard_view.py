"""ui.leaderboard_view: the scores table's text helpers (the page tests cover the table)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ui import leaderboard_view


def test_note_kinds_sorted_unique_per_task_as_pandas_groupby_gives():
    notes = pd.DataFrame({"task": pd.array(["b", "a", "b", None, "a", "b"], dtype="str"),
                          "kind": ["zeta", "alpha", "alpha", "orphan", "alpha", "mid"],
                          "note": ["x"] * 6})
    got = leaderboard_view._note_kinds(notes)
    # the former spelling: one groupby aggregation (NaN keys dropped)
    want = notes.groupby("task")["kind"].agg(lambda k: ", ".join(sorted(set(k)))).to_dict()
    assert got == want == {"a": "alpha", "b": "alpha, mid, zeta"}
    empty = pd.DataFrame({"task": pd.Series([], dtype=object), "kind": [], "note": []})
    assert leaderboard_view._note_kinds(empty) == {}
    assert leaderboard_view._note_kinds(
        pd.DataFrame({"task": [np.nan, "c"], "kind": ["k", "k"]})) == {"c": "k"}


def _cells() -> pd.DataFrame:
    return pd.DataFrame({
        "run": pd.array(["a", "b", "a", "b", "c"], dtype="str"),
        "task": pd.array(["t1", "t1", "t2", "t2", "t2"], dtype="str"),
        "score": [0.5, np.nan, 12.5, 0.25, 0.75], "low": [0.4, np.nan, 10.0, 0.2, 0.7],
        "high": [0.6, np.nan, 15.0, 0.3, 0.8],
        "contains_chance": [False, False, False, True, False],
        "has_items": [True, True, False, True, True],
        "method": pd.array(["wilson", "wilson", "wilson", "wald", "wilson"], dtype="str")})


def test_cell_texts_equal_cell_text_of_each_row():
    cells = _cells()
    percent = {"t1": True, "t2": False}
    for drop in ([], ["method"], ["contains_chance", "has_items"]):
        frame = cells.drop(columns=drop)
        got = leaderboard_view._cell_texts(frame, percent, "wilson")
        want = {(r["run"], r["task"]): leaderboard_view.cell_text(r, percent[r["task"]], "wilson")
                for r in frame.to_dict("records")}
        assert got == want
    got = leaderboard_view._cell_texts(cells, percent, "wilson")
    assert got[("a", "t1")] == "50.0 [40.0, 60.0]" and got[("b", "t1")] == "– [–, –]"
    assert got[("a", "t2")] == "12.5 [10, 15] (reported)"
    assert got[("b", "t2")] == "0.25 [0.2, 0.3] ~chance (wald)"


class _Board:
    """The Leaderboard fields scores_table reads."""
    def __init__(self, cells: pd.DataFrame):
        self.cells, self.method = cells, "wilson"
        self.task_notes = pd.DataFrame({"task": ["t2"], "kind": ["k"], "note": ["n"]})
        self.groups, self.group_cells, self.metric_info = {}, pd.DataFrame(), {}
        self.averages = pd.DataFrame(columns=["run", "n_tasks"])


def test_scores_table_is_text_in_str_columns_also_when_empty():
    cells = _cells().assign(metric="acc")
    board = _Board(cells)
    table = leaderboard_view.scores_table(board, ["b", "a", "c"], {"t1": True})
    assert list(table.columns) == ["Task", "Metric", "b", "a", "c", "Notes"]
    assert table["a"].tolist() == ["50.0 [40.0, 60.0]", "12.5 [10, 15] (reported)"]
    assert table["c"].tolist() == ["–", "0.75 [0.7, 0.8]"] and table["Notes"].tolist() == ["", "k"]
    assert all(str(t) == "str" for t in table.dtypes)
    # the same frame pandas builds from one list per column
    assert table.equals(pd.DataFrame({c: table[c].tolist() for c in table.columns}))
    empty = leaderboard_view.scores_table(board, ["a"], {}, query="no such task")
    assert empty.empty and list(empty.columns) == ["Task", "Metric", "a", "Notes"]
    assert empty.dtypes.equals(pd.DataFrame({c: [] for c in empty.columns}).dtypes)
