"""The roles file: which signed-in user gets which role (viewer, uploader, admin).

The dashboard signs people in through an OpenID Connect provider (``st.login``); this
module turns the identity the provider vouches for (e-mail address, group claim) into an
``evalcore.access.Role``. The file is TOML, its path in ``$EVALBARS_ROLES``::

    # the ID-token claim that lists the user's groups (optional; default "groups")
    group_claim = "groups"

    [users]                      # e-mail address or *@domain -> role
    "alice@lab.example" = "admin"
    "*@lab.example" = "viewer"

    [groups]                     # a group named in the provider's group claim -> role
    "evals-team" = "uploader"

Rules:

* Addresses and domains compare case-insensitively; ``*@lab.example`` matches addresses at
  exactly that domain (not ``x@sub.lab.example``; list a subdomain on its own line).
* When several entries match, the highest role wins (admin > uploader > viewer).
* A user no entry matches has **no access** (``role_for`` returns None): the dashboard
  shows no data to them. There is no default role; ``"*@domain"`` is how to open the
  dashboard to a whole organisation.
* An address whose ``email_verified`` claim is present and false is not matched against
  ``[users]`` (anyone can type an unverified address at some providers); groups still count.
* The group claim may be a list of names or one name (a string).

A file that is missing, not TOML, or holds an unknown key or role raises
``RolesFileError`` naming the file, the key and what was expected.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.access import Role
from evalcore.errors import EvalbarsError

ENV_ROLES = "EVALBARS_ROLES"
DEFAULT_GROUP_CLAIM = "groups"
TOP_LEVEL_KEYS = ("group_claim", "users", "groups")
# each role includes the ones before it; the highest matching one wins
RANK: dict[Role, int] = {Role.VIEWER: 1, Role.UPLOADER: 2, Role.ADMIN: 3}


class RolesFileError(EvalbarsError):
    """The roles file could not be used: names the file, the key and what was expected."""

    def __init__(self, file: str, where: str | None, expected: str, detail: str | None = None):
        self.file = file
        self.where = where
        self.expected = expected
        place = f" at {where}" if where else ""
        extra = f" ({detail})" if detail else ""
        super().__init__(f"roles file {file}{place}: expected {expected}{extra}")


@dataclass(frozen=True)
class Roles:
    """A parsed roles file. ``users``: lower-cased address or ``*@domain`` -> Role;
    ``groups``: group name (exact, case-sensitive as providers send it) -> Role."""

    users: Mapping[str, Role] = field(default_factory=dict)
    groups: Mapping[str, Role] = field(default_factory=dict)
    group_claim: str = DEFAULT_GROUP_CLAIM
    source: str = ""

    def role_for(self, email: str | None, claims: Mapping[str, Any] | None = None
                 ) -> Role | None:
        """The highest role any entry gives this user, or None (no access).

        ``email``: the provider's ``email`` claim; ``claims``: the whole ID token (for
        ``email_verified`` and the group claim)."""
        claims = claims or {}
        found = [*self._address_roles(email, claims), *self._group_roles(claims)]
        return max(found, key=RANK.__getitem__) if found else None

    def _address_roles(self, email: str | None, claims: Mapping[str, Any]) -> list[Role]:
        if not isinstance(email, str) or "@" not in email:
            return []
        if claims.get("email_verified") is False:
            return []
        address = email.strip().lower()
        domain = address.rsplit("@", 1)[1]
        return [role for key in (address, f"*@{domain}") if (role := self.users.get(key))]

    def _group_roles(self, claims: Mapping[str, Any]) -> list[Role]:
        value = claims.get(self.group_claim)
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, (list, tuple)):
            return []
        return [self.groups[n] for n in names if isinstance(n, str) and n in self.groups]


def roles_path() -> str | None:
    """``$EVALBARS_ROLES`` when set (and not blank), else None."""
    path = os.environ.get(ENV_ROLES, "").strip()
    return path or None


def load_roles(path: str | os.PathLike[str]) -> Roles:
    """Read and check the roles file at ``path`` (format in the module docstring)."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise RolesFileError(name, None, "a readable TOML file",
                             exc.strerror or type(exc).__name__) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RolesFileError(name, None, "TOML (UTF-8)", str(exc)) from None
    return parse_roles(data, name)


def parse_roles(data: Mapping[str, Any], source: str = "<roles>") -> Roles:
    """Check the parsed TOML of a roles file; ``source`` names it in errors."""
    unknown = [k for k in data if k not in TOP_LEVEL_KEYS]
    if unknown:
        raise RolesFileError(source, f"key {unknown[0]!r}",
                             f"only the keys {', '.join(TOP_LEVEL_KEYS)}")
    claim = data.get("group_claim", DEFAULT_GROUP_CLAIM)
    if not isinstance(claim, str) or not claim.strip():
        raise RolesFileError(source, "group_claim", "the name of a claim (a non-empty string)")
    users = _role_table(data.get("users", {}), "users", source)
    groups = _role_table(data.get("groups", {}), "groups", source)
    for key in users:
        _check_address(key, source)
    return Roles(users={k.strip().lower(): r for k, r in users.items()}, groups=groups,
                 group_claim=claim.strip(), source=source)


def _role_table(table: Any, section: str, source: str) -> dict[str, Role]:
    if not isinstance(table, dict):
        raise RolesFileError(source, section, f"a table [{section}] of name = role")
    out: dict[str, Role] = {}
    for key, value in table.items():
        out[key] = _role(value, f"[{section}] {key!r}", source)
    return out


def _role(value: Any, where: str, source: str) -> Role:
    names = [r.value for r in RANK]
    if isinstance(value, str):
        for role in RANK:
            if value.strip().lower() == role.value:
                return role
    raise RolesFileError(source, where, f"one of the roles {', '.join(names)}",
                         f"found {value!r}")


def _check_address(key: str, source: str) -> None:
    text = key.strip()
    local, at, domain = text.rpartition("@")
    ok = bool(at) and bool(local) and bool(domain) and "@" not in local \
        and "*" not in domain and (local == "*" or "*" not in local)
    if not ok:
        raise RolesFileError(source, f"[users] {key!r}",
                             "an e-mail address (name@domain) or a *@domain pattern")
