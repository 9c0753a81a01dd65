"""``python -m evalcore noise``: JSON keys, numbers equal to the analysis layer, usage errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalcore import analysis as an
from tests.analysis_helpers import make_run, make_store
from tests.cli_helpers import run_main


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(0)
    runs = [make_run(f"cfg{c}-seed{s}", {("t", "acc"): (rng.random(300) < 0.5 + 0.05 * c).astype(float)})
            for c in (1, 2) for s in (1, 2, 3)]
    runs += [make_run(f"mix-step{k}", {("t", "acc"): (rng.random(300) < 0.4 + 0.03 * k).astype(float)})
             for k in range(1, 5)]
    s = make_store(runs, tmp_path, kind="real")
    return s


def test_json_has_every_section_and_matches_the_analysis(capsys, store):
    code, out, err = run_main(capsys, "--store", store.path, "noise", "--format", "json",
                              "--run", "cfg1-seed1", "--task", "t", "--repetitions", "50")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"protocols", "seeds", "checkpoints", "splits", "runs"}
    ref = an.seed_report(store, task="t").comparisons.iloc[0]
    got = doc["seeds"]["comparisons"][0]
    assert got["diff"] == pytest.approx(ref["diff"]) and got["df"] == pytest.approx(ref["df"])
    assert len(doc["checkpoints"]["curve"]) == 4
    assert doc["splits"]["k"] == 10 and doc["splits"]["repetitions"] == 50
    assert "seed=1" in doc["seeds"]["how_to"]
    assert {r["run"]: r["seed"] for r in doc["runs"]}["cfg2-seed3"] == 3


def test_table_output_and_planned_gap(capsys, store):
    code, out, _ = run_main(capsys, "--store", store.path, "noise", "--section", "seeds",
                            "--gap", "0.05")
    assert code == 0
    assert "Seed groups" in out and "Seed comparisons" in out and "Protocol" not in out
    code, out, _ = run_main(capsys, "--store", store.path, "noise", "--section", "protocols")
    assert code == 0 and "(none) Upload runs of one model" in out


def test_usage_errors(capsys, store):
    code, _, err = run_main(capsys, "--store", store.path, "noise", "--section", "splits")
    assert code == 2 and "--run and --task" in err
    code, _, err = run_main(capsys, "--store", store.path, "noise", "--last-n", "1")
    assert code == 2
    code, _, err = run_main(capsys, "--store", store.path, "noise", "--run", "nope", "--task", "t")
    assert code == 3 and "nope" in err
