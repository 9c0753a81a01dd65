"""Screenshots of every dashboard page for the docs: the first screen at 1440x900, and
presentation mode (``?present=1``) at 1920x1080, on the bundled demo.

Serves the app on a free local port with a new, empty store, so it loads the bundled demo as
on a first start (or on ``--store``), opens each page in Debian's Chromium (Playwright) and waits until the
page has settled (``bench_browser.settle_ms``), then saves ``docs/screenshots/<page>.png``
and ``docs/screenshots/present-<page>.png``. Only the first screen is captured: what a
researcher sees before scrolling.

Run:  python scripts/screenshots.py [--store PATH] [--out docs/screenshots] [--only compare]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_browser import PAGES, launch, settle_ms  # noqa: E402
from tests.browser.conftest import CHROMIUM, serve_app  # noqa: E402

SIZES = {"": (1440, 900), "present-": (1920, 1080)}


PLOTS_DRAWN_JS = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
  .every(c => c.querySelector('.main-svg') !== null)"""


def _charts_drawn(page, timeout_s: float = 20.0) -> None:
    """Wait until every Plotly chart on the page has drawn its SVG (a settled script can
    still be drawing its charts), then a moment for the last frame."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(PLOTS_DRAWN_JS) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)


def file_name(title: str) -> str:
    """"Compare two runs" -> "compare"; the file names the README links to."""
    return {"Upload & runs": "upload", "Compare two runs": "compare",
            "Repeats & clusters": "repeats", "Method check": "method-check"}.get(
        title, title.lower().replace(" ", "-"))


def shoot(url: str, out: Path, pages: dict[str, str]) -> list[Path]:
    from playwright.sync_api import sync_playwright
    written = []
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            for prefix, (w, h) in SIZES.items():
                for title, path in pages.items():
                    ctx = browser.new_context(viewport={"width": w, "height": h})
                    page = ctx.new_page()
                    query = "?present=1" if prefix else ""
                    settle_ms(page, url + path + query, quiet_ms=1500)
                    _charts_drawn(page)
                    target = out / f"{prefix}{file_name(title)}.png"
                    page.screenshot(path=str(target))
                    written.append(target)
                    print(f"{target} ({w}x{h})", flush=True)
                    ctx.close()
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=None, help="a store to show (default: the demo)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--only", default=None, help="only pages whose title contains this text")
    args = ap.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} not found: install Debian's chromium", file=sys.stderr)
        return 2
    pages = {k: v for k, v in PAGES.items() if not args.only or args.only.lower() in k.lower()}
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        store = args.store or Path(tmp) / "store"
        with serve_app(Path(tmp), store) as url:
            shoot(url, args.out, pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
