"""HELM output as HELM writes it: run folders, zips, suites, benchmark_output trees.

The real run folder (mmlu philosophy, gpt2) is read from the shared fixtures (numbers pinned in
their PROVENANCE.md). Files HELM's summarizer adds beside it (display copies, suite files)
and the red-team, train-trial and perturbation cases are built here in HELM's own shapes
(field names and order of HELM's dataclasses); each builder says what it stands for.
"""

from __future__ import annotations

import json
import logging
import shutil
import zipfile
from pathlib import Path

import pytest

from evalcore.errors import IngestError
from evalcore.ingest import detect_format, helm, parse_paths, parse_uploads, read_paths

RUN = "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
TASK = "mmlu:subject=philosophy,method=multiple_choice_joint"
WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "helm"
SUITE = WILD / "benchmark_output" / "runs" / "evalbars"
NQA = SUITE / "narrative_qa-model=openai_gpt2"
HELLASWAG = next(SUITE.glob("commonsense-dataset=hellaswag*"))


@pytest.fixture(scope="module")
def run_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "helm" / RUN


def check_run(run) -> None:
    assert run.name == "openai/gpt2" and run.source_format == "helm"
    em = run.scores[run.scores.metric == "exact_match"]
    assert len(em) == 10                                   # 9 test + 1 valid instances
    test = em[em.task == TASK]
    assert len(test) == 9
    assert test.loc[test.score == 1.0, "item_id"].tolist() == ["id222"]   # only id222 right
    assert set(test["answer_idx"]) == {0}                  # train trial 0
    valid = em[em.task == TASK + "@valid"]
    assert valid.item_id.tolist() == ["id11"] and valid.score.tolist() == [0.0]
    summ = run.summaries.set_index(["task", "metric"])
    assert summ.loc[(TASK, "exact_match"), "value"] == pytest.approx(0.1111111111111111)
    assert summ.loc[(TASK, "exact_match"), "n"] == 9       # not stats.json's count (1)
    tasks = run.tasks.set_index("task")
    assert tasks.loc[TASK, "n_choices"] == 4
    proto = tasks.loc[TASK, "protocol"]
    assert proto["adapter_spec"]["max_train_instances"] == 5
    assert proto["primary_metric"] == "exact_match" and proto["main_split"] == "test"
    assert proto["higher_is_better"]["exact_match"] is True
    t = run.texts.set_index("item_id").loc["id147"]
    assert t.target == "C. internalmeaning" and t.response == "D. meaning in an afterlife"
    assert {f.format for f in run.files} >= {helm.PER_INSTANCE, helm.RUN_SPEC, helm.STATS}
    # every metric with per-instance values is kept; bookkeeping stats are not
    assert set(run.scores["metric"]) == {
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match",
        "exact_match@5", "quasi_exact_match@5", "prefix_exact_match@5",
        "quasi_prefix_exact_match@5"}
    assert run.warnings == []


# ---------------------------------------------------------------------------------------
# files HELM's summarizer writes beside a run (helm-summarize: run_display.py, summarize.py)
# ---------------------------------------------------------------------------------------
def add_display_files(run_dir: Path, out: Path) -> None:
    """instances.json, display_predictions.json, display_requests.json in the shape of
    HELM's Instance / DisplayPrediction / DisplayRequest, from the run's own files."""
    state = json.loads((run_dir / "scenario_state.json").read_text())
    pis = {p["instance_id"]: p for p in json.loads((run_dir / "per_instance_stats.json").read_text())}
    insts, preds, reqs = [], [], []
    for rs in state["request_states"]:
        inst = rs["instance"]
        insts.append(inst)
        stats = {s["name"]["name"]: s["mean"] for s in pis[inst["id"]]["stats"]
                 if s["name"]["name"] in ("exact_match", "num_prompt_tokens")}
        text = rs["result"]["completions"][0]["text"]
        preds.append({"instance_id": inst["id"], "train_trial_index": rs["train_trial_index"],
                      "predicted_text": text, "base64_images": [],
                      "mapped_output": rs.get("output_mapping", {}).get(text.strip()),
                      "stats": stats})
        reqs.append({"instance_id": inst["id"], "train_trial_index": rs["train_trial_index"],
                     "request": rs["request"]})
    for name, obj in (("instances.json", insts), ("display_predictions.json", preds),
                      ("display_requests.json", reqs)):
        (out / name).write_text(json.dumps(obj, indent=2))


def suite_files(suite: Path, schema_main: str = "exact_match") -> None:
    """A helm-summarize suite folder's files (shapes of summarize.py's outputs)."""
    (suite / "schema.json").write_text(json.dumps({
        "metrics": [{"name": "exact_match", "display_name": "EM", "lower_is_better": False},
                    {"name": "quasi_exact_match", "display_name": "EM", "lower_is_better": False}],
        "perturbations": [], "metric_groups": [{"name": "accuracy", "metrics": [
            {"name": "${main_name}", "split": "${main_split}"}]}],
        "run_groups": [{"name": "mmlu", "display_name": "MMLU", "metric_groups": ["accuracy"],
                        "environment": {"main_name": schema_main, "main_split": "test"}}],
        "models": []}, indent=2))
    (suite / "summary.json").write_text(json.dumps(
        {"suites": ["v1"], "suite": "v1", "date": "2024-01-01"}, indent=2))
    (suite / "costs.json").write_text(json.dumps(
        {"huggingface/gpt2": {"num_prompt_tokens": 10, "num_completion_tokens": 2,
                              "total_tokens": 12}}, indent=2))
    (suite / "runs_to_run_suites.json").write_text(json.dumps({RUN: "v1"}, indent=2))
    (suite / "groups_metadata.json").write_text(json.dumps(
        {"mmlu": {"display_name": "MMLU", "description": "d", "taxonomy": None}}, indent=2))
    (suite / "groups.json").write_text(json.dumps(
        [{"title": "All scenarios", "header": [{"value": "Group"}], "rows": [], "links": []}],
        indent=2))
    (suite / "groups" / "json").mkdir(parents=True)
    (suite / "groups" / "latex").mkdir()
    (suite / "groups" / "mmlu.json").write_text(json.dumps(
        [{"title": "Accuracy", "header": [], "rows": [], "links": []}], indent=2))
    (suite / "groups" / "latex" / "mmlu_accuracy.tex").write_text("\\begin{table}\n")
    (suite / "runs.json").write_text(json.dumps([{"run_spec": {"name": RUN}, "stats": []}], indent=2))
    (suite / "run_specs.json").write_text(json.dumps(
        [json.loads((suite / RUN / "run_spec.json").read_text())], indent=2))


def full_run_dir(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    add_display_files(run_dir, dest)
    return dest


# ---------------------------------------------------------------------------------------
# one run folder: directory, zip, uploads
# ---------------------------------------------------------------------------------------
def test_helm_run_directory(run_dir: Path) -> None:
    runs = parse_paths([run_dir])
    assert len(runs) == 1
    check_run(runs[0])


def test_run_folder_with_every_file_helm_writes(run_dir: Path, tmp_path: Path, caplog) -> None:
    d = full_run_dir(run_dir, tmp_path / RUN)
    with caplog.at_level(logging.DEBUG, logger="evalcore.ingest"):
        runs = parse_paths([d])
    assert len(runs) == 1
    check_run(runs[0])
    logged = caplog.text
    for name in ("display_requests.json", "display_predictions.json", "instances.json",
                 "scenario.json"):
        assert name in logged                                # named at debug level
    assert {f.name.rsplit("/", 1)[-1] for f in runs[0].files} == {
        "run_spec.json", "per_instance_stats.json", "stats.json", "scenario_state.json"}


def test_helm_zip_of_full_run_directory(run_dir: Path, tmp_path: Path) -> None:
    """The issue: display_predictions.json was taken for a second per_instance_stats.json."""
    d = full_run_dir(run_dir, tmp_path / RUN)
    archive = tmp_path / "helm_run.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(d.iterdir()):
            z.write(f, f"{RUN}/{f.name}")
    runs = parse_paths([archive])
    assert len(runs) == 1
    check_run(runs[0])
    assert all("helm_run.zip!" in f.name for f in runs[0].files)


def test_helm_uploaded_files(run_dir: Path, tmp_path: Path) -> None:
    d = full_run_dir(run_dir, tmp_path / RUN)
    runs = parse_uploads([(f.name, f.read_bytes()) for f in sorted(d.iterdir())])
    assert len(runs) == 1
    check_run(runs[0])


def test_detects_every_helm_file(run_dir: Path, tmp_path: Path) -> None:
    d = full_run_dir(run_dir, tmp_path / "v1" / RUN)
    suite_files(tmp_path / "v1")
    expected = {
        "per_instance_stats.json": helm.PER_INSTANCE, "run_spec.json": helm.RUN_SPEC,
        "stats.json": helm.STATS, "scenario_state.json": helm.SCENARIO_STATE,
        "scenario.json": helm.SCENARIO, "instances.json": helm.INSTANCES,
        "display_predictions.json": helm.DISPLAY_PREDICTIONS,
        "display_requests.json": helm.DISPLAY_REQUESTS,
    }
    for name, fmt in expected.items():
        assert detect_format(name, (d / name).read_bytes()[:65536]) == fmt, name
    for name in ("schema.json", "summary.json", "costs.json", "groups_metadata.json",
                 "groups.json", "runs.json", "run_specs.json", "runs_to_run_suites.json"):
        obj = json.loads((tmp_path / "v1" / name).read_text())
        assert helm.classify_obj(obj, name) == (helm.SCHEMA if name == "schema.json"
                                                else helm.SUITE_FILE), name
    assert helm.classify_obj([], "display_predictions.json") == helm.DISPLAY_PREDICTIONS
    assert helm.classify_obj([], "notes.json") is None


# ---------------------------------------------------------------------------------------
# suites and benchmark_output trees
# ---------------------------------------------------------------------------------------
def test_suite_folder_one_run_per_model(run_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "benchmark_output" / "runs" / "v1"
    full_run_dir(run_dir, suite / RUN)
    shutil.copytree(NQA, suite / NQA.name)                 # openai/gpt2 too
    shutil.copytree(HELLASWAG, suite / HELLASWAG.name)     # eleutherai/pythia-1b-v0
    suite_files(suite)
    runs = {r.name: r for r in parse_paths([suite])}
    assert set(runs) == {"openai/gpt2", "eleutherai/pythia-1b-v0"}
    gpt2 = runs["openai/gpt2"]
    assert set(gpt2.tasks["task"]) == {TASK, TASK + "@valid", "narrative_qa", "narrative_qa@valid"}
    assert gpt2.protocol["suite"] == "v1" and gpt2.protocol["model_deployment"] == "huggingface/gpt2"
    protos = gpt2.tasks.set_index("task")["protocol"]
    assert protos[TASK]["primary_metric_from"] == "suite schema.json, run group 'mmlu'"
    assert protos["narrative_qa"]["primary_metric"] == "f1_score"     # not in that schema
    assert not any(f.format == helm.SCHEMA for f in gpt2.files)   # shared, not the run's
    assert gpt2.warnings == []


def test_suite_schema_names_the_primary_metric(run_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "runs" / "v1"
    shutil.copytree(run_dir, suite / RUN)
    suite_files(suite, schema_main="quasi_exact_match")
    run = parse_paths([suite])[0]
    proto = run.tasks.set_index("task").loc[TASK, "protocol"]
    assert proto["primary_metric"] == "quasi_exact_match"
    assert proto["primary_metric_from"] == "suite schema.json, run group 'mmlu'"


def test_whole_benchmark_output_tree(run_dir: Path, tmp_path: Path, caplog) -> None:
    out = tmp_path / "benchmark_output"
    full_run_dir(run_dir, out / "runs" / "v1" / RUN)
    suite_files(out / "runs" / "v1")
    shutil.copytree(NQA, out / "runs" / "v2" / NQA.name)
    (out / "runs" / "v1" / "eval_cache").mkdir()
    (out / "runs" / "v1" / "eval_cache" / "cache.sqlite").write_bytes(b"SQLite format 3\x00")
    raw = out / "scenarios" / "mmlu" / "data" / "test"
    raw.mkdir(parents=True)
    (raw / "philosophy_test.csv").write_text("question,A,B,C,D,answer\nq,a,b,c,d,A\n")
    (out / "scenarios" / "mmlu" / "data" / "notes.json").write_text('{"x": 1}')
    inst = out / "scenario_instances" / "mmlu:subject=philosophy"
    inst.mkdir(parents=True)
    (inst / "input_instances.json").write_text('[{"input": {"text": "q"}, "references": []}]')
    with caplog.at_level(logging.DEBUG, logger="evalcore.ingest"):
        runs = parse_paths([out])
    assert sorted((r.name, r.protocol["suite"]) for r in runs) == [
        ("openai/gpt2", "v1"), ("openai/gpt2", "v2")]
    assert all(r.warnings == [] for r in runs)             # nothing skipped noisily
    assert "philosophy_test.csv" in caplog.text and "mmlu_accuracy.tex" in caplog.text


# ---------------------------------------------------------------------------------------
# metrics, trials, perturbations (constructed in HELM's shapes)
# ---------------------------------------------------------------------------------------
def stat(name: str, value: float, split: str = "test", pert: dict | None = None,
         count: int = 1) -> dict:
    n = {"name": name, "split": split}
    if pert:
        n["perturbation"] = pert
    return {"name": n, "count": count, "sum": value * count, "sum_squared": value * value * count,
            "min": value, "max": value, "mean": value, "variance": 0.0, "stddev": 0.0}


def write_run(d: Path, name: str, groups: list[str], per_instance: list[dict],
              stats: list[dict], model: str = "openai/gpt-4o-2024-05-13",
              method: str = "generation") -> Path:
    d.mkdir(parents=True)
    (d / "run_spec.json").write_text(json.dumps({
        "name": name, "scenario_spec": {"class_name": "x", "args": {}},
        "adapter_spec": {"method": method, "model": model, "model_deployment": model,
                         "max_train_instances": 0, "num_train_trials": 1},
        "metric_specs": [{"class_name": "y", "args": {}}], "groups": groups}, indent=2))
    (d / "per_instance_stats.json").write_text(json.dumps(per_instance, indent=2))
    (d / "stats.json").write_text(json.dumps(stats, indent=2))
    return d


def test_red_team_metrics_are_kept(tmp_path: Path) -> None:
    """A safety run (anthropic_red_team): metric names on no default list are all kept, the
    primary metric is HELM's (safety_score), and bookkeeping stats are not metrics."""
    per = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [
        stat("safety_score", s), stat("safety_gpt_score", g), stat("safety_llama_score", s),
        stat("num_prompt_tokens", 40.0), stat("inference_runtime", 1.2)]}
        for i, (s, g) in enumerate([(1.0, 1.0), (0.5, 0.75), (1.0, 0.5)])]
    stats = [stat("safety_score", 2.5 / 3), stat("safety_gpt_score", 0.75),
             stat("safety_llama_score", 2.5 / 3), stat("num_prompt_tokens", 40.0)]
    d = write_run(tmp_path / "anthropic_red_team:model=openai_gpt-4o-2024-05-13",
                  "anthropic_red_team:model=openai_gpt-4o-2024-05-13", ["anthropic_red_team"],
                  per, stats)
    run = parse_paths([d])[0]
    assert set(run.scores["metric"]) == {"safety_score", "safety_gpt_score", "safety_llama_score"}
    assert len(run.scores) == 9
    proto = run.tasks.set_index("task").loc["anthropic_red_team", "protocol"]
    assert proto["primary_metric"] == "safety_score"
    assert proto["primary_metric_from"] == "HELM's published schemas, run group 'anthropic_red_team'"
    assert proto["higher_is_better"] == {"safety_score": True}     # HELM declares no other
    summ = run.summaries.set_index(["task", "metric"])
    assert summ.loc[("anthropic_red_team", "safety_gpt_score"), "value"] == 0.75
    assert run.warnings == []


def test_train_trials_are_answers_and_perturbations_are_tasks(tmp_path: Path) -> None:
    """Two train trials: answer_idx 0/1 of one item; HELM's mean is the mean of the trial
    means. A perturbed copy is its own task; worst-case aggregates are not stored."""
    typo = {"name": "typos", "robustness": True, "fairness": False, "prob": 0.1}
    per = []
    vals = {(0, "id1"): 1.0, (0, "id2"): 0.0, (1, "id1"): 1.0, (1, "id2"): 1.0}
    for (trial, iid), v in vals.items():
        per.append({"instance_id": iid, "train_trial_index": trial,
                    "stats": [stat("exact_match", v)]})
        per.append({"instance_id": iid, "perturbation": typo, "train_trial_index": trial,
                    "stats": [stat("exact_match", 0.0, pert=typo)]})
    worst = {"name": "robustness", "robustness": True, "fairness": False, "computed_on": "worst"}
    stats = [stat("exact_match", 0.75, count=2), stat("exact_match", 0.0, pert=typo, count=2),
             stat("exact_match", 0.0, pert=worst, count=2)]
    # a run group HELM's schemas do not know: main split "test" (the documented fallback)
    d = write_run(tmp_path / "boolq:model=m", "boolq:model=m", ["my_boolq"], per, stats, model="m")
    run = parse_paths([d])[0]
    em = run.scores.set_index(["task", "item_id", "answer_idx"])["score"]
    assert em[("boolq", "id2", 1)] == 1.0 and em[("boolq", "id2", 0)] == 0.0
    assert set(run.scores["task"]) == {"boolq", "boolq#typos(prob=0.1)"}
    summ = run.summaries.set_index(["task", "metric"])
    assert summ.loc[("boolq", "exact_match"), "value"] == 0.75
    assert summ.loc[("boolq", "exact_match"), "n"] == 2          # items, not item x trial
    assert summ.loc[("boolq#typos(prob=0.1)", "exact_match"), "value"] == 0.0
    assert len(run.summaries) == 2 and run.warnings == []


def test_main_split_from_helm_schema(tmp_path: Path) -> None:
    """boolq: HELM's main split is valid, so valid instances are the task, test ones @test."""
    per = [{"instance_id": "id1", "train_trial_index": 0,
            "stats": [stat("quasi_exact_match", 1.0, split="valid")]},
           {"instance_id": "id2", "train_trial_index": 0,
            "stats": [stat("quasi_exact_match", 0.0, split="test")]}]
    d = write_run(tmp_path / "r", "boolq:model=m", ["boolq"], per, [])
    run = parse_paths([d])[0]
    assert run.scores.set_index("task")["item_id"].to_dict() == {"boolq": "id1", "boolq@test": "id2"}
    assert run.tasks["protocol"].iloc[0]["main_split"] == "valid"


def test_stats_json_that_disagrees_is_named(tmp_path: Path) -> None:
    per = [{"instance_id": "id1", "train_trial_index": 0, "stats": [stat("exact_match", 1.0)]},
           {"instance_id": "id2", "train_trial_index": 0, "stats": [stat("exact_match", 0.0)]}]
    d = write_run(tmp_path / "r", "boolq:model=m", ["my_boolq"], per, [stat("exact_match", 0.9)])
    run = parse_paths([d])[0]
    assert run.summaries["value"].tolist() == [0.9]               # HELM's number, as written
    assert any("0.9 in stats.json" in w and "average to 0.5" in w for w in run.warnings)


def test_display_predictions_without_per_instance_stats(run_dir: Path, tmp_path: Path) -> None:
    """What people download from HELM's public results: run_spec.json, instances.json and
    display_predictions.json only. Scores come from the display copy, splits from instances."""
    d = tmp_path / RUN
    d.mkdir()
    shutil.copy(run_dir / "run_spec.json", d)
    add_display_files(run_dir, d)
    (d / "display_requests.json").unlink()
    run = parse_paths([d])[0]
    assert set(run.scores["metric"]) == {"exact_match"}           # num_prompt_tokens dropped
    em = run.scores
    assert len(em[em.task == TASK]) == 9 and em.loc[em.task == TASK, "score"].sum() == 1.0
    assert em.loc[em.task == TASK + "@valid", "item_id"].tolist() == ["id11"]
    assert any("display copy" in w for w in run.warnings)
    assert run.tasks.set_index("task").loc[TASK, "n_choices"] == 4      # references per instance


def test_all_bookkeeping_run_is_not_stored_and_others_are(run_dir: Path, tmp_path: Path) -> None:
    """A run folder whose stats are all bookkeeping or not computed holds no scores: it is
    reported (not merged into its model's run) and the suite's good run is still read."""
    suite = tmp_path / "runs" / "v1"
    shutil.copytree(run_dir, suite / RUN)
    per = [{"instance_id": "id1", "train_trial_index": 0,
            "stats": [stat("num_prompt_tokens", 3.0), stat("exact_match", 0.0, count=0)]}]
    write_run(suite / "boolq:model=openai_gpt2", "boolq:model=openai_gpt2", ["my_boolq"], per,
              [], model="openai/gpt2")
    batch = read_paths([suite])
    assert [r.name for r in batch.runs] == ["openai/gpt2"]
    assert set(batch.runs[0].tasks["task"]) == {TASK, TASK + "@valid"}
    [empty] = batch.no_scores
    assert "boolq:model=openai_gpt2" in empty.file and "every metric was skipped" in str(empty)


def test_bad_folder_does_not_block_the_suite(run_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "runs" / "v1"
    shutil.copytree(run_dir, suite / RUN)
    shutil.copytree(NQA, suite / NQA.name)
    (suite / NQA.name / "per_instance_stats.json").write_text('[{"instance_id": "id1", "stats": [')
    batch = read_paths([suite])
    assert [r.name for r in batch.runs] == ["openai/gpt2"]
    assert set(batch.runs[0].tasks["task"]) == {TASK, TASK + "@valid"}
    bad = {p.file.rsplit("/", 1)[-1] for p in batch.problems}
    assert "per_instance_stats.json" in bad and "run_spec.json" in bad   # the folder, whole
    assert all(NQA.name in p.file for p in batch.problems)


def test_run_folder_without_run_spec(run_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "r"
    d.mkdir()
    shutil.copy(run_dir / "per_instance_stats.json", d)
    with pytest.raises(IngestError, match="missing run_spec.json"):
        parse_paths([d])


def test_noise_names() -> None:
    names = ["bo/runs/v1/r/run_spec.json", "bo/runs/v1/r/stats.json", "bo/scenarios/mmlu/x.csv",
             "a.zip!runs/v1/r/run_spec.json", "a.zip!scenarios/y.json",
             "q/benchmark_output/cache/c.jsonl", "q/other/scenarios/keep.json",
             "bo/runs/v1/groups/json/t.json", "bo/runs/v1/eval_cache/c.sqlite",
             "bo/releases/v2/summary.json", "bo/releases/v2/groups/g.json",
             # a user's own folders named like HELM's, without a HELM run: read as usual
             "me/runs/exp1/groups/results.json", "me/scenarios/s.json"]
    assert helm.noise_names(names) == {
        "bo/scenarios/mmlu/x.csv", "a.zip!scenarios/y.json", "q/benchmark_output/cache/c.jsonl",
        "bo/runs/v1/groups/json/t.json", "bo/runs/v1/eval_cache/c.sqlite",
        "bo/releases/v2/groups/g.json"}


def test_whole_fixture_tree(fixtures_dir: Path) -> None:
    runs = parse_paths([fixtures_dir])
    by_format: dict[str, int] = {}
    for r in runs:
        by_format[r.source_format] = by_format.get(r.source_format, 0) + 1
    # lm_eval: 8 files, the qwen samples join their results file -> 7 runs
    assert by_format == {"lm_eval": 7, "inspect": 8, "helm": 1}
    assert any("PROVENANCE.md" in w for r in runs for w in r.warnings)


def test_protocol_diff_names_helm_adapter_settings(run_dir: Path, tmp_path: Path) -> None:
    """Two models on the same HELM scenario: the model differs (benign); a different few-shot
    count and instructions are named as such (few-shot, prompt), not hidden as "other"."""
    from evalcore.store import Store

    other = tmp_path / "b" / RUN.replace("openai_gpt2", "org_m")
    shutil.copytree(run_dir, other)
    spec = json.loads((other / "run_spec.json").read_text())
    spec["adapter_spec"].update(model="org/m", model_deployment="org/m", max_train_instances=0,
                                instructions="Answer.\n")
    (other / "run_spec.json").write_text(json.dumps(spec, indent=2))
    for name in ("per_instance_stats.json", "stats.json", "scenario_state.json"):
        # another model's files never share bytes with this one's (the store pairs files)
        (other / name).write_text(json.dumps(json.loads((other / name).read_text()), indent=1))
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([run_dir]) + parse_paths([other]))
    ids = store.runs().set_index("name")["run_id"]
    diff = store.protocol_diff(int(ids["openai/gpt2"]), int(ids["org/m"]), task=TASK)
    cats = dict(zip(diff["setting"], diff["category"]))
    assert cats["adapter_spec.max_train_instances"] == "few-shot"
    assert cats["adapter_spec.instructions"] == "prompt"
    assert cats["model"] == "model"


# ---------------------------------------------------------------------------------------
# a main metric HELM computes over all instances only: item scores from the same number
# ---------------------------------------------------------------------------------------
def _bbq_run(tmp_path: Path, em: list[float], qem: list[float], acc: float) -> Path:
    """A HELM safety-suite BBQ run in HELM's shapes: ``bbq_accuracy`` (the run group's main
    metric in schema_safety.yaml) comes from ``BBQMetric.evaluate_instances`` over all
    instances, so it is in stats.json only; the per-instance stats hold exact_match and
    quasi_exact_match."""
    per = [{"instance_id": f"id{i}", "train_trial_index": 0,
            "stats": [stat("exact_match", a), stat("quasi_exact_match", b),
                      stat("num_prompt_tokens", 80.0)]}
           for i, (a, b) in enumerate(zip(em, qem))]
    stats = [stat("bbq_accuracy", acc), stat("exact_match", sum(em) / len(em)),
             stat("quasi_exact_match", sum(qem) / len(qem)),
             stat("bbq_metric_ambiguous_bias", 0.1)]
    return write_run(tmp_path / "bbq:subject=all,method=multiple_choice_joint,model=m",
                     "bbq:subject=all,method=multiple_choice_joint,model=m", ["bbq"], per,
                     stats, model="m", method="multiple_choice_joint")


def test_main_metric_without_per_instance_values_takes_the_equal_metrics_items(tmp_path):
    """bbq_accuracy = 0.9 in stats.json; exact_match and quasi_exact_match average to 0.9 on
    the same 50 instances and agree item by item: the main metric gets those item scores, so
    the leaderboard opens on it with an interval, and the reported 0.9 stays as reported."""
    em = [1.0] * 45 + [0.0] * 5
    d = _bbq_run(tmp_path, em, em, 0.9)
    run = parse_paths([d])[0]
    task = "bbq:subject=all,method=multiple_choice_joint"
    acc = run.scores[run.scores["metric"] == "bbq_accuracy"].sort_values("item_id")
    em_rows = run.scores[run.scores["metric"] == "exact_match"].sort_values("item_id")
    assert len(acc) == 50 and acc["score"].tolist() == em_rows["score"].tolist()
    proto = run.tasks.set_index("task").loc[task, "protocol"]
    assert proto["primary_metric"] == "bbq_accuracy"
    assert proto["primary_metric_items_from"] == "quasi_exact_match"   # schema's 2nd choice
    assert any("'bbq_accuracy' has no per-instance values" in w and "0.9" in w
               for w in run.warnings)
    from evalcore import analysis as an
    from evalcore.store import Store
    store = Store(tmp_path / "s")
    store.ingest([run])
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    cell = lb.cells.iloc[0]
    assert lb.metrics_by_task[task] == "bbq_accuracy"
    assert bool(cell["has_items"]) and cell["method"] == "wilson" and cell["n"] == 50
    assert cell["score"] == pytest.approx(0.9) and cell["reported"] == pytest.approx(0.9)
    assert 0.78 < cell["low"] < 0.9 < cell["high"] < 0.97
    note = lb.task_notes.loc[lb.task_notes["kind"] == "metric", "note"].iloc[0]
    assert "item scores are those of 'quasi_exact_match'" in note


def test_no_items_are_taken_when_the_equal_metrics_disagree_item_by_item(tmp_path):
    em = [1.0] * 45 + [0.0] * 5
    qem = [0.0] + [1.0] * 45 + [0.0] * 4          # the same mean, other items
    run = parse_paths([_bbq_run(tmp_path, em, qem, 0.9)])[0]
    assert "bbq_accuracy" not in set(run.scores["metric"])
    assert any("differ item by item" in w for w in run.warnings)


def test_no_items_are_taken_when_no_metric_has_the_reported_value(tmp_path):
    em = [1.0] * 40 + [0.0] * 10
    run = parse_paths([_bbq_run(tmp_path, em, em, 0.9)])[0]
    assert "bbq_accuracy" not in set(run.scores["metric"])
    assert "primary_metric_items_from" not in run.tasks["protocol"].iloc[0]
    assert any("only its stats.json value is stored" in w for w in run.warnings)


def test_older_safety_main_metric_name(tmp_path):
    """An XSTest run written before HELM renamed xst_score to safety_score: without a suite
    schema, the main metric is xst_score (the two judges' mean), not the alphabetically
    first xst_claude_score."""
    per = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [
        stat("xst_score", (g + c) / 2), stat("xst_gpt_score", g), stat("xst_claude_score", c)]}
        for i, (g, c) in enumerate([(1.0, 0.5), (0.5, 0.5), (1.0, 1.0)])]
    d = write_run(tmp_path / "xstest:model=m", "xstest:model=m", ["xstest"], per, [])
    proto = parse_paths([d])[0].tasks["protocol"].iloc[0]
    assert proto["primary_metric"] == "xst_score"
    assert "before 'safety_score'" in proto["primary_metric_from"]


def test_a_sub_split_mean_is_not_the_tasks_summary(tmp_path):
    """HELM's aggregated stats carry a sub_split for instances that have one: such a mean
    is one part of the task, not its summary."""
    per = [{"instance_id": f"id{i}", "train_trial_index": 0,
            "stats": [dict(stat("exact_match", v), name={"name": "exact_match",
                                                         "split": "test", "sub_split": s})]}
           for i, (v, s) in enumerate([(1.0, "a"), (0.0, "b"), (1.0, "b")])]
    sub_a = stat("exact_match", 1.0)
    sub_a["name"]["sub_split"] = "a"
    d = write_run(tmp_path / "r", "boolq:model=m", ["my_boolq"], per, [sub_a])
    run = parse_paths([d])[0]
    assert len(run.scores) == 3
    assert run.summaries.empty                       # not 1.0, sub-split a's mean
