"""ui/auth.py in Streamlit's AppTest: who a session is before any page draws (sign-in
required with [auth], the local user without it), the banner when served beyond this
computer without sign-in, and read-only mode. The real sign-in through an OpenID Connect
provider in Chromium: tests/browser/test_signin.py."""

from __future__ import annotations

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from evalcore.access import LOCAL_ACTOR, Actor, Role
from evalcore.roles import parse_roles
from ui import auth

SCRIPT = """
import streamlit as st
from ui import auth
who = auth.gate()
st.write(f"ACTOR {who.name} {who.role.value} ingest={auth.may('ingest')} "
         f"delete={auth.may('delete')} rename_own={auth.may_on_own_runs('rename')}")
"""
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback",
        "cookie_secret": "a-test-cookie-secret-0123456789", "client_id": "x",
        "client_secret": "y",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}
ROLES = '[users]\n"*@lab.example" = "viewer"\n"ada@lab.example" = "admin"\n' \
        '[groups]\n"evals-team" = "uploader"\n'


@pytest.fixture
def address():
    """Set ``server.address`` for one test and put the old value back."""
    before = st_config.get_option("server.address")
    yield lambda value: st_config.set_option("server.address", value)
    st_config.set_option("server.address", before)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("EVALBARS_READONLY", "EVALBARS_ROLES"):
        monkeypatch.delenv(name, raising=False)


def run(secrets: dict | None = None, user: dict | None = None) -> AppTest:
    at = AppTest.from_string(SCRIPT, default_timeout=30)
    if secrets:
        at.secrets.update(secrets)
    if user is not None:
        at.user = user
    return at.run()


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.warning] \
        + [e.value for e in at.info] + [e.value for e in at.error] \
        + [c.value for c in at.caption]
    return "\n".join(str(p) for p in parts).replace("\\", "")   # Markdown escapes off


def actor_line(at: AppTest) -> str:
    return next((str(m.value) for m in at.markdown if str(m.value).startswith("ACTOR ")), "")


def test_without_auth_on_localhost_the_local_user_may_do_everything(address):
    address("127.0.0.1")
    at = run()
    assert not at.exception
    assert actor_line(at) == (f"ACTOR {LOCAL_ACTOR.name} admin ingest=True delete=True "
                              "rename_own=True")
    assert len(at.warning) == 0 and len(at.info) == 0


@pytest.mark.parametrize("where", ["0.0.0.0", "", "192.168.1.20", "::"])
def test_without_auth_beyond_localhost_a_banner_says_so(address, where):
    address(where)
    at = run()
    assert not at.exception
    assert "No sign-in" in texts(at) and "anyone who reaches it" in texts(at)
    assert actor_line(at).startswith(f"ACTOR {LOCAL_ACTOR.name} admin")


def test_with_auth_no_banner_even_beyond_localhost(address, tmp_path, monkeypatch):
    address("0.0.0.0")
    (tmp_path / "roles.toml").write_text(ROLES)
    monkeypatch.setenv("EVALBARS_ROLES", str(tmp_path / "roles.toml"))
    at = run({"auth": AUTH}, {"is_logged_in": True, "email": "ada@lab.example"})
    assert "No sign-in" not in texts(at)
    assert actor_line(at).startswith("ACTOR ada@lab.example admin")


def test_read_only_shows_it_and_allows_no_write(address, monkeypatch):
    address("127.0.0.1")
    monkeypatch.setenv("EVALBARS_READONLY", "1")
    at = run()
    assert "Read-only" in texts(at)
    assert actor_line(at).endswith("ingest=False delete=False rename_own=False")


def test_with_auth_an_anonymous_visitor_gets_only_the_sign_in_button():
    at = run({"auth": AUTH}, {"is_logged_in": False})
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert actor_line(at) == ""          # the script stopped before the page


@pytest.mark.parametrize("email, groups, expected", [
    ("vic@lab.example", [], "ACTOR vic@lab.example viewer ingest=False delete=False "
                            "rename_own=False"),
    ("ulla@partner.example", ["evals-team"], "ACTOR ulla@partner.example uploader "
                                             "ingest=True delete=False rename_own=True"),
    ("ada@lab.example", [], "ACTOR ada@lab.example admin ingest=True delete=True "
                            "rename_own=True"),
])
def test_signed_in_user_gets_the_role_of_the_roles_file(tmp_path, monkeypatch, email, groups,
                                                        expected):
    (tmp_path / "roles.toml").write_text(ROLES)
    monkeypatch.setenv("EVALBARS_ROLES", str(tmp_path / "roles.toml"))
    at = run({"auth": AUTH}, {"is_logged_in": True, "email": email, "groups": groups})
    assert not at.exception
    assert actor_line(at) == expected
    role = expected.split()[2]
    assert f"Signed in as {email} ({role})" in texts(at)


def test_signed_in_without_a_role_sees_nothing(tmp_path, monkeypatch):
    (tmp_path / "roles.toml").write_text(ROLES)
    monkeypatch.setenv("EVALBARS_ROLES", str(tmp_path / "roles.toml"))
    at = run({"auth": AUTH}, {"is_logged_in": True, "email": "eve@elsewhere.example"})
    assert actor_line(at) == ""
    assert "which has no role here" in texts(at)
    assert [b.label for b in at.button] == ["Sign out"]


def test_signed_in_with_no_roles_file_or_a_bad_one_nobody_sees_data(tmp_path, monkeypatch):
    user = {"is_logged_in": True, "email": "ada@lab.example"}
    at = run({"auth": AUTH}, user)
    assert actor_line(at) == "" and "EVALBARS_ROLES" in texts(at)
    bad = tmp_path / "roles.toml"
    bad.write_text('[users]\n"ada@lab.example" = "owner"\n')
    monkeypatch.setenv("EVALBARS_ROLES", str(bad))
    at = run({"auth": AUTH}, user)
    assert actor_line(at) == ""
    shown = texts(at)
    assert "roles file" in shown and "one of the roles viewer, uploader, admin" in shown


@pytest.mark.parametrize("address, loopback", [
    ("localhost", True), ("127.0.0.1", True), ("127.0.1.1", True), ("::1", True),
    ("[::1]", True), ("LOCALHOST", True), ("", False), (None, False), ("0.0.0.0", False),
    ("::", False), ("10.0.0.5", False), ("lab-server", False)])
def test_is_loopback(address, loopback):
    assert auth.is_loopback(address) is loopback


def test_signed_in_actor_from_claims():
    roles = parse_roles({"users": {"*@lab.example": "viewer"},
                         "groups": {"evals-team": "uploader"}})
    assert auth.signed_in_actor({"email": "vic@lab.example", "name": "Vic"}, roles) == \
        Actor("Vic", Role.VIEWER, email="vic@lab.example")
    assert auth.signed_in_actor({"sub": "u1", "groups": ["evals-team"]}, roles) == \
        Actor("u1", Role.UPLOADER, email=None)
    assert auth.signed_in_actor({"email": "x@else.example"}, roles) is None


def test_unreadable_secrets_file_fails_closed(tmp_path, monkeypatch):
    """A secrets.toml with a syntax error must not turn sign-in off: SecretsUnreadable (the
    gate shows it and stops). No file at all, or one without [auth]: no sign-in."""
    from streamlit.runtime.secrets import Secrets

    path = tmp_path / "secrets.toml"
    before = st_config.get_option("secrets.files")
    st_config.set_option("secrets.files", [str(path)])
    try:
        monkeypatch.setattr(auth.st, "secrets", Secrets())
        assert auth.auth_configured() is False                 # no file
        path.write_text('[auth\nclient_id = "x"\n')
        monkeypatch.setattr(auth.st, "secrets", Secrets())
        with pytest.raises(auth.SecretsUnreadable, match="secrets"):
            auth.auth_configured()
        path.write_text('[other]\nkey = "x"\n')
        monkeypatch.setattr(auth.st, "secrets", Secrets())
        assert auth.auth_configured() is False
        path.write_text('[auth]\nclient_id = "x"\n')
        monkeypatch.setattr(auth.st, "secrets", Secrets())
        assert auth.auth_configured() is True
    finally:
        st_config.set_option("secrets.files", before)


def test_a_page_without_the_gate_never_acts_as_the_local_user_under_sign_in():
    """A script that asks for the actor without app.py's gate (no Actor in the session)
    stops when sign-in is configured, instead of acting as the all-powerful local user."""
    script = ("import streamlit as st\nfrom ui import auth\n"
              "who = auth.actor()\nst.write(f'ACTOR {who.name} {who.role.value}')\n")
    at = AppTest.from_string(script, default_timeout=30)
    at.secrets.update({"auth": AUTH})
    at.run()
    assert not at.exception and actor_line(at) == ""
    at = AppTest.from_string(script, default_timeout=30).run()
    assert actor_line(at) == f"ACTOR {LOCAL_ACTOR.name} admin"
