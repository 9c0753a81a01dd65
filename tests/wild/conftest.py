"""Helpers for the wild-corpus tests: ingest real files into a fresh store, read the numbers
back the way a user reads them (leaderboard cells, CLI JSON), and read the file's own numbers.

The corpus itself is ``tests/fixtures/wild/`` (fixture ``wild_dir`` in tests/conftest.py);
each subfolder's PROVENANCE.md says where every file comes from.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.analysis import leaderboard
from evalcore.ingest import parse_paths
from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]


def ingest(tmp_path: Path, *paths: Path, name: str = "wild") -> Store:
    """A fresh store at ``tmp_path/name`` holding what ``parse_paths(paths)`` returns."""
    store = Store(tmp_path / name)
    store.ingest(parse_paths([str(p) for p in paths]))
    return store


def board(store: Store, **kw):
    """The leaderboard as the Leaderboard page opens it (no tiers/ranks: they are not numbers
    printed in any file)."""
    kw.setdefault("include_tiers", False)
    kw.setdefault("include_ranks", False)
    return leaderboard(store, **kw)


def run_cli(store_path: Path, *args: str, in_process: bool = True
            ) -> subprocess.CompletedProcess:
    """``python -m evalcore --store STORE ARGS...`` as a user types it: in this process
    (``cli.main`` with stdout and stderr captured; a new interpreter costs seconds a call), or
    as a new process with ``in_process=False``."""
    argv = ["--store", str(store_path), *args]
    if not in_process:
        return subprocess.run([sys.executable, "-m", "evalcore", *argv], check=False, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    from evalcore import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:   # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["python", "-m", "evalcore", *argv], code,
                                       out.getvalue(), err.getvalue())


def cli_leaderboard(store_path: Path, *args: str) -> dict:
    """``python -m evalcore leaderboard --format json`` on a store, parsed."""
    proc = run_cli(store_path, "leaderboard", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def same(shown, printed) -> bool:
    """``shown`` equals the number printed in the file to the digits printed (a JSON float
    carries ~17 significant digits, so this is equality up to float rounding)."""
    if printed is None or (isinstance(printed, float) and math.isnan(printed)):
        return shown is None or pd.isna(shown)
    if shown is None or pd.isna(shown):
        return False
    return math.isclose(float(shown), float(printed), rel_tol=1e-12, abs_tol=1e-15)


def number(value):
    """A file's value as a float, None for the harness's "N/A" / null / non-numbers."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def lm_eval_key(metric: str, v03: bool) -> tuple[str, str]:
    """Keys of a metric and of its stderr in a results entry (0.3: ``acc``/``acc_stderr``;
    0.4: ``acc,none``/``acc_stderr,none``; a filter follows the comma)."""
    if v03:
        return metric, f"{metric}_stderr"
    name, _, filt = metric.partition(",")
    filt = filt or "none"
    return f"{name},{filt}", f"{name}_stderr,{filt}"


def lm_eval_groups(doc: dict) -> set[str]:
    """Task names that are groups in a results file (``groups`` keys and ``group_subtasks``
    keys with subtasks)."""
    groups = set(doc.get("groups") or {})
    groups |= {k for k, v in (doc.get("group_subtasks") or {}).items() if v}
    return groups


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


@pytest.fixture
def lm(wild_dir: Path) -> Path:
    return wild_dir / "lm_eval"


@pytest.fixture
def ins(wild_dir: Path) -> Path:
    return wild_dir / "inspect"
