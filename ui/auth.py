"""Sign-in and roles in the dashboard: who is using this session, and what they may do.

``app.py`` calls :func:`gate` before any page draws. Three cases:

- ``[auth]`` in Streamlit's secrets (``.streamlit/secrets.toml``, as ``st.login`` documents):
  sign-in is required. A visitor who is not signed in sees a sign-in button and no data;
  a signed-in user gets the role the roles file (``$EVALBARS_ROLES``, ``evalcore.roles``)
  gives their e-mail address or group claim, and no data without one.
- no ``[auth]``: the single-user local tool (``evalcore.access.LOCAL_ACTOR``); when the
  server listens beyond the loopback address, a banner says that anyone who reaches it
  may change the store.
- ``EVALBARS_READONLY=1`` (with or without sign-in): a "read-only" banner, and
  :func:`may` is False for every write, so pages show no write controls.

Pages ask :func:`may` before drawing a write control and pass :func:`actor` on every store
write; the store checks the actor again (``evalcore.access.check``), so a hidden button is
never the only guard.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

import streamlit as st

from evalcore import access
from evalcore.access import Actor
from evalcore.errors import EvalbarsError
from evalcore.roles import ENV_ROLES, Roles, load_roles, roles_path
from ui.common import md_escape

ACTOR_KEY = "auth_actor"   # the session's Actor, set by gate() on every run of app.py
LOOPBACK_NAMES = ("localhost",)


# ---- configuration -------------------------------------------------------------------------
class SecretsUnreadable(EvalbarsError):
    """A secrets file exists but Streamlit cannot read it (not TOML, a bad path): whether
    sign-in is wanted is unknown, so nobody may see data."""


def auth_configured() -> bool:
    """True when Streamlit's secrets hold an ``[auth]`` section (sign-in required); False
    when there is no secrets file or it has no ``[auth]``. ``SecretsUnreadable`` when a
    secrets file exists but cannot be read: a typo there must not open the app to all."""
    try:
        return "auth" in st.secrets
    except FileNotFoundError as exc:   # Streamlit's "no secrets" and "cannot parse" alike
        present = [p for p in st.get_option("secrets.files") or [] if os.path.exists(p)]
        if present:
            raise SecretsUnreadable(str(exc)) from None
        return False


def is_loopback(address: str | None) -> bool:
    """True for ``localhost``, ``127.x.x.x`` and ``::1``; False for an empty address, which
    Streamlit binds to every interface."""
    text = (address or "").strip().strip("[]")
    if not text:
        return False
    if text.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def served_beyond_localhost() -> bool:
    """True when this server accepts connections from other machines (``server.address``
    unset, ``0.0.0.0`` or a network address)."""
    return not is_loopback(st.get_option("server.address"))


@st.cache_resource(show_spinner=False, max_entries=4)
def _roles_at(path: str, mtime_ns: int) -> Roles:
    return load_roles(path)   # cached per file version: an edited file is read again


def current_roles() -> Roles:
    """The roles file at ``$EVALBARS_ROLES``; ``RolesFileError`` when it is unset, missing
    or malformed."""
    from evalcore.roles import RolesFileError

    path = roles_path()
    if path is None:
        raise RolesFileError(f"${ENV_ROLES}", None, "the path of a roles file",
                             "sign-in is configured but no roles file is set")
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        mtime = -1
    return _roles_at(path, mtime)


# ---- the session's user ------------------------------------------------------------------
def actor() -> Actor:
    """The Actor of this session (set by :func:`gate`); the local user without sign-in.
    With sign-in configured, a script that reaches here without the gate stops: it never
    falls back to the local user, who may do everything."""
    found = st.session_state.get(ACTOR_KEY)
    if isinstance(found, Actor):
        return found
    try:
        signed = auth_configured()
    except SecretsUnreadable:
        signed = True
    if signed:
        st.stop()
    return access.LOCAL_ACTOR


def may(action: str, *, run_owner: str | None = None) -> bool:
    """Whether this session's user may take ``action`` (``evalcore.access.ACTIONS``); False
    for every write in read-only mode. For showing or hiding controls only: the store
    checks again on the write itself."""
    return access.may(actor(), action, run_owner=run_owner)


def may_on_own_runs(action: str) -> bool:
    """Whether this session's user may take ``action`` at least on runs they uploaded
    (an uploader's tag and rename); the store decides for each run."""
    who = actor()
    return access.may(who, action, run_owner=who.owner_key)


def signed_in_actor(user: Any, roles: Roles) -> Actor | None:
    """The Actor for a signed-in ``st.user`` (any mapping of ID-token claims), or None when
    the roles file gives this user no role."""
    claims = dict(user)
    email = claims.get("email") if isinstance(claims.get("email"), str) else None
    role = roles.role_for(email, claims)
    if role is None:
        return None
    name = str(claims.get("name") or email or claims.get("sub") or "unknown")
    return Actor(name, role, email=email)


# ---- the gate ------------------------------------------------------------------------------
def gate() -> Actor:
    """Decide who this session is before any page draws; stop the script when they may
    see nothing. Returns the session's Actor (also kept for :func:`actor`)."""
    st.session_state.pop(ACTOR_KEY, None)
    try:
        sign_in = auth_configured()
    except SecretsUnreadable as exc:
        _no_pages()
        st.error(f"The secrets file cannot be read, so it is unknown whether sign-in is "
                 f"required: {md_escape(exc)}. Nobody sees data until it is fixed.")
        st.stop()
    if sign_in:
        who = _signed_in_gate()
    else:
        who = access.LOCAL_ACTOR
        if served_beyond_localhost():
            st.warning(
                "**No sign-in.** This dashboard is served beyond this computer "
                f"(server.address = {md_escape(st.get_option('server.address') or 'all')}) "
                "without `[auth]` in `.streamlit/secrets.toml`: anyone who reaches it can "
                "upload, rename and delete runs. See docs/deploy.md to add sign-in, or set "
                "`EVALBARS_READONLY=1`.", icon=":material/lock_open:")
    st.session_state[ACTOR_KEY] = who
    if access.read_only():
        st.info(f"**Read-only**: this evalbars shows results only ({access.ENV_READONLY} is "
                "set); uploading, renaming, tagging and deleting are off.",
                icon=":material/visibility:")
    return who


def _no_pages() -> None:
    """Declare an empty navigation, hidden: without it Streamlit lists the files of
    ``pages/`` in the sidebar of a session that stops before ``app.py``'s navigation."""
    st.navigation([st.Page(_blank, title="evalbars", default=True)], position="hidden")


def _blank() -> None:
    """The only page of a session that may see nothing."""


def _signed_in_gate() -> Actor:
    if not st.user.is_logged_in:
        _no_pages()
        st.title("evalbars")
        st.write("Sign in to see the evaluation results.")
        if st.button("Sign in", type="primary", key="auth_login"):
            st.login()
        st.stop()
    try:
        who = signed_in_actor(st.user, current_roles())
    except EvalbarsError as exc:
        _no_pages()
        st.error(f"Sign-in is configured, but the roles file cannot be used: "
                 f"{md_escape(exc)}. Nobody sees data until it is fixed.")
        _logout_button()
        st.stop()
    if who is None:
        shown = st.user.get("email") or st.user.get("sub") or "this account"
        _no_pages()
        st.title("evalbars")
        st.warning(f"Signed in as {md_escape(shown)}, which has no role here. Ask an admin "
                   "to add your address or group to the roles file.")
        _logout_button()
        st.stop()
    with st.sidebar:
        st.caption(f"Signed in as {md_escape(who.email or who.name)} "
                   f"({who.role.value})")
        _logout_button()
    return who


def _logout_button() -> None:
    if st.button("Sign out", key="auth_logout"):
        st.logout()
