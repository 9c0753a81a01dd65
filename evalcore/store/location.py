"""Where a store lives: a location (a folder, a ``ducklake:`` URL or an old ``*.duckdb``
file) resolved to what DuckDB attaches, and the constants of the store's layout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evalcore.errors import StoreError
from evalcore.store._util import ENV_VAR

ENV_DATA_PATH = "EVALBARS_DATA_PATH"
LAKE = "lake"                     # the alias the catalog is attached under (fixed SQL)
CATALOG_FILE = "catalog.sqlite"   # in a local store folder, next to DATA_DIR
DATA_DIR = "data"
# DuckLake's own retry of a commit that conflicts with a concurrent one: off. Every write
# holds the store's writer lock (store.lock), so a conflict can only come from a process
# that does not take it; DuckLake's retry re-applies a transaction's changes on top of the
# other commit, which is not safe against compaction (a lost delete file, a duplicated
# row), while evalbars re-runs the whole transaction from the start.
DUCKLAKE_MAX_RETRY_COUNT = 0
# How long a write waits for the store's writer lock (another write, a compaction or one
# maintain step) before it gives up with "store is busy" (--lock-timeout). Long enough for
# a writer that has parsed its files not to lose its run to a big ingest ahead of it: a
# 1,000,000-line lm_eval ingest reads its pieces inside its transaction, about 16 s on an
# idle machine (README, bench_ingest) and two to three times that under load, beyond the
# 15 s this default was. A reader never waits for it.
DEFAULT_LOCK_TIMEOUT = 120.0
# PostgreSQL catalogs: the connection's statement_timeout is the lock timeout times this,
# and at least STATEMENT_TIMEOUT_FLOOR seconds (a catalog statement that waits on anything
# but a lock: a server that stopped answering)
STATEMENT_TIMEOUT_FACTOR, STATEMENT_TIMEOUT_FLOOR = 4.0, 120.0
# the id of the snapshot a read sees (inside a transaction: the transaction's snapshot)
SNAPSHOT_SQL = f"SELECT id FROM {LAKE}.current_snapshot()"



def default_store_location() -> str:
    """$EVALBARS_STORE if set, else the folder ./.evalbars (relative to the cwd)."""
    return os.environ.get(ENV_VAR) or str(Path.cwd() / ".evalbars")


def default_store_path() -> Path:
    """The default location as a Path (a local store folder, unless $EVALBARS_STORE names a
    ``ducklake:`` catalog, which is returned as given)."""
    return Path(default_store_location())


@dataclass(frozen=True)
class Target:
    """A resolved store location.

    kind: "local" (a folder with catalog.sqlite and data/), "sqlite" (``ducklake:sqlite:FILE``),
    "postgres" (``ducklake:postgres:...``) or "legacy" (a single-file ``*.duckdb`` store,
    read-only). ``attach`` is what follows ATTACH; ``path`` the folder, SQLite file or
    DuckDB file (None for PostgreSQL); ``data_path`` the Parquet folder or URL (None: the
    catalog's stored one).
    """

    kind: str
    label: str
    attach: str
    data_path: str | None
    path: Path | None

    @property
    def read_only(self) -> bool:
        return self.kind == "legacy"


def _folder_url(p: str | Path) -> str:
    text = str(p)
    if "://" in text:
        return text if text.endswith("/") else text + "/"
    return str(Path(text).expanduser().resolve()) + os.sep


def resolve_location(location: str | Path | None = None,
                     data_path: str | Path | None = None) -> Target:
    """What ``Store(location, data_path=...)`` opens (no I/O besides ``stat``).

    None -> $EVALBARS_STORE, else ./.evalbars. ``ducklake:sqlite:FILE`` -> that SQLite catalog
    (data next to it in ``data/`` unless ``data_path``); ``ducklake:postgres:CONNINFO`` -> a
    team catalog (``data_path`` or $EVALBARS_DATA_PATH needed when it is created); an
    existing ``*.duckdb`` file -> the old single-file store, read-only; any other path -> a
    local store folder (FOLDER/catalog.sqlite + FOLDER/data/, created on first use).
    """
    loc = str(location) if location is not None else default_store_location()
    data = str(data_path) if data_path is not None else os.environ.get(ENV_DATA_PATH) or None
    if not loc.strip():
        raise StoreError("the store location is empty; expected a folder or a ducklake: URL")
    if loc.startswith("ducklake:"):
        rest = loc[len("ducklake:"):]
        if rest.startswith("sqlite:"):
            file = Path(rest[len("sqlite:"):]).expanduser().resolve()
            return Target("sqlite", loc, f"ducklake:sqlite:{file}",
                          _folder_url(data) if data else _folder_url(file.parent / DATA_DIR), file)
        if rest.startswith("postgres:"):
            return Target("postgres", loc, loc, _folder_url(data) if data else None, None)
        raise StoreError(f"store {loc!r}: unsupported DuckLake catalog; expected "
                         "ducklake:sqlite:FILE or ducklake:postgres:dbname=... host=... "
                         "(a DuckDB-file catalog would lock out every other process)")
    path = Path(loc).expanduser().resolve()
    if path.suffix.lower() == ".duckdb":
        if not path.is_file():
            raise StoreError(
                f"no store file {path}: single-file (.duckdb) stores can only be read now; a "
                "new store is a folder (e.g. --store ./.evalbars) or a ducklake: URL")
        return Target("legacy", loc, str(path), None, path)
    if path.is_file():
        if path.suffix.lower() in (".sqlite", ".db"):
            return Target("sqlite", loc, f"ducklake:sqlite:{path}",
                          _folder_url(data) if data else _folder_url(path.parent / DATA_DIR), path)
        raise StoreError(f"store path {path} is a file; expected a store folder (catalog.sqlite "
                         "+ data/), a ducklake: URL or an old .duckdb store")
    return Target("local", loc, f"ducklake:sqlite:{path / CATALOG_FILE}",
                  _folder_url(data) if data else _folder_url(path / DATA_DIR), path)


def _literal(text: str) -> str:
    """A SQL string literal (ATTACH takes no ``?`` parameters): quotes doubled, no NUL."""
    if "\x00" in text:
        raise StoreError("the store location contains a NUL character")
    return "'" + text.replace("'", "''") + "'"
