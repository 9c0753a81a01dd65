"""The access model: roles, the own-runs rule, read-only mode, and the store refusing what
a role does not allow (the store layer is the permission, not the pages' buttons)."""

from __future__ import annotations

import pytest

from evalcore import access
from evalcore.access import LOCAL_ACTOR, Actor, Role, check, may
from evalcore.errors import NotAllowed
from evalcore.store import Store
from tests.store.conftest import make_run, store_fingerprint

VIEWER = Actor("vera", Role.VIEWER, "vera@lab.org")
UPLOADER = Actor("ulla", Role.UPLOADER, "Ulla@Lab.org")
OTHER_UPLOADER = Actor("otto", Role.UPLOADER, "otto@lab.org")
ADMIN = Actor("ada", Role.ADMIN, "ada@lab.org")


@pytest.fixture(autouse=True)
def _writable(monkeypatch):
    monkeypatch.delenv(access.ENV_READONLY, raising=False)


def test_role_table():
    expected = {
        Role.VIEWER: {"read"},
        Role.UPLOADER: {"read", "ingest"},          # tag / rename: own runs only
        Role.ADMIN: set(access.ACTIONS),
    }
    for role, allowed in expected.items():
        actor = Actor("x", role)
        for action in access.ACTIONS:
            assert may(actor, action) == (action in allowed), (role, action)


def test_uploader_may_tag_and_rename_only_own_runs():
    assert may(UPLOADER, "rename", run_owner="ulla@lab.org")      # e-mail: any case
    assert may(UPLOADER, "tag", run_owner="Ulla@Lab.org")
    assert not may(UPLOADER, "rename", run_owner="otto@lab.org")
    assert not may(UPLOADER, "tag", run_owner=None)               # unrecorded: not theirs
    assert not may(UPLOADER, "delete", run_owner="ulla@lab.org")  # delete: admins only
    assert may(ADMIN, "rename", run_owner="otto@lab.org")


def test_local_actor_is_admin_and_default():
    assert LOCAL_ACTOR.role is Role.ADMIN and LOCAL_ACTOR.name
    check(None, "delete")
    assert access.local_actor("ci-bot") == Actor("ci-bot", Role.ADMIN)
    assert access.local_actor("  ") is LOCAL_ACTOR


def test_unknown_action_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown action"):
        check(ADMIN, "drop")


@pytest.mark.parametrize("value,on", [("1", True), ("true", True), ("YES", True), ("on", True),
                                      ("0", False), ("", False), ("no", False)])
def test_read_only_switch(monkeypatch, value, on):
    monkeypatch.setenv(access.ENV_READONLY, value)
    assert access.read_only() is on
    assert may(ADMIN, "read")
    assert may(ADMIN, "delete") is (not on)
    if on:
        with pytest.raises(NotAllowed, match="read-only"):
            check(ADMIN, "ingest")


def _store(tmp_path) -> Store:
    store = Store(tmp_path / "s", lock_timeout=5.0)
    store.ingest([make_run("mine", files=["m.json"])], actor=UPLOADER)
    store.ingest([make_run("theirs", files=["t.json"])], actor=OTHER_UPLOADER)
    return store


def test_store_refuses_what_the_role_does_not_allow(tmp_path):
    store = _store(tmp_path)
    fp = store_fingerprint(store)
    refused = [
        lambda: store.ingest([make_run("v", files=["v.json"])], actor=VIEWER),
        lambda: store.rename_run("mine", "x", actor=VIEWER),
        lambda: store.set_tags("mine", ["x"], actor=VIEWER),
        lambda: store.delete_run("mine", actor=VIEWER),
        lambda: store.delete_run("mine", actor=UPLOADER),
        lambda: store.rename_run("theirs", "x", actor=UPLOADER),
        lambda: store.set_tags("theirs", ["x"], actor=UPLOADER),
        lambda: store.maintain(actor=UPLOADER),
        lambda: store.restore_run("gone", actor=UPLOADER),
    ]
    for call in refused:
        with pytest.raises(NotAllowed, match="refused"):
            call()
    assert store_fingerprint(store) == fp
    store.rename_run("mine", "mine-2", actor=UPLOADER)      # own run: allowed
    store.set_tags("mine-2", ["seed=1"], actor=UPLOADER)
    store.delete_run("theirs", actor=ADMIN)
    assert sorted(store.runs()["name"]) == ["mine-2"]


def test_read_only_store_refuses_every_write(tmp_path, monkeypatch):
    store = _store(tmp_path)
    fp = store_fingerprint(store)
    monkeypatch.setenv(access.ENV_READONLY, "1")
    for call in (lambda: store.ingest([make_run("n", files=["n.json"])]),
                 lambda: store.rename_run("mine", "x"), lambda: store.set_tags("mine", ["x"]),
                 lambda: store.delete_run("mine"), lambda: store.maintain(),
                 lambda: store.restore_run("x")):
        with pytest.raises(NotAllowed, match="read-only"):
            call()
    assert store_fingerprint(store) == fp
    assert len(store.runs()) == 2                                 # reads still work
    with pytest.raises(NotAllowed, match="read-only"):
        Store(tmp_path / "new")                                   # nothing created
    assert not (tmp_path / "new").exists()


def test_read_only_refuses_a_schema_upgrade(tmp_path, monkeypatch):
    store = _store(tmp_path)
    store._write(lambda con: con.execute(
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'"), "test: an older schema")
    fp = store_fingerprint(store)
    monkeypatch.setenv(access.ENV_READONLY, "1")
    with pytest.raises(NotAllowed, match="read-only"):
        Store(tmp_path / "s")
    monkeypatch.delenv(access.ENV_READONLY)
    assert store_fingerprint(store) == fp


def test_read_only_catalog_is_attached_read_only(tmp_path, monkeypatch):
    """Defence in depth: in read-only mode the catalog itself is attached READ_ONLY, so even
    a write that skipped ``access.check`` is refused by the engine."""
    from evalcore.errors import StoreError
    store = _store(tmp_path)
    fp = store_fingerprint(store)
    monkeypatch.setenv(access.ENV_READONLY, "1")
    ro = Store(tmp_path / "s")
    with pytest.raises(StoreError, match="read-only mode"):
        ro._write(lambda con: con.execute("DELETE FROM runs"), "a write without a check")
    monkeypatch.delenv(access.ENV_READONLY)
    assert store_fingerprint(store) == fp


def test_read_only_creates_no_team_store(pg_cluster, tmp_path, monkeypatch):
    """A new PostgreSQL database in read-only mode: refused, and DuckLake's catalog tables
    are not created in it."""
    import duckdb

    from evalcore.store.connection import _duckdb_config
    db = pg_cluster.new_database()
    monkeypatch.setenv(access.ENV_READONLY, "1")
    with pytest.raises(NotAllowed, match="read-only"):
        Store("ducklake:postgres:" + pg_cluster.dsn(db), data_path=str(tmp_path / "data"))
    con = duckdb.connect(":memory:", config=_duckdb_config())
    try:
        con.execute(f"ATTACH '{pg_cluster.dsn(db)}' AS pg (TYPE postgres, READ_ONLY)")
        tables = con.execute("SELECT * FROM postgres_query('pg', 'SELECT count(*) FROM "
                             "information_schema.tables WHERE table_schema = ''public''')"
                             ).fetchall()
    finally:
        con.close()
    assert tables == [(0,)]
