"""evalcore.unreachable: which store errors mean "cannot be reached", and the one sentence.

The driver texts are real: raised here by opening a store at a closed port and at a host
name that cannot resolve, and (for the texts a local test server cannot produce without a
password-protected role) libpq's messages as PostgreSQL 15 prints them, captured from
DuckDB 1.4.4's postgres extension on this machine.
"""

from __future__ import annotations

import socket

import duckdb
import pytest

from evalcore.errors import StoreError
from evalcore.store import Store
from evalcore.unreachable import unreachable_message, unreachable_reason

PG_PREFIX = ('IO Error: Failed to attach DuckLake MetaData "__ducklake_metadata_lake" at path + '
             '"postgres:dbname=x host=127.0.0.1 port=5432 user=u password=PW"Unable to connect '
             'to Postgres at "dbname=x host=127.0.0.1 port=5432 user=u password=PW": connection '
             'to server at "127.0.0.1", port 5432 failed: ')


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def store_error(location: str, tmp_path) -> StoreError:
    with pytest.raises(StoreError) as info:
        Store(location, data_path=tmp_path / "data")
    return info.value


def test_closed_port_is_connection_refused(tmp_path):
    loc = (f"ducklake:postgres:dbname=x host=127.0.0.1 port={closed_port()} user=u "
           "password=SECRETPW")
    exc = store_error(loc, tmp_path)
    reason = unreachable_reason(exc)
    assert reason == "nothing accepts connections at that host and port (connection refused)"
    message = unreachable_message(loc, reason)
    assert "SECRETPW" not in message
    assert message.startswith(f"The store at {loc.replace('SECRETPW', '***')} cannot be "
                              "reached: nothing accepts connections")
    assert "Check that the database server is running" in message


def test_unknown_host_name(tmp_path):
    exc = store_error("ducklake:postgres:dbname=x host=no-such-host.invalid port=5432 user=u",
                      tmp_path)
    assert unreachable_reason(exc) == "the host name could not be found"


@pytest.mark.parametrize("driver_text, reason", [
    ('FATAL:  password authentication failed for user "u"',
     "the database server refused the login (user name or password)"),
    ("fe_sendauth: no password supplied",
     "the database server refused the login (user name or password)"),
    ('FATAL:  database "x" does not exist',
     "the server does not know the database or user named in the location"),
    ('FATAL:  role "u" does not exist',
     "the server does not know the database or user named in the location"),
    ("timeout expired", "the connection timed out"),
    ("No route to host", "the network cannot reach the host"),
    ("FATAL:  the database system is shutting down",
     "the database server is starting up or shutting down"),
    ("FATAL:  sorry, too many clients already",
     "the database server accepts no more connections"),
])
def test_libpq_messages(driver_text, reason):
    cause = duckdb.IOException(PG_PREFIX + driver_text)
    exc = StoreError("opening the store ... failed: could not read or write the store files")
    exc.__cause__ = cause
    assert unreachable_reason(exc) == reason


def test_server_gone_after_opening():
    """A cached connection whose server stopped (DuckLake's first query after it)."""
    exc = StoreError('reading the store failed: Failed to query most recent snapshot for '
                     'DuckLake: Failed to execute query "BEGIN TRANSACTION ISOLATION LEVEL '
                     'REPEATABLE READ": server closed the connection unexpectedly')
    assert unreachable_reason(exc) == "the connection to the database server was lost"


@pytest.mark.parametrize("text", [
    "store is busy (locked by another process) and stayed busy: x. Try again when ...",
    'reading the store failed: Binder Error: Referenced column "key" not found',
    'Catalog Error: relation "runs" does not exist',
    "no space left on device; the store was not changed",
    "the store location is empty; expected a folder or a ducklake: URL",
    "x.duckdb has store schema version 1; this evalbars reads version 4",
])
def test_other_store_errors_are_not_unreachable(text):
    assert unreachable_reason(StoreError(text)) is None


def test_local_store_message_points_at_the_folder():
    message = unreachable_message("/mnt/lab/evalbars", "the catalog file cannot be opened")
    assert message.startswith("The store at /mnt/lab/evalbars cannot be reached: the catalog "
                              "file cannot be opened. Check that the folder exists")
