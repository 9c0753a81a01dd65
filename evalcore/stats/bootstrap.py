"""Vectorised bootstrap over items (or whole clusters): percentile and BCa intervals, rank intervals.

Resampling uses index matrices (one row of item or cluster indices per resample), processed in
chunks so memory stays bounded (about ``CHUNK_ELEMENTS`` indices at a time); there is no Python
loop per resample. Randomness comes only from ``numpy.random.default_rng(seed)``.

Two shortcuts give the same bootstrap distribution with far less work:

- 0/1 scores, mean, items resampled iid: the number of 1s among n items drawn with replacement
  from data with k ones is Binomial(n, k/n), so each resample's count is drawn directly, by
  inversion of the Binomial(n, k/n) CDF at one uniform per resample
  (:func:`bootstrap_proportions`; ``bootstrap_interval`` takes this path for 1-D 0/1 scores
  without clusters). The uniforms are ``default_rng(seed).random(n_resamples)`` for every
  cell, so the result depends only on (k, n, n_resamples, seed), and a whole board of cells
  costs one CDF table per distinct (n, k) instead of n_resamples binomial draws per cell.
- many runs on the same items (:func:`bootstrap_means_shared`, :func:`paired_bootstrap_ranks`):
  one index matrix per resample batch is tallied into draw counts W (resamples x units) and
  every run's resampled mean is one matrix product, W @ unit_sums / W @ unit_sizes. The draws
  are those ``bootstrap_interval`` makes for one run with the same seed and n, so the shared
  result equals the per-run one up to floating-point summation order.

References: Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13-14 (percentile
and BCa); Davison & Hinkley (1997) sec. 3.8 (resampling whole clusters); Miller (2024), "Adding
Error Bars to Evals", arXiv:2411.00640 (clustered items in evals).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import rankdata

from evalcore.stats._checks import (StatsInputError, as_clusters, check_confidence, check_count)
from evalcore.stats.bootstrap_binomial import (CHUNK_ELEMENTS, BootstrapColumns, binomial_draws,
                                              binomial_percentiles, check_settings, is_binary,
                                              percentile_columns)



@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap interval with the settings that produced it.

    Attributes
    ----------
    estimate : the statistic on the original data.
    low, high : interval bounds.
    se : standard deviation (ddof=1) of the bootstrap distribution.
    method : "bootstrap-percentile" or "bootstrap-bca".
    n : number of items; n_clusters : G when whole clusters were resampled, else None.
    confidence, n_resamples, seed : as requested.
    detail : empty, or a caveat (e.g. zero-width because every resample is identical).
    """

    estimate: float
    low: float
    high: float
    se: float
    method: str
    n: int
    confidence: float
    n_resamples: int
    seed: int
    n_clusters: int | None = None
    detail: str = ""

    @property
    def label(self) -> str:
        unit = f"{self.n_clusters} clusters" if self.n_clusters else f"{self.n} items"
        kind = "BCa" if self.method.endswith("bca") else "percentile"
        return f"bootstrap {kind} over {unit}, {self.n_resamples} resamples, seed {self.seed}"


def mean_difference(sample: np.ndarray, axis: int = 1) -> np.ndarray:
    """Paired statistic for 2-D data with two columns (a, b): mean(b) - mean(a) along ``axis``.

    ``sample`` has shape (..., n, 2); the item axis is ``axis``. Recognised by
    :func:`bootstrap_interval` and resampled on the fast path (it is the mean of d_i = b_i - a_i).
    """
    s = np.asarray(sample, dtype=float)
    return np.mean(s[..., 1] - s[..., 0], axis=axis)


def _mean_like(statistic: Any) -> bool:
    return statistic is None or statistic is np.mean or statistic == "mean"


def _per_item_values(x: np.ndarray, statistic: Any) -> np.ndarray | None:
    """Reduce to one value per item when the statistic is a mean of per-item values."""
    if _mean_like(statistic):
        return x if x.ndim == 1 else x.mean(axis=1)
    if statistic is mean_difference:
        if x.ndim != 2 or x.shape[1] != 2:
            raise StatsInputError("mean_difference needs 2-D scores with exactly two columns (a, b)")
        return x[:, 1] - x[:, 0]
    return None


def _draw(rng: np.random.Generator, high: int, rows: int, cols: int) -> np.ndarray:
    """Index matrix of ``rows`` resamples of ``cols`` draws from range(high) (int32: faster gathers)."""
    return rng.integers(0, high, size=(rows, cols), dtype=np.int32)


def _chunks(total: int, per_row: int) -> list[int]:
    size = max(1, min(total, CHUNK_ELEMENTS // max(1, per_row)))
    out = [size] * (total // size)
    if total % size:
        out.append(total % size)
    return out


def _resample_means(v: np.ndarray, codes: np.ndarray | None, g: int, n_resamples: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution of the mean of v: items iid, or whole clusters (ratio of sums)."""
    out = np.empty(n_resamples)
    pos = 0
    if codes is None:
        n = v.size
        for c in _chunks(n_resamples, n):
            idx = _draw(rng, n, c, n)
            out[pos:pos + c] = v[idx].mean(axis=1)
            pos += c
    else:
        sums = np.bincount(codes, weights=v, minlength=g)
        sizes = np.bincount(codes, minlength=g).astype(float)
        equal = bool(np.all(sizes == sizes[0]))
        # one gather for numerator and denominator: cluster sum + 1j * cluster size
        packed = sums + 1j * sizes
        for c in _chunks(n_resamples, g):
            idx = _draw(rng, g, c, g)
            if equal:
                out[pos:pos + c] = sums[idx].sum(axis=1) / (g * sizes[0])
            else:
                tot = packed[idx].sum(axis=1)
                out[pos:pos + c] = tot.real / tot.imag
            pos += c
    return out


def _draw_counts(rng: np.random.Generator, m_units: int, rows: int) -> np.ndarray:
    """Draw counts (rows x m_units, float32: small whole numbers, exact) of ``rows``
    resamples of m_units units: the index draws of :func:`_draw`, tallied with one bincount."""
    idx = _draw(rng, m_units, rows, m_units)
    offsets = (np.arange(rows, dtype=np.int64) * m_units)[:, None]
    w = np.bincount((idx + offsets).ravel(), minlength=rows * m_units)
    return w.reshape(rows, m_units).astype(np.float32)


def _call_statistic(statistic: Callable[..., Any], sample: np.ndarray) -> np.ndarray:
    res = np.asarray(statistic(sample, axis=1), dtype=float)
    if res.shape != (sample.shape[0],):
        raise StatsInputError(
            "statistic must be vectorised: statistic(sample, axis=1) on an array of shape "
            f"{sample.shape} must return shape ({sample.shape[0]},), got {res.shape}. "
            "For 2-D paired data use evalcore.stats.mean_difference or reduce both axes.")
    return res


def _resample_generic(x: np.ndarray, statistic: Callable[..., Any], n_resamples: int,
                      rng: np.random.Generator) -> np.ndarray:
    n = x.shape[0]
    per_row = x.size
    out = np.empty(n_resamples)
    pos = 0
    for c in _chunks(n_resamples, per_row):
        idx = _draw(rng, n, c, n)
        out[pos:pos + c] = _call_statistic(statistic, x[idx])
        pos += c
    return out


def _jackknife_generic(x: np.ndarray, statistic: Callable[..., Any]) -> np.ndarray:
    n = x.shape[0]
    base = np.arange(n - 1)
    out = np.empty(n)
    for start in range(0, n, max(1, CHUNK_ELEMENTS // max(1, x.size))):
        rows = np.arange(start, min(n, start + max(1, CHUNK_ELEMENTS // max(1, x.size))))
        idx = base[None, :] + (base[None, :] >= rows[:, None])
        out[rows] = _call_statistic(statistic, x[idx])
    return out


def _bca_bounds(theta_b: np.ndarray, theta_hat: float, jack: np.ndarray,
                alpha: float) -> tuple[float, float, str]:
    """BCa percentiles (Efron 1987); z0 with ties counted half, as scipy.stats.bootstrap does."""
    b = theta_b.size
    prop = (np.sum(theta_b < theta_hat) + np.sum(theta_b <= theta_hat)) / (2.0 * b)
    z0 = float(ndtri(prop))
    d = jack.mean() - jack
    denom = np.sum(d ** 2) ** 1.5
    acc = float(np.sum(d ** 3) / (6.0 * denom)) if denom > 0 else 0.0
    note = ""
    if not np.isfinite(z0):
        note = "BCa bias correction is infinite (estimate outside the bootstrap distribution); " \
               "percentile bounds used"
        return float(np.quantile(theta_b, alpha / 2)), float(np.quantile(theta_b, 1 - alpha / 2)), note
    qs = []
    for za in (ndtri(alpha / 2), ndtri(1 - alpha / 2)):
        qs.append(float(ndtr(z0 + (z0 + za) / (1.0 - acc * (z0 + za)))))
    return float(np.quantile(theta_b, qs[0])), float(np.quantile(theta_b, qs[1])), note


def bootstrap_interval(scores: Any, statistic: Callable[..., Any] | str | None = np.mean,
                       confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                       method: str = "percentile", clusters: Any = None) -> BootstrapResult:
    """Bootstrap confidence interval for a statistic of per-item scores.

    Resamples n items with replacement (or, with ``clusters``, G whole clusters with replacement,
    keeping every item of a drawn cluster), ``n_resamples`` times with
    ``numpy.random.default_rng(seed)``, and reports the intervals below. For 1-D 0/1 scores
    without clusters and a mean statistic, each resample's mean is drawn directly as
    Binomial(n, k/n)/n: the same distribution as resampling the items, other random draws
    than the index path (inversion of the binomial CDF, see :func:`bootstrap_proportions`).

    - percentile: the alpha/2 and 1-alpha/2 quantiles of the bootstrap distribution;
    - BCa: quantiles at Phi(z0 + (z0 + z_q)/(1 - a (z0 + z_q))), with bias correction
      z0 = Phi^-1(share of resamples below the estimate, ties counted half) and acceleration
      a = sum(d^3) / (6 (sum d^2)^1.5), d = mean(jackknife) - jackknife, the jackknife leaving out
      one item (one whole cluster when clustered). Efron (1987), JASA 82:171.

    Parameters
    ----------
    scores : 1-D per-item scores, or 2-D items x columns (paired runs, or K answers per item);
        rows are resampled together, so every column sees the same items.
    statistic : ``np.mean`` (default; for 2-D data the mean of all entries, i.e. of the
        item means), :func:`mean_difference` (2-D with columns a, b: mean(b - a)), or any
        vectorised callable ``statistic(sample, axis=1)`` that reduces an array of shape
        (batch, n) or (batch, n, columns) to shape (batch,) (like
        ``scipy.stats.bootstrap(vectorized=True)``; e.g. ``np.median``).
        With ``clusters`` only the mean-type statistics are supported (cluster resamples
        differ in size, so the statistic is a ratio of resampled cluster sums).
    confidence : in (0, 1). n_resamples : >= 100. seed : integer seed.
    method : "percentile" or "bca".
    clusters : optional cluster label per item.

    Edge cases
    ----------
    Constant scores (e.g. all 0): every resample is identical and the interval has zero width;
    ``detail`` says so (for 0/1 scores prefer a Wilson interval). BCa needs n >= 2 (G >= 2).
    Raises StatsInputError for NaN, empty input, fewer than 2 clusters, unknown method, or a
    statistic that is not vectorised.
    """
    conf, b, seed_i = check_settings(confidence, n_resamples, seed)
    if method not in ("percentile", "bca"):
        raise StatsInputError(f"method must be 'percentile' or 'bca', got {method!r}")
    if isinstance(statistic, str) and statistic != "mean":
        raise StatsInputError(f"unknown statistic {statistic!r}; pass 'mean' or a callable")
    x = _scores_array(scores)
    n = x.shape[0]
    rng = np.random.default_rng(seed_i)
    v = _per_item_values(x, statistic)
    codes, g = _cluster_codes(clusters, n, v)
    if method == "bca" and n < 2:
        raise StatsInputError("BCa needs at least 2 items")

    if v is not None and codes is None and x.ndim == 1 and is_binary(v):
        # 0/1 scores: each resample's count of 1s is Binomial(n, k/n) (module docstring)
        theta_hat = float(v.mean())
        k = float(np.round(v.sum()))
        if method == "percentile":
            return _binary_percentile(theta_hat, n, k, b, seed_i, conf)
        theta_b = binomial_draws(n, k, b, seed_i) / n
    elif v is not None:
        theta_hat = float(v.mean())
        theta_b = _resample_means(v, codes, g, b, rng)
    else:
        assert callable(statistic)
        theta_hat = float(_call_statistic(statistic, x[None, ...])[0])
        theta_b = _resample_generic(x, statistic, b, rng)

    alpha = 1.0 - conf
    detail = ""
    if method == "percentile":
        low, high = (float(q) for q in np.quantile(theta_b, [alpha / 2, 1 - alpha / 2]))
    else:
        jack = _jackknife(x, v, codes, g, statistic)
        low, high, detail = _bca_bounds(theta_b, theta_hat, jack, alpha)
    if np.ptp(theta_b) == 0.0:
        detail = _ZERO_WIDTH
    return BootstrapResult(estimate=theta_hat, low=low, high=high,
                           se=float(np.std(theta_b, ddof=1)), method=f"bootstrap-{method}", n=n,
                           confidence=conf, n_resamples=b, seed=seed_i,
                           n_clusters=g if codes is not None else None, detail=detail)


_ZERO_WIDTH = ("zero-width: every resample gives the same value (constant scores); the "
               "bootstrap cannot express uncertainty here")


def _scores_array(scores: Any) -> np.ndarray:
    """``scores`` as a float array, 1-D or 2-D, non-empty, finite (StatsInputError else)."""
    try:
        x = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(f"scores must be numbers: {exc}") from None
    if x.ndim not in (1, 2) or x.shape[0] == 0 or x.size == 0:
        raise StatsInputError(f"scores must be a non-empty 1-D or 2-D array, got shape {x.shape}")
    if np.isnan(x).any() or np.isinf(x).any():
        raise StatsInputError("scores contain NaN or infinite values; restrict to complete items first")
    return x


def _cluster_codes(clusters: Any, n: int, v: np.ndarray | None) -> tuple[np.ndarray | None, int]:
    """Integer cluster codes and G (None, 0 without clusters); a clustered bootstrap needs
    G >= 2 and a mean-type statistic (``v``, the per-item values, not None)."""
    if clusters is None:
        return None, 0
    codes, g = as_clusters(clusters, n)
    if g < 2:
        raise StatsInputError("a clustered bootstrap needs at least 2 clusters")
    if v is None:
        raise StatsInputError("with clusters, the bootstrap supports the mean (np.mean) and "
                              "mean_difference only")
    return codes, g


def _binary_percentile(theta_hat: float, n: int, k: float, b: int, seed: int,
                       conf: float) -> BootstrapResult:
    """The percentile interval of n 0/1 scores with k ones, as ``bootstrap_proportions``
    gives it, bit for bit (the binomial draws of ``bootstrap_binomial``)."""
    got = binomial_percentiles(np.array([float(n)]), np.array([k]), b, seed, conf)
    return BootstrapResult(estimate=theta_hat, low=float(got.low[0]), high=float(got.high[0]),
                           se=float(got.se[0]), method="bootstrap-percentile", n=n,
                           confidence=conf, n_resamples=b, seed=seed, n_clusters=None,
                           detail=_ZERO_WIDTH if got.zero_width[0] else "")


def _jackknife(x: np.ndarray, v: np.ndarray | None, codes: np.ndarray | None, g: int,
               statistic: Any) -> np.ndarray:
    """Leave-one-out estimates for BCa's acceleration: one item out (one whole cluster out
    when clustered); a generic statistic is recomputed on each leave-one-out sample."""
    n = x.shape[0]
    if v is not None and codes is None:
        return (v.sum() - v) / (n - 1)
    if v is not None:
        sums = np.bincount(codes, weights=v, minlength=g)
        sizes = np.bincount(codes, minlength=g).astype(float)
        return (sums.sum() - sums) / (sizes.sum() - sizes)
    assert callable(statistic)
    return _jackknife_generic(x, statistic)


def bootstrap_means_shared(matrix: Any, confidence: float = 0.95, n_resamples: int = 2000,
                           seed: int = 0) -> BootstrapColumns:
    """Percentile bootstrap intervals of the mean of every column of an items x runs matrix,
    the same resampled items for every column.

    One index draw per resample (as :func:`bootstrap_interval` draws it for one column of n
    items with this seed), tallied into draw counts W (resamples x items); the resampled means
    of all columns are W @ X / n, one matrix product per chunk of resamples. Each column's
    interval therefore equals ``bootstrap_interval(X[:, j], seed=seed)`` for continuous scores
    up to floating-point summation order. No NaN allowed (restrict to a run's own items).
    """
    conf, b, seed_i = check_settings(confidence, n_resamples, seed)
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        raise StatsInputError(f"matrix must be 2-D (items x runs), got shape {x.shape}")
    if np.isnan(x).any() or np.isinf(x).any():
        raise StatsInputError("matrix contains NaN/inf")
    n, r = x.shape
    rng = np.random.default_rng(seed_i)
    theta_b = np.empty((r, b))
    pos = 0
    for c in _chunks(b, n):
        w = _draw_counts(rng, n, c)
        theta_b[:, pos:pos + c] = (w @ x).T / n
        pos += c
    return percentile_columns(theta_b, x.mean(axis=0), conf, b, seed_i)


@dataclass(frozen=True)
class RankIntervals:
    """Per-run rank (1 = best) with a paired-bootstrap rank interval.

    Attributes (tuples in the column order of the input matrix)
    ----------
    means : observed mean per run.
    rank : observed competition rank ("min" method: ties share the best rank).
    rank_low, rank_high : lower/upper quantiles of the bootstrap ranks (integers; the lower
        quantile rounds down and the upper rounds up, so the interval is conservative).
    n, n_runs, n_clusters, confidence, n_resamples, seed, method.
    """

    means: tuple[float, ...]
    rank: tuple[int, ...]
    rank_low: tuple[int, ...]
    rank_high: tuple[int, ...]
    n: int
    n_runs: int
    confidence: float
    n_resamples: int
    seed: int
    n_clusters: int | None = None
    method: str = "paired-bootstrap"


def paired_bootstrap_ranks(matrix: Any, n_resamples: int = 2000, seed: int = 0,
                           confidence: float = 0.95, clusters: Any = None,
                           higher_is_better: bool = True) -> RankIntervals:
    """Rank intervals for runs scored on the same items, from a paired bootstrap.

    Every resample draws one set of items (or whole clusters) and applies it to every run, so
    the rank uncertainty reflects only how the runs differ on shared items; per resample each
    run's mean is ranked (rank 1 = best, ties share the lowest rank), and the rank interval is
    the (alpha/2, 1 - alpha/2) quantile range of those ranks. Reference: Hall & Miller (2009),
    "Using the bootstrap to quantify the authority of an empirical ranking", Ann. Stat. 37:3929.

    Parameters
    ----------
    matrix : items x runs, no NaN (restrict to items every run answered).
    clusters : optional cluster label per item (whole-cluster resampling).
    higher_is_better : False for metrics where lower is better (perplexity, error rate).
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise StatsInputError(f"matrix must be 2-D (items x runs), got shape {x.shape}")
    if np.isnan(x).any() or np.isinf(x).any():
        raise StatsInputError("matrix contains NaN/inf; restrict to items every run answered")
    conf = check_confidence(confidence)
    b = check_count(n_resamples, "n_resamples")
    if b < 100:
        raise StatsInputError(f"n_resamples must be at least 100, got {b}")
    seed_i = check_count(seed, "seed")
    n, r = x.shape
    sign = 1.0 if higher_is_better else -1.0
    rng = np.random.default_rng(seed_i)
    means_obs = x.mean(axis=0)
    rank_obs = rankdata(-sign * means_obs, method="min").astype(int)
    ranks = np.empty((b, r), dtype=np.int64)
    pos = 0
    g = None
    # Each resample's draw counts W (resamples x units) are tallied with one bincount, and
    # the resampled means of all runs are one matrix product: W @ unit_sums / W @ unit_sizes.
    if clusters is None:
        units, sizes, m_units = x, np.ones(n), n
    else:
        codes, g = as_clusters(clusters, n)
        if g < 2:
            raise StatsInputError("a clustered bootstrap needs at least 2 clusters")
        units = np.zeros((g, r))
        np.add.at(units, codes, x)
        sizes = np.bincount(codes, minlength=g).astype(float)
        m_units = g
    # Every run of a resample shares the denominator W @ unit_sizes (> 0), so the ranks are
    # those of the numerators W @ unit_sums. float32 products when every unit sum is a whole
    # number and all sums stay below 2^24 (0/1 scores): exact, at half the work of float64.
    # (a resample's counts add up to m_units, so |W @ u| <= m_units * max |u|)
    whole = bool(np.all(units == np.round(units)) and np.abs(units).max() * m_units < 2 ** 24)
    units_w = units.astype(np.float32) if whole else units
    for c in _chunks(b, m_units):
        w = _draw_counts(rng, m_units, c)
        ranks[pos:pos + c] = rankdata(-sign * (w @ units_w), method="min", axis=1)
        pos += c
    alpha = 1.0 - conf
    low = np.quantile(ranks, alpha / 2, axis=0, method="lower").astype(int)
    high = np.quantile(ranks, 1 - alpha / 2, axis=0, method="higher").astype(int)
    # the observed rank always lies in its interval (the observed data is one possible resample)
    low = np.minimum(low, rank_obs)
    high = np.maximum(high, rank_obs)
    return RankIntervals(means=tuple(float(m) for m in means_obs),
                         rank=tuple(int(v) for v in rank_obs),
                         rank_low=tuple(int(v) for v in low), rank_high=tuple(int(v) for v in high),
                         n=n, n_runs=r, confidence=conf, n_resamples=b, seed=seed_i, n_clusters=g)
