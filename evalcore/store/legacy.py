"""Old single-file stores (``*.duckdb``, evalbars before DuckLake) as today's schema.

One copy routine serves both ways an old store is used: read-only, through an in-memory
DuckDB copy (``catalog._load_legacy``), and ``migrate`` into a new DuckLake store. Both so
give the same runs, scores and intervals, and the same as a fresh ingest of the same files:

* **schema versions.** Version 1 (the first release) keyed ``files`` on the file's sha256
  alone (the key is the lower-case sha256, as version 2 writes it for such files); version
  2 is today's small tables with item ids, labels and hashes as text on every score row,
  which become integer keys (``upgrade.fill_v3``) and the per-cell vectors
  (``vectors.fill``). A table that lacks a column today's schema needs, or a schema version
  other than 1 and 2, is refused with what was found.
* **today's cluster-key policy** (``cluster_policy``). Releases before the policy applied a
  cluster key found automatically whatever the number of clusters; today a key found
  automatically is applied only with at least 20 clusters and more than one item per
  cluster on average (``ingest._common.auto_cluster_rule``), else offered. An old run whose
  automatic key fails the rule loses its cluster labels, its protocol records the key as
  offered (``cluster_key`` None, ``cluster_key_offered``), and the change is reported.
  Keys given explicitly are kept. An automatic key is recognised by the protocol: the
  ``cluster_key`` with its ``cluster_key_candidates`` (lm_eval: the task's protocol;
  inspect: the run's protocol, for each of its tasks). An inspect key given explicitly
  recorded its candidates too, so an old inspect run's explicit key that fails the rule is
  offered as well (the report names it; ``--cluster-key`` at a new ingest applies it).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from evalcore.errors import StoreError
from evalcore.store._util import _json_dumps, _json_loads, _one

# tables copied column by column (the rest come from the old scores and texts)
_SMALL = ("runs", "files", "cells", "summaries", "tasks")
# columns an old version lacks, and the SQL (over the old table) that gives them
_DERIVED = {("files", "key"): "lower(sha256)"}
READABLE_VERSIONS = ("1", "2")


@dataclass(frozen=True)
class ClusterChange:
    """One (run, task) whose automatically applied cluster key today's policy only offers."""

    run_id: int
    run: str
    task: str
    key: str
    n_items: int
    n_clusters: int
    note: str

    def __str__(self) -> str:
        return f"run {self.run!r} (id {self.run_id}), task {self.task!r}: {self.note}"


def old_version(con: duckdb.DuckDBPyConnection, src: str) -> str | None:
    """The schema version of the old store ``src`` (``ALIAS.main``), None without one."""
    try:
        row = _one(con, f"SELECT value FROM {src}.meta WHERE key = 'schema_version'")
    except duckdb.Error:
        return None
    return row[0] if row else None


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]


def _select_list(con: duckdb.DuckDBPyConnection, src: str, table: str) -> tuple[list[str], str]:
    """(today's columns of ``table``, the SELECT list over the old table giving them)."""
    have = set(columns(con, f"{src}.{table}"))
    cols = columns(con, table)
    exprs = []
    for c in cols:
        if c in have:
            exprs.append(f'"{c}"')
        elif (table, c) in _DERIVED:
            exprs.append(f'{_DERIVED[(table, c)]} AS "{c}"')
        else:
            raise StoreError(f"its table {table!r} has no column {c!r}, which this evalbars "
                             "needs and cannot derive")
    return cols, ", ".join(exprs)


def cluster_policy(con: duckdb.DuckDBPyConnection, src: str) -> list[ClusterChange]:
    """The (run, task) pairs of the old store ``src`` whose automatic cluster key today's
    policy only offers (module docstring), with the numbers that decide it."""
    from evalcore.ingest._common import auto_cluster_rule
    auto: dict[tuple[int, str], str] = {}
    names = dict(con.execute(f"SELECT run_id, name FROM {src}.runs").fetchall())
    tasks_of: dict[int, list[str]] = {}
    for rid, task, proto in con.execute(f"SELECT run_id, task, protocol FROM {src}.tasks "
                                        "ORDER BY run_id, task").fetchall():
        tasks_of.setdefault(int(rid), []).append(task)
        key = _auto_key(_json_loads(proto))
        if key:
            auto[(int(rid), task)] = key
    for rid, proto in con.execute(f"SELECT run_id, protocol FROM {src}.runs").fetchall():
        key = _auto_key(_json_loads(proto))
        for task in tasks_of.get(int(rid), []) if key else []:
            auto.setdefault((int(rid), task), key)
    if not auto:
        return []
    counts = {(int(r), t): (int(n), int(g)) for r, t, n, g in con.execute(
        f"SELECT run_id, task, count(DISTINCT item_id), count(DISTINCT cluster) "
        f"FROM {src}.scores GROUP BY run_id, task").fetchall()}
    changes = []
    for (rid, task), key in sorted(auto.items()):
        n, g = counts.get((rid, task), (0, 0))
        if g == 0:
            continue                    # no labels stored: nothing applied
        applied, note = auto_cluster_rule(key, n, g)
        if not applied:
            changes.append(ClusterChange(rid, str(names.get(rid, rid)), task, key, n, g, note))
    return changes


def _auto_key(proto) -> str | None:
    """The automatically applied cluster key a protocol records, else None."""
    if isinstance(proto, dict) and proto.get("cluster_key") and \
            "cluster_key_candidates" in proto:
        return str(proto["cluster_key"])
    return None


def _offered(proto: dict, key: str) -> dict:
    """A protocol with its applied key turned into an offered one."""
    out = dict(proto)
    out["cluster_key"] = None
    out["cluster_key_offered"] = key
    return out


def copy_small_tables(con: duckdb.DuckDBPyConnection, src: str,
                      changes: list[ClusterChange]) -> None:
    """Inside the open transaction: runs, files, cells, summaries and tasks from the old
    store, with the cluster-key changes applied (protocols, ``cells.has_cluster``)."""
    pairs = {(c.run_id, c.task) for c in changes}
    runs_changed = {c.run_id: c.key for c in changes}
    for table in _SMALL:
        cols, select = _select_list(con, src, table)
        data = con.execute(f"SELECT {select} FROM {src}.{table}").fetch_arrow_table()
        if changes and table in ("runs", "tasks", "cells"):
            data = _apply_changes(table, data, pairs, runs_changed)
        con.register("_old_rows", data)
        try:
            col_list = ", ".join(f'"{c}"' for c in cols)
            con.execute(f"INSERT INTO {table} ({col_list}) SELECT {col_list} FROM _old_rows")
        finally:
            con.unregister("_old_rows")


def _apply_changes(table: str, data: pa.Table, pairs: set, runs_changed: dict) -> pa.Table:
    """One small table's rows with the cluster-key changes applied."""
    rows = data.to_pylist()
    for row in rows:
        rid = int(row["run_id"])
        if table == "cells" and (rid, row["task"]) in pairs:
            row["has_cluster"] = False
        elif table == "tasks" and (rid, row["task"]) in pairs:
            proto = _json_loads(row["protocol"])
            key = _auto_key(proto)
            if key:
                row["protocol"] = _json_dumps(_offered(proto, key))
        elif table == "runs" and rid in runs_changed:
            proto = _json_loads(row["protocol"])
            key = _auto_key(proto)
            if key:
                row["protocol"] = _json_dumps(_offered(proto, key))
    return pa.Table.from_pylist(rows, schema=data.schema)


def copy_old_store(con: duckdb.DuckDBPyConnection, src: str, what: str) -> list[ClusterChange]:
    """Inside the open transaction of today's empty schema (``con``'s current catalog):
    everything of the old single-file store ``src`` (``ALIAS.main``), converted (module
    docstring); the cluster-key changes made. StoreError when the store cannot be read
    (``what`` names it in the message)."""
    from evalcore.store import vectors
    from evalcore.store.upgrade import fill_v3
    version = old_version(con, src)
    if version not in READABLE_VERSIONS:
        raise StoreError(f"{what} has store schema version {version or 'none'}; this evalbars "
                         f"reads single-file stores of versions {', '.join(READABLE_VERSIONS)}")
    try:
        changes = cluster_policy(con, src)
        copy_small_tables(con, src, changes)
        no_cluster = sorted(f"{c.run_id}|{c.task}" for c in changes)
        next_item, next_label = fill_v3(con, f"{src}.scores", f"{src}.texts",
                                        no_cluster=no_cluster)
        vectors.fill(con)
        if version == "1":
            _rekey_tidy_runs(con, f"{src}.scores")
    except StoreError as exc:
        raise StoreError(f"{what} cannot be read: {exc}") from exc
    except duckdb.Error as exc:
        from evalcore.store.faults import first_line
        raise StoreError(f"{what} cannot be read as a store of schema version {version} "
                         f"({first_line(exc)})") from exc
    _copy_meta(con, src, next_item, next_label)
    return changes


def _copy_meta(con: duckdb.DuckDBPyConnection, src: str, next_item: int, next_label: int) -> None:
    """meta of today's schema: the old store's run-id and write counters, new key counters."""
    from evalcore.store._util import SCHEMA_VERSION
    old = dict(con.execute(f"SELECT key, value FROM {src}.meta").fetchall())
    rows = {"schema_version": SCHEMA_VERSION, "write_counter": old.get("write_counter", "0"),
            "next_run_id": old.get("next_run_id") or str(
                int(_one(con, "SELECT coalesce(max(run_id), 0) FROM runs")[0]) + 1),
            "next_item": str(next_item), "next_label": str(next_label)}
    con.execute("DELETE FROM meta")
    con.execute("INSERT INTO meta SELECT * FROM (VALUES " + ", ".join(["(?, ?)"] * len(rows))
                + ")", [v for kv in rows.items() for v in kv])


def _rekey_tidy_runs(con: duckdb.DuckDBPyConnection, old_scores: str) -> None:
    """Version 1 keyed a tidy table on its file's sha256 and so stored only its first
    model. Key each stored tidy run on its own rows (``rows_key`` of its stored scores, as
    the parser computes it), so that ingesting the table again finds that run "already
    present" and adds the models that were lost."""
    from evalcore.model import rows_key
    rows = con.execute("SELECT f.key, r.run_id, r.name, r.model FROM files f JOIN runs r "
                       "USING (run_id) WHERE f.format LIKE 'tidy%' ORDER BY f.key").fetchall()
    for key, rid, name, model in rows:
        scores = con.execute("SELECT task, metric, item_id, answer_idx, score, cluster "
                             f"FROM {old_scores} WHERE run_id = ?", [rid]).df()
        con.execute("UPDATE files SET key = ? WHERE key = ?",
                    [rows_key(name, model, scores), key])


def describe_changes(changes: list[ClusterChange]) -> list[str]:
    """One line per change, for reports."""
    return [str(c) for c in changes]

