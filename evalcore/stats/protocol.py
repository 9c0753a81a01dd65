"""Protocol sensitivity: how far one model's score moves across measurement protocols.

A *protocol group* is a set of scores of one model on one task that differ only in how
they were measured: prompt template, few-shot count, chat template, answer filter, or the
metric variant of one run (``acc`` vs ``acc_norm``, strict vs flexible extraction). The
spread of that group is a noise floor that no number of items lowers: a gap between two
models smaller than the spread of either across reasonable protocols is a statement about
the protocol as much as about the models.

References: Sclar et al. (2024), "Quantifying Language Models' Sensitivity to Spurious
Features in Prompt Design", ICLR 2024, arXiv:2310.11324 (spread of one model's accuracy
across prompt formats, reported as range max - min); Madaan et al. (2024), "Quantifying
Variance in Evaluation Benchmarks", arXiv:2406.10229 (choice vs completion framings of MMLU
move a 7B model's score by several points).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from evalcore.stats._checks import StatsInputError, as_scores


@dataclass(frozen=True)
class ProtocolSpread:
    """Spread of one model's score on one task across protocols.

    Attributes
    ----------
    labels, scores : one entry per protocol (in the order given).
    n_protocols : number of protocols (>= 2).
    mean : mean of the protocol scores.
    range : max - min of the scores (the spread in the words of Sclar et al. 2024).
    sd : sample SD of the scores (ddof = 1).
    highest, lowest : the labels of the highest and lowest score.
    item_se : root mean square of the protocols' item standard errors (NaN when none is
        known): the item-sampling noise of one protocol's score, for comparison.
    """

    labels: tuple[str, ...]
    scores: tuple[float, ...]
    n_protocols: int
    mean: float
    range: float
    sd: float
    highest: str
    lowest: str
    item_se: float

    def exceeds(self, gap: float) -> bool:
        """True when the protocol range is larger than ``|gap|`` (a gap to another model)."""
        return bool(self.range > abs(float(gap)))

    @property
    def range_over_item_se(self) -> float:
        """range / item_se: how many item standard errors the protocol range spans."""
        if not (math.isfinite(self.item_se) and self.item_se > 0):
            return float("nan")
        return self.range / self.item_se


def protocol_spread(scores: Any, labels: Sequence[str] | None = None,
                    item_ses: Any = None) -> ProtocolSpread:
    """Range and SD of one model's score across k >= 2 measurement protocols.

    range = max_j s_j - min_j s_j;  sd = sqrt(sum_j (s_j - mean)^2 / (k - 1));
    item_se = sqrt(mean_j SE_j^2) over the protocols whose item SE is known.

    The SD treats the protocols as a sample of reasonable protocols; with two protocols it
    is range / sqrt(2). Both are descriptive: the protocols were chosen by people, not drawn
    at random, so no interval is attached to the spread itself.

    Edge cases: fewer than two scores, NaN scores or a label count that differs from the
    score count raise StatsInputError; item_ses may hold NaN (unknown SE), all-NaN gives
    item_se = NaN.
    """
    s = as_scores(scores, "protocol scores")
    if s.size < 2:
        raise StatsInputError("a protocol spread needs at least two protocols")
    labs = tuple(str(x) for x in (labels if labels is not None else range(1, s.size + 1)))
    if len(labs) != s.size:
        raise StatsInputError(f"{len(labs)} labels for {s.size} protocol scores")
    if item_ses is None:
        item_se = float("nan")
    else:
        se = np.asarray(item_ses, dtype=float)
        if se.shape != s.shape:
            raise StatsInputError(f"{se.size} item SEs for {s.size} protocol scores")
        se = se[np.isfinite(se)]
        item_se = float(math.sqrt(np.mean(se ** 2))) if se.size else float("nan")
    hi, lo = int(np.argmax(s)), int(np.argmin(s))
    return ProtocolSpread(labels=labs, scores=tuple(float(v) for v in s), n_protocols=int(s.size),
                          mean=float(np.mean(s)), range=float(s[hi] - s[lo]),
                          sd=float(np.std(s, ddof=1)), highest=labs[hi], lowest=labs[lo],
                          item_se=item_se)
