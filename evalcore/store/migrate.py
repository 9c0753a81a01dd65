"""Copy an old single-file store (``*.duckdb``, evalbars before DuckLake) into a DuckLake store.

The old file is attached read-only; everything is converted and copied in ONE transaction
of the new store (``store.legacy.copy_old_store``: the conversion the read-only view of an
old store makes too), so the new store holds either everything or nothing. The target must
hold no run yet (migrating into a used store would mix run ids). On the way:

* a store of schema version 1 (``files`` keyed on the file's sha256 alone, so a tidy table
  with several models kept only its first) has its tidy runs re-keyed on their own rows, so
  ingesting the table again adds the models that were lost;
* today's cluster-key policy is applied: a cluster key an older release applied
  automatically is only offered when it gives fewer than 20 clusters (or one item per
  cluster), as a fresh ingest would do; ``MigrateReport.cluster_changes`` names each change.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from evalcore import access
from evalcore.errors import StoreError
from evalcore.store._util import _one
from evalcore.store.catalog import _literal, resolve_location
from evalcore.store.faults import first_line
from evalcore.store.history import note_for
from evalcore.store.legacy import ClusterChange, copy_old_store


@dataclass(frozen=True)
class MigrateReport:
    """What ``migrate`` copied: the number of runs and of item score rows, and where to;
    ``cluster_changes``: the runs' tasks whose old automatic cluster key is now offered,
    not applied (``store.legacy.ClusterChange``)."""

    source: str
    target: str
    n_runs: int
    n_scores: int
    cluster_changes: tuple[ClusterChange, ...] = field(default=())


def migrate(old: str | Path, target, *, actor: access.Actor | None = None) -> MigrateReport:
    """Copy the single-file store ``old`` into the (new, empty) ``target`` Store.

    StoreError when ``old`` is not an evalbars .duckdb store of schema version 1 or 2, when
    ``target`` is itself a .duckdb file or already holds runs. ``actor`` must be allowed to
    ingest (``access.check``); it is the recorded author of the copy.
    """
    access.check(actor, "ingest")
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
        raise StoreError(f"migrate: cannot read {old}: {first_line(exc)}") from exc
    try:
        def body(con: duckdb.DuckDBPyConnection) -> tuple[int, int, list[ClusterChange]]:
            changes = copy_old_store(con, f"{alias}.main", f"migrate: {old}")
            n_runs = int(_one(con, "SELECT count(*) FROM runs")[0])
            n_scores = int(_one(con, "SELECT count(*) FROM scores")[0])
            return n_runs, n_scores, changes

        n_runs, n_scores, changes = target._write(
            body, f"migrating {old}",
            note=lambda r: note_for(actor, "ingest", f"migrated {r[0]} run(s) from {old}"))
    finally:
        with contextlib.suppress(duckdb.Error):
            cur.execute(f"DETACH {alias}")
        cur.close()
    return MigrateReport(str(old), target.location, n_runs, n_scores, tuple(changes))
