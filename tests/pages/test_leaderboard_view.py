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
    """The Leaderboard fields the table helpers read."""
    def __init__(self, cells: pd.DataFrame):
        self.cells, self.method = cells, "wilson"
        self.task_notes = pd.DataFrame({"task": ["t2"], "kind": ["k"], "note": ["n"]})
        self.groups, self.group_cells, self.metric_info = {}, pd.DataFrame(), {}
        self.averages = pd.DataFrame(columns=["run", "n_tasks", "score", "low", "high"])
        self.group_tree = {}


def test_scores_table_values_sort_texts_show_same_shape():
    cells = _cells().assign(metric="acc")
    board = _Board(cells)
    columns = leaderboard_view.board_columns(board, with_average=False)
    assert [c.key for c in columns] == ["t1", "t2"]
    assert "notes: k" in columns[1].help and "acc" in columns[0].help
    table = leaderboard_view.scores_table(board, ["b", "a", "c"], columns, {"t1": True})
    assert list(table.texts.columns) == list(table.values.columns) == ["Run", "t1", "t2"]
    assert table.texts["Run"].tolist() == ["b", "a", "c"]
    assert table.texts["t1"].tolist() == ["– [–, –]", "50.0 [40.0, 60.0]", "–"]
    assert table.texts["t2"].tolist() == ["0.25 [0.2, 0.3] ~chance (wald)",
                                          "12.5 [10, 15] (reported)", "0.75 [0.7, 0.8]"]
    # the numbers a column sorts by: the score in the units shown (x100 for %), missing
    # scores (NaN score of b, no cell for c) below every score
    assert table.values["t1"].tolist() == [-np.inf, 50.0, -np.inf]
    assert table.values["t2"].tolist() == [0.25, 12.5, 0.75]
    assert all(str(t) == "str" for t in table.texts.dtypes)
    empty = leaderboard_view.scores_table(board, [], columns, {})
    assert empty.texts.empty and list(empty.texts.columns) == ["Run", "t1", "t2"]


def test_styled_table_displays_the_texts_and_keeps_the_numbers():
    """``styled`` fills pandas' per-cell display map: the display values Streamlit sends
    (``Styler._translate``, as ``marshall_styler`` reads them) are the texts, the data the
    numbers."""
    from streamlit.elements.lib.pandas_styler_utils import _use_display_values

    cells = _cells().assign(metric="acc")
    board = _Board(cells)
    columns = leaderboard_view.board_columns(board, with_average=False)
    table = leaderboard_view.scores_table(board, ["b", "a", "c"], columns, {"t1": True})
    styler = leaderboard_view.styled(table)
    styler._compute()
    shown = _use_display_values(table.values, styler._translate(False, False))
    for col in ("t1", "t2"):
        assert shown[col].astype(str).tolist() == table.texts[col].tolist()
    assert styler.data is table.values


class _Info:
    def __init__(self, direction):
        self.direction, self.ideal = direction, None


def test_rank_runs_by_average_task_and_lower_is_better():
    cells = pd.DataFrame({"run": ["x", "y", "y", "x"], "task": ["up", "up", "down", "down"],
                          "metric": "m", "score": [0.9, 0.5, 3.0, 5.0]})
    board = _Board(cells)
    board.metric_info = {"up": _Info("higher"), "down": _Info("lower")}
    board.averages = pd.DataFrame({"run": ["y", "x", "z"], "n_tasks": [2, 2, 1],
                                   "score": [0.4, 0.6, 0.99]})
    # the average: more tasks first, so z's one-task 0.99 comes last
    assert leaderboard_view.rank_runs(board, ["z", "y", "x"], "Macro average") == ["x", "y", "z"]
    # a task: the board's own order (cells come best first within a task)
    assert leaderboard_view.rank_runs(board, ["x", "y", "w"], "down") == ["y", "x", "w"]


def test_filter_runs_by_name_tag_harness_and_series():
    runs = pd.DataFrame({"name": ["org/a-step1", "org/a-step2", "org/b"],
                         "model": ["org/a", "org/a", "Org/B-Big"],
                         "source_format": ["lm_eval", "tidy", "lm_eval"],
                         "tags": [["x"], None, ["x", "y"]]})
    series = {"org/a-step1": "org/a", "org/a-step2": "org/a", "org/b": "org/b"}
    f = leaderboard_view.filter_runs
    assert f(runs, series) == ["org/a-step1", "org/a-step2", "org/b"]
    assert f(runs, series, query="big") == ["org/b"]               # the model matches
    assert f(runs, series, query="STEP") == ["org/a-step1", "org/a-step2"]
    assert f(runs, series, tags=["y", "nope"]) == ["org/b"]
    assert f(runs, series, harnesses=["tidy"]) == ["org/a-step2"]
    assert f(runs, series, series=["org/a"], tags=["x"]) == ["org/a-step1"]
    assert leaderboard_view.tag_options(runs) == ["x", "y"]
    assert leaderboard_view.series_options(series) == {"org/a": 2}
