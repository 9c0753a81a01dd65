"""analysis.repeats on a real store: metric_variants' item counts."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore import analysis
from tests.analysis_helpers import make_run, make_store, real_store_available

pytestmark = pytest.mark.skipif(not real_store_available(), reason="needs the real store")


def test_metric_variants_count_each_variants_items(tmp_path):
    """metric_variants reads each variant's item count from the cell table: a variant
    scored on fewer items (K = 2 answers on the other) is named in the warning."""
    a = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1], dtype=float)
    k2 = np.column_stack([a, 1 - a])
    run = make_run("v", {("t", "strict"): {str(i): a[i] for i in range(8)},
                         ("t", "loose"): k2})
    s = make_store([run], tmp_path, kind="real")
    try:
        cmp = analysis.metric_variants(s, "v", "t", "strict", "loose")
        assert cmp.pairing[0].n_shared == 8
        assert cmp.warnings == ("strict: 8 items, loose: 10 items; compared on 8 shared items",)
        assert cmp.per_task.iloc[0]["diff"] == pytest.approx(0.5 - a[:8].mean())
    finally:
        s.close()
