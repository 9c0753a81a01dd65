"""Two browser sessions upload at the same time while a CLI ingest writes to the same store:
every run arrives, each session keeps its own selections, nothing errors.

The app runs on a store this module knows (to count the runs afterwards); the writers are
serialised by the store's write lock, each waits its turn.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, serve_app
from tests.browser.test_flows import main_text, no_exception, wait_idle

pytestmark = pytest.mark.browser

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MISTRAL = SHARED / "lm_eval" / "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = SHARED / "lm_eval" / "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"
CLI_LOGS = sorted((SHARED / "inspect").glob("*starsim-benchmark*.eval"))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The dashboard on a store in a temp folder: (url, store path)."""
    tmp = tmp_path_factory.mktemp("concurrent-app")
    store = tmp / "store"
    with serve_app(tmp, store) as url:
        yield url, store


def _runs(store: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), "runs",
                          "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [r["name"] for r in json.loads(out.stdout)["runs"]]


def _wait_text(page, text: str, timeout: float = 180_000) -> None:
    page.wait_for_function(
        "t => document.querySelector('[data-testid=stMain]').innerText.includes(t)", arg=text,
        timeout=timeout)


def test_two_sessions_upload_while_the_cli_ingests(app, browser, tmp_path):
    if not (MISTRAL.exists() and DIALOGPT.exists() and CLI_LOGS):
        pytest.skip(f"shared fixtures not found at {SHARED}")
    url, store = app
    a_ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    b_ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        a, b = a_ctx.new_page(), b_ctx.new_page()
        for pg in (a, b):
            pg.set_default_timeout(120_000)
            pg.goto(url + "/upload")
            wait_idle(pg, timeout=180)      # the first visit may load the demo into the store
        before = set(_runs(store))

        x = tmp_path / "tidy_x.csv"
        y = tmp_path / "tidy_y.csv"
        for f, model, shift in ((x, "session-b-x", 0), (y, "session-b-y", 1)):
            f.write_text("model,task,item_id,score\n" + "".join(
                f"{model},tidy_task,q{i},{(i + shift) % 3 == 0:d}\n" for i in range(40)))

        # all three writers at once: two uploads, one CLI ingest
        a.locator("input[type=file]").set_input_files([str(MISTRAL), str(DIALOGPT)])
        b.locator("input[type=file]").set_input_files([str(x), str(y)])
        cli = subprocess.Popen([sys.executable, "-m", "evalcore", "--store", str(store),
                                "--lock-timeout", "120", "ingest", *map(str, CLI_LOGS),
                                "--format", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        out, err = cli.communicate(timeout=300)
        assert cli.returncode == 0, err
        cli_runs = [r["name"] for r in json.loads(out)["runs"]]
        assert len(cli_runs) == len(CLI_LOGS)

        for pg in (a, b):
            _wait_text(pg, "Recognised 2 run(s); 2 added or merged.")
            wait_idle(pg, timeout=180)
            no_exception(pg)

        after = set(_runs(store))
        new = after - before
        assert {"session-b-x", "session-b-y"} <= new
        assert any("Mistral" in n for n in new) and any("DialoGPT" in n for n in new)
        assert set(cli_runs) <= after

        # each session keeps its own selections (held in its own URL and session state)
        mistral = next(n for n in new if "Mistral" in n)
        dialo = next(n for n in new if "DialoGPT" in n)
        a.goto(url + f"/compare?run_a={mistral}&run_b={dialo}&task=arc_easy")
        b.goto(url + "/compare?run_a=session-b-x&run_b=session-b-y&task=tidy_task")
        for pg in (a, b):
            wait_idle(pg, timeout=180)
            no_exception(pg)
        _wait_text(a, "Verdict")
        _wait_text(b, "Verdict")
        a.reload()
        wait_idle(a, timeout=180)
        b.reload()
        wait_idle(b, timeout=180)
        ta, tb = main_text(a), main_text(b)
        assert "run_a=session-b-x" in b.url and "tidy_task" in b.url and "tidy_task" in tb
        assert "arc_easy" in a.url and "Mistral" in a.url and "arc_easy" in ta
        assert "tidy_task" not in ta and "arc_easy" not in tb
        no_exception(a)
        no_exception(b)
    finally:
        a_ctx.close()
        b_ctx.close()
