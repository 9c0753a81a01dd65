"""The CLI never prints a store's password: not in an error (the store cannot be reached),
not where it names the store it wrote to (``ingest``, text and JSON), not in ``--help``.

The unreachable store is a closed port on 127.0.0.1; the reachable one is a database on the
session's private PostgreSQL cluster (tests/pg_cluster.py), whose trust authentication lets
a location with a password in it connect as written.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_main

ROOT = Path(__file__).resolve().parents[1]
SECRET = "SECRETPW-51ab"
MISTRAL = "lm_eval/results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
EXIT_INTERNAL = 1


def closed_port_location() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return (f"ducklake:postgres:dbname=x host=127.0.0.1 port={port} user=u "
            f"password={SECRET}")


@pytest.mark.parametrize("command", [["runs"], ["leaderboard", "--format", "json"],
                                     ["compare", "a", "b"], ["maintain"]])
def test_store_error_never_shows_the_password(capsys, command, tmp_path):
    location = closed_port_location()
    code, out, err = run_main(capsys, "--store", location, "--data-path", tmp_path / "d",
                              *command)
    assert code == 4, (code, err)                       # store unavailable
    assert "store unavailable" in err
    assert SECRET not in out + err
    assert "password=***" in err and "127.0.0.1" in err


def test_store_from_the_environment_in_a_subprocess(tmp_path):
    """``python -m evalcore`` with $EVALBARS_STORE: the message, and --help."""
    env = dict(os.environ, EVALBARS_STORE=closed_port_location(),
               EVALBARS_DATA_PATH=str(tmp_path / "d"), PYTHONPATH=str(ROOT))
    for argv in (["runs"], ["--help"], ["ingest", "--help"]):
        proc = subprocess.run([sys.executable, "-m", "evalcore", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert SECRET not in proc.stdout + proc.stderr, argv
        assert proc.returncode not in (EXIT_INTERNAL,), proc.stderr
    assert "password=***" in proc.stderr or proc.returncode == 0


def test_ingest_names_the_store_with_the_password_masked(capsys, pg_cluster, fixtures_dir,
                                                        tmp_path):
    location = f"{pg_cluster.ducklake_url(pg_cluster.new_database())} password={SECRET}"
    args = ["--store", location, "--data-path", tmp_path / "data"]
    code, out, err = run_main(capsys, *args, "ingest", fixtures_dir / MISTRAL)
    assert code == 0, err
    assert SECRET not in out + err
    assert any(line.startswith("Store: ducklake:postgres:") and line.endswith("password=***")
               for line in out.splitlines()), out
    code, out, err = run_main(capsys, *args, "ingest", "--format", "json",
                              fixtures_dir / MISTRAL)
    assert code == 0, err
    assert SECRET not in out + err
    assert json.loads(out)["store"].endswith("password=***")
