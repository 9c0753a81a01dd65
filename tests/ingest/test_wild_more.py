"""More real harness output (tests/fixtures/wild/: lm_eval/african_nlp, lm_eval/harness-0.3-bloom,
lm_eval/benczechmark, inspect/more, inspect/log-sets, helm-runs/every_eval_ever): each file
is ingested into a fresh store and every number evalbars shows is checked against the number
printed in the file, read here with ``json`` / ``zipfile`` rather than evalbars' readers. The
PROVENANCE.md of each folder says where every file comes from and what it holds; no test
needs the network.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from evalcore.ingest import detect_format
from tests.wild.conftest import board, ingest, lm_eval_key, number, run_cli, same

# ---------------------------------------------------------------------------------------
# lm-evaluation-harness 0.4.10.dev0 results files (lm_eval/african_nlp)
# ---------------------------------------------------------------------------------------
AFRICAN = [
    "sw_global_mmlu_0shot_2026-01-26T15-10-39.368719.json",
    "sw_mgsm_direct_0shot_2026-01-26T14-39-33.247121.json",
    "sw_mgsm_direct_5shot_2026-01-26T14-58-04.440370.json",
    "luo_bele_0shot_2026-01-26T15-20-20.506546.json",
    "mafand_en_sw_2026-01-27T11-47-31.263778.json",
    "sw_afrihate_0shot_final_2026-01-29T12-37-35.981928.json",
    "sw_afrihate_5shot_final_2026-01-29T12-42-53.207581.json",
]


@pytest.fixture
def african(wild_dir: Path) -> Path:
    return wild_dir / "lm_eval" / "african_nlp"


@pytest.fixture
def more(wild_dir: Path) -> Path:
    return wild_dir / "inspect" / "more"


def _doc(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _metrics_of(entry: dict) -> set[str]:
    """The metrics of a 0.4 results entry as evalbars names them (``acc``,
    ``exact_match,flexible-extract``): keys with a number that are not stderrs."""
    out = set()
    for key, value in entry.items():
        if key == "alias" or "_stderr," in key or number(value) is None:
            continue
        name, _, filt = key.partition(",")
        out.add(name if filt == "none" else key)
    return out


@pytest.mark.parametrize("name", AFRICAN)
def test_every_metric_of_every_task_is_shown_as_printed(name, african, tmp_path):
    """Every (task, metric) of the file, each shown with the file's value, stderr and n
    (``n-samples.effective``); the group is not a task row."""
    path = african / name
    doc = _doc(path)
    assert detect_format(path.name, path.read_bytes()[:65536]) == "lm_eval_results"
    store = ingest(tmp_path, path)
    runs = store.runs()
    assert list(runs["model"]) == [doc["config"]["model_args"]["pretrained"]] == ["google/gemma-2b"]
    assert list(runs["harness_version"]) == [doc["lm_eval_version"]] == ["0.4.10.dev0"]

    groups = set(doc.get("groups") or {})
    leaves = {t for t in doc["results"] if t not in groups}
    checked = 0
    for task in sorted(leaves):
        entry = doc["results"][task]
        for metric in sorted(_metrics_of(entry)):
            cells = board(store, task=task, metric=metric).cells
            assert len(cells) == 1, (task, metric)
            cell = cells.iloc[0]
            key, stderr_key = lm_eval_key(metric, False)
            assert same(cell.score, number(entry[key])), (task, metric, cell.score)
            assert same(cell.reported, number(entry[key]))
            assert same(cell.se, number(entry.get(stderr_key))), (task, metric, cell.se)
            assert same(cell.reported_stderr, number(entry.get(stderr_key)))
            assert cell.n == doc["n-samples"][task]["effective"]
            assert not cell.has_items
            checked += 1
    assert checked == sum(len(_metrics_of(doc["results"][t])) for t in leaves) > 0
    assert set(board(store).cells["task"]) == leaves


def test_group_value_is_the_one_the_harness_printed(african, tmp_path):
    """global_mmlu_sw: 0.255 +- 0.021945867372873167 over six subtasks of 400 docs."""
    path = african / AFRICAN[0]
    doc = _doc(path)
    lb = board(ingest(tmp_path, path))
    assert lb.groups == {"global_mmlu_sw": doc["group_subtasks"]["global_mmlu_sw"]}
    row = lb.group_cells.set_index("group").loc["global_mmlu_sw"]
    printed = doc["groups"]["global_mmlu_sw"]
    assert row["source"] == "harness"
    assert same(row["score"], printed["acc,none"]) and row["score"] == 0.255
    assert same(row["se"], printed["acc_stderr,none"])
    assert row["n"] == sum(v["effective"] for v in doc["n-samples"].values()) == 400
    assert same(row["recomputed"], printed["acc,none"])      # size-weighted subtask mean


def test_first_filter_is_the_primary_metric(african, tmp_path):
    """afrimgsm: metric_list [exact_match], filter_list [remove_whitespace,
    flexible-extract]: the harness's primary is exact_match,remove_whitespace, in the
    library and in the CLI's JSON."""
    path = african / AFRICAN[1]
    cfg = _doc(path)["configs"]["afrimgsm_swa_prompt_1"]
    assert [f["name"] for f in cfg["filter_list"]] == ["remove_whitespace", "flexible-extract"]
    store = ingest(tmp_path, path)
    lb = board(store)
    assert lb.metrics_by_task == {"afrimgsm_swa_prompt_1": "exact_match,remove_whitespace"}
    assert lb.metric_choices["afrimgsm_swa_prompt_1"].is_primary
    proc = run_cli(tmp_path / "wild", "leaderboard", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["metrics_by_task"] == {"afrimgsm_swa_prompt_1": "exact_match,remove_whitespace"}
    assert out["cells"][0]["score"] == 0.004


def test_sacrebleu_scores_are_shown_as_printed(african, tmp_path):
    """mafand: lm_eval's built-in bleu/chrf (aggregation "bleu"/"chrf": sacreBLEU corpus
    scores on 0-100) are shown with the printed value, stderr and n, higher is better as the
    file declares."""
    path = african / AFRICAN[4]
    doc = _doc(path)
    entry = doc["results"]["mafand_en-swa_prompt_1"]
    aggs = {m["metric"]: m["aggregation"]
            for m in doc["configs"]["mafand_en-swa_prompt_1"]["metric_list"]}
    assert aggs == {"bleu": "bleu", "chrf": "chrf"}
    store = ingest(tmp_path, path)
    for metric in ("bleu", "chrf"):
        lb = board(store, metric=metric)
        assert lb.metric_info["mafand_en-swa_prompt_1"].direction == "higher"
        cell = lb.cells.iloc[0]
        assert same(cell.score, entry[f"{metric},none"])
        assert same(cell.se, entry[f"{metric}_stderr,none"])
        assert cell.n == 1835


@pytest.mark.parametrize("pair,task,metric", [
    ((AFRICAN[1], AFRICAN[2]), "afrimgsm_swa_prompt_1", "exact_match,remove_whitespace"),
    ((AFRICAN[5], AFRICAN[6]), "afrihate_swa", "acc"),
])
def test_zero_and_five_shot_compare_on_the_printed_numbers(pair, task, metric, african,
                                                           tmp_path):
    """Two runs of one model that differ in num_fewshot only: ``compare`` names the protocol
    difference, says it is unpaired (no sample logs) and uses the printed numbers."""
    a, b = (_doc(african / p) for p in pair)
    store_path = tmp_path / "s"
    proc = run_cli(store_path, "ingest", *(str(african / p) for p in pair))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli(store_path, "compare", "1", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["protocol_diff"] == [{"scope": task, "setting": "num_fewshot", "value_a": "0",
                                     "value_b": "5", "category": "few-shot"}]
    row = out["per_task"][0]
    key, stderr_key = lm_eval_key(metric, False)
    assert (row["task"], row["metric"], row["kind"]) == (task, metric,
                                                         "unpaired from reported stderr")
    assert same(row["score_a"], a["results"][task][key])
    assert same(row["score_b"], b["results"][task][key])
    assert same(row["diff"], b["results"][task][key] - a["results"][task][key])
    se_a, se_b = a["results"][task][stderr_key], b["results"][task][stderr_key]
    if se_b == 0 and b["results"][task][key] == 1.0:
        # 5-shot afrihate: every item right, reported stderr 0; that side gets Agresti and
        # Caffo's term, not an exact 0 (tests/test_zero_reported_se.py)
        n = b["n-samples"][task]["effective"]
        se_b = ((n + 1) / (n + 2) * (1 / (n + 2)) / (n + 2)) ** 0.5
    assert same(row["se"], (se_a ** 2 + se_b ** 2) ** 0.5)
    assert row["n"] == a["n-samples"][task]["effective"]


# ---------------------------------------------------------------------------------------
# lm-evaluation-harness v0.3 (harness-0.3-bloom) and a 0.4 perplexity task (benczechmark)
# ---------------------------------------------------------------------------------------
BLOOM = ["bloom-560m_question_answering_0-shot.json",
         "bloom-560m_common_sense_reasoning_0-shot.json"]


@pytest.mark.parametrize("name", BLOOM)
def test_v03_file_is_shown_as_printed(name, wild_dir, tmp_path):
    """Every metric of every task with the printed value and stderr (``acc``/``acc_stderr``);
    a v0.3 file does not say how many items, so n is unknown."""
    path = wild_dir / "lm_eval" / "harness-0.3-bloom" / name
    doc = _doc(path)
    store = ingest(tmp_path, path)
    assert list(store.runs()["model"]) == ["bigscience/bloom-560m"]
    checked = 0
    for task, entry in doc["results"].items():
        for metric in (k for k in entry if not k.endswith("_stderr")):
            cell = board(store, task=task, metric=metric).cells.iloc[0]
            assert same(cell.score, entry[metric]), (task, metric)
            assert same(cell.reported, entry[metric])
            assert same(cell.se, number(entry.get(f"{metric}_stderr"))), (task, metric)
            assert pd.isna(cell.n)                   # a v0.3 file gives no n
            checked += 1
    assert checked == sum(len([k for k in e if not k.endswith("_stderr")])
                          for e in doc["results"].values())


def test_squad2_sub_scores_are_percentages_and_higher_is_better(wild_dir, tmp_path):
    """squad2 (v0.3): HasAns_exact, best_f1, ... come from the squad_v2 metric in percent
    (best_exact 50.07): higher is better on [0, 100], so the task is ranked, never averaged
    with proportions; its value is the printed one."""
    path = wild_dir / "lm_eval" / "harness-0.3-bloom" / BLOOM[0]
    squad = _doc(path)["results"]["squad2"]
    assert squad["best_exact"] > 1                   # the file's own proof of the 0-100 scale
    store = ingest(tmp_path, path)
    for metric in ("HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_exact",
                   "best_f1"):
        lb = board(store, task="squad2", metric=metric)
        info = lb.metric_info["squad2"]
        assert (info.direction, info.low, info.high) == ("higher", 0.0, 100.0), metric
        assert not info.averageable
        assert same(lb.cells.iloc[0].score, squad[metric])


def test_perplexity_task_is_lower_is_better_without_an_interval(wild_dir, tmp_path):
    """benczechmark_essay (lm_eval 0.4, loglikelihood_rolling): word_perplexity 82.42 over
    1693 docs, stderr "N/A": shown as printed, lower is better, no interval."""
    path = wild_dir / "lm_eval" / "benczechmark" / "results_2024-07-15T16-12-18.324809.json"
    doc = _doc(path)
    entry = doc["results"]["benczechmark_essay"]
    assert entry["word_perplexity_stderr,none"] == "N/A"
    store = ingest(tmp_path, path)
    assert list(store.runs()["model"]) == ["BUT-FIT/CSTinyLlama-1.2B"]
    lb = board(store)
    assert lb.metrics_by_task == {"benczechmark_essay": "word_perplexity"}
    assert lb.metric_choices["benczechmark_essay"].is_primary
    assert lb.metric_info["benczechmark_essay"].direction == "lower"
    cell = lb.cells.iloc[0]
    assert same(cell.score, entry["word_perplexity,none"]) and cell.score == 82.42259089871621
    assert cell.n == doc["n-samples"]["benczechmark_essay"]["effective"] == 1693
    assert pd.isna(cell.se) and pd.isna(cell.low) and pd.isna(cell.high)


# ---------------------------------------------------------------------------------------
# inspect_ai logs (inspect/more)
# ---------------------------------------------------------------------------------------
def _header(path: Path) -> dict:
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("header.json"))
    return _doc(path)


def _samples(path: Path) -> list[dict]:
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as z:
            return [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]
    return _doc(path)["samples"]


INSPECT = {
    # file -> (model, task, scorer) as the log names them
    "log_streaming.eval": ("azureai/Meta-Llama-3-1-405B-Instruct-jqf", "popularity", "match"),
    "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval":
        ("openai/gpt-4o-mini", "popularity", "match"),
    "2025-05-12T20-27-36-04-00_browser.json": ("openai/gpt-4o-mini", "browser", "includes"),
    "mmlu-no-summary-choices.eval": ("openai/gpt-4o", "inspect_evals/mmlu_0_shot", "choice"),
    "log_read_sample.eval": ("ollama/gemma3", "popularity", "match"),
    "data_arc_qwen.json": ("ollama/qwen2.5:0.5b", "inspect_evals/arc_easy", "choice"),
    "data_arc_sonnet.json": ("anthropic/claude-sonnet-4-0", "inspect_evals/arc_easy", "choice"),
    "2025-09-23T08-09-58-04-00_theory-of-mind_bbB4eRCx2rFJLyPH42Cj9r.eval":
        ("openai/gpt-4o-mini", "theory_of_mind", "model_graded_fact"),
}


@pytest.mark.parametrize("name", sorted(INSPECT))
def test_inspect_log_is_shown_as_printed(name, more, tmp_path):
    """Model and task from ``eval``; one item per sample id; the score and stderr shown are
    the log's ``results`` accuracy and stderr, and the score is the mean over items of each
    item's epoch mean (C = 1, I = 0), as inspect computes it."""
    path = more / name
    model, task, scorer = INSPECT[name]
    h = _header(path)
    assert (h["eval"]["model"], h["eval"]["task"]) == (model, task)
    (result,) = h["results"]["scores"]
    assert result["name"] == scorer
    store = ingest(tmp_path, path)
    assert list(store.runs()["model"]) == [model]
    cell = board(store).cells.iloc[0]
    assert (cell.task, cell.metric) == (task, scorer)
    assert same(cell.score, result["metrics"]["accuracy"]["value"])
    assert same(cell.reported, result["metrics"]["accuracy"]["value"])
    assert same(cell.reported_stderr, result["metrics"]["stderr"]["value"])

    samples = _samples(path)
    credit = {"C": 1.0, "I": 0.0}
    by_item: dict[str, list[float]] = {}
    for s in samples:
        by_item.setdefault(str(s["id"]), []).append(credit[s["scores"][scorer]["value"]])
    assert cell.has_items and cell.n == len(by_item)
    means = [sum(v) / len(v) for v in by_item.values()]
    assert same(cell.score, sum(means) / len(means))
    if len(by_item) > 1:                # one item has no standard error; evalbars shows none
        assert same(cell.se, result["metrics"]["stderr"]["value"])


def test_two_epochs_are_two_answers_of_one_item(more, tmp_path):
    """log_streaming: limit 2, epochs 2: 4 sample files (total_samples 4) are 2 items with 2
    answers each; 0.75 +- 0.25 as printed (item means 0.5 and 1.0)."""
    path = more / "log_streaming.eval"
    h = _header(path)
    assert h["eval"]["config"]["epochs"] == 2 and h["results"]["total_samples"] == 4
    store = ingest(tmp_path, path)
    tasks = store.tasks().iloc[0]
    assert tasks["n_items"] == 2
    cell = board(store).cells.iloc[0]
    assert (cell.n, cell.score, cell.se) == (2, 0.75, 0.25)


def test_arc_logs_pair_on_their_shared_questions(more, tmp_path):
    """Qwen (limit 3) and Sonnet (limit 5) on inspect_evals/arc_easy: compared on the 3
    questions both logs hold; the 2 only in Sonnet's log are named."""
    qwen, sonnet = more / "data_arc_qwen.json", more / "data_arc_sonnet.json"
    ids_q = {str(s["id"]) for s in _samples(qwen)}
    ids_s = {str(s["id"]) for s in _samples(sonnet)}
    store_path = tmp_path / "s"
    assert run_cli(store_path, "ingest", str(qwen), str(sonnet)).returncode == 0
    proc = run_cli(store_path, "compare", "1", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (pairing,) = out["pairing"]
    assert pairing["n_shared"] == len(ids_q & ids_s) == 3
    assert sorted(pairing["only_b"]) == sorted(ids_s - ids_q) and pairing["only_a"] == []
    row = out["per_task"][0]
    assert (row["kind"], row["n"], row["b"], row["c"]) == ("paired", 3, 2.0, 0.0)
    assert not row["different"]


def test_eval_set_board_and_compare_give_one_answer(wild_dir, tmp_path):
    """log-sets: four models on the same 100 popularity samples. Each cell is the log's
    accuracy over 100 items; the best is the highest; a run is "tied with best" exactly when
    the Holm-adjusted p of its paired comparison with the best (the p ``compare`` prints for
    that pair, adjusted over the 3 comparisons) is >= 0.05."""
    folder = wild_dir / "inspect" / "log-sets"
    logs = sorted(folder.glob("*.eval"))
    printed = {}
    for path in logs:
        h = _header(path)
        (result,) = h["results"]["scores"]
        printed[h["eval"]["model"]] = result["metrics"]["accuracy"]["value"]
    assert len(printed) == 4
    store_path = tmp_path / "s"
    assert run_cli(store_path, "ingest", str(folder)).returncode == 0
    from evalcore.analysis import leaderboard
    from evalcore.store import Store

    store = Store(store_path)
    lb = leaderboard(store, include_ranks=False)
    cells = lb.cells.set_index("run")
    for model, value in printed.items():
        assert same(cells.loc[model, "score"], value) and cells.loc[model, "n"] == 100
    best = max(printed, key=printed.get)
    tiers = lb.tiers.set_index("run")
    assert set(tiers["best_run"]) == {best} == {"google/gemini-2.5-pro"}
    ids = dict(zip(store.runs()["name"], store.runs()["run_id"]))
    raw = {}
    for model in printed:
        if model == best:
            continue
        proc = run_cli(store_path, "compare", str(ids[model]), str(ids[best]), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        row = json.loads(proc.stdout)["per_task"][0]
        assert row["kind"] == "paired" and row["n"] == 100
        assert same(row["diff"], printed[best] - printed[model])
        raw[model] = row["p_value"]
        assert same(tiers.loc[model, "p_raw"], row["p_value"])
    # Holm over the comparisons with the best, by hand
    holm, running = {}, 0.0
    for k, (model, p) in enumerate(sorted(raw.items(), key=lambda kv: kv[1])):
        running = max(running, min(1.0, (len(raw) - k) * p))
        holm[model] = running
    for model, p in holm.items():
        assert same(tiers.loc[model, "p_holm"], p)
        assert bool(tiers.loc[model, "indistinguishable_from_best"]) == (p >= 0.05), model
    assert [m for m, p in holm.items() if p < 0.05] == ["openai/gpt-5",
                                                         "anthropic/claude-sonnet-4-20250514"]


# ---------------------------------------------------------------------------------------
# HELM run folder (helm-runs/every_eval_ever)
# ---------------------------------------------------------------------------------------
def test_helm_mmlu_run_is_shown_as_in_stats_json(wild_dir, tmp_path):
    """MMLU philosophy, openai/gpt2: exact_match (HELM's main metric for mmlu) 1 of 9 on the
    test split, 0 of 1 on valid, as stats.json prints them (count 1 = one train trial)."""
    run = next((wild_dir / "helm-runs" / "every_eval_ever").iterdir())
    stats = _doc(run / "stats.json")
    printed = {(s["name"]["name"], s["name"].get("split")): s["mean"] for s in stats
               if "mean" in s and not s["name"].get("perturbation")
               and "sub_split" not in s["name"]}
    store = ingest(tmp_path, run)
    assert list(store.runs()["model"]) == ["openai/gpt2"]
    lb = board(store)
    base = "mmlu:subject=philosophy,method=multiple_choice_joint"
    cells = lb.cells.set_index("task")
    assert set(cells.index) == {base, f"{base}@valid"}
    assert (cells.loc[base, "metric"], cells.loc[base, "n"]) == (
        "exact_match", printed[("num_instances", "test")])
    assert same(cells.loc[base, "score"], printed[("exact_match", "test")])
    assert cells.loc[f"{base}@valid", "n"] == printed[("num_instances", "valid")] == 1
    assert same(cells.loc[f"{base}@valid", "score"], printed[("exact_match", "valid")])
    assert lb.metric_choices[base].is_primary
    for metric in ("quasi_exact_match", "prefix_exact_match"):
        cell = board(store, task=base, metric=metric).cells.iloc[0]
        assert same(cell.score, printed[(metric, "test")])
