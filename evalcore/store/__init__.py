"""The evalbars store: the only package that writes SQL.

Layout on disk
--------------
A store is a DuckLake catalog plus a folder of Parquet data files:

* **local** (default): a folder, ``./.evalbars`` unless ``--store`` / ``$EVALBARS_STORE``
  names another, holding ``catalog.sqlite`` (a SQLite catalog in WAL mode) and ``data/``;
* **team**: ``ducklake:postgres:dbname=... host=... port=... user=...`` with a shared data
  path (``--data-path`` / ``$EVALBARS_DATA_PATH``; a folder every machine mounts, or
  ``s3://bucket/prefix/`` on S3-compatible object storage with the AWS variables'
  credentials, ``objectstore``), given when the catalog is created and remembered by it;
* **old single-file stores** (``*.duckdb``, evalbars before DuckLake) are attached
  read-only; ``python -m evalcore migrate OLD.duckdb`` copies one into the new layout.

How concurrency works (``catalog.py``, ``snapshots.py``, ``lock.py``)
---------------------------------------------------------------------
Each process keeps ONE in-memory DuckDB connection per store with the catalog attached as
``lake``. Every read sees one snapshot: a read is one transaction, and a ``one_version``
block (a page interaction, an analysis call) or a ``pin_reads`` store (a CLI command) reads
the snapshot it started at, attached read-only (``snapshots``), whatever commits meanwhile.
A write (ingest, rename, tags, delete, a merge of small files, each ``maintain`` step) takes
the store's writer lock (``lock``: a file lock next to a SQLite catalog, an advisory lock on
PostgreSQL) and is ONE catalog transaction: DuckLake writes new Parquet files, then commits
their registration in one transaction of the catalog database, so a reader sees the whole
write or none of it. A write waits for the lock up to ``lock_timeout`` (120 s by default),
then raises "store is busy" (``StoreBusyError``). A failure (bad data, a duplicate key, a
full disk, a lost catalog connection, a killed process) commits nothing; files written
before the failure are orphans that ``maintain`` removes. Errors are worded by ``faults``.
Old single-file stores are read through a converted in-memory copy (``legacy``).

Details
-------
* ``version()`` is the catalog's latest snapshot id: every committed write makes one, so
  pages use it as a cache key (one small catalog query).
* Ingest is validated before the store is touched, computed in an in-memory DuckDB; a
  repeat upload (every file's key already stored: its sha256, or the digest of the run's own
  rows for a run cut from a multi-run tidy table) commits nothing. Merging by
  ``source_key`` or by a shared file is described in ``Store.ingest``.
* DuckLake has no PRIMARY KEY / UNIQUE constraints: the keys (run id, run name, file key,
  one cell / summary / task row per key) are kept by the write code and checked before
  every COMMIT (``schema.KEY_CHECKS``).

Tables
------
``meta`` (schema version, write counter, next run id), ``runs``, ``files`` (one row per
distinct file content, by sha256; for a file that holds several runs, one row per run,
keyed by a digest of that run's rows), ``scores`` (run x task x metric x item x answer),
``cells`` (per run x task x metric: n, sum and sum of squares of the per-item means, written
in the same transaction as the scores they summarise; the leaderboard reads only these),
``summaries`` (as the harness reported them), ``texts`` (prompt / target / response) and
``tasks`` (n_choices, task protocol). Bulk rows go in through DuckDB's Arrow scan
(``INSERT INTO ... SELECT ... FROM`` a registered table), never row by row; each run's
scores land in their own Parquet files, whose min/max statistics let per-run and
per-(task, metric) scans skip the rest. All values reach SQL as ``?`` parameters;
identifiers come only from fixed lists in this package.

Modules: ``catalog`` (location, connection, transactions), ``snapshots`` (pinned reads),
``lock`` (the writer lock), ``faults`` (errors in words), ``schema`` (tables), ``write``
(ingest, merge, rename, tags, delete), ``query`` (the reads the analysis layer uses),
``matrices`` and ``pairs`` (batched and two-run reads on integer keys), ``maintain``
(compaction and cleanup), ``history`` (authors and messages of writes, restore of a
deleted run; who may write is ``evalcore.access``), ``legacy`` and ``migrate`` (old single-file stores).
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
    IngestReport,
    flatten_protocol,
    normalise_protocol_value,
)
from evalcore.store.catalog import (  # noqa: F401
    CATALOG_FILE,
    DATA_DIR,
    ENV_DATA_PATH,
    Target,
    _Catalog,
    default_store_location,
    default_store_path,
    resolve_location,
)
from evalcore.store.history import CommitNote, HistoryEntry, _History  # noqa: F401
from evalcore.store.maintain import MaintainReport, _Maintain  # noqa: F401
from evalcore.store.matrices import _MatrixQueries
from evalcore.store.migrate import MigrateReport, migrate  # noqa: F401
from evalcore.store.pairs import _PairQueries
from evalcore.store.query import _Queries
from evalcore.store.write import _Writes


class Store(_Catalog, _Writes, _Queries, _MatrixQueries, _PairQueries, _Maintain, _History):
    __doc__ = _Catalog.__doc__
