"""Secrets masked out of store locations and messages before a user sees them.

A team store's location can carry a password (``ducklake:postgres:dbname=evals host=db
user=me password=...``), an object-store URL can carry keys in its query string, and a
DuckDB error can quote either of them (or a ``CREATE SECRET`` statement) back. Everything
that shows a location or a store error to a person (the pages, the CLI's messages, the
report) passes it through :func:`mask_location` first.

What is masked (the value becomes ``***``; quotes around it stay):

- ``NAME=VALUE`` and ``NAME = VALUE`` with a secret NAME (below): libpq keyword strings,
  DuckLake URLs, environment variables (``AWS_SECRET_ACCESS_KEY=...``, ``PGPASSWORD=...``).
  A VALUE that starts with a quote is a quoted string (``'...'`` with ``\\'``/``''``
  escapes, or ``"..."``), masked with whatever sticks to its closing quote (libpq reads
  ``"ab"cd`` as one value); any other VALUE runs to the next ASCII white space (libpq's end
  of a value); after ``?`` or ``&`` (a URL query) it runs to the next ``&`` or ``#``.
- ``NAME 'VALUE'`` (DuckDB ``CREATE SECRET (KEY_ID '...', SECRET '...')``) and
  ``"NAME": "VALUE"`` (JSON, Python reprs).
- the password of a URL's user info: ``scheme://user:PASSWORD@host``; the user info ends at
  the last ``@`` before the next whitespace, so an unencoded ``@``, ``/`` or ``?`` in the
  password is masked too (at worst, text between a ``host:port`` and a later ``@`` is
  masked with it).
- ``Bearer TOKEN``.
- every other occurrence, labelled or not, of a secret value of at least
  ``MIN_ECHO_LENGTH`` characters found above, in ``text`` or in ``context`` (e.g. the store
  location, so an error that echoes the bare password is covered).

A NAME is secret when one of its parts (split at ``_``, ``-``, ``.`` and lower-to-upper
case changes) is a password/secret/token word, ends in one, or two neighbouring parts make
a key name (``access key``, ``key id``, ...): ``password``, ``sslpassword``, ``PGPASSWORD``,
``secret``, ``s3_secret_access_key``, ``AWS_ACCESS_KEY_ID``, ``KEY_ID``, ``session_token``,
``X-Amz-Signature``, ``sig``, ``AccountKey``, ``api_key``. ``max_tokens``, ``tokenizer`` or
``cluster_key`` are not secret. Host, port, database and user names are never masked.

Edge cases: a value that a quote opens and nothing closes is masked to the end of the text;
a masked location masks to itself (``mask_location`` of its output changes nothing), while a
message in which a masked value runs into a quote (``password=***"Unable``) loses the text
up to the next whitespace when masked again (never a secret); text without a secret comes
back unchanged.
"""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import unquote as _percent_decode

MASK = "***"
MIN_ECHO_LENGTH = 4   # shorter secrets are masked where labelled, not searched for elsewhere

_SECRET_PARTS = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token",
    "signature", "sig", "credential", "credentials", "apikey", "accesskey", "accountkey",
    "privatekey", "keyid", "authorization",
})
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token")
_SECRET_PAIRS = frozenset({
    ("api", "key"), ("access", "key"), ("account", "key"), ("private", "key"),
    ("key", "id"), ("shared", "key"), ("master", "key"), ("session", "key"),
    ("secret", "key"), ("client", "key"),
})

_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_SINGLE = r"'(?:[^'\\]|\\.|'')*(?:'|\Z)"       # libpq (\') and SQL ('') escapes
_DOUBLE = r'"(?:[^"\\]|\\.)*(?:"|\Z)'
_BARE = r"[^ \t\n\r\f\v]*"   # to the next ASCII white space, the end of a libpq value
# a quoted value and what sticks to its closing quote (libpq reads ``"ab"cd`` as one value)
_QUOTED = rf"(?:{_SINGLE}|{_DOUBLE})[^\s,;)\]}}&\"']*"
# NAME = VALUE outside a URL query (re.A: only ASCII white space separates, as in libpq; a
# no-break space is part of a value)
_ASSIGN = re.compile(rf"(?<![A-Za-z0-9_.?&-])(?P<name>{_NAME})(?P<eq>\s*=\s*)"
                     rf"(?P<value>{_QUOTED}|{_BARE})", re.S | re.A)
# NAME=VALUE as a URL query parameter
_QUERY = re.compile(rf"(?<=[?&])(?P<name>{_NAME})(?P<eq>=)(?P<value>[^ \t\n\r\f\v&#]*)")
# NAME 'VALUE' (SQL: CREATE SECRET, ATTACH options)
_SQL_OPTION = re.compile(rf"(?<![A-Za-z0-9_.-])(?P<name>{_NAME})(?P<eq>\s+)"
                         rf"(?P<value>{_SINGLE}[^\s,;)\]}}&\"']*)", re.S | re.A)
# "NAME": "VALUE" / 'NAME': 'VALUE'
_KEY_VALUE = re.compile(rf"(?P<q>[\"'])(?P<name>{_NAME})(?P=q)(?P<eq>\s*:\s*)"
                        rf"(?P<value>{_QUOTED}|[^\s,}}\]]*)", re.S | re.A)
_URL = re.compile(rf"[A-Za-z][A-Za-z0-9+.-]*://{_BARE}")
_BEARER = re.compile(r"(?i)(?<![A-Za-z0-9_])(?P<name>bearer)(?P<eq>\s+)"
                     r"(?P<value>[A-Za-z0-9._~+/=-]+)", re.A)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_secret_name(name: str) -> bool:
    """True when a parameter called ``name`` holds a secret (see the module docstring)."""
    parts = [p for p in re.split(r"[_.\-]+", _CAMEL.sub("_", name).lower()) if p]
    if any(p in _SECRET_PARTS or p.endswith(_SECRET_SUFFIXES) for p in parts):
        return True
    return (name.lower() == "key"
            or any(pair in _SECRET_PAIRS for pair in zip(parts, parts[1:])))


# the same literals with the closing quote captured (empty when the text ended first)
_LITERAL = {"'": re.compile(r"'(?:[^'\\]|\\.|'')*('|\Z)", re.S),
            '"': re.compile(r'"(?:[^"\\]|\\.)*("|\Z)', re.S)}


def _split_quoted(value: str) -> tuple[str, bool]:
    """(text inside the quotes with escapes resolved, whether the quote was closed) of a
    value that starts with a quote."""
    q = value[0]
    m = _LITERAL[q].match(value)
    literal, closed = m.group(), bool(m.group(1))
    inner = literal[1:-1] if closed else literal[1:]
    if q == "'":
        inner = inner.replace("''", "'")
    return re.sub(r"\\(.)", r"\1", inner, flags=re.S), closed


def _unquote(value: str) -> str:
    """The text of a value: the inside of its quotes, escapes resolved, if it is quoted."""
    return _split_quoted(value)[0] if value[:1] in ("'", '"') else value


class _Masker:
    """One pass over a text: masks labelled secrets and remembers their values.

    ``known``: secret values seen beforehand. An unquoted value that is a known secret
    followed by a double quote (a libpq string quoted inside a DuckDB error:
    ``"... password=pw"Unable to connect``) is masked up to that quote only.
    """

    def __init__(self, known: Iterable[str] = ()) -> None:
        self.found: set[str] = set()
        self.known = sorted((k for k in known if k), key=len)

    def _unquoted_secret(self, value: str) -> str:
        for secret in self.known:
            if value.startswith(secret) and value[len(secret):len(secret) + 1] == '"':
                return secret
        return value

    def _mask(self, m: re.Match) -> str:
        """The masked form of a labelled secret ``m`` (name, separator, value)."""
        value = m.group("value")
        head = m.group(0)[: m.start("value") - m.start(0)]
        if value[0] not in "'\"":
            secret = self._unquoted_secret(value)
            self.found.add(secret)
            return head + MASK + value[len(secret):]
        inner, closed = _split_quoted(value)
        self.found.update((inner, value))
        return head + value[0] + MASK + (value[0] if closed else "")

    def labelled(self, pattern: re.Pattern[str], text: str) -> str:
        """``text`` with every secret that ``pattern`` finds masked. A match whose name is
        not secret is not skipped whole: the search goes on inside its value, so an
        unterminated quote after ``user=`` cannot hide a ``password=`` behind it."""
        out: list[str] = []
        done = pos = 0
        while (m := pattern.search(text, pos)) is not None:
            value = m.group("value")
            if value and is_secret_name(m.group("name")) and _unquote(value) != MASK:
                out += [text[done:m.start()], self._mask(m)]
                done = pos = m.end()
            else:
                pos = max(m.start("value"), m.start() + 1)
        return "".join(out) + text[done:]

    def bearer(self, m: re.Match) -> str:
        self.found.add(m.group("value"))
        return f"{m.group('name')}{m.group('eq')}{MASK}"

    def url(self, m: re.Match) -> str:
        text = m.group(0)
        start = text.index("://") + 3
        at = text.rfind("@", start)
        colon = text.find(":", start, at) if at > 0 else -1
        if colon > 0 and "/" not in text[start:colon] and text[colon + 1:at] != MASK:
            secret = text[colon + 1:at]
            self.found.add(secret)
            self.found.add(_percent_decode(secret))
            text = text[:colon + 1] + MASK + text[at:]
        return self.labelled(_QUERY, text)

    def run(self, text: str) -> str:
        text = _URL.sub(self.url, text)
        for pattern in (_KEY_VALUE, _ASSIGN, _SQL_OPTION):
            text = self.labelled(pattern, text)
        return _BEARER.sub(self.bearer, text)


def mask_location(text: str, context: str | Iterable[str] | None = None) -> str:
    """``text`` (a store location or any message) with passwords, keys and tokens masked.

    Parameters
    ----------
    text : what is about to be shown.
    context : more text whose secrets (found by the same rules) are also masked wherever
        they appear in ``text``, e.g. the store location when ``text`` is an error message
        that may repeat the password without its ``password=`` label.

    Returns
    -------
    The text with each secret value replaced by ``***`` (see the module docstring for the
    rules, the edge cases and what is never masked).
    """
    texts = [str(text)] + [str(c) for c in ([context] if isinstance(context, str)
                                            else list(context or []))]
    seen = _Masker()
    for t in texts:
        seen.run(t)
    masker = _Masker(seen.found)
    out = masker.run(texts[0])
    found = seen.found | masker.found
    echoes = sorted((s for s in found if len(s) >= MIN_ECHO_LENGTH and s != MASK),
                    key=len, reverse=True)
    for secret in echoes:
        out = out.replace(secret, MASK)
    return out
