"""evalcore.stats.signal_noise against the reference code of Heineman et al. (2025),
github.com/allenai/signal-and-noise ``snr/metrics.py`` (re-implemented here as published)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evalcore.stats import (StatsInputError, decision_accuracy, relative_dispersion, relative_sd,
                            series_signal_to_noise, signal_to_noise)
from evalcore.stats.signal_noise import NOISE_ONE_SERIES, NOISE_POOLED


def reference_snr(signal_scores, noise_scores):
    """The README/metrics.py pseudocode: signal = max|mj - mk| / mean, noise = std / mean."""
    dispersion = np.max([np.abs(mj - mk) for mj in signal_scores for mk in signal_scores])
    signal = dispersion / np.mean(signal_scores)
    noise = np.std(noise_scores) / np.mean(noise_scores)
    return signal / noise


def reference_decision_acc(small, target):
    """``decision_acc_fast`` as published."""
    small, target = np.array(small), np.array(target)
    sd = small[:, None] > small[None, :]
    td = target[:, None] > target[None, :]
    mask = np.triu(np.ones_like(sd), k=1).astype(bool)
    return np.mean((sd == td)[mask])


def test_snr_equals_the_reference_code_for_one_series():
    rng = np.random.default_rng(4)
    finals = rng.uniform(0.4, 0.7, 12)
    ckpts = 0.6 + rng.normal(0, 0.01, 30)
    res = signal_to_noise(finals, [ckpts], last_n=30)
    assert res.snr == pytest.approx(reference_snr(finals, ckpts), rel=1e-12)
    assert res.signal == pytest.approx((finals.max() - finals.min()) / finals.mean())
    assert res.noise == pytest.approx(np.std(ckpts) / np.mean(ckpts))
    assert res.last_n == 30 and res.n_models == 12 and res.noise_method == NOISE_ONE_SERIES


def reference_snr_small_scale(df, last=5):
    """``compute_snr_small_scale`` of snr/snr_simple.py as published (github.com/allenai/
    signal-and-noise), on a table with columns mix, step, primary_score:
    scores_df = df.sort_values("step");
    scores_arr = np.array([lst[-5:] for lst in scores_df.groupby("mix")["primary_score"]
                          .apply(list)]);
    signal = [np.mean(scores) for scores in scores_arr]; noise = scores_arr.flatten();
    signal_to_noise_ratio(signal, noise)."""
    scores_df = df.sort_values("step")
    scores_arr = np.array([lst[-last:] for lst in
                           scores_df.groupby("mix")["primary_score"].apply(list)])
    signal = [np.mean(scores) for scores in scores_arr]
    noise = scores_arr.flatten()
    return reference_snr(signal, noise), signal, noise


def test_several_series_follow_the_reference_script_pooled_noise():
    """A small table of three data mixes x 8 checkpoints, the reference script re-implemented
    above with pandas; ``series_signal_to_noise`` gives the same SNR, signal and noise."""
    import pandas as pd
    rng = np.random.default_rng(11)
    steps = np.arange(1, 9) * 1000
    rows = [(mix, int(s), float(level * (1 - np.exp(-s / 1000)) + rng.normal(0, 0.004)))
            for mix, level in (("dclm", 0.62), ("c4", 0.55), ("fineweb", 0.58))
            for s in steps]
    df = pd.DataFrame(rows, columns=["mix", "step", "primary_score"]).sample(frac=1,
                                                                              random_state=1)
    ref, signal_scores, noise_scores = reference_snr_small_scale(df, last=5)
    series = [df[df["mix"] == m].sort_values("step")["primary_score"].to_numpy()
              for m in sorted(df["mix"].unique())]
    res = series_signal_to_noise(series, last_n=5)
    assert res.snr == pytest.approx(ref, rel=1e-12)
    assert res.signal == pytest.approx(relative_dispersion(signal_scores), rel=1e-12)
    assert res.noise == pytest.approx(np.std(noise_scores) / np.mean(noise_scores), rel=1e-12)
    assert res.noise_method == NOISE_POOLED and res.last_n == 5 and res.n_models == 3
    # each series' own wobble is kept beside the pooled noise, which is much larger here
    # (it holds the spread between the mixes' levels too)
    assert res.noise_by_series == pytest.approx(tuple(relative_sd(c[-5:]) for c in series))
    assert res.noise > 3 * max(res.noise_by_series)


def test_signal_to_noise_pools_several_series_for_the_noise():
    s1 = [0.1, 0.2, 0.50, 0.52, 0.51]
    s2 = [0.3, 0.4, 0.60, 0.60, 0.63]
    res = signal_to_noise([0.51, 0.63], [s1, s2], last_n=3)
    pooled = np.r_[s1[-3:], s2[-3:]]
    assert res.noise == pytest.approx(np.std(pooled) / np.mean(pooled))
    assert res.snr == pytest.approx(reference_snr([0.51, 0.63], pooled))
    assert res.noise_by_series == pytest.approx((relative_sd(s1[-3:]), relative_sd(s2[-3:])))
    assert res.last_n == 3
    with pytest.raises(StatsInputError, match="two series"):
        series_signal_to_noise([s1], last_n=3)


def test_zero_noise_gives_infinite_snr_and_bad_inputs_raise():
    assert signal_to_noise([0.5, 0.6], [[0.5, 0.5, 0.5]]).snr == float("inf")
    with pytest.raises(StatsInputError):
        relative_dispersion([0.5])
    with pytest.raises(StatsInputError):
        relative_sd([0.5])
    with pytest.raises(StatsInputError, match="positive"):
        relative_dispersion([-0.5, 0.2])
    with pytest.raises(StatsInputError):
        signal_to_noise([0.5, 0.6], [], last_n=5)


def test_decision_accuracy_equals_the_reference_code_without_ties():
    rng = np.random.default_rng(9)
    for _ in range(50):
        e, f = rng.random(7), rng.random(7)
        res = decision_accuracy(e, f)
        assert res.accuracy == pytest.approx(reference_decision_acc(e, f))
        assert res.n_pairs == 21 and res.ties == 0


def test_decision_accuracy_by_enumeration_and_ties():
    e, f = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]   # one swapped pair of six
    res = decision_accuracy(e, f)
    assert (res.agree, res.n_pairs, res.accuracy) == (5, 6, pytest.approx(5 / 6))
    tied = decision_accuracy([0.5, 0.5, 0.7], [0.4, 0.6, 0.8])
    # pair (0,1) tied early: one half; the other two pairs agree
    assert tied.ties == 1 and tied.accuracy == pytest.approx(2.5 / 3)
    # independent check of the half rule: average over both orders of the tied models
    orders = [reference_decision_acc(np.array(x)[list(p)], np.array(y)[list(p)])
              for p in itertools.permutations(range(3))
              for x, y in [([0.5, 0.5, 0.7], [0.4, 0.6, 0.8])]]
    assert np.mean(orders) == pytest.approx(tied.accuracy)
    with pytest.raises(StatsInputError):
        decision_accuracy([1.0, 2.0], [1.0])
