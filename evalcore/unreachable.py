"""Whether a store error means the store cannot be reached, and the reason in words.

A team store lives in a PostgreSQL catalog that can be stopped, renamed, firewalled or
given a new password; a local store's catalog file can sit on an unmounted drive. Such an
error is not about the user's data or request, and the person who sees it needs one plain
sentence: where the store is (secrets masked), why it cannot be reached, what to check.

:func:`unreachable_reason` reads the error and its causes (``__cause__``/``__context__``,
where the driver's own text is) and matches the messages of libpq, PostgreSQL and SQLite;
:func:`unreachable_message` builds the sentence. Anything else (a damaged store, an old
schema, a constraint) is not "unreachable" and keeps its own message.
"""

from __future__ import annotations

import re

from evalcore.redact import mask_location

# driver messages (regular expressions on the lower-case text) -> the reason in words; the
# first match wins, so the specific causes come before the generic "could not connect"
_REASONS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    (r"could not translate host name|name or service not known|"
     r"temporary failure in name resolution|nodename nor servname",
     "the host name could not be found"),
    (r"connection refused",
     "nothing accepts connections at that host and port (connection refused)"),
    (r"password authentication failed|no password supplied|authentication failed|"
     r"no pg_hba\.conf entry",
     "the database server refused the login (user name or password)"),
    (r'(database|role) "[^"]*" does not exist',
     "the server does not know the database or user named in the location"),
    (r"timeout expired|timed out", "the connection timed out"),
    (r"no route to host|network is unreachable", "the network cannot reach the host"),
    (r"the database system is (shutting down|starting up|in recovery mode)",
     "the database server is starting up or shutting down"),
    (r"too many connections|too many clients|remaining connection slots",
     "the database server accepts no more connections"),
    (r"server closed the connection unexpectedly|terminating connection|"
     r"connection to server was lost|could not (receive|send) data (from|to) server|"
     r"ssl syscall error|connection is closed|connection is bad|lost connection|"
     r"no connection to the server|connection reset by peer|broken pipe",
     "the connection to the database server was lost"),
    (r"unable to connect to postgres|could not connect to server",
     "the database server did not accept the connection"),
    (r"unable to open database file",
     "the catalog file cannot be opened (a missing or unmounted folder, or no permission)"),
))
_MAX_CHAIN = 10


def _chain_text(exc: BaseException) -> str:
    """The messages of ``exc`` and its causes, lower case."""
    parts: list[str] = []
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < _MAX_CHAIN:
        parts.append(str(e).lower())
        e = e.__cause__ or e.__context__
        seen += 1
    return "\n".join(parts)


def unreachable_reason(exc: BaseException) -> str | None:
    """Why the store cannot be reached, in words, or None when ``exc`` is another error.

    Matches the driver messages in ``exc`` and its causes: unknown host, connection refused,
    rejected login, unknown database or role, timeout, no route, a server starting up or
    shutting down or out of connection slots, a lost connection, and a SQLite catalog file
    that cannot be opened. An unknown database or role is PostgreSQL's
    ``database "x" does not exist``; a missing table (``relation "x" does not exist``) is
    not a reachability error.
    """
    text = _chain_text(exc)
    return next((reason for pattern, reason in _REASONS if pattern.search(text)), None)


def unreachable_message(location: str, reason: str) -> str:
    """The one sentence shown when the store cannot be reached (``location`` is masked here).

    ``"The store at <location> cannot be reached: <reason>. Check that ..."``: a PostgreSQL
    location asks to check the server and the connection settings, a local one the folder.
    """
    where = mask_location(location)
    if location.startswith("ducklake:postgres:") or "://" in location:
        advice = ("Check that the database server is running and reachable from this "
                  "machine, and that the store location ($EVALBARS_STORE or --store) names "
                  "the right host, port, database, user and password.")
    else:
        advice = ("Check that the folder exists, is mounted and can be read and written by "
                  "this program, and that the store location ($EVALBARS_STORE or --store) "
                  "names it.")
    return f"The store at {where} cannot be reached: {reason}. {advice}"
