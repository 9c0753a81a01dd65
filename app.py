"""evalbars dashboard: navigation and shared setup only (``streamlit run app.py``).

The store is ``$EVALBARS_STORE`` (default: the folder ``./.evalbars``). When it is empty,
the bundled demo in ``data/demo/`` is ingested once so the first run opens on a real
leaderboard (``EVALBARS_DEMO=0`` turns that off). Pages live in ``pages/``. With ``[auth]``
in ``.streamlit/secrets.toml`` only signed-in users with a role see anything
(``ui/auth.py``, ``$EVALBARS_ROLES``); ``EVALBARS_READONLY=1`` turns every write off.
"""

import contextlib

import streamlit as st

from evalcore.errors import StoreError
from evalcore.threads import pin_blas_threads
from ui import auth, common, export, present

pin_blas_threads()   # one BLAS thread: faster and steadier on a busy machine (evalcore/threads.py)
export.start_image_probe()   # Chromium for slide images starts in the background, once

st.set_page_config(page_title="evalbars: error bars for LLM evals", page_icon=":material/bar_chart:",
                   layout="wide")

auth.gate()          # sign-in and role (or the local user); stops when nothing may be shown
common.ensure_demo()

UPLOAD = st.Page("pages/upload.py", title="Upload & runs", icon=":material/upload_file:")
pages = [
    UPLOAD,
    st.Page("pages/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:",
            default=True),
    st.Page("pages/compare.py", title="Compare two runs", icon=":material/compare_arrows:"),
    st.Page("pages/repeats.py", title="Repeats & clusters", icon=":material/stacked_line_chart:"),
    st.Page("pages/noise.py", title="Noise", icon=":material/ssid_chart:"),
    st.Page("pages/planner.py", title="Planner", icon=":material/calculate:"),
    st.Page("pages/judge.py", title="LLM judges", icon=":material/gavel:"),
    st.Page("pages/items.py", title="Items", icon=":material/rule:"),
    st.Page("pages/method_check.py", title="Method check", icon=":material/fact_check:"),
    st.Page("pages/report.py", title="Report", icon=":material/description:"),
]
page = st.navigation(pages)
present.setup()                  # presentation mode (?present=1): hides controls, larger text
figures = export.start_page()    # every chart this page draws, for the zip below
with st.sidebar:
    st.caption(f"Store: {common.md_escape(common.store_label())}")   # secrets masked
    export.zip_button(figures, page.title)
# a page that only reads sees one store snapshot for its whole run; the upload page writes
# and must see its own writes
pinned = contextlib.nullcontext() if page.url_path == UPLOAD.url_path else common.page_snapshot()
try:
    with pinned:
        page.run()
except StoreError as exc:   # the store failed where a page did not expect it: a message
    common.show_error(exc)
