"""analysis.repeats on a real store: metric_variants' item counts; the clustered interval of
the Repeats page against the leaderboard's."""

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


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_cluster_interval_is_the_leaderboards(tmp_path, kind):
    """One rule per quantity: the Repeats page's clustered interval (``analysis.clusters``)
    equals the clustered leaderboard's for the same run and task (Korn-Graubard for a 0/1
    score, t with G - 1 df for continuous scores), with items lacking a label as their own
    clusters, few clusters (G < 30, the iid floor) and many (G >= 30)."""
    rng = np.random.default_rng(21)
    runs = []
    n = 240
    labels = {"few": [f"p{i // 12}" for i in range(n)],                   # 20 clusters
              "many": [f"q{i // 4}" if i % 9 else None for i in range(n)]}  # 60 + singles
    for r in range(3):
        eff = rng.normal(0, 0.8, n // 4).repeat(4)
        acc = (rng.random(n) < 1 / (1 + np.exp(-(eff + 0.2 * r)))).astype(float)
        cont = np.clip(0.5 + 0.2 * eff + rng.normal(0, 0.2, n), 0, 1)
        runs.append(make_run(f"m{r}", {("few", "acc"): acc, ("many", "acc"): acc[::-1].copy(),
                                       ("cont", "f1"): cont},
                             clusters={"few": labels["few"], "many": labels["many"],
                                       "cont": labels["few"]}))
    s = make_store(runs, tmp_path, kind=kind)
    try:
        lb = analysis.leaderboard(s, method="clustered", include_ranks=False)
        checked = 0
        for task in ("few", "many", "cont"):
            for run in ("m0", "m1", "m2"):
                cell = lb.cells[(lb.cells["run"] == run) & (lb.cells["task"] == task)].iloc[0]
                cr = analysis.clusters(s, run, task)
                assert cell["method"] == "clustered"
                assert (cr.low, cr.high) == pytest.approx((cell["low"], cell["high"]),
                                                          rel=1e-12, abs=1e-12)
                assert cr.score == pytest.approx(cell["score"])
                assert cr.width_ratio == pytest.approx(
                    (cr.high - cr.low) / (cr.iid_high - cr.iid_low))
                if task != "cont":
                    assert cr.method_reason.startswith("Korn-Graubard")
                    assert cr.iid_method == "Wilson"
                checked += 1
        assert checked == 9
    finally:
        if hasattr(s, "close"):
            s.close()
