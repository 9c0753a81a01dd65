"""Threads and store versions of the analysis layer, in one place.

An analysis call (``leaderboard``, ``compare``, ...) reads under one store version
(``one_version``), so its per-snapshot memos are checked once. Reads that need only the
runs go to worker threads (``submit``: each worker keeps its own read cursors; the store's
reads release the GIL) under the version the calling thread pinned. ``submit_half`` runs
the second half of a numpy computation beside the calling thread.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

# the board's reads run here side by side, and its items x runs read while the calling
# thread computes the cells (the store's reads release the GIL; each thread keeps its own
# read cursors)
_BACKGROUND = ThreadPoolExecutor(max_workers=4, thread_name_prefix="evalbars-leaderboard")
# the second half of the clustered intervals: their own pool, as the clustered cells run in
# a _BACKGROUND worker (a job there waiting on another _BACKGROUND job could wait forever
# with every worker busy doing the same); its jobs wait on nothing
_HALVES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalbars-intervals")


def one_version(store):
    """``store.one_version()``: the per-snapshot memos of one analysis call checked against
    one store version (a context manager; a no-op for stores without it)."""
    pin = getattr(store, "one_version", None)
    return pin() if pin is not None else contextlib.nullcontext()


def submit(store, fn: Callable[..., Any], *args, **kwargs) -> Future:
    """``fn(*args, **kwargs)`` in a worker thread, run under the calling thread's store
    version (``store.one_version``, pinned per thread): the worker's per-snapshot memos and
    small-table copy are checked against the version the caller pinned instead of each
    worker asking the catalog for it (one DuckLake query each, 5-20 ms on the bench store).
    Reads still see the latest committed snapshot, as the calling thread's do. A store
    without ``one_version`` (MemoryStore): a plain submit."""
    if getattr(store, "one_version", None) is None:
        return _BACKGROUND.submit(fn, *args, **kwargs)
    known = store.version()         # inside the caller's one_version block: no query

    def pinned():
        with store.one_version(known):
            return fn(*args, **kwargs)
    return _BACKGROUND.submit(pinned)


def submit_half(fn: Callable[..., Any], *args, **kwargs) -> Future:
    """``fn(*args, **kwargs)`` in the pool of jobs that wait on nothing (a pure numpy half
    of a computation whose other half runs in the calling thread, which may itself be a
    ``submit`` worker)."""
    return _HALVES.submit(fn, *args, **kwargs)
