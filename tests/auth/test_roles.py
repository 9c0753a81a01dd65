"""The roles file (evalcore/roles.py): who gets which role, and clear errors for a bad file."""

from __future__ import annotations

import pytest

from evalcore.access import Role
from evalcore.roles import ENV_ROLES, RolesFileError, load_roles, parse_roles, roles_path

GOOD = """
group_claim = "groups"

[users]
"Alice@Lab.Example" = "admin"
"*@lab.example" = "viewer"
"carol@other.example" = "uploader"

[groups]
"evals-team" = "uploader"
"evals-admins" = "Admin"
"""


@pytest.fixture
def roles(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text(GOOD)
    return load_roles(path)


def test_exact_address_case_insensitive(roles):
    assert roles.role_for("alice@lab.example") is Role.ADMIN
    assert roles.role_for("ALICE@LAB.EXAMPLE ") is Role.ADMIN
    assert roles.role_for("carol@other.example") is Role.UPLOADER


def test_domain_pattern_matches_that_domain_only(roles):
    assert roles.role_for("bob@lab.example") is Role.VIEWER
    assert roles.role_for("bob@LAB.example") is Role.VIEWER
    assert roles.role_for("bob@sub.lab.example") is None
    assert roles.role_for("bob@evil-lab.example") is None
    assert roles.role_for("lab.example@evil.example") is None


def test_unknown_user_and_missing_email_get_no_access(roles):
    assert roles.role_for("mallory@evil.example") is None
    assert roles.role_for(None) is None
    assert roles.role_for("") is None
    assert roles.role_for("not-an-address") is None


def test_highest_matching_role_wins(roles):
    # bob is a viewer by domain, an uploader by group, an admin by another group
    assert roles.role_for("bob@lab.example", {"groups": ["evals-team"]}) is Role.UPLOADER
    assert roles.role_for("bob@lab.example",
                          {"groups": ["evals-team", "evals-admins"]}) is Role.ADMIN
    # alice's address gives admin; a lower group does not lower it
    assert roles.role_for("alice@lab.example", {"groups": ["evals-team"]}) is Role.ADMIN


def test_group_claim_alone_and_as_one_string(roles):
    assert roles.role_for(None, {"groups": ["evals-team"]}) is Role.UPLOADER
    assert roles.role_for(None, {"groups": "evals-admins"}) is Role.ADMIN
    # group names are compared exactly, as the provider sends them
    assert roles.role_for(None, {"groups": ["EVALS-TEAM"]}) is None
    assert roles.role_for(None, {"groups": 5}) is None
    assert roles.role_for(None, {"roles": ["evals-team"]}) is None   # other claim


def test_custom_group_claim():
    roles = parse_roles({"group_claim": "roles", "groups": {"lab": "viewer"}})
    assert roles.role_for(None, {"roles": ["lab"]}) is Role.VIEWER
    assert roles.role_for(None, {"groups": ["lab"]}) is None


def test_unverified_email_is_not_matched(roles):
    assert roles.role_for("alice@lab.example", {"email_verified": False}) is None
    assert roles.role_for("alice@lab.example", {"email_verified": True}) is Role.ADMIN
    # the group claim still counts when the address is not verified
    assert roles.role_for("alice@lab.example",
                          {"email_verified": False, "groups": ["evals-team"]}) is Role.UPLOADER


def test_empty_file_gives_nobody_access(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text("")
    assert load_roles(path).role_for("alice@lab.example") is None


def test_roles_path_from_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_ROLES, raising=False)
    assert roles_path() is None
    monkeypatch.setenv(ENV_ROLES, "  ")
    assert roles_path() is None
    monkeypatch.setenv(ENV_ROLES, str(tmp_path / "r.toml"))
    assert roles_path() == str(tmp_path / "r.toml")


@pytest.mark.parametrize("text, where, expected", [
    ('[users]\n"a@b.example" = "owner"\n', "[users] 'a@b.example'", "one of the roles"),
    ('[users]\n"a@b.example" = 3\n', "[users] 'a@b.example'", "one of the roles"),
    ('[groups]\n"team" = "superuser"\n', "[groups] 'team'", "one of the roles"),
    ('[users]\n"lab.example" = "viewer"\n', "[users] 'lab.example'", "an e-mail address"),
    ('[users]\n"a*@lab.example" = "viewer"\n', "[users] 'a*@lab.example'",
     "an e-mail address"),
    ('[users]\n"*@*.example" = "viewer"\n', "[users] '*@*.example'", "an e-mail address"),
    ('[user]\n"a@b.example" = "viewer"\n', "key 'user'", "only the keys"),
    ('users = "a@b.example"\n', "users", "a table [users]"),
    ('group_claim = ""\n', "group_claim", "the name of a claim"),
])
def test_bad_file_names_file_key_and_expectation(tmp_path, text, where, expected):
    path = tmp_path / "roles.toml"
    path.write_text(text)
    with pytest.raises(RolesFileError) as info:
        load_roles(path)
    msg = str(info.value)
    assert str(path) in msg
    assert f"at {where}" in msg
    assert f"expected {expected}" in msg


def test_not_toml_and_missing_file(tmp_path):
    bad = tmp_path / "roles.toml"
    bad.write_text('[users\n"a@b" = "viewer"\n')
    with pytest.raises(RolesFileError, match=r"roles file .*roles\.toml: expected TOML"):
        load_roles(bad)
    bad.write_bytes(b'[users]\n"\xff@b.example" = "viewer"\n')
    with pytest.raises(RolesFileError, match="expected TOML"):
        load_roles(bad)
    with pytest.raises(RolesFileError, match=r"nothing\.toml: expected a readable TOML file"):
        load_roles(tmp_path / "nothing.toml")
