"""stats.paired_moments against a direct per-pair computation and stats.paired_columns."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore import stats as st
from evalcore.stats import StatsInputError


def _direct(x: np.ndarray, j: int) -> tuple[np.ndarray, ...]:
    """Per column, the sums over the items both the column and column j have."""
    out = []
    for k in range(x.shape[1]):
        ok = ~np.isnan(x[:, k]) & ~np.isnan(x[:, j])
        d = x[ok, k] - x[ok, j]
        out.append((ok.sum(), d.sum(), (d * d).sum(),
                    np.sum((x[ok, k] == 1) & (x[ok, j] == 0)),
                    np.sum((x[ok, k] == 0) & (x[ok, j] == 1))))
    return tuple(np.array(v) for v in zip(*out))


@pytest.mark.parametrize("binary", [True, False])
def test_paired_moments_equal_the_direct_sums(binary):
    rng = np.random.default_rng(3)
    x = (rng.random((300, 7)) < 0.6).astype(float) if binary else rng.normal(5, 2, (300, 7))
    x[rng.random(x.shape) < 0.15] = np.nan
    x[:, 5] = np.nan            # a run without items
    m = st.paired_moments(x, [2, 0])
    assert m.n.shape == (2, 7) and m.refs == (2, 0)
    for row, j in enumerate((2, 0)):
        n, sd, sd2, b, c = _direct(x, j)
        assert np.array_equal(m.n[row], n)
        np.testing.assert_allclose(m.sum_d[row], sd, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(m.sum_d2[row], sd2, rtol=1e-12, atol=1e-9)
        assert np.array_equal(m.b[row], b) and np.array_equal(m.c[row], c)
        pc = st.paired_columns(x, j)
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.where(m.n[row] >= 1, m.sum_d[row] / m.n[row], np.nan)
        np.testing.assert_allclose(diff, pc.diff, rtol=1e-12, atol=1e-12, equal_nan=True)
        se = st.mean_se_from_moments(m.n[row], m.sum_d[row], m.sum_d2[row])
        np.testing.assert_allclose(se, pc.se, rtol=1e-9, atol=1e-12, equal_nan=True)
        if binary:
            assert np.array_equal(m.b[row], pc.b) and np.array_equal(m.c[row], pc.c)


def test_paired_moments_checks_its_input():
    x = np.array([[0.0, 1.0], [0.5, 1.0]])
    with pytest.raises(StatsInputError, match="0 or 1"):
        st.paired_moments(x, [0], binary=True)
    with pytest.raises(StatsInputError, match="column indices"):
        st.paired_moments(x, [2])
    with pytest.raises(StatsInputError, match="infinite"):
        st.paired_moments(np.array([[np.inf, 1.0]]), [0])
    m = st.paired_moments(x, [1])           # detected: not 0/1, per-pair sums
    assert m.n.tolist() == [[2, 2]] and m.sum_d.tolist() == [[-1.5, 0.0]]
    assert m.b.tolist() == [[0, 0]] and m.c.tolist() == [[1, 0]]


def test_paired_moments_of_a_complete_binary_matrix_are_exact():
    """No missing value: the products without the presence matrix give the same whole
    numbers as the per-pair sums (and as the general path on the same data)."""
    rng = np.random.default_rng(8)
    x = (rng.random((500, 9)) < 0.4).astype(float)
    m = st.paired_moments(x, [4, 0, 8])
    padded = np.vstack([x, np.full((1, 9), np.nan)])      # one all-missing row: general path
    g = st.paired_moments(padded, [4, 0, 8])
    for row, j in enumerate((4, 0, 8)):
        n, sd, sd2, b, c = _direct(x, j)
        assert np.array_equal(m.n[row], n) and np.array_equal(m.b[row], b)
        assert np.array_equal(m.c[row], c)
        assert np.array_equal(m.sum_d[row], sd) and np.array_equal(m.sum_d2[row], sd2)
    for f in ("n", "sum_d", "sum_d2", "b", "c"):
        assert np.array_equal(getattr(m, f), getattr(g, f))
    with pytest.raises(StatsInputError, match="0 or 1"):
        st.paired_moments(x + 0.5, [0], binary=True)
