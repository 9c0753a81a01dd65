"""``judge``: PPI++ on a judged run with human labels, equal to ppi_py; bad labels files exit 3
naming file, line and expectation, and leave the store unchanged."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli_helpers import run_main
from tests.judge.helpers import METRIC, TASK, simulate, write_labels, write_run

ppi_py = pytest.importorskip("ppi_py")


@pytest.fixture
def judged(tmp_path, store_location, capsys):
    human, judge = simulate(seed=3)
    code, _, err = run_main(capsys, *store_location.cli_args, "ingest",
                            write_run(tmp_path, judge))
    assert code == 0, err
    rows = np.random.default_rng(7).permutation(human.size)[:120]
    return store_location, human, judge, rows


def test_json_equals_reference_and_is_narrower_than_human_only(judged, tmp_path, capsys):
    loc, human, judge, rows = judged
    labels = write_labels(tmp_path, human, rows)
    code, out, err = run_main(capsys, *loc.cli_args, "judge", "--run", "judged-model",
                              "--task", TASK, "--human", labels, "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    rest = np.setdiff1d(np.arange(human.size), rows)
    lo, hi = ppi_py.ppi_mean_ci(human[rows], judge[rows], judge[rest], alpha=0.05)
    assert got["ppi"]["low"] == pytest.approx(float(np.ravel(lo)[0]), abs=1e-9)
    assert got["ppi"]["high"] == pytest.approx(float(np.ravel(hi)[0]), abs=1e-9)
    assert 0 <= got["ppi"]["lam"] <= 1 and got["ppi"]["lam_tuned"] is True
    assert got["n_labelled"] == 120 and got["n_unlabelled"] == 280
    assert got["metric"] == METRIC
    assert got["judge_only"]["estimate"] == pytest.approx(judge.mean())
    assert got["human_only"]["estimate"] == pytest.approx(human[rows].mean())
    assert got["human_only"]["method"] == "wilson"
    width = {k: got[k]["high"] - got[k]["low"] for k in ("ppi", "human_only")}
    assert width["ppi"] < width["human_only"]
    bias = got["agreement"]["bias"]
    assert bias["estimate"] == pytest.approx((judge[rows] - human[rows]).mean())
    counts = np.array(got["agreement"]["confusion"]["counts"])
    assert counts.sum() == 120
    assert counts[1, 1] == int(((human[rows] == 1) & (judge[rows] == 1)).sum())
    assert "random sample" in got["sampling"]["assumption"]
    assert got["warnings"] == []


def test_text_output_names_the_three_answers(judged, tmp_path, capsys):
    loc, human, judge, rows = judged
    labels = write_labels(tmp_path, human, rows)
    code, out, err = run_main(capsys, *loc.cli_args, "judge", "--run", "judged-model",
                              "--task", TASK, "--human", labels)
    assert code == 0, err
    for words in ("judge only", "human labels only", "PPI++", "lambda =", "Cohen's kappa",
                  "Judge bias", "random sample"):
        assert words in out


def test_chosen_labels_warn(judged, tmp_path, capsys):
    """Labels only on items the judge passed: the judge's scores on them differ from the
    rest, and the answer says the sample does not look random."""
    loc, human, judge, _ = judged
    rows = np.flatnonzero(judge == 1)[:100]
    labels = write_labels(tmp_path, human, rows)
    code, out, _ = run_main(capsys, *loc.cli_args, "judge", "--run", "judged-model", "--task",
                            TASK, "--human", labels, "--format", "json")
    assert code == 0
    assert any("random sample" in w for w in json.loads(out)["warnings"])


BAD = [
    ("item_id,human\n" + "".join(f"q{i:04d},1\n" for i in range(10)) + "nope,1\n",
     "line 12, field item_id: expected an item id of task 'qa_judged'"),
    ("item_id,human\n" + "".join(f"q{i:04d},1\n" for i in range(10)) + "q0003,0\n",
     "line 12, field item_id: expected each item labelled once"),
    ("item_id,human\n" + "".join(f"q{i:04d},1\n" for i in range(5)) + "q0005,yes\n",
     "line 7, field human: expected a number"),
    ("item_id,human\n" + "".join(f"q{i:04d},1\n" for i in range(5)) + "q0005,2\n",
     "line 7, field human: expected a label in [0, 1]"),
    ("item_id,human\n" + "".join(f"q{i:04d},1\n" for i in range(9)),
     "expected at least 10 labelled items"),
    ("id,label\nq0001,1\n", "line 1: expected a header with columns item_id,human"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_bad_labels_exit_3_naming_file_and_line(judged, tmp_path, capsys, text, message):
    loc = judged[0]
    path = tmp_path / "bad.csv"
    path.write_text(text)
    before = loc.open().runs().to_dict()
    code, out, err = run_main(capsys, *loc.cli_args, "judge", "--run", "judged-model",
                              "--task", TASK, "--human", path)
    assert code == 3 and out == ""
    assert f"{path}" in err and message in err
    assert loc.open().runs().to_dict() == before


def test_missing_file_and_unknown_run(judged, tmp_path, capsys):
    loc = judged[0]
    code, _, err = run_main(capsys, *loc.cli_args, "judge", "--run", "judged-model", "--task",
                            TASK, "--human", tmp_path / "none.csv")
    assert code == 3 and "no such file" in err
    labels = write_labels(tmp_path, np.ones(400), np.arange(20))
    code, _, err = run_main(capsys, *loc.cli_args, "judge", "--run", "nobody", "--task", TASK,
                            "--human", labels)
    assert code == 3
