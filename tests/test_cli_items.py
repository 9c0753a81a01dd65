"""``python -m evalcore items``: suspects (with CSV), rescore (with that CSV filled in), overlap."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.analysis.test_items import TASK, planted  # noqa: F401  (module fixture)
from tests.cli_helpers import run_main


def test_items_suspects_rescore_overlap(planted, capsys, tmp_path: Path):  # noqa: F811
    store = str(planted["store"].path)
    out_csv = tmp_path / "relabel.csv"
    code, out, err = run_main(capsys, "--store", store, "items", "suspects", "--task", TASK,
                              "--csv", out_csv)
    assert code == 0, err
    data = json.loads(out)
    assert data["m"] == 3 and data["n_suspects"] == len(data["suspects"]) >= 7
    assert data["expected_if_labels_correct"] < 0.5 and data["p_value"] < 1e-6
    assert set(planted["bad"]) & {s["item_id"] for s in data["suspects"]}
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["item_id"] for r in rows] == [s["item_id"] for s in data["suspects"]]
    for r in rows:
        r["new_gold"] = r["consensus"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    out_csv.write_text(buf.getvalue())
    code, out, err = run_main(capsys, "--store", store, "items", "rescore", "--task", TASK,
                              "--relabel", out_csv, "--exclude", "0")
    assert code == 0, err
    res = json.loads(out)
    assert res["n_relabelled"] == len(rows) and res["n_excluded"] == 1
    board = {(b["run"], b["variant"]): b for b in res["board"]}
    assert board[("m0", "after")]["score"] > board[("m0", "before")]["score"]
    assert board[("m0", "after")]["n"] == 599
    assert board[("m0", "drop suspects")]["n"] == 600 - len(rows)
    assert all(b["low"] <= b["score"] <= b["high"] for b in res["board"])
    assert "not neutral" in res["bias_note"]
    idx = tmp_path / "idx.duckdb"
    code, out, err = run_main(capsys, "--store", store, "items", "overlap", "--task", TASK,
                              "--corpus", planted["corpus"], "--index", idx)
    assert code == 0, err
    ov = json.loads(out)
    assert ov["n_overlapping"] == 20 and ov["index"]["n"] == 13 and idx.is_file()
    assert {i["item_id"] for i in ov["items"] if i["overlapping"]} == planted["dirty"]
    code, out2, _ = run_main(capsys, "--store", store, "items", "overlap", "--task", TASK,
                             "--index", idx)                       # reuse the index
    assert code == 0 and json.loads(out2)["runs"] == ov["runs"]


@pytest.mark.parametrize("args,code,text", [
    (["items", "overlap", "--task", TASK], 2, "give --corpus"),
    (["items", "suspects", "--task", "nope"], 3, "no run has item-level scores"),
    (["items", "suspects", "--task", TASK, "--m", "9"], 3, "lower m"),
])
def test_items_errors(planted, capsys, args, code, text):  # noqa: F811
    got, _, err = run_main(capsys, "--store", str(planted["store"].path), *args)
    assert got == code and text in err


def test_items_bad_corpus_and_csv(planted, capsys, tmp_path: Path):  # noqa: F811
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"text": "ok"}\n{"body": 1}\n')
    code, _, err = run_main(capsys, "--store", str(planted["store"].path), "items", "overlap",
                            "--task", TASK, "--corpus", bad)
    assert code == 3 and "c.jsonl at line 2, field text" in err
    rel = tmp_path / "r.csv"
    rel.write_text("task,item\nx,1\n")
    code, _, err = run_main(capsys, "--store", str(planted["store"].path), "items", "rescore",
                            "--task", TASK, "--relabel", rel)
    assert code == 3 and "new_gold" in err
