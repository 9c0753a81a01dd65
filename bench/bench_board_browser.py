"""Time to a settled Leaderboard page in a real browser, on a store of many runs and tasks.

Starts the dashboard (``streamlit run app.py``) on a store built by ``board_store.py`` (or
one given with ``--store``), opens the Leaderboard in Chromium (Playwright,
``/usr/bin/chromium``) at 1440x900 ``--views`` times, each in a new tab of one browser
profile (a new Streamlit session; the server's caches and the browser's HTTP cache are warm
after the first view, as for a returning visitor), and prints each time to "settled": the
navigation until the scores table
is drawn and Streamlit's status widget is gone for good (no rerun follows within 1 s).
The first view also computes the board (the server's caches are cold). It also reports
whether the first screen scrolls horizontally (the page, or the table's own scroller).

Run:  python bench/bench_board_browser.py [--runs 500 --tasks 60 --items 60 --views 7
                                           --store PATH --query "?top=50"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from board_store import build_board_store  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
QUIET_S = 1.0
VERBOSE = False

SCROLL_JS = """() => ({
  page: [document.documentElement.scrollWidth, window.innerWidth],
  table: [...document.querySelectorAll('[data-testid=stDataFrame] .dvn-scroller')]
           .map(e => [e.scrollWidth, e.clientWidth]),
  tableTop: (document.querySelector('[data-testid=stDataFrame]') || {getBoundingClientRect:
             () => ({top: -1})}).getBoundingClientRect().top})"""


def settle(page, url: str, timeout: float = 120.0) -> float:
    """Seconds from navigation to a settled page: the scores table drawn and the status
    widget gone for ``QUIET_S`` seconds (the time counted ends where the quiet began)."""
    t0 = time.monotonic()
    page.goto(url)
    page.wait_for_selector("[data-testid='stDataFrame'] canvas", timeout=timeout * 1000)
    drawn = time.monotonic()
    quiet = None
    while time.monotonic() - t0 < timeout:
        if page.locator("[data-testid='stStatusWidget']").count() > 0:
            quiet = None
        elif quiet is None:
            quiet = time.monotonic()
        elif time.monotonic() - quiet > QUIET_S:
            if VERBOSE:
                print(f"  table drawn {drawn - t0:.2f} s, quiet from {quiet - t0:.2f} s")
            return max(quiet, drawn) - t0
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not settle in {timeout:.0f} s")


def scroll_report(page) -> dict:
    """The page's and the scores table's scroll widths against their visible widths."""
    return page.evaluate(SCROLL_JS)


def scrolls_horizontally(report: dict) -> bool:
    page_w, inner = report["page"]
    return page_w > inner or any(sw > cw + 1 for sw, cw in report["table"])


def measure(url: str, views: int, width: int = 1440, height: int = 900, browser=None
            ) -> tuple[list[float], dict]:
    """Settle times of ``views`` views of ``url`` (each in a new tab of one browser
    profile), and the first screen's scroll report of the last one. ``browser``: a
    Playwright browser to use (else Chromium is started here)."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            own = pw.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu"])
            try:
                return measure(url, views, width, height, browser=own)
            finally:
                own.close()
    times: list[float] = []
    report: dict = {}
    # one browser profile (its HTTP cache holds Streamlit's scripts after the first view, as
    # a returning visitor's does), a new tab and Streamlit session per view
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        for _ in range(views):
            page = context.new_page()
            times.append(settle(page, url))
            report = scroll_report(page)
            page.close()
    finally:
        context.close()
    return times, report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--items", type=int, default=60)
    ap.add_argument("--views", type=int, default=7)
    ap.add_argument("--store", type=Path, help="an existing store (else one is built in /tmp)")
    ap.add_argument("--query", default="", help="URL query of the views, e.g. ?top=50")
    args = ap.parse_args(argv)
    from tests.browser.conftest import serve_app

    with tempfile.TemporaryDirectory(prefix="evalbars-board-") as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "store"
            build_board_store(store, args.runs, args.tasks, args.items).close()
        with serve_app(Path(tmp), store) as url:
            times, report = measure(url + "/" + args.query, args.views)
    first, rest = times[0], times[1:]
    print(f"first view (cold caches): {first:.2f} s")
    if rest:
        print(f"views 2..{len(times)}: median {statistics.median(rest):.2f} s "
              f"(min {min(rest):.2f}, max {max(rest):.2f}): "
              + ", ".join(f"{t:.2f}" for t in rest))
    print(f"first screen at 1440x900: page {report['page']}, table scrollers "
          f"{report['table']}, table top {report['tableTop']:.0f} px; horizontal scroll: "
          f"{'yes' if scrolls_horizontally(report) else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
