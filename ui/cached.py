"""Analysis calls through Streamlit's cache, keyed on (function, store path, store version,
arguments): ``Store.version()`` changes whenever the content does, so a result is reused until
the store changes. Pages pass the ``evalcore.analysis`` function itself, so a reader (or a
tool) can follow the call."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from evalcore import analysis
from evalcore.errors import EvalbarsError
from ui.store_access import _open_store, get_store, show_error, store_path


@st.cache_data(show_spinner=False, max_entries=256)
def _cached_call(fn_name: str, path: str, version: str, args: tuple, kwargs: tuple) -> Any:
    fn = getattr(analysis, fn_name)
    return fn(_open_store(path), *args, **dict(kwargs))


def compute(fn: Callable[..., Any], *args: Any, stop: bool = True, **kwargs: Any) -> Any:
    """Call ``fn(store, *args, **kwargs)`` through the cache; ``fn`` is a function of
    ``evalcore.analysis`` (the cache keys on the name it has there, so any other function is
    refused).

    An ``EvalbarsError`` is rendered as a message; then the page stops (``stop=True``) or
    ``None`` is returned so the rest of the page still draws.
    """
    fn_name = next((name for name, value in vars(analysis).items() if value is fn), None)
    if fn_name is None:
        raise TypeError(f"compute takes a function of evalcore.analysis, got {fn!r}")
    store = get_store()
    try:
        # one catalog query for the version: the analysis's memo checks reuse it
        with store.one_version() as version, \
                st.spinner(f"Computing ({fn_name.replace('_', ' ')}) ...", show_time=True):
            return _cached_call(fn_name, str(store_path()), str(version), tuple(args),
                                tuple(sorted(kwargs.items())))
    except EvalbarsError as exc:
        show_error(exc)
    if stop:
        st.stop()
    return None
