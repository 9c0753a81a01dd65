"""Stores of earlier releases: the first release's single-file store (schema 1) opens
read-only and answers every read; ``migrate`` copies it and applies today's cluster-key
policy (reporting each change), so a migrated run, the read-only view and a fresh ingest of
the same files give the same intervals; a refusal names the migrate command as the CLI
spells it."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore import cli
from evalcore.analysis import compare
from evalcore.ingest import parse_paths
from evalcore.store import Store, migrate

from .conftest import export_legacy

ROOT = Path(__file__).resolve().parents[2]
FIRST_RELEASE = Path(__file__).parent / "data" / "legacy_v1_first_release.duckdb.gz"
# the two inspect logs that store was made from (tests/store/data/README.md)
DEMO_LOGS = sorted((ROOT / "data" / "demo" / "inspect").glob("*.eval"))[:2]


@pytest.fixture
def first_release(tmp_path) -> Path:
    path = tmp_path / "first.duckdb"
    with gzip.open(FIRST_RELEASE, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _interval(store) -> tuple:
    """The compare interval of run 2 against run 1 (the clustered SE where a cluster key is
    applied) and the method behind it."""
    row = compare(store, 1, 2).per_task.iloc[0]
    return round(float(row["low"]), 12), round(float(row["high"]), 12), row["kind"]


def test_the_first_releases_store_opens_read_only(capsys, first_release):
    code, out, err = _cli(capsys, "--store", first_release, "runs", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [r["name"] for r in runs] == ["hf/demo-org/atlas-13b", "hf/demo-org/boreal-8b"]
    assert [r["n_scores"] for r in runs] == [300, 300]
    old = Store(first_release)
    assert old.read_only and len(old.scores([1, 2])) == 600


def test_migrate_applies_todays_cluster_policy_and_says_so(capsys, first_release, tmp_path,
                                                           store_locations):
    target = store_locations.new("migrated")
    code, out, err = _cli(capsys, "migrate", first_release, *target.cli_args)
    assert code == 0, err
    assert "migrated 2 run(s), 600 score row(s)" in out
    assert "cluster keys now offered, not applied (2;" in out
    assert "task 'trivia_demo': cluster key 'category' offered, not applied: only 6 clusters" in out
    migrated = target.open()
    info = migrated.run_info(1)["protocol"]
    assert info["cluster_key"] is None and info["cluster_key_offered"] == "category"
    assert migrated.scores([1, 2])["cluster"].isna().all()
    assert not migrated.cell_stats()["has_cluster"].any()
    report = migrate(first_release, store_locations.new("again").open())
    assert [(c.run_id, c.task, c.key, c.n_items, c.n_clusters) for c in report.cluster_changes] \
        == [(1, "trivia_demo", "category", 60, 6), (2, "trivia_demo", "category", 60, 6)]


def test_a_migrated_store_the_old_one_and_a_fresh_ingest_give_the_same_intervals(
        tmp_path, store_locations):
    """An old store whose runs carry the cluster key an older release applied automatically
    (the same runs as today's parse, with ``category``'s 6 clusters applied, as that release
    did): migrated, read as it is, and ingested fresh, run 2 against run 1 has one interval."""
    fresh = store_locations.new("fresh").open()
    fresh.ingest(parse_paths(DEMO_LOGS))
    expected = _interval(fresh)
    assert expected[2] == "paired"                     # the key is only offered today
    applied = store_locations.new("applied").open()
    applied.ingest(parse_paths(DEMO_LOGS, cluster_key="category"))
    assert _interval(applied)[2] == "paired, clustered SE"
    old = export_legacy(applied, tmp_path / "old.duckdb")
    migrated = store_locations.new("migrated").open()
    report = migrate(old, migrated)
    assert [c.key for c in report.cluster_changes] == ["category", "category"]
    assert _interval(migrated) == expected
    assert _interval(Store(old)) == expected


def test_the_first_releases_runs_lose_the_cluster_key_a_fresh_ingest_only_offers(
        first_release, store_locations):
    fresh = store_locations.new("fresh").open()
    fresh.ingest(parse_paths(DEMO_LOGS))
    migrated = store_locations.new("migrated").open()
    migrate(first_release, migrated)
    for store in (fresh, migrated, Store(first_release)):
        assert _interval(store)[2] == "paired"
        assert store.run_info(1)["protocol"]["cluster_key_offered"] == "category"


def test_the_migrate_command_in_a_refusal_runs_as_printed(capsys, first_release, tmp_path):
    code, _, err = _cli(capsys, "--store", first_release, "tag", "#1", "x")
    assert code == 3
    command = err[err.index("python -m evalcore migrate"):].split("\n")[0].strip()
    assert command == f"python -m evalcore migrate {first_release} --store NEW_STORE_FOLDER"
    argv = command.replace("NEW_STORE_FOLDER", str(tmp_path / "new")).split()[1:]
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert Store(tmp_path / "new").runs()["name"].tolist() == ["hf/demo-org/atlas-13b",
                                                              "hf/demo-org/boreal-8b"]
