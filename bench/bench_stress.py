"""Stress benchmark: writers, ``maintain`` and readers on one store, in separate processes.

Every process is a real user of the store:

* **writers** ingest tidy CSV files through the CLI's own entry point
  (``evalcore.cli.main(["ingest", FILE, "--lock-timeout", T])``, one call per file, the
  process's store connection closed after each call as a CLI process would), so every
  ingest also runs the automatic compaction; each writer logs every call's exit code and
  the time it returned;
* **maintain** runs ``evalcore.cli.main(["maintain", "--keep-days", "0"])`` in a loop: merge
  everything, expire every snapshot it may, delete the files it may (its exit codes logged);
* **readers** make "product reads" in a loop, each one ``Store.one_version()`` block as a
  page interaction, a CLI command or a report makes: ``runs()``, ``tasks()``,
  ``cell_stats()``, ``scores()`` of a few runs and raw counts of every table per run.

Every run is a whole tidy table of ``TASKS`` x n items whose n is written in its name
(``w1r3n47``), so a read knows what a whole run looks like without asking anyone. An
*anomaly* is a read that

* sees a run partly (any table or query with other counts than n per task), or
* misses a run whose writer had returned exit code 0 before the read began, or
* sees fewer runs than an earlier read of the same process, or
* fails (any exception: a read must never fail because others write or maintain).

A *bad exit* is an ingest exit code other than 0 or 4 (4: the store stayed busy for
``--lock-timeout``), or a ``maintain`` exit code other than 0 or 4. At the end every run
whose ingest exited 0 must be in the store once, whole. Targets: 0 anomalies, 0 bad exits.

Usage::

    python bench/bench_stress.py                              # local store, full size
    python bench/bench_stress.py --postgres                   # a private PostgreSQL catalog
    python bench/bench_stress.py --writers 2 --runs 4 --readers 2 --reads 200   # small

Full size (the figures in bench/README.md): 3 writers x 40 runs, 1 maintain loop, 4 readers
until 10,000 reads are made (``--reads`` is the total over all readers; readers stop when
both the writers are done and the reads are made). ``run_stress(...)`` is the entry point of
``tests/store/test_stress.py`` (a small size on both catalogs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TASKS = ("alpha", "beta")
NAME = re.compile(r"^w(\d+)r(\d+)n(\d+)$")


# ---------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------

def run_name(writer: int, k: int, n: int) -> str:
    return f"w{writer}r{k}n{n}"


def items_of(name: str) -> int | None:
    """The n (items per task) a run's name declares, None for a name of no stress run."""
    m = NAME.match(str(name))
    return int(m.group(3)) if m else None


def write_tidy(path: Path, name: str, n: int, seed: int) -> Path:
    """One run as a tidy CSV: every task x n items, 0/1 scores."""
    rng = random.Random(seed)
    lines = ["model,task,item_id,score"]
    for task in TASKS:
        lines += [f"{name},{task},{i},{int(rng.random() < 0.6)}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------------------
# the roles (each in its own process: python bench_stress.py --role ...)
# ---------------------------------------------------------------------------------------

def _store_args(location: str, data_path: str | None) -> list[str]:
    return ["--store", location] + (["--data-path", data_path] if data_path else [])


def _cli(argv: list[str]) -> tuple[int, str]:
    """``evalcore.cli.main(argv)`` with stderr captured; then this process's store
    connections are closed, as they would be at the end of a CLI process."""
    import io

    from evalcore import cli
    from evalcore.store.catalog import close_connections, open_connection_keys
    err, old = io.StringIO(), sys.stderr
    out_old = sys.stdout
    sys.stderr, sys.stdout = err, io.StringIO()
    try:
        code = cli.main(argv)
    except SystemExit as exc:        # argparse
        code = int(exc.code or 0)
    except BaseException:            # noqa: BLE001 - reported as exit 1 with the traceback
        code, _ = 1, err.write(traceback.format_exc())
    finally:
        sys.stderr, sys.stdout = old, out_old
        close_connections(open_connection_keys())
    return code, err.getvalue()


def role_writer(a: argparse.Namespace) -> None:
    """Ingest this writer's files one CLI call each; log exit code and return time."""
    files = sorted(Path(a.workdir).glob(f"w{a.index}r*.csv"),
                   key=lambda p: int(NAME.match(p.stem).group(2)))
    with open(a.log, "a") as log:
        for f in files:
            code, err = _cli(_store_args(a.store, a.data_path)
                             + ["ingest", str(f), "--lock-timeout", str(a.lock_timeout)])
            log.write(json.dumps({"name": f.stem, "code": code, "t": time.time(),
                                  "err": err[-1500:]}) + "\n")
            log.flush()


def role_maintain(a: argparse.Namespace) -> None:
    """Run ``maintain --keep-days 0`` until the done file appears; log every exit code."""
    done = Path(a.workdir) / "writers.done"
    with open(a.log, "a") as log:
        while True:
            finished = done.exists()
            code, err = _cli(_store_args(a.store, a.data_path)
                             + ["maintain", "--keep-days", "0",
                                "--lock-timeout", str(a.lock_timeout)])
            log.write(json.dumps({"code": code, "t": time.time(), "err": err[-1500:]}) + "\n")
            log.flush()
            if finished:
                return
            time.sleep(a.pause)


def committed_before(log_paths: list[Path], t: float) -> set[str]:
    """Runs whose ingest returned exit code 0 before time ``t`` (from the writer logs)."""
    names = set()
    for p in log_paths:
        if not p.exists():
            continue
        for line in p.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:          # a line being written
                continue
            if rec["code"] == 0 and rec["t"] < t:
                names.add(rec["name"])
    return names


def whole_run_problems(store, sample: random.Random) -> tuple[list[str], list[str], str]:
    """One product read (inside ``store.one_version()``): the names of the runs it saw, its
    problems (what is not a whole run) and the version it read at."""
    bad: list[str] = []
    with store.one_version() as version:
        runs = store.runs()
        names = [str(n) for n in runs["name"]]
        ids = {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}
        expect = {rid: items_of(name) for rid, name in ids.items()}
        for rid, k in zip(runs["run_id"], runs["n_scores"]):
            if expect[int(rid)] is not None and int(k) != len(TASKS) * expect[int(rid)]:
                bad.append(f"runs(): {ids[int(rid)]} has {k} scores")
        cells = store.cell_stats()
        for rid, n in zip(cells["run_id"], cells["n"]):
            if expect.get(int(rid)) not in (None, int(n)):
                bad.append(f"cell_stats(): {ids.get(int(rid), rid)} has a cell of {n} items")
        per_run_cells = Counter(int(r) for r in cells["run_id"])
        bad += [f"cell_stats(): {ids[r]} has {per_run_cells[r]} cells"
                for r in ids if expect[r] is not None and per_run_cells[r] != len(TASKS)]
        tasks = store.tasks()
        per_run_tasks = Counter(int(r) for r in tasks["run_id"])
        bad += [f"tasks(): {ids[r]} has {per_run_tasks[r]} rows"
                for r in ids if expect[r] is not None and per_run_tasks[r] != len(TASKS)]
        with store._read() as con:
            counts = {}
            for table, sql in (
                    ("scores", "SELECT s.run_id, count(*) FROM scores s JOIN items i "
                               "ON i.item = s.item GROUP BY 1"),
                    ("vectors", "SELECT run_id, sum(n) FROM vectors GROUP BY 1"),
                    ("files", "SELECT run_id, count(*) FROM files GROUP BY 1")):
                counts[table] = dict(con.execute(sql).fetchall())
        for rid, name in ids.items():
            n = expect[rid]
            if n is None:
                continue
            for table, want in (("scores", len(TASKS) * n), ("vectors", len(TASKS) * n),
                                ("files", 1)):
                got = int(counts[table].get(rid, 0))
                if got != want:
                    bad.append(f"{table} table: {name} has {got} rows (expected {want})")
        if ids:
            some = sample.sample(sorted(ids), min(3, len(ids)))
            scores = store.scores(some)
            per = Counter(int(r) for r in scores["run_id"])
            bad += [f"scores(): {ids[r]} has {per[r]} rows" for r in some
                    if expect[r] is not None and per[r] != len(TASKS) * expect[r]]
    return names, bad, version


def role_reader(a: argparse.Namespace) -> None:
    """Product reads until the writers are done and this reader made its share."""
    from evalcore.store import Store
    done = Path(a.workdir) / "writers.done"
    logs = sorted(Path(a.workdir).glob("writer-*.log"))
    sample = random.Random(a.index)
    store = Store(a.store, data_path=a.data_path, lock_timeout=a.lock_timeout)
    made, seen_most = 0, 0
    with open(a.log, "a") as log:
        while not (done.exists() and made >= a.reads):
            t0 = time.time()
            rec: dict = {"t0": t0}
            try:
                names, bad, version = whole_run_problems(store, sample)
                rec.update(n_runs=len(names), version=version)
                must = committed_before(logs, t0)
                missing = sorted(must - set(names))
                if missing:
                    bad.append(f"missing committed run(s) {missing[:5]}")
                if len(names) < seen_most:
                    bad.append(f"saw {len(names)} runs after {seen_most}")
                seen_most = max(seen_most, len(names))
            except Exception as exc:  # noqa: BLE001 - any failure of a read is an anomaly
                bad = [f"read failed: {type(exc).__name__}: {str(exc)[:300]}"]
            rec["bad"] = bad
            log.write(json.dumps(rec) + "\n")
            log.flush()
            made += 1
            if a.pause:
                time.sleep(a.pause)


# ---------------------------------------------------------------------------------------
# the orchestration
# ---------------------------------------------------------------------------------------

@dataclass
class StressResult:
    """What one stress run found (see the module docstring for the definitions)."""

    reads: int = 0
    anomalies: list[str] = field(default_factory=list)
    ingest_codes: Counter = field(default_factory=Counter)
    maintain_codes: Counter = field(default_factory=Counter)
    bad_exits: list[str] = field(default_factory=list)
    final_problems: list[str] = field(default_factory=list)
    runs_committed: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.anomalies or self.bad_exits or self.final_problems)

    def summary(self) -> str:
        return (f"{self.reads} reads, {len(self.anomalies)} anomalies; ingests "
                f"{dict(self.ingest_codes)}, maintain {dict(self.maintain_codes)}, "
                f"{len(self.bad_exits)} bad exits; {self.runs_committed} runs committed; "
                f"final check: {len(self.final_problems)} problems; {self.seconds:.0f} s")


def _spawn(role: str, index: int, workdir: Path, location: str, data_path: str | None,
           log: Path, **kw) -> subprocess.Popen:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--role", role, "--index", str(index),
           "--workdir", str(workdir), "--store", location, "--log", str(log)]
    if data_path:
        cmd += ["--data-path", data_path]
    for k, v in kw.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(log.with_suffix(".stderr"), "w") as err:   # the child keeps its own copy
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)


def run_stress(location: str, data_path: str | None, workdir: Path, *, writers: int = 3,
               runs: int = 40, readers: int = 4, reads: int = 10_000, maintain: bool = True,
               items: tuple[int, int] = (20, 120), lock_timeout: float = 60.0,
               maintain_pause: float = 0.2, seed: int = 0,
               timeout: float = 3600.0) -> StressResult:
    """Run the stress test on the store at ``location`` (created here if new) with files in
    ``workdir``; returns what it found. ``reads`` is the total over all readers."""
    from evalcore.store import Store
    workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for w in range(writers):
        for k in range(runs):
            n = rng.randint(*items)
            write_tidy(workdir / f"{run_name(w, k, n)}.csv", run_name(w, k, n), n, rng.random())
    store = Store(location, data_path=data_path, lock_timeout=lock_timeout)
    store.version()                 # the store exists before the processes race to create it
    store.close()
    t0 = time.time()
    logs = {"writer": [workdir / f"writer-{w}.log" for w in range(writers)],
            "reader": [workdir / f"reader-{r}.log" for r in range(readers)],
            "maintain": [workdir / "maintain.log"] if maintain else []}
    procs = [_spawn("writer", w, workdir, location, data_path, p, lock_timeout=lock_timeout)
             for w, p in enumerate(logs["writer"])]
    others = [_spawn("reader", r, workdir, location, data_path, p, lock_timeout=lock_timeout,
                     reads=-(-reads // max(readers, 1)), pause=0)
              for r, p in enumerate(logs["reader"])]
    others += [_spawn("maintain", 0, workdir, location, data_path, p, lock_timeout=lock_timeout,
                      pause=maintain_pause) for p in logs["maintain"]]
    try:
        for p in procs:
            p.wait(timeout=timeout)
        (workdir / "writers.done").touch()
        for p in others:
            p.wait(timeout=timeout)
    finally:
        for p in procs + others:
            if p.poll() is None:
                p.kill()
                p.wait()
    res = StressResult(seconds=time.time() - t0)
    _collect(res, logs, procs + others)
    _final_check(res, location, data_path, logs["writer"])
    return res


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _collect(res: StressResult, logs: dict[str, list[Path]], procs: list) -> None:
    for p in logs["writer"]:
        for rec in _records(p):
            res.ingest_codes[rec["code"]] += 1
            if rec["code"] not in (0, 4):
                res.bad_exits.append(f"ingest {rec['name']}: exit {rec['code']}: {rec['err']}")
            res.runs_committed += rec["code"] == 0
    for p in logs["maintain"]:
        for rec in _records(p):
            res.maintain_codes[rec["code"]] += 1
            if rec["code"] not in (0, 4):
                res.bad_exits.append(f"maintain: exit {rec['code']}: {rec['err']}")
    for p in logs["reader"]:
        for rec in _records(p):
            res.reads += 1
            res.anomalies += [f"{p.stem} at {rec.get('version')}: {b}" for b in rec["bad"]]
    for proc in procs:
        if proc.returncode:
            res.bad_exits.append(f"a stress process exited {proc.returncode} (see the "
                                 "*.stderr files in the work folder)")


def _final_check(res: StressResult, location: str, data_path: str | None,
                 writer_logs: list[Path]) -> None:
    from evalcore.store import Store
    store = Store(location, data_path=data_path)
    try:
        names, bad, _ = whole_run_problems(store, random.Random(0))
        committed = committed_before(writer_logs, float("inf"))
        res.final_problems = bad + [f"committed run {n} is not in the store"
                                    for n in sorted(committed - set(names))]
        res.final_problems += [f"run {n} is in the store {c} times"
                               for n, c in Counter(names).items() if c > 1]
    finally:
        store.close()


# ---------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------

def _postgres_location(base: Path):
    """A private PostgreSQL cluster (tests/pg_cluster.py) and a new catalog database on it."""
    from tests.pg_cluster import PgCluster, find_bin_dir
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL server programs found (see tests/pg_cluster.py)")
    cluster = PgCluster(bin_dir).start()
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    return cluster, cluster.ducklake_url(cluster.new_database()), str(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=("writer", "reader", "maintain"), help=argparse.SUPPRESS)
    ap.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--pause", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help="work folder (default: a new temporary folder)")
    ap.add_argument("--store", help="the store (default: a new local store in the work folder)")
    ap.add_argument("--data-path", dest="data_path")
    ap.add_argument("--postgres", action="store_true",
                    help="a new catalog on a private PostgreSQL cluster (tests/pg_cluster.py)")
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--runs", type=int, default=40, help="runs per writer")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--reads", type=int, default=10_000, help="reads over all readers")
    ap.add_argument("--no-maintain", action="store_false", dest="maintain")
    ap.add_argument("--lock-timeout", type=float, default=60.0, dest="lock_timeout")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=10, help="anomalies and bad exits to print")
    a = ap.parse_args(argv)
    if a.role:
        {"writer": role_writer, "reader": role_reader, "maintain": role_maintain}[a.role](a)
        return 0
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="evalbars-stress-"))
    cluster = None
    location, data_path = a.store, a.data_path
    if a.postgres:
        cluster, location, data_path = _postgres_location(workdir)
    elif location is None:
        location = str(workdir / "store")
    try:
        res = run_stress(location, data_path, workdir, writers=a.writers, runs=a.runs,
                         readers=a.readers, reads=a.reads, maintain=a.maintain,
                         lock_timeout=a.lock_timeout, seed=a.seed)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"store {'postgres' if a.postgres else location}; work folder {workdir}")
    print(res.summary())
    for line in (res.anomalies + res.bad_exits + res.final_problems)[:a.show]:
        print("  " + line)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
