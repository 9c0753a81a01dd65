"""The leaderboard on real results files with 80+ tasks, metrics of several directions,
harness groups and noisy protocols."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from evalcore import analysis as an
from evalcore import metrics as mx
from evalcore.ingest import parse_paths, parse_uploads
from evalcore.store import Store
from tests.test_cli import run

PYTHIA = Path(__file__).resolve().parent / "fixtures" / "wild" / "pythia"
P160M = PYTHIA / "160m_step143000.json"
P69B = PYTHIA / "6.9b_step143000.json"
P12B = PYTHIA / "pythia-12b-0shot-global_step143000_eval_results_12-15-2022-23-32-34.json"


@pytest.fixture(scope="module")
def pythia(tmp_path_factory) -> Store:
    store = Store(tmp_path_factory.mktemp("pythia") / "s")
    store.ingest(parse_paths([P160M, P69B]))
    return store


def _file(path: Path) -> dict:
    return json.loads(path.read_text())


def test_v03_file_keeps_every_number_and_its_direction(pythia):
    lb = an.leaderboard(pythia, include_ranks=False)
    raw = _file(P160M)["results"]
    assert len(raw) == 87 and lb.cells["task"].nunique() == 87
    small = lb.cells[lb.cells["run"] == "EleutherAI/pythia-v1.1-160m"].set_index("task")
    for task, entry in raw.items():
        metric = lb.metrics_by_task[task]
        assert small.loc[task, "score"] == pytest.approx(entry[metric], rel=1e-12)
        assert small.loc[task, "se"] == pytest.approx(entry[f"{metric}_stderr"], rel=1e-12)
    # crows_pairs opens on likelihood_difference: lower is better, so not averaged
    info = lb.metric_info["crows_pairs_english"]
    assert info.metric == "likelihood_difference" and info.direction == mx.LOWER
    assert lb.metric_info["lambada_openai"].metric == "acc"
    assert set(lb.cells.loc[lb.cells["task"] == "crows_pairs_french", "direction"]) == {"lower"}


def test_macro_average_leaves_out_losses_and_ranks_the_bigger_model_first(pythia):
    lb = an.leaderboard(pythia, include_ranks=False)
    avg = lb.averages.set_index("run")
    assert list(lb.averages["run"]) == ["EleutherAI/pythia-v1.1-6.9b",
                                        "EleutherAI/pythia-v1.1-160m"]
    # 57 MMLU subjects + arc x2, lambada (acc), logiqa, piqa, sciq, winogrande, wsc
    assert set(avg["n_tasks"]) == {65}
    for run_name, path in (("EleutherAI/pythia-v1.1-160m", P160M),
                           ("EleutherAI/pythia-v1.1-6.9b", P69B)):
        raw = _file(path)["results"]
        # MMLU (lm_eval 0.3's 57 hendrycksTest-* subjects) counts once, as the mean of its
        # subjects, beside the 8 other accuracy tasks: 9 units
        mmlu = [e["acc"] for t, e in raw.items() if t.startswith("hendrycksTest-")]
        others = [e["acc"] for t, e in raw.items()
                  if not t.startswith(("crows_pairs", "hendrycksTest-"))]
        assert len(mmlu) == 57 and len(others) == 8
        want = (np.mean(mmlu) + np.sum(others)) / 9
        assert avg.loc[run_name, "score"] == pytest.approx(want, rel=1e-12)
        # SE: the group's tasks share one unit's weight
        ses = {t: e["acc_stderr"] for t, e in raw.items() if not t.startswith("crows_pairs")}
        w = {t: (1 / 57 if t.startswith("hendrycksTest-") else 1.0) for t in ses}
        want_se = np.sqrt(sum((w[t] * ses[t]) ** 2 for t in ses)) / 9
        assert avg.loc[run_name, "se"] == pytest.approx(want_se, rel=1e-6)
        assert 0.0 <= avg.loc[run_name, "score"] <= 1.0
    left = lb.task_notes[lb.task_notes["kind"] == "average"]
    assert len(left) == 22 and all("lower is better" in n for n in left["note"])
    assert any("22 of 87 task(s) left out" in n for n in lb.notes)
    assert any("each task group counts once" in n and "mmlu (hendrycksTest): 57 tasks" in n
               for n in lb.notes)


def test_lower_is_better_sorts_lowest_first(pythia):
    lb = an.leaderboard(pythia, task="lambada_openai", metric="ppl", include_ranks=False)
    assert lb.metric_info["lambada_openai"].direction == mx.LOWER
    assert list(lb.cells["run"]) == ["EleutherAI/pythia-v1.1-6.9b",
                                     "EleutherAI/pythia-v1.1-160m"]
    assert list(lb.cells["score"]) == pytest.approx([4.449107940407964, 38.064877017771195])


def test_pct_stereotype_is_not_ranked(pythia):
    lb = an.leaderboard(pythia, metric="pct_stereotype", include_ranks=False)
    assert all(i.direction == mx.TARGET for i in lb.metric_info.values())
    assert lb.averages.empty
    assert any("no macro average" in n for n in lb.notes)
    notes = lb.task_notes[lb.task_notes["kind"] == "direction"]
    assert len(notes) == 22 and all("not ranked" in n for n in notes["note"])


def test_notes_are_per_task_not_a_wall(pythia):
    lb = an.leaderboard(pythia, include_ranks=False)
    assert len(lb.notes) <= 3
    counts = lb.task_notes["kind"].value_counts().to_dict()
    # summary-only board: one general note instead of 87 "no item-level data" lines
    assert "reported" not in counts and counts["average"] == 22 and counts["metric"] == 85
    assert any(n.startswith("no run shown has item-level data") for n in lb.notes)


def test_groups_from_task_families_of_a_v03_file(pythia):
    lb = an.leaderboard(pythia, include_ranks=False)
    mmlu = lb.groups["mmlu (hendrycksTest)"]
    assert len(mmlu) == 57 and all(t.startswith("hendrycksTest-") for t in mmlu)
    # crows_pairs_english is a task of its own; its subsets form crows_pairs_english_*
    assert "crows_pairs_english" not in lb.groups
    assert len(lb.groups["crows_pairs_english_*"]) == 10
    g = lb.group_cells.set_index(["group", "run"])
    row = g.loc[("mmlu (hendrycksTest)", "EleutherAI/pythia-v1.1-160m")]
    raw = _file(P160M)["results"]
    accs = [raw[t]["acc"] for t in mmlu]
    ses = [raw[t]["acc_stderr"] for t in mmlu]
    # a name family, not a harness group: the plain mean of the reported subject values
    assert row["source"] == "recomputed from reported" and row["n_tasks"] == 57
    assert row["weighting"] == "equal" and row["missing"] == ""
    assert row["score"] == pytest.approx(np.mean(accs), rel=1e-12)
    assert row["se"] == pytest.approx(np.sqrt(np.sum(np.square(ses))) / 57, rel=1e-12)


def test_v03_wikitext_losses_are_lower_is_better(tmp_path):
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([P12B]))
    lb = an.leaderboard(store, task="wikitext", include_ranks=False)
    info = lb.metric_info["wikitext"]
    assert info.metric == "bits_per_byte" and info.direction == mx.LOWER
    assert lb.cells["score"].iloc[0] == pytest.approx(0.6555956922652953)
    for m in ("word_perplexity", "byte_perplexity"):
        assert an.leaderboard(store, task="wikitext", metric=m, include_ranks=False) \
            .metric_info["wikitext"].direction == mx.LOWER


# --- lm_eval 0.4: the harness's declarations, groups and primary metric -----------------

def test_v04_higher_is_better_and_groups_come_from_the_file(fixtures_dir, tmp_path):
    path = fixtures_dir / "lm_eval" / "results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"
    runs = parse_paths([path])
    protos = dict(zip(runs[0].tasks["task"], runs[0].tasks["protocol"]))
    assert protos["lambada_openai"]["higher_is_better"] == {"perplexity": False, "acc": True}
    store = Store(tmp_path / "s")
    store.ingest(runs)
    lb = an.leaderboard(store, include_ranks=False)
    assert lb.metric_info["cola"].metric == "mcc"
    assert lb.metric_info["cola"].source == mx.SOURCE_HARNESS
    assert "cola" not in lb.averages["tasks"].iloc[0].split(",")
    assert any("mcc" in n and "scale [-1, 1]" in n for n in
               lb.task_notes.loc[lb.task_notes["task"] == "cola", "note"])
    ppl = an.leaderboard(store, task="lambada_openai", metric="perplexity", include_ranks=False)
    assert ppl.metric_info["lambada_openai"].direction == mx.LOWER
    assert ppl.metric_info["lambada_openai"].source == mx.SOURCE_HARNESS
    # the harness's groups: mmlu with its 57 subjects (nested through mmlu_humanities ...),
    # aggregate = the value the harness reported for the group
    assert len(lb.groups["mmlu"]) == 57
    g = lb.group_cells[lb.group_cells["group"] == "mmlu"].iloc[0]
    obj = json.loads(path.read_text())
    assert g["source"] == "harness"
    assert g["score"] == pytest.approx(obj["groups"]["mmlu"]["acc,none"])
    assert g["se"] == pytest.approx(obj["groups"]["mmlu"]["acc_stderr,none"])


def _ifeval_results(model: str) -> dict:
    """A minimal lm_eval 0.4 results object for ifeval, laid out as the harness writes it
    (``lm_eval/tasks/ifeval/ifeval.yaml``: metric_list opens on prompt_level_strict_acc)."""
    metrics = ["prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc",
               "inst_level_loose_acc"]
    entry = {"alias": "ifeval"}
    for i, m in enumerate(metrics):
        entry[f"{m},none"] = 0.3 + 0.1 * i
        entry[f"{m}_stderr,none"] = 0.02 if m.startswith("prompt") else "N/A"
    return {"results": {"ifeval": entry}, "group_subtasks": {"ifeval": []},
            "configs": {"ifeval": {"task": "ifeval", "output_type": "generate_until",
                                   "metric_list": [{"metric": m, "aggregation": "mean",
                                                    "higher_is_better": True}
                                                   for m in metrics]}},
            "versions": {"ifeval": 4.0}, "n-shot": {"ifeval": 0},
            "higher_is_better": {"ifeval": {m: True for m in metrics}},
            "n-samples": {"ifeval": {"original": 541, "effective": 541}},
            "config": {"model": "hf", "model_args": f"pretrained={model}"},
            "lm_eval_version": "0.4.5"}


def test_ifeval_opens_on_prompt_level_strict_acc(tmp_path):
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([("results_2024-06-01T00-00-00.json",
                                 json.dumps(_ifeval_results("org/a")).encode())]))
    lb = an.leaderboard(store, include_ranks=False)
    assert lb.metrics_by_task["ifeval"] == "prompt_level_strict_acc"
    assert lb.cells["score"].iloc[0] == pytest.approx(0.3)
    note = lb.task_notes.loc[lb.task_notes["kind"] == "metric", "note"].iloc[0]
    assert "harness's primary metric" in note


# --- protocol noise -----------------------------------------------------------------------

def _oll_style(fixtures_dir: Path, model: str, address: str, tmpdir: str, fewshot: int) -> bytes:
    """A real 0.4 results file with the noise Open LLM Leaderboard files carry: a function
    repr with a memory address in the task config, a temporary path and a timestamp."""
    obj = json.loads((fixtures_dir / "lm_eval" /
                      "results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json").read_text())
    obj = copy.deepcopy(obj)
    cfg = obj["configs"]["arc_easy"]
    cfg["fewshot_config"] = {"sampler": "first_n",
                             "samples": f"<function list_fewshot_samples at {address}>"}
    cfg["dataset_kwargs"] = {"cache_dir": f"{tmpdir}/hf_cache"}
    cfg["description"] = f"created 2024-06-{fewshot + 10:02d}T17:37:25.144953"
    obj["n-shot"]["arc_easy"] = fewshot
    obj["model_name"] = model
    obj["config"]["model_args"] = f"pretrained={model}"
    return json.dumps(obj).encode()


def test_memory_addresses_paths_and_timestamps_do_not_make_protocols_differ(
        fixtures_dir, tmp_path):
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([
        ("a/results_2024-06-17T17-37-25.json",
         _oll_style(fixtures_dir, "org/a", "0x7f3e09ad45e0", "/tmp/tmpab12cd", 0)),
        ("b/results_2024-06-18T10-00-00.json",
         _oll_style(fixtures_dir, "org/b", "0x7f99aa00bb10", "/tmp/tmpzz9y8x", 0))]))
    ids = [int(r) for r in store.runs()["run_id"]]
    diff = store.protocol_diff(ids[0], ids[1], task="arc_easy")
    scopes = set(zip(diff["scope"], diff["setting"]))
    assert not any(s.startswith(("fewshot_config", "dataset_kwargs", "description"))
                   for _, s in scopes), diff
    assert set(diff["category"]) <= {"model", "other"}
    cmp = an.compare(store, ids[0], ids[1], task="arc_easy")
    assert not any("protocols differ" in w for w in cmp.warnings)


def test_a_real_fewshot_difference_still_warns(fixtures_dir, tmp_path):
    store = Store(tmp_path / "s")
    store.ingest(parse_uploads([
        ("a/results_2024-06-17T17-37-25.json",
         _oll_style(fixtures_dir, "org/a", "0x7f3e09ad45e0", "/tmp/tmpab12cd", 0)),
        ("b/results_2024-06-18T10-00-00.json",
         _oll_style(fixtures_dir, "org/b", "0x7f99aa00bb10", "/tmp/tmpzz9y8x", 5))]))
    ids = [int(r) for r in store.runs()["run_id"]]
    diff = store.protocol_diff(ids[0], ids[1], task="arc_easy")
    few = diff[diff["setting"] == "num_fewshot"]
    assert list(few["category"]) == ["few-shot"] and list(few["value_b"]) == ["5"]


# --- CLI ------------------------------------------------------------------------------------

def test_cli_leaderboard_on_two_pythia_files(capsys, tmp_path):
    store = tmp_path / "s"
    code, _, err = run(capsys, "--store", store, "ingest", P160M, P69B)
    assert code == 0, err
    code, out, err = run(capsys, "--store", store, "leaderboard", "--no-ranks")
    assert code == 0, err
    assert "== lambada_openai (acc; higher is better, range [0, 1]) ==" in out
    assert "== crows_pairs_english (likelihood_difference; lower is better, range [0, inf)) ==" \
        in out
    assert "22 of 87 task(s) left out (lower is better: 22" in out
    assert "None" not in out
    assert "task notes (listed under each task above): metric 85, average 22" in out
    assert "- no run shown has item-level data" in out
    assert "mmlu (hendrycksTest)" in out            # the group table
    code, out, _ = run(capsys, "--store", store, "leaderboard", "--format", "json",
                       "--no-ranks")
    doc = json.loads(out)
    assert doc["metric_info"]["crows_pairs_english"]["direction"] == "lower"
    assert doc["averages"][0]["run"] == "EleutherAI/pythia-v1.1-6.9b"
    assert len(doc["groups"]["mmlu (hendrycksTest)"]) == 57


# --- compare: verdict wording and macro average follow the direction ----------------------

def test_verdict_text_names_the_better_run_by_direction():
    kw = dict(mde=0.01, scale=1.0, threshold=0.05, name_a="A", name_b="B")
    assert an.verdict_text(2.0, 1.0, 3.0, **kw).startswith("different: B is better than A")
    low = an.verdict_text(2.0, 1.0, 3.0, direction="lower", **kw)
    assert low.startswith("different: A is better than B (lower is better) by 2")
    tgt = an.verdict_text(-2.0, -3.0, -1.0, direction="target", **kw)
    assert tgt.startswith("different: A scores higher than B by 2") and "neither" in tgt
    assert "better" not in tgt.replace("called better", "")


def test_compare_on_perplexity_calls_the_lower_run_better(pythia):
    cmp = an.compare(pythia, "EleutherAI/pythia-v1.1-160m", "EleutherAI/pythia-v1.1-6.9b",
                     task="lambada_openai", metric="ppl")
    assert "EleutherAI/pythia-v1.1-6.9b is better than EleutherAI/pythia-v1.1-160m " \
           "(lower is better)" in cmp.verdict


def test_compare_macro_average_leaves_out_losses(pythia):
    cmp = an.compare(pythia, "EleutherAI/pythia-v1.1-160m", "EleutherAI/pythia-v1.1-6.9b")
    assert cmp.verdict.startswith("macro average over 65 tasks: different: "
                                  "EleutherAI/pythia-v1.1-6.9b is better")
    assert any("left out of the macro average" in w and "lower is better" in w
               for w in cmp.warnings)
    raw_a, raw_b = _file(P160M)["results"], _file(P69B)["results"]
    diffs = {t: raw_b[t]["acc"] - raw_a[t]["acc"] for t in raw_a if not t.startswith("crows")}
    # MMLU's 57 hendrycksTest subjects count once, as their mean, beside the 8 other tasks
    mmlu = [d for t, d in diffs.items() if t.startswith("hendrycksTest-")]
    others = [d for t, d in diffs.items() if not t.startswith("hendrycksTest-")]
    assert len(mmlu) == 57 and len(others) == 8
    assert cmp.overall["diff"] == pytest.approx((np.mean(mmlu) + sum(others)) / 9, rel=1e-9)
    assert "mmlu (hendrycksTest): 57 tasks" in cmp.overall["method_reason"]


def test_unknown_n_is_unknown_not_zero(pythia, capsys, tmp_path):
    # lm_eval 0.3 results do not give n: the unpaired comparison keeps it unknown
    cmp = an.compare(pythia, "EleutherAI/pythia-v1.1-160m", "EleutherAI/pythia-v1.1-6.9b",
                     task="arc_easy")
    assert cmp.per_task["n"].isna().all()
    store = tmp_path / "s"
    assert run(capsys, "--store", store, "ingest", P160M, P69B)[0] == 0
    code, out, err = run(capsys, "--store", store, "compare", "EleutherAI/pythia-v1.1-160m",
                         "EleutherAI/pythia-v1.1-6.9b", "--task", "arc_easy")
    assert code == 0, err
    assert "n = unknown [unpaired, from the harness's reported SEs]" in out and "n = 0" not in out
    assert "None" not in out
    code, out, _ = run(capsys, "--store", store, "leaderboard", "--task", "arc_easy",
                       "--no-ranks")
    assert " unknown " in out and "None" not in out
