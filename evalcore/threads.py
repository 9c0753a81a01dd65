"""BLAS thread pinning for the dashboard and the CLI; no huge pages during a large ingest; the
C heap's free pages handed back after a large one (``release_free_heap``).

The analysis layer's matrix products are small (a few thousand rows): with OpenBLAS's default
of one thread per core they ran 3-10x slower and unpredictably on a busy 2-core machine
because the threads fight the DuckDB and Streamlit threads for the same cores.
``pin_blas_threads`` limits every BLAS/OpenMP pool loaded in the process (numpy's and
scipy's OpenBLAS) to one thread with ``threadpoolctl``; ``EVALBARS_BLAS_THREADS`` overrides
the count. The library itself (``import evalcore``) changes nothing: only the app and the
CLI call this.

``no_huge_pages`` turns transparent huge pages off for the process while a large ingest
runs (Linux only; ``Store.ingest`` uses it for a ``LazyRun``). Such an ingest allocates and
frees hundreds of MB per task (DuckDB's parse, Arrow columns, Parquet buffers), and with
THP on (``/sys/kernel/mm/transparent_hugepage/enabled`` = ``always``) the kernel zeroes a
2 MB page at each fault of the memory handed back and taken again: measured at 1,000,000
lm_eval lines, 2-4 s of 20-26 CPU-s were ``clear_page_erms`` under
``do_huge_pmd_anonymous_page`` (``perf record``), and the ingest used 3-5 CPU-s less with
THP off (system time 5.5-7.7 s -> 3.3-4.2 s), at the same peak memory.
``EVALBARS_HUGE_PAGES=1`` keeps huge pages on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any, Iterator

_LIMITER: Any = None

_PR_SET_THP_DISABLE = 41
_PR_GET_THP_DISABLE = 42
_THP_LOCK = threading.Lock()
_THP_DEPTH = 0
_THP_BEFORE = 0


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


def _prctl() -> Any:
    """libc's ``prctl`` (None off Linux or when it cannot be loaded)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def huge_pages_disabled() -> bool | None:
    """Whether transparent huge pages are off for this process (``PR_GET_THP_DISABLE``;
    None where that cannot be asked)."""
    prctl = _prctl()
    if prctl is None:
        return None
    got = prctl(_PR_GET_THP_DISABLE, 0, 0, 0, 0)
    return None if got < 0 else bool(got)


@contextlib.contextmanager
def no_huge_pages() -> Iterator[None]:
    """Transparent huge pages off for the whole process while the block runs, restored
    after (``prctl(PR_SET_THP_DISABLE)``: it applies to memory faulted in meanwhile, by any
    thread). Nested and concurrent blocks share one switch: the first turns it off, the
    last restores what the process had. Off Linux, with ``EVALBARS_HUGE_PAGES=1`` or where
    prctl fails, nothing changes."""
    global _THP_DEPTH, _THP_BEFORE
    prctl = None if os.environ.get("EVALBARS_HUGE_PAGES", "").strip() == "1" else _prctl()
    if prctl is None:
        yield
        return
    with _THP_LOCK:
        if _THP_DEPTH == 0:
            before = prctl(_PR_GET_THP_DISABLE, 0, 0, 0, 0)
            if before < 0 or prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
                prctl = None   # not supported here: leave it
            else:
                _THP_BEFORE = before
        if prctl is not None:
            _THP_DEPTH += 1
    if prctl is None:
        yield
        return
    try:
        yield
    finally:
        with _THP_LOCK:
            _THP_DEPTH -= 1
            if _THP_DEPTH == 0:
                prctl(_PR_SET_THP_DISABLE, _THP_BEFORE, 0, 0, 0)


_TRIM: Any = None


def release_free_heap() -> None:
    """Give freed memory back to the system: the C heap's free pages (glibc's
    ``malloc_trim(0)``; nothing where libc has no such call) and the pages Arrow's memory
    pool keeps for reuse (``MemoryPool.release_unused``). glibc serves numpy's arrays of
    up to 32 MB from its heap once a bigger one has been freed (it raises its mmap
    threshold), and freed heap memory between blocks in use stays with the process, as
    does what mimalloc (Arrow's pool) has cached: measured, a write in slices of 1,000,000
    rows kept 50-100 MB more after each slice without it. A call takes a few ms: it is
    made between the large steps of a large ingest, not in loops."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes
            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    import pyarrow as pa
    pa.default_memory_pool().release_unused()
    if _TRIM:
        _TRIM(0)
