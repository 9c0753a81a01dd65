"""Tidy tables (CSV, JSONL, Parquet): several runs per file, optional columns."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evalcore.ingest import detect_format, parse_paths, parse_uploads, tidy

ROWS = [
    {"model": "gpt-x", "task": "arc", "item_id": "q1", "score": 1, "cluster": "physics"},
    {"model": "gpt-x", "task": "arc", "item_id": "q2", "score": 0, "cluster": "biology"},
    {"model": "gpt-x", "task": "arc", "item_id": "q3", "score": 1, "cluster": "biology"},
    {"model": "gpt-y", "task": "arc", "item_id": "q1", "score": 0, "cluster": "physics"},
    {"model": "gpt-y", "task": "arc", "item_id": "q2", "score": 0.5, "cluster": "biology"},
]


def check(runs) -> None:
    by = {r.name: r for r in runs}
    assert set(by) == {"gpt-x", "gpt-y"}
    x = by["gpt-x"]
    assert x.source_format == "tidy" and x.model == "gpt-x"
    assert x.scores.score.tolist() == [1.0, 0.0, 1.0]
    assert set(x.scores.metric) == {"score"} and (x.scores.answer_idx == 0).all()
    assert x.scores.cluster.tolist() == ["physics", "biology", "biology"]
    assert by["gpt-y"].scores.score.tolist() == [0.0, 0.5]
    assert x.tasks.task.tolist() == ["arc"]


def test_csv(tmp_path: Path) -> None:
    p = tmp_path / "scores.csv"
    pd.DataFrame(ROWS).to_csv(p, index=False)
    assert detect_format("anything", p.read_bytes()) == tidy.CSV
    check(parse_paths([p]))


def test_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "scores.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    assert detect_format(p.name, p.read_bytes()) == tidy.JSONL
    check(parse_paths([p]))


def test_parquet(tmp_path: Path) -> None:
    p = tmp_path / "scores.parquet"
    pd.DataFrame(ROWS).to_parquet(p)
    assert detect_format(p.name, p.read_bytes()[:100]) == tidy.PARQUET
    check(parse_paths([p]))


def test_run_column_metric_and_answers() -> None:
    csv = ("run,model,task,item_id,metric,answer,score,notes\n"
           "r1,m,gsm8k,1,strict,0,1,a\nr1,m,gsm8k,1,strict,1,0,b\nr1,m,gsm8k,1,loose,0,1,c\n")
    runs = parse_uploads([("t.csv", csv.encode())])
    assert len(runs) == 1
    r = runs[0]
    assert r.name == "r1" and r.model == "m"
    assert r.scores[["metric", "answer_idx", "score"]].values.tolist() == [
        ["strict", 0, 1.0], ["strict", 1, 0.0], ["loose", 0, 1.0]]
    assert any("ignored columns: notes" in w for w in r.warnings)


@pytest.mark.parametrize("answer", ["-1", "1.5", "x"])
def test_bad_answer_index(answer: str) -> None:
    csv = f"model,task,item_id,answer,score\nm,t,1,{answer},1\n"
    with pytest.raises(Exception) as exc:
        parse_uploads([("a.csv", csv.encode())])
    assert "a.csv at line 2, column answer: expected an answer index" in str(exc.value)
