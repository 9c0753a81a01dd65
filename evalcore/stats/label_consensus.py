"""Suspect labels: items on which the strongest models agree on one option that is not the gold.

The rule (a list for human review, never an automatic correction; METHODS.md "Suspicious
items"): among the S strongest models on a task, an item is *suspect* when at least m of them
choose the same option and that option is not the gold one. Published audits of popular
benchmarks (Gema et al. 2024, "Are We Done with MMLU?", arXiv:2406.04127, about 6.5% of MMLU
questions with errors; Northcutt, Athalye & Mueller 2021, "Pervasive Label Errors in Test Sets
Destabilize Machine Learning Benchmarks", arXiv:2103.14749) use model agreement against the
label the same way: to rank items for a human to read.

How many suspects would correct labels give?  The chance model used here (and named in every
result): model j answers an item correctly with probability p_j (its accuracy on the task);
models err independently of each other; a wrong answer is spread uniformly over the K - 1 wrong
options, so model j picks a given wrong option with probability q_j = (1 - p_j)/(K - 1).
The probability that an item is flagged is then computed exactly (``flag_probability``) by
dynamic programming over the models with the vector of counts per wrong option as the state
(counts capped at m, vectors kept sorted because the model is exchangeable over the wrong
options), and the number of flagged items among n is a sum of independent Bernoulli variables
(Poisson-binomial when items differ in K).

A second reference conditions on item difficulty (``expected_suspects_given_errors``): take
as given how many of the strong models missed the gold on each item (w_i) and ask only whether
their wrong picks concentrate on one option more than w_i picks spread uniformly over K - 1
options would (an occupancy probability, computed by the same recursion with p = 0). Hard
items then no longer count as evidence by themselves; what remains is concentration, which a
wrong gold produces (the strong models agree on the true answer) and so does one attractive
distractor.

What the chance model leaves out, so read the expectation as a lower reference, not a null
one can reject with confidence: real errors are positively correlated between models (hard
items are hard for all, and an attractive distractor attracts all), which makes consensus on
a wrong option more frequent than independence predicts even when every label is right. A
list far above the expectation says "look here"; a list near it says the rule finds no more
than correlated mistakes would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binom

from evalcore.stats._checks import StatsInputError, check_count

CHANCE_MODEL = ("independent errors: model j is right with its task accuracy p_j and otherwise "
                "picks one of the K - 1 wrong options uniformly at random")
CONDITIONAL_MODEL = ("given each item's number of strong models that missed the gold: each of "
                     "them picks one of the K - 1 wrong options uniformly at random")
DEFAULT_M = 3


@dataclass(frozen=True)
class ConsensusItems:
    """The rule applied to a pick matrix.

    flagged[i] : item i is suspect; option[i] : the most chosen non-gold option among the
    strong models (-1 when none chose one); count[i] : how many strong models chose it;
    answered[i] : strong models with a pick on item i. m, strong : the rule's parameters
    (indices of the strong models in the input order).
    """

    flagged: np.ndarray
    option: np.ndarray
    count: np.ndarray
    answered: np.ndarray
    m: int
    strong: tuple[int, ...]

    @property
    def n_flagged(self) -> int:
        return int(self.flagged.sum())


@dataclass(frozen=True)
class ConsensusExpectation:
    """Expected number of suspect items if every label were correct, under ``CHANCE_MODEL``.

    expected = sum_i P(item i flagged); p_value = P(X >= observed) for X the number of
    flagged items under the chance model (exact); ratio = observed / expected.
    """

    n_items: int
    m: int
    accuracies: tuple[float, ...]
    expected: float
    observed: int | None
    p_value: float | None
    method: str = CHANCE_MODEL

    @property
    def ratio(self) -> float | None:
        if self.observed is None or self.expected <= 0:
            return None
        return self.observed / self.expected


def _check_m(m: Any) -> int:
    mm = check_count(m, "m")
    if mm < 1:
        raise StatsInputError(f"m (models that must agree) must be at least 1, got {mm}")
    return mm


def strongest(accuracies: Any, size: int) -> tuple[int, ...]:
    """Indices of the ``size`` most accurate models (ties: the earlier model first)."""
    acc = np.asarray(accuracies, dtype="float64")
    size = check_count(size, "size")
    order = np.argsort(-acc, kind="stable")
    return tuple(int(i) for i in order[:max(0, size)])


def consensus_suspects(picks: Any, gold: Any, strong: Any, m: int) -> ConsensusItems:
    """Apply the rule to ``picks`` (models x items, option codes >= 0, -1 = no pick).

    An item is flagged when at least ``m`` of the models in ``strong`` chose the same option
    and that option differs from ``gold[i]`` (a gold of -1, unknown, never flags), whatever
    the others chose (with m <= |strong|/2 the gold may be as popular). Ties for the most
    chosen wrong option go to the smaller code.
    """
    p = np.asarray(picks, dtype="int64")
    g = np.asarray(gold, dtype="int64")
    if p.ndim != 2 or g.ndim != 1 or p.shape[1] != g.shape[0]:
        raise StatsInputError(f"picks must be models x items and gold one code per item; got "
                              f"{p.shape} and {g.shape}")
    mm = _check_m(m)
    idx = tuple(int(i) for i in strong)
    if any(i < 0 or i >= p.shape[0] for i in idx):
        raise StatsInputError("strong names a model index outside the pick matrix")
    sub = p[list(idx)] if idx else np.full((0, p.shape[1]), -1, dtype="int64")
    n_items = p.shape[1]
    top = int(sub.max(initial=-1)) + 1
    if top == 0 or n_items == 0:
        empty = np.zeros(n_items, dtype="int64")
        return ConsensusItems(np.zeros(n_items, dtype=bool), empty - 1, empty,
                              (sub >= 0).sum(axis=0).astype("int64"), mm, idx)
    counts = np.zeros((top, n_items), dtype="int64")
    for row in sub:
        ok = row >= 0
        np.add.at(counts, (row[ok], np.nonzero(ok)[0]), 1)
    cols = np.arange(n_items)
    known = (g >= 0) & (g < top)
    counts[g[known], cols[known]] = 0          # only wrong options can be the consensus
    option = counts.argmax(axis=0)
    count = counts[option, cols]
    option = np.where(count > 0, option, -1)
    flagged = (count >= mm) & (g >= 0) & (option >= 0)
    return ConsensusItems(flagged, option, count, (sub >= 0).sum(axis=0).astype("int64"), mm, idx)


def flag_probability(accuracies: Any, n_options: int, m: int) -> float:
    """P(at least m models choose the same wrong option) for one item with correct label.

    Formula: with q_j = (1 - p_j)/(K - 1), the state after model j is the multiset of counts
    per wrong option (capped at m, where the item is flagged for good); model j leaves the
    state with probability p_j and adds one to each of the K - 1 options with probability q_j.
    Exact; cost grows with the number of multisets (small for the m <= 5 and K <= 10 used).
    Edge cases: K = 1 (no wrong option) or m > number of models gives 0; accuracies must lie
    in [0, 1].
    """
    acc = np.asarray(accuracies, dtype="float64").ravel()
    if acc.size and (not np.isfinite(acc).all() or acc.min() < 0 or acc.max() > 1):
        raise StatsInputError("accuracies must be numbers in [0, 1]")
    k = check_count(n_options, "n_options")
    if k < 1:
        raise StatsInputError(f"n_options must be at least 1, got {k}")
    mm = _check_m(m)
    wrong = k - 1
    if wrong == 0 or mm > acc.size:
        return 0.0
    states: dict[tuple[int, ...], float] = {tuple([0] * wrong): 1.0}
    flagged = 0.0
    for p in acc:
        q = (1.0 - p) / wrong
        nxt: dict[tuple[int, ...], float] = {}
        for s, w in states.items():
            nxt[s] = nxt.get(s, 0.0) + w * p
            if q == 0.0:
                continue
            for pos in range(wrong):
                if pos and s[pos] == s[pos - 1]:
                    continue   # same count as the option before: same multiset, counted below
                same = sum(1 for c in s if c == s[pos])
                c = s[pos] + 1
                if c >= mm:
                    flagged += w * q * same
                    continue
                t = list(s)
                t[pos] = c
                key = tuple(sorted(t, reverse=True))
                nxt[key] = nxt.get(key, 0.0) + w * q * same
        states = nxt
    return float(min(1.0, max(0.0, flagged)))


def _count_tail(probs: list[tuple[float, int]], observed: int) -> float:
    """P(X >= observed) for X a sum of independent Binomial(n_g, p_g) groups (exact)."""
    pmf = np.array([1.0])
    for p, n in probs:
        part = binom.pmf(np.arange(n + 1), n, p)
        pmf = np.convolve(pmf, part)
    if observed <= 0:
        return 1.0
    if observed >= pmf.size:
        return 0.0
    return float(min(1.0, max(0.0, pmf[observed:].sum())))


def expected_suspects(accuracies: Any, n_options: Any, m: int,
                      observed: int | None = None) -> ConsensusExpectation:
    """Expected number of suspect items among the items of ``n_options`` (one K per item).

    expected = sum_i flag_probability(accuracies, K_i, m); with ``observed``, the exact
    upper tail P(X >= observed) of the Poisson-binomial count (items with the same K form a
    binomial group). ``accuracies`` are those of the strong models only: the rule looks at
    no other model. Zero items: expected 0 and p-value 1.
    """
    ks = np.asarray(n_options, dtype="int64").ravel()
    mm = _check_m(m)
    acc = tuple(float(a) for a in np.asarray(accuracies, dtype="float64").ravel())
    groups: list[tuple[float, int]] = []
    expected = 0.0
    for k in sorted(set(int(x) for x in ks)):
        n_k = int((ks == k).sum())
        p = flag_probability(acc, k, mm)
        groups.append((p, n_k))
        expected += p * n_k
    p_value = None
    obs = None
    if observed is not None:
        obs = check_count(observed, "observed")
        p_value = _count_tail(groups, obs)
    return ConsensusExpectation(int(ks.size), mm, acc, float(expected), obs, p_value)


def expected_suspects_given_errors(wrong_counts: Any, n_options: Any, m: int,
                                   observed: int | None = None) -> ConsensusExpectation:
    """Expected suspects given w_i, the strong models that missed the gold on item i.

    expected = sum_i P(max occupancy >= m | w_i picks uniform over K_i - 1 wrong options),
    = sum_i flag_probability([0] * w_i, K_i, m); p_value = P(X >= observed), X the
    Poisson-binomial count (exact: items with equal (w, K) form binomial groups).
    ``accuracies`` of the result is empty (this model does not use them).
    """
    w = np.asarray(wrong_counts, dtype="int64").ravel()
    ks = np.broadcast_to(np.asarray(n_options, dtype="int64"), w.shape).ravel()
    if (w < 0).any():
        raise StatsInputError("wrong_counts must be counts >= 0")
    mm = _check_m(m)
    groups: list[tuple[float, int]] = []
    expected = 0.0
    pairs = np.stack([w, ks], axis=1) if w.size else np.empty((0, 2), dtype="int64")
    for (wi, k), n_g in zip(*np.unique(pairs, axis=0, return_counts=True)) if w.size else []:
        p = flag_probability([0.0] * int(wi), int(k), mm) if wi >= mm else 0.0
        groups.append((p, int(n_g)))
        expected += p * int(n_g)
    obs = None if observed is None else check_count(observed, "observed")
    p_value = None if obs is None else _count_tail(groups, obs)
    return ConsensusExpectation(int(w.size), mm, (), float(expected), obs, p_value,
                                CONDITIONAL_MODEL)


def default_strong_size(n_models: int, m: int = DEFAULT_M) -> int:
    """The default number of strong models: the better half, at least m (all when fewer)."""
    n = check_count(n_models, "n_models")
    return min(n, max(_check_m(m), math.ceil(n / 2)))
