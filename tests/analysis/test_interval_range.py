"""Intervals stay inside the metric's range: the CLT interval of a continuous score (and a
harness's value +- z * stderr) is clipped to [low, high] of the metric and the board says so.

Real file: ``log_streaming.eval`` (inspect_ai's own test log, shared fixtures): 2 samples x 2
epochs, per-sample means 0.5 and 1.0, header accuracy 0.75 and stderr 0.25; the unclipped
CLT interval 0.75 +- 1.959964 * 0.25 is [0.26, 1.24].
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

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
    z = norm.ppf(0.975)
    assert 0.75 + z * 0.25 > 1.0                                  # the raw interval crosses 1
    assert cell.low == pytest.approx(0.75 - z * 0.25, abs=1e-12)   # 0.26, inside: kept
    assert cell.high == 1.0                                         # 1.24 -> 1
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
    assert cell["high"] == 1.0 and cell["low"] == pytest.approx(0.26, abs=0.001)
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
