"""The CLI side of a shared store: --author in history, restore, read-only mode (exit 2,
store unchanged) and the exit codes of the new commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore import access
from tests.cli_helpers import run_main

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "lm_eval"
FILES = ["results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json",
         "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"]


@pytest.fixture
def cli_store(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(access.ENV_READONLY, raising=False)
    monkeypatch.delenv("EVALBARS_AUTHOR", raising=False)
    paths = [FIXTURES / f for f in FILES]
    if not all(p.exists() for p in paths):
        pytest.skip("the shared lm_eval fixtures are missing")
    store = tmp_path / "store"
    code, _, err = run_main(capsys, "ingest", "--store", store, "--author", "alice", *paths)
    assert code == 0, err
    return store


def test_alice_ingests_bob_deletes_history_restore(cli_store, capsys):
    code, board_before, _ = run_main(capsys, "leaderboard", "--store", cli_store,
                                     "--format", "json")
    assert code == 0
    code, out, err = run_main(capsys, "delete", "2", "--yes", "--store", cli_store,
                              "--author", "bob")
    assert code == 0, err
    code, out, _ = run_main(capsys, "history", "--store", cli_store, "--format", "json")
    changes = json.loads(out)["changes"]
    assert [(c["author"], c["op"]) for c in changes] == [("bob", "delete"), ("alice", "ingest")]
    assert changes[0]["runs"] == [{"run_id": 2, "name": changes[0]["runs"][0]["name"]}]
    code, out, err = run_main(capsys, "restore", "#2", "--store", cli_store, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["deleted_by"] == "bob"
    code, board_after, _ = run_main(capsys, "leaderboard", "--store", cli_store,
                                    "--format", "json")
    assert json.loads(board_after)["cells"] == json.loads(board_before)["cells"]
    code, out, err = run_main(capsys, "restore", "2", "--store", cli_store)
    assert code == 3 and "nothing to restore" in err
    code, out, _ = run_main(capsys, "history", "--store", cli_store)
    assert code == 0 and "restore" in out and "alice" in out


@pytest.mark.parametrize("argv", [["ingest", str(FIXTURES / FILES[0])], ["rename", "1", "x"],
                                  ["tag", "1", "x"], ["delete", "1", "--yes"],
                                  ["restore", "1"], ["maintain"], ["migrate", "old.duckdb"]])
def test_read_only_refuses_writes_with_exit_2(cli_store, capsys, monkeypatch, argv):
    from evalcore.store import Store
    from tests.store.conftest import store_fingerprint
    fp = store_fingerprint(Store(cli_store))
    monkeypatch.setenv(access.ENV_READONLY, "1")
    code, _, err = run_main(capsys, *argv, "--store", cli_store)
    assert code == 2, err
    assert "read-only" in err
    monkeypatch.delenv(access.ENV_READONLY)
    assert store_fingerprint(Store(cli_store)) == fp
    monkeypatch.setenv(access.ENV_READONLY, "1")
    code, out, _ = run_main(capsys, "runs", "--store", cli_store)     # reads still work
    assert code == 0


def test_read_only_ingest_into_new_store_creates_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(access.ENV_READONLY, "1")
    code, _, err = run_main(capsys, "ingest", "--store", tmp_path / "new",
                            FIXTURES / FILES[0])
    assert code == 2 and "read-only" in err
    assert not (tmp_path / "new").exists()


def test_author_from_environment(cli_store, capsys, monkeypatch):
    monkeypatch.setenv("EVALBARS_AUTHOR", "ci-runner-7")
    assert run_main(capsys, "tag", "1", "seed=1", "--store", cli_store)[0] == 0
    code, out, _ = run_main(capsys, "history", "--store", cli_store, "--limit", "1",
                            "--format", "json")
    assert json.loads(out)["changes"][0]["author"] == "ci-runner-7"


def test_history_usage_error(cli_store, capsys):
    assert run_main(capsys, "history", "--limit", "-1", "--store", cli_store)[0] == 2
