"""The store's tables: DDL, the schema upgrade, and the Arrow specs of incoming frames."""



import pyarrow as pa

from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TEXT_COLUMNS,
)

# ---------------------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------------------

_DDL = (
    "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)",
    """CREATE TABLE runs (
        run_id INTEGER PRIMARY KEY,
        name VARCHAR NOT NULL UNIQUE,
        model VARCHAR,
        source_format VARCHAR NOT NULL,
        harness VARCHAR,
        harness_version VARCHAR,
        protocol VARCHAR NOT NULL,          -- JSON text of the run-level protocol dict
        tags VARCHAR[] NOT NULL,
        created_at TIMESTAMP NOT NULL,      -- UTC upload time
        source_key VARCHAR
    )""",
    """CREATE TABLE files (
        -- idempotency key: the file's sha256, or for one run of a file that holds several
        -- (a tidy table) "rows:" + the digest of that run's rows (SourceFile.run_key)
        key VARCHAR PRIMARY KEY,
        sha256 VARCHAR NOT NULL,
        run_id INTEGER NOT NULL,
        name VARCHAR NOT NULL,
        size BIGINT NOT NULL,
        format VARCHAR NOT NULL,
        added_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE scores (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        -- short ids: DuckDB's compression analysis of them cost about 0.4 s per million rows
        -- at ingest (measured: 2,000,000 scores 1.5 s -> 0.4 s) for little space
        item_id VARCHAR NOT NULL USING COMPRESSION uncompressed,
        answer_idx INTEGER NOT NULL,
        score DOUBLE NOT NULL,
        cluster VARCHAR,
        -- hashes are high-entropy: compressing them cost more ingest time than it saved space
        item_hash VARCHAR USING COMPRESSION uncompressed,
        prompt_hash VARCHAR USING COMPRESSION uncompressed
    )""",
    """CREATE TABLE cells (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        n_items BIGINT NOT NULL,            -- items (distinct item_id)
        n_scores BIGINT NOT NULL,           -- score rows (items x answers)
        k_max INTEGER NOT NULL,             -- most answers of one item
        sum DOUBLE NOT NULL,                -- sum of per-item means
        sumsq DOUBLE NOT NULL,              -- sum of squared per-item means
        is_binary BOOLEAN NOT NULL,         -- every raw score is 0 or 1
        has_cluster BOOLEAN NOT NULL,
        PRIMARY KEY (run_id, task, metric)
    )""",
    """CREATE TABLE summaries (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,
        stderr DOUBLE,
        stderr_raw VARCHAR,
        n BIGINT,
        is_group BOOLEAN NOT NULL,
        PRIMARY KEY (run_id, task, metric)
    )""",
    """CREATE TABLE texts (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        -- short ids: DuckDB's compression analysis of them cost about 0.4 s per million rows
        -- at ingest (measured: 2,000,000 scores 1.5 s -> 0.4 s) for little space
        item_id VARCHAR NOT NULL USING COMPRESSION uncompressed,
        answer_idx INTEGER NOT NULL,
        -- unique long strings: DuckDB's dictionary/FSST analysis tripled the insert time
        -- for about a third less space
        prompt VARCHAR USING COMPRESSION uncompressed,
        target VARCHAR USING COMPRESSION uncompressed,
        response VARCHAR USING COMPRESSION uncompressed
    )""",
    """CREATE TABLE tasks (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        n_choices INTEGER,
        protocol VARCHAR NOT NULL,          -- JSON text of the task protocol dict
        PRIMARY KEY (run_id, task)
    )""",
)


# Upgrade of a version-1 store (fixed SQL, run in one copy-on-write transaction).
_MIGRATE_1_TO_2 = (
    _DDL[2].replace("CREATE TABLE files", "CREATE TABLE files_v2"),
    "INSERT INTO files_v2 SELECT lower(sha256), sha256, run_id, name, size, format, added_at "
    "FROM files",
    "DROP TABLE files",
    "ALTER TABLE files_v2 RENAME TO files",
    "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
)


# Arrow schemas of the canonical frames: (column, type, required)
_SCORE_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
               ("item_id", pa.large_string(), True), ("answer_idx", pa.int32(), True),
               ("score", pa.float64(), True), ("cluster", pa.large_string(), False),
               ("item_hash", pa.large_string(), False), ("prompt_hash", pa.large_string(), False))
_SUMMARY_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
                 ("value", pa.float64(), False), ("stderr", pa.float64(), False),
                 ("stderr_raw", pa.large_string(), False), ("n", pa.int64(), False),
                 ("is_group", pa.bool_(), False))
_TEXT_SPEC = (("task", pa.large_string(), True), ("item_id", pa.large_string(), True),
              ("answer_idx", pa.int32(), True), ("prompt", pa.large_string(), False),
              ("target", pa.large_string(), False), ("response", pa.large_string(), False))
_EMPTY_CELLS = pa.table({"task": pa.array([], pa.string()), "metric": pa.array([], pa.string()),
                         "n_items": pa.array([], pa.int64()), "n_scores": pa.array([], pa.int64()),
                         "k_max": pa.array([], pa.int32()), "sum": pa.array([], pa.float64()),
                         "sumsq": pa.array([], pa.float64()), "is_binary": pa.array([], pa.bool_()),
                         "has_cluster": pa.array([], pa.bool_())})
assert tuple(c for c, _, _ in _SCORE_SPEC) == SCORE_COLUMNS
assert tuple(c for c, _, _ in _SUMMARY_SPEC) == SUMMARY_COLUMNS
assert tuple(c for c, _, _ in _TEXT_SPEC) == TEXT_COLUMNS


