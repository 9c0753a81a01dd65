"""evalcore.stats.protocol: range and SD of one model's score across protocols."""

from __future__ import annotations

import math
import statistics

import pytest

from evalcore.stats import StatsInputError, protocol_spread


def test_spread_of_four_protocols():
    scores = [0.612, 0.671, 0.598, 0.655]
    res = protocol_spread(scores, ["0-shot", "5-shot", "chat", "acc_norm"], [0.02, 0.019, 0.021, float("nan")])
    assert res.range == pytest.approx(0.671 - 0.598)
    assert res.sd == pytest.approx(statistics.stdev(scores))
    assert (res.highest, res.lowest) == ("5-shot", "chat")
    assert res.item_se == pytest.approx(math.sqrt((0.02 ** 2 + 0.019 ** 2 + 0.021 ** 2) / 3))
    assert res.exceeds(0.05) and not res.exceeds(-0.08)
    assert res.range_over_item_se == pytest.approx(res.range / res.item_se)


def test_two_protocols_sd_is_range_over_sqrt_two():
    res = protocol_spread([0.5, 0.56])
    assert res.sd == pytest.approx(0.06 / math.sqrt(2))
    assert res.labels == ("1", "2") and math.isnan(res.item_se)


def test_bad_inputs():
    with pytest.raises(StatsInputError):
        protocol_spread([0.5])
    with pytest.raises(StatsInputError):
        protocol_spread([0.5, 0.6], ["a"])
    with pytest.raises(StatsInputError):
        protocol_spread([0.5, float("nan")])
