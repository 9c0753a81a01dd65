"""Intervals stay inside the metric's range: the CLT interval of a continuous score (and a
harness's value +- z * stderr) is clipped to [low, high] of the metric and the board says so.

Real file: ``log_streaming.eval`` (inspect_ai's own test log, shared fixtures): 2 samples x 2
epochs, per-sample means 0.5 and 1.0, header accuracy 0.75 and stderr 0.25; the unclipped
CLT interval 0.75 +- 1.959964 * 0.25 is [0.26, 1.24]. With 2 items the CLT interval of a
continuous score uses Student's t with 1 df (as ``stats.score_interval(x, "clt")``), so
0.75 +- 12.706 * 0.25 covers the whole range [0, 1].
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm, t as t_dist

from evalcore.analysis import leaderboard
from evalcore.ingest import parse_paths
from evalcore.store import Store


def _board(tmp_path, path, **kw):
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([str(path)]))
    return leaderboard(store, include_tiers=False, include_ranks=False, **kw)


@pytest.mark.parametrize("method", ["clt", "wilson", "clustered"])
def test_log_streaming_clt_interval_is_clipped_to_0_1_and_labelled(fixtures_dir, tmp_path,
                                                                   method):
    lb = _board(tmp_path, fixtures_dir / "inspect" / "log_streaming.eval", method=method)
    cell = lb.cells.iloc[0]
    assert cell.method == "clt" and cell.score == 0.75 and cell.se == pytest.approx(0.25)
    q = t_dist.ppf(0.975, 1)                                       # n = 2 items: t, 1 df
    assert 0.75 + q * 0.25 > 1.0 and 0.75 - q * 0.25 < 0.0         # the raw interval crosses both
    assert (cell.low, cell.high) == (0.0, 1.0)
    assert lb.metric_info["popularity"].low == 0.0 and lb.metric_info["popularity"].high == 1.0
    assert any("clipped to the metric's range" in n and "popularity [0, 1]" in n
               for n in lb.notes), lb.notes


def test_the_cli_prints_the_clipped_interval(fixtures_dir, tmp_path):
    import json
    import subprocess
    import sys
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([str(fixtures_dir / "inspect" / "log_streaming.eval")]))
    store.close()
    out = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "s"),
                          "leaderboard", "--method", "clt", "--format", "json"],
                         capture_output=True, text=True, check=True, timeout=300)
    doc = json.loads(out.stdout)
    cell = doc["cells"][0]
    assert cell["high"] == 1.0 and cell["low"] == 0.0
    assert any("popularity [0, 1]" in n for n in doc["notes"])


def test_clip_to_range_cuts_only_the_impossible_part():
    from evalcore.stats import clip_to_range, range_text
    low, high, cut = clip_to_range([0.26, -0.1, np.nan, 0.2, -2.0], [1.24, 0.5, np.nan, 0.3,
                                                                       -1.5], 0.0, 1.0)
    assert low.tolist()[:2] == [0.26, 0.0] and high.tolist()[:2] == [1.0, 0.5]
    assert np.isnan(low[2]) and np.isnan(high[2])
    assert (low[4], high[4]) == (0.0, 0.0)                      # wholly below: a point at 0
    assert cut.tolist() == [True, True, False, False, True]
    # one-sided ranges (perplexity lives in [1, inf))
    lo, hi, c = clip_to_range([0.4], [3.0], 1.0, None)
    assert (lo[0], hi[0], c[0]) == (1.0, 3.0, True)
    assert range_text(0.0, 1.0) == "[0, 1]" and range_text(1.0, None) == "[1, inf)"
    assert range_text(None, None) == "(-inf, inf)"


def test_board_clt_interval_of_a_small_continuous_task_equals_score_interval(tmp_path):
    """One answer: a continuous score's CLT cell on the board is stats.score_interval's
    "clt" interval (t with n - 1 df below 30 items, z from 30 on), and the board says so."""
    from evalcore.stats import score_interval
    from evalcore.ingest import parse_uploads
    rng = np.random.default_rng(3)
    rows = ["model,task,item_id,score"]
    xs = {"small": rng.uniform(0.2, 0.9, 8), "large": rng.uniform(0.2, 0.9, 40)}
    for task, x in xs.items():
        rows += [f"m,{task},q{i},{float(v)!r}" for i, v in enumerate(x)]
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([("scores.csv", ("\n".join(rows) + "\n").encode())]))
    lb = leaderboard(store, include_tiers=False, include_ranks=False, method="clt")
    for task, x in xs.items():
        cell = lb.cells[lb.cells["task"] == task].iloc[0]
        ref = score_interval(x, "clt", 0.95)
        assert (cell.low, cell.high) == pytest.approx((ref.low, ref.high), abs=1e-12), task
    assert any("Student's t" in n and "small" in n and "large" not in n for n in lb.notes)
