"""Whole-page server time: each dashboard page's script run end to end on a large store.

``bench_pages.py`` times the ``evalcore`` calls a page makes. This script times what the
server does for one page view: the page script run by Streamlit's ``AppTest`` (widgets,
``evalcore`` calls, pandas formatting, Plotly figures, the element protos sent to the
browser), on the same 2M-score store (50 runs x 20 tasks x 2,000 items + a side run).
Not included: the websocket transfer and the browser's drawing.

Two figures per view, medians over ``--repeat`` runs after one warm-up run:
- "first view": ``st.cache_data`` cleared and the store's per-snapshot memos dropped
  (``Store.forget``) before each run (what a view costs the first time after a write, when
  the store version changed);
- "again": the same view with the caches kept (a rerun of the page, e.g. after a widget change
  that does not change the computation).

Run:  python bench/bench_page_scripts.py [--store PATH --repeat 5 --only TEXT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

TARGET_MS = 300.0


def views(names: list[str]) -> dict[str, tuple[str, dict[str, str]]]:
    """Label -> (page script, query parameters) of each timed view."""
    a, b = names[-2], names[-1]
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for method in ("wilson", "bootstrap", "clustered"):
        out[f"Leaderboard: all tasks ({method})"] = ("leaderboard", {"method": method})
        out[f"Leaderboard: one task ({method})"] = ("leaderboard",
                                                    {"method": method, "task": "task_03"})
    out["Compare: all tasks"] = ("compare", {"run_a": a, "run_b": b})
    out["Compare: one task"] = ("compare", {"run_a": a, "run_b": b, "task": "task_00"})
    for tab in ("Answers per item", "Reruns", "Clusters", "Metric variants"):   # one per tab
        out[f"Repeats: {tab.lower()} tab"] = ("repeats", {} if tab == "Answers per item"
                                              else {"rp_tab": tab})
    out["Items"] = ("items", {})
    for tab in ("Protocols", "Seeds", "Checkpoints", "Splits"):   # one section per tab
        out[f"Noise: {tab.lower()} tab"] = ("noise", {} if tab == "Protocols" else {"nz_tab": tab})
    out["Planner"] = ("planner", {})
    out["Upload & runs"] = ("upload", {})
    out["(harness baseline: a page with one title)"] = ("", {})
    return out


def _discover_components_once() -> None:
    """``AppTest.run`` scans every installed distribution for Streamlit component manifests
    on each run (about 0.3 s here); a real server does it once at start-up
    (``streamlit.runtime.Runtime``). Make the scan happen once, as in the server."""
    from streamlit.components.v2.component_manager import BidiComponentManager

    original = BidiComponentManager.discover_and_register_components
    done: set[int] = set()

    def once(self, *args, **kwargs):
        if not done:
            done.add(1)
            original(self, *args, **kwargs)

    BidiComponentManager.discover_and_register_components = once


def _compile_scripts_once() -> None:
    """``AppTest`` gives each run a new ``ScriptCache``, so every run parses the page script
    again and rewrites its syntax tree for Streamlit's "magic" (20-60 ms for a page here);
    a real server keeps one ``ScriptCache`` for its life (``streamlit.runtime.Runtime``) and
    compiles each page once. Share one cache between the runs, as the server does."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import local_script_runner

    shared = ScriptCache()
    local_script_runner.ScriptCache = lambda: shared


def _probe_images_first() -> None:
    """Run the slide-image probe to its end before timing. ``app.py`` starts it when the
    server starts (``ui.export.start_image_probe``: kaleido launches Chromium once, several
    seconds of CPU); the page scripts run here without ``app.py``, so the first chart drawn
    would start it in the middle of the first timed views, on a machine of two cores."""
    from ui import export

    export.start_image_probe().join()


def _forget_store_memos() -> None:
    """Drop the per-snapshot memos of the store object the pages share (the one
    ``ui.common`` opened), as a write would: a first view reads the small tables again."""
    from ui import common

    common._open_store(str(common.store_path())).forget()


def time_view(page: str, params: dict[str, str], repeat: int, cached: bool) -> list[float]:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    times = []
    for i in range(repeat + 1):
        if not cached:
            st.cache_data.clear()
            _forget_store_memos()
        at = (AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=300) if page
              else AppTest.from_string('import streamlit as st\nst.title("baseline")'))
        for key, value in params.items():
            at.query_params[key] = value
        t0 = time.perf_counter()
        at.run()
        elapsed = 1000 * (time.perf_counter() - t0)
        if at.exception:
            raise RuntimeError(f"{page} {params}: {[e.value for e in at.exception]}")
        if i:                                  # the first run warms imports and caches
            times.append(elapsed)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="reuse/create the bench_pages store here "
                                    "(default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", help="time only the views whose label contains this text")
    args = ap.parse_args(argv)

    from bench_pages import build_store
    from evalcore.store import Store
    from evalcore.threads import pin_blas_threads

    pin_blas_threads()
    _discover_components_once()
    _compile_scripts_once()
    _probe_images_first()
    path = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="evalbars-bench-")) / "s"
    if not (path / "catalog.sqlite").exists():
        t0 = time.perf_counter()
        build_store(path, 50, 20, 2000).close()
        print(f"built {path} in {time.perf_counter() - t0:.1f} s")
    store = Store(str(path))
    names = sorted(n for n in store.runs()["name"] if n.startswith("model-"))
    store.close()
    os.environ["EVALBARS_STORE"] = str(path)
    os.environ["EVALBARS_DEMO"] = "0"

    print(f"{'page view (server side, AppTest)':<42}{'first view ms':>15}{'again ms':>11}  target")
    worst = 0.0
    for label, (page, params) in views(names).items():
        if args.only and args.only not in label:
            continue
        first = statistics.median(time_view(page, params, args.repeat, cached=False))
        again = statistics.median(time_view(page, params, args.repeat, cached=True))
        worst = max(worst, first)
        flag = "ok" if first < TARGET_MS else "SLOW"
        print(f"{label:<42}{first:>15.1f}{again:>11.1f}  {flag}", flush=True)
    print(f"slowest first view: {worst:.1f} ms ({'within' if worst < TARGET_MS else 'over'} "
          f"target {TARGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
