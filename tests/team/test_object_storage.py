"""Parquet files on S3-compatible object storage (a local moto server, tests/team/conftest.py):
writers and readers as separate processes in different working folders, the objects in the
bucket and nothing on local disk, maintain cleaning the bucket, and the faults (a missing
credential, a server that cannot be reached) as one line with exit code 4."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _tidy(folder: Path, model: str, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{model.replace('/', '_')}.csv"
    rng = np.random.default_rng(seed)
    pd.DataFrame({"model": model, "task": np.repeat(["t1", "t2"], 25),
                  "item_id": [str(j) for j in range(25)] * 2,
                  "score": (rng.random(50) < 0.6).astype(int)}).to_csv(path, index=False)
    return path


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "EVALBARS_"))}
    return env | {"PYTHONPATH": str(ROOT)} | extra


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evalcore", *args], env=env, cwd=cwd,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _local_parquet(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*.parquet")]


def test_two_machines_share_a_team_store_on_s3(moto_s3, pg_cluster, tmp_path):
    bucket = moto_s3.new_bucket()
    store = "ducklake:postgres:" + pg_cluster.dsn(pg_cluster.new_database())
    env = _env(moto_s3.env | {"EVALBARS_STORE": store,
                              "EVALBARS_DATA_PATH": f"s3://{bucket}/team/"})
    machines = {name: tmp_path / name for name in ("a", "b", "reader")}
    procs = []
    for m, name in enumerate(("a", "b")):
        for k in range(2):
            f = _tidy(machines[name], f"org/model-{name}{k}", 10 * m + k)
            procs.append(_cli(["ingest", f.name, "--lock-timeout", "120",
                               "--author", f"ci-{name}"], env, machines[name]))
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    machines["reader"].mkdir()
    reader = _cli(["runs", "--format", "json"], env, machines["reader"])
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, err
    names = sorted(r["name"] for r in json.loads(out)["runs"])
    assert names == ["org/model-a0", "org/model-a1", "org/model-b0", "org/model-b1"]
    hist = _cli(["history", "--format", "json"], env, machines["reader"])
    out, _ = hist.communicate(timeout=300)
    assert sorted({c["author"] for c in json.loads(out)["changes"]}) == ["ci-a", "ci-b"]
    keys = moto_s3.keys(bucket)
    assert keys and all(k.startswith("team/") for k in keys)
    assert any(k.endswith(".parquet") for k in keys)
    assert _local_parquet(tmp_path) == []                 # nothing on local disk


def test_maintain_cleans_the_bucket(moto_s3, tmp_path, monkeypatch):
    for k, v in moto_s3.env.items():
        monkeypatch.setenv(k, v)
    bucket = moto_s3.new_bucket()
    store = Store(tmp_path / "store", data_path=f"s3://{bucket}/lab/", lock_timeout=30)
    from evalcore.ingest import parse_paths
    store.ingest(parse_paths([_tidy(tmp_path / "in", "org/keep", 1),
                              _tidy(tmp_path / "in", "org/drop", 2)]))
    store.delete_run("org/drop")
    store.ingest(parse_paths([_tidy(tmp_path / "in", "org/later", 3)]))
    moto_s3.client().put_object(Bucket=bucket, Key="lab/main/scores/orphan.parquet", Body=b"x")
    before = set(moto_s3.keys(bucket))
    report = store.maintain(merge=False, keep_history=timedelta(0), reader_grace=timedelta(0),
                            orphans_older_than=timedelta(0), allow_short_orphan_age=True)
    after = set(moto_s3.keys(bucket))
    assert report.files_deleted > 0 and report.orphans_deleted >= 1
    assert "lab/main/scores/orphan.parquet" not in after
    assert after < before                                   # objects deleted, none added
    assert sorted(store.runs()["name"]) == ["org/keep", "org/later"]
    assert _local_parquet(tmp_path / "store") == []


def test_missing_credential_is_one_line_naming_the_variable(moto_s3, tmp_path):
    bucket = moto_s3.new_bucket()
    env = _env({k: v for k, v in moto_s3.env.items() if k != "AWS_SECRET_ACCESS_KEY"})
    f = _tidy(tmp_path / "in", "org/m", 1)
    p = _cli(["ingest", str(f), "--store", str(tmp_path / "store"),
              "--data-path", f"s3://{bucket}/x/"], env, tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 4, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "AWS_SECRET_ACCESS_KEY" in lines[0]
    assert not (tmp_path / "store").exists()                # nothing half-written
    assert moto_s3.keys(bucket) == []


def test_unreachable_object_store_exits_4_and_stores_nothing(moto_s3, tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]                           # nothing listens here
    env = _env(moto_s3.env | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{dead}"})
    f = _tidy(tmp_path / "in", "org/m", 1)
    p = _cli(["ingest", str(f), "--store", str(tmp_path / "store"),
              "--data-path", "s3://nowhere/x/", "--lock-timeout", "5"], env, tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 4, err
    assert "store unavailable" in err and "AWS_ENDPOINT_URL" in err
    if (tmp_path / "store").exists():
        assert _local_parquet(tmp_path / "store") == []


def test_refused_credentials_exit_4_naming_the_variables(moto_s3_with_auth, tmp_path):
    env = _env(moto_s3_with_auth.env)
    f = _tidy(tmp_path / "in", "org/m", 1)
    p = _cli(["ingest", str(f), "--store", str(tmp_path / "store"),
              "--data-path", "s3://evals/x/", "--lock-timeout", "5"], env, tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 4, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "refused the credentials" in lines[0]
    assert "AWS_ACCESS_KEY_ID" in lines[0] and "AWS_SECRET_ACCESS_KEY" in lines[0]


def test_object_store_down_then_back_stores_each_run_once(moto_s3, tmp_path):
    """The server unreachable during an ingest: exit 4 and nothing of the run; reachable
    again, the same ingest stores the run once."""
    import socket
    bucket = moto_s3.new_bucket()
    store_args = ["--store", str(tmp_path / "store"), "--data-path", f"s3://{bucket}/x/",
                  "--lock-timeout", "5"]
    first, second = _tidy(tmp_path / "in", "org/first", 1), _tidy(tmp_path / "in", "org/b", 2)
    p = _cli(["ingest", str(first), *store_args], _env(moto_s3.env), tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    down = _env(moto_s3.env | {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{dead}"})
    p = _cli(["ingest", str(second), *store_args], down, tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 4 and "store unavailable" in err, err
    p = _cli(["ingest", str(second), *store_args], _env(moto_s3.env), tmp_path)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    p = _cli(["runs", "--format", "json", *store_args], _env(moto_s3.env), tmp_path)
    out, err = p.communicate(timeout=300)
    runs = json.loads(out)["runs"]
    assert sorted(r["name"] for r in runs) == ["org/b", "org/first"]
    assert all(r["n_scores"] == 50 for r in runs)


def test_which_connections_get_the_s3_secret():
    from evalcore.store.objectstore import S3Settings, wants_secret
    both = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    assert wants_secret("s3://b/p/", "local", {})
    assert not wants_secret("/data/", "postgres", both)
    assert wants_secret(None, "postgres", both)              # the catalog's own data path
    assert not wants_secret(None, "postgres", {"AWS_ACCESS_KEY_ID": "k"})
    assert not wants_secret(None, "local", both)
    plain = S3Settings.from_environment("s3://b/", both | {"AWS_ENDPOINT_URL": "http://h:9000"})
    assert (plain.endpoint, plain.use_ssl, plain.url_style, plain.region) == \
        ("h:9000", False, "path", "us-east-1")
    aws = S3Settings.from_environment("s3://b/", both | {"AWS_DEFAULT_REGION": "eu-west-1"})
    assert (aws.endpoint, aws.use_ssl, aws.url_style, aws.region) == \
        (None, True, "vhost", "eu-west-1")
    sql = S3Settings.from_environment("s3://b/", {"AWS_ACCESS_KEY_ID": "k'x",
                                                  "AWS_SECRET_ACCESS_KEY": "s"}).secret_sql()
    assert "KEY_ID 'k''x'" in sql                            # quoted, never raw
    from evalcore.errors import StoreUnavailableError
    with pytest.raises(StoreUnavailableError, match="AWS_ENDPOINT_URL"):
        S3Settings.from_environment("s3://b/", both | {"AWS_ENDPOINT_URL": "minio:9000"})
