"""Bad input: every case raises IngestError naming the file, the place and the expectation,
and nothing partial is returned."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from evalcore.errors import IngestError
from evalcore.ingest import parse_paths, parse_uploads
from evalcore.ingest._common import Source


def fail(files: list[tuple[str, bytes]]) -> IngestError:
    with pytest.raises(IngestError) as exc:
        parse_uploads(files)
    return exc.value


def sample_line(doc_id: int, acc: object = 1.0, filt: str = "none") -> str:
    rec = {"doc_id": doc_id, "doc": {}, "target": "0",
           "arguments": {"gen_args_0": {"arg_0": "Q?", "arg_1": " a"},
                         "gen_args_1": {"arg_0": "Q?", "arg_1": " b"}},
           "resps": [[["-1.0", "False"]], [["-2.0", "False"]]],
           "filtered_resps": [["-1.0", "False"], ["-2.0", "False"]], "filter": filt,
           "metrics": ["acc"], "doc_hash": "h", "prompt_hash": "p", "target_hash": "t"}
    text = json.dumps(rec)
    return text[:-1] + f', "acc": {acc}}}'


def test_truncated_results_json(fixtures_dir: Path) -> None:
    data = (fixtures_dir / "lm_eval" / "results_v0.3_bloom-560m_common-sense-reasoning_0shot.json").read_bytes()
    err = fail([("results.json", data[:700])])
    assert err.file == "results.json" and err.where.startswith("line ")
    assert "complete JSON document" in err.expected and "truncated" in str(err)


def test_truncated_jsonl_names_the_line() -> None:
    text = "\n".join(sample_line(i) for i in range(3))
    err = fail([("samples_arc_easy_2026-01-01T00-00-00.1.jsonl", text[:-25].encode())])
    assert err.where == "line 3" and "one complete JSON object per line" in err.expected
    assert str(err).startswith("samples_arc_easy_2026-01-01T00-00-00.1.jsonl at line 3: expected")


def test_valid_json_of_no_known_format() -> None:
    err = fail([("data.json", json.dumps({"foo": [1, 2], "bar": {"baz": 3}}).encode())])
    assert err.file == "data.json" and err.where == "top level"
    assert "a known format" in err.expected and "no known format" in str(err)


def test_binary_junk() -> None:
    err = fail([("model.bin", bytes(range(256)) * 8)])
    assert err.file == "model.bin" and err.where == "byte 0"
    assert "a known format" in err.expected and "binary data" in str(err)


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_zip_with_path_traversal() -> None:
    err = fail([("evil.zip", _zip({"ok/results.json": b"{}", "../../etc/passwd.json": b"{}"}))])
    assert err.file == "evil.zip" and "../../etc/passwd.json" in err.where
    assert "relative member names" in err.expected


def test_zip_with_nested_zip() -> None:
    err = fail([("outer.zip", _zip({"inner.zip": _zip({"a.csv": b"x"})}))])
    assert err.file == "outer.zip" and "inner.zip" in err.where and "no nested archives" in err.expected


def test_zip_without_known_member() -> None:
    err = fail([("docs.zip", _zip({"README.md": b"hello", "notes.txt": b"x"}))])
    assert err.file == "docs.zip" and err.where == "zip members"
    assert "at least one known file" in err.expected and "README.md" in str(err)


def test_corrupt_zip() -> None:
    err = fail([("broken.zip", b"PK\x03\x04" + b"\x00" * 200)])
    assert err.file == "broken.zip" and err.where == "zip central directory"


def test_nan_score_in_sample_log() -> None:
    text = "\n".join([sample_line(0), sample_line(1), sample_line(2, acc="NaN")]) + "\n"
    err = fail([("samples_arc_easy_2026-01-01T00-00-00.1.jsonl", text.encode())])
    assert err.where == "line 3, field acc" and err.expected == "a finite score"


def test_infinite_score_in_tidy_table() -> None:
    err = fail([("t.csv", b"model,task,item_id,score\nm,t,1,1\nm,t,2,inf\n")])
    assert (err.file, err.where, err.expected) == ("t.csv", "line 3, column score", "a finite number")


def test_nan_score_in_inspect_log() -> None:
    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
           "samples": [{"id": 1, "epoch": 1, "scores": {"s": {"value": "nan"}}}]}
    err = fail([("log.json", json.dumps(log).encode())])
    assert err.file == "log.json" and err.where == "samples[0], scores.s" and err.expected == "a finite score"


def test_duplicate_doc_ids_in_sample_log() -> None:
    text = "\n".join([sample_line(0), sample_line(7), sample_line(7)]) + "\n"
    err = fail([("samples_arc_easy_2026-01-01T00-00-00.1.jsonl", text.encode())])
    assert "'acc'" in err.where and "doc_id '7' appears more than once" in str(err)
    # the same doc under two filters is fine
    ok = "\n".join([sample_line(7), sample_line(7, filt="other")]) + "\n"
    run = parse_uploads([("samples_x_2026-01-01T00-00-00.1.jsonl", ok.encode())])[0]
    assert sorted(run.scores.metric) == ["acc", "acc,other"]


def test_duplicate_item_ids_in_tidy_table() -> None:
    err = fail([("t.csv", b"model,task,item_id,score\nm,t,q1,1\nm,t,q2,0\nm,t,q1,0\n")])
    assert err.where == "line 4" and "item id 'q1'" in str(err)


def test_empty_file() -> None:
    err = fail([("results.json", b"")])
    assert err.file == "results.json" and err.expected == "a non-empty file"


def test_tidy_table_missing_columns() -> None:
    err = fail([("t.csv", b"model,task,id,value\nm,t,1,1\n")])
    assert err.where == "header"
    assert "missing item_id, score" in str(err) and "found model, task, id, value" in str(err)


def test_huge_file_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "big.jsonl"
    p.write_bytes(b"x" * 4096)
    monkeypatch.setenv("EVALBARS_MAX_FILE_MB", "0.001")

    def no_read(*_a, **_k):
        raise AssertionError("the file was read before the size check")

    monkeypatch.setattr(Source, "head", no_read)
    monkeypatch.setattr(Source, "read_bytes", no_read)
    monkeypatch.setattr(Source, "open", no_read)
    with pytest.raises(IngestError) as exc:
        parse_paths([p])
    assert exc.value.file == str(p) and "a file of at most" in exc.value.expected
    assert "EVALBARS_MAX_FILE_MB" in exc.value.expected


def test_one_bad_file_fails_the_whole_batch(fixtures_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": {"arc": {"acc": 1')
    with pytest.raises(IngestError) as exc:
        parse_paths([fixtures_dir / "inspect" / "log_streaming.eval", bad])
    assert exc.value.file == str(bad)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as exc:
        parse_paths([tmp_path / "nope.json"])
    assert "existing file or folder" in exc.value.expected


def test_results_entry_of_wrong_type() -> None:
    err = fail([("r.json", json.dumps({"results": {"arc": 0.5}, "versions": {}}).encode())])
    assert err.where == "results.arc" and "an object of metric values" in err.expected


def test_corrupt_zstd_member(fixtures_dir: Path) -> None:
    data = bytearray((fixtures_dir / "inspect" /
                      "2026-07-22T16-51-18-00-00_a2ui-v1-0-eval_nXpB6sZohVsmQgnyUD8nuj.eval").read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo("header.json")
    start = info.header_offset + 30 + len(info.filename) + 20
    data[start:start + 40] = b"\x00" * 40
    err = fail([("a2ui.eval", bytes(data))])
    assert err.file == "a2ui.eval" and err.where == "zip member 'header.json'"
    assert "zstandard" in err.expected


def test_helm_folder_without_per_instance_stats(fixtures_dir: Path) -> None:
    run_dir = next((fixtures_dir / "helm").iterdir())
    if not run_dir.is_dir():
        run_dir = next(p for p in (fixtures_dir / "helm").iterdir() if p.is_dir())
    err = fail([("run/stats.json", (run_dir / "stats.json").read_bytes()),
                ("run/run_spec.json", (run_dir / "run_spec.json").read_bytes())])
    assert "stats.json" in err.file and err.where == "folder run"
    assert "per_instance_stats.json" in err.expected and "missing per_instance_stats.json" in str(err)


def test_zip_bomb_total_size(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _zip({"a.csv": b"model,task,item_id,score\n" + b"m,t,1,1\n" * 300}, zipfile.ZIP_DEFLATED)
    assert len(data) < 1000
    monkeypatch.setenv("EVALBARS_MAX_FILE_MB", str(1000 / 1048576))   # 1000 bytes
    err = fail([("small.zip", data)])
    assert err.file == "small.zip" and err.where == "zip member 'a.csv'"
    assert "at most" in err.expected


@pytest.mark.parametrize("case", ["truncated", "nan", "duplicate", "missing_metric"])
def test_sample_log_errors_on_disk(tmp_path: Path, case: str) -> None:
    """Files on disk go through the columnar reader first; errors still name the line."""
    lines = [sample_line(i) for i in range(5)]
    if case == "truncated":
        lines[-1] = lines[-1][:40]
    elif case == "nan":
        lines[3] = sample_line(3, acc="NaN")
    elif case == "duplicate":
        lines[4] = sample_line(1)
    else:
        lines[2] = sample_line(2).replace(', "acc": 1.0', "")
    path = tmp_path / "samples_arc_easy_2026-01-01T00-00-00.000001.jsonl"
    path.write_text("\n".join(lines) + ("" if case == "truncated" else "\n"))
    if case == "missing_metric":        # a record without the metric is simply not scored
        run = parse_paths([path])[0]
        assert sorted(run.scores.item_id) == ["0", "1", "3", "4"]
        return
    with pytest.raises(IngestError) as exc:
        parse_paths([path])
    err = exc.value
    assert err.file == str(path)
    expected = {"truncated": ("line 5", "one complete JSON object per line"),
                "nan": ("line 4, field acc", "a finite score"),
                "duplicate": ("task 'arc_easy', metric 'acc'", "each doc_id once per (filter, metric)")}[case]
    assert (err.where, err.expected) == expected


def test_same_task_items_in_two_sample_files() -> None:
    a = (sample_line(0) + "\n" + sample_line(1) + "\n").encode()
    b = (sample_line(1) + "\n").encode()
    # two files of one run (same timestamp) that both hold task arc_easy doc 1
    err = fail([("run/samples_arc_easy_2026-01-01T00-00-00.1.jsonl", a),
                ("run/samples_arc_easy_2026-01-01T00-00-00.1.json", b)])
    assert err.where == "task 'arc_easy'" and "item id '1'" in str(err)


@pytest.mark.parametrize("ids, reported", [([9, 3, 9, 3], "9"), ([3, 9, 9, 3], "3"),
                                           (["b", "a", "b", "a"], "b")])
def test_duplicate_doc_id_reported_is_the_first_seen_of_the_repeated_ones(
        tmp_path: Path, ids: list, reported: str) -> None:
    # integer doc_ids take a numeric path (no string hashing); like the string path it must
    # name, of the repeated ids, the one that first appears in the file, on disk (DuckDB
    # reader) and in memory (pyarrow reader)
    text = "\n".join(sample_line(i) for i in ids) + "\n"
    path = tmp_path / "samples_arc_easy_2026-01-01T00-00-00.1.jsonl"
    path.write_text(text)
    with pytest.raises(IngestError) as exc:
        parse_paths([path])
    assert f"doc_id '{reported}' appears more than once" in str(exc.value)
    err = fail([(path.name, text.encode())])
    assert f"doc_id '{reported}' appears more than once" in str(err)
