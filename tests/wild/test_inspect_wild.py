"""inspect_ai logs from public repositories (tests/fixtures/wild/inspect/).

``.eval`` zips (deflate and zstd members, header versions 2 and 3) and ``.json`` logs (schema 1
and 2) from inspect_ai 0.3.9 to 0.3.242. For each: recognised, model/task/items as in the log,
and the score and stderr shown equal the ones in the log's results (read here with zipfile and
zstandard, not with evalbars' reader), or the exact reason a log is refused.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import zstandard

from evalcore.errors import IngestError
from evalcore.ingest import detect_format, parse_paths
from evalcore.store import Store

from .conftest import board, cli_leaderboard, ingest, run_cli, same


def _member(path: Path, name: str) -> bytes:
    """One zip member's bytes; method 93 (zstandard) decompressed from the raw member data."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
        if info.compress_type != 93:
            return z.read(name)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
        skip = int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        f.seek(info.header_offset + 30 + skip)
        raw = f.read(info.compress_size)
    return zstandard.ZstdDecompressor().decompressobj().decompress(raw)


def header(path: Path) -> dict:
    """The log's header: the whole ``.json`` log, or ``header.json`` of a ``.eval`` zip."""
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    return json.loads(_member(path, "header.json"))


def n_sample_files(path: Path) -> int:
    if path.suffix == ".json":
        return len(header(path).get("samples") or [])
    with zipfile.ZipFile(path) as z:
        return sum(1 for n in z.namelist() if n.startswith("samples/"))


def printed(h: dict, scorer: str, metric: str | None):
    """A metric value as the log prints it (schema 2: results.scores[]; schema 1:
    results.scorer + results.metrics)."""
    if metric is None:
        return None
    res = h["results"]
    if "scores" in res:
        score = next(s for s in res["scores"] if s["name"] == scorer)
        m = score["metrics"].get(metric)
    else:
        assert res["scorer"]["name"] == scorer
        m = res["metrics"].get(metric)
    return None if m is None else m["value"]


# log -> (metric shown, scorer, score metric, stderr metric, n, items in the log)
LOGS = {
    # schema 1 (inspect_ai 0.3.9): results.scorer + results.metrics, sample "score"
    "2024-05-31T14-12-23_classification-eval_k6aANzpQPy2qJmd6BWses6.json":
        ("prompt_scorer", "prompt_scorer", "pass_metric", None, 1, True),
    "2024-06-10T11-28-48_fact-comparator-eval_f5T6vzpKy9yFGiHPvE438i.json":
        ("fact_comparator_scorer:groundedness", "fact_comparator_scorer", "groundedness", None,
         None, False),
    # schema 2, JSON
    "2024-08-29T15-11-17+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json":
        ("match", "match", "accuracy", "stderr", 1, False),
    "2024-08-29T15-11-18+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json":
        ("match", "match", "accuracy", "stderr", 1, False),
    "log_formats.json": ("match", "match", "accuracy", "stderr", 1, True),
    "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json":
        ("model_graded_fact", "model_graded_fact", "accuracy", "stderr", 1, True),
    "2025-05-12T20-28-13-04-00_no-samples.json": ("match", "match", "accuracy", "stderr", 3, False),
    "2025-05-12T20-28-13-04-00_popularity.json": ("match", "match", "accuracy", "stderr", 3, True),
    "2025-05-12T20-28-26-04-00_security-guide.json":
        ("model_graded_fact", "model_graded_fact", "accuracy", "stderr", 3, True),
    "data_pubmedqa_gpt4o_mini.json": ("choice", "choice", "accuracy", "stderr", 2, True),
    "data_cvebench_empty_choices.json": ("check_exploit", "check_exploit", "mean", None, 78, False),
    # .eval, deflate
    "log_formats.eval": ("match", "match", "accuracy", "stderr", 1, True),
    "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval":
        ("model_graded_fact", "model_graded_fact", "accuracy", "stderr", 1, True),
    "2025-07-30T18-42-38+00-00_mmlu_ZYEnfbu3nstBuwzjiAGzuG.eval":
        ("choice", "choice", "accuracy", "stderr", 285, True),
    "2025-09-23T08-09-58-04-00_security-guide_LuxZJVwvymC3S3SyoJczxB.eval":
        ("model_graded_fact", "model_graded_fact", "accuracy", "stderr", 16, True),
    "mmlu-summary-choices.eval": ("choice", "choice", "accuracy", "stderr", 1, True),
    "log_message_deduplication.eval":                      # header "version": 3
        ("closeness_log", "closeness_log", "accuracy", "stderr", 1, True),
    "2026-02-20T05-36-08+00-00_starsim-benchmark_o3aSqq3XArznRXayWWDh6n.eval":
        ("starsim_scorer", "starsim_scorer", "mean", None, 23, True),
    "2026-02-21T18-19-01+00-00_starsim-agent-benchmark_fvVCTH6QVCnf3YW6NgN8Rb.eval":
        ("agent_scorer", "agent_scorer", "mean", None, 23, True),
    # .eval, zstd members (inspect_ai 0.3.242)
    "baseline.eval": ("a2ui_scorer", "a2ui_scorer", "accuracy", None, 6, True),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_is_read_as_printed(name, ins, tmp_path):
    path = ins / name
    metric, scorer, score_key, stderr_key, n, has_items = LOGS[name]
    h = header(path)
    fmt = detect_format(name, path.read_bytes()[:65536])
    assert fmt == ("inspect_json" if path.suffix == ".json" else "inspect_eval")

    store = ingest(tmp_path, path)
    runs = store.runs()
    assert len(runs) == 1 and runs["model"].iloc[0] == h["eval"]["model"]
    assert set(store.tasks()["task"]) == {h["eval"]["task"]}

    lb = board(store)
    assert lb.metrics_by_task == {h["eval"]["task"]: metric}
    cell = lb.cells.iloc[0]
    value, stderr = printed(h, scorer, score_key), printed(h, scorer, stderr_key)
    assert same(cell.reported, value) and same(cell.reported_stderr, stderr)
    assert bool(cell.has_items) == has_items
    if n is None:
        assert pd.isna(cell.n)
    else:
        assert cell.n == n
    if has_items:
        assert cell.n == n_sample_files(path)            # one item per sample (epochs 1)
    assert same(cell.score, value), (cell.score, value)
    if stderr is not None and (not has_items or n > 1):
        assert same(cell.se, stderr), (cell.se, stderr)
    elif has_items and n == 1:
        # one item has no standard error; the log prints 0.0 (inspect's stderr of one value)
        assert pd.isna(cell.se)


def test_pinned_numbers_from_the_logs(ins, tmp_path):
    """As a person copies them from the logs' results."""
    store = ingest(tmp_path, ins / "2025-07-30T18-42-38+00-00_mmlu_ZYEnfbu3nstBuwzjiAGzuG.eval",
                   ins / "2025-09-23T08-09-58-04-00_security-guide_LuxZJVwvymC3S3SyoJczxB.eval",
                   ins / "2026-02-20T05-36-08+00-00_starsim-benchmark_o3aSqq3XArznRXayWWDh6n.eval")
    cells = board(store).cells.set_index("task")
    assert cells.loc["mmlu", "score"] == pytest.approx(0.7824561403508772, rel=1e-12)
    assert cells.loc["mmlu", "se"] == pytest.approx(0.024481850763866792, rel=1e-12)
    assert cells.loc["security_guide", "score"] == 0.6875                  # 11 of 16
    assert cells.loc["security_guide", "se"] == pytest.approx(0.11967838846954226, rel=1e-12)
    assert cells.loc["starsim_benchmark", "score"] == pytest.approx(0.17391304347826086, rel=1e-12)
    assert cells.loc["starsim_benchmark", "n"] == 23


def test_json_and_eval_of_the_same_run_agree(ins, tmp_path):
    """inspect_ai wrote log_formats.json and log_formats.eval from one run (0.3.41)."""
    a = board(ingest(tmp_path, ins / "log_formats.json", name="a")).cells.iloc[0]
    b = board(ingest(tmp_path, ins / "log_formats.eval", name="b")).cells.iloc[0]
    assert (a.task, a.metric, a.n, a.score) == (b.task, b.metric, b.n, b.score)


def test_trimmed_log_shows_its_items_and_flags_the_mismatch(ins, tmp_path):
    """data_cyse2: the results cover 2340 scored samples (585 x 4 epochs); the log keeps one
    sample (0.65). The shown score comes from the item, the printed one is kept and the
    audit says they differ."""
    path = ins / "data_cyse2_vuln_exploit_challenges.json"
    h = header(path)
    store = ingest(tmp_path, path)
    cell = board(store).cells.iloc[0]
    assert cell.n == 1 and cell.score == 0.65
    assert cell.reported == printed(h, "vul_exploit_scorer", "accuracy") == 0.38108974358974373
    audit = store.audit()
    assert audit["flag"].notna().any()


def test_cli_leaderboard_json_prints_the_log_numbers(ins, tmp_path):
    names = ["2025-07-30T18-42-38+00-00_mmlu_ZYEnfbu3nstBuwzjiAGzuG.eval", "baseline.eval",
             "2025-05-12T20-28-13-04-00_popularity.json",
             "2024-05-31T14-12-23_classification-eval_k6aANzpQPy2qJmd6BWses6.json"]
    store = ingest(tmp_path, *(ins / n for n in names))
    store.close()
    out = cli_leaderboard(tmp_path / "wild")
    by_task = {c["task"]: c for c in out["cells"]}
    for name in names:
        h = header(ins / name)
        metric, scorer, score_key, stderr_key, n, _ = LOGS[name]
        cell = by_task[h["eval"]["task"]]
        assert cell["metric"] == metric and cell["n"] == n
        assert same(cell["score"], printed(h, scorer, score_key))
        if stderr_key and n > 1:
            assert same(cell["se"], printed(h, scorer, stderr_key))


def test_git_lfs_pointer_is_refused_naming_the_file(ins):
    path = ins / "long_log.eval"
    assert path.read_bytes().startswith(b"version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(IngestError) as err:
        parse_paths([str(path)])
    assert str(path) in str(err.value)


def test_git_lfs_pointer_is_named_with_the_fix(ins, tmp_path):
    path = ins / "long_log.eval"
    proc = run_cli(tmp_path / "s", "ingest", str(path))
    assert proc.returncode == 3
    assert (f"{path} at byte 0: expected the file itself, not a Git LFS pointer (the file was "
            "never downloaded: run `git lfs pull` in the repository it came from, then ingest "
            "again)") in proc.stdout


@pytest.mark.parametrize("name", ["2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval",
                                  "retry-2-then-success.eval"])
def test_log_without_scores_is_not_stored(name, ins, tmp_path):
    path = ins / name
    h = header(path)
    assert not (h.get("results") or {}).get("scores")       # the log has no scorer results
    proc = run_cli(tmp_path / "s", "ingest", str(path))
    assert proc.returncode == 3
    assert f"- {path}: no scores: " in proc.stdout
    assert not (tmp_path / "s").exists() or Store(tmp_path / "s").runs().empty


def test_json_log_without_version_key_is_read(ins, tmp_path):
    path = ins / "data_with_llm_scoring.json"
    h = header(path)
    assert "version" not in h and h["eval"]["task"] == "simpleqa_verified"
    cell = board(ingest(tmp_path, path)).cells.iloc[0]
    assert same(cell.score, printed(h, "simpleqa_scorer", "accuracy"))      # 0.431
    assert same(cell.se, printed(h, "simpleqa_scorer", "stderr"))
    assert cell.n == 1000
