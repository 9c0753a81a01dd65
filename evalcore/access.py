"""Who may do what to a store: roles, the acting user, and the read-only switch.

The store layer is the permission: every write method of ``Store`` takes the acting
``Actor`` (keyword ``actor``; None is ``LOCAL_ACTOR``) and calls ``check`` before it touches
anything, so a page that hides a button is a courtesy, never the guard. The Store object is
shared by every session of a dashboard process, so the actor travels with each call and is
never kept on the Store.

Roles (the roles file that maps users to them is ``evalcore.roles``):

* **viewer**: read (leaderboards, comparisons, exports, reports);
* **uploader**: also ingest, and tag or rename the runs they uploaded themselves;
* **admin**: also tag / rename any run, delete, restore and maintain.

``EVALBARS_READONLY=1`` (also ``true`` / ``yes`` / ``on``) refuses every write whoever asks
(a public showcase): the CLI exits 2 with "read-only" in the message, the store unchanged.
"""

from __future__ import annotations

import enum
import getpass
import os
from dataclasses import dataclass

from evalcore.errors import NotAllowed

ENV_READONLY = "EVALBARS_READONLY"
ACTIONS = ("read", "ingest", "tag", "rename", "delete", "restore", "maintain")
WRITE_ACTIONS = frozenset(ACTIONS) - {"read"}
# the actions an uploader may take only on runs they uploaded
OWN_RUN_ACTIONS = frozenset({"tag", "rename"})


class Role(enum.Enum):
    """What a user may do; each role includes the one before it."""

    VIEWER = "viewer"
    UPLOADER = "uploader"
    ADMIN = "admin"


# the actions each role may take (on any run, except OWN_RUN_ACTIONS for an uploader)
_ALLOWED: dict[Role, frozenset[str]] = {
    Role.VIEWER: frozenset({"read"}),
    Role.UPLOADER: frozenset({"read", "ingest", "tag", "rename"}),
    Role.ADMIN: frozenset(ACTIONS),
}


@dataclass(frozen=True)
class Actor:
    """The user on whose behalf a call runs.

    ``name``: what history shows as the author (the signed-in user's name or e-mail, the
    CLI's ``--author`` or the OS user); ``email``: the signed-in user's address, if any.
    ``owner_key`` is what a run records as its uploader (the e-mail when known, so two
    people with one display name stay apart)."""

    name: str
    role: Role
    email: str | None = None

    @property
    def owner_key(self) -> str:
        return (self.email or self.name).strip()

    def owns(self, run_owner: str | None) -> bool:
        """True when ``run_owner`` (a run's recorded uploader) is this user; e-mail
        addresses compare case-insensitively, names exactly."""
        if not run_owner:
            return False
        if self.email and run_owner.strip().lower() == self.email.strip().lower():
            return True
        return run_owner.strip() == self.name.strip()


def os_user() -> str:
    """The operating-system user name (``getpass.getuser``), or "unknown" when the
    environment names none (a container without a passwd entry)."""
    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):
        return "unknown"


LOCAL_ACTOR = Actor(os_user(), Role.ADMIN)
"""The single user of the local tool (the CLI, the app without sign-in): may do anything."""


def local_actor(author: str | None = None) -> Actor:
    """``LOCAL_ACTOR``, named ``author`` when given (the CLI's ``--author``)."""
    name = (author or "").strip()
    return Actor(name, Role.ADMIN) if name else LOCAL_ACTOR


def read_only() -> bool:
    """True when ``EVALBARS_READONLY`` is set to 1 / true / yes / on (any case)."""
    return os.environ.get(ENV_READONLY, "").strip().lower() in ("1", "true", "yes", "on")


def may(actor: Actor | None, action: str, *, run_owner: str | None = None) -> bool:
    """Whether ``check`` would allow ``action`` (for pages deciding what to show)."""
    try:
        check(actor, action, run_owner=run_owner)
    except NotAllowed:
        return False
    return True


def check(actor: Actor | None, action: str, *, run_owner: str | None = None) -> None:
    """Raise ``NotAllowed`` unless ``actor`` (None: ``LOCAL_ACTOR``) may take ``action``.

    ``action`` is one of ``ACTIONS``; ``run_owner`` is the uploader recorded on the run a
    tag or rename touches (an uploader may tag / rename only their own runs; a run with no
    recorded uploader counts as someone else's). In read-only mode (``read_only()``) every
    action but "read" is refused, whatever the role."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    actor = LOCAL_ACTOR if actor is None else actor
    if action in WRITE_ACTIONS and read_only():
        raise NotAllowed(f"{action} refused: this evalbars is read-only ({ENV_READONLY} is "
                         "set); the store was not changed")
    if action not in _ALLOWED[actor.role]:
        raise NotAllowed(f"{action} refused: {actor.name} has the {actor.role.value} role, "
                         f"which may not {action}; the store was not changed")
    if actor.role is Role.UPLOADER and action in OWN_RUN_ACTIONS and not actor.owns(run_owner):
        raise NotAllowed(f"{action} refused: {actor.name} (uploader) may {action} only runs "
                         "they uploaded; this run was uploaded by "
                         f"{run_owner or 'an unrecorded user'}; the store was not changed")
