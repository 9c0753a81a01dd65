"""Every method and standard error the product names has a readable label (evalcore.words)."""

from __future__ import annotations

import math

from evalcore import analysis, stats, words


def test_every_interval_method_has_a_label():
    for m in analysis.METHODS:
        assert m in words.SCORE_INTERVALS
    for m in stats.PAIRED_BINARY_METHODS:
        assert m in words.PAIRED_INTERVALS
    for m in ("t", "normal", "bound", "clustered-t"):
        assert m in words.PAIRED_INTERVALS


def test_label_falls_back_and_never_shows_none():
    assert words.label("se", "se_iid") == "SE if items were independent"
    assert words.label("paired", "something-new") == "something-new"
    assert words.label("score", None) == words.MISSING
    assert words.label("score", math.nan) == words.MISSING
