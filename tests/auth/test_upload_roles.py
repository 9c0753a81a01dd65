"""The Upload & runs page under each role (Streamlit's AppTest; the session's Actor is what
``ui/auth.gate`` keeps in the session): a viewer gets no write control, an uploader uploads
and renames only own runs, an admin deletes, read-only mode shows no write control. The same
in Chromium through a real sign-in: tests/browser/test_signin.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from evalcore.access import Actor, Role
from evalcore.ingest import parse_paths
from evalcore.store import Store
from ui.auth import ACTOR_KEY

ROOT = Path(__file__).resolve().parents[2]
MISTRAL = "lm_eval/results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = "lm_eval/results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"
VIEWER = Actor("Vic", Role.VIEWER, email="vic@lab.example")
UPLOADER = Actor("Ulla", Role.UPLOADER, email="ulla@lab.example")
ADMIN = Actor("Ada", Role.ADMIN, email="ada@lab.example")


@pytest.fixture
def seeded(monkeypatch, store_location, fixtures_dir):
    """A store with one run uploaded by someone else; the page uses it. Yields its path."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("EVALBARS_DEMO", "0")
    monkeypatch.delenv("EVALBARS_READONLY", raising=False)
    for key, value in store_location.env.items():
        monkeypatch.setenv(key, value)
    path = store_location.env["EVALBARS_STORE"]
    store = Store(path)
    store.ingest(parse_paths([fixtures_dir / MISTRAL]), actor=ADMIN)
    store.close()
    yield path
    st.cache_resource.clear()
    st.cache_data.clear()


def upload_page(actor: Actor) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "upload.py"), default_timeout=60)
    at.session_state[ACTOR_KEY] = actor
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def labels(at: AppTest) -> set[str]:
    return {b.label for b in at.button}


def captions(at: AppTest) -> str:
    return "\n".join(str(c.value) for c in at.caption).replace("\\", "")


def test_viewer_gets_no_write_control(seeded):
    at = upload_page(VIEWER)
    assert len(at.get("file_uploader")) == 0
    assert not labels(at) & {"Rename", "Save tags", "Delete this run ...", "Yes, delete"}
    assert "Uploading: not available, your role (viewer) does not allow it." in captions(at)
    assert "Renaming, tagging and deleting runs: not available" in captions(at)
    assert len(Store(seeded).runs()) == 1


def test_uploader_uploads_and_renames_only_own_runs(seeded, fixtures_dir):
    at = upload_page(UPLOADER)
    assert "Delete this run ..." not in labels(at)
    # the run of someone else: rename and tag shown but disabled, with the reason
    assert at.button(key="up_rename").disabled and at.button(key="up_save_tags").disabled
    assert "You may rename and tag only the runs you uploaded" in captions(at)
    data = (fixtures_dir / DIALOGPT).read_bytes()
    at.file_uploader(key="up_files").set_value([(DIALOGPT.split("/")[-1], data,
                                                 "application/json")]).run()
    assert not at.exception
    store = Store(seeded)
    runs = store.runs()
    assert len(runs) == 2
    mine = [int(r) for r in runs["run_id"] if store.run_owner(int(r)) == "ulla@lab.example"]
    assert len(mine) == 1
    name = str(runs.set_index("run_id").loc[mine[0], "name"])
    at.selectbox(key="up_target").set_value(name).run()
    assert "You may rename and tag only" not in captions(at)
    at.text_input(key=f"up_newname_{mine[0]}").set_value("ullas-run").run()
    at.button(key="up_rename").click().run()
    assert not at.exception
    assert "ullas-run" in set(Store(seeded).runs()["name"])


def test_admin_deletes_after_confirmation(seeded):
    at = upload_page(ADMIN)
    assert len(at.get("file_uploader")) == 1
    at.button(key="up_delete").click().run()
    at.button(key="up_confirm_yes").click().run()
    assert not at.exception
    assert Store(seeded).runs().empty


def test_read_only_shows_no_write_control_even_to_an_admin(seeded, monkeypatch):
    monkeypatch.setenv("EVALBARS_READONLY", "1")
    at = upload_page(ADMIN)
    assert len(at.get("file_uploader")) == 0
    assert not labels(at) & {"Rename", "Save tags", "Delete this run ..."}
    assert "Uploading: not available, this evalbars is read-only." in captions(at)
