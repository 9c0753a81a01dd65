"""Copy an old single-file store (``*.duckdb``, evalbars before DuckLake) into a DuckLake store.

The old file is attached read-only; every table is copied with ``INSERT INTO ... SELECT``
in ONE transaction of the new store, so the new store holds either everything or nothing.
The target must hold no run yet (migrating into a used store would mix run ids). A store of
schema version 1 (``files`` keyed on the file's sha256 alone, so a tidy table with several
models kept only its first) is upgraded on the way: its tidy runs are re-keyed on their own
rows, so ingesting the table again adds the models that were lost.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from evalcore.errors import StoreError
from evalcore.model import rows_key
from evalcore.store._util import SCHEMA_VERSION, _one
from evalcore.store.catalog import _literal, resolve_location
from evalcore.store.schema import TABLES
from evalcore.store import vectors
from evalcore.store.upgrade import fill_v3, set_counters


@dataclass(frozen=True)
class MigrateReport:
    """What ``migrate`` copied: the number of runs and of item score rows, and where to."""

    source: str
    target: str
    n_runs: int
    n_scores: int


def migrate(old: str | Path, target) -> MigrateReport:
    """Copy the single-file store ``old`` into the (new, empty) ``target`` Store.

    StoreError when ``old`` is not an evalbars .duckdb store of schema version
    SCHEMA_VERSION, when ``target`` is itself a .duckdb file or already holds runs.
    """
    source = resolve_location(old)
    if not source.read_only:
        raise StoreError(f"migrate: {old} is not a single-file .duckdb store (it is already in "
                         "the DuckLake layout)")
    if target.read_only:
        raise StoreError(f"migrate: the target {target.location} is a .duckdb file; pass a "
                         "folder or a ducklake: URL as --store")
    with target._read() as con:
        n_existing = int(_one(con, "SELECT count(*) FROM runs")[0])
    if n_existing:
        raise StoreError(f"migrate: the target store {target.location} already holds "
                         f"{n_existing} run(s); migrate into a new, empty store")
    alias = f"old_{uuid.uuid4().hex[:12]}"          # fixed characters only
    cur = target._cursor()
    try:
        cur.execute(f"ATTACH {_literal(str(source.path))} AS {alias} (READ_ONLY)")
    except duckdb.Error as exc:
        cur.close()
        raise StoreError(f"migrate: cannot read {old}: {str(exc).splitlines()[0]}") from exc
    try:
        version = _one(cur, f"SELECT value FROM {alias}.main.meta WHERE key = 'schema_version'")
        if version is None or version[0] not in ("1", "2"):
            raise StoreError(f"migrate: {old} has store schema version "
                             f"{version[0] if version else 'none'}; this evalbars migrates "
                             f"versions 1 and 2 (into schema {SCHEMA_VERSION})")
        v1 = version[0] == "1"

        def body(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
            for table in TABLES:
                if table in ("meta", "items", "labels", "scores", "texts", "vectors"):
                    continue
                if table == "files" and v1:     # version 1: keyed on the sha256
                    con.execute("INSERT INTO files SELECT lower(sha256), sha256, run_id, name, "
                                f"size, format, added_at FROM {alias}.main.files")
                    continue
                cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
                col_list = ", ".join(f'"{c}"' for c in cols)
                con.execute(f"INSERT INTO {table} ({col_list}) SELECT {col_list} "
                            f"FROM {alias}.main.{table}")
            # schema 3: item ids, cluster labels and hashes become integer keys
            set_counters(con, *fill_v3(con, f"{alias}.main.scores", f"{alias}.main.texts"),
                         version=SCHEMA_VERSION)
            vectors.fill(con)       # schema 4: the per-cell item vectors
            if v1:
                _rekey_tidy_runs(con, f"{alias}.main.scores")
            next_id = _one(con, f"SELECT value FROM {alias}.main.meta WHERE key = 'next_run_id'")
            if next_id is not None:
                con.execute("UPDATE meta SET value = ? WHERE key = 'next_run_id'", [next_id[0]])
            n_runs = int(_one(con, "SELECT count(*) FROM runs")[0])
            n_scores = int(_one(con, "SELECT count(*) FROM scores")[0])
            return n_runs, n_scores

        n_runs, n_scores = target._write(body, f"migrating {old}")
    finally:
        with contextlib.suppress(duckdb.Error):
            cur.execute(f"DETACH {alias}")
        cur.close()
    return MigrateReport(str(old), target.location, n_runs, n_scores)


def _rekey_tidy_runs(con: duckdb.DuckDBPyConnection, old_scores: str) -> None:
    """Version 1 keyed a tidy table on its file's sha256 and so stored only its first
    model. Key each stored tidy run on its own rows (``rows_key`` of its stored scores, as
    the parser computes it), so that ingesting the table again finds that run "already
    present" and adds the models that were lost."""
    rows = con.execute("SELECT f.key, r.run_id, r.name, r.model FROM files f JOIN runs r "
                       "USING (run_id) WHERE f.format LIKE 'tidy%' ORDER BY f.key").fetchall()
    for key, rid, name, model in rows:
        scores = con.execute("SELECT task, metric, item_id, answer_idx, score, cluster "
                             f"FROM {old_scores} WHERE run_id = ?", [rid]).df()
        con.execute("UPDATE files SET key = ? WHERE key = ?",
                    [rows_key(name, model, scores), key])
