"""Input checks shared by the statistics modules, and the one error type they raise.

Every public function in ``evalcore.stats`` validates its inputs here and raises
:class:`StatsInputError` for impossible requests (n = 0, successes > n, mismatched lengths,
NaN where a number is required, a confidence outside (0, 1), ...).

``StatsInputError`` subclasses both :class:`evalcore.errors.AnalysisError` (so pages and the
CLI render it as a message, like every project error) and :class:`ValueError` (so a notebook
user can catch it the way numpy/scipy errors are caught).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from scipy.special import ndtri

from evalcore.errors import AnalysisError


class StatsInputError(AnalysisError, ValueError):
    """Inputs a statistic cannot be computed from; the message says which and why."""


def check_confidence(confidence: float) -> float:
    """Return ``confidence`` as a float in (0, 1) or raise."""
    if isinstance(confidence, bool) or not isinstance(confidence, Real):
        raise StatsInputError(f"confidence must be a number in (0, 1), got {confidence!r}")
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise StatsInputError(f"confidence must lie strictly between 0 and 1, got {c}")
    return c


def z_value(confidence: float) -> float:
    """Two-sided normal quantile z_{1 - alpha/2} for ``confidence = 1 - alpha`` (1.96 at 95%)."""
    c = check_confidence(confidence)
    return float(ndtri(0.5 + c / 2.0))


def check_count(value: Any, name: str) -> int:
    """An integer-valued count (int, numpy int, or a float equal to an int) as ``int``."""
    if isinstance(value, bool):
        raise StatsInputError(f"{name} must be an integer count, got a bool")
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        f = float(value)
        if math.isnan(f):
            raise StatsInputError(f"{name} is NaN; a count is required")
        if f.is_integer():
            return int(f)
    raise StatsInputError(f"{name} must be an integer count, got {value!r}")


def check_successes(successes: Any, n: Any) -> tuple[int, int]:
    """Validate a binomial count ``0 <= successes <= n``, ``n >= 1``."""
    k = check_count(successes, "successes")
    m = check_count(n, "n")
    if m <= 0:
        raise StatsInputError(f"n must be at least 1 to estimate a proportion, got n = {m}")
    if k < 0:
        raise StatsInputError(f"successes must be >= 0, got {k}")
    if k > m:
        raise StatsInputError(f"successes ({k}) cannot exceed n ({m})")
    return k, m


def as_scores(values: Any, name: str = "scores", *, allow_nan: bool = False,
              min_n: int = 1) -> np.ndarray:
    """A 1-D float array of per-item scores; raise on wrong shape, too few items or NaN/inf."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"{name} must be numbers: {exc}") from None
    if x.ndim != 1:
        raise StatsInputError(f"{name} must be a 1-D sequence of per-item scores, got shape {x.shape}")
    if x.size < min_n:
        raise StatsInputError(f"{name} needs at least {min_n} item(s), got {x.size}")
    if not allow_nan and np.isnan(x).any():
        raise StatsInputError(f"{name} contains NaN (missing scores); drop or fill them first")
    if np.isinf(x).any():
        raise StatsInputError(f"{name} contains infinite values")
    return x


def as_matrix(values: Any, name: str = "scores", *, allow_nan: bool = False) -> np.ndarray:
    """A 2-D float array (items x runs/answers); raise on wrong shape or NaN when not allowed."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"{name} must be numbers: {exc}") from None
    if x.ndim != 2:
        raise StatsInputError(f"{name} must be a 2-D array (items x columns), got shape {x.shape}")
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise StatsInputError(f"{name} is empty (shape {x.shape})")
    if not allow_nan and np.isnan(x).any():
        raise StatsInputError(f"{name} contains NaN (missing scores); restrict to complete items first")
    if np.isinf(x).any():
        raise StatsInputError(f"{name} contains infinite values")
    return x


def as_clusters(clusters: Any, n: int) -> tuple[np.ndarray, int]:
    """Cluster labels -> (integer codes 0..G-1 per item, G). Labels may be any hashable values."""
    labels = np.asarray(clusters)
    if labels.ndim != 1:
        raise StatsInputError(f"clusters must be a 1-D sequence of labels, got shape {labels.shape}")
    if labels.size != n:
        raise StatsInputError(f"clusters has {labels.size} labels but there are {n} items")
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise StatsInputError("clusters contains NaN labels; every item needs a cluster")
    if labels.dtype.kind == "O" and any(lab is None for lab in labels):
        raise StatsInputError("clusters contains None labels; every item needs a cluster")
    try:
        _, codes = np.unique(labels, return_inverse=True)
    except TypeError:
        # mixed label types: fall back to a dict of first appearance
        seen: dict[Any, int] = {}
        codes = np.array([seen.setdefault(lab, len(seen)) for lab in labels.tolist()])
    codes = np.asarray(codes, dtype=np.intp).reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


def same_length(a: np.ndarray, b: np.ndarray, name_a: str = "a", name_b: str = "b") -> None:
    if a.shape[0] != b.shape[0]:
        raise StatsInputError(
            f"{name_a} and {name_b} must score the same items: lengths {a.shape[0]} and {b.shape[0]}")


def is_binary(x: np.ndarray) -> bool:
    """True when every value is exactly 0 or 1 (NaN-free input assumed)."""
    return bool(np.all((x == 0.0) | (x == 1.0)))


def in_unit_interval(x: np.ndarray) -> bool:
    return bool(np.all((x >= 0.0) & (x <= 1.0)))


def clip_unit(low: float, high: float) -> tuple[float, float]:
    return max(0.0, min(1.0, low)), max(0.0, min(1.0, high))
