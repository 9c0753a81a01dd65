"""``python -m evalcore rename | tag | delete``: manage runs (one module, three commands)."""

from __future__ import annotations

import sys

from evalcore import access
from evalcore.commands._shared import EXIT_OK, _actor, _BadInput, _open_store, _out


def add_parser(sub) -> None:
    """``rename``, ``tag`` and ``delete`` (each with its own ``run_*`` function)."""
    p = sub.add_parser("rename", help="rename a run",
                       description="Give a run a new display name (names are unique).")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("new_name", metavar="NEW_NAME")
    p.set_defaults(func=run_rename)

    p = sub.add_parser("tag", help="set the tags of a run",
                       description="Replace a run's tags (no TAG clears them).")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("tags", nargs="*", metavar="TAG")
    p.set_defaults(func=run_tag)

    p = sub.add_parser("delete", help="delete a run and its scores",
                       description="Delete a run with all its scores, summaries and texts. "
                                   "Asks for confirmation on a terminal; --yes skips it. "
                                   "'restore RUN' brings it back while the store keeps its "
                                   "history (maintain --keep-days, 30 by default).")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=run_delete)


def run_rename(args) -> int:
    from evalcore.analysis import resolve_run
    access.check(_actor(args), "rename")      # read-only: refused before anything is read
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    store.rename_run(rid, args.new_name, actor=_actor(args))
    _out(f"run {rid} renamed to {args.new_name!r}")
    return EXIT_OK


def run_tag(args) -> int:
    from evalcore.analysis import resolve_run
    access.check(_actor(args), "tag")      # read-only: refused before anything is read
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    store.set_tags(rid, list(args.tags), actor=_actor(args))
    _out(f"run {rid} tags: {', '.join(args.tags) or '(none)'}")
    return EXIT_OK


def run_delete(args) -> int:
    from evalcore.analysis import resolve_run
    access.check(_actor(args), "delete")      # read-only: refused before asking
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    if not args.yes:
        if not sys.stdin.isatty():
            raise _BadInput("refusing to delete without confirmation: add --yes")
        answer = input(f"Delete run {args.run!r} (id {rid}) and all its scores? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            _out("not deleted")
            return EXIT_OK
    store.delete_run(rid, actor=_actor(args))
    _out(f"run {rid} deleted")
    return EXIT_OK
