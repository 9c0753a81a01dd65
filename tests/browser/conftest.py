"""Real-browser fixtures: the app served by `streamlit run` and Debian's Chromium via Playwright.

Playwright's own browser download cannot work here, so we launch /usr/bin/chromium
(installed by scripts/test.sh). Without it, or without the playwright package, every
browser test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import stop

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("EVALBARS_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = ROOT / "tests" / "browser" / "artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(tmp: Path, store: Path, script: str | Path = "app.py") -> Iterator[str]:
    """Run ``streamlit run app.py`` (or ``script``) on ``store`` (log in ``tmp``) until the
    block ends; yield its URL once the health check answers (60 s at most)."""
    port = _free_port()
    env = dict(os.environ, EVALBARS_STORE=str(store))
    log = open(tmp / "streamlit.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script),
         "--server.address=127.0.0.1", f"--server.port={port}", "--server.headless=true",
         "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError("streamlit did not start:\n" + (tmp / "streamlit.log").read_text())
            time.sleep(0.3)
        yield url
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """Start the dashboard on a fresh store in a temp folder; yield its URL."""
    tmp = tmp_path_factory.mktemp("browser-app")
    with serve_app(tmp, tmp / "store") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found (scripts/test.sh installs Debian's chromium as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
