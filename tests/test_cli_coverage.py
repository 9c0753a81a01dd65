"""``python -m evalcore coverage``: the method check on the command line, numbers equal to
evalcore.stats.coverage, JSON keys, grids, usage errors, and no store needed."""

from __future__ import annotations

import json

import pytest

from evalcore.stats import coverage as cov
from tests.cli_helpers import run_main as run




def test_text_table_one_score(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALBARS_STORE", str(tmp_path / "none"))
    code, out, err = run(capsys, "coverage", "--n", 15, "--p", 0.6)
    assert code == 0, err
    ref = cov.proportion_coverage(15, 0.6)
    assert "one 0/1 score: n = 15, p 0.6" in out and "exact (binomial sums)" in out
    for m in ref.methods:
        line = next(li for li in out.splitlines() if m.label in li)
        assert f"{100 * m.coverage:.1f}%" in line and m.verdict in line
    assert next(li for li in out.splitlines() if "Wilson score" in li).lstrip().startswith("*")
    assert not (tmp_path / "none").exists()          # no store opened or created


def test_json_paired_and_keys(capsys):
    code, out, _ = run(capsys, "coverage", "--n", 15, "--discordance", 0.47, "--seed", 3,
                       "--replicates", 4000, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["confidence"] == 0.95 and len(data["reports"]) == 1
    rep = data["reports"][0]
    ref = cov.paired_coverage(15, 0.47, seed=3, replicates=4000)
    assert rep["setting"] == "paired" and rep["seed"] == 3 and rep["replicates"] == 4000
    assert rep["parameters"] == {"discordance": 0.47, "difference": 0.0, "accuracy_a": 0.5}
    got = {m["method"]: m for m in rep["methods"]}
    for m in ref.methods:
        assert got[m.method]["coverage"] == m.coverage
        assert got[m.method]["verdict"] == m.verdict
        assert set(got[m.method]) >= {"coverage_se", "mean_width", "min_coverage", "is_default"}
    # the lowest of 10 slices of the neighbourhood, with its Monte Carlo SE; the window
    nc = ref.method("newcombe")
    assert got["newcombe"]["min_coverage"] == nc.min_coverage <= nc.coverage
    assert got["newcombe"]["min_coverage_se"] == nc.min_coverage_se > 0
    assert rep["window"] == ["discordance", *cov.neighbourhood_window(0.47)]
    assert "lowest of 10 equal slices" in rep["min_criterion"]


def test_grid_csv(capsys):
    code, out, _ = run(capsys, "coverage", "--n", 10, 100, "--p", 0.05, 0.5, "--format", "csv")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("setting,n,p,method,default,coverage")
    assert len(lines) == 1 + 4 * len(cov.PROPORTION_METHODS)


def test_clustered_text(capsys):
    code, out, _ = run(capsys, "coverage", "--n", 400, "--clusters", 8, "--icc", 0.1,
                       "--replicates", 3000)
    assert code == 0
    assert "clustered items: n = 400, clusters G 8, ICC 0.1, p 0.5" in out
    assert "3,000 simulated samples, seed 0" in out
    assert "undercovers" in next(li for li in out.splitlines() if "ignores clusters" in li)
    lo, hi = cov.neighbourhood_window(0.5)
    assert f"Default covers " in out and f"on average over p in [{lo:.4g}, {hi:.4g}]" in out
    assert "lowest of 10 slices" in out and "average coverage" in out


@pytest.mark.parametrize("argv,code,message", [
    (("--n", 10), 3, "give p"),
    (("--n", 10, "--discordance", 0.1, "--clusters", 5, "--icc", 0.1), 3, "one design only"),
    (("--n", 10, "--clusters", 5), 3, "needs both"),
    (("--n", 100, "--discordance", 0.05, "--difference", 0.2), 3, "cannot exceed"),
    (("--n", 0, "--p", 0.5), 2, "must be at least 1"),
    (("--n", 10, "--icc", 1.0, "--clusters", 3), 2, r"must lie in \[0, 1\)"),
    (("--n", 10, "--p", 1.5), 2, "strictly between 0 and 1")])
def test_usage_and_input_errors(capsys, argv, code, message):
    got, _, err = run(capsys, "coverage", *argv)
    assert got == code
    assert __import__("re").search(message, err), err


def test_help(capsys):
    code, out, _ = run(capsys, "coverage", "--help")
    assert code == 0
    for flag in ("--n", "--p", "--discordance", "--clusters", "--icc", "--confidence", "--seed",
                 "--format"):
        assert flag in out
