"""Real HELM run folders (tests/fixtures/wild/helm/, PROVENANCE.md there): what a user checks by
hand. Each folder is recognised, gives the runs, tasks and items its files hold, and every
number stored equals the file's: the summary is stats.json's mean for that split, and the
per-instance values average to it (HELM: mean over instances per train trial, then over
trials). Expected counts are read from the files by this test, not from the parser.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from evalcore.ingest import helm, parse_paths

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "helm"
SUITE = WILD / "benchmark_output" / "runs" / "evalbars"
RUN_DIRS = sorted(p.parent for p in SUITE.glob("*/run_spec.json"))

# (folder prefix) -> (model, primary metric HELM names for the run group, main split)
EXPECTED = {
    "commonsense-dataset=hellaswag": ("eleutherai/pythia-1b-v0", "exact_match", "valid"),
    "narrative_qa-model=openai_gpt2": ("openai/gpt2", "f1_score", "test"),
}


def _expected(run_dir: Path) -> tuple[str, str, str]:
    return next(v for k, v in EXPECTED.items() if run_dir.name.startswith(k))


def _file_facts(run_dir: Path, main_split: str):
    """Items per split and stats.json means, read straight from the files."""
    spec = json.loads((run_dir / "run_spec.json").read_text())
    base = spec["name"].split(":")[0]
    args = [a for a in spec["name"].partition(":")[2].split(",")
            if a and not a.startswith(("model=", "model_deployment="))]
    base += (":" + ",".join(args)) if args else ""
    pis = json.loads((run_dir / "per_instance_stats.json").read_text())
    items: dict[str, set[str]] = defaultdict(set)
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for inst in pis:
        for st in inst["stats"]:
            split = st["name"]["split"]
            task = base if split == main_split else f"{base}@{split}"
            items[task].add(inst["instance_id"])
            if st.get("count"):
                values[(task, st["name"]["name"])].append(st["mean"])
    stats = {}
    for st in json.loads((run_dir / "stats.json").read_text()):
        if "perturbation" in st["name"] or not st.get("count"):
            continue
        split = st["name"]["split"]
        task = base if split == main_split else f"{base}@{split}"
        stats[(task, st["name"]["name"])] = st["mean"]
    return items, values, stats


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=lambda p: p.name[:40])
def test_real_run_folder(run_dir: Path) -> None:
    model, primary, main_split = _expected(run_dir)
    runs = parse_paths([run_dir])
    assert len(runs) == 1
    run = runs[0]
    assert run.source_format == "helm" and run.name == model and run.model == model
    items, values, stats = _file_facts(run_dir, main_split)

    # tasks and items as in the file; a task per split, the main split without a suffix
    assert set(run.scores["task"]) == set(items)
    for task, ids in items.items():
        assert set(run.scores.loc[run.scores["task"] == task, "item_id"]) == ids
    protos = run.tasks.set_index("task")["protocol"]
    assert {p["primary_metric"] for p in protos} == {primary}
    assert {p["main_split"] for p in protos} == {main_split}

    # every non-bookkeeping metric with per-instance values is kept, nothing else
    kept = {k for k in values if not helm.BOOKKEEPING.match(k[1])}
    got = set(map(tuple, run.scores[["task", "metric"]].drop_duplicates().to_numpy().tolist()))
    assert got == kept

    # the numbers: stored summary == stats.json mean; item scores average to it
    summ = run.summaries.set_index(["task", "metric"])
    for key in kept:
        assert summ.loc[key, "value"] == stats[key]
        assert summ.loc[key, "n"] == len(items[key[0]])
        assert math.isnan(summ.loc[key, "stderr"])
        sc = run.scores[(run.scores["task"] == key[0]) & (run.scores["metric"] == key[1])]
        assert sc["score"].tolist() == pytest.approx(values[key], abs=0)
        assert sc["score"].mean() == pytest.approx(stats[key], rel=1e-12, abs=1e-300)
    assert run.warnings == []


def test_hellaswag_numbers_by_hand() -> None:
    """The numbers printed in the hellaswag files: 10 valid instances, exact_match 0.3."""
    run_dir = next(p for p in RUN_DIRS if p.name.startswith("commonsense"))
    run = parse_paths([run_dir])[0]
    task = "commonsense:dataset=hellaswag,method=multiple_choice_joint"
    em = run.scores[(run.scores["task"] == task) & (run.scores["metric"] == "exact_match")]
    assert len(em) == 10 and em["score"].sum() == 3.0
    assert run.summaries.set_index(["task", "metric"]).loc[(task, "exact_match"), "value"] == 0.3
    assert run.tasks.set_index("task").loc[task, "n_choices"] == 4


def test_narrative_qa_numbers_by_hand() -> None:
    """narrative_qa (generation): f1_score 0.17424... on 4 test instances, 1 valid instance."""
    run_dir = next(p for p in RUN_DIRS if p.name.startswith("narrative_qa"))
    run = parse_paths([run_dir])[0]
    summ = run.summaries.set_index(["task", "metric"])
    assert summ.loc[("narrative_qa", "f1_score"), "value"] == pytest.approx(0.17424242424242425)
    assert summ.loc[("narrative_qa", "f1_score"), "n"] == 4
    assert summ.loc[("narrative_qa@valid", "rouge_l"), "n"] == 1
    assert pd.isna(run.tasks.set_index("task").loc["narrative_qa", "n_choices"])
    declared = run.tasks.set_index("task").loc["narrative_qa", "protocol"]["higher_is_better"]
    assert declared["f1_score"] is True and declared["bleu_4"] is True


def test_whole_benchmark_output_tree(caplog) -> None:
    """The real tree as one input: one run per model with its suite; every file HELM wrote
    is recognised (the suite summaries and display copies named at debug level, none an
    error); the suite's schema.json names the main metrics; the only note is PROVENANCE.md."""
    with caplog.at_level(logging.DEBUG, logger="evalcore.ingest"):
        runs = parse_paths([WILD])
    assert sorted(r.name for r in runs) == sorted({_expected(d)[0] for d in RUN_DIRS})
    assert {r.protocol["suite"] for r in runs} == {"evalbars"}
    notes = [w for r in runs for w in r.warnings]
    assert len(notes) == 1 and "PROVENANCE.md" in notes[0]
    for name in ("runs.json", "run_specs.json", "summary.json", "costs.json",
                 "groups_metadata.json", "runs_to_run_suites.json", "display_requests.json",
                 "display_predictions.json", "instances.json", "scenario.json",
                 "narrative_qa_narrative_qa_.tex"):
        assert name in caplog.text, name
    for run in runs:
        srcs = {p["primary_metric_from"] for p in run.tasks["protocol"]}
        assert all(s.startswith("suite schema.json, run group") for s in srcs)
        assert not any(f.format == helm.SCHEMA for f in run.files)   # shared by the suite
    by_model = {r.name: r for r in runs}
    one = parse_paths([RUN_DIRS[1]])[0]          # the same run read alone: same numbers
    both = by_model[one.name]
    assert one.summaries.equals(both.summaries) and one.scores.equals(both.scores)


def test_display_copy_alone(tmp_path: Path) -> None:
    """What people fetch from HELM's public results: run_spec.json, instances.json and
    display_predictions.json. The scores are the display copy's (only the metrics HELM's
    schema shows: f1_score here) and equal per_instance_stats.json's values."""
    run_dir = next(p for p in RUN_DIRS if p.name.startswith("narrative_qa"))
    d = tmp_path / run_dir.name
    d.mkdir()
    for name in ("run_spec.json", "instances.json", "display_predictions.json"):
        shutil.copy(run_dir / name, d)
    run = parse_paths([d])[0]
    full = parse_paths([run_dir])[0]
    assert set(run.scores["metric"]) == {"f1_score"}
    key = ["task", "item_id", "answer_idx"]
    got = run.scores.sort_values(key).reset_index(drop=True)
    want = full.scores[full.scores["metric"] == "f1_score"].sort_values(key).reset_index(drop=True)
    assert got[key + ["score"]].equals(want[key + ["score"]])
    assert set(got["task"]) == {"narrative_qa", "narrative_qa@valid"}   # splits from instances.json
    assert any("display copy" in w for w in run.warnings)
    # texts from the display copies: the instance's input, its correct reference, the output
    t = run.texts.set_index(["task", "item_id"])
    insts = {i["id"]: i for i in json.loads((run_dir / "instances.json").read_text())}
    preds = json.loads((run_dir / "display_predictions.json").read_text())
    p0 = preds[0]
    inst = insts[p0["instance_id"]]
    task = "narrative_qa" if inst["split"] == "test" else "narrative_qa@valid"
    row = t.loc[(task, p0["instance_id"])]
    assert row["prompt"] == inst["input"]["text"] and row["response"] == p0["predicted_text"]
    assert row["target"] == " | ".join(r["output"]["text"] for r in inst["references"]
                                       if "correct" in r["tags"])


def test_leaderboard_opens_on_helms_main_metric(tmp_path: Path) -> None:
    """Stored and shown: narrative_qa opens on f1_score (HELM's main_name, not the alphabetical
    bleu_1), hellaswag on exact_match; the score shown is stats.json's number."""
    from evalcore import analysis as an
    from evalcore.store import Store

    store = Store(tmp_path / "s")
    store.ingest(parse_paths(RUN_DIRS))
    lb = an.leaderboard(store, include_ranks=False)
    assert lb.metrics_by_task["narrative_qa"] == "f1_score"
    hs = "commonsense:dataset=hellaswag,method=multiple_choice_joint"
    assert lb.metrics_by_task[hs] == "exact_match"
    cells = lb.cells.set_index("task")
    assert cells.loc["narrative_qa", "score"] == pytest.approx(0.17424242424242425)
    assert cells.loc[hs, "score"] == pytest.approx(0.3)
    assert cells.loc[hs, "n"] == 10


def test_cli_ingests_the_tree_and_a_zip_of_it(tmp_path: Path, capsys) -> None:
    """`python -m evalcore ingest benchmark_output/ --store FILE`: both runs stored, exit 0;
    the same tree zipped adds nothing new (same files, same runs)."""
    import zipfile

    from evalcore import cli

    store = tmp_path / "s"
    code = cli.main(["ingest", str(WILD / "benchmark_output"), "--store", str(store)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "eleutherai/pythia-1b-v0" in out.out and "openai/gpt2" in out.out
    archive = tmp_path / "benchmark_output.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((WILD / "benchmark_output").rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(WILD).as_posix())
    runs = parse_paths([archive])
    assert sorted(r.name for r in runs) == ["eleutherai/pythia-1b-v0", "openai/gpt2"]
    assert all(r.warnings == [] for r in runs)          # .tex member skipped quietly
    from evalcore.store import Store

    stored = Store(store).runs()
    assert sorted(stored["name"]) == ["eleutherai/pythia-1b-v0", "openai/gpt2"]


FORMAT_OF = {
    "per_instance_stats.json": helm.PER_INSTANCE, "run_spec.json": helm.RUN_SPEC,
    "stats.json": helm.STATS, "scenario_state.json": helm.SCENARIO_STATE,
    "scenario.json": helm.SCENARIO, "instances.json": helm.INSTANCES,
    "display_predictions.json": helm.DISPLAY_PREDICTIONS,
    "display_requests.json": helm.DISPLAY_REQUESTS, "schema.json": helm.SCHEMA,
}
REAL_JSON = sorted((WILD / "benchmark_output").rglob("*.json"))


@pytest.mark.parametrize("path", REAL_JSON, ids=lambda p: "/".join(p.parts[-2:])[-60:])
def test_every_real_file_is_recognised(path: Path) -> None:
    """Each file HELM wrote is recognised as what it is, from its content (the suite
    summaries as HELM suite files, which are not read)."""
    from evalcore.ingest.detect import classify as _classify
    from evalcore.ingest._common import Source

    fmt = _classify(Source(name=str(path), path=path, folder=str(path.parent)))
    assert fmt == FORMAT_OF.get(path.name, helm.SUITE_FILE)
