"""Every CLI JSON output on three stores, saved and compared field by field.

A refactoring that must not change behaviour is checked by taking a snapshot before and after
and diffing them: ``snapshot`` builds the stores (the bundled demo; the wild corpus plus the
shared fixtures; a small synthetic store of ``bench_pages.build_store``), runs every read
command with ``--format json`` in-process (``evalcore.cli.main``; seeded Monte Carlo
included) and writes one JSON file {command line: parsed output}; ``diff`` compares two such
files and prints every field that differs (floats exactly, unless ``--rtol``).

Values that depend on when or where a store was built (creation times, the store's location,
temporary paths) are dropped before saving (``VOLATILE``).

Run:  python bench/check_outputs.py snapshot before.json
      (change the code)
      python bench/check_outputs.py snapshot after.json
      python bench/check_outputs.py diff before.json after.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FIXTURES = ROOT.parent / "shared" / "fixtures"
WILD = ROOT / "tests" / "fixtures" / "wild"
VOLATILE = {"created_at", "store", "uploaded_at", "ingested_at", "path", "source_path",
            "elapsed", "seconds"}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from evalcore.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:          # argparse usage errors
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str) and ("/tmp/" in value or "check-outputs-" in value):
        return "<temporary path>"
    return value


def _runs(store: str) -> list[dict]:
    code, out, err = _cli(["--store", store, "runs", "--format", "json"])
    if code:
        raise RuntimeError(err)
    doc = json.loads(out)
    return doc if isinstance(doc, list) else doc.get("runs", [])


def _tasks_of(store: str) -> list[str]:
    code, out, _ = _cli(["--store", store, "leaderboard", "--no-tiers", "--no-ranks",
                         "--format", "json"])
    if code:
        return []
    return sorted({c["task"] for c in json.loads(out).get("cells", [])})


def commands(store: str, max_pairs: int) -> Iterator[list[str]]:
    """The read commands run on one store (each with --format json where it has one)."""
    runs = _runs(store)
    tasks = _tasks_of(store)
    yield ["runs", "--format", "json"]
    for method in ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered"):
        yield ["leaderboard", "--method", method, "--format", "json"]
    for t in tasks[:4]:
        yield ["leaderboard", "--task", t, "--format", "json"]
    yield ["audit", "--format", "json"]
    with_items = [f"#{r['run_id']}" for r in runs if r.get("has_items")]
    pairs = [(a, b) for i, a in enumerate(with_items) for b in with_items[i + 1:]][:max_pairs]
    for a, b in pairs:
        yield ["compare", a, b, "--format", "json"]
        yield ["compare", a, b, "--adjust", "bh", "--confidence", "0.9", "--format", "json"]
    if pairs:
        yield ["plan", "--pilot", *pairs[0], "--delta", "0.02", "--format", "json"]
    yield ["plan", "--n", "500", "--disagreement", "0.2", "--format", "json"]
    yield ["noise", "--section", "all", "--format", "json"]
    for t in tasks[:2]:
        yield ["items", "suspects", "--task", t]
        yield ["items", "rescore", "--task", t]
    yield ["coverage", "--n", "30", "200", "--p", "0.1", "0.5", "--seed", "1",
           "--replicates", "2000", "--format", "json"]


def build_stores(tmp: Path, bench_runs: int) -> dict[str, str]:
    from evalcore.ingest import read_paths
    from evalcore.store import Store
    out = {}
    demo = tmp / "demo"
    s = Store(demo)
    s.ingest(read_paths([str(ROOT / "data" / "demo")]).runs)
    s.close()
    out["demo"] = str(demo)
    wild = tmp / "wild"
    s = Store(wild)
    s.ingest(read_paths([str(p) for p in (WILD, FIXTURES) if p.is_dir()]).runs)
    s.close()
    out["wild"] = str(wild)
    from bench_pages import build_store
    build_store(tmp / "bench", bench_runs, 4, 300, seed=0).close()
    out["bench"] = str(tmp / "bench")
    return out


def snapshot(path: Path, bench_runs: int, max_pairs: int) -> int:
    doc: dict[str, Any] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="check-outputs-") as tmp:
        stores = build_stores(Path(tmp), bench_runs)
        for label, store in stores.items():
            for argv in commands(store, max_pairs):
                code, out, err = _cli(["--store", store, *argv])
                key = f"{label}: {' '.join(argv)}"
                try:
                    parsed = json.loads(out) if out.strip() else None
                except json.JSONDecodeError:
                    parsed = out
                doc[key] = {"exit": code, "output": _scrub(parsed),
                            "error": _scrub(err.strip().splitlines()[-1:]) if code else []}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=True))
    print(f"{len(doc)} outputs written to {path} in {time.perf_counter() - t0:.0f} s")
    return 0


def _walk(a: Any, b: Any, where: str, rtol: float, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{where}.{k}: only in {'after' if k not in a else 'before'}")
            else:
                _walk(a[k], b[k], f"{where}.{k}", rtol, found)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            found.append(f"{where}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{where}[{i}]", rtol, found)
    elif isinstance(a, float) and isinstance(b, float):
        same = (a == b or (math.isnan(a) and math.isnan(b))
                or (rtol > 0 and math.isclose(a, b, rel_tol=rtol, abs_tol=rtol)))
        if not same:
            found.append(f"{where}: {a!r} -> {b!r}")
    elif a != b:
        found.append(f"{where}: {str(a)[:120]!r} -> {str(b)[:120]!r}")


def diff(before: Path, after: Path, rtol: float) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    found: list[str] = []
    _walk(a, b, "", rtol, found)
    for line in found[:500]:
        print(line)
    print(f"{len(found)} difference(s) over {len(set(a) | set(b))} outputs")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("out", type=Path)
    s.add_argument("--bench-runs", type=int, default=8)
    s.add_argument("--max-pairs", type=int, default=6, help="compared run pairs per store")
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    d.add_argument("--rtol", type=float, default=0.0)
    args = ap.parse_args(argv)
    if args.action == "snapshot":
        return snapshot(args.out, args.bench_runs, args.max_pairs)
    return diff(args.before, args.after, args.rtol)


if __name__ == "__main__":
    sys.exit(main())
