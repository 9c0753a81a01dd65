"""The slide-image probe (kaleido + Chromium) runs in a background thread: drawing a page
never waits for the browser to start; the zip and the tests do wait for the answer."""

from __future__ import annotations

import threading
import time

import pytest

from ui import export


@pytest.fixture
def fresh_probe(monkeypatch):
    monkeypatch.setattr(export, "_PROBE", {})
    release = threading.Event()

    def slow_failing_probe() -> bool:
        release.wait(5)
        return False

    monkeypatch.setattr(export, "_render_probe", slow_failing_probe)
    monkeypatch.setattr(export, "_browser_found", lambda: True)
    yield release
    release.set()


def test_page_drawing_does_not_wait_for_the_probe(fresh_probe):
    t0 = time.perf_counter()
    assert export.images_available(wait=False) is True          # the quick guess
    assert time.perf_counter() - t0 < 1.0
    assert export.start_image_probe() is export.start_image_probe()   # one probe per process
    fresh_probe.set()
    assert export.images_available(wait=True) is False           # the probe's answer
    assert export.images_available(wait=False) is False          # and from then on


def test_quick_guess_follows_browser_path(monkeypatch, tmp_path):
    browser = tmp_path / "my-chromium"
    monkeypatch.setenv("BROWSER_PATH", str(browser))
    assert export._browser_found() is False
    browser.write_text("")
    assert export._browser_found() is (__import__("importlib").util.find_spec("kaleido")
                                       is not None)
