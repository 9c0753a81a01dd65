"""analysis._common: resolve_runs (the same run ids as store.resolve_run, ref by ref) and
proportion_bounds (the same bounds as _proportion, cell by cell, bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.analysis._common import _proportion, proportion_bounds, resolve_run, resolve_runs
from evalcore.errors import AnalysisError
from tests.analysis_helpers import make_run, make_store, real_store_available

needs_store = pytest.mark.skipif(not real_store_available(), reason="needs the real store")


@needs_store
def test_resolve_runs_equals_resolve_run(tmp_path):
    names = ["alpha", "Beta", "2", "id:x", " spaced", "name:y", "#1"]
    s = make_store([make_run(n, {("t", "acc"): [0.0, 1.0]}) for n in names], tmp_path,
                   kind="real")
    try:
        table = s.runs()
        refs = ["alpha", "Beta", "beta", "#1", "id:2", "name:2", 3, "id:x", "name:y", "#1",
                "alpha ", 2, 99, True]
        want = []
        for r in refs:
            try:
                want.append(resolve_run(s, r))
            except AnalysisError as exc:
                want.append(str(exc))
        got = []
        for r in refs:
            try:
                got.append(resolve_runs(s, [r], table)[0])
            except AnalysisError as exc:
                got.append(str(exc))
        assert got == want
        assert resolve_runs(s, ["alpha", "Beta"], table) == want[:2]
        with pytest.raises(AnalysisError):
            resolve_runs(s, ["nope"], table)
    finally:
        s.close()


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson", "bayes", "clt"])
@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_proportion_bounds_equal_the_scalar_intervals(method, confidence):
    k = np.r_[0:6, 45:51, 0, 1, 2, 3, 1000, 1997, 1998, 1999, 2000, 1, 7, 13]
    n = np.r_[[5] * 6, [50] * 6, [2000] * 9, 1, 7, 13].astype(float)
    low, high = proportion_bounds(method, k.astype(float), n, confidence)
    for i in range(k.size):
        want = _proportion(method, int(k[i]), int(n[i]), confidence)
        np.testing.assert_array_equal([low[i], high[i]], want)   # bit for bit (NaN = NaN)
    empty = proportion_bounds(method, np.empty(0), np.empty(0), confidence)
    assert empty[0].size == 0
