"""analysis._common.resolve_runs: the same run ids as store.resolve_run, ref by ref."""

from __future__ import annotations

import pytest

from evalcore.analysis._common import resolve_run, resolve_runs
from evalcore.errors import AnalysisError
from tests.analysis_helpers import make_run, make_store, real_store_available

pytestmark = pytest.mark.skipif(not real_store_available(), reason="needs the real store")


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
