"""Bad input: every case raises IngestError naming the file, the place and the expectation,
and nothing partial is returned."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pandas as pd
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
    assert err.where == "line 3, field acc" and err.expected.startswith("a finite score")


def test_infinite_score_in_tidy_table() -> None:
    err = fail([("t.csv", b"model,task,item_id,score\nm,t,1,1\nm,t,2,inf\n")])
    assert (err.file, err.where) == ("t.csv", "line 3, column score")
    assert err.expected.startswith("a finite number")


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


@pytest.mark.parametrize("case", ["truncated", "nan", "inf", "inf_literal", "huge", "duplicate",
                                  "missing_metric"])
def test_sample_log_errors_on_disk(tmp_path: Path, case: str) -> None:
    """Files on disk go through the columnar reader first; errors still name the line."""
    lines = [sample_line(i) for i in range(5)]
    if case == "truncated":
        lines[-1] = lines[-1][:40]
    elif case == "nan":
        lines[3] = sample_line(3, acc="NaN")
    elif case == "inf":     # was caught only by the store, without file/line
        lines[3] = sample_line(3, acc="Infinity")
    elif case == "inf_literal":     # 1e309 is a valid JSON number that overflows to inf
        lines[3] = sample_line(3, acc="1e309")
    elif case == "huge":    # finite but its square overflows
        lines[3] = sample_line(3, acc="1e308")
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
                "inf": ("line 4, field acc", "a finite score"),
                "inf_literal": ("line 4, field acc", "a finite score"),
                "huge": ("line 4, field acc", "a finite score within +-1e+100"),
                "duplicate": ("task 'arc_easy', metric 'acc'", "each doc_id once per (filter, metric)")}[case]
    assert err.where == expected[0] and err.expected.startswith(expected[1])


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


# ---------------------------------------------------------------------------------------
# hostile input
# ---------------------------------------------------------------------------------------
def _bomb(name: str, mb: int) -> bytes:
    """A zip whose one member is ``mb`` MB of a repeated tidy CSV row (ratio ~ 500-1000x)."""
    buf = io.BytesIO()
    row = b"m,t,1,1\n"
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open(name, "w", force_zip64=True) as fh:
            fh.write(b"model,task,item_id,score\n")
            chunk = row * (1 << 17)
            for _ in range(mb * (1 << 20) // len(chunk)):
                fh.write(chunk)
    return buf.getvalue()


def test_zip_bomb_ratio_refused_before_unpacking() -> None:
    """Item 1: a small zip whose member unpacks ~1000x is refused, member named, before any
    decompression (tracemalloc: nothing near the member's size is ever allocated)."""
    import tracemalloc

    data = _bomb("scores.csv", 64)
    assert len(data) < 200_000
    tracemalloc.start()
    try:
        err = fail([("bomb.zip", data)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.file == "bomb.zip" and err.where == "zip member 'scores.csv'"
    assert "compression ratio of at most 200" in err.expected and "EVALBARS_MAX_ZIP_RATIO" in err.expected
    assert "64.0 MB" in str(err) and "nothing was unpacked" in str(err)
    assert peak < 8 * 1024 * 1024


def test_zip_total_unpacked_budget_is_per_ingest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 1: the cap applies to all zips of one ingest together, names the member that
    crosses it, and is set by EVALBARS_MAX_UNZIPPED_MB."""
    monkeypatch.setenv("EVALBARS_MAX_ZIP_RATIO", "100000")
    monkeypatch.setenv("EVALBARS_MAX_UNZIPPED_MB", "20")
    one = _bomb("a.csv", 12)
    two = _bomb("b.csv", 12)
    err = fail([("one.zip", one), ("two.zip", two)])
    assert err.file == "two.zip" and err.where == "zip member 'b.csv'"
    assert "at most 20 MB of uncompressed zip members in one ingest" in err.expected
    assert "EVALBARS_MAX_UNZIPPED_MB" in err.expected


def test_zip_members_are_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 1: a member is decompressed as it is read: hashing a 48 MB member and reading its
    head allocate a few MB at most, never the member."""
    import tracemalloc

    from evalcore.ingest._zip import ZipArchive

    monkeypatch.setenv("EVALBARS_MAX_ZIP_RATIO", "100000")
    data = _bomb("big.csv", 48)
    archive = Source(name="s.zip", data=data)
    member = Source(name="s.zip!big.csv", archive=archive, member="big.csv")
    with ZipArchive(archive) as z:
        expected_size = z.info("big.csv").file_size
    tracemalloc.start()
    try:
        digest = member.sha256()
        head = member.head(100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert member.size == expected_size >= 48 * 1024 * 1024
    assert head.startswith(b"model,task,item_id,score\nm,t,1,1\n")
    assert len(digest) == 64
    assert peak < 8 * 1024 * 1024


def test_zip_member_crc_error_names_the_member() -> None:
    data = bytearray(_zip({"t.csv": b"model,task,item_id,score\n" + b"m,t,1,1\n"}))
    i = data.index(b"m,t,1,1")
    data[i] = ord("x")        # stored member: content changed, CRC no longer matches
    err = fail([("crc.zip", bytes(data))])
    assert err.file == "crc.zip" and "t.csv" in (err.where or "")


_DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("kind", ["document", "object", "jsonl_line", "tidy_line"])
def test_deep_nesting_is_bad_input_with_place(tmp_path: Path, kind: str) -> None:
    """Item 2: 100,000 levels is exit 3 with file and place, not an internal error (the
    orjson installed here even crashed the process; hence a subprocess)."""
    import subprocess
    import sys

    deep_obj = '{"a":' * 100_000 + "1" + "}" * 100_000
    path, text = {
        "document": ("deep.json", _DEEP_JSON),
        "object": ("results.json", '{"results": {"t": {"acc,none": 1}}, "versions": {"t": 1}, '
                                   f'"configs": {{"t": {deep_obj}}}}}'),
        "jsonl_line": ("samples_t_2026-01-01T00-00-00.1.jsonl",
                       sample_line(0) + "\n" + f'{{"doc_id": 1, "doc": {deep_obj}, "acc": 1}}\n'),
        "tidy_line": ("t.jsonl", '{"model": "m", "task": "t", "item_id": 1, "score": 1}\n'
                                 f'{{"model": "m", "task": "t", "item_id": 2, "x": {deep_obj}}}\n'),
    }[kind]
    f = tmp_path / path
    f.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "s"),
                           "ingest", "--strict", str(f)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"error: {f} at line ")
    assert "nested" in proc.stderr and "512" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_json_depth_check_ignores_brackets_in_strings() -> None:
    from evalcore.ingest._common import MAX_JSON_DEPTH, json_depth_exceeded

    assert json_depth_exceeded(json.dumps(["[" * 5000, "{" * 5000]).encode()) is None
    tricky = json.dumps(["\\\"[" * 3000, [[[1]]]]).encode()     # escaped quotes in strings
    assert json_depth_exceeded(tricky) is None
    assert json_depth_exceeded(tricky, limit=3) == (tricky.index(b"[[[1") + 2, 4)
    ok = ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH).encode()
    assert json_depth_exceeded(ok) is None
    assert json_depth_exceeded(b"[" + ok + b"]") == (MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1)


def _results_with(value: str) -> bytes:
    obj = {"results": {"arc_easy": {"alias": "arc_easy", "acc,none": 0.5,
                                    "acc_stderr,none": 0.1}},
           "versions": {"arc_easy": 1}, "config": {"model": "hf"}}
    return json.dumps(obj).replace('"acc,none": 0.5', f'"acc,none": {value}').encode()


@pytest.mark.parametrize("value,found,done", [
    ('"abc"', 'found a string "abc"', "left out"),
    ("[1, 2]", "found a list [1, 2]", "left out"),
    ("null", "found null", "left out"),
    ("true", "found the boolean true", "stored as 1"),
])
def test_bad_summary_values_are_reported(value: str, found: str, done: str) -> None:
    """Item 3: a summary value that is not a number is never dropped or converted silently."""
    run = parse_uploads([("results_2026-01-01T00-00-00.1.json", _results_with(value))])[0]
    text = " | ".join(run.warnings)
    assert "results_2026-01-01T00-00-00.1.json: results.arc_easy.acc,none: " + found in text
    assert done in text
    acc = run.summaries[run.summaries.metric == "acc"]
    if value == "true":
        assert acc.value.tolist() == [1.0]
    else:
        assert acc.empty


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "1e309", "1e308"])
def test_infinite_or_huge_summary_values_refused_at_parse_time(value: str) -> None:
    """Items 4 and 5: file and field named by the parser (not a run name from the store)."""
    err = fail([("results_2026-01-01T00-00-00.1.json", _results_with(value))])
    assert err.file == "results_2026-01-01T00-00-00.1.json"
    assert err.where == "results.arc_easy.acc,none"
    assert err.expected == "a finite number within +-1e+100"


@pytest.mark.parametrize("on_disk", [False, True])
def test_per_item_string_and_boolean_values(tmp_path: Path, on_disk: bool) -> None:
    """Item 3: per-item "acc": "abc" is named as a string (not "a list for corpus-level
    aggregation"), with its line; true is read as 1 with a warning (both readers)."""
    lines = [sample_line(i) for i in range(5)]
    lines[2] = sample_line(2, acc='"abc"')
    lines[3] = sample_line(3, acc="true")
    name = "samples_arc_easy_2026-01-01T00-00-00.1.jsonl"
    text = "\n".join(lines) + "\n"
    if on_disk:
        (tmp_path / name).write_text(text)
        run = parse_paths([tmp_path / name])[0]
    else:
        run = parse_uploads([(name, text.encode())])[0]
    warn = " | ".join(run.warnings)
    assert "per-item metric 'acc' is not a number in 1 record (first at line 3: a string \"abc\")" in warn
    assert "corpus-level" not in warn
    assert "per-item metric 'acc' is a boolean (true/false) in 1 record (first at line 4); read as 1/0" in warn
    scores = dict(zip(run.scores.item_id, run.scores.score))
    assert "2" not in scores and scores["3"] == 1.0 and len(scores) == 4


def test_booleans_alike_in_csv_and_jsonl() -> None:
    """Item 3: true/false are 1/0 with the same warning in CSV and JSONL tidy tables."""
    csv = b"model,task,item_id,score\nm,t,1,true\nm,t,2,False\nm,t,3,0.5\n"
    jsonl = b"".join(json.dumps({"model": "m", "task": "t", "item_id": i, "score": v}).encode() + b"\n"
                     for i, v in ((1, True), (2, False), (3, 0.5)))
    a = parse_uploads([("t.csv", csv)])[0]
    b = parse_uploads([("t.jsonl", jsonl)])[0]
    assert a.scores.score.tolist() == b.scores.score.tolist() == [1.0, 0.0, 0.5]
    assert "t.csv: column score: 2 boolean values (true/false; first at line 2) read as 1/0" in a.warnings
    assert "t.jsonl: column score: 2 boolean values (true/false; first at line 1) read as 1/0" in b.warnings


def test_huge_tidy_score_refused() -> None:
    err = fail([("t.csv", b"model,task,item_id,score\nm,t,1,1\nm,t,2,-1.5e308\n")])
    assert (err.file, err.where) == ("t.csv", "line 3, column score")
    assert err.expected == "a finite number within +-1e+100" and "-1.5e308" in str(err)


def test_huge_inspect_score_refused() -> None:
    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
           "samples": [{"id": 1, "epoch": 1, "scores": {"s": {"value": 1e300}}}]}
    err = fail([("log.json", json.dumps(log).encode())])
    assert err.file == "log.json" and "task 't', metric 's', item '1'" in err.where
    assert err.expected == "a finite score within +-1e+100"


def test_symlink_out_of_the_folder_is_skipped_and_never_echoed(tmp_path: Path) -> None:
    """Item 7: a link to a file outside the folder given is not read; it is named as skipped,
    and none of its content appears anywhere."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "passwd.json"
    secret.write_text("root:x:0:0:SECRET-CONTENT:/root:/bin/bash\n")
    (outside / "dir").mkdir()
    (outside / "dir" / "more.csv").write_text("model,task,item_id,score\nSECRET,t,1,1\n")
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "t.csv").write_text("model,task,item_id,score\nm,t,1,1\nm,t,2,0\n")
    (folder / "passwd.json").symlink_to(secret)
    (folder / "linked_dir").symlink_to(outside / "dir")
    (folder / "broken.json").symlink_to(tmp_path / "missing.json")
    (folder / "inside.csv").symlink_to(folder / "t.csv")     # inside the folder: followed
    runs = parse_paths([folder])
    assert [r.name for r in runs] == ["m"] or {r.name for r in runs} == {"m"}
    text = " | ".join(w for r in runs for w in r.warnings)
    assert f"{folder / 'passwd.json'} (symlink to outside the folder, not followed)" in text
    assert f"{folder / 'linked_dir'} (symlink to outside the folder, not followed)" in text
    assert f"{folder / 'broken.json'} (broken symlink)" in text
    assert "SECRET" not in text and "root:x" not in text


def test_unknown_text_is_described_in_at_most_16_escaped_characters() -> None:
    """Item 7: an error quotes no more than a short, escaped start of the file."""
    err = fail([("notes.json", b"hello\x1b[31m this is a long private line of text\n")])
    assert "private" not in str(err) and "\x1b" not in str(err)
    assert "text starting with 'hello\\x1b[31m this '..." in str(err)


def test_zip_member_marked_encrypted_is_named(fixtures_dir: Path) -> None:
    """A flipped bit 0 of a member's flags (found by bench/bench_fuzz.py) made zipfile raise
    RuntimeError ("password required"): it is bad input naming the member."""
    data = bytearray((fixtures_dir / "inspect" / "log_streaming.eval").read_bytes())
    data[6] |= 1                                      # local header of the first member
    data[data.find(b"PK\x01\x02") + 8] |= 1           # its central-directory entry
    first = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0].filename
    err = fail([("log.eval", bytes(data))])
    assert f"zip member {first!r}" in str(err)
    assert "expected an unencrypted zip member (the member is marked as encrypted)" in str(err)


@pytest.mark.parametrize("count", [float("nan"), float("inf"), -3])
def test_unusable_sample_count_in_results_is_unknown_n(count: float) -> None:
    """`n-samples.effective` as NaN/Infinity/negative (found by the fuzzer: ValueError) leaves
    n unknown; the reported score is still read."""
    doc = {"results": {"arc": {"acc,none": 0.5, "acc_stderr,none": 0.05}}, "versions": {"arc": 1},
           "n-samples": {"arc": {"original": count, "effective": count}}}
    [run] = parse_uploads([("results_x.json", json.dumps(doc).encode())])
    summary = run.summaries.set_index("metric").loc["acc"]
    assert summary["value"] == 0.5
    assert summary["n"] is None or pd.isna(summary["n"])
