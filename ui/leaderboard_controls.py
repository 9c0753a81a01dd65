"""URL-bound widgets of the leaderboard's filters: a text search and a pick list.

One source of truth per setting: the widget's session state, written to the URL on every
run (``ui.common.url_set``) and read from it only when the session has no value yet (a
shared link). A value that is no longer among the options (a run filtered out, a task
column a search hides) is dropped before the widget is drawn, so a control never shows a
value the page does not use.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import streamlit as st

from ui.common import url_get, url_set


def url_text(label: str, param: str, *, key: str, placeholder: str = "",
             help: str | None = None, container: Any = None) -> str:
    """A text input whose value lives in ``?param=`` (stripped; "" removes the parameter)."""
    box = container if container is not None else st
    if key not in st.session_state:
        st.session_state[key] = url_get(param) or ""
    value = box.text_input(label, key=key, placeholder=placeholder, help=help)
    value = str(value or "").strip()
    url_set(param, value or None)
    return value


def url_picks(label: str, options: Sequence[str], param: str, *, key: str,
              format_func: Callable[[Any], str] = str, help: str | None = None,
              placeholder: str | None = None, container: Any = None) -> list[str]:
    """A multiselect whose value lives in ``?param=a&param=b``; absent means none picked
    (unlike ``ui.common.url_multi``, where absent means all). Picks that are not among
    ``options`` are dropped, from the widget and the URL."""
    box = container if container is not None else st
    options = [str(o) for o in options]
    allowed = set(options)
    if key in st.session_state:
        kept = [v for v in st.session_state[key] if v in allowed]
        if kept != list(st.session_state[key]):
            st.session_state[key] = kept
    else:
        st.session_state[key] = [v for v in dict.fromkeys(st.query_params.get_all(param))
                                 if v in allowed]
    value = box.multiselect(label, options, key=key, format_func=format_func, help=help,
                            placeholder=placeholder)
    url_set(param, list(value) or None)
    return list(value)
