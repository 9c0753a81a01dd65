"""Bad values are bad input, per file: a value that does not fit (huge integers, integers out
of range, overlong digit strings) is refused with file, line and field (exit 3), the other
files of the batch are stored as usual; CSV rows with more or fewer fields than the header
are refused naming the line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.errors import IngestError
from evalcore.ingest import parse_paths, parse_uploads
from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]
GOOD_CSV = b"model,task,item_id,score\ngood,t,q1,1\ngood,t,q2,0\n"


def fail(name: str, data: bytes) -> IngestError:
    with pytest.raises(IngestError) as exc:
        parse_uploads([(name, data)])
    return exc.value


def parquet_bytes(tmp_path: Path, **columns) -> bytes:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(columns), path)
    return path.read_bytes()


def results_with(value_text: str) -> bytes:
    doc = {"results": {"arc_easy": {"acc,none": 0.5, "acc_stderr,none": 0.01}},
           "versions": {"arc_easy": 1}, "n-samples": {"arc_easy": {"effective": 10}},
           "configs": {"arc_easy": {"task": "arc_easy"}}}
    return json.dumps(doc).replace("0.5", value_text, 1).encode()


# ---------------------------------------------------------------------------------------
# each value that does not fit: file, place and field
# ---------------------------------------------------------------------------------------
def test_400_digit_jsonl_score() -> None:
    line = '{"model": "m", "task": "t", "item_id": "q1", "score": ' + "9" * 400 + "}\n"
    err = fail("huge.jsonl", b'{"model": "m", "task": "t", "item_id": "q0", "score": 1}\n'
               + line.encode())
    assert err.file == "huge.jsonl" and err.where == "line 2, column score"
    assert "finite number" in err.expected and "an integer of 400 digits" in str(err)


def test_5001_digit_jsonl_score_is_not_a_python_digit_limit_error() -> None:
    err = fail("huge.jsonl", ('{"model": "m", "task": "t", "item_id": "q1", "score": '
                              + "1" * 5001 + "}\n").encode())
    assert err.where == "line 1, column score" and "5,001 digits" in str(err)


def test_csv_answer_beyond_32_bits() -> None:
    err = fail("ans.csv", b"model,task,item_id,answer,score\nm,t,q1,99999999999999999999,1\n")
    assert err.where == "line 2, column answer"
    assert "at most 2,147,483,647" in err.expected and "99999999999999999999" in str(err)


def test_csv_overlong_digit_string_score() -> None:
    err = fail("long.csv", b"model,task,item_id,score\nm,t,q1," + b"7" * 5001 + b"\n")
    assert err.where == "line 2, column score" and "a number of 5,001 digits" in str(err)


def test_parquet_int64_max_answer(tmp_path: Path) -> None:
    data = parquet_bytes(tmp_path, model=["m"], task=["t"], item_id=["q1"],
                         answer=pa.array([2 ** 63 - 1], pa.int64()), score=[1.0])
    err = fail("t.parquet", data)
    assert err.where == "row 0, column answer" and "9223372036854775807" in str(err)


def test_parquet_int64_extreme_score_is_within_range(tmp_path: Path) -> None:
    """int64 max is 9.2e18: a (strange) but finite score, stored as its float."""
    data = parquet_bytes(tmp_path, model=["m"], task=["t"], item_id=["q1"],
                         score=pa.array([2 ** 63 - 1], pa.int64()))
    run = parse_uploads([("t.parquet", data)])[0]
    assert run.scores["score"].tolist() == [float(2 ** 63 - 1)]


@pytest.mark.parametrize("digits", [400, 5001])
def test_huge_results_value(digits: int) -> None:
    err = fail("results_2026-01-01T00-00-00.1.json", results_with("1" * digits))
    assert err.where == "results.arc_easy.acc,none"
    assert f"an integer of {digits:,} digits" in str(err)


def test_huge_sample_log_value() -> None:
    rec = {"doc_id": 0, "doc": {}, "target": "0", "arguments": {}, "resps": [], "filtered_resps": [],
           "filter": "none", "metrics": ["acc"], "doc_hash": "h", "prompt_hash": "p",
           "target_hash": "t"}
    line = json.dumps(rec)[:-1] + ', "acc": ' + "9" * 400 + "}\n"
    err = fail("samples_arc_easy_2026-01-01T00-00-00.1.jsonl", line.encode())
    assert err.file == "samples_arc_easy_2026-01-01T00-00-00.1.jsonl"
    assert "line 1" in (err.where or "") and "acc" in (err.where or "")


# ---------------------------------------------------------------------------------------
# rows with more or fewer fields than the header
# ---------------------------------------------------------------------------------------
def test_csv_row_with_more_fields_than_the_header_is_refused() -> None:
    err = fail("extra.csv", b"model,task,item_id,score\nm,t,q1,1,2,3,4\n")
    assert err.file == "extra.csv" and err.where == "line 2"
    assert "4 fields, as the header names" in err.expected and "the row has 7" in str(err)


def test_csv_row_with_fewer_fields_is_refused_with_its_line() -> None:
    data = b'model,task,item_id,score\nm,t,q1,1\n\nm,"t\nwith a line break",q2,0\nm,t,q3\n'
    err = fail("short.csv", data)
    assert err.where == "line 6" and "the row has 3" in str(err)


def test_csv_value_error_names_the_physical_line() -> None:
    """Blank lines and quoted line breaks before the bad row are counted."""
    data = b'model,task,item_id,score\nm,t,q1,1\n\nm,"a\nb",q2,0\nm,t,q3,abc\n'
    err = fail("v.csv", data)
    assert err.where == "line 6, column score" and "'abc'" in str(err)


# ---------------------------------------------------------------------------------------
# one bad file does not lose the batch
# ---------------------------------------------------------------------------------------
def test_bad_values_leave_the_other_files_of_the_batch_stored(tmp_path: Path) -> None:
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "good.csv").write_bytes(GOOD_CSV)
    (folder / "huge.jsonl").write_text('{"model": "m2", "task": "t", "item_id": "q1", "score": '
                                       + "9" * 400 + "}\n")
    (folder / "ans.csv").write_bytes(b"model,task,item_id,answer,score\nm3,t,q1,"
                                     b"99999999999999999999,1\n")
    (folder / "int64.parquet").write_bytes(parquet_bytes(
        tmp_path, model=["m4"], task=["t"], item_id=["q1"],
        answer=pa.array([2 ** 63 - 1], pa.int64()), score=[1.0]))
    (folder / "results_2026-01-01T00-00-00.1.json").write_bytes(results_with("1" * 5001))
    (folder / "extra.csv").write_bytes(b"model,task,item_id,score\nm5,t,q1,1,2,3,4\n")
    store = tmp_path / "s"
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), "ingest",
                           str(folder), "--format", "json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert [r["name"] for r in out["runs"]] == ["good"]
    places = {Path(p["file"]).name: p["where"] for p in out["not_stored"]}
    assert places == {"huge.jsonl": "line 1, column score",
                      "ans.csv": "line 2, column answer",
                      "int64.parquet": "row 0, column answer",
                      "results_2026-01-01T00-00-00.1.json": "results.arc_easy.acc,none",
                      "extra.csv": "line 2"}
    assert all(p["kind"] == "bad input" for p in out["not_stored"])
    assert Store(store).runs()["name"].tolist() == ["good"]


def test_answer_index_beyond_32_bits_is_refused_for_every_format() -> None:
    """The last check before the store: an answer index (epoch - 1 of an inspect log) that
    the store cannot hold is bad input naming task, metric and item."""
    from evalcore.ingest.guards import check_magnitudes as _check_magnitudes
    from evalcore.ingest._common import scores_frame, summaries_frame
    from evalcore.model import ParsedRun

    run = ParsedRun(name="r", model=None, source_format="inspect", harness=None,
                    harness_version=None, protocol={}, files=[],
                    scores=scores_frame("t", "acc", ["a"], [2 ** 40], [1.0]),
                    summaries=summaries_frame([]), texts=None, tasks=None, source_key=None,
                    warnings=[])
    with pytest.raises(IngestError) as exc:
        _check_magnitudes(run)
    assert "item 'a'" in exc.value.where and "1099511627776" in str(exc.value)


def test_paths_too(tmp_path: Path) -> None:
    p = tmp_path / "extra.csv"
    p.write_bytes(b"model,task,item_id,score\nm,t,q1,1,2\n")
    with pytest.raises(IngestError) as exc:
        parse_paths([p])
    assert exc.value.where == "line 2"
