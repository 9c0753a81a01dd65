"""evalcore.ingest.lighteval on the layouts lighteval writes that the wild corpus lacks: the
Open LLM Leaderboard v1 keys (``harness|<task>|<k>``, string ``config_tasks``, hyphenated
request counts), two keys with one task name, bad input. The real files are tested in
tests/wild/test_lighteval_wild.py."""

from __future__ import annotations

import json
import math

import pytest

from evalcore.errors import IngestError
from evalcore.ingest import detect_format, parse_uploads, read_uploads
from evalcore.ingest.lighteval import split_key
from evalcore.metrics import harness_higher_is_better, harness_primary_metric

# The Open LLM Leaderboard v1 layout: the values of harness|arc:challenge|25 and
# harness|truthfulqa:mc|0 are the ones printed in the model card of
# HenryJJ/Instruct_Mistral-7B-v0.1_Dolly15K (run 2024-01-04T13:27:32.660899); the other
# fields follow the leaderboard's files (config_tasks values are strings, the request counts
# are hyphenated, summary_tasks counts requests: 4687 for ARC's 1172 questions).
OLL_V1 = {
    "config_general": {
        "lighteval_sha": "0f318ecf002208468154899217b3ba7c6ae09374",
        "num_few_shot_default": 0, "num_fewshot_seeds": 1, "override_batch_size": 1,
        "max_samples": None, "job_id": "", "start_time": 1.0, "end_time": 2.0,
        "total_evaluation_time_secondes": "1.0",
        "model_name": "HenryJJ/Instruct_Mistral-7B-v0.1_Dolly15K",
        "model_sha": "abc", "model_dtype": "torch.bfloat16", "model_size": "13.99 GB",
    },
    "results": {
        "harness|arc:challenge|25": {
            "acc": 0.5571672354948806, "acc_stderr": 0.014515573873348906,
            "acc_norm": 0.5938566552901023, "acc_norm_stderr": 0.014351656690097862},
        "harness|hendrycksTest-abstract_algebra|5": {
            "acc": 0.31, "acc_stderr": 0.04648231987117316,
            "acc_norm": 0.31, "acc_norm_stderr": 0.04648231987117316},
        "harness|truthfulqa:mc|0": {
            "mc1": 0.2802937576499388, "mc1_stderr": 0.015723139524608767,
            "mc2": 0.435601924823795, "mc2_stderr": 0.014179199089974604},
        "all": {"acc": 0.6241143484289186, "acc_stderr": 0.032689663124831826},
    },
    "versions": {"all": 0, "harness|arc:challenge|25": 0,
                 "harness|hendrycksTest-abstract_algebra|5": 1, "harness|truthfulqa:mc|0": 1},
    "config_tasks": {"harness|arc:challenge": "LM Harness task",
                     "harness|hendrycksTest-abstract_algebra": "LM Harness task",
                     "harness|truthfulqa:mc": "LM Harness task"},
    "summary_tasks": {
        "harness|arc:challenge|25": {
            "hashes": {"hash_examples": "17b0cae357c0259e", "hash_full_prompts": "045cbb916e5145c6",
                       "hash_input_tokens": "x", "hash_cont_tokens": "y"},
            "truncated": 0, "non-truncated": 4687, "padded": 4687, "non-padded": 0,
            "effective_few_shots": 25.0, "num_truncated_few_shots": 0},
    },
    "summary_general": {},
}


def _bytes(obj) -> bytes:
    return json.dumps(obj, indent=4).encode()


def test_split_key():
    # lighteval >= 0.13 drops the suite: <task>|<k> (v0.13.0 tasks/registry.py,
    # _update_task_configs: config.full_name = f"{expanded_task}|{config.num_fewshots}")
    assert split_key("anli:r1|0") == (None, "anli:r1", 0)
    assert split_key("lighteval|anli:r1|0") == ("lighteval", "anli:r1", 0)
    assert split_key("gsm8k|5") == (None, "gsm8k", 5)
    assert split_key("harness|arc:challenge|25") == ("harness", "arc:challenge", 25)
    assert split_key("leaderboard|mmlu:anatomy|5") == ("leaderboard", "mmlu:anatomy", 5)
    assert split_key("lighteval|aime24") == ("lighteval", "aime24", None)
    assert split_key("custom_task") == (None, "custom_task", None)


def test_detected_by_content_not_taken_for_lm_eval():
    data = _bytes(OLL_V1)
    assert detect_format("results_2024-01-04T13-27-32.660899.json", data) == "lighteval_results"
    assert detect_format("x.json", data[:200]) == "lighteval_results"      # head only
    compact = json.dumps(OLL_V1).encode()                                  # one line
    assert detect_format("x.json", compact) == "lighteval_results"


def test_open_llm_leaderboard_v1_layout():
    run = parse_uploads([("results_2024-01-04T13-27-32.660899.json", _bytes(OLL_V1))])[0]
    assert run.model == "HenryJJ/Instruct_Mistral-7B-v0.1_Dolly15K"
    assert run.harness == "lighteval"
    assert run.harness_version == "git 0f318ecf002208468154899217b3ba7c6ae09374"
    assert "start_time" not in run.protocol and "job_id" not in run.protocol
    s = run.summaries.set_index(["task", "metric"])
    assert set(run.summaries["task"]) == {"arc:challenge", "hendrycksTest-abstract_algebra",
                                         "truthfulqa:mc"}
    assert s.loc[("arc:challenge", "acc_norm"), "value"] == 0.5938566552901023
    assert s.loc[("arc:challenge", "acc_norm"), "stderr"] == 0.014351656690097862
    assert s.loc[("truthfulqa:mc", "mc2"), "stderr"] == 0.014179199089974604
    assert not run.summaries["is_group"].any()
    # the request counts (4687) are not item counts; the file has no document count
    assert run.summaries["n"].isna().all()
    assert any("results.all not stored" in w for w in run.warnings)
    protos = dict(zip(run.tasks["task"], run.tasks["protocol"]))
    arc = protos["arc:challenge"]
    assert arc["num_fewshot"] == 25 and arc["suite"] == "harness"
    assert arc["effective_few_shots"] == 25.0
    assert arc["hash_full_prompts"] == "045cbb916e5145c6" and "hash_input_tokens" not in arc
    # the metric the leaderboard ranked on
    assert harness_primary_metric(arc, ["acc", "acc_norm"]) == "acc_norm"
    assert harness_primary_metric(protos["truthfulqa:mc"], ["mc1", "mc2"]) == "mc2"
    assert harness_primary_metric(protos["hendrycksTest-abstract_algebra"],
                                  ["acc", "acc_norm"]) == "acc"


def test_same_task_name_twice_keeps_both_keys():
    obj = {"config_general": {"model_name": "m"},
           "results": {"leaderboard|gsm8k|5": {"qem": 0.5, "qem_stderr": 0.01},
                       "lighteval|gsm8k|0": {"qem": 0.4, "qem_stderr": 0.02},
                       "lighteval|aime24|0": {"qem": 0.1}}}
    run = parse_uploads([("results_x.json", _bytes(obj))])[0]
    assert set(run.summaries["task"]) == {"leaderboard|gsm8k|5", "lighteval|gsm8k|0", "aime24"}
    aime = run.summaries[run.summaries["task"] == "aime24"].iloc[0]
    assert aime["value"] == 0.1 and math.isnan(aime["stderr"])


def test_metric_directions_from_config_tasks():
    obj = {"config_general": {"model_name": "m"},
           "results": {"custom|ppl_task|0": {"ppl": 12.5}},
           "config_tasks": {"custom|ppl_task|0": {
               "metrics": [{"metric_name": "ppl", "higher_is_better": False}],
               "effective_num_docs": 40, "original_num_docs": -1}}}
    run = parse_uploads([("r.json", _bytes(obj))])[0]
    proto = run.tasks.iloc[0]["protocol"]
    assert harness_higher_is_better(proto, "ppl") is False
    assert "original_num_docs" not in proto           # -1: not recorded
    assert run.summaries.iloc[0]["n"] == 40


def test_nan_value_is_kept_missing_with_a_warning():
    text = _bytes(OLL_V1).replace(b"0.31,", b"NaN,", 1)
    run = parse_uploads([("r.json", text)])[0]
    row = run.summaries.set_index(["task", "metric"]).loc[("hendrycksTest-abstract_algebra", "acc")]
    assert math.isnan(row["value"])
    assert any("hendrycksTest-abstract_algebra" in w and "NaN" in w for w in run.warnings)


@pytest.mark.parametrize("mutate,where", [
    (lambda o: o["results"].__setitem__("harness|arc:challenge|25", [0.5]),
     "results.harness|arc:challenge|25"),
    (lambda o: o.__setitem__("summary_tasks", ["x"]), "summary_tasks"),
])
def test_bad_layout_names_the_place(mutate, where):
    obj = json.loads(json.dumps(OLL_V1))
    mutate(obj)
    with pytest.raises(IngestError) as ei:
        parse_uploads([("r.json", _bytes(obj))])
    assert ei.value.where == where and ei.value.file == "r.json"


def test_infinite_value_is_refused_and_the_batch_goes_on():
    bad = _bytes(OLL_V1).replace(b"0.31,", b"Infinity,", 1)
    batch = read_uploads([("bad.json", bad), ("good.json", _bytes(OLL_V1))])
    assert len(batch.runs) == 1 and batch.runs[0].files[0].name == "good.json"
    assert [p.file for p in batch.problems] == ["bad.json"]
    assert "hendrycksTest-abstract_algebra" in batch.problems[0].where


def test_values_all_unusable_is_no_scores():
    obj = {"config_general": {"model_name": "m"},
           "results": {"lighteval|x|0": {"acc": "n/a"}}}
    batch = read_uploads([("r.json", _bytes(obj))])
    assert not batch.runs and len(batch.no_scores) == 1


def test_open_llm_leaderboard_v2_layout_is_lm_eval():
    """Open LLM Leaderboard v2 files are lm_eval 0.4 results (no ``config_general``): they go
    to the lm_eval reader, with the ``leaderboard`` groups as groups and the function reprs
    of the task configs kept in the protocol (their addresses are normalised by the diff)."""
    obj = {
        "results": {
            "leaderboard": {"acc_norm,none": 0.45, "acc_norm_stderr,none": 0.005,
                            "alias": "leaderboard"},
            "leaderboard_bbh": {"acc_norm,none": 0.5, "acc_norm_stderr,none": 0.006,
                                "alias": " - leaderboard_bbh"},
            "leaderboard_bbh_navigate": {"acc_norm,none": 0.6, "acc_norm_stderr,none": 0.031,
                                         "alias": "  - leaderboard_bbh_navigate"},
            "leaderboard_bbh_snarks": {"acc_norm,none": 0.55, "acc_norm_stderr,none": 0.037,
                                       "alias": "  - leaderboard_bbh_snarks"},
            "leaderboard_musr_murder_mysteries": {"acc_norm,none": 0.52,
                                                  "acc_norm_stderr,none": 0.031},
        },
        "group_subtasks": {"leaderboard_bbh": ["leaderboard_bbh_navigate", "leaderboard_bbh_snarks"],
                           "leaderboard": ["leaderboard_bbh", "leaderboard_musr_murder_mysteries"]},
        "configs": {"leaderboard_bbh_navigate": {
            "task": "leaderboard_bbh_navigate", "num_fewshot": 3,
            "fewshot_config": {"sampler": "first_n",
                               "samples": "<function list_fewshot_samples at 0x7f3e09ad45e0>"}}},
        "versions": {"leaderboard_bbh_navigate": 0.0},
        "n-shot": {"leaderboard_bbh_navigate": 3},
        "n-samples": {"leaderboard_bbh_navigate": {"original": 250, "effective": 250}},
        "config": {"model": "hf", "model_args": "pretrained=org/model"},
        "model_name": "org/model",
    }
    data = _bytes(obj)
    assert detect_format("results_2024-06-26T10-00-00.000000.json", data) == "lm_eval_results"
    run = parse_uploads([("results_2024-06-26T10-00-00.000000.json", data)])[0]
    assert run.source_format == "lm_eval" and run.model == "org/model"
    s = run.summaries.set_index("task")
    assert s.loc["leaderboard_bbh", "is_group"] and s.loc["leaderboard", "is_group"]
    assert not s.loc["leaderboard_bbh_navigate", "is_group"]
    assert s.loc["leaderboard_bbh_navigate", "n"] == 250
    proto = dict(zip(run.tasks["task"], run.tasks["protocol"]))["leaderboard_bbh_navigate"]
    assert proto["num_fewshot"] == 3


def test_details_without_their_results_file_are_skipped_not_bad_input(tmp_path):
    """A details file whose results file was not given is listed as skipped (not read),
    never reported as a bad tidy table; the other run is read."""
    res = tmp_path / "results" / "org" / "results_2024-01-04T13-27-32.660899.json"
    other = tmp_path / "details" / "org" / "x" / "details_harness|gsm8k|5_2024-02-01T00-00-00.0.parquet"
    for p in (res, other):
        p.parent.mkdir(parents=True, exist_ok=True)
    res.write_bytes(_bytes(OLL_V1))
    other.write_bytes(b"PAR1" + b"\0" * 64)      # recognised by name, never opened
    from evalcore.ingest import read_paths
    batch = read_paths([tmp_path])
    assert not batch.problems and len(batch.runs) == 1
    assert any("details_harness|gsm8k|5" in s and "not read" in s for s in batch.skipped)


def _v2_details(path, rows):
    """A details file in lighteval >= 0.10's layout (doc / metric / model_response)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(rows), path)


def _v2_row(doc_id, query, gold, acc, text="B"):
    return {"doc": {"id": doc_id, "query": query, "choices": ["A", "B"], "gold_index": gold},
            "metric": {"acc": acc}, "model_response": {"text": [text]}}


def test_details_v2_layout_ids_targets_and_bad_values(tmp_path):
    ts = "2025-12-12T15-11-59.471879"
    obj = {"config_general": {"model_name": "m"},
           "results": {"community|quiz|0": {"acc": 0.5, "acc_stderr": 0.5, "em": 1.0}},
           "config_tasks": {"community|quiz|0": {"effective_num_docs": 2}}}
    (tmp_path / f"results_{ts}.json").write_bytes(_bytes(obj))
    rows = [_v2_row("q1", "one?", 1, 1.0), _v2_row("q2", "two?", 0, 0.0)]
    rows[0]["metric"]["em"], rows[1]["metric"]["em"] = 1.0, float("nan")
    _v2_details(tmp_path / f"details_community|quiz|0_{ts}.parquet", rows)
    run = parse_uploads([(p.name, p.read_bytes()) for p in tmp_path.iterdir()])[0]
    acc = run.scores[run.scores["metric"] == "acc"].set_index("item_id")["score"]
    assert acc.to_dict() == {"q1": 1.0, "q2": 0.0}
    assert "em" not in set(run.scores["metric"])              # a NaN item: no item scores
    assert any("'em'" in w and "not a finite number" in w for w in run.warnings)
    texts = run.texts.set_index("item_id")
    assert texts.loc["q1", "target"] == "B" and texts.loc["q2", "target"] == "A"
    assert texts.loc["q1", "response"] == "B" and texts.loc["q1", "prompt"] == "one?"


def test_details_repeated_ids_fall_back_to_the_question_text(tmp_path):
    ts = "2025-12-12T15-11-59.471879"
    obj = {"config_general": {"model_name": "m"},
           "results": {"community|quiz|0": {"acc": 0.5}}}
    (tmp_path / f"results_{ts}.json").write_bytes(_bytes(obj))
    _v2_details(tmp_path / f"details_community|quiz|0_{ts}.parquet",
                [_v2_row("", "one?", 1, 1.0), _v2_row("", "two?", 0, 0.0)])
    run = parse_uploads([(p.name, p.read_bytes()) for p in tmp_path.iterdir()])[0]
    ids = set(run.scores["item_id"])
    assert len(ids) == 2 and all(len(i) == 16 for i in ids)   # sha256 prefixes of the query


def test_broken_details_file_holds_back_its_run(tmp_path):
    ts = "2025-12-12T15-11-59.471879"
    (tmp_path / f"results_{ts}.json").write_bytes(_bytes(OLL_V1))
    (tmp_path / f"details_harness|arc:challenge|25_{ts}.parquet").write_bytes(b"PAR1 broken")
    batch = read_uploads([(p.name, p.read_bytes()) for p in tmp_path.iterdir()])
    assert not batch.runs
    files = {p.file for p in batch.problems}
    assert files == {f"details_harness|arc:challenge|25_{ts}.parquet", f"results_{ts}.json"}


# --- lighteval >= 0.13 keys (<task>|<k>) pair with older runs (<suite>|<task>|<k>) ----------

def _gpqa_zip_members(wild_dir) -> dict[str, bytes]:
    import zipfile
    path = (wild_dir / "lighteval" / "open-r1_olmo"
            / "OLMo-2-1124-7B-Instruct_SFTv02.00_gpqa-diamond.zip")
    with zipfile.ZipFile(path) as z:
        return {n.rsplit("/", 1)[1]: z.read(n) for n in z.namelist()}


def _rekey_to_0_13(obj: dict, old: str, new: str) -> dict:
    """The results object as lighteval >= 0.13 keys it: results, versions and summary_tasks
    under ``<task>|<k>``, and config_tasks under the same full name (its TaskConfigLogger
    keys configs by the task's full_name)."""
    out = json.loads(json.dumps(obj))
    for section in ("results", "versions", "summary_tasks"):
        out[section] = {new if k == old else k: v for k, v in out[section].items()}
    out["config_tasks"] = {new: v for v in out["config_tasks"].values()}
    return out


def test_task_names_of_lighteval_0_13_pair_with_older_runs(wild_dir, tmp_path):
    """Two real runs of gpqa:diamond (wild zip, written as lighteval|gpqa:diamond|0); one of
    them re-keyed to the 0.13 layout (gpqa:diamond|0, its details file renamed alike, the
    values untouched). Both get the task gpqa:diamond, 0-shot in the protocol, and the
    paired comparison finds the 198 shared questions and the printed difference."""
    from evalcore.analysis import compare
    from evalcore.store import Store
    members = _gpqa_zip_members(wild_dir)
    old_ts, new_ts = "2025-05-13T16-20-44.021299", "2025-05-13T16-25-16.698233"
    newer = _rekey_to_0_13(json.loads(members[f"results_{new_ts}.json"]),
                           "lighteval|gpqa:diamond|0", "gpqa:diamond|0")
    assert "gpqa:diamond|0" in newer["results"] and "gpqa:diamond|0" in newer["config_tasks"]
    uploads = [(f"results_{old_ts}.json", members[f"results_{old_ts}.json"]),
               (f"details_lighteval|gpqa:diamond|0_{old_ts}.parquet",
                members[f"details_lighteval|gpqa:diamond|0_{old_ts}.parquet"]),
               (f"results_{new_ts}.json", _bytes(newer)),
               (f"details_gpqa:diamond|0_{new_ts}.parquet",
                members[f"details_lighteval|gpqa:diamond|0_{new_ts}.parquet"])]
    runs = parse_uploads(uploads)
    assert len(runs) == 2
    for run in runs:
        assert set(run.summaries["task"]) == {"gpqa:diamond"}
        assert set(run.scores["task"]) == {"gpqa:diamond"}
        assert run.scores["item_id"].nunique() == 198
        proto = run.tasks.set_index("task").loc["gpqa:diamond", "protocol"]
        assert proto["num_fewshot"] == 0
        assert proto["task_key"] in ("lighteval|gpqa:diamond|0", "gpqa:diamond|0")
        assert run.summaries["n"].eq(198).all()
    store = Store(tmp_path / "s")
    store.ingest(runs)
    a, b = sorted(int(r) for r in store.runs()["run_id"])
    row = compare(store, a, b, task="gpqa:diamond", metric="gpqa_pass@1:1_samples").per_task.iloc[0]
    assert row["n"] == 198
    assert math.isclose(abs(row["diff"]), 0.26262626262626265 - 0.24242424242424243, rel_tol=1e-9)
