"""Time to a settled page in a real browser: every dashboard page, on the demo and on a large
store, measured in Debian's Chromium driven by Playwright.

For each page the app is opened at the page's URL in a fresh browser tab, and the time from
the navigation's start to the page *settling* is recorded: Streamlit reports its script as
not running (``.stApp[data-test-script-state="notRunning"]``), at least one element is drawn
in the main area, and both stay so for ``--quiet-ms`` (default 500 ms; the quiet stretch
itself is not counted: the time is the start of that stretch). The first visit of each page
is a warm-up (Python imports, the page's cached reads) and is not counted; the median and
range of the next ``--repeat`` visits are printed. Targets: every median under 1 s on the
demo, under 2 s on the large store.

Stores: ``--demo`` builds a store from ``data/demo`` (as the app's first start does);
``--large RUNSxTASKS`` builds a synthetic one shaped like a lab's board with
``board_store.build_board_store`` (checkpoint series and seeds of a few model families, two
harnesses, tags; ``--items`` items per task, 0/1 scores from an item-response model); ``--store PATH`` uses an existing
store. Each store gets its own ``streamlit run app.py`` on a free port on 127.0.0.1.

``--floor`` first measures a two-element Streamlit app the same way: Streamlit's own start in
a fresh tab, the floor under every page.

Run:  python bench/bench_browser.py --demo --large 500x60 [--items 60 --repeat 5 --floor]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tests.browser.conftest import CHROMIUM, serve_app  # noqa: E402

# url path of each page (st.navigation derives it from the file name; the default page is /)
PAGES = {
    "Leaderboard": "/",
    "Upload & runs": "/upload",
    "Compare two runs": "/compare",
    "Repeats & clusters": "/repeats",
    "Noise": "/noise",
    "Planner": "/planner",
    "Items": "/items",
    "LLM judges": "/judge",
    "Method check": "/method_check",
    "Report": "/report",
}
SETTLED_JS = """() => {
  const app = document.querySelector('.stApp');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  return document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]').length > 0;
}"""


def settle_ms(page, url: str, quiet_ms: int, timeout_s: float = 120.0) -> float:
    """Milliseconds from navigating to ``url`` to the start of a quiet stretch of ``quiet_ms``
    in which the page stays settled."""
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    since = None
    while True:
        now = time.perf_counter()
        if page.evaluate(SETTLED_JS):
            if since is None:
                since = now
            elif (now - since) * 1000 >= quiet_ms:
                return (since - t0) * 1000
        else:
            since = None
        if now - t0 > timeout_s:
            raise TimeoutError(f"{url} did not settle in {timeout_s:.0f} s")
        time.sleep(0.02)


def launch(pw):
    """Debian's Chromium, headless, without the background traffic that adds noise."""
    return pw.chromium.launch(
        executable_path=str(CHROMIUM),
        args=["--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run",
              "--disable-quic"])


def measure(url: str, repeat: int, quiet_ms: int, pages: dict[str, str]) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright
    out: dict[str, list[float]] = {}
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            for name, path in pages.items():
                times = []
                for i in range(repeat + 1):
                    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                    page = ctx.new_page()
                    try:
                        ms = settle_ms(page, url + path, quiet_ms)
                    finally:
                        ctx.close()
                    if i:                       # the first visit is the warm-up
                        times.append(ms)
                out[name] = times
                print(f"  {name:<20} median {statistics.median(times):7.0f} ms "
                      f"(range {min(times):.0f}-{max(times):.0f}, {len(times)} visits)",
                      flush=True)
        finally:
            browser.close()
    return out


def demo_store(path: Path) -> Path:
    from evalcore.ingest import read_paths
    from evalcore.store import Store
    store = Store(path)
    store.ingest(read_paths([str(ROOT / "data" / "demo")]).runs)
    store.close()
    return path


def large_store(path: Path, size: str, items: int) -> Path:
    from board_store import build_board_store
    runs, tasks = (int(v) for v in size.lower().split("x"))
    build_board_store(path, runs, tasks, items, verbose=False).close()
    return path


FLOOR_APP = 'import streamlit as st\nst.title("floor")\nst.write("one line")\n'


def floor_ms(tmp: Path, repeat: int, quiet_ms: int) -> list[float]:
    """The same measurement on a two-element Streamlit app (no evalbars code): what
    Streamlit's own start in a fresh tab costs on this machine, the floor under every page."""
    app = tmp / "floor_app.py"
    app.write_text(FLOOR_APP)
    with serve_app(tmp, tmp / "unused-store", script=app) as url:
        return measure(url, repeat, quiet_ms, {"Streamlit floor": "/"})["Streamlit floor"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", action="store_true", help="measure on the bundled demo")
    ap.add_argument("--large", metavar="RUNSxTASKS", default=None,
                    help="measure on a synthetic store of this size, e.g. 500x60")
    ap.add_argument("--items", type=int, default=60, help="items per task of --large")
    ap.add_argument("--store", type=Path, default=None, help="measure on an existing store")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quiet-ms", type=int, default=500)
    ap.add_argument("--only", default=None, help="only pages whose title contains this text")
    ap.add_argument("--floor", action="store_true",
                    help="also measure a two-element Streamlit app (Streamlit's own floor)")
    args = ap.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} not found: install Debian's chromium", file=sys.stderr)
        return 2
    pages = {k: v for k, v in PAGES.items() if not args.only or args.only.lower() in k.lower()}
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        tmp = Path(tmp)
        stores: list[tuple[str, Path, float]] = []
        if args.store:
            stores.append((str(args.store), args.store, 2000.0))
        if args.demo:
            stores.append(("demo", demo_store(tmp / "demo"), 1000.0))
        if args.large:
            t0 = time.perf_counter()
            path = large_store(tmp / "large", args.large, args.items)
            print(f"built the {args.large} store ({args.items} items per task) in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
            stores.append((f"{args.large} x {args.items} items", path, 2000.0))
        if not stores:
            ap.error("give --demo, --large or --store")
        if args.floor:
            print("a two-element Streamlit app, no evalbars code (the floor):", flush=True)
            floor_ms(tmp, args.repeat, args.quiet_ms)
        failed = 0
        for label, path, target in stores:
            print(f"{label} (target: median < {target:.0f} ms):", flush=True)
            logdir = tmp / f"log-{len(label)}-{id(path)}"
            logdir.mkdir()
            # the app process starts its slide-image probe; the first visits warm it up
            with serve_app(logdir, path) as url:
                res = measure(url, args.repeat, args.quiet_ms, pages)
            over = [k for k, v in res.items() if statistics.median(v) >= target]
            failed += len(over)
            print(f"  {'all medians under target' if not over else 'over target: ' + ', '.join(over)}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
