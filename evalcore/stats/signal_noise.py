"""Checkpoint series: signal, noise, signal-to-noise ratio and decision accuracy.

Definitions of Heineman et al. (2025), "Signal and Noise: A Framework for Reducing
Uncertainty in Language Model Evaluation", arXiv:2508.13144, sec. 2, and their reference
code (github.com/allenai/signal-and-noise, ``snr/metrics.py``):

* **signal** of a benchmark over a population of final models with scores m_1..m_M:
  the relative dispersion  max_{j,k} |m_j - m_k| / mean(m).
* **noise** of one model over its last n checkpoints with scores c_1..c_n: the relative
  standard deviation  sd(c) / mean(c), sd with ddof = 0 (``np.std``, as in the code).
  With several checkpoint series (e.g. the data recipes of DataDecide) the reference script
  (``snr/snr_simple.py``, ``compute_snr_small_scale``) pools them: noise = sd / mean of the
  last n checkpoints of ALL series together (``scores_arr.flatten()``), and the signal is the
  relative dispersion of each series' mean over its last n checkpoints.
* **SNR** = signal / noise. A benchmark whose models are far apart relative to the
  step-to-step wobble of one model ranks small models the way it will rank large ones.
* **decision accuracy** (sec. 3, after Magnusson et al. 2025, DataDecide): over all pairs
  of models, the share whose order at the small scale (here: an early checkpoint) agrees
  with their order at the target scale (here: the final checkpoint).

Both relative measures divide by a mean and so assume a score with a meaningful zero and a
positive mean (accuracy, not a centred or negative metric).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from evalcore.stats._checks import StatsInputError, as_scores


def relative_dispersion(final_scores: Any) -> float:
    """Signal: max_{j,k} |m_j - m_k| / mean(m) over M >= 2 final models' scores.

    Edge cases: M < 2 or a mean <= 0 raises StatsInputError.
    """
    m = as_scores(final_scores, "final scores")
    if m.size < 2:
        raise StatsInputError("signal needs the final scores of at least two models")
    mean = float(np.mean(m))
    if not mean > 0:
        raise StatsInputError("signal is relative to the mean score, which must be positive")
    return float((np.max(m) - np.min(m)) / mean)


def relative_sd(checkpoint_scores: Any) -> float:
    """Noise: sd(c, ddof=0) / mean(c) over one model's last n >= 2 checkpoints.

    Edge cases: n < 2 or a mean <= 0 raises StatsInputError.
    """
    c = as_scores(checkpoint_scores, "checkpoint scores")
    if c.size < 2:
        raise StatsInputError("noise needs at least two checkpoints")
    mean = float(np.mean(c))
    if not mean > 0:
        raise StatsInputError("noise is relative to the mean score, which must be positive")
    return float(np.std(c) / mean)


NOISE_ONE_SERIES = "relative SD of the last checkpoints of one series"
NOISE_POOLED = ("relative SD of the last checkpoints of all series pooled (Heineman et al. "
                "reference script)")


@dataclass(frozen=True)
class SignalToNoise:
    """Signal, noise and their ratio for one task (Heineman et al. 2025).

    signal : relative dispersion of the scores given for the signal.
    noise : relative SD of the last ``last_n`` checkpoints: of the one series, or of all
        series pooled (the reference script's multi-series noise); ``noise_method`` says which.
    snr : signal / noise (inf when noise is 0).
    noise_by_series : each series' own relative SD of its last checkpoints, in the order
        given (shown beside the pooled noise; not part of it).
    n_models : number of scores in the signal.
    last_n : checkpoints per series in the noise (fewer when a series is shorter).
    noise_method : ``NOISE_ONE_SERIES`` or ``NOISE_POOLED``.
    """

    signal: float
    noise: float
    snr: float
    noise_by_series: tuple[float, ...]
    n_models: int
    last_n: int
    noise_method: str = NOISE_ONE_SERIES


def _last(checkpoint_series: Sequence[Any], last_n: int) -> list[np.ndarray]:
    if int(last_n) < 2:
        raise StatsInputError("last_n must be at least 2")
    if len(checkpoint_series) == 0:
        raise StatsInputError("noise needs at least one checkpoint series")
    return [as_scores(c, "checkpoint scores")[-int(last_n):] for c in checkpoint_series]


def signal_to_noise(final_scores: Any, checkpoint_series: Sequence[Any],
                    last_n: int = 5) -> SignalToNoise:
    """SNR = relative_dispersion(final_scores) / noise, as ``signal_to_noise_ratio`` of the
    reference code (``snr/metrics.py``).

    ``checkpoint_series``: one array per model of its scores in checkpoint order; the last
    ``last_n`` of each enter the noise (fewer when a series is shorter, at least two). One
    series: its relative SD (the reference's large-scale SNR: a population of final models
    for the signal, the last checkpoints of one model for the noise). Several series: the
    relative SD of their last checkpoints pooled into one array, as the reference script
    pools them (``np.std(scores_arr.flatten()) / np.mean(...)``). The pooled SD contains the
    spread between the series' levels as well as each series' step-to-step wobble, so with
    well-separated series it is mostly that spread; ``noise_by_series`` keeps each series'
    own relative SD for comparison.

    Edge cases: as ``relative_dispersion`` and ``relative_sd``; no series raises.
    """
    tails = _last(checkpoint_series, last_n)
    sig = relative_dispersion(final_scores)
    per_series = tuple(relative_sd(c) for c in tails)
    if len(tails) == 1:
        noise, how = per_series[0], NOISE_ONE_SERIES
    else:
        noise, how = relative_sd(np.concatenate(tails)), NOISE_POOLED
    snr = math.inf if noise == 0 else sig / noise
    return SignalToNoise(signal=sig, noise=noise, snr=float(snr), noise_by_series=per_series,
                         n_models=int(np.size(final_scores)),
                         last_n=min(c.size for c in tails), noise_method=how)


def series_signal_to_noise(checkpoint_series: Sequence[Any], last_n: int = 5) -> SignalToNoise:
    """The reference script's SNR over several checkpoint series (``compute_snr_small_scale``
    in ``snr/snr_simple.py``): signal = relative dispersion of each series' mean over its
    last ``last_n`` checkpoints; noise = relative SD of those checkpoints of all series
    pooled (:func:`signal_to_noise`).

    Edge cases: fewer than two series raises StatsInputError (one series has no signal).
    """
    tails = _last(checkpoint_series, last_n)
    if len(tails) < 2:
        raise StatsInputError("a signal over checkpoint series needs at least two series")
    return signal_to_noise([float(np.mean(c)) for c in tails], tails, last_n)


@dataclass(frozen=True)
class DecisionAccuracy:
    """Share of model pairs ordered the same way early and at the end.

    accuracy : (agree + ties / 2) / n_pairs.
    n_pairs : M (M - 1) / 2 pairs of the M models.
    agree : pairs ordered the same way, strictly, in both rankings.
    ties : pairs tied in either ranking (each counts one half).
    """

    accuracy: float
    n_pairs: int
    agree: int
    ties: int


def decision_accuracy(early_scores: Any, final_scores: Any) -> DecisionAccuracy:
    """Share of pairs (i, j) with sign(e_i - e_j) = sign(f_i - f_j).

    The reference code (``decision_acc_fast``) compares ``e_i > e_j`` with ``f_i > f_j``
    for i < j, which counts a tie as agreeing or not depending on the order of the models;
    here a pair tied in either ranking counts one half (a tied decision is a coin flip).
    Without ties the two agree exactly.

    Edge cases: fewer than two models or arrays of different length raise StatsInputError.
    """
    e = as_scores(early_scores, "early scores")
    f = as_scores(final_scores, "final scores")
    if e.shape != f.shape:
        raise StatsInputError(f"{e.size} early scores for {f.size} final scores")
    if e.size < 2:
        raise StatsInputError("decision accuracy needs at least two models")
    i, j = np.triu_indices(e.size, k=1)
    se = np.sign(e[i] - e[j])
    sf = np.sign(f[i] - f[j])
    tie = (se == 0) | (sf == 0)
    agree = int(np.sum((se == sf) & ~tie))
    ties = int(np.sum(tie))
    n = int(i.size)
    return DecisionAccuracy(accuracy=(agree + 0.5 * ties) / n, n_pairs=n, agree=agree, ties=ties)
