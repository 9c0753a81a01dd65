"""Two runs on the same items: paired difference with its SE, and McNemar's test for 0/1 scores.

Pairing removes item difficulty from the comparison: hard items are hard for both runs, so the
per-item differences d_i = x_Bi - x_Ai vary much less than either run's scores.
References: Miller (2024), "Adding Error Bars to Evals", arXiv:2411.00640, sec. 4 (paired
differences); McNemar (1947), Psychometrika 12:153; Fagerland, Lydersen & Laake (2013), "The
McNemar test for binary matched-pairs data: mid-p and asymptotic are better than exact
conditional", BMC Med. Res. Methodol. 13:91.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr
from scipy.stats import binom

from evalcore.stats._checks import (StatsInputError, as_clusters, as_scores, check_confidence,
                                    check_count, is_binary, same_length, z_value)
from evalcore.stats._distributions import binom_cdf, binom_pmf, chi2_sf, t_ppf, t_sf
from evalcore.stats.clustered import (cluster_t_value, clustered_interval,
                                      clustered_variance_of_mean)


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on the discordant counts b and c.

    p_exact : two-sided exact (binomial) p = min(1, 2 * BinomCDF(min(b, c); b + c, 1/2)).
    p_midp : mid-p = min(1, 2 * BinomCDF(min(b, c)) - BinomPMF(min(b, c))).
    chi2_cc : (|b - c| - 1)^2 / (b + c) with continuity correction (0 when b = c, as R's
        mcnemar.test applies the correction only when b != c); p_chi2_cc its chi^2_1 tail.
    b + c = 0: no discordant items, no evidence: every p is 1 and chi2_cc = 0.
    """

    b: int
    c: int
    p_exact: float
    p_midp: float
    chi2_cc: float
    p_chi2_cc: float

    @property
    def n_discordant(self) -> int:
        return self.b + self.c


def mcnemar(b: int, c: int) -> McNemarResult:
    """McNemar's test for paired 0/1 scores from the discordant counts.

    b = items only B got right, c = items only A got right (the test is symmetric in b and c).
    Exact p: min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); mid-p: the same with half
    the probability of the observed value (Fagerland et al. 2013, recommended); chi-square with
    continuity correction (Edwards 1948): (|b - c| - 1)^2 / (b + c) on 1 df, the R default
    ``mcnemar.test(correct = TRUE)`` (which skips the correction when b = c).
    Only the b + c discordant items carry evidence. b + c = 0 gives p = 1 everywhere.
    """
    bi, ci = check_count(b, "b"), check_count(c, "c")
    if bi < 0 or ci < 0:
        raise StatsInputError(f"discordant counts must be >= 0, got b={bi}, c={ci}")
    m = bi + ci
    if m == 0:
        return McNemarResult(bi, ci, 1.0, 1.0, 0.0, 1.0)
    lo = min(bi, ci)
    cdf = binom_cdf(lo, m, 0.5)
    p_exact = min(1.0, 2.0 * cdf)
    p_midp = min(1.0, 2.0 * cdf - binom_pmf(lo, m, 0.5))
    corr = 1.0 if bi != ci else 0.0
    stat = (abs(bi - ci) - corr) ** 2 / m
    return McNemarResult(bi, ci, p_exact, p_midp, float(stat), chi2_sf(stat, 1))


def mcnemar_exact_p(b: Any, c: Any) -> np.ndarray:
    """Exact two-sided McNemar p-values for arrays of discordant counts, elementwise.

    p = min(1, 2 * BinomCDF(min(b, c); b + c, 1/2)), and p = 1 where b + c = 0: the same rule
    as :func:`mcnemar`'s ``p_exact``, for a whole leaderboard's (b, c) pairs in one call.
    """
    bi = np.atleast_1d(np.asarray(b))
    ci = np.atleast_1d(np.asarray(c))
    if bi.shape != ci.shape:
        raise StatsInputError(f"b and c must have the same shape, got {bi.shape} and {ci.shape}")
    if bi.size and (np.any(bi < 0) or np.any(ci < 0) or np.any(bi != np.round(bi))
                    or np.any(ci != np.round(ci))):
        raise StatsInputError("discordant counts must be whole numbers >= 0")
    bi, ci = bi.astype(np.int64), ci.astype(np.int64)
    m = bi + ci
    # binom.cdf's own computation (``_cdf``, clipped to [0, 1]) without its argument checks:
    # min(b, c) <= m/2 lies inside the support, so the numbers are binom.cdf's bit for bit
    cdf = np.clip(binom._cdf(np.minimum(bi, ci).astype(float), np.maximum(m, 1), 0.5), 0, 1)
    p = np.minimum(1.0, 2.0 * cdf)
    return np.where(m == 0, 1.0, p).astype(float)


def normal_p_value(estimate: Any, se: Any) -> np.ndarray:
    """Two-sided normal (Wald) p-values 2 * Phi(-|estimate / se|), elementwise.

    For differences known only through an estimate and its standard error (macro averages,
    aggregates computed in SQL, harness-reported stderrs). se = 0 gives p = 1 if the estimate
    is 0, else 0; NaN or infinite input gives NaN. The rule :func:`paired_difference` uses.
    """
    d = np.atleast_1d(np.asarray(estimate, dtype=float))
    s = np.atleast_1d(np.asarray(se, dtype=float))
    d, s = np.broadcast_arrays(d, s)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * ndtr(-np.abs(d / s))
    p = np.where(s == 0, np.where(d == 0, 1.0, 0.0), p)
    ok = np.isfinite(d) & np.isfinite(s) & (s >= 0)
    return np.where(ok, p, np.nan).astype(float)


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, NaN (not a warning) when either vector is constant (or so nearly
    constant that its spread underflows) or n < 2."""
    if a.size < 2:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    saa, sbb = float(np.dot(da, da)), float(np.dot(db, db))
    # sqrt of each factor, in Python floats: the product of two tiny sums of squares can
    # underflow to 0 (a divide-by-zero RuntimeWarning before)
    denom = math.sqrt(saa) * math.sqrt(sbb)
    if not denom > 0.0 or not math.isfinite(denom):
        return float("nan")
    return min(1.0, max(-1.0, float(np.dot(da, db)) / denom))


@dataclass(frozen=True)
class PairedDifference:
    """Paired difference B - A over shared items.

    Attributes
    ----------
    diff : mean(d), d_i = b_i - a_i.
    se : the SE behind the interval and p: the paired SE sd(d, ddof=1)/sqrt(n), or with
        clusters the one :func:`evalcore.stats.clustered_interval` picks (the clustered SE,
        or the iid one when G < 30 and the iid interval is wider).
    low, high : the interval (not clipped; a difference of proportions lies in [-1, 1]):
        diff -+ q * se with q = z (0/1 scores, or n >= 30), t_{n-1} (other scores, n < 30);
        with clusters see ``clustered_interval`` (t_{G-1}).
    se_iid : sd(d, ddof=1)/sqrt(n). se_clustered : the CR1 clustered SE of d (NaN without
        clusters).
    quantile : the q used; df : its degrees of freedom (None for the normal quantile).
    se_unpaired : sqrt(SE_A^2 + SE_B^2) (each sd(ddof=1)/sqrt(n)).
    correlation : Pearson correlation of a and b (NaN when either is constant).
    n : number of paired items. confidence.
    mean_a, mean_b : the two scores.
    z, p_value : diff / se and its two-sided p (normal, or t with ``df``); se = 0: p = 1 if
        diff = 0 else 0.
    b, c : items only B right / only A right (None unless both runs are 0/1).
    mcnemar : McNemarResult for 0/1 scores, else None.
    n_clusters : G when clustered, else None.
    method : "paired" or "paired-clustered". detail : caveats and the interval rule in words.
    """

    diff: float
    se: float
    low: float
    high: float
    se_unpaired: float
    correlation: float
    n: int
    confidence: float
    mean_a: float
    mean_b: float
    z: float
    p_value: float
    b: int | None = None
    c: int | None = None
    mcnemar: McNemarResult | None = None
    n_clusters: int | None = None
    method: str = "paired"
    detail: str = ""
    se_iid: float = float("nan")
    se_clustered: float = float("nan")
    quantile: float = float("nan")
    df: int | None = None

    @property
    def pairing_gain(self) -> float:
        """se_unpaired / se: how many times smaller the paired error bar is."""
        if not self.se > 0:
            return float("nan")
        return self.se_unpaired / self.se


# Below this many items a mean of continuous scores uses t quantiles with n - 1 df.
SMALL_N = 30


def mean_quantile(confidence: float, n: int, binary: bool) -> tuple[float, int | None]:
    """(q, df) for an interval of a mean of n per-item values: z for 0/1 values or n >= 30,
    else t_{n-1, 1-alpha/2} with df = n - 1 (Student's t for the mean of a small sample).
    n < 2 gives z (the SE is undefined anyway)."""
    conf = check_confidence(confidence)
    if binary or n >= SMALL_N or n < 2:
        return z_value(conf), None
    return t_ppf(0.5 + conf / 2.0, n - 1), n - 1


def mean_quantiles(confidence: float, n: Any, binary: Any) -> np.ndarray:
    """:func:`mean_quantile`'s q for many means at once (arrays of item counts and 0/1
    flags): z where the values are 0/1, n >= 30 or n < 2, else t_{n-1, 1-alpha/2}, computed
    once per distinct n."""
    conf = check_confidence(confidence)
    n = np.asarray(n, dtype=np.int64)
    small = ~np.asarray(binary, dtype=bool) & (n < SMALL_N) & (n >= 2)
    q = np.full(n.shape, z_value(conf))
    if small.any():
        distinct, at = np.unique(n[small], return_inverse=True)
        q[small] = np.array([t_ppf(0.5 + conf / 2.0, int(m) - 1) for m in distinct])[at]
    return q


def _two_sided_p(stat: float, df: int | None) -> float:
    if df is None:
        return float(2.0 * ndtr(-abs(stat)))
    return 2.0 * t_sf(abs(stat), df)


def _test(diff: float, se: float, df: float | None, notes: list[str]) -> tuple[float, float]:
    """The test statistic diff / se and its two-sided p (t with ``df`` when given, else
    normal); a zero SE gives an infinite statistic (or 0 for a zero difference) and a note."""
    if math.isnan(se):
        return float("nan"), float("nan")
    if se == 0.0:
        notes.append("no spread in the per-item differences: the interval is zero-width, "
                     "which is no result (bound the discordance rate instead)")
        return (0.0 if diff == 0.0 else math.copysign(math.inf, diff)), (1.0 if diff == 0.0 else 0.0)
    zstat = diff / se
    return zstat, _two_sided_p(zstat, df)


def paired_difference(a: Any, b: Any, confidence: float = 0.95,
                      clusters: Any = None) -> PairedDifference:
    """Paired difference of run B minus run A on the same items, in the same order.

    Delta = mean(b_i - a_i); SE_iid = sd(d, ddof=1)/sqrt(n) (Miller 2024, eq. 8);
    CI = Delta -+ q * SE_iid with q = z for 0/1 scores or n >= 30 and q = t_{n-1} for other
    scores below n = 30. With clusters: the CR1 cluster-robust SE of the mean of d (same
    formula as :func:`evalcore.stats.clustered_se`) and t_{G-1} quantiles, never narrower than
    the iid interval when G < 30 (:func:`evalcore.stats.clustered_interval`). Also reports the
    unpaired SE sqrt(SE_A^2 + SE_B^2), the correlation of a and b, and for 0/1 scores the
    discordant counts b, c with McNemar's test. For two 0/1 runs the analysis layer shows the
    score-type interval of :func:`evalcore.stats.paired_proportion_interval` (routed by
    :func:`evalcore.stats.choose_paired_binary_method`); this function's Wald-type interval is
    the one that rule routes to at large n.

    Edge cases: a run compared with itself gives diff = 0 and se = 0 exactly, and a
    zero-width interval that ``detail`` flags (the analysis layer never shows it; see
    :func:`evalcore.stats.discordance_upper_bound`). n = 1: se NaN. Fewer than 2 clusters:
    se NaN with a reason in ``detail``. Raises StatsInputError for mismatched lengths, NaN
    (pair items first; drop items missing in either run) or empty input.
    """
    conf = check_confidence(confidence)
    xa = as_scores(a, "a")
    xb = as_scores(b, "b")
    same_length(xa, xb, "a", "b")
    n = xa.size
    d = xb - xa
    diff = float(d.mean())
    binary = is_binary(xa) and is_binary(xb)
    notes = []
    se_iid = float(np.std(d, ddof=1) / math.sqrt(n)) if n >= 2 else float("nan")
    q, df = mean_quantile(conf, n, binary)
    se, low, high = se_iid, diff - q * se_iid, diff + q * se_iid
    se_cl = float("nan")
    g = None
    if df is not None:
        notes.append(f"t quantile with {df} df (n < {SMALL_N})")
    if clusters is not None:
        codes, g = as_clusters(clusters, n)
        method = "paired-clustered"
        if g < 2:
            se, low, high, df = float("nan"), float("nan"), float("nan"), None
            notes.append("fewer than 2 clusters: clustered SE undefined")
        else:
            se_cl = math.sqrt(clustered_variance_of_mean(d, codes, g))
            ci = clustered_interval(diff, se_cl, g, conf, se_iid=se_iid, iid_low=low,
                                    iid_high=high)
            se, low, high = ci.se, ci.low, ci.high
            if not ci.floored:
                q, df = cluster_t_value(conf, g), g - 1
            notes = [ci.detail]
    else:
        method = "paired"
    if n < 2:
        notes.append("n = 1: standard errors undefined")
        se_unp = float("nan")
    else:
        se_unp = math.sqrt((np.var(xa, ddof=1) + np.var(xb, ddof=1)) / n)
    zstat, p = _test(diff, se, df, notes)
    bc = None
    mc = None
    if binary:
        nb = int(np.sum((xb == 1.0) & (xa == 0.0)))
        nc = int(np.sum((xa == 1.0) & (xb == 0.0)))
        bc = (nb, nc)
        mc = mcnemar(nb, nc)
    return PairedDifference(
        diff=diff, se=se, low=low, high=high, se_unpaired=se_unp,
        correlation=correlation(xa, xb), n=n, confidence=conf, mean_a=float(xa.mean()),
        mean_b=float(xb.mean()), z=zstat, p_value=p, b=bc[0] if bc else None,
        c=bc[1] if bc else None, mcnemar=mc, n_clusters=g, method=method,
        detail="; ".join(notes), se_iid=se_iid, se_clustered=se_cl, quantile=q, df=df)


@dataclass(frozen=True)
class PairedColumns:
    """Every column of an items x runs matrix against one reference column (column - ref).

    Arrays over columns (the reference column has diff 0, se 0 or NaN and p NaN):
    diff, se (paired SE on the items both columns have), p_value (exact McNemar for 0/1
    scores, else the two-sided paired z-test), n_shared, and for 0/1 scores b (only the column
    right) and c (only the reference right), else None. test: "mcnemar-exact" or "paired-z".
    """

    ref: int
    diff: np.ndarray
    se: np.ndarray
    p_value: np.ndarray
    n_shared: np.ndarray
    b: np.ndarray | None
    c: np.ndarray | None
    test: str


def paired_columns(matrix: Any, ref: int, *, binary: bool | None = None) -> PairedColumns:
    """:func:`paired_difference` / :func:`mcnemar` of every column against column ``ref``, vectorised.

    Each pair uses the items both columns have (NaN = missing), so one call serves a
    leaderboard of many runs without a Python call per pair. Per column j:
    d_i = x_ij - x_i,ref; diff = mean(d); se = sd(d, ddof=1)/sqrt(n_shared);
    p = exact McNemar min(1, 2 BinomCDF(min(b, c); b + c, 1/2)) for 0/1 scores (1 when b + c = 0),
    else 2 Phi(-|diff/se|) (se = 0: p = 1 if diff = 0 else 0). n_shared < 2: se and p are NaN.
    ``binary`` defaults to "every non-NaN value is 0 or 1".

    A building block: these p-values are the two classical tests on their own. The p-value a
    comparison shows (compare rows, leaderboard tiers, ``indistinguishable_from_best``) is
    :func:`evalcore.stats.paired_p_values`' (the routed interval's own test, and for 0/1
    scores the larger of it and the exact McNemar p).
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise StatsInputError(f"matrix must be 2-D (items x runs), got shape {x.shape}")
    if np.isinf(x).any():
        raise StatsInputError("matrix contains infinite values")
    r = x.shape[1]
    j = check_count(ref, "ref")
    if not 0 <= j < r:
        raise StatsInputError(f"ref must be a column index in [0, {r}), got {j}")
    fin_all = ~np.isnan(x)
    if binary is None:
        binary = bool(np.all((x[fin_all] == 0.0) | (x[fin_all] == 1.0)))
    xr = x[:, [j]]
    fin = fin_all & ~np.isnan(xr)
    nsh = fin.sum(axis=0)
    d = np.where(fin, x - xr, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = d.sum(axis=0) / nsh
        dev = np.where(fin, d - diff, 0.0)
        se = np.sqrt((dev ** 2).sum(axis=0) / (nsh - 1) / nsh)
    diff = np.where(nsh >= 1, diff, np.nan)
    se = np.where(nsh >= 2, se, np.nan)
    b = c = None
    if binary:
        b = ((x == 1.0) & (xr == 0.0) & fin).sum(axis=0)
        c = ((x == 0.0) & (xr == 1.0) & fin).sum(axis=0)
        p = mcnemar_exact_p(b, c)
    else:
        p = normal_p_value(diff, se)
    p = np.where(nsh >= 2, p, np.nan).astype(float)
    p[j] = np.nan
    return PairedColumns(ref=j, diff=diff, se=se, p_value=p, n_shared=nsh, b=b, c=c,
                         test="mcnemar-exact" if binary else "paired-z")


@dataclass(frozen=True)
class PairedMoments:
    """Paired sufficient statistics of every column of an items x runs matrix against some
    reference columns (arrays of shape (len(refs), runs); row k belongs to ``refs[k]``).

    Over the items both the column and the reference have (NaN = missing), with
    d_i = x_i - y_i: n (shared items), sum_d, sum_d2 (sum of d_i^2), b = #{x_i = 1, y_i = 0}
    and c = #{x_i = 0, y_i = 1}. Enough for the paired difference sum_d / n, its SE
    ``mean_se_from_moments(n, sum_d, sum_d2)`` and McNemar's b, c.
    """

    refs: tuple[int, ...]
    n: np.ndarray
    sum_d: np.ndarray
    sum_d2: np.ndarray
    b: np.ndarray
    c: np.ndarray


def paired_moments(matrix: Any, refs: Any, *, binary: bool | None = None) -> PairedMoments:
    """:class:`PairedMoments` of every column of ``matrix`` (items x runs, NaN = missing)
    against each column index in ``refs``, vectorised over runs and references.

    0/1 matrices (``binary``; default: every non-NaN value is 0 or 1) need no difference
    matrix: with X0 = the matrix with 0 for missing, F = 1 where present, and Y0, FY the
    reference columns of both, n = FY' F, b = (FY - Y0)' X0, c = Y0' (F - X0) are three
    matrix products, and since d_i is -1, 0 or 1, sum_d = b - c and sum_d2 = b + c (exact:
    whole numbers in float64). Other matrices form d per reference column (sums in float64;
    b and c still count exact 0/1 pairs, as a SQL ``count(*) FILTER`` does).
    ``binary=True`` on values other than 0/1 raises StatsInputError.
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[1] == 0:
        raise StatsInputError(f"matrix must be 2-D (items x runs), got shape {x.shape}")
    fin = np.isfinite(x)
    full = bool(fin.all())
    if not full and np.isinf(x).any():
        raise StatsInputError("matrix contains infinite values")
    cols = [check_count(j, "ref") for j in np.atleast_1d(np.asarray(refs)).tolist()]
    r = x.shape[1]
    bad = [j for j in cols if not 0 <= j < r]
    if bad:
        raise StatsInputError(f"refs must be column indices in [0, {r}), got {bad[0]}")
    x0 = x if full else np.where(fin, x, 0.0)
    is01 = bool(np.all((x0 == 0.0) | (x0 == 1.0)))
    if binary is None:
        binary = is01
    elif binary and not is01:
        raise StatsInputError("binary=True needs every non-NaN value to be 0 or 1")
    if binary and full:
        # no missing value (F = 1): n = rows, b = 1'X - Y'X, c = 1'Y - Y'X (whole numbers,
        # the same as the general products below), without forming F or F - X0
        y0 = x0[:, cols]
        xy = y0.T @ x0
        n = np.full((len(cols), r), float(x0.shape[0]))
        b = x0.sum(axis=0)[None, :] - xy
        c = y0.sum(axis=0)[:, None] - xy
        sum_d, sum_d2 = b - c, b + c
        return PairedMoments(refs=tuple(cols), n=n.astype(np.int64), sum_d=sum_d,
                             sum_d2=sum_d2, b=b.astype(np.int64), c=c.astype(np.int64))
    f = fin.astype(float)
    if binary:
        y0, fy = x0[:, cols], f[:, cols]
        n = fy.T @ f
        b = (fy - y0).T @ x0
        c = y0.T @ (f - x0)
        sum_d, sum_d2 = b - c, b + c
    else:
        k = len(cols)
        n, sum_d, sum_d2, b, c = (np.zeros((k, r)) for _ in range(5))
        for row, j in enumerate(cols):
            shared = fin & fin[:, [j]]
            d = np.where(shared, x0 - x0[:, [j]], 0.0)
            n[row] = shared.sum(axis=0)
            sum_d[row] = d.sum(axis=0)
            sum_d2[row] = (d * d).sum(axis=0)
            b[row] = (shared & (x0 == 1.0) & (x0[:, [j]] == 0.0)).sum(axis=0)
            c[row] = (shared & (x0 == 0.0) & (x0[:, [j]] == 1.0)).sum(axis=0)
    return PairedMoments(refs=tuple(cols), n=n.astype(np.int64), sum_d=sum_d, sum_d2=sum_d2,
                         b=b.astype(np.int64), c=c.astype(np.int64))


def paired_clustered_se(matrix: Any, codes: Any, ref: int) -> tuple[np.ndarray, np.ndarray]:
    """CR1 clustered SE of the paired difference of every column against column ``ref``.

    ``matrix``: items x runs (NaN = missing); ``codes``: the cluster of each item, either one
    integer code per item (1-D, every comparison the same clusters) or an items x runs
    matrix (>= 0 where present): the cluster of item i in the comparison of column k with
    the reference (the caller chooses, e.g. the reference's label where it has one). Per
    column k, over the items both have, d_i = x_ik - x_i,ref and
    SE_c^2 = G/(G-1) * (1/n^2) * sum_g (sum_{i in g} (d_i - mean d))^2 (the formula of
    :func:`clustered_se` and :func:`paired_difference` with clusters), G the clusters among
    those items. Returns (se, G) arrays over columns; se is NaN where G < 2.
    """
    x = np.asarray(matrix, dtype=float)
    c = np.asarray(codes, dtype=np.int64)
    if x.ndim != 2 or not (c.shape == x.shape or c.shape == (x.shape[0],)):
        raise StatsInputError(f"codes must be one per item or one per entry of the matrix, "
                              f"got {c.shape} for a matrix of {x.shape}")
    j = check_count(ref, "ref")
    r = x.shape[1]
    if not 0 <= j < r:
        raise StatsInputError(f"ref must be a column index in [0, {r}), got {j}")
    shared = ~np.isnan(x) & ~np.isnan(x[:, [j]])
    present = c[shared.any(axis=1)] if c.ndim == 1 else c[shared]
    if present.size and present.min() < 0:
        raise StatsInputError("codes must be >= 0 where both columns have the item")
    n = shared.sum(axis=0).astype(float)
    d = np.where(shared, x - x[:, [j]], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / n
    if c.ndim == 1:
        sums, sizes = _cluster_column_sums(d, shared, c)
        resid = sums - sizes * mean[None, :]            # G_max x runs
        g = (sizes > 0).sum(axis=0)
        sq = (resid ** 2).sum(axis=0)
    else:
        width = int(present.max()) + 1 if present.size else 1
        resid_e = np.where(shared, d - mean, 0.0)
        pair = (np.where(shared, c, 0) + np.arange(r, dtype=np.int64)[None, :] * width)[shared]
        sums = np.bincount(pair, weights=resid_e[shared], minlength=r * width).reshape(r, width)
        sizes = np.bincount(pair, minlength=r * width).reshape(r, width)
        g = (sizes > 0).sum(axis=1)
        sq = (sums ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = g / (g - 1.0) * sq / n ** 2
    return np.where(g >= 2, np.sqrt(var), np.nan), g


def _cluster_column_sums(d: np.ndarray, shared: np.ndarray, codes: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (rows, codes 0..G_max-1) and column: the sum of d over the shared items
    and their count, by ``np.add.reduceat`` over the items sorted by cluster."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    sums = np.add.reduceat(d[order], starts, axis=0)
    sizes = np.add.reduceat(shared[order].astype(float), starts, axis=0)
    return sums, sizes
