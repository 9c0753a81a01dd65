"""Internet scale: a store of 100,000,000 item scores, built in chunks, then the page queries.

Builds 4,000 runs x 25,000 items (default; ``--runs``/``--items`` make it
smaller) through ``Store.ingest`` of canonical lm_eval-shaped runs: 0/1 scores from an
item-response model (shared item difficulties, one ability per run), items split over
``--tasks`` tasks, a real-looking 64-hex ``doc_hash`` and ``prompt_hash`` per item (the same
in every run, as in lm_eval's sample logs), a per-task summary row (value, stderr, n) like a
results JSON, and no prompt/response texts. Generation happens ``--chunk-runs`` runs at a
time, so memory stays flat whatever the size.

At each checkpoint (default: 5,000,000 scores and the final size) a fresh child process
(so its peak memory is the query phase's own, and the first call is what a newly started
dashboard pays) measures:

- the time to ingest one more 25,000-item run into this store, against the same ingest into
  an empty store (``--probes`` runs each, median; the probes stay in the big store, named
  ``probe-...``);
- a one-task leaderboard (the page's first call: Wilson intervals and tiers for every run;
  target < 1 s), and the page's second call (rank intervals, shown for reference);
- a two-run compare over all tasks plus the discordant list (target < 300 ms);
- the overview page (runs, tasks and audit tables; target < 300 ms);

first call and median of ``--repeat`` warm calls. With ``--maintain`` it then merges the
store's small files (``Store.maintain``, what ``evalbars maintain`` does) and times the page
queries again. Then it prints the store's disk size, the
build time and peak memory (build process and query process; target < 4 GB), and the growth
from the first checkpoint to the last with a linear extrapolation to 100,000,000 scores.

Before building it checks free disk (``df``): after the first chunk it projects the final
size from the bytes per score so far and stops early (at the largest size that fits with a
margin) if the projection does not fit; ``--max-minutes`` stops the build at the largest
size reached in that time. Either way the output says so.

Run:  python bench/bench_scale.py                              # 100M scores (long)
      python bench/bench_scale.py --runs 200 --items 25000     # 5M scores
      python bench/bench_scale.py --max-minutes 40 --keep DIR  # as large as 40 minutes allow
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    TEXT_COLUMNS,
    ParsedRun,
    SourceFile,
)

FULL_SCORES = 100_000_000
TARGETS_MS = {"leaderboard": 1000.0, "compare": 300.0, "overview": 300.0}
MEMORY_TARGET_MB = 4096.0
LABELS = {"leaderboard": "one-task leaderboard (Wilson, tiers)",
          "ranks": "  + rank intervals for that task",
          "compare": "two-run compare, all tasks + discord.",
          "overview": "overview (runs, tasks, audit)"}
DISK_MARGIN = 1.5          # the projected store must fit 1.5 times into the free space
DISK_RESERVE = 5 * 2**30   # and leave 5 GB for everyone else on the disk


def _peak_mb() -> float:
    """Peak resident memory of this process in MB: VmHWM of /proc/self/status (the high-water
    mark of this program's own memory, reset by exec), else ru_maxrss (in KB on Linux; a
    child started by fork + exec inherits its parent's value there, so the query child's
    figure would be at least the build process's)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _hex(seed: str, n: int) -> np.ndarray:
    return np.array([hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(n)],
                    dtype=object)


class RunFactory:
    """Canonical runs of a fixed item set: ``make(name, ability, rng)``."""

    def __init__(self, n_items: int, n_tasks: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.n_items, self.n_tasks = n_items, n_tasks
        per_task = np.full(n_tasks, n_items // n_tasks)
        per_task[: n_items % n_tasks] += 1
        self.tasks = [f"task_{t:02d}" for t in range(n_tasks)]
        self.task_of = np.repeat(np.array(self.tasks, dtype=object), per_task)
        self.item_id = np.concatenate([np.arange(k) for k in per_task]).astype(str).astype(object)
        self.item_hash = _hex("doc", n_items)
        self.prompt_hash = _hex("prompt", n_items)
        self.difficulty = rng.normal(0.0, 1.2, n_items)
        self.bounds = np.concatenate([[0], np.cumsum(per_task)])

    def make(self, name: str, ability: float, rng: np.random.Generator) -> ParsedRun:
        p = 0.25 + 0.75 / (1.0 + np.exp(-(ability - self.difficulty)))
        score = (rng.random(self.n_items) < p).astype(float)
        scores = pd.DataFrame({
            "task": self.task_of, "metric": "acc", "item_id": self.item_id, "answer_idx": 0,
            "score": score, "cluster": None, "item_hash": self.item_hash,
            "prompt_hash": self.prompt_hash})[list(SCORE_COLUMNS)]
        summaries = []
        for t, task in enumerate(self.tasks):
            x = score[self.bounds[t]:self.bounds[t + 1]]
            n = len(x)
            summaries.append({"task": task, "metric": "acc", "value": float(x.mean()),
                              "stderr": float(x.std(ddof=1) / np.sqrt(n)), "stderr_raw": None,
                              "n": n, "is_group": False})
        digest = hashlib.sha256(f"bench-scale {name}".encode()).hexdigest()
        return ParsedRun(
            name=name, model=name, source_format="lm_eval", harness="lm-evaluation-harness",
            harness_version="0.4.8", protocol={"config": {"num_fewshot": 0}},
            files=[SourceFile(f"samples_{name}.jsonl", digest, self.n_items * 400,
                              "lm_eval_samples_jsonl")],
            scores=scores, summaries=pd.DataFrame(summaries, columns=list(SUMMARY_COLUMNS)),
            texts=pd.DataFrame(columns=list(TEXT_COLUMNS)),
            tasks=pd.DataFrame([{"task": t, "n_choices": 4, "protocol": {"num_fewshot": 0}}
                                for t in self.tasks], columns=list(TASK_COLUMNS)))


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------
def open_store(location: str, data_path: str | None):
    from evalcore.store import Store
    return Store(location, data_path=data_path) if data_path else Store(location)


def disk_bytes(location: str, data_path: str | None) -> int:
    """Bytes on disk of a local store (catalog file(s) + Parquet folder); the data path's
    bytes for a PostgreSQL catalog (the catalog's own tables are not counted)."""
    total = 0
    for root in {p for p in (location, data_path) if p and not p.startswith("ducklake:")}:
        path = Path(root)
        if path.is_file():
            files = [path] + [path.with_name(path.name + s) for s in (".wal", "-wal", "-shm")]
        else:
            files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
        total += sum(p.stat().st_size for p in files if p.exists())
    return total


def _df_line(folder: Path) -> str:
    out = subprocess.run(["df", "-h", str(folder)], check=False, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1] if out.strip() else "(df unavailable)"


# ---------------------------------------------------------------------------------------
# child: measure one checkpoint
# ---------------------------------------------------------------------------------------
def _timed(fn: Callable[[], object], repeat: int) -> dict:
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1000
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return {"first_ms": first, "median_ms": statistics.median(times), "min_ms": min(times)}


def measure(spec: dict) -> dict:
    """One checkpoint (runs in a child process): probe ingests, then the page queries."""
    from evalcore import analysis

    factory = RunFactory(spec["items"], spec["tasks"], spec["seed"])
    rng = np.random.default_rng(spec["seed"] + 10_000 + spec["checkpoint"])
    store = open_store(spec["store"], spec["data_path"])
    store.version()                           # attach once, outside every timing
    probes = [factory.make(f"probe-{spec['checkpoint']}-{i}", float(rng.normal()), rng)
              for i in range(0 if spec.get("queries_only") else spec["probes"])]
    big, empty = [], []
    with tempfile.TemporaryDirectory(prefix="bench-scale-empty-",
                                     dir=spec["scratch"]) as scratch:
        for i, run in enumerate(probes):
            t = time.perf_counter()
            store.ingest([run])
            big.append(time.perf_counter() - t)
            fresh = open_store(str(Path(scratch) / f"empty-{i}"), None)
            fresh.version()
            t = time.perf_counter()
            fresh.ingest([run])
            empty.append(time.perf_counter() - t)
            fresh.close()
    runs = store.runs()
    names = [str(n) for n in runs["name"] if not str(n).startswith("probe-")]
    a, b = names[-2], names[-1]
    task = factory.tasks[0]

    def leaderboard():
        store.version(); store.runs(); store.tasks()
        return analysis.leaderboard(store, task=task, method="wilson", include_ranks=False)

    def ranks():
        return analysis.leaderboard(store, task=task, method="clt", include_tiers=False,
                                    include_audit=False, rank_tasks=[task])

    def compare():
        store.version(); store.runs(); store.tasks([store.resolve_run(a), store.resolve_run(b)])
        cmp = analysis.compare(store, a, b)
        row = cmp.per_task.iloc[0]
        analysis.discordant_items(store, a, b, str(row.task), str(row.metric), cell="b")
        return cmp

    def overview():
        store.version(); store.runs()
        return analysis.overview(store)

    if spec.get("queries_only"):
        big, empty = [], []
    timings = {"leaderboard": _timed(leaderboard, spec["repeat"]),
               "compare": _timed(compare, spec["repeat"]),
               "overview": _timed(overview, spec["repeat"])}
    if not spec["skip_ranks"]:
        timings["ranks"] = _timed(ranks, max(1, spec["repeat"] // 2))
    n_scores = int(runs["n_scores"].sum()) if "n_scores" in runs else None
    return {"ingest_big_s": big, "ingest_empty_s": empty, "timings": timings,
            "runs": len(runs), "scores": n_scores, "peak_mb": _peak_mb(),
            "disk": disk_bytes(spec["store"], spec["data_path"])}


# ---------------------------------------------------------------------------------------
# parent: build in chunks, measure at checkpoints, report
# ---------------------------------------------------------------------------------------
def _run_child(spec: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--measure", json.dumps(spec)], check=False,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"checkpoint measurement failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt_ms(t: dict) -> str:
    return f"{t['first_ms']:9.0f} {t['median_ms']:9.0f} {t['min_ms']:8.0f}"


def _print_checkpoint(label: str, build_s: float, m: dict, built_scores: int) -> None:
    big, empty = statistics.median(m["ingest_big_s"]), statistics.median(m["ingest_empty_s"])
    print(f"\n== {label}: {built_scores:,} built scores ({m['runs']:,} runs incl. probes"
          + (f", {m['scores']:,} scores" if m["scores"] else "") + ")")
    print(f"  build time so far                     {build_s:10.1f} s")
    print(f"  disk size (catalog + Parquet)         {m['disk'] / 2**20:10.1f} MB "
          f"({m['disk'] / max(built_scores, 1):.2f} bytes/score)")
    print(f"  ingest one more {m['items']:,}-item run      {big:10.3f} s  (median of "
          f"{len(m['ingest_big_s'])}: " + ", ".join(f"{x:.3f}" for x in m["ingest_big_s"]) + ")")
    print(f"  the same into an empty store          {empty:10.3f} s  (median of "
          f"{len(m['ingest_empty_s'])}: " + ", ".join(f"{x:.3f}" for x in m["ingest_empty_s"])
          + f"); ratio {big / empty:.2f}x")
    print(f"  {'page query':38s}{'first ms':>9s} {'median ms':>9s} {'min ms':>8s}  target")
    for key, t in m["timings"].items():
        target = TARGETS_MS.get(key)
        verdict = ("(reference)" if target is None else
                   f"< {target:.0f} ms: {'met' if t['median_ms'] < target else 'NOT MET'}")
        print(f"  {LABELS[key]:38s}{_fmt_ms(t)}  {verdict}")
    print(f"  peak memory of the query process      {m['peak_mb']:10.0f} MB")


def _maintained(store, spec: dict, location: str, data_path: str | None) -> None:
    """Merge the store's small files (``Store.maintain``, history kept) and time the page
    queries again: what a store that runs ``evalbars maintain`` now and then serves."""
    files_before = sum(1 for _ in Path(data_path or location).rglob("*.parquet"))
    t = time.perf_counter()
    store.maintain(merge=True)
    took = time.perf_counter() - t
    files_after = sum(1 for _ in Path(data_path or location).rglob("*.parquet"))
    store.close()
    m = _run_child(spec | {"queries_only": True})
    print(f"  after Store.maintain (merge, {took:.1f} s; Parquet files {files_before:,} -> "
          f"{files_after:,} on disk, the merged-away ones stay until snapshots expire)")
    print(f"  {'page query':38s}{'first ms':>9s} {'median ms':>9s} {'min ms':>8s}  target")
    for key, tm in m["timings"].items():
        target = TARGETS_MS.get(key)
        verdict = ("(reference)" if target is None else
                   f"< {target:.0f} ms: {'met' if tm['median_ms'] < target else 'NOT MET'}")
        print(f"  {LABELS[key]:38s}{_fmt_ms(tm)}  {verdict}")


def build(args: argparse.Namespace) -> int:
    scratch = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    scratch.mkdir(parents=True, exist_ok=True)
    location = args.store or str(scratch / "store")
    target = args.runs * args.items
    print(f"bench_scale: {args.runs:,} runs x {args.items:,} items = {target:,} scores "
          f"({args.tasks} tasks, {args.chunk_runs} runs per ingest call)")
    print(f"store: {location}" + (f" (data path {args.data_path})" if args.data_path else ""))
    print(f"df: {_df_line(scratch)}")
    checkpoints = sorted({c for c in args.checkpoints if c < target} | {target})
    factory = RunFactory(args.items, args.tasks, args.seed)
    rng = np.random.default_rng(args.seed)
    store = open_store(location, args.data_path)
    store.version()
    t0 = time.perf_counter()
    built, r, results, stop_reason, capped = 0, 0, [], None, args.runs
    while r < capped:
        n = min(args.chunk_runs, capped - r)
        store.ingest([factory.make(f"model-{r + i:05d}", float(rng.normal()), rng)
                      for i in range(n)])
        r += n
        built = r * args.items
        elapsed = time.perf_counter() - t0
        if r == n and r < capped:          # after the first chunk: does the rest fit?
            per_score = disk_bytes(location, args.data_path) / built
            free = shutil.disk_usage(scratch).free
            room = (free - DISK_RESERVE) / DISK_MARGIN
            needed = per_score * (target - built)
            print(f"first chunk: {per_score:.2f} bytes/score on disk, projected "
                  f"{per_score * target / 2**30:.1f} GB for {target:,} scores; "
                  f"{free / 2**30:.1f} GB free")
            if needed > room:
                capped = max(r, int(room / per_score / args.items) + r)
                stop_reason = (f"disk: the projected store does not fit the free space with "
                               f"margin; building {capped * args.items:,} scores instead")
                print(stop_reason)
        if args.max_minutes and elapsed > args.max_minutes * 60 and r < capped:
            stop_reason = (f"time: --max-minutes {args.max_minutes} reached after "
                           f"{built:,} scores ({elapsed / 60:.1f} min)")
            print(stop_reason)
            capped = r
        if built >= (checkpoints[0] if checkpoints else float("inf")) or r >= capped:
            build_s = time.perf_counter() - t0
            spec = {"store": location, "data_path": args.data_path, "items": args.items,
                    "tasks": args.tasks, "seed": args.seed, "checkpoint": len(results),
                    "probes": args.probes, "repeat": args.repeat, "scratch": str(scratch),
                    "skip_ranks": args.skip_ranks}
            store.close()
            m = _run_child(spec) | {"items": args.items}
            store = open_store(location, args.data_path)
            results.append((built, build_s, m))
            _print_checkpoint(f"checkpoint {len(results)}", build_s, m, built)
            if args.maintain:
                _maintained(store, spec, location, args.data_path)
            while checkpoints and checkpoints[0] <= built:
                checkpoints.pop(0)
            t0 = time.perf_counter() - build_s   # measuring is not building
        else:
            print(f"  {built:>13,} scores  {elapsed:8.1f} s  peak {_peak_mb():6.0f} MB",
                  flush=True)
    store.close()
    _summary(results, stop_reason, target)
    if not args.dir and not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _summary(results: list, stop_reason: str | None, target: int) -> None:
    built, build_s, last = results[-1]
    print(f"\nbuild: {built:,} scores in {build_s:.1f} s ({built / build_s:,.0f} scores/s); "
          f"peak memory of the build process {_peak_mb():.0f} MB, of the query process "
          f"{last['peak_mb']:.0f} MB (target < {MEMORY_TARGET_MB:.0f} MB: "
          f"{'met' if max(_peak_mb(), last['peak_mb']) < MEMORY_TARGET_MB else 'NOT MET'})")
    if stop_reason:
        print(f"stopped early: {stop_reason}")
    if len(results) < 2:
        return
    first_n, _, first = results[0]
    ratio = built / first_n
    print(f"\ngrowth from {first_n:,} to {built:,} scores ({ratio:.1f}x the data):")
    print(f"  disk       {first['disk'] / 2**20:9.1f} MB -> {last['disk'] / 2**20:9.1f} MB "
          f"({last['disk'] / first['disk']:.1f}x)")
    b0, b1 = (statistics.median(r["ingest_big_s"]) for r in (first, last))
    print(f"  ingest one run {b0 * 1000:6.0f} ms -> {b1 * 1000:6.0f} ms ({b1 / b0:.2f}x)")
    for key, t1 in last["timings"].items():
        t0 = first["timings"][key]
        print(f"  {key:10s} {t0['median_ms']:9.0f} ms -> {t1['median_ms']:9.0f} ms "
              f"({t1['median_ms'] / t0['median_ms']:.2f}x)")
    if built < FULL_SCORES:
        f = FULL_SCORES / built
        print(f"\nextrapolation to {FULL_SCORES:,} scores ({f:.1f}x the last size): build time "
              f"and disk linear in the data, ~ {build_s * f / 60:.0f} min and "
              f"~ {last['disk'] * f / 2**30:.1f} GB; each time below continues the growth "
              f"measured over the checkpoints (time ~ size^k, k the least-squares slope of "
              "log time on log size, k < 0 read as flat):")
        sizes = np.log([n for n, _, _ in results])
        series = {"ingest": [statistics.median(m["ingest_big_s"]) * 1000 for _, _, m in results]}
        for key in last["timings"]:
            series[key] = [m["timings"][key]["median_ms"] for _, _, m in results]
        for key, values in series.items():
            k = max(0.0, float(np.polyfit(sizes, np.log(values), 1)[0]))
            print(f"  {key:11s} k = {k:4.2f}  ~ {values[-1] * f ** k:9.0f} ms")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--measure"]:
        print(json.dumps(measure(json.loads(argv[1]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--items", type=int, default=25_000, help="items per run (all tasks)")
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--chunk-runs", type=int, default=40, help="runs per Store.ingest call")
    ap.add_argument("--checkpoints", type=lambda s: [int(x) for x in s.split(",") if x],
                    default=[5_000_000], help="extra sizes (scores) to measure at, "
                    "comma-separated; the final size is always measured (default 5000000)")
    ap.add_argument("--probes", type=int, default=3, help="one-run ingests per checkpoint")
    ap.add_argument("--repeat", type=int, default=5, help="warm calls per query (median)")
    ap.add_argument("--skip-ranks", action="store_true", help="do not time rank intervals")
    ap.add_argument("--maintain", action="store_true", help="after each checkpoint, merge "
                    "small files (Store.maintain) and time the page queries again")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop building after this long and measure the size reached")
    ap.add_argument("--store", default=None, help="store location (default: a folder in "
                    "--dir); a ducklake:postgres:... URL needs --data-path")
    ap.add_argument("--data-path", default=None)
    ap.add_argument("--dir", default=None, help="scratch folder (kept); default a temporary "
                    "folder, deleted at the end unless --keep")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    return build(args)


if __name__ == "__main__":
    raise SystemExit(main())
