"""``judge --vs``: two runs graded by one judge, the paired difference corrected by PPI++ on
per-item differences (equal to ppi_py on the differences), beside the judge-only row the
Compare page shows; different judges are flagged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import run_main
from tests.judge.helpers import TASK, simulate, write_labels, write_run

ppi_py = pytest.importorskip("ppi_py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_runs(tmp_path, store_location, capsys):
    ha, ja = simulate(seed=11, p=0.55)
    hb, jb = simulate(seed=12, p=0.65)
    for judge, model in ((ja, "model-a"), (jb, "model-b")):
        assert run_main(capsys, *store_location.cli_args, "ingest",
                        write_run(tmp_path, judge, model))[0] == 0
    rows = np.random.default_rng(3).permutation(400)[:150]
    la = write_labels(tmp_path, ha, rows, "a.csv")
    lb = write_labels(tmp_path, hb, rows[:120], "b.csv")     # b labels a subset of a's
    return store_location, (ha, ja, la), (hb, jb, lb), rows[:120]


def test_paired_ppi_equals_reference(two_runs, capsys):
    loc, (ha, ja, la), (hb, jb, lb), both = two_runs
    code, out, err = run_main(capsys, *loc.cli_args, "judge", "--run", "model-a", "--task",
                              TASK, "--human", la, "--vs", "model-b", "--human-b", lb,
                              "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["n_shared"], got["n_labelled"], got["n_unlabelled"]) == (400, 120, 280)
    rest = np.setdiff1d(np.arange(400), both)
    lo, hi = ppi_py.ppi_mean_ci(hb[both] - ha[both], jb[both] - ja[both], jb[rest] - ja[rest],
                                alpha=0.05)
    assert got["ppi"]["low"] == pytest.approx(float(np.ravel(lo)[0]), abs=1e-9)
    assert got["ppi"]["high"] == pytest.approx(float(np.ravel(hi)[0]), abs=1e-9)
    assert got["judge_only"]["estimate"] == pytest.approx(jb.mean() - ja.mean())
    assert got["human_only"]["estimate"] == pytest.approx((hb[both] - ha[both]).mean())
    assert got["same_judge"] is None and "cannot be checked" in got["warnings"][0]
    # the judge-only row is the Compare page's row for this task
    code, out, _ = run_main(capsys, *loc.cli_args, "compare", "model-a", "model-b", "--task",
                            TASK, "--format", "json")
    row = json.loads(out)["per_task"][0]
    assert (got["judge_only"]["low"], got["judge_only"]["high"]) == \
        pytest.approx((row["low"], row["high"]))


def test_vs_needs_both_options(two_runs, capsys):
    loc, (_, _, la), _, _ = two_runs
    code, _, err = run_main(capsys, *loc.cli_args, "judge", "--run", "model-a", "--task",
                            TASK, "--human", la, "--vs", "model-b")
    assert code == 2 and "--human-b" in err


def test_demo_pair_same_judge_and_text(capsys, tmp_path):
    store = tmp_path / "store"
    assert run_main(capsys, "--store", store, "ingest", ROOT / "data" / "demo" / "judge")[0] == 0
    labels = ROOT / "data" / "demo_judge_labels"
    code, out, err = run_main(capsys, "--store", store, "judge", "--run",
                              "hf/demo-org/atlas-7b-chat", "--task", "judged_qa_demo",
                              "--human", labels / "atlas-7b-chat.csv", "--vs",
                              "hf/demo-org/boreal-8b-chat", "--human-b",
                              labels / "boreal-8b-chat.csv")
    assert code == 0, err
    assert "120 labelled in both runs" in out and "PPI++ lambda" in out
    assert "Warning" not in out
    truth = json.loads((labels / "truth.json").read_text())["runs"]
    true_diff = (truth["hf/demo-org/boreal-8b-chat"]["human_mean"]
                 - truth["hf/demo-org/atlas-7b-chat"]["human_mean"])
    code, out, _ = run_main(capsys, "--store", store, "judge", "--run",
                            "hf/demo-org/atlas-7b-chat", "--task", "judged_qa_demo",
                            "--human", labels / "atlas-7b-chat.csv", "--vs",
                            "hf/demo-org/boreal-8b-chat", "--human-b",
                            labels / "boreal-8b-chat.csv", "--format", "json")
    got = json.loads(out)
    assert got["same_judge"] is True
    assert got["ppi"]["low"] <= true_diff <= got["ppi"]["high"]


def test_different_judges_are_flagged():
    from evalcore.analysis.judge import _judge_warning
    a = {"model_graded_qa": {"model": "x", "model_source": "scorer option",
                             "template_sha256": "aa"}}
    b = {"model_graded_qa": {"model": "x", "model_source": "grader model role",
                             "template_sha256": "aa"}}
    assert _judge_warning(a, b) == (True, [])
    c = {"model_graded_qa": {**a["model_graded_qa"], "template_sha256": "bb"}}
    same, warnings = _judge_warning(a, c)
    assert same is False and "not measured with the same instrument" in warnings[0]
