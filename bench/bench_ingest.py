"""Ingest and query benchmark: evalbars against DuckDB's own JSON reader, on the same files.

1. Generates synthetic lm_eval 0.4.3+ sample logs (``bench/synth_lm_eval.py``; 1,000,000 lines
   across 8 files by default) into a temporary folder.
2. Times, each phase in its own child process (so peak memory is that phase's ``ru_maxrss``;
   the two phases alternate ``--repeat`` times, default 2, and the fastest run of each
   counts, so load from other processes on a shared machine does not decide the ratio):
   (a) DuckDB ``read_json`` (newline-delimited, every line parsed) computing
       ``count(*), sum(acc), sum(acc_norm), count(doc_hash), count(prompt_hash)``;
   (b) the evalbars ingest path: ``evalcore.ingest.parse_paths`` + ``Store.ingest`` into a
       fresh store; parse and store times are shown separately.
   and prints lines/s, MB/s, peak memory and, last, the issue's two figures: our speed as a
   multiple of DuckDB's ``read_json`` (target >= 0.5x) and the peak memory of the whole
   ingest, parse + ``Store.ingest`` (target < 1 GB = 1,024 MiB), at the given line count.
3. Builds a store with 5,000,000 item scores directly from canonical frames (40 runs x 10
   tasks x 2 metrics x 6,250 items by default) and times the queries behind the leaderboard
   (``cell_stats`` over everything, ``tasks``, item means of every run on one task; plus,
   for reference only, the same aggregate recomputed from the raw scores, which the
   leaderboard does not run because the store maintains it at ingest) and behind a compare (item means of two
   runs on one task joined on item_id, in pandas and in SQL; ``pairing``), each against a
   1 s target; then ``evalcore.analysis.leaderboard`` / ``compare`` if they work.

Usage::

    python bench/bench_ingest.py                       # full size (about 5 minutes on 2 cores)
    python bench/bench_ingest.py --lines 100000 --scores 500000   # smaller
    python bench/bench_ingest.py --data-dir /tmp/synth --keep     # reuse generated files
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

RATIO_TARGET = 0.5
MEMORY_TARGET_MB = 1024   # "under 1 GB" (MiB, as ru_maxrss/1024)
QUERY_TARGET_S = 1.0


def _peak_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports ru_maxrss in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------
# child phases (each prints one JSON line)
# ---------------------------------------------------------------------------------------

def phase_duckdb(paths: list[str]) -> dict:
    import duckdb
    con = duckdb.connect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    row = con.execute(
        "SELECT count(*), sum(acc), sum(acc_norm), count(doc_hash), count(prompt_hash) "
        "FROM read_json(?, format = 'newline_delimited')", [paths]).fetchall()[0]
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {"seconds": secs, "cpu_s": cpu, "lines": int(row[0]), "sum_acc": float(row[1]),
            "peak_mb": _peak_mb(), "threads": int(con.execute(
                "SELECT current_setting('threads')").fetchall()[0][0])}


def _folder_mb(path: str) -> float:
    """Size of a store folder (catalog + Parquet data) in MB."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 1e6


def phase_ours(paths: list[str], store_path: str) -> dict:
    from evalcore.ingest import parse_paths
    from evalcore.store import Store
    c0 = time.process_time()
    t0 = time.perf_counter()
    runs = parse_paths(paths)
    t1 = time.perf_counter()
    c1 = time.process_time()
    store = Store(store_path)
    t2 = time.perf_counter()
    c2 = time.process_time()
    report = store.ingest(runs)
    t3 = time.perf_counter()
    c3 = time.process_time()
    # counted from what was stored: a large lm_eval run is a LazyRun, whose scores and texts
    # are read (and dropped) by Store.ingest, not held by the parsed run
    n_scores = int(report.runs["n_scores"].sum())
    del runs
    with store._read() as con:
        n_texts = int(con.execute("SELECT count(*) FROM texts").fetchone()[0])
    cs = store.cell_stats()
    acc = cs[cs["metric"] == "acc"]
    return {"parse_s": t1 - t0, "open_s": t2 - t1, "store_s": t3 - t2, "seconds": t3 - t0,
            "cpu_s": c3 - c0, "parse_cpu_s": c1 - c0, "store_cpu_s": c3 - c2,
            "n_scores": n_scores, "n_texts": n_texts, "runs": int(len(report.runs)),
            "lines": int(acc["n"].sum()), "sum_acc": float(acc["sum"].sum()),
            "store_mb": _folder_mb(store_path), "peak_mb": _peak_mb()}


def _timed(fn, repeat: int = 3) -> tuple[float, float, object]:
    """(first call seconds, median of the following calls, last result)."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    rest = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        rest.append(time.perf_counter() - t0)
    return first, statistics.median(rest), out


def build_score_store(store_path: str, n_scores: int, runs: int = 40, tasks: int = 10) -> dict:
    """A store with ``n_scores`` 0/1 scores: runs x tasks x (acc, acc_norm) x items."""
    import numpy as np
    import pandas as pd

    from evalcore.model import SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS, TEXT_COLUMNS, ParsedRun, SourceFile
    from evalcore.store import Store

    metrics = ("acc", "acc_norm")
    items = max(2, n_scores // (runs * tasks * len(metrics)))
    rng = np.random.default_rng(0)
    ids = pd.array([str(i) for i in range(items)], dtype="str")
    hashes = pd.array([f"{i:064x}" for i in range(items)], dtype="str")
    difficulty = rng.uniform(0.05, 0.95, size=(tasks, items))
    parsed = []
    for r in range(runs):
        skill = rng.normal(0, 0.08)
        parts = []
        for t in range(tasks):
            p = np.clip(difficulty[t] + skill, 0, 1)
            for m in metrics:
                score = (rng.random(items) < p).astype(np.float64)
                parts.append(pd.DataFrame({
                    "task": pd.array([f"task_{t:02d}"] * items, dtype="str"),
                    "metric": pd.array([m] * items, dtype="str"),
                    "item_id": ids, "answer_idx": np.zeros(items, dtype=np.int64),
                    "score": score, "cluster": pd.array([None] * items, dtype="str"),
                    "item_hash": hashes, "prompt_hash": hashes}))
        scores = pd.concat(parts, ignore_index=True)[list(SCORE_COLUMNS)]
        tasks_df = pd.DataFrame({"task": [f"task_{t:02d}" for t in range(tasks)],
                                 "n_choices": [4] * tasks,
                                 "protocol": [{"num_fewshot": 0} for _ in range(tasks)]})[list(TASK_COLUMNS)]
        fname = f"synthetic-run-{r:03d}.jsonl"
        parsed.append(ParsedRun(
            name=f"model-{r:03d}", model=f"org/model-{r:03d}", source_format="tidy", harness=None,
            harness_version=None, protocol={"bench": True},
            files=[SourceFile(fname, f"{r:064x}", 0, "tidy_jsonl")], scores=scores,
            summaries=pd.DataFrame(columns=list(SUMMARY_COLUMNS)),
            texts=pd.DataFrame(columns=list(TEXT_COLUMNS)), tasks=tasks_df))
    store = Store(store_path)
    t0 = time.perf_counter()
    store.ingest(parsed)
    build_s = time.perf_counter() - t0
    total = int(sum(len(p.scores) for p in parsed))
    return {"build_s": build_s, "n_scores": total, "runs": runs, "tasks": tasks,
            "items": items, "store_mb": _folder_mb(store_path)}


def phase_queries(store_path: str, n_scores: int) -> dict:
    from evalcore.store import Store
    info = build_score_store(store_path, n_scores)
    store = Store(store_path)
    store.close()  # measure queries on a freshly opened instance
    runs = store.runs()
    a, b = int(runs["run_id"].iloc[0]), int(runs["run_id"].iloc[1])
    every = [int(r) for r in runs["run_id"]]
    results = {}

    def compare_pandas():
        im = store.item_means([a, b], task="task_00", metric="acc")
        left = im[im["run_id"] == a][["item_id", "score"]]
        right = im[im["run_id"] == b][["item_id", "score"]]
        return left.merge(right, on="item_id", suffixes=("_a", "_b"))

    queries = {
        "cell_stats over everything (maintained)": lambda: store.cell_stats(),
        "(ref.) same aggregate from raw scores, not used": lambda: store.recompute_cell_stats(),
        "tasks() over everything": lambda: store.tasks(),
        "item_means, all runs, one task+metric": lambda: store.item_means(every, task="task_00", metric="acc"),
        "compare: item_means(2 runs) + pandas join": compare_pandas,
        "compare: paired_item_means (SQL join)": lambda: store.paired_item_means(a, b, "task_00", "acc"),
        "compare: pairing(a, b)": lambda: store.pairing(a, b, "task_00", "acc"),
    }
    for label, fn in queries.items():
        first, warm, out = _timed(fn)
        results[label] = {"first_s": first, "warm_s": warm, "rows": int(len(out))}
    analysis = {}
    try:
        from evalcore import analysis as an
        for label, fn in {
            "analysis.leaderboard(store) [wilson, tiers+ranks]": lambda: an.leaderboard(store),
            "analysis.leaderboard(store, include_tiers/ranks=False)":
                lambda: an.leaderboard(store, include_tiers=False, include_ranks=False),
            "analysis.compare(store, a, b, task=task_00)": lambda: an.compare(store, a, b, task="task_00"),
            "analysis.compare(store, a, b) all tasks": lambda: an.compare(store, a, b),
        }.items():
            try:
                first, warm, _ = _timed(fn, repeat=1)
                analysis[label] = {"first_s": first, "warm_s": warm}
            except Exception as exc:  # noqa: BLE001 - report, don't fail the benchmark
                analysis[label] = {"error": f"{type(exc).__name__}: {str(exc)[:160]}"}
    except Exception as exc:  # noqa: BLE001
        analysis["import"] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"build": info, "queries": results, "analysis": analysis, "peak_mb": _peak_mb()}


# ---------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------

def _remove(path: str) -> None:
    """Remove a store left by an earlier run: a store folder (DuckLake) or files ``path*``."""
    for p in Path(path).parent.glob(Path(path).name + "*"):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def _run_child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child phase {args[0]} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _line(label: str, value: str) -> None:
    print(f"  {label:<52} {value}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="evalbars ingest/query benchmark")
    ap.add_argument("--lines", type=int, default=1_000_000, help="sample lines to generate")
    ap.add_argument("--files", type=int, default=8, help="sample files (one task each)")
    ap.add_argument("--scores", type=int, default=5_000_000, help="scores in the query store")
    ap.add_argument("--repeat", type=int, default=2,
                    help="alternating runs of the two read phases; the fastest of each counts")
    ap.add_argument("--data-dir", help="folder for the generated files (reused if complete)")
    ap.add_argument("--keep", action="store_true", help="keep generated files and stores")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-queries", action="store_true")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        if kind == "duckdb":
            out = phase_duckdb(rest)
        elif kind == "ours":
            out = phase_ours(rest[1:], rest[0])
        else:
            out = phase_queries(rest[0], int(rest[1]))
        print(json.dumps(out))
        return 0

    import duckdb

    from synth_lm_eval import MODEL_FOLDER, write_samples

    work = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="evalbars-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"evalbars benchmark  (python {sys.version.split()[0]}, duckdb {duckdb.__version__}, "
          f"{os.cpu_count()} CPUs, work dir {work})")
    ok = True
    t_start = time.perf_counter()
    try:
        if not args.skip_ingest:
            marker = work / f"synth-{args.lines}-{args.files}.done"
            folder = work / MODEL_FOLDER
            if marker.exists():
                paths = sorted(str(p) for p in folder.glob("samples_*.jsonl"))
                gen_s = 0.0
            else:
                shutil.rmtree(folder, ignore_errors=True)
                t0 = time.perf_counter()
                paths = [str(p) for p in write_samples(work, args.lines, args.files)]
                gen_s = time.perf_counter() - t0
                marker.write_text("ok")
            size_mb = sum(Path(p).stat().st_size for p in paths) / 1e6
            print(f"\n1. synthetic lm_eval samples: {args.lines:,} lines, {len(paths)} files, "
                  f"{size_mb:,.1f} MB" + (f" (generated in {gen_s:.1f} s)" if gen_s else " (reused)"))

            # the phases alternate (a, b, a, b, ...) and the fastest of each counts, so a
            # burst of load from other processes does not decide the ratio
            ducks, ourses = [], []
            load_before = os.getloadavg()[0]
            store_path = str(work / "ingest-bench")
            for _ in range(max(1, args.repeat)):
                ducks.append(_run_child(["duckdb", *paths]))
                _remove(store_path)
                ourses.append(_run_child(["ours", store_path, *paths]))
            duck = dict(min(ducks, key=lambda r: r["seconds"]), peak_mb=max(r["peak_mb"] for r in ducks))
            ours = dict(min(ourses, key=lambda r: r["seconds"]), peak_mb=max(r["peak_mb"] for r in ourses))
            lines = duck["lines"]
            print(f"\n2. read {lines:,} lines")
            print(f"  {'':<52} {'seconds':>8} {'lines/s':>11} {'MB/s':>8} {'peak MB':>8}")
            for label, r, secs in (
                    (f"(a) DuckDB read_json ({duck['threads']} threads)", duck, duck["seconds"]),
                    ("(b) evalbars parse_paths + Store.ingest", ours, ours["seconds"])):
                print(f"  {label:<52} {secs:8.2f} {lines / secs:11,.0f} {size_mb / secs:8.1f} "
                      f"{r['peak_mb']:8.0f}")
            if len(ducks) > 1:
                all_duck = ", ".join(f"{r['seconds']:.2f}" for r in ducks)
                all_ours = ", ".join(f"{r['seconds']:.2f}" for r in ourses)
                print(f"  (fastest of {len(ducks)} alternating runs; all runs: DuckDB {all_duck} s, "
                      f"evalbars {all_ours} s; peak memory = the largest)")
            _line("    of which parse_paths", f"{ours['parse_s']:8.2f} s")
            _line("    of which Store.ingest (scores + texts)", f"{ours['store_s']:8.2f} s "
                  f"({ours['n_scores']:,} scores, {ours['n_texts']:,} texts; store "
                  f"{ours['store_mb']:,.0f} MB)")
            # CPU seconds of all threads of each phase: on a shared machine the wall-clock
            # ratio depends on what else runs; the CPU ratio says how much work each does
            _line("    CPU seconds, all threads (DuckDB / ours)",
                  f"{duck['cpu_s']:8.2f} / {ours['cpu_s']:.2f} s (parse {ours['parse_cpu_s']:.2f}, "
                  f"store {ours['store_cpu_s']:.2f}); CPU ratio {duck['cpu_s'] / ours['cpu_s']:.2f}x")
            _line("    load average (1 min) before / after",
                  f"{load_before:8.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
            ratio = duck["seconds"] / ours["seconds"]
            ok_ratio = ratio >= RATIO_TARGET
            ok_mem = ours["peak_mb"] < MEMORY_TARGET_MB
            same = (ours["lines"] == lines and abs(ours["sum_acc"] - duck["sum_acc"]) < 1e-6)
            _line("same lines and sum(acc) as DuckDB", "yes" if same else
                  f"NO (ours {ours['lines']}, {ours['sum_acc']}; duckdb {lines}, {duck['sum_acc']})")
            print(f"\n  ingest of {lines:,} lm_eval sample lines: {ratio:.2f}x DuckDB read_json "
                  f"(target >= {RATIO_TARGET}x: {'met' if ok_ratio else 'NOT met'}); "
                  f"peak {ours['peak_mb']:.0f} MB for parse + Store.ingest "
                  f"(target < {MEMORY_TARGET_MB} MB: {'met' if ok_mem else 'NOT met'})")
            ok = ok and ok_ratio and ok_mem and same

        if not args.skip_queries:
            qpath = str(work / "query-bench")
            _remove(qpath)
            q = _run_child(["queries", qpath, str(args.scores)])
            b = q["build"]
            print(f"\n3. store with {b['n_scores']:,} scores ({b['runs']} runs x {b['tasks']} tasks x 2 "
                  f"metrics x {b['items']:,} items; {b['store_mb']:,.0f} MB), built by one "
                  f"Store.ingest in {b['build_s']:.1f} s")
            print(f"  {'query':<52} {'first s':>8} {'warm s':>8} {'rows':>9}")
            for label, r in q["queries"].items():
                fine = max(r["first_s"], r["warm_s"]) < QUERY_TARGET_S
                counted = not label.startswith("(ref.)")  # a reference figure, not a target
                ok = ok and (fine or not counted)
                verdict = ("OK" if fine else "OVER 1 s") if counted else "(reference)"
                print(f"  {label:<52} {r['first_s']:8.3f} {r['warm_s']:8.3f} {r['rows']:9,}  {verdict}")
            for label, r in q["analysis"].items():
                if "error" in r:
                    print(f"  {label:<52} not timed: {r['error']}")
                else:
                    print(f"  {label:<52} {r['first_s']:8.3f} {r['warm_s']:8.3f}")
            _line("peak memory of the query phase", f"{q['peak_mb']:.0f} MB")
    finally:
        if not args.keep and not args.data_dir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s; all targets met: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
