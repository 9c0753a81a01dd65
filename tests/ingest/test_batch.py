"""Batches (``read_paths`` / ``read_uploads``): one bad file does not
block a folder, every bad file is listed with its place and reason, a run stays whole, runs
without scores are left out with the reason, a Git LFS pointer is named as such, and
``strict=True`` is all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.errors import IngestError, NoScoresError
from evalcore.ingest import (LFS_POINTER, no_scores_reason, parse_uploads, problem_row,
                             read_paths, read_uploads)

MISTRAL = "lm_eval/results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
QWEN_LOG = "inspect/data_arc_qwen.json"
LFS = (LFS_POINTER + b"\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
       b"\nsize 12345\n")
UNKNOWN = json.dumps({"foo": 1, "bar": [1, 2]}).encode()


def no_scorer_log(fixtures_dir: Path) -> bytes:
    """The qwen inspect log as inspect writes it for a task without a scorer."""
    log = json.loads((fixtures_dir / QWEN_LOG).read_bytes())
    log["eval"]["scorers"] = None
    log.pop("results", None)
    log.pop("reductions", None)
    for s in log["samples"]:
        s.pop("scores", None)
    return json.dumps(log).encode()


def test_a_folder_with_bad_files_keeps_every_good_run(fixtures_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "results"
    (folder / "lfs").mkdir(parents=True)
    (folder / "mistral.json").write_bytes((fixtures_dir / MISTRAL).read_bytes())
    (folder / "qwen.json").write_bytes((fixtures_dir / QWEN_LOG).read_bytes())
    (folder / "lfs" / "results_2024-01-01T00-00-00.json").write_bytes(LFS)
    (folder / "other.json").write_bytes(UNKNOWN)
    (folder / "truncated.jsonl").write_text('{"doc_id": 0, "doc": {}, "resps": [')
    (folder / "notes.txt").write_text("not read")
    batch = read_paths([folder])
    assert sorted(r.source_format for r in batch.runs) == ["inspect", "lm_eval"]
    bad = {Path(e.file).name: e for e in batch.bad_files}
    assert set(bad) == {"results_2024-01-01T00-00-00.json", "other.json", "truncated.jsonl"}
    lfs = bad["results_2024-01-01T00-00-00.json"]
    assert "Git LFS pointer" in str(lfs) and "run `git lfs pull`" in str(lfs)
    assert lfs.where == "byte 0"
    assert bad["other.json"].where == "top level"
    assert bad["truncated.jsonl"].where.startswith("line 1")
    assert batch.skipped == [str(folder / "notes.txt")]
    assert not batch.no_scores


def test_strict_is_all_or_nothing(fixtures_dir: Path) -> None:
    files = [("mistral.json", (fixtures_dir / MISTRAL).read_bytes()), ("x.json", LFS)]
    with pytest.raises(IngestError) as exc:
        read_uploads(files, strict=True)
    assert exc.value.file == "x.json" and "git lfs pull" in str(exc.value)
    with pytest.raises(NoScoresError, match="the log has no scorer"):
        read_uploads(files[:1] + [("log.json", no_scorer_log(fixtures_dir))], strict=True)
    # the lower-level parser is strict too (its contract: any bad file raises)
    with pytest.raises(IngestError):
        parse_uploads(files)


def test_a_run_is_stored_whole_or_not_at_all() -> None:
    """A results file whose sample log is broken: neither is kept, both are named."""
    results = {"results": {"arc": {"acc,none": 0.5, "acc_stderr,none": 0.1}},
               "versions": {"arc": 1}, "config": {"model": "hf"}}
    good_line = json.dumps({"doc_id": 0, "doc": {}, "target": "0", "arguments": {},
                            "resps": [], "filtered_resps": [], "filter": "none",
                            "metrics": ["acc"], "acc": 1.0})
    files = [("out/results_2024-05-01T10-00-00.000001.json", json.dumps(results).encode()),
             ("out/samples_arc_2024-05-01T10-00-00.000001.jsonl",
              (good_line + "\n" + good_line.replace('"doc_id": 0', '"doc_id": 1')[:-9]).encode()),
             ("other/results_2024-05-02T10-00-00.000001.json", json.dumps(results).encode())]
    batch = read_uploads(files)
    assert len(batch.runs) == 1 and batch.runs[0].files[0].name.startswith("other/")
    named = {e.file: e for e in batch.bad_files}
    assert set(named) == {files[0][0], files[1][0]}
    assert named[files[1][0]].where.startswith("line 2")
    assert "stored whole or not at all" in str(named[files[0][0]])


def test_unreadable_results_file_holds_back_its_sample_logs(fixtures_dir: Path) -> None:
    samples = (fixtures_dir / "lm_eval/samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl")
    files = [("out/results_2025-01-01T00-00-00.000001.json", b'{"results": {"a": '),
             ("out/samples_negotiationtom_belief_2025-01-01T00-00-00.000001.jsonl",
              samples.read_bytes())]
    batch = read_uploads(files)
    assert batch.runs == []
    assert [e.file for e in batch.problems] == [f for f, _ in files]
    assert "could not be read" in str(batch.problems[1])


def test_no_scorer_log_is_not_a_run(fixtures_dir: Path) -> None:
    files = [("log.json", no_scorer_log(fixtures_dir)),
             ("qwen.json", (fixtures_dir / QWEN_LOG).read_bytes())]
    batch = read_uploads(files)
    assert [r.files[0].name for r in batch.runs] == ["qwen.json"]
    [empty] = batch.no_scores
    assert empty.file == "log.json" and str(empty) == "log.json: no scores: the log has no scorer"
    assert batch.bad_files == []
    assert problem_row(empty) == {"file": "log.json", "where": None, "kind": "no scores",
                                  "reason": "no scores: the log has no scorer"}


def test_results_file_whose_values_are_all_unusable(fixtures_dir: Path) -> None:
    results = {"results": {"arc": {"acc,none": "N/A", "acc_stderr,none": "N/A"},
                           "hella": {"acc,none": None}},
               "versions": {"arc": 1, "hella": 1}}
    batch = read_uploads([("results.json", json.dumps(results).encode())])
    assert batch.runs == []
    [empty] = batch.no_scores
    assert "no metric value in the results file is a number" in str(empty)


def test_no_scores_reason_is_none_for_runs_with_data(fixtures_dir: Path) -> None:
    for name in (MISTRAL, QWEN_LOG, "lm_eval/results_v0.3_bloom-560m_common-sense-reasoning_0shot.json"):
        [run] = parse_uploads([(name, (fixtures_dir / name).read_bytes())])
        assert no_scores_reason(run) is None


def test_nothing_to_read_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(IngestError, match="nothing to read"):
        read_paths([tmp_path])


def test_helm_run_without_any_metric_is_not_a_run(fixtures_dir: Path) -> None:
    run_dir = next(p for p in (fixtures_dir / "helm").iterdir() if p.is_dir())
    per_instance = json.loads((run_dir / "per_instance_stats.json").read_bytes())
    for entry in per_instance:
        entry["stats"] = []
    files = [("run/per_instance_stats.json", json.dumps(per_instance).encode()),
             ("run/run_spec.json", (run_dir / "run_spec.json").read_bytes())]
    batch = read_uploads(files)
    assert batch.runs == []
    [empty] = batch.no_scores
    assert "run/per_instance_stats.json" in empty.file
    assert "no scores: every metric was skipped" in str(empty)


def test_a_bad_zip_member_does_not_block_the_others() -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("r/a.csv", "model,task,item_id,score\nm,t,1,1\n")
        z.writestr("r/b.json", LFS)
    batch = read_uploads([("x.zip", buf.getvalue())])
    assert [r.name for r in batch.runs] == ["m"]
    [bad] = batch.problems
    assert bad.file == "x.zip!r/b.json" and "git lfs pull" in str(bad)
