"""lighteval results files from public repositories (tests/fixtures/wild/lighteval/).

What a user checks by hand on each file: it is recognised, the run and its tasks are the ones
in the file (``all`` is an average, not a task), every value and stderr evalbars shows is the
one printed in the file, and n is the number of documents the file says were scored.
PROVENANCE.md in the folder says where each file comes from and what it holds.
"""

from __future__ import annotations

import json
import math
import zipfile

import pandas as pd
import pytest

from evalcore.ingest import detect_format, parse_paths
from evalcore.ingest.lighteval import split_key

from .conftest import board, cli_leaderboard, ingest, number, same

# file under lighteval/ -> model as config_general names it
FILES = {
    "open-r1_olmo/results_2025-05-02T21-28-09.714048.json": "EleutherAI/pythia-14m",
    "open-r1_safety/results_2025-10-06T17-24-25.015556.json": "meta-llama/Llama-3.1-8B-Instruct",
    "open-r1_safety/results_2025-10-07T12-50-01.529720.json": "meta-llama/Llama-3.1-8B-Instruct",
    "open-r1_safety/results_2025-10-05T12-32-21.038224.json":
        "Neelectric/Llama-3.1-8B-Instruct_SFT_MoT_mathv00.01",
}


@pytest.fixture
def lev(wild_dir):
    return wild_dir / "lighteval"


def _docs(doc: dict, key: str) -> int | None:
    """effective_num_docs of a results key, read from config_tasks as a person would."""
    suite, task, _ = split_key(key)
    for k in (key, f"{suite}|{task}"):
        entry = doc.get("config_tasks", {}).get(k)
        if isinstance(entry, dict):
            n = entry.get("effective_num_docs")
            return n if isinstance(n, int) and n >= 0 else None
    return None


@pytest.mark.parametrize("rel", sorted(FILES))
def test_results_file_is_read_as_printed(rel, lev, tmp_path):
    path = lev / rel
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert detect_format(path.name, path.read_bytes()[:65536]) == "lighteval_results"

    store = ingest(tmp_path, path)
    runs = store.runs()
    assert len(runs) == 1
    assert runs["model"].iloc[0] == FILES[rel] == doc["config_general"]["model_name"]
    assert runs["source_format"].iloc[0] == "lighteval"
    assert runs["harness"].iloc[0] == "lighteval"

    keys = [k for k in doc["results"] if k != "all"]
    by_task = {split_key(k)[1]: k for k in keys}
    summaries = store.summaries()
    assert set(summaries["task"]) == set(by_task)            # "all" is not a task
    printed = [(split_key(k)[1], m) for k in keys for m in doc["results"][k]
               if not m.endswith("_stderr")]
    assert len(summaries) == len(printed)
    for row in summaries.itertuples():
        key = by_task[row.task]
        entry = doc["results"][key]
        assert same(row.value, number(entry[row.metric])), (row.task, row.metric)
        assert same(row.stderr, number(entry.get(f"{row.metric}_stderr")))
        assert not row.is_group
        n = _docs(doc, key)
        assert (pd.isna(row.n) if n is None else row.n == n), (row.task, row.n, n)

    cells = board(store).cells                         # the leaderboard shows the same numbers
    assert len(cells) == len(by_task)
    for cell in cells.itertuples():
        entry = doc["results"][by_task[cell.task]]
        assert not cell.has_items
        assert same(cell.score, number(entry[cell.metric]))
        assert same(cell.se, number(entry[f"{cell.metric}_stderr"]))
        assert cell.direction == "higher"              # config_tasks: higher_is_better true


# Numbers as a person copies them from the file.
PINS = [
    ("open-r1_safety/results_2025-10-06T17-24-25.015556.json", "math_500",
     "math_pass@1:1_samples", 0.456, 0.022296238348407053, 500),
    ("open-r1_safety/results_2025-10-07T12-50-01.529720.json", "lcb:codegeneration",
     "codegen_pass@1:16", 0.09748134328358209, 0.01443701801112539, 268),
    ("open-r1_safety/results_2025-10-05T12-32-21.038224.json", "math_500",
     "pass@k_with_k&n", 0.202, 0.017973260031288255, None),
    ("open-r1_olmo/results_2025-05-02T21-28-09.714048.json", "aime24",
     "math_pass@1:32_samples", 0.0, 0.0, 30),
]


@pytest.mark.parametrize("rel,task,metric,value,stderr,n", PINS)
def test_pinned_numbers(rel, task, metric, value, stderr, n, lev, tmp_path):
    store = ingest(tmp_path, lev / rel)
    row = store.summaries().set_index(["task", "metric"]).loc[(task, metric)]
    assert row["value"] == value and row["stderr"] == stderr
    assert (pd.isna(row["n"]) if n is None else row["n"] == n)
    out = cli_leaderboard(tmp_path / "wild", "--task", task, "--metric", metric)
    cell = next(c for c in out["cells"] if c["task"] == task)
    assert cell["score"] == value and cell["se"] == stderr


@pytest.mark.parametrize("rel,task,metric", [
    ("open-r1_safety/results_2025-10-06T17-24-25.015556.json", "math_500", "math_pass@1:1_samples"),
])
def test_n_is_documents_not_requests(rel, task, metric, lev):
    """pass@1 with one sample is a 0/1 score per document, and lighteval's stderr is
    sqrt(p(1-p)/(n-1)): the printed stderr fits n = effective_num_docs, so that is the n
    evalbars stores."""
    run = parse_paths([lev / rel])[0]
    row = run.summaries.set_index(["task", "metric"]).loc[(task, metric)]
    p, n = row["value"], int(row["n"])
    assert math.isclose(row["stderr"], math.sqrt(p * (1 - p) / (n - 1)), rel_tol=1e-9)


def test_request_counts_are_not_item_counts(lev):
    """aime24: summary_tasks counts 60 requests, config_tasks 30 documents: n is 30."""
    path = lev / "open-r1_olmo/results_2025-05-02T21-28-09.714048.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["summary_tasks"]["lighteval|aime24|0"]["non_padded"] == 60
    run = parse_paths([path])[0]
    assert set(run.summaries["n"]) == {30}
    assert run.tasks.iloc[0]["protocol"]["num_fewshot"] == 0
    assert run.tasks.iloc[0]["protocol"]["suite"] == "lighteval"


def test_unknown_n_is_unknown_and_said(lev):
    path = lev / "open-r1_safety/results_2025-10-05T12-32-21.038224.json"
    run = parse_paths([path])[0]
    assert run.summaries["n"].isna().all()
    assert any("number of items unknown" in w and "math_500" in w for w in run.warnings)


def test_protocol_diff_names_the_prompt_difference(lev, tmp_path):
    """Two math_500 runs whose prompts differ (hash_full_prompts): the diff says so."""
    a = lev / "open-r1_safety/results_2025-10-06T17-24-25.015556.json"
    b = lev / "open-r1_safety/results_2025-10-05T12-32-21.038224.json"
    store = ingest(tmp_path, a, b)
    ids = dict(zip(store.runs()["model"], store.runs()["run_id"]))
    diff = store.protocol_diff(ids["meta-llama/Llama-3.1-8B-Instruct"],
                               ids["Neelectric/Llama-3.1-8B-Instruct_SFT_MoT_mathv00.01"],
                               task="math_500")
    row = diff[diff["setting"] == "hash_full_prompts"].iloc[0]
    assert (row["value_a"], row["value_b"]) == ("d1956141eae5922a", "ef46db3751d8e999")
    assert row["category"] == "prompt"


def test_folder_of_lighteval_files_gives_one_run_per_file(lev, tmp_path):
    """The loose results files and the zip's two runs (results + details each)."""
    store = ingest(tmp_path, lev)
    runs = store.runs()
    assert len(runs) == len(FILES) + 2
    assert sorted(runs["model"]) == sorted(
        [*FILES.values(), *["Neelectric/OLMo-2-1124-7B-Instruct_SFTv02.00"] * 2])
    assert runs["has_items"].sum() == 2


# --- a lighteval output folder with its per-item details (zip of two real runs) -------------
ZIP = "open-r1_olmo/OLMo-2-1124-7B-Instruct_SFTv02.00_gpqa-diamond.zip"
GPQA = "gpqa:diamond"


def _zip_results(lev) -> dict[str, dict]:
    """timestamp -> the results JSON inside the zip, as a person reads it."""
    with zipfile.ZipFile(lev / ZIP) as z:
        return {n.rsplit("results_", 1)[1][:-5]: json.loads(z.read(n))
                for n in z.namelist() if n.endswith(".json")}


def test_details_give_item_scores_that_reproduce_the_printed_numbers(lev, tmp_path):
    store = ingest(tmp_path, lev / ZIP)
    runs = store.runs()
    assert len(runs) == 2 and set(runs["model"]) == {"Neelectric/OLMo-2-1124-7B-Instruct_SFTv02.00"}
    assert runs["has_items"].all()
    docs = _zip_results(lev)
    audit = store.audit()
    for rid in runs["run_id"]:
        rows = audit[audit["run_id"] == rid]
        assert len(rows) == 3                                   # three pass@1 metrics
        ts = next(t for t, d in docs.items()
                  if same(d["results"]["lighteval|gpqa:diamond|0"]["gpqa_pass@1:1_samples"],
                          rows.set_index("metric").loc["gpqa_pass@1:1_samples", "reported"]))
        printed = docs[ts]["results"]["lighteval|gpqa:diamond|0"]
        for r in rows.itertuples():
            assert r.n_items == 198 == r.n_reported
            assert same(r.reported, printed[r.metric])
            # the item scores reproduce the printed value and stderr (sd(ddof=1)/sqrt(n))
            assert math.isclose(r.recomputed, printed[r.metric], rel_tol=1e-12)
            assert math.isclose(r.recomputed_stderr, printed[f"{r.metric}_stderr"], rel_tol=1e-9)
            assert r.flag is None


def test_two_runs_pair_on_the_same_198_questions(lev, tmp_path):
    from evalcore.analysis import compare
    store = ingest(tmp_path, lev / ZIP)
    a, b = sorted(int(r) for r in store.runs()["run_id"])
    cmp = compare(store, a, b, task=GPQA, metric="gpqa_pass@1:1_samples")
    row = cmp.per_task.iloc[0]
    assert row["n"] == 198
    assert math.isclose(abs(row["diff"]), 0.26262626262626265 - 0.24242424242424243, rel_tol=1e-9)


def test_details_texts_are_kept(lev):
    run = next(r for r in parse_paths([lev / ZIP])
               if "0.26262626262626265" in json.dumps(r.summaries["value"].tolist()))
    assert len(run.texts) == 198 and run.texts["response"].notna().all()
    assert run.texts["prompt"].str.len().max() <= 8000
