"""The DuckDB store: the only module that writes SQL.

How concurrency works
---------------------
The store is one DuckDB file (``./.evalbars/evalbars.duckdb`` by default, else
``$EVALBARS_STORE`` or ``--store FILE``). DuckDB lets one process open a file read-write, and
while it does no other process can open it at all, not even read-only. So evalbars never
opens the store read-write. **Reads** use a read-only connection (one cached instance per
process, reopened as soon as the file has been replaced), so the dashboard and any number
of CLI commands read side by side. **Writes** (ingest, rename, tags, delete) take a lock file
next to the store (``<store>.lock``; writers queue on it), copy the store to a temporary
file in the same folder, apply the change there in one transaction (``BEGIN`` ... ``COMMIT``,
``ROLLBACK`` on error), checkpoint, and atomically rename the copy over the store. A
dashboard query in flight finishes on the old file; the next one sees the new file. A
failure (bad data, a constraint, a full disk, a killed process) only loses the copy: the
store stays byte-for-byte as it was, which DuckDB alone would not guarantee (a rolled-back
1,000,000-row insert still rewrites the file in duckdb 1.4.4 and 2.0.1). If the file is held
read-write by a program outside evalbars (the ``duckdb`` shell), or the lock stays taken,
operations retry with backoff for ``lock_timeout`` seconds (15 s by default) and then fail
with "store is busy (locked by another process)". The price: every write copies the file
(about a second per GB) and briefly needs twice its disk space.

Details
-------
* ``version()`` is a ``stat`` of the file (inode, size, mtime): every write replaces the
  file, so pages can poll it as a cache key without opening DuckDB.
* Inside one process, the rename waits until that process's reads in flight are done:
  DuckDB shares one database instance per path per process, and a connection opened
  while the old instance lived would still read the replaced file.
* Ingest is validated before the store is touched, computed in an in-memory DuckDB; a
  repeat upload (every file's key already stored: its sha256, or the digest of the run's own
  rows for a run cut from a multi-run tidy table) does not even copy the file. Merging
  by ``source_key`` or by a shared file is described in ``Store.ingest``.

Layout
------
Tables: ``meta`` (schema version, write counter, next run id), ``runs``, ``files`` (one row
per distinct file content, by sha256; for a file that holds several runs, one row per run,
keyed by a digest of that run's rows), ``scores`` (run x task x metric x item x answer),
``cells`` (per run x task x metric: n, sum and sum of squares of the per-item means, written
in the same transaction as the scores they summarise; the leaderboard reads only these),
``summaries`` (as the harness reported them), ``texts`` (prompt / target / response) and
``tasks`` (n_choices, task protocol). Bulk rows go in through DuckDB's Arrow scan
(``INSERT INTO ... SELECT ... FROM`` a registered table), never row by row. Scores are
appended one run at a time, so DuckDB's per-row-group min/max (zone maps) prune per-run
and per-(task, metric) scans; ART indexes are not used on the large tables (they help only
point lookups and cost memory and insert time). Measured choices for ingest speed (1,000,000
lm_eval lines: 30 s -> 3 s): hashes and texts are stored uncompressed (DuckDB's dictionary/
FSST analysis tripled their insert time for about half the space), the copy is written
with ``preserve_insertion_order = false`` (otherwise partly filled row groups are rewritten
at checkpoint) and no ORDER BY at insert. All values reach SQL as ``?`` parameters;
identifiers come only from fixed lists in this module.
"""

from __future__ import annotations

from evalcore.store._util import (  # noqa: F401
    AUDIT_ABS_TOL,
    AUDIT_REL_TOL,
    ENV_VAR,
    LIST_SEP,
    REPORT_COLUMNS,
    SCHEMA_VERSION,
    VOLATILE_PROTOCOL_KEYS,
    WRITE_MEMORY_LIMIT,
    IngestReport,
    default_store_path,
    flatten_protocol,
    normalise_protocol_value,
)
from evalcore.store.catalog import _Catalog
from evalcore.store.query import _Queries
from evalcore.store.write import _Writes


class Store(_Catalog, _Writes, _Queries):
    __doc__ = _Catalog.__doc__
