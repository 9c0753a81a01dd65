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
