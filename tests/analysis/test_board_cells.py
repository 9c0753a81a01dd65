"""The clustered board's cells from code matrices (analysis/board_cells.py): a run of the
matrix that the board does not show is left out, and codes repeating one column (the
store's view when every run has the same labels) give the numbers of the whole matrix."""

from __future__ import annotations

import numpy as np

from evalcore import stats as st
from evalcore.analysis.board_cells import _clustered_of_matrices
from evalcore.model import ItemMatrix


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
