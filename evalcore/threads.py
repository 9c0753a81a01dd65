"""BLAS thread pinning for the dashboard and the CLI.

The analysis layer's matrix products are small (a few thousand rows): with OpenBLAS's default
of one thread per core they ran 3-10x slower and unpredictably on a busy 2-core machine
(issue 9), because the threads fight the DuckDB and Streamlit threads for the same cores.
``pin_blas_threads`` limits every BLAS/OpenMP pool loaded in the process (numpy's and
scipy's OpenBLAS) to one thread with ``threadpoolctl``; ``EVALBARS_BLAS_THREADS`` overrides
the count. The library itself (``import evalcore``) changes nothing: only the app and the
CLI call this.
"""

from __future__ import annotations

import os
from typing import Any

_LIMITER: Any = None


def pin_blas_threads(default: int = 1) -> int | None:
    """Limit the BLAS thread pools of this process; returns the limit applied (None when
    threadpoolctl is unavailable or ``EVALBARS_BLAS_THREADS`` is not a positive integer).

    numpy and scipy.linalg are imported first, so their BLAS libraries are loaded and
    reached by the limit; the limit stays for the life of the process."""
    global _LIMITER
    raw = os.environ.get("EVALBARS_BLAS_THREADS", str(default)).strip()
    try:
        n = int(raw)
    except ValueError:
        return None
    if n < 1:
        return None
    try:
        import numpy  # noqa: F401  (loads numpy's BLAS)
        import scipy.linalg  # noqa: F401  (loads scipy's BLAS)
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    _LIMITER = threadpool_limits(limits=n, user_api="blas")
    return n
