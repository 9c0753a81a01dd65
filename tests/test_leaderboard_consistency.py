"""One answer everywhere: the leaderboard, compare and the CLI use one metric per task on every
real file of the corpus; harness groups (MMLU's nested subgroups) are shown to the digit the
file prints; what a table or an average leaves out is named there, and counts say what was
averaged."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from evalcore import analysis as an
from evalcore.errors import AnalysisError
from evalcore.ingest import parse_paths, parse_uploads, read_paths
from evalcore.store import Store
from tests.conftest import FIXTURES, WILD, require_folder
from tests.test_cli import run
from tests.wild.conftest import same

LLAMA_1B = "results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"
LLAMA_3B = "results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"
GEMMA = WILD / "lm_eval" / "gemma-2-2b" / "results_2025-03-06T19-20-09.274097.json"
PYTHIA = WILD / "pythia"
MMLU_GROUPS = ("mmlu", "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Store:
    """Every real file of tests/fixtures/wild and the shared fixtures in one store (the
    files that hold no usable run are left out by ``read_paths``, as the CLI does)."""
    folders = [require_folder(WILD, "the wild corpus"), require_folder(FIXTURES, "shared fixtures")]
    store = Store(tmp_path_factory.mktemp("corpus") / "s")
    store.ingest(read_paths(folders).runs)
    return store


def _tasks_of(store: Store) -> dict[int, set[str]]:
    t = store.tasks()
    t = t[~t["is_group"].fillna(False).astype(bool)]
    return {int(r): set(map(str, g["task"])) for r, g in t.groupby("run_id")}


def test_compare_uses_the_boards_metric_for_every_pair_and_shared_task(corpus):
    """For every pair of runs sharing a task, compare's metric is the leaderboard's; where the
    two runs lack it, compare names the fallback in its header, and the runs do lack it."""
    board = an.leaderboard(corpus, include_ranks=False, include_tiers=False)
    shown = board.metrics_by_task
    tasks_of = _tasks_of(corpus)
    metrics_of = {(int(r), str(t)): set(map(str, g["metric"]))
                  for (r, t), g in corpus.tasks().groupby(["run_id", "task"])}
    pairs = [(a, b) for a, b in itertools.combinations(sorted(tasks_of), 2)
             if tasks_of[a] & tasks_of[b]]
    assert len(pairs) >= 100
    checked = fallbacks = 0
    for a, b in pairs:
        try:
            cmp = an.compare(corpus, a, b)
        except AnalysisError as exc:
            # nothing comparable: the reason is given (too few shared items, no shared metric)
            assert "not compared" in str(exc) or "nothing to pair" in str(exc), str(exc)
            continue
        for task, metric in zip(cmp.per_task["task"], cmp.per_task["metric"]):
            checked += 1
            if metric == shown[task]:
                continue
            fallbacks += 1
            header = [w for w in cmp.warnings if w.startswith(f"{task}: compared on {metric!r}")]
            assert header and f"primary metric {shown[task]!r}" in header[0], (a, b, task)
            assert shown[task] not in metrics_of[(a, task)] & metrics_of[(b, task)]
    assert checked > 1000 and fallbacks > 0


def test_a_fallback_is_said_in_the_cli_header_before_the_numbers(corpus, capsys):
    """lambada_openai: the lm_eval 0.4 files name perplexity first in metric_list; two 0.3
    runs (pythia) only have ppl and acc, so compare uses acc and says why, before the table;
    the board names the 0.3 runs it leaves out of that task's column."""
    code, out, err = run(capsys, "--store", corpus.path, "compare",
                         "EleutherAI/pythia-v1.1-160m", "EleutherAI/pythia-v1.1-12b",
                         "--task", "lambada_openai")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if "lambada_openai: compared on" in ln)
    assert line.startswith("WARNING: ") and "which neither run has" in line
    assert "'acc' instead of the primary metric 'perplexity'" in line
    assert out.index(line) < out.index("== lambada_openai (acc)")
    board = an.leaderboard(corpus, task="lambada_openai", include_ranks=False,
                           include_tiers=False)
    assert board.metrics_by_task["lambada_openai"] == "perplexity"
    missing = board.task_notes[board.task_notes["kind"] == "missing"]["note"].iloc[0]
    assert "EleutherAI/pythia-v1.1-160m (has acc, ppl)" in missing
    assert any("not shown because the run lacks the task's metric" in n for n in board.notes)


def test_ifeval_compare_uses_the_primary_strict_metric(tmp_path):
    """ifeval: compare used to take the alphabetically first metric (inst_level_loose_acc);
    it now compares prompt_level_strict_acc, the metric the board shows."""
    from tests.test_leaderboard_wild import _ifeval_results
    store = Store(tmp_path / "s")
    a, b = _ifeval_results("org/a"), _ifeval_results("org/b")
    for m in ("prompt_level_strict_acc", "inst_level_loose_acc"):
        b["results"]["ifeval"][f"{m},none"] += 0.05
    store.ingest(parse_uploads([("a/results_2024-06-01T00-00-00.json", json.dumps(a).encode()),
                                ("b/results_2024-06-02T00-00-00.json", json.dumps(b).encode())]))
    cmp = an.compare(store, "org/a", "org/b")
    assert list(cmp.per_task["metric"]) == ["prompt_level_strict_acc"]
    assert not any("compared on" in w for w in cmp.warnings)
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    assert lb.metrics_by_task["ifeval"] == "prompt_level_strict_acc"


def test_helm_compare_uses_the_main_metric_not_the_first_alphabetically(tmp_path):
    """Two XSTest runs of a HELM that named the main metric xst_score: compare used
    xst_claude_score (first alphabetically); it now uses xst_score, as the board does."""
    from tests.ingest.test_helm import stat, write_run
    runs = []
    for model, scores in (("m1", [(1.0, 0.5), (0.5, 0.5), (1.0, 1.0), (0.0, 0.5)]),
                          ("m2", [(1.0, 1.0), (1.0, 0.5), (1.0, 1.0), (0.5, 0.5)])):
        per = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [
            stat("xst_score", (g + c) / 2), stat("xst_gpt_score", g),
            stat("xst_claude_score", c)]} for i, (g, c) in enumerate(scores)]
        mean = float(np.mean([(g + c) / 2 for g, c in scores]))
        runs.append(write_run(tmp_path / model / f"xstest:model={model}", f"xstest:model={model}",
                              ["xstest"], per, [stat("xst_score", mean)], model=model))
    store = Store(tmp_path / "s")
    store.ingest(parse_paths(runs))
    cmp = an.compare(store, "m1", "m2")
    assert list(cmp.per_task["metric"]) == ["xst_score"]
    assert an.leaderboard(store, include_ranks=False).metrics_by_task["xstest"] == "xst_score"


# --- groups: MMLU's nested subgroups, to the digit the file prints ----------------------

@pytest.fixture(scope="module")
def mmlu_store(tmp_path_factory) -> Store:
    d = require_folder(FIXTURES, "shared fixtures") / "lm_eval"
    store = Store(tmp_path_factory.mktemp("mmlu") / "s")
    store.ingest(parse_paths([d / LLAMA_1B, d / LLAMA_3B, GEMMA]))
    return store


def _files() -> dict[str, dict]:
    d = FIXTURES / "lm_eval"
    return {"meta-llama/Llama-3.2-1B": json.loads((d / LLAMA_1B).read_text()),
            "meta-llama/Llama-3.2-3B": json.loads((d / LLAMA_3B).read_text()),
            "google/gemma-2-2b": json.loads(GEMMA.read_text())}


def test_every_mmlu_group_and_subgroup_is_shown_to_the_digit(mmlu_store):
    lb = an.leaderboard(mmlu_store, include_ranks=False, include_tiers=False)
    gc = lb.group_cells.set_index(["group", "run"])
    assert set(lb.group_tree) == set(MMLU_GROUPS)
    assert sorted(lb.group_tree["mmlu"]) == sorted(MMLU_GROUPS[1:])
    for run_name, doc in _files().items():
        for g in MMLU_GROUPS:
            row = gc.loc[(g, run_name)]
            printed = doc["groups"][g]
            assert same(row["reported"], printed["acc,none"]), (g, run_name)
            assert same(row["reported_stderr"], printed["acc_stderr,none"]), (g, run_name)
            assert row["source"] == "harness" and same(row["score"], printed["acc,none"])
            # recomputed from the 13-19 subjects' reported values with the harness's
            # weighting (size: the reported value is the item-weighted mean) and stderr
            assert row["weighting"] == "size"
            assert row["weighting_note"].startswith("matches the group value")
            assert row["recomputed"] == pytest.approx(printed["acc,none"], rel=1e-12)
            # pooled_sample_stderr over the leaves; the 0.4.3-era harness (gemma) pooled the
            # top group over its four subgroups instead, which differs in the 6th digit
            assert row["recomputed_se"] == pytest.approx(printed["acc_stderr,none"],
                                                         rel=1e-9 if g != "mmlu" else 1e-5)
            assert row["missing"] == "" and row["n_tasks"] == row["n_tasks_group"]
            assert row["parent"] == ("" if g == "mmlu" else "mmlu")
    hum = gc.loc[("mmlu_humanities", "google/gemma-2-2b")]
    assert hum["reported"] == 0.47906482465462275 and hum["n_tasks"] == 13
    assert hum["reported_stderr"] == 0.007001837478994221


def test_a_group_board_shows_the_group_and_its_subtasks(mmlu_store, capsys):
    """``leaderboard --task mmlu_humanities`` printed "Nothing to show."; it shows the 13
    subjects and the group's row, without a macro average that would contradict it."""
    lb = an.leaderboard(mmlu_store, task="mmlu_humanities", include_ranks=False)
    assert lb.cells["task"].nunique() == 13 and list(lb.groups) == ["mmlu_humanities"]
    assert set(lb.group_cells["group"]) == {"mmlu_humanities"} and lb.averages.empty
    assert any("no macro average: the tasks shown form one unit, the group mmlu_humanities"
               in n for n in lb.notes)
    code, out, err = run(capsys, "--store", mmlu_store.path, "leaderboard", "--task",
                         "mmlu_humanities", "--no-ranks", "--no-tiers")
    assert code == 0, err
    assert "Nothing to show" not in out and "== mmlu_formal_logic (acc" in out
    row = next(ln for ln in out.splitlines()
               if ln.startswith("mmlu_humanities") and "google/gemma-2-2b" in ln)
    # the file's 0.4791 +- 1.96 * 0.0070, in percent (the text board's unit column says so)
    assert "47.9 [46.5, 49.3]    %" in row and "13/13" in row and "harness" in row
    code, out, _ = run(capsys, "--store", mmlu_store.path, "leaderboard", "--task", "mmlu",
                       "--format", "json", "--no-ranks", "--no-tiers")
    doc = json.loads(out)
    assert {r["group"] for r in doc["group_cells"]} == set(MMLU_GROUPS)
    assert len({c["task"] for c in doc["cells"]}) == 57


def test_counts_say_what_was_averaged(mmlu_store, capsys):
    """The 1B/3B files: 73 tasks on the board, 2 left out (perplexity, mcc), 71 averaged as
    15 units (MMLU's 57 subjects count once); every line says the same."""
    lb = an.leaderboard(mmlu_store, runs=["meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-3B"],
                        include_ranks=False, include_tiers=False)
    assert lb.cells["task"].nunique() == 73
    assert set(lb.averages["n_tasks"]) == {71} and set(lb.averages["n_units"]) == {15}
    assert any("2 of 73 task(s) left out" in n for n in lb.notes)
    assert any(n.startswith("macro average over 71 tasks as 15 units") for n in lb.notes)
    code, out, err = run(capsys, "--store", mmlu_store.path, "leaderboard", "--runs",
                         "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-3B", "--no-ranks",
                         "--no-tiers")
    assert code == 0, err
    header = out.index("== macro average over tasks")
    line = next(ln for ln in out[header:].splitlines() if ln.startswith("meta-llama/Llama-3.2-3B"))
    assert line.split()[1:3] == ["71", "15"]


def test_a_run_without_stderrs_is_named_not_dropped(tmp_path):
    """A results file whose stderrs are all "N/A": its scores are on the board; its macro
    average cannot have an interval, and the notes name it instead of leaving it out."""
    doc = json.loads((FIXTURES / "lm_eval" / LLAMA_1B).read_text())
    bare = copy.deepcopy(doc)
    for block in ("results", "groups"):
        for entry in bare[block].values():
            for k in list(entry):
                if "_stderr," in k:
                    entry[k] = "N/A"
    bare["model_name"] = "org/no-stderr"
    bare["config"]["model_args"] = "pretrained=org/no-stderr"
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([("a/results_2025-03-03T00-05-19.json", json.dumps(doc).encode()),
                                ("b/results_2025-03-04T00-05-19.json", json.dumps(bare).encode())]))
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    assert "org/no-stderr" in set(lb.cells["run"])
    assert "org/no-stderr" not in set(lb.averages["run"])
    note = next(n for n in lb.notes if n.startswith("no macro average for 1 run(s)"))
    assert "org/no-stderr (arc_challenge (no stderr)" in note


def test_incomplete_says_what_is_missing(tmp_path):
    """A v0.3 file without two MMLU subjects (and no group value: lm_eval 0.3 reports none):
    the group has no aggregate for that run, and the row names the two subjects."""
    from ui.leaderboard_view import group_text
    doc = json.loads((PYTHIA / "160m_step143000.json").read_text())
    for t in ("hendrycksTest-anatomy", "hendrycksTest-virology"):
        del doc["results"][t]
        doc["versions"].pop(t, None)
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([("160m.json", json.dumps(doc).encode())])
                 + parse_paths([PYTHIA / "6.9b_step143000.json"]))
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    gc = lb.group_cells.set_index(["group", "run"])
    row = gc.loc[("mmlu (hendrycksTest)", "EleutherAI/pythia-v1.1-160m")]
    assert row["source"] == "incomplete" and row["n_tasks"] == 55
    assert row["missing"] == "hendrycksTest-anatomy, hendrycksTest-virology"
    assert "missing 2 of 57 subtasks" in row["note"]
    assert group_text(row, True) == ("– (55 of 57 tasks; missing hendrycksTest-anatomy, "
                                     "hendrycksTest-virology)")
    assert gc.loc[("mmlu (hendrycksTest)", "EleutherAI/pythia-v1.1-6.9b"), "source"] == \
        "recomputed from reported"


def test_a_group_on_mixed_metrics_says_why_it_has_no_value(tmp_path):
    """A harness group whose subtasks are shown on different metrics and which reports no
    value of its own: the row says so instead of being blank."""
    def results(model):
        entry = {"acc,none": 0.5, "acc_stderr,none": 0.05}
        gen = {"exact_match,strict-match": 0.3, "exact_match_stderr,strict-match": 0.04}
        return {"results": {"mc_part": entry, "gen_part": gen, "mixed": {"alias": "mixed"}},
                "group_subtasks": {"mixed": ["mc_part", "gen_part"], "mc_part": [],
                                   "gen_part": []},
                "configs": {}, "versions": {}, "n-shot": {},
                "n-samples": {"mc_part": {"original": 100, "effective": 100},
                              "gen_part": {"original": 100, "effective": 100}},
                "config": {"model": "hf", "model_args": f"pretrained={model}"},
                "lm_eval_version": "0.4.5"}
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([("a/results_2024-01-01T00-00-00.json",
                                 json.dumps(results("org/a")).encode())]))
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    row = lb.group_cells.set_index("group").loc["mixed"]
    assert row["source"] == "incomplete" and row["metric"] is None
    assert "subtasks are shown on different metrics" in row["note"]
    assert "acc: mc_part" in row["note"] and "exact_match,strict-match: gen_part" in row["note"]


# --- the report's methods text says what was computed ------------------------------------

def test_methods_text_claims_no_stderr_the_harness_did_not_report(tmp_path):
    """A HELM main metric without per-instance values and no equal metric: its cell is the
    reported value without an interval, and the methods text says so (HELM reports no
    stderr) instead of "value +/- z times the harness-reported stderr"."""
    from evalcore.report import ReportSpec, build_report, methods_text
    from tests.ingest.test_helm import _bbq_run
    em = [1.0] * 40 + [0.0] * 10
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([_bbq_run(tmp_path, em, em, 0.9)]))
    report = build_report(store, ReportSpec(sections=("leaderboard", "methods")))
    cell = report.leaderboard.cells.iloc[0]
    assert cell["method"] == "reported" and np.isnan(cell["reported_stderr"])
    text = methods_text(report)
    assert "no stderr reported by the harness for 1 cell" in text
    assert "harness-reported stderr" not in text


def _group_runs(weighting: str):
    """Two runs with item scores on three subtasks of a declared group ``grp`` (50, 100 and
    30 items) whose reported group value is their size-weighted or plain mean."""
    import dataclasses

    import pandas as pd

    from tests.analysis_helpers import make_run
    rng = np.random.default_rng(21)
    runs, truth = [], {}
    for name, p in (("a", 0.55), ("b", 0.7)):
        x = {t: (rng.random(n) < p).astype(float) for t, n in
             (("g_a", 50), ("g_b", 100), ("g_c", 30))}
        means = np.array([v.mean() for v in x.values()])
        ns = np.array([v.size for v in x.values()], dtype=float)
        ses = np.array([v.std(ddof=1) / np.sqrt(v.size) for v in x.values()])
        value = float(np.sum(ns * means) / ns.sum()) if weighting == "size" else float(means.mean())
        truth[name] = (means, ns, ses, value)
        run = make_run(name, {(t, "acc"): v for t, v in x.items()},
                       summaries=[{"task": "grp", "metric": "acc", "value": value,
                                   "stderr": 0.01, "n": 180, "is_group": True}],
                       task_protocol={"num_fewshot": 0})
        tasks = run.tasks.copy()
        tasks["protocol"] = [{"is_group": True, "subtasks": ["g_a", "g_b", "g_c"]}
                             if t == "grp" else p for t, p in zip(tasks["task"], tasks["protocol"])]
        runs.append(dataclasses.replace(run, tasks=pd.DataFrame(tasks)))
    return runs, truth


@pytest.mark.parametrize("weighting", ["size", "equal"])
def test_a_group_with_item_scores_is_recomputed_with_the_harness_weighting(tmp_path, weighting):
    """Every subtask has item scores: the group row shows the value recomputed from them,
    with the weighting that reproduces the reported value; size: the item-weighted mean
    with lm_eval's pooled_sample_stderr (lm_eval/api/metrics.py, written out here); equal:
    the plain mean with SE = sqrt(sum SE_t^2)/k."""
    runs, truth = _group_runs(weighting)
    store = Store(tmp_path / "s")
    store.ingest(runs)
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    gc = lb.group_cells.set_index("run")
    for name, (means, ns, ses, value) in truth.items():
        row = gc.loc[name]
        assert row["source"] == "recomputed" and row["weighting"] == weighting
        assert row["weighting_note"].startswith("matches the group value")
        assert row["score"] == pytest.approx(value, rel=1e-12)
        if weighting == "size":
            pooled = np.sum((ns - 1) * ses ** 2 * ns) / (ns.sum() - ns.size)
            want_se = np.sqrt(pooled / ns.sum())
        else:
            want_se = np.sqrt(np.sum(ses ** 2)) / ses.size
        assert row["se"] == pytest.approx(want_se, rel=1e-9)
        assert row["reported"] == value and row["reported_stderr"] == 0.01
        assert row["low"] < row["score"] < row["high"] and row["n"] == 180


def test_a_harness_group_interval_is_clipped_to_the_metric_range(tmp_path):
    """A group shown with the harness's value +- z * stderr is cut at the metric's range, as
    task cells are, and the board says which group was cut (Llama-3.2-1B's file with the
    humanities group's value moved to 0.995, stderr 0.01: 0.995 + 1.96 * 0.01 > 1)."""
    doc = json.loads((FIXTURES / "lm_eval" / LLAMA_1B).read_text())
    for part in ("results", "groups"):      # 0.4 files print a group in both
        doc[part]["mmlu_humanities"]["acc,none"] = 0.995
        doc[part]["mmlu_humanities"]["acc_stderr,none"] = 0.01
    path = tmp_path / "results_2025-01-01T00-00-00.json"
    path.write_text(json.dumps(doc))
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([path]))
    lb = an.leaderboard(store, include_ranks=False, include_tiers=False)
    row = lb.group_cells.set_index("group").loc["mmlu_humanities"]
    assert row["source"] == "harness" and row["score"] == 0.995
    assert row["high"] == 1.0 and row["low"] == pytest.approx(0.995 - 1.959964 * 0.01, abs=1e-6)
    assert any("group intervals clipped" in n and "mmlu_humanities [0, 1]" in n
               for n in lb.notes), lb.notes
