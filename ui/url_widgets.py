"""Widgets bound to the page URL: the URL and the widget hold one value (a shared link opens
the same view), and the computation reads that value, never a stale one."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st

from ui.format import CONFIDENCES

# A URL-bound widget has one value, kept in ``?param=``. Its default is passed on every run
# as that same value (the user's latest choice, else the URL's), because the browser draws a
# widget that (re)appears from its default: a widget skipped for a run (an empty intermediate
# selection, a ``st.stop`` above it) would come back showing its minimum or first option while
# the server computes with the URL's value, and the next interaction would send that shown
# value back as the user's choice. So the browser, the session state, the URL and the
# computation hold one value.
def url_get(param: str) -> str | None:
    """The value of ``?param=`` in the page URL, or None."""
    value = st.query_params.get(param)
    return None if value in (None, "") else str(value)


def url_set(param: str, value: Any) -> None:
    """Write (or remove, for None) ``?param=`` so the current view can be shared."""
    if value is None or value == "" or (isinstance(value, (list, tuple)) and not value):
        if param in st.query_params:
            del st.query_params[param]
        return
    if isinstance(value, (list, tuple)):
        new = [str(v) for v in value]
        if st.query_params.get_all(param) != new:
            st.query_params[param] = new
        return
    if st.query_params.get(param) != str(value):
        st.query_params[param] = str(value)


def url_choice(label: str, options: Sequence[str], param: str, *, key: str,
               default: str | None = None, format_func: Callable[[Any], str] = str,
               widget: str = "selectbox", help: str | None = None, container: Any = None,
               disabled: bool = False) -> str | None:
    """A single-choice widget whose value lives in ``?param=`` (URL first, then ``default``).

    ``options`` are strings (they round-trip through the URL). ``widget``: "selectbox",
    "radio", "select_slider" or "segmented" (which cannot be deselected). A value that is
    no longer among the options falls back to ``default`` (or the first option), in the
    browser as on the server. ``disabled`` shows the value without letting it change.
    Returns the chosen option (None when there are no options).
    """
    box = container if container is not None else st
    options = [str(o) for o in options]
    if not options:
        url_set(param, None)
        return None
    held = st.session_state.get(key)          # the value the user just chose, if any
    # a held value that is not among these options (the box showed other options on the
    # last run, e.g. a placeholder) gives way to the URL's, which kept the last real choice
    wanted = str(held) if held is not None and str(held) in options else url_get(param)
    initial = wanted if wanted in options else default if default in options else options[0]
    index = options.index(initial)
    common = dict(key=key, format_func=format_func, help=help, disabled=disabled)
    if widget == "radio":
        value = box.radio(label, options, index=index, horizontal=True, **common)
    elif widget == "select_slider":
        value = box.select_slider(label, options, value=initial, **common)
    elif widget == "segmented":
        value = box.segmented_control(label, options, default=initial, selection_mode="single",
                                      required=True, **common)
    else:
        value = box.selectbox(label, options, index=index, **common)
    value = initial if value is None else str(value)
    url_set(param, value)
    return value


def url_multi(label: str, options: Sequence[str], param: str, *, key: str,
              format_func: Callable[[Any], str] = str, help: str | None = None,
              container: Any = None) -> list[str]:
    """A multiselect whose value lives in ``?param=a&param=b`` (absent = all options).

    Chosen values that are no longer among the options are dropped; the rest stay chosen."""
    box = container if container is not None else st
    options = [str(o) for o in options]
    wanted = [v for v in st.query_params.get_all(param) if v in options] or list(options)
    if key in st.session_state:
        held = list(st.session_state[key] or [])
        kept = [v for v in held if v in options]
        if kept != held:        # a server-side change: the browser is told (set_value)
            st.session_state[key] = kept
        wanted = list(st.session_state[key])
    value = box.multiselect(label, options, default=wanted, key=key, format_func=format_func,
                            help=help)
    url_set(param, None if set(value) == set(options) else value)
    return list(value)


def url_number(param: str, default: float, *, cast: Callable[[str], Any] = float) -> Any:
    """A number from ``?param=`` (``default`` when absent or unreadable)."""
    raw = url_get(param)
    if raw is None:
        return default
    try:
        value = cast(raw)
    except ValueError:
        return default
    return value if value == value else default        # NaN: the default


def url_numeric(kind: str, label: str, param: str, *, key: str, default: float,
                min_value: float, max_value: float, step: float, fmt: str | None = None,
                help: str | None = None, container: Any = None, cast: type = float) -> Any:
    """A number input ("number") or slider ("slider") whose value lives in ``?param=``
    (``default`` when absent; clipped to [min_value, max_value])."""
    box = container if container is not None else st
    held = st.session_state.get(key)          # the value the user just chose, if any
    start = held if isinstance(held, (int, float)) else url_number(param, default, cast=cast)
    initial = cast(min(max(start, min_value), max_value))
    kwargs = dict(min_value=cast(min_value), max_value=cast(max_value), step=cast(step),
                  value=initial, key=key, help=help)
    if fmt:
        kwargs["format"] = fmt
    if kind == "slider":
        value = box.slider(label, **kwargs)
    else:
        value = box.number_input(label, **kwargs)
    url_set(param, value)
    return value


def confidence_choice(key: str, container: Any = None, label: str = "Confidence",
                      help: str | None = None) -> float:
    """The confidence level selector (URL ``conf``)."""
    value = url_choice(label, [f"{c:.2f}" for c in CONFIDENCES], "conf", key=key,
                       default="0.95", format_func=lambda s: f"{float(s):.0%}",
                       container=container, help=help)
    return float(value)


def tab_sections(key: str, sections: dict[str, Callable[[], None]]) -> None:
    """One ``st.tabs`` tab per section (label -> function drawing it); only the open tab's
    section runs. The open tab is widget state bound to the URL under ``key``, so a shared
    link opens the same tab, and switching tabs reruns the page (from its caches)."""
    tabs = st.tabs(list(sections), key=key, bind="query-params")
    for tab, section in zip(tabs, sections.values()):
        if tab.open:
            with tab:
                section()
