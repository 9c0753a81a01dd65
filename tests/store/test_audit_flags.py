"""The audit's flags from column arrays (``query._audit_flags``) against the per-row rules
they replaced, on every combination of missing and edge values."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from evalcore.store._util import _agrees, _is_missing
from evalcore.store.query import _audit_flags


def _row_flags(r) -> str | None:
    """The per-row rules as the audit applied them before (one Python pass per row)."""
    f: list[str] = []
    rep, rse, rec_se, rec = r.reported, r.reported_stderr, r.recomputed_stderr, r.recomputed
    if not _is_missing(rse) and not _is_missing(rec_se) and not _agrees(float(rse), float(rec_se)):
        f.append("stderr mismatch")
    if not _is_missing(rse) and float(rse) == 0.0 and not _is_missing(rep) and 0.0 < float(rep) < 1.0:
        f.append("zero stderr with 0<p<1")
    if not _is_missing(r.stderr_raw):
        f.append("N/A stderr")
    if (not _is_missing(r.n_reported) and not _is_missing(r.n_items)
            and int(r.n_reported) != int(r.n_items)):
        f.append("n mismatch")
    if not _is_missing(rep) and not _is_missing(rec) and not _agrees(float(rep), float(rec)):
        f.append("value mismatch")
    return "; ".join(f) if f else None


def test_vectorised_flags_equal_the_row_rules():
    nan = np.nan
    values = {
        "reported": [nan, 0.0, 0.5, 0.50004, 0.7, 1.0],
        "reported_stderr": [nan, 0.0, 0.02, 0.0201, 0.03],
        "recomputed": [nan, 0.5],
        "recomputed_stderr": [nan, 0.02, 0.0],
        "stderr_raw": [None, "N/A"],
        "n_reported": [nan, 100.0, 99.0],
        "n_items": [nan, 100.0],
    }
    rows = list(itertools.product(*values.values()))
    df = pd.DataFrame(rows, columns=list(values))
    want = [_row_flags(r) for r in df.itertuples(index=False)]
    got = _audit_flags(df)
    assert got == want
    assert {"stderr mismatch", "value mismatch", "n mismatch", "N/A stderr",
            "zero stderr with 0<p<1"} <= {p for w in want if w for p in w.split("; ")}
    assert _audit_flags(df.iloc[:0]) == []
