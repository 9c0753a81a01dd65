"""lm-evaluation-harness files from public repositories (tests/fixtures/wild/lm_eval/).

What a user checks by hand on each file: it is recognised, the run/tasks/items are the ones in
the file, and every score and stderr evalbars shows is the one printed in the file. The file's
numbers are read from the file here; a few are also pinned literally, as a person would copy
them. PROVENANCE.md in the folder says where each file comes from and what it holds.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from evalcore.errors import IngestError
from evalcore.ingest import detect_format, parse_paths

from .conftest import (
    board,
    cli_leaderboard,
    ingest,
    jsonl,
    lm_eval_groups,
    lm_eval_key,
    number,
    run_cli,
    same,
)

# results files: path under lm_eval/ -> (format version, model as the file names it)
RESULTS = {
    "pythia-v1/160m_step143000.json": ("0.3", "EleutherAI/pythia-v1.1-160m"),
    "pythia-v1/12b_step143000.json": ("0.3", "EleutherAI/pythia-v1.1-12b"),
    "pythia-v1/bloom-560m.json": ("0.3", "bigscience/bloom-560m"),
    "harness-0.3/llama-7B_mmlu_5-shot.json": ("0.3", "/gaueko1/hizkuntza-ereduak/LLaMA/lm/huggingface/7B"),
    "harness-0.3/llama-7B_lambada_0-shot.json": ("0.3", "/gaueko1/hizkuntza-ereduak/LLaMA/lm/huggingface/7B"),
    "harness-0.3/llama-7B_human_alignment_0-shot.json": ("0.3", "/gaueko1/hizkuntza-ereduak/LLaMA/lm/huggingface/7B"),
    "bias_classification/results_2024-06-17T15-44-37.867068.json": ("0.4", "meta-llama/Meta-Llama-3-8B"),
    "asdiv/results_2024-08-21T03-44-09.494230.json": ("0.4", "meta-llama/Meta-Llama-3-8B-Instruct"),
    "gsm8k_cot_llama/results_2024-08-25T21-59-12.123082.json": ("0.4", "meta-llama/Meta-Llama-3-8B-Instruct"),
    "eqbench/results_FLOR-760M_2025-07-21T14-41-47.889425.json": ("0.4", "/gpfs/projects/bsc88/hf-models/FLOR-760M"),
    "masakhaner/results_2026-01-16T15-23-47.285735.json": ("0.4", "google/gemma-2b"),
    "qwen2.5-3b/results_2025-03-18T00-57-09.174988.json": ("0.4", "qwen/qwen2.5-3B"),
    "qwen2.5-1.5b/results_2025-03-18T01-39-56.000360.json": ("0.4", "qwen/qwen2.5-1.5B"),
    "gemma-2-2b/results_2025-03-06T19-20-09.274097.json": ("0.4", "google/gemma-2-2b"),
    "nl2foam/results_2025-12-17T20-24-58.608862.json": ("0.4", "/scratch/hieu/nl2foam_sft_0/outputs/nl2foam_sft_0__8__1765350318"),
    "math_perturbed/results_2026-01-21T03-44-18.458309.json": ("0.4", "RylanSchaeffer/mem_Qwen3-93M_minerva_math_rep_0_sbst_1.0000_epch_1_ot_1"),
}

# a results file and the sample logs of the same run: folder -> (samples file, task, metric)
PAIRS = {
    "asdiv": ("samples_asdiv_2024-08-21T03-44-09.494230.jsonl", "asdiv", "acc"),
    "bias_classification": ("samples_bias_classification_2024-06-17T15-44-37.867068.json",
                            "bias_classification", "acc"),
    "eqbench": ("samples_eqbench_ca_2025-07-21T14-41-47.889425.jsonl", "eqbench_ca", "eqbench"),
    "math_perturbed": ("samples_math_perturbed_full_2026-01-21T03-44-18.458309.jsonl",
                       "math_perturbed_full", "exact_match"),
}


def _leaf_tasks(doc: dict) -> set[str]:
    """Tasks of a results file that are not groups and have at least one numeric metric."""
    groups = lm_eval_groups(doc)
    leaves = set()
    for task, entry in doc["results"].items():
        if task in groups:
            continue
        if any(number(v) is not None and not k.startswith("alias") and "_stderr" not in k
               for k, v in entry.items()):
            leaves.add(task)
    return leaves


@pytest.mark.parametrize("rel", sorted(RESULTS))
def test_results_file_is_read_as_printed(rel, lm, tmp_path):
    path = lm / rel
    version, model = RESULTS[rel]
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert detect_format(path.name, path.read_bytes()[:65536]) == "lm_eval_results"

    store = ingest(tmp_path, path)
    runs = store.runs()
    assert len(runs) == 1 and runs["model"].iloc[0] == model

    lb = board(store)
    cells = lb.cells
    assert set(cells["task"]) == _leaf_tasks(doc)
    n_samples = doc.get("n-samples") or {}
    for cell in cells.itertuples():
        entry = doc["results"][cell.task]
        key, stderr_key = lm_eval_key(cell.metric, version == "0.3")
        printed, printed_se = number(entry[key]), number(entry.get(stderr_key))
        assert not cell.has_items
        assert same(cell.score, printed), (cell.task, cell.metric, cell.score, printed)
        assert same(cell.reported, printed)
        assert same(cell.se, printed_se), (cell.task, cell.metric, cell.se, printed_se)
        assert same(cell.reported_stderr, printed_se)
        if cell.task in n_samples:
            assert cell.n == n_samples[cell.task]["effective"]
        else:                                       # v0.3 files do not say how many items
            assert pd.isna(cell.n)


# Numbers as a person copies them from the file (the file's text, not evalbars' output).
PINS = [
    ("pythia-v1/160m_step143000.json", "arc_easy", "acc", 0.4351851851851852, 0.010173216430370908),
    ("harness-0.3/llama-7B_mmlu_5-shot.json", "hendrycksTest-abstract_algebra", "acc", 0.23,
     0.042295258468165065),
    ("asdiv/results_2024-08-21T03-44-09.494230.json", "asdiv", "acc", 0.92, 0.0387561713321444),
    ("gsm8k_cot_llama/results_2024-08-25T21-59-12.123082.json", "gsm8k_cot_llama",
     "exact_match,strict-match", 0.7725549658832449, 0.01154636331254809),
    ("qwen2.5-3b/results_2025-03-18T00-57-09.174988.json", "cola", "mcc", 0.15677745345652094,
     0.03323371936414305),
]


@pytest.mark.parametrize("rel,task,metric,score,stderr", PINS)
def test_pinned_numbers(rel, task, metric, score, stderr, lm, tmp_path):
    cells = board(ingest(tmp_path, lm / rel), metric=metric).cells.set_index("task")
    assert cells.loc[task, "metric"] == metric
    assert cells.loc[task, "score"] == score
    assert cells.loc[task, "se"] == stderr


@pytest.mark.parametrize("folder", sorted(PAIRS))
def test_results_and_sample_log_become_one_run(folder, lm, tmp_path):
    samples_name, task, metric = PAIRS[folder]
    results_path = next((lm / folder).glob("results_*.json"))
    doc = json.loads(results_path.read_text(encoding="utf-8"))
    lines = jsonl(lm / folder / samples_name)
    assert detect_format(samples_name, (lm / folder / samples_name).read_bytes()[:65536]) \
        == "lm_eval_samples_jsonl"

    store = ingest(tmp_path, lm / folder)
    assert len(store.runs()) == 1
    cells = board(store, task=task, metric=metric).cells
    assert len(cells) == 1
    cell = cells.iloc[0]
    # the items are the sample log's lines, and the score is their mean
    values = [float(line[metric]) for line in lines]
    assert cell.has_items and cell.n == len(lines) == len({line["doc_id"] for line in lines})
    assert same(cell.score, sum(values) / len(values))
    key, stderr_key = lm_eval_key(metric, False)
    assert same(cell.reported, number(doc["results"][task][key]))
    assert same(cell.reported_stderr, number(doc["results"][task][stderr_key]))
    if len(lines) == doc["n-samples"][task]["effective"]:
        # a complete sample log reproduces the printed score and stderr
        assert same(cell.score, number(doc["results"][task][key]))
        if len(set(values)) > 1:
            assert same(cell.se, number(doc["results"][task][stderr_key]))


def test_asdiv_sample_log_reproduces_the_printed_numbers(lm, tmp_path):
    """50 docs (limit 50), 46 right: 0.92 +- 0.0387561713321444 as printed."""
    cell = board(ingest(tmp_path, lm / "asdiv")).cells.iloc[0]
    assert (cell.n, cell.score) == (50, 0.92)
    assert cell.se == pytest.approx(0.0387561713321444, rel=1e-12)


def test_cut_sample_log_is_flagged_not_silently_mixed(lm, tmp_path):
    """bias_classification: the sample log is cut to its first 40 of 609 lines (PROVENANCE);
    the items give 28/40 = 0.7 while the file prints 0.5106732348111659 over 609."""
    store = ingest(tmp_path, lm / "bias_classification")
    cell = board(store, metric="acc").cells.iloc[0]
    assert (cell.n, cell.score, cell.reported) == (40, 0.7, 0.5106732348111659)
    audit = store.audit().set_index("metric").loc["acc"]
    assert audit["n_reported"] == 609 and audit["n_items"] == 40
    assert audit["flag"]                              # the mismatch is said, not hidden


def test_sample_log_alone_takes_the_task_from_its_name(lm, tmp_path):
    path = lm / "asdiv" / PAIRS["asdiv"][0]
    store = ingest(tmp_path, path)
    assert set(store.tasks()["task"]) == {"asdiv"}


def test_corpus_metric_lists_are_not_item_scores(lm):
    """masakhaner: per-sample f1 values are [gold, prediction] lists passed to a corpus-level
    f1, not item scores; the run keeps the printed summary and says why no items."""
    runs = parse_paths([str(lm / "masakhaner")])
    assert len(runs) == 1
    run = runs[0]
    assert run.scores.empty
    assert any("f1" in w for w in run.warnings)
    doc = json.loads(next((lm / "masakhaner").glob("results_*.json")).read_text())
    summ = run.summaries.set_index(["task", "metric"])
    assert same(summ.loc[("masakhaner_luo_prompt_1", "f1,flexible-extract"), "value"],
                doc["results"]["masakhaner_luo_prompt_1"]["f1,flexible-extract"])


def test_infinite_item_score_is_refused_with_the_place(lm):
    """polymer_tg: the harness wrote "mae": Infinity for 17 of 24 docs (unparseable answers)."""
    path = lm / "polymer_tg" / "samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl"
    assert jsonl(path)[0]["mae"] == math.inf
    with pytest.raises(IngestError) as err:
        parse_paths([str(path)])
    assert str(err.value) == f"{path} at line 1, field mae: expected a finite score within +-1e+100 (found inf)"


def test_results_with_only_unusable_values_is_refused_naming_the_file(lm, tmp_path):
    """polymer_tg results: "mae,none": Infinity, "mae_stderr,none": NaN; nothing to show.

    The value is refused where it is parsed, so the message names the JSON
    field that holds it, and nothing is written.
    """
    path = lm / "polymer_tg" / "results_2025-06-30T19-40-09.461247.json"
    doc = json.loads(path.read_text())
    assert doc["results"]["polymer_tg_prediction"]["mae,none"] == math.inf
    proc = run_cli(tmp_path / "s", "ingest", str(path))
    assert proc.returncode == 3
    assert (f"- {path} at results.polymer_tg_prediction.mae,none: expected a finite number "
            "within +-1e+100 (found inf)") in proc.stdout
    assert "nothing was written" in proc.stdout


def test_group_rows_keep_the_printed_aggregate(lm, tmp_path):
    """gemma-2-2b: 57 MMLU subjects and the groups mmlu, mmlu_humanities, ... as printed."""
    path = lm / "gemma-2-2b" / "results_2025-03-06T19-20-09.274097.json"
    doc = json.loads(path.read_text())
    store = ingest(tmp_path, path)
    summ = store.summaries()
    groups = summ[summ["is_group"].fillna(False).astype(bool)]
    assert set(groups["task"]) == lm_eval_groups(doc)
    mmlu = groups[(groups["task"] == "mmlu") & (groups["metric"] == "acc")].iloc[0]
    assert mmlu["value"] == 0.5304087736789631 == doc["groups"]["mmlu"]["acc,none"]
    cells = board(store).cells
    assert len(cells) == 57 and not set(cells["task"]) & lm_eval_groups(doc)


def _primary(config: dict) -> str | None:
    metrics = config.get("metric_list") or []
    return metrics[0]["metric"] if metrics and isinstance(metrics[0], dict) else None


@pytest.mark.parametrize("rel", sorted(r for r, (v, _) in RESULTS.items() if v == "0.4"))
def test_default_metric_is_the_harness_primary(rel, lm, tmp_path):
    """lm_eval 0.4: the task config's first metric_list entry is the primary metric."""
    doc = json.loads((lm / rel).read_text())
    lb = board(ingest(tmp_path, lm / rel))
    expected = {t: _primary(doc["configs"].get(t, {})) for t in lb.metrics_by_task}
    wrong = {t: (m, expected[t]) for t, m in lb.metrics_by_task.items()
             if expected[t] and m.split(",")[0] != expected[t]}
    assert wrong == {}


def test_pythia_macro_average_only_combines_accuracies(lm, tmp_path):
    """pythia-v1 160m vs 12b (v0.3, 87 tasks): the 12b model is better on every accuracy the
    files print for ARC, PIQA, SciQ, WinoGrande and LAMBADA, and has the lower perplexity."""
    a = json.loads((lm / "pythia-v1/160m_step143000.json").read_text())["results"]
    b = json.loads((lm / "pythia-v1/12b_step143000.json").read_text())["results"]
    for task in ("arc_easy", "arc_challenge", "piqa", "sciq", "winogrande", "lambada_openai"):
        assert b[task]["acc"] > a[task]["acc"]
    assert b["lambada_openai"]["ppl"] < a["lambada_openai"]["ppl"]   # 3.92 vs 38.06
    store = ingest(tmp_path, lm / "pythia-v1/160m_step143000.json",
                   lm / "pythia-v1/12b_step143000.json")
    lb = board(store)
    avg = lb.averages.set_index("run")
    assert avg.loc["EleutherAI/pythia-v1.1-12b", "score"] > avg.loc["EleutherAI/pythia-v1.1-160m", "score"]
    for tasks in avg["tasks"]:
        names = tasks.split(",") if isinstance(tasks, str) else list(tasks)
        assert not [t for t in names if t.strip().startswith("crows_pairs")]
        assert 0.0 <= avg["score"].max() <= 1.0


def test_macro_average_keeps_scales_apart(lm, tmp_path):
    """nl2foam: bert_score 0.801325460114618 (0-1) and llm_judge 89.156 (0-100) in one file."""
    path = lm / "nl2foam" / "results_2025-12-17T20-24-58.608862.json"
    doc = json.loads(path.read_text())
    assert doc["results"]["nl2foam_llm_judge_original"]["llm_judge,none"] == 89.156
    lb = board(ingest(tmp_path, path))
    for row in lb.averages.itertuples():
        assert 0.0 <= row.score <= 1.0
        assert "nl2foam_llm_judge_original" not in str(row.tasks)


def test_memory_addresses_are_not_protocol_differences(lm, tmp_path):
    store = ingest(tmp_path, lm / "qwen2.5-1.5b", lm / "qwen2.5-3b")
    ids = store.runs()["run_id"].tolist()
    diff = store.protocol_diff(ids[0], ids[1])
    noisy = diff[diff["value_a"].astype(str).str.contains(" at 0x")]
    assert noisy.empty, noisy[["scope", "setting"]].to_string()


def test_qwen_pair_shows_the_two_models_from_their_files(lm, tmp_path):
    store = ingest(tmp_path, lm / "qwen2.5-1.5b", lm / "qwen2.5-3b")
    cells = board(store, task="arc_easy", metric="acc").cells.set_index("run")
    for folder in ("qwen2.5-1.5b", "qwen2.5-3b"):
        doc = json.loads(next((lm / folder).glob("results_*.json")).read_text())
        model = doc["config"]["model_args"].split(",")[0].removeprefix("pretrained=")
        assert same(cells.loc[model, "score"], doc["results"]["arc_easy"]["acc,none"])
        assert same(cells.loc[model, "se"], doc["results"]["arc_easy"]["acc_stderr,none"])


def test_cli_leaderboard_json_prints_the_file_numbers(lm, tmp_path):
    store = ingest(tmp_path, lm / "pythia-v1", lm / "asdiv")
    store.close()
    out = cli_leaderboard(tmp_path / "wild", "--metric", "acc")
    files = {
        "EleutherAI/pythia-v1.1-160m": json.loads((lm / "pythia-v1/160m_step143000.json").read_text()),
        "EleutherAI/pythia-v1.1-12b": json.loads((lm / "pythia-v1/12b_step143000.json").read_text()),
        "bigscience/bloom-560m": json.loads((lm / "pythia-v1/bloom-560m.json").read_text()),
    }
    asdiv = json.loads(next((lm / "asdiv").glob("results_*.json")).read_text())
    checked = 0
    for cell in out["cells"]:
        if cell["run"] in files:
            entry = files[cell["run"]]["results"][cell["task"]]
            assert same(cell["score"], entry["acc"]) and same(cell["se"], entry["acc_stderr"])
        else:
            assert cell["task"] == "asdiv"
            assert same(cell["score"], asdiv["results"]["asdiv"]["acc,none"])
            assert same(cell["se"], asdiv["results"]["asdiv"]["acc_stderr,none"])
        checked += 1
    assert checked == len(out["cells"]) > 100
