"""Sign-in in the real Chromium against a real OpenID Connect provider on 127.0.0.1
(tests/auth/oidc_provider.py): the app is served with ``[auth]`` in its secrets and a roles
file. An anonymous visitor sees no data; a viewer sees the runs but no upload or delete
controls, and the store refuses a delete with the viewer's Actor; an uploader (by group
claim) may upload but not delete; an admin deletes a run; a user without a role sees
nothing."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest

from evalcore.access import Actor, Role
from evalcore.errors import NotAllowed
from evalcore.ingest import parse_paths
from evalcore.store import Store
from tests.auth.oidc_provider import auth_secrets, oidc_provider
from tests.browser.conftest import ARTIFACTS, serve_app
from tests.browser.test_flows import DIALOGPT, LM_EVAL, MISTRAL, main_text, no_exception, wait_idle

GEMMA = "results-with-samples_v0.4.8_gemma-2b_gsm8k_limit8.json"

pytestmark = pytest.mark.browser

USERS = [
    {"sub": "vic", "email": "vic@lab.example", "email_verified": True},
    {"sub": "ada", "email": "ada@lab.example", "email_verified": True},
    {"sub": "ulla", "email": "ulla@partner.example", "groups": ["evals-team"]},
    {"sub": "eve", "email": "eve@elsewhere.example"},
]
ROLES = """
[users]
"*@lab.example" = "viewer"
"ada@lab.example" = "admin"

[groups]
"evals-team" = "uploader"
"""


@pytest.fixture(scope="module")
def signin_app(tmp_path_factory):
    """The app on a store holding two lm_eval runs, sign-in through the provider; yields
    (app URL, provider URL, store path, run names)."""
    tmp = tmp_path_factory.mktemp("signin")
    store_path, names = seed_store(tmp)
    (tmp / "roles.toml").write_text(ROLES)
    with oidc_provider(tmp, USERS) as provider:
        (tmp / "secrets.toml").write_text(auth_secrets(provider))
        env = {"STREAMLIT_SECRETS_FILES": str(tmp / "secrets.toml"),
               "EVALBARS_ROLES": str(tmp / "roles.toml"), "EVALBARS_DEMO": "0"}
        with mock.patch.dict(os.environ, env), serve_app(tmp, store_path) as url:
            yield url, provider, store_path, names


def seed_store(folder: Path) -> tuple[Path, list[str]]:
    """A store in ``folder`` holding two lm_eval runs: (store path, run names)."""
    if not (LM_EVAL / MISTRAL).exists():
        pytest.skip(f"shared fixtures not found at {LM_EVAL}")
    store_path = folder / "store"
    store = Store(str(store_path))
    report = store.ingest(parse_paths([LM_EVAL / MISTRAL, LM_EVAL / DIALOGPT]))
    store.close()
    return store_path, [str(n) for n in report.runs["name"]]


@pytest.fixture
def fresh_page(browser, request):
    """A page in its own browser context (no sign-in cookie from another test); a failed
    test leaves its screenshot in tests/browser/artifacts/."""
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


def sign_in(page, app_url: str, provider_url: str, sub: str) -> None:
    """Click the app's Sign in button, pick ``sub`` on the provider's page, come back."""
    page.goto(app_url)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(provider_url + "/**")
    page.locator(f"button[name='sub'][value='{sub}']").click()
    page.wait_for_url(app_url + "/**")
    wait_idle(page)
    no_exception(page)


def sidebar_text(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def open_upload_page(page, app_url: str) -> str:
    page.goto(app_url + "/upload")
    wait_idle(page)
    no_exception(page)
    page.get_by_text("Runs in the store").wait_for()
    return main_text(page)


def runs_shown(page, app_url: str) -> str:
    """The text of the Compare page, whose run pickers show run names as text (the runs
    table of Upload & runs is drawn on a canvas)."""
    page.goto(app_url + "/compare")
    wait_idle(page)
    no_exception(page)
    return main_text(page)


def test_anonymous_visitor_sees_no_data(signin_app, fresh_page):
    url, _, _, names = signin_app
    for path in ("", "/upload", "/compare", "/report"):
        fresh_page.goto(url + path)
        wait_idle(fresh_page)
        no_exception(fresh_page)
        fresh_page.get_by_role("button", name="Sign in").wait_for()
        body = fresh_page.locator("body").inner_text()
        assert "Sign in to see" in body
        assert not any(name in body for name in names), body
        assert "Upload & runs" not in body and "Leaderboard" not in body   # no navigation
        assert fresh_page.locator("[data-testid='stSidebarNav']").count() == 0
        assert fresh_page.locator("[data-testid='stDataFrame']").count() == 0
        assert fresh_page.locator("[data-testid='stFileUploader']").count() == 0


def test_viewer_reads_but_cannot_upload_or_delete(signin_app, fresh_page):
    url, provider, store_path, names = signin_app
    sign_in(fresh_page, url, provider, "vic")
    assert "vic@lab.example (viewer)" in sidebar_text(fresh_page)
    text = open_upload_page(fresh_page, url)
    assert fresh_page.locator("[data-testid='stFileUploader']").count() == 0
    assert fresh_page.get_by_role("button", name="Delete this run ...").count() == 0
    assert fresh_page.get_by_role("button", name="Rename").count() == 0
    assert "Uploading: not available, your role (viewer) does not allow it." in text
    # a hidden button is not the permission: the store refuses the viewer's delete itself
    store = Store(str(store_path))
    try:
        run_id = int(store.runs()["run_id"].iloc[0])
        with pytest.raises(NotAllowed, match="viewer"):
            store.delete_run(run_id, actor=Actor("vic", Role.VIEWER, email="vic@lab.example"))
        assert len(store.runs()) == len(names)
    finally:
        store.close()
    shown = runs_shown(fresh_page, url)
    assert all(name in shown for name in names), shown


def pick_run(page, name: str) -> None:
    """Choose the run ``name`` in the Manage a run selectbox (typed, then clicked)."""
    box = page.get_by_role("combobox", name="Run", exact=True)
    box.click()
    box.fill("")
    page.keyboard.type(name)
    page.get_by_role("option").filter(has_text=name).first.click()
    wait_idle(page)


def test_uploader_by_group_uploads_and_renames_only_own_runs(signin_app, fresh_page):
    """The group claim makes ulla an uploader: she uploads a run, may rename it, may not
    rename another's run (control disabled in the page, refused by the store), and has no
    delete control."""
    url, provider, store_path, names = signin_app
    sign_in(fresh_page, url, provider, "ulla")
    assert "ulla@partner.example (uploader)" in sidebar_text(fresh_page)
    open_upload_page(fresh_page, url)
    assert fresh_page.get_by_role("button", name="Delete this run ...").count() == 0
    fresh_page.locator("input[type=file]").set_input_files(str(LM_EVAL / GEMMA))
    wait_idle(fresh_page, timeout=120)
    fresh_page.wait_for_function(
        "() => document.querySelector('[data-testid=stMain]').innerText.includes('Recognised')")
    no_exception(fresh_page)
    store = Store(str(store_path))
    try:
        runs = store.runs()
        mine = [str(n) for n in runs["name"] if str(n) not in names]
        assert len(mine) == 1
        ids = dict(zip(runs["name"].astype(str), runs["run_id"].astype(int)))
        assert store.run_owner(ids[mine[0]]) == "ulla@partner.example"
    finally:
        store.close()
    rename = fresh_page.get_by_role("button", name="Rename", exact=True)
    pick_run(fresh_page, names[0])
    assert "You may rename and tag only the runs you uploaded" in main_text(fresh_page)
    assert rename.is_disabled()
    pick_run(fresh_page, mine[0])
    assert "You may rename and tag only the runs you uploaded" not in main_text(fresh_page)
    ulla = Actor("ulla", Role.UPLOADER, email="ulla@partner.example")
    store = Store(str(store_path))
    try:
        with pytest.raises(NotAllowed, match="only runs they uploaded"):
            store.rename_run(ids[names[0]], "taken-over", actor=ulla)
        store.rename_run(ids[mine[0]], mine[0] + "-renamed", actor=ulla)
        store.delete_run(ids[mine[0]], actor=Actor("admin", Role.ADMIN))   # as it was
    finally:
        store.close()


def test_user_without_a_role_sees_nothing(signin_app, fresh_page):
    url, provider, _, names = signin_app
    sign_in(fresh_page, url, provider, "eve")
    body = fresh_page.locator("body").inner_text()
    assert "eve@elsewhere.example, which has no role here" in body
    assert not any(name in body for name in names)
    assert fresh_page.get_by_role("button", name="Sign out").count() == 1


def test_admin_deletes_a_run(signin_app, fresh_page):
    url, provider, store_path, names = signin_app
    sign_in(fresh_page, url, provider, "ada")
    assert "ada@lab.example (admin)" in sidebar_text(fresh_page)
    open_upload_page(fresh_page, url)
    assert fresh_page.locator("[data-testid='stFileUploader']").count() == 1
    fresh_page.get_by_role("button", name="Delete this run ...").click()
    wait_idle(fresh_page)
    fresh_page.get_by_role("button", name="Yes, delete").click()
    wait_idle(fresh_page)
    no_exception(fresh_page)
    fresh_page.get_by_text("Deleted 1 run(s).").wait_for()
    store = Store(str(store_path))
    try:
        assert len(store.runs()) == len(names) - 1
    finally:
        store.close()


def test_read_only_app_shows_no_write_control(browser, fresh_page, tmp_path):
    """Without sign-in, with EVALBARS_READONLY=1: the runs are shown, "Read-only" is said,
    and the upload page has no upload, rename, tag or delete control."""
    store_path, names = seed_store(tmp_path)
    env = {"EVALBARS_READONLY": "1", "EVALBARS_DEMO": "0"}
    with mock.patch.dict(os.environ, env):
        for name in ("STREAMLIT_SECRETS_FILES", "EVALBARS_ROLES"):   # no sign-in here
            os.environ.pop(name, None)
        with serve_app(tmp_path, store_path) as url:
            text = open_upload_page(fresh_page, url)
            assert "Read-only" in text
            assert "Uploading: not available, this evalbars is read-only." in text
            assert fresh_page.locator("[data-testid='stFileUploader']").count() == 0
            for label in ("Rename", "Save tags", "Delete this run ..."):
                assert fresh_page.get_by_role("button", name=label).count() == 0, label
            shown = runs_shown(fresh_page, url)
            assert all(name in shown for name in names), shown
