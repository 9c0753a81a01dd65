"""Tidy tables with other column names: a column map (``ingest --columns``, the upload
page's column choice), tested on real per-item tables (tests/fixtures/wild/tidy, see its
PROVENANCE.md) with the numbers recomputed from the files with ``json``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from evalcore.errors import IngestError
from evalcore.ingest import parse_uploads, read_uploads, tidy

ROOT = Path(__file__).resolve().parents[2]
EEE = ROOT / "tests" / "fixtures" / "wild" / "tidy" / "every_eval_ever"
EEE_COLUMNS = "model=model_id,task=evaluation_name,item_id=sample_id,score=evaluation.score"


def cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def expected_cells() -> dict[tuple[str, str], list[float]]:
    """(model, task) -> the item scores, read from the files with json (the reference)."""
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in sorted(EEE.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            cells[(rec["model_id"], rec["evaluation_name"])].append(rec["evaluation"]["score"])
    return cells


def test_every_eval_ever_tables_ingest_with_a_column_map(tmp_path: Path) -> None:
    cells = expected_cells()
    assert len(cells) == 3 and sum(len(v) for v in cells.values()) == 25
    store = tmp_path / "s"
    proc = cli(store, "ingest", str(EEE), "--columns", EEE_COLUMNS, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["not_stored"] == []
    got = {(r["model"], r["tasks"]): r for r in out["runs"]}
    assert set(got) == set(cells)
    for key, scores in cells.items():
        assert got[key]["n_items"] == len(scores) and got[key]["n_scores"] == len(scores)
    board = cli(store, "leaderboard", "--format", "json")
    assert board.returncode == 0, board.stderr
    # one run per file: the second gpt2 file is stored as "openai/gpt2 (2)", so cells are
    # matched on run ids
    model_of = {r["run_id"]: r["model"] for r in out["runs"]}
    shown = {(model_of[c["run_id"]], c["task"]): c for c in json.loads(board.stdout)["cells"]}
    assert len(shown) == 3
    for (model, task), scores in cells.items():
        cell = shown[(model, task)]
        assert cell["n"] == len(scores)
        assert cell["score"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)
    # the same files again change nothing (run keys are computed from the rows)
    again = cli(store, "ingest", str(EEE), "--columns", EEE_COLUMNS, "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["already_present"] is True


def test_without_the_map_the_columns_are_named_for_a_map(tmp_path: Path) -> None:
    path = next(EEE.rglob("*.jsonl"))
    batch = read_uploads([(path.name, path.read_bytes())])
    assert batch.runs == [] and len(batch.problems) == 1
    err = batch.problems[0]
    assert isinstance(err, tidy.TidyColumnsError)
    assert "column map" in err.expected and "evaluation.score" in err.found
    assert {"model_id", "evaluation_name", "sample_id"} <= set(err.found)


def test_csv_with_the_example_column_names() -> None:
    csv = ("llm,qset,question_id,correct,notes\n"
           "a,gsm8k,1,1,x\na,gsm8k,2,0,y\nb,gsm8k,1,1,z\n")
    columns = tidy.parse_columns("model=llm,task=qset,item_id=question_id,score=correct")
    runs = parse_uploads([("t.csv", csv.encode())], columns=columns)
    by = {r.name: r for r in runs}
    assert by["a"].scores[["task", "item_id", "score"]].values.tolist() == [
        ["gsm8k", "1", 1.0], ["gsm8k", "2", 0.0]]
    assert by["b"].model == "b"
    assert any("ignored columns: notes" in w for w in by["a"].warnings)
    # the same rows under the default names give the same run key (same run, any names)
    plain = parse_uploads([("u.csv", csv.replace("llm,qset,question_id,correct",
                                                  "model,task,item_id,score").encode())])
    assert {r.name: r.files[0].run_key for r in plain} == {r.name: r.files[0].run_key
                                                            for r in runs}


def test_a_mapped_column_the_file_lacks_is_named() -> None:
    columns = tidy.parse_columns("score=correct")
    with pytest.raises(IngestError) as exc:
        parse_uploads([("t.csv", b"model,task,item_id,score\nm,t,1,1\n")], columns=columns)
    assert "missing correct (for score)" in str(exc.value)
    assert "column map: score=correct" in str(exc.value)


def test_errors_name_the_file_column_and_what_it_stands_for() -> None:
    columns = tidy.parse_columns("score=correct")
    with pytest.raises(IngestError) as exc:
        parse_uploads([("t.csv", b"model,task,item_id,correct\nm,t,1,yes\n")], columns=columns)
    assert exc.value.where == "line 2, column correct (the score)"


@pytest.mark.parametrize("text,message", [
    ("model", "expected NAME=COLUMN"),
    ("score=", "expected NAME=COLUMN"),
    ("points=correct", "'points' is not a column of the spec"),
    ("score=a,score=b", "'score' is mapped twice"),
])
def test_bad_column_maps_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tidy.parse_columns(text)
    proc = cli(tmp_path / "s", "ingest", str(EEE), "--columns", text)
    assert proc.returncode == 2 and message in proc.stderr


def test_column_map_round_trips() -> None:
    m = tidy.parse_columns(" model = llm , score=evaluation.score ")
    assert m == {"model": "llm", "score": "evaluation.score"}
    assert tidy.parse_columns(tidy.format_columns(m)) == m


def test_suggested_column_map() -> None:
    assert tidy.suggest_columns(["llm", "qset", "question_id", "correct", "notes"]) == {
        "model": "llm", "task": "qset", "item_id": "question_id", "score": "correct"}
    found = json.loads((next(EEE.rglob("*.jsonl"))).read_text().splitlines()[0])
    from evalcore.ingest.tidy_read import flat_keys
    assert tidy.format_columns(tidy.suggest_columns(flat_keys(found))) == EEE_COLUMNS
