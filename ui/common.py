"""Shared page plumbing, one module per concern; this face re-exports them for the pages.

- ``ui.store_access``: the store (location with secrets masked, the shared connection, the
  page's snapshot, runs and tasks, the demo, uploads, errors as messages);
- ``ui.cached``: analysis calls through the cache (``compute(analysis.leaderboard, ...)``);
- ``ui.format``: numbers and user text as shown (Markdown-safe text, percent, intervals, p);
- ``ui.url_widgets``: widgets bound to the URL;
- ``ui.tables``: tables and charts with their downloads.

Nothing here computes a statistic: numbers come from ``evalcore.analysis`` (and
``evalcore.stats`` for the planner).
"""

import streamlit as st

from ui.cached import compute  # noqa: F401
from ui.format import *  # noqa: F401,F403
from ui.format import _MD_SPECIAL  # noqa: F401
from ui.store_access import *  # noqa: F401,F403
from ui.store_access import _open_store, _seed_demo  # noqa: F401
from ui.tables import *  # noqa: F401,F403
from ui.url_widgets import *  # noqa: F401,F403
from evalcore.tables import slug, to_latex, to_markdown  # noqa: F401  (the pages' exports)


def ensure_app_navigation() -> None:
    """Make a page that was opened by its URL run inside ``app.py``'s ``st.navigation``.

    Streamlit (1.67) starts a server whose folder has a ``pages/`` directory in its legacy
    multipage mode: until ``st.navigation`` has run once in the process, the first request
    for a page URL (``/compare?run_a=...``, a shared link) runs that page's script alone,
    without ``app.py``'s setup and sidebar. A page that finds itself in that mode switches
    the mode off and reruns, which executes ``app.py`` and its navigation for the same URL.
    Every page calls this first.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
