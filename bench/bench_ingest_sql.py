"""How fast could an ingest be if DuckDB did all of it? A measured lower bound, not a product path.

The target: an lm_eval sample-log ingest at >= 0.5x DuckDB's own ``read_json`` on the
same files. ``bench_ingest.py`` measures ours (DuckDB parses, Arrow and numpy make the keys,
DuckDB writes). This script times the other design, everything in SQL inside one DuckLake
transaction, on the same synthetic files and the same store tables, so the README can say
whether the gap is our orchestration or the work itself:

1. the files' sha256 in a thread (as ``parse_paths`` does);
2. per task file: one ``read_json`` with ``columnar._batches_duckdb``'s explicit columns (its
   schema from the file's first record) into a temporary table (item id, both hashes, prompt,
   the target's and the response's option text, acc, acc_norm), the same per-record choices;
3. new ``items`` keys and new ``labels`` keys (both hashes) numbered in byte order with
   ``row_number() OVER (ORDER BY ...)``, as the store numbers them;
4. the key lookup (the temporary table joined to the new keys), then ``INSERT`` of the
   scores (two metrics) and the texts, in any order (``preserve_insertion_order = false``).

Left out, so the figure is a floor for this design: the cells, vectors, runs, files and
tasks tables, every validation and fallback of the real reader (mixed types, NaN, bad
lines), cluster labels, and the texts' reordering into key order. The write is committed;
the store is deleted at the end.

Then, unless ``--no-floor``, the floor of any design that stores what we store: DuckDB's own
``read_json`` count (``bench_ingest``'s phase (a)) against one ``COPY`` of the same parsed
columns (step 2's item id, hashes, prompt, option texts, acc, acc_norm) from ``read_json``
straight into a Parquet file: no keys, no hashing of the files, no checks, no store. Each is
run twice, alternated, in this process; the fastest of each counts.

Usage::

    python bench/bench_ingest_sql.py --data-dir /tmp/synth1m    # the files bench_ingest made
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

_LLS = "list_transform(filtered_resps, x -> TRY_CAST(x[1] AS DOUBLE))"


def read_columns(path: Path) -> tuple[dict[str, str], int]:
    """The columns ``columnar._batches_duckdb`` reads from this sample log (its explicit
    schema, from the file's first record; metrics as DOUBLE, not validated as JSON) and the
    number of option arguments in it. They reach DuckDB through the relational API, not SQL."""
    from evalcore.ingest._common import Source
    from evalcore.ingest.lm_eval import columnar
    first, _ = columnar._first_record(Source(name=str(path), path=path))
    schema, _, multiple_choice, _ = columnar._fast_schema(first)
    if not multiple_choice:
        raise SystemExit(f"{path}: not a multiple-choice sample log (this bound reads those)")
    return ({f.name: columnar._duckdb_type(f.type) for f in schema},
            schema.field("arguments").type.num_fields)


def _option(position: str, n_args: int) -> str:
    """The trimmed ``arg_1`` of the 1-based argument ``position`` (a SQL expression)."""
    whens = " ".join(f"WHEN {k + 1} THEN arguments.gen_args_{k}.arg_1" for k in range(n_args))
    return f"trim(CASE {position} {whens} END)"


def _parse_sql(n_args: int) -> str:
    """The temporary table ``p`` from the view ``src`` of one file (fixed SQL text)."""
    return ("CREATE OR REPLACE TEMP TABLE p AS SELECT CAST(doc_id AS VARCHAR) AS item_id, "
            "doc_hash, prompt_hash, arguments.gen_args_0.arg_0 AS prompt, "
            + _option("CASE WHEN target >= 0 AND target < len(filtered_resps) THEN target + 1 "
                      "END", n_args)
            + " AS target, " + _option(f"list_position({_LLS}, list_max({_LLS}))", n_args)
            + " AS response, acc, acc_norm FROM src")


STEPS = (
    ("items", "INSERT INTO lake.items SELECT CAST(? + row_number() OVER (ORDER BY item_id) - 1 "
              "AS INTEGER), ?, item_id FROM (SELECT DISTINCT item_id FROM p) WHERE item_id NOT IN "
              "(SELECT item_id FROM lake.items WHERE task = ?)",
     lambda task, nxt: [nxt["item"], task, task]),
    ("labels", "INSERT INTO lake.labels SELECT CAST(? + row_number() OVER (ORDER BY v) - 1 AS "
               "INTEGER), ?, v FROM (SELECT doc_hash AS v FROM p UNION SELECT prompt_hash FROM p) "
               "WHERE v NOT IN (SELECT value FROM lake.labels WHERE task = ?)",
     lambda task, nxt: [nxt["label"], task, task]),
    ("key lookup", "CREATE OR REPLACE TEMP TABLE k AS SELECT p.item_id, i.item, h.label AS ih, "
                   "q.label AS ph FROM p "
                   "JOIN (SELECT item, item_id FROM lake.items WHERE task = ?) i USING (item_id) "
                   "JOIN (SELECT label, value FROM lake.labels WHERE task = ?) h ON h.value = p.doc_hash "
                   "JOIN (SELECT label, value FROM lake.labels WHERE task = ?) q ON q.value = p.prompt_hash",
     lambda task, nxt: [task, task, task]),
    ("scores", "INSERT INTO lake.scores SELECT 1, ?, m, k.item, 0, v, NULL, k.ih, k.ph FROM "
               "(SELECT item_id, 'acc' AS m, acc AS v FROM p UNION ALL "
               "SELECT item_id, 'acc_norm', acc_norm FROM p) x JOIN k USING (item_id)",
     lambda task, nxt: [task]),
    ("texts", "INSERT INTO lake.texts SELECT 1, ?, k.item, 0, prompt, target, response "
              "FROM p JOIN k USING (item_id)", lambda task, nxt: [task]),
)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(8 << 20):
            h.update(block)
    return h.hexdigest()


def run(paths: list[Path], store_path: Path) -> dict:
    """Ingest ``paths`` (one task per file) into a new store with SQL only; timings in s."""
    from evalcore.store import Store
    from evalcore.store.catalog import _connection

    store = Store(store_path)
    con = _connection(store._target, store.lock_timeout).cursor()
    secs = {"parse": 0.0} | {name: 0.0 for name, _, _ in STEPS}
    c0, t0 = time.process_time(), time.perf_counter()
    hasher = threading.Thread(target=lambda: [_sha256(p) for p in paths])
    hasher.start()
    con.execute("SET preserve_insertion_order = false")
    con.execute("BEGIN TRANSACTION")
    nxt = {"item": 1, "label": 1}
    for path in paths:
        task = path.name.split("_20")[0].removeprefix("samples_")
        t = time.perf_counter()
        columns, n_args = read_columns(path)
        # registered, not a view in the catalog: the transaction writes to the store only
        con.register("src", con.read_json(str(path), format="newline_delimited",
                                          columns=columns))
        con.execute(_parse_sql(n_args))
        con.unregister("src")
        secs["parse"] += time.perf_counter() - t
        for name, sql, params in STEPS:
            t = time.perf_counter()
            con.execute(sql, params(task, nxt))
            secs[name] += time.perf_counter() - t
        nxt["item"] += con.execute("SELECT count(*) FROM p").fetchone()[0]
        nxt["label"] += 2 * con.execute("SELECT count(*) FROM p").fetchone()[0]
    t = time.perf_counter()
    con.execute("COMMIT")
    secs["commit"] = time.perf_counter() - t
    t = time.perf_counter()
    hasher.join()
    secs["sha256 (waited for)"] = time.perf_counter() - t
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "steps": secs,
           "scores": con.execute("SELECT count(*) FROM lake.scores").fetchone()[0],
           "texts": con.execute("SELECT count(*) FROM lake.texts").fetchone()[0]}
    con.close()
    store.close()
    return out


def floor(paths: list[Path], work: Path, repeat: int = 2) -> dict:
    """Seconds and CPU-seconds (fastest of ``repeat``, alternated) of DuckDB's ``read_json``
    count and of parsing the stored columns straight into one Parquet file (``COPY``)."""
    import duckdb
    from bench_ingest import phase_duckdb
    schemas = {tuple(sorted(read_columns(p)[0].items())) for p in paths}
    if len(schemas) != 1:
        raise SystemExit("the floor needs files of one schema (bench_ingest's synthetic files)")
    columns, n_args = read_columns(paths[0])
    select = _parse_sql(n_args).split(" AS SELECT ", 1)[1].removesuffix(" FROM src")
    out = work / "floor.parquet"
    best = {"read_json": (float("inf"), 0.0), "parse + COPY": (float("inf"), 0.0)}
    for _ in range(repeat):
        duck = phase_duckdb([str(p) for p in paths])
        best["read_json"] = min(best["read_json"], (duck["seconds"], duck["cpu_s"]))
        con = duckdb.connect()
        con.execute("SET preserve_insertion_order = false")
        con.register("src", con.read_json([str(p) for p in paths], format="newline_delimited",
                                          columns=columns))
        c0, t0 = time.process_time(), time.perf_counter()
        # the projection is built from constants; the path goes through the API, not SQL text
        con.sql(f"SELECT {select} FROM src").write_parquet(str(out))
        best["parse + COPY"] = min(best["parse + COPY"],
                                   (time.perf_counter() - t0, time.process_time() - c0))
        con.close()
        out.unlink()
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True,
                    help="folder holding bench_ingest's synthetic files (synthetic__model-7b/)")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the read_json count and the parse-and-COPY floor")
    args = ap.parse_args(argv)
    from synth_lm_eval import MODEL_FOLDER
    paths = sorted((Path(args.data_dir) / MODEL_FOLDER).glob("samples_*.jsonl"))
    if not paths:
        ap.error(f"no samples_*.jsonl under {Path(args.data_dir) / MODEL_FOLDER}: run "
                 "bench/bench_ingest.py --data-dir DIR --keep first")
    work = Path(tempfile.mkdtemp(prefix="evalbars-sql-ingest-"))
    try:
        got = run(paths, work / "store")
        low = None if args.no_floor else floor(paths, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mb = sum(p.stat().st_size for p in paths) / 1e6
    print(f"SQL-only ingest of {len(paths)} files ({mb:,.1f} MB): {got['wall_s']:.2f} s wall, "
          f"{got['cpu_s']:.2f} CPU-s; {got['scores']:,} scores, {got['texts']:,} texts")
    for name, s in got["steps"].items():
        print(f"  {name:<22} {s:6.2f} s")
    if low is not None:
        ref = low["read_json"][0]
        print("floor of storing these columns at all (fastest of 2, alternated):")
        for name, (secs, cpu) in low.items():
            print(f"  {name:<22} {secs:6.2f} s wall, {cpu:6.2f} CPU-s, {ref / secs:5.2f}x read_json")
        print(f"  the SQL-only ingest above: {ref / got['wall_s']:.2f}x read_json; 0.5x leaves "
              f"{2 * ref - low['parse + COPY'][0]:.2f} s after the parse and COPY for keys, "
              "file hashes, checks and the store")
    return 0


if __name__ == "__main__":
    sys.exit(main())
