"""The bundled demo's LLM-judged task: judge metadata recorded from its inspect logs, and the
PPI++ answer with the bundled human labels equal to ppi_py, narrower than the labels alone,
covering the simulation's true human score where the judge-only interval does not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_helpers import run_main

ppi_py = pytest.importorskip("ppi_py")
ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "data" / "demo_judge_labels"
TASK = "judged_qa_demo"


@pytest.fixture(scope="module")
def demo_judge_store(tmp_path_factory):
    from evalcore import cli
    store = tmp_path_factory.mktemp("judge_demo") / "store"
    assert cli.main(["--store", str(store), "ingest", str(ROOT / "data" / "demo" / "judge")]) == 0
    return store


@pytest.mark.parametrize("model", ["atlas-7b-chat", "boreal-8b-chat"])
def test_demo_ppi_equals_reference_and_beats_human_only(demo_judge_store, capsys, model):
    truth = json.loads((LABELS / "truth.json").read_text())
    run = f"hf/demo-org/{model}"
    code, out, err = run_main(capsys, "--store", demo_judge_store, "judge", "--run", run,
                              "--task", TASK, "--human", LABELS / f"{model}.csv",
                              "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    human = np.array(truth["runs"][run]["human"], dtype=float)
    labelled = np.array(truth["labelled"]) - 1                 # sample ids 1..400
    from evalcore.store import Store
    store = Store(demo_judge_store)
    from evalcore import analysis as an
    judged = an.judged_scores(store, run, TASK)
    judge = judged.scores[np.argsort([int(i) for i in judged.item_ids])]
    rest = np.setdiff1d(np.arange(human.size), labelled)
    lo, hi = ppi_py.ppi_mean_ci(human[labelled], judge[labelled], judge[rest], alpha=0.05)
    assert got["ppi"]["low"] == pytest.approx(float(np.ravel(lo)[0]), abs=1e-9)
    assert got["ppi"]["high"] == pytest.approx(float(np.ravel(hi)[0]), abs=1e-9)
    width = {k: got[k]["high"] - got[k]["low"] for k in ("ppi", "human_only")}
    assert width["ppi"] < 0.8 * width["human_only"]
    assert got["ppi"]["low"] <= truth["runs"][run]["human_mean"] <= got["ppi"]["high"]
    assert got["judge_only"]["estimate"] == pytest.approx(truth["runs"][run]["judge_mean"])
    assert got["warnings"] == []


def test_demo_judge_recorded_and_marked(demo_judge_store):
    from evalcore import analysis as an
    from evalcore.store import Store
    marks = an.judged_cells(Store(demo_judge_store))
    assert marks == {(f"hf/demo-org/{m}", TASK): "hf/demo-org/grader-70b (model_graded_qa, "
                     + marks[(f"hf/demo-org/{m}", TASK)].split(", ", 1)[1]
                     for m in ("atlas-7b-chat", "boreal-8b-chat")}
    assert all("template " in v for v in marks.values())


def test_demo_judge_only_misses_the_human_score(demo_judge_store, capsys):
    """The lenient judge over-scores atlas-7b-chat by about 7 points: its own interval
    excludes the true human score."""
    truth = json.loads((LABELS / "truth.json").read_text())
    run = "hf/demo-org/atlas-7b-chat"
    code, out, _ = run_main(capsys, "--store", demo_judge_store, "judge", "--run", run,
                            "--task", TASK, "--human", LABELS / "atlas-7b-chat.csv",
                            "--format", "json")
    judge_only = json.loads(out)["judge_only"]
    assert not judge_only["low"] <= truth["runs"][run]["human_mean"] <= judge_only["high"]


def test_demo_json_names_the_judge(demo_judge_store, capsys):
    code, out, _ = run_main(capsys, "--store", demo_judge_store, "judge", "--run",
                            "hf/demo-org/boreal-8b-chat", "--task", TASK, "--human",
                            LABELS / "boreal-8b-chat.csv", "--format", "json")
    assert code == 0
    judge = json.loads(out)["judges"]["model_graded_qa"]
    assert judge["model"] == "hf/demo-org/grader-70b"
    assert judge["model_source"] == "scorer option"


def test_cli_leaderboard_flags_judged_cells(demo_judge_store, capsys):
    code, out, _ = run_main(capsys, "--store", demo_judge_store, "leaderboard")
    assert code == 0
    rows = [line for line in out.splitlines() if line.strip().startswith("hf/demo-org/")]
    assert len(rows) == 2 and all(r.rstrip().endswith("LLM judge") for r in rows)
    assert "'LLM judge' = scored by an LLM judge" in out
    code, out, _ = run_main(capsys, "--store", demo_judge_store, "leaderboard", "--format",
                            "csv")
    assert out.count("LLM judge") == 2


def test_report_marks_judged_cells(demo_judge_store):
    """The HTML report's leaderboard marks the judged cells as the page and the CLI do."""
    from evalcore.report import build_report
    from evalcore.report.html import render_html
    from evalcore.report.build import ReportSpec
    from evalcore.report.html_board import JUDGE
    from evalcore.store import Store
    report = build_report(Store(demo_judge_store), ReportSpec(sections=("leaderboard",)))
    assert set(report.judged) == {(f"hf/demo-org/{m}", TASK)
                                  for m in ("atlas-7b-chat", "boreal-8b-chat")}
    html = render_html(report)
    board = html[html.index('id="leaderboard"'):]
    board = board[:board.index("</section>")]
    assert board.count(f" {JUDGE}") == 3          # two cells and the legend
    assert "scored by an LLM judge" in board
