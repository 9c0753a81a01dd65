"""Upload & runs in a real Chromium: files added to the uploader a second time (it keeps every
file of the session) are reported as already stored, never as bad, and only the new file's run
as new. The tables are drawn on a canvas; their contents are checked in
tests/pages/test_upload.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.test_flows import LM_EVAL, MISTRAL, main_text, no_exception, wait_idle

pytestmark = pytest.mark.browser

BOREAL = Path(__file__).resolve().parents[2] / "data" / "demo" / "lm_eval" / "demo-org__boreal-8b"


def test_files_added_twice_are_already_stored(app_url, page):
    if not (LM_EVAL / MISTRAL).exists():
        pytest.skip(f"shared fixtures not found at {LM_EVAL}")
    boreal = sorted(str(p) for p in BOREAL.iterdir())
    page.goto(app_url + "/upload")
    wait_idle(page, 180)
    uploader = page.locator("input[type=file]")
    uploader.set_input_files(boreal)                 # the demo already holds these runs
    wait_idle(page, 180)
    no_exception(page)
    text = main_text(page)
    assert ("Already stored: 8 file(s) (runs demo-org/boreal-8b, demo-org/boreal-8b @ "
            "2026-03-03 14:40); nothing was written for them.") in text
    assert "not stored" not in text and "Recognised" not in text

    uploader.set_input_files(boreal + [str(LM_EVAL / MISTRAL)])   # the list now holds 17
    wait_idle(page, 180)
    no_exception(page)
    text = main_text(page)
    assert ("Recognised 1 run(s); 1 added or merged. New: mistralai/Mistral-7B-v0.1 (first in "
            "the runs table below).") in text
    assert "Already stored: 8 file(s)" in text
    assert "8 file(s) in the list have the same content as another one and were read once" in text
    assert "not stored" not in text and "bad" not in text
    assert "samples_*.jsonl" in text                 # the help text keeps its asterisks
