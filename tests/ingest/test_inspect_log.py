"""inspect_ai logs: .eval zips (deflate and zstd), .json logs v1/v2, epochs, clusters,
value conversion (numbers pinned from PROVENANCE.md)."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path

import pytest

from evalcore.ingest import detect_format, inspect_log, parse_paths, parse_uploads

STARSIM_SONNET = "2026-02-20T05-22-33+00-00_starsim-benchmark_24AbBSr25iP6DbfTNwbAUU.eval"
STARSIM_OPUS = "2026-02-20T05-28-38+00-00_starsim-benchmark_ZLCP7ftbVUCYkyJGemYV6a.eval"
POPULARITY = "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
A2UI = "2026-07-22T16-51-18-00-00_a2ui-v1-0-eval_nXpB6sZohVsmQgnyUD8nuj.eval"
V1 = "2024-05-31T14-25-53_my-eval_i9Kx3FsvtWUgPqVJtsK7P4.json"


@pytest.fixture(scope="module")
def ins(fixtures_dir: Path) -> Path:
    return fixtures_dir / "inspect"


def one(path: Path, **kw):
    runs = parse_paths([path], **kw)
    assert len(runs) == 1
    return runs[0]


def test_log_streaming_epochs_are_answers(ins: Path) -> None:
    run = one(ins / "log_streaming.eval")
    s = run.scores.sort_values(["item_id", "answer_idx"])
    assert s[["item_id", "answer_idx"]].values.tolist() == [["1", 0], ["1", 1], ["2", 0], ["2", 1]]
    assert s.score.tolist() == [0.0, 1.0, 1.0, 1.0]          # id1 I,C; id2 C,C
    assert set(s.metric) == {"match"} and run.protocol["epochs"] == 2
    summ = run.summaries.set_index("metric").loc["match"]
    assert summ.value == 0.75 and summ.stderr == 0.25 and summ.n == 2
    # reduced per item (mean over epochs): 0.5 and 1.0 as in reductions.json
    assert s.groupby("item_id").score.mean().tolist() == [0.5, 1.0]
    assert len(run.texts) == 4 and run.texts.response.notna().all()


def test_popularity_accuracy(ins: Path) -> None:
    run = one(ins / POPULARITY)
    assert run.name == "openai/gpt-4o-mini" and run.harness == "inspect_ai"
    assert len(run.scores) == 10 and run.scores.score.mean() == pytest.approx(0.8)
    assert run.scores.score.std(ddof=1) / math.sqrt(10) == pytest.approx(0.1333, abs=1e-4)
    assert run.protocol["epochs"] == 1     # config without an epochs key defaults to 1


def test_starsim_pair_with_problem_id_clusters(ins: Path) -> None:
    sonnet, opus = one(ins / STARSIM_SONNET), one(ins / STARSIM_OPUS)
    assert len(sonnet.scores) == 23 and sonnet.scores.score.mean() == pytest.approx(0.478, abs=1e-3)
    assert opus.scores.score.mean() == pytest.approx(0.696, abs=1e-3)
    # 6 problems: the key is offered, not applied (fewer than 20 clusters)
    assert sonnet.protocol["cluster_key"] is None
    assert sonnet.protocol["cluster_key_offered"] == "problem_id"
    assert "problem_id" in sonnet.protocol["cluster_key_candidates"]
    assert any("cluster key 'problem_id' offered, not applied: only 6 clusters" in w
               for w in sonnet.warnings)
    assert sonnet.scores.cluster.isna().all()
    given = one(ins / STARSIM_SONNET, cluster_key="problem_id")
    sizes = sorted(given.scores.groupby("cluster").size().tolist(), reverse=True)
    assert sizes == [4, 4, 4, 4, 4, 3]
    a = sonnet.scores.set_index("item_id").score
    b = opus.scores.set_index("item_id").score.loc[a.index]
    assert int((a != b).sum()) == 5                             # discordant pairs
    assert (sonnet.scores.set_index("item_id").item_hash ==
            opus.scores.set_index("item_id").item_hash.loc[a.index]).all()
    summ = sonnet.summaries.set_index("metric")
    assert summ.loc["starsim_scorer", "value"] == pytest.approx(0.4782608695652174)
    assert math.isnan(summ.loc["starsim_scorer", "stderr"])      # no stderr metric
    assert summ.loc["starsim_scorer:test_pass_rate", "value"] == pytest.approx(0.4842105263157895)


def test_cluster_key_argument(ins: Path) -> None:
    run = one(ins / STARSIM_SONNET, cluster_key="sub_step_id")
    assert run.scores.cluster.nunique() == 23
    none = one(ins / STARSIM_SONNET, cluster_key="")
    assert none.scores.cluster.isna().all()


def test_a2ui_zstd_error_log_reads_without_scores(ins: Path) -> None:
    with zipfile.ZipFile(ins / A2UI) as z:
        assert {i.compress_type for i in z.infolist()} == {93}
    run = one(ins / A2UI)
    assert run.scores.empty and run.summaries.empty
    assert len(run.texts) == 27
    assert run.protocol["status"] == "error"
    assert any("status is 'error'" in w for w in run.warnings)
    assert run.name == "google/gemini-3.5-flash" and run.harness_version == "0.3.242"


def test_json_logs_v2_arc_pair(ins: Path) -> None:
    qwen, sonnet = one(ins / "data_arc_qwen.json"), one(ins / "data_arc_sonnet.json")
    assert qwen.scores.sort_values("item_id").score.tolist() == [1.0, 0.0, 0.0]   # C, I, I
    assert sonnet.scores.score.tolist() == [1.0] * 5
    summ = qwen.summaries.set_index("metric").loc["choice"]
    assert summ.value == pytest.approx(1 / 3) and summ.stderr == pytest.approx(1 / 3)
    assert qwen.tasks.n_choices.tolist() == [4]
    assert set(qwen.scores.item_id) < set(sonnet.scores.item_id)


def test_json_log_v1_unconvertible_value_is_skipped_not_zero(ins: Path) -> None:
    run = one(ins / V1)
    assert run.scores.empty            # "G:50.0 : T:100.0" is not a number
    assert any("could not be converted" in w for w in run.warnings)
    summ = run.summaries.set_index("metric")
    assert summ.loc["fact_comparator_scorer:groundedness", "value"] == 50.0
    assert detect_format(V1, (ins / V1).read_bytes()) == inspect_log.JSON_LOG


@pytest.mark.parametrize("value, expected", [
    ("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), ("yes", 1.0), ("No", 0.0), (True, 1.0),
    (False, 0.0), ("0.25", 0.25), (3, 3.0)])
def test_value_to_float_like_inspect(value, expected) -> None:
    assert inspect_log.value_to_float(value) == expected


def _eval_zip(samples: list[dict], header: dict | None = None) -> bytes:
    header = header or {"version": 2, "status": "success",
                        "eval": {"task": "t", "model": "m", "config": {"epochs": 1},
                                 "packages": {"inspect_ai": "0.3.99"}, "eval_id": "E", "task_id": "T"},
                        "plan": {"steps": []}}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({k: header[k] for k in ("version", "eval", "plan")}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s.get('epoch', 1)}.json", json.dumps(s))
        z.writestr("header.json", json.dumps(header))
    return buf.getvalue()


def test_dict_scores_several_scorers_and_unconvertible_values() -> None:
    samples = [{"id": i, "epoch": 1, "input": f"q{i}", "target": "a",
                "metadata": {"subject": "s" + str(i % 2)},
                "scores": {"judge": {"value": {"strict": "C" if i else "I", "loose": "C"}},
                           "match": {"value": "maybe" if i == 2 else "C"}}}
               for i in range(4)]
    run = parse_uploads([("x.eval", _eval_zip(samples))])[0]
    counts = run.scores.groupby("metric").size().to_dict()
    assert counts == {"judge/strict": 4, "judge/loose": 4, "match": 3}
    assert run.scores.set_index(["metric", "item_id"]).loc[("judge/strict", "0"), "score"] == 0.0
    assert any("'match'" in w and "could not be converted" in w for w in run.warnings)
    assert run.protocol["cluster_key"] is None and run.protocol["cluster_key_offered"] == "subject"


def test_in_progress_log_without_header() -> None:
    samples = [{"id": 1, "epoch": 1, "input": "q", "target": "a", "scores": {"m": {"value": 1}}}]
    data = _eval_zip(samples)
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if info.filename != "header.json":
                dst.writestr(info, src.read(info))
    run = parse_uploads([("running.eval", buf.getvalue())])[0]
    assert run.scores.score.tolist() == [1.0] and run.protocol["status"] == "started"
    assert any("still being written" in w for w in run.warnings)


# --- logs trimmed after inspect wrote them ------------------------------------------------

@pytest.mark.parametrize("name,kept,samples,epochs", [
    ("data_intercode_ctf_local_path.json", 1, 79, 1),
    ("data_cyse2_vuln_exploit_challenges.json", 1, 585, 4)])
def test_trimmed_log_is_named_and_its_summary_keeps_the_results_n(wild_dir, name, kept, samples,
                                                                  epochs):
    """The expected counts are read from the file here: results.total_samples / epochs, and
    the samples it holds (every_eval_ever keeps one sample of each)."""
    path = wild_dir / "inspect" / name
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["results"]["total_samples"] // raw["eval"]["config"]["epochs"] == samples
    assert len({s["id"] for s in raw["samples"]}) == kept
    run = one(path)
    epochs_text = f" ({epochs} epochs each)" if epochs > 1 else ""
    assert any(f"trimmed upstream: the log holds {kept} of {samples} samples{epochs_text}" in w
               for w in run.warnings), run.warnings
    assert run.protocol["trimmed_upstream"] == {"samples_in_log": kept, "samples": samples}
    assert run.scores["item_id"].nunique() == kept
    central = run.summaries[~run.summaries["metric"].str.contains(":")].iloc[0]
    assert central["n"] == samples                  # the reported value's n, not the 1 kept


def test_complete_log_is_not_called_trimmed(ins: Path) -> None:
    run = one(ins / "log_streaming.eval")            # 2 samples x 2 epochs, total_samples 4
    assert not any("trimmed" in w for w in run.warnings)
    assert "trimmed_upstream" not in run.protocol
    assert run.summaries.set_index("metric").loc["match", "n"] == 2


def test_audit_reports_the_reported_n_and_the_items_kept(wild_dir, tmp_path) -> None:
    import subprocess
    import sys

    from evalcore.store import Store
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([wild_dir / "inspect" / "data_intercode_ctf_local_path.json"]))
    store.close()
    out = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "s"),
                          "audit", "--format", "json"], capture_output=True, text=True,
                         check=True, timeout=300)
    row = json.loads(out.stdout)["audit"][0]
    assert row["metric"] == "includes" and row["reported"] == 0.35443037974683544
    assert row["n_reported"] == 79 and row["n_items"] == 1
    assert row["note"] == ("trimmed upstream: the item scores cover 1 of the 79 items of the "
                           "reported value")
    assert "n mismatch" in row["flag"]
