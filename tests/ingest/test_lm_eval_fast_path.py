"""The columnar sample-log reader's speed mechanics: many record batches kept as chunks, the
reader thread (``_prefetch``), integer doc ids and the text cap.

Every test compares against the line-by-line reader (``read_jsonl_slow``, plain Python), so
the expected values never come from the fast path itself.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import IngestError
from evalcore.ingest import lm_eval, parse_paths
from evalcore.ingest._common import Source


def _record(doc_id: int, lls: list[float], gold: int, acc: float, filt: str = "none",
            prompt: str | None = None) -> dict:
    prompt = prompt if prompt is not None else f"Question {doc_id}?\nAnswer:"
    opts = [f" option {k} of {doc_id}" for k in range(len(lls))]
    return {"doc_id": doc_id, "doc": {"q": doc_id}, "target": gold,
            "arguments": {f"gen_args_{k}": {"arg_0": prompt, "arg_1": o} for k, o in enumerate(opts)},
            "resps": [[[f"{ll:.4f}", "False"]] for ll in lls],
            "filtered_resps": [[f"{ll:.4f}", "False"] for ll in lls], "filter": filt,
            "metrics": ["acc", "acc_norm"], "doc_hash": f"d{doc_id}", "prompt_hash": f"p{doc_id}",
            "target_hash": "t", "acc": acc, "acc_norm": 1.0 - acc}


def _write(path: Path, records: list[dict]) -> Source:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return Source(name=str(path), path=path)


def _both(src: Source) -> tuple[lm_eval.TaskData, lm_eval.TaskData]:
    fast = lm_eval.assemble(src.name, lm_eval.read_jsonl_fast(src, "arc"))
    slow = lm_eval.assemble(src.name, lm_eval.read_jsonl_slow(src, "arc"))
    return fast, slow


def test_many_batches_give_the_same_frames_as_the_line_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 6,000 records in batches of 1,000: the batches are kept as Arrow chunks (no copy)
    monkeypatch.setattr(lm_eval.records, "CHUNK_LINES", 1000)
    rng = np.random.default_rng(7)
    records = []
    for i in range(3000):
        k = 3 + i % 3
        lls = rng.normal(size=k).tolist()
        for filt in ("none", "other"):       # one doc under two filters: texts once per doc
            records.append(_record(i, lls, gold=i % k, acc=float(rng.random() < .5), filt=filt))
    src = _write(tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl", records)
    cols = lm_eval.read_jsonl_fast(src, "arc")
    assert len(cols.item_id) > 1                       # really several batches
    fast = lm_eval.assemble(src.name, cols)
    slow = lm_eval.assemble(src.name, lm_eval.read_jsonl_slow(src, "arc"))
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    pd.testing.assert_frame_equal(fast.texts, slow.texts)
    assert len(fast.scores) == 4 * 3000 and len(fast.texts) == 3000
    assert fast.n_choices == slow.n_choices


def test_texts_are_cut_at_the_limit_in_characters_not_bytes(tmp_path: Path) -> None:
    # 5,000 two-byte characters (10,000 bytes) stay whole; 9,000 are cut to TEXT_LIMIT
    short, long_ = "é" * 5000, "é" * 9000
    records = [_record(0, [-1.0, -2.0], 0, 1.0, prompt=short),
               _record(1, [-1.0, -2.0], 0, 1.0, prompt=long_)]
    fast, slow = _both(_write(tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl", records))
    pd.testing.assert_frame_equal(fast.texts, slow.texts)
    prompts = fast.texts.set_index("item_id").prompt
    assert prompts["0"] == short
    assert prompts["1"] == "é" * lm_eval.TEXT_LIMIT


def test_duplicate_integer_doc_id_across_batches_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lm_eval.records, "CHUNK_LINES", 1000)
    records = [_record(i, [-1.0, -2.0], 0, 1.0) for i in range(3000)] + [_record(17, [-1.0, -2.0], 0, 1.0)]
    path = tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl"
    _write(path, records)
    with pytest.raises(IngestError) as exc:
        parse_paths([path])
    assert "doc_id '17' appears more than once" in str(exc.value)
    assert "metric 'acc'" in exc.value.where


def test_prefetch_yields_in_order_and_reraises_reader_errors_in_place() -> None:
    def reader():
        yield 1
        yield 2
        raise ValueError("bad JSON at batch 3")

    got = []
    with pytest.raises(ValueError, match="batch 3"):
        for item in lm_eval.columnar._prefetch(reader()):
            got.append(item)
    assert got == [1, 2]


def test_prefetch_closed_early_stops_its_thread_and_closes_the_reader() -> None:
    closed = threading.Event()

    def reader():
        try:
            for i in range(1000):
                yield i
        finally:
            closed.set()

    before = {t.ident for t in threading.enumerate()}
    gen = lm_eval.columnar._prefetch(reader(), depth=2)
    assert next(gen) == 0
    gen.close()
    assert closed.is_set()                       # the reader's finally ran (connection closed)
    left = [t for t in threading.enumerate()
            if t.ident not in before and t.name == "evalbars-json-reader"]
    assert left == []


def _run_files(tmp_path: Path, n_files: int = 3, bad: int | None = None) -> list[Path]:
    paths = []
    for f in range(n_files):
        recs = [_record(i, [-1.0 - i % 3, -2.0, -0.5], gold=i % 3, acc=float(i % 2))
                for i in range(200)]
        path = tmp_path / f"samples_task{f}_2026-01-01T00-00-00.000001.jsonl"
        text = "".join(json.dumps(r) + "\n" for r in recs)
        if f == bad:
            text = text.replace('"acc": 1.0', '"acc": Infinity', 1)
        path.write_text(text)
        paths.append(path)
    return paths


def test_parallel_read_of_a_runs_sample_logs_equals_the_sequential_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalcore.ingest.reading as ingest
    paths = _run_files(tmp_path)
    monkeypatch.setattr(ingest, "READ_WORKERS", 1)
    seq = parse_paths(paths)
    calls: list[tuple[int, int, str]] = []
    monkeypatch.setattr(ingest, "READ_WORKERS", 2)
    monkeypatch.setattr(ingest, "PARALLEL_READ_BYTES", 0)
    threads: set[str] = set()
    real = lm_eval.read_samples_jsonl

    def spy(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(lm_eval, "read_samples_jsonl", spy)
    par = parse_paths(paths, progress=lambda done, total, name: calls.append((done, total, name)))
    assert any(t.startswith("evalbars-read") for t in threads)   # really read in the pool
    assert len(seq) == len(par) == 1
    pd.testing.assert_frame_equal(seq[0].scores, par[0].scores)
    pd.testing.assert_frame_equal(seq[0].texts, par[0].texts)
    pd.testing.assert_frame_equal(seq[0].tasks, par[0].tasks)
    assert [f.sha256 for f in seq[0].files] == [f.sha256 for f in par[0].files]
    assert len(par[0].scores) == 3 * 200 * 2
    # progress: from this thread only, never decreasing, ending at the total
    dones = [d for d, _t, _n in calls]
    assert dones == sorted(dones) and calls[-1][0] == calls[-1][1] > 0


def test_parallel_read_raises_the_first_bad_file_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import evalcore.ingest.reading as ingest
    paths = _run_files(tmp_path, bad=1)
    monkeypatch.setattr(ingest, "PARALLEL_READ_BYTES", 0)
    monkeypatch.setattr(ingest, "READ_WORKERS", 2)
    with pytest.raises(IngestError) as par:
        parse_paths(paths)
    monkeypatch.setattr(ingest, "READ_WORKERS", 1)
    with pytest.raises(IngestError) as seq:
        parse_paths(paths)
    assert str(par.value) == str(seq.value)
    assert "task1" in par.value.file and "line" in str(par.value.where)


def _duckdb_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pyarrow(*_a, **_k):
        raise AssertionError("the DuckDB reader should have read this file")
    monkeypatch.setattr(lm_eval.columnar, "_batches_pyarrow", no_pyarrow)


def test_duckdb_option_picks_equal_the_line_reader_on_odd_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # every choice DuckDB now makes inside the query: ties and NaN log-likelihoods (the first
    # maximum, like np.argmax), a single option (no response), targets out of range or
    # negative, option texts padded with tabs, newlines and no-break spaces, an empty filter
    _duckdb_only(monkeypatch)
    cases = [([-1.0, -1.0, -2.0], 1), (["nan", -1.0, -0.5], 2), ([-0.5], 0), ([-3.0, -1.0], 5),
             ([-3.0, -1.0], -1), ([-2.0, -0.1, -0.2, -9.0], 3), (["-1e-3", "-2E+1", "0"], 0)]
    records = []
    for i, (lls, gold) in enumerate(cases * 3):
        rec = _record(i, [-1.0] * len(lls), gold, acc=float(i % 2), filt="" if i % 5 == 0 else "none")
        rec["filtered_resps"] = [[ll if isinstance(ll, str) else f"{ll:.4f}", "False"] for ll in lls]
        for k, arg in enumerate(rec["arguments"].values()):
            arg["arg_1"] = f"\t\xa0 option {k} of {i}\n "
        records.append(rec)
    src = _write(tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl", records)
    fast, slow = _both(src)
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    pd.testing.assert_frame_equal(fast.texts, slow.texts)
    assert fast.n_choices == slow.n_choices
    texts = fast.texts.set_index("item_id")
    assert texts.response["0"] == "option 0 of 0"        # tie: the first maximum
    assert texts.response["1"] == "option 0 of 1"        # NaN counts as the maximum, first
    assert pd.isna(texts.response["2"])                  # one option: no pick
    assert texts.target["3"] == "5" and texts.target["4"] == "-1"   # not an option index
    assert texts.target["5"] == "option 3 of 5"
    assert set(fast.scores.metric) == {"acc", "acc_norm"}   # the empty filter is "none"


def test_string_targets_of_digits_pick_the_option_on_the_duckdb_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _duckdb_only(monkeypatch)
    targets = ["1", " 0 ", "7", "x", "01", "-1", "2.0"]
    records = []
    for i, t in enumerate(targets):
        rec = _record(i, [-1.0, -2.0, -3.0], 0, acc=1.0)
        rec["target"] = t
        records.append(rec)
    fast, slow = _both(_write(tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl", records))
    pd.testing.assert_frame_equal(fast.texts, slow.texts)
    got = dict(zip(fast.texts.item_id, fast.texts.target))
    assert got == {"0": "option 1 of 0", "1": "option 0 of 1", "2": "7", "3": "x",
                   "4": "option 1 of 4", "5": "-1", "6": "2.0"}


@pytest.mark.parametrize("row", [0, 7])
@pytest.mark.parametrize("bad", [True, "0.5", None])
def test_metric_values_duckdb_would_convert_send_the_file_to_the_line_reader(
        tmp_path: Path, bad: object, row: int) -> None:
    # DuckDB's DOUBLE reader turns true into 1.0 and "0.5" into 0.5 silently: the fast path
    # must not; the line reader warns (boolean read as 1/0) or leaves the value out. In the
    # first record or a later one.
    records = [_record(i, [-1.0, -2.0], 0, acc=1.0) for i in range(20)]
    records[row]["acc"] = bad
    path = tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    src = Source(name=str(path), path=path)
    with pytest.raises(lm_eval.columnar._Fallback):
        lm_eval.read_jsonl_fast(src, "arc")
    run = parse_paths([path])[0]
    acc = run.scores[run.scores.metric == "acc"]
    if bad is True:
        assert len(acc) == 20 and any("boolean" in w for w in run.warnings)
    else:
        assert len(acc) == 19 and any("not a number" in w for w in run.warnings)


@pytest.mark.parametrize("bad", [True, False, "0.5", "", {"v": 1}, [1.0], []])
def test_a_metric_value_of_another_json_type_sends_the_file_to_the_line_reader(
        tmp_path: Path, bad: object) -> None:
    records = [_record(i, [-1.0, -2.0], 0, acc=1.0) for i in range(20)]
    records[7]["acc_norm"] = bad
    src = _write(tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl", records)
    with pytest.raises(lm_eval.columnar._Fallback):
        lm_eval.read_jsonl_fast(src, "arc")


def test_the_first_character_of_a_json_value_tells_its_type_as_json_type_does(
        tmp_path: Path) -> None:
    # the DuckDB reader marks a metric value that is not a number by the first character of
    # its JSON text (DuckDB writes it minified); json_type, which parses it, must agree
    import duckdb
    values = ["true", "false", '"x"', '""', '"1.5"', '{"v": 1}', "{ }", "[1.0]", " [ ]", "null",
              "0", "-0.0", "1E2", " 7e+1", "-2.5e-3", "12345678901234567890", '"\\u00e9"']
    path = tmp_path / "values.jsonl"
    path.write_text("".join(f'{{"i": {i}, "v": {v}}}\n' for i, v in enumerate(values)))
    codes = ", ".join(str(ord(c)) for c in lm_eval.columnar._NOT_A_NUMBER)
    rows = duckdb.connect().execute(
        "SELECT i, coalesce(json_type(v) IN ('BOOLEAN', 'VARCHAR', 'OBJECT', 'ARRAY'), false), "
        f"coalesce(ascii(CAST(v AS VARCHAR)) IN ({codes}), false) FROM read_json(?, "
        "format = 'newline_delimited', columns = {i: 'BIGINT', v: 'JSON'}) ORDER BY i",
        [str(path)]).fetchall()
    assert [(by_type, by_char) for _i, by_type, by_char in rows] == [
        (not_number, not_number) for not_number in [True] * 9 + [False] * 7 + [True]]


def test_metric_numbers_in_every_json_spelling_stay_on_the_duckdb_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _duckdb_only(monkeypatch)
    spellings = ["0", "1", "-0.0", "-2.5e-3", "1E2", "7e+1", "0.125", "-3", "12345678901234567890"]
    lines = []
    for i, text in enumerate(spellings):
        line = json.dumps(_record(i, [-1.0, -2.0], 0, acc=0.25))
        lines.append(line.replace('"acc": 0.25', f'"acc": {text}') + "\n")
    path = tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(lines))
    fast, slow = _both(Source(name=str(path), path=path))
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    acc = fast.scores[fast.scores.metric == "acc"].score.tolist()
    assert acc == [float(t) for t in spellings]


def test_a_record_naming_other_metrics_sends_the_file_to_the_line_reader(tmp_path: Path) -> None:
    # the columnar schema comes from the first record: a later record that names another
    # metric must not lose it (on both columnar readers)
    records = [_record(i, [-1.0, -2.0], 0, acc=1.0) for i in range(20)]
    records[9]["metrics"] = ["acc", "acc_norm", "f1"]
    records[9]["f1"] = 0.25
    path = tmp_path / "samples_arc_2026-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    for src in (Source(name=str(path), path=path), Source(name=path.name, data=path.read_bytes())):
        with pytest.raises(lm_eval.columnar._Fallback):
            lm_eval.read_jsonl_fast(src, "arc")
    run = parse_paths([path])[0]
    f1 = run.scores[run.scores.metric == "f1"]
    assert f1.item_id.tolist() == ["9"] and f1.score.tolist() == [0.25]
