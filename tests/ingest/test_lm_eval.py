"""lm-evaluation-harness parsing: the shared fixtures (numbers pinned from PROVENANCE.md)
and generated sample logs (JSONL 0.4.3+, JSON arrays 0.4.0-0.4.2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.ingest import detect_format, lm_eval, parse_paths, parse_uploads
from evalcore.ingest._common import Source
from evalcore.model import SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS, TEXT_COLUMNS

MISTRAL = "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"
GEMMA = "results-with-samples_v0.4.8_gemma-2b_gsm8k_limit8.json"
QWEN_RESULTS = "results_v0.4.13dev_qwen3-8b_negotiationtom-group_limit20.json"
QWEN_SAMPLES = "samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl"
LLAMA1B = "results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"
LLAMA3B = "results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"
BLOOM = "results_v0.3_bloom-560m_common-sense-reasoning_0shot.json"


def one(paths: list[Path]):
    runs = parse_paths(paths)
    assert len(runs) == 1
    return runs[0]


def assert_canonical(run) -> None:
    assert tuple(run.scores.columns) == SCORE_COLUMNS
    assert tuple(run.summaries.columns) == SUMMARY_COLUMNS
    assert tuple(run.texts.columns) == TEXT_COLUMNS
    assert tuple(run.tasks.columns) == TASK_COLUMNS
    assert np.isfinite(run.scores["score"].to_numpy()).all()
    assert not run.scores.duplicated(["task", "metric", "item_id", "answer_idx"]).any()
    json.dumps(run.protocol)
    for proto in run.tasks["protocol"]:
        json.dumps(proto)
    for f in run.files:
        assert len(f.sha256) == 64 and f.size > 0 and f.format


@pytest.fixture(scope="module")
def lm(fixtures_dir: Path) -> Path:
    return fixtures_dir / "lm_eval"


def test_mistral_vs_dialogpt_arc_easy_pair(lm: Path) -> None:
    mistral, dialogpt = one([lm / MISTRAL]), one([lm / DIALOGPT])
    for run in (mistral, dialogpt):
        assert_canonical(run)
        assert run.source_format == "lm_eval" and run.harness_version == "0.4.8"
        assert run.protocol["git_hash"] == "5831ca9"
    assert mistral.name == "mistralai/Mistral-7B-v0.1"
    assert dialogpt.name == "microsoft/DialoGPT-medium"
    a = mistral.scores[mistral.scores.metric == "acc"].set_index("item_id")
    b = dialogpt.scores[dialogpt.scores.metric == "acc"].set_index("item_id").loc[a.index]
    assert len(a) == 15 and sorted(a.index, key=int) == [str(i) for i in range(15)]
    assert a.score.mean() == pytest.approx(0.8)
    assert b.score.mean() == pytest.approx(1 / 3)
    norm = mistral.scores[mistral.scores.metric == "acc_norm"]
    assert norm.score.mean() == pytest.approx(0.7333333333333333)
    # PROVENANCE: b = 7 (Mistral right, DialoGPT wrong), c = 0; hashes equal doc by doc
    assert int(((a.score == 1) & (b.score == 0)).sum()) == 7
    assert int(((a.score == 0) & (b.score == 1)).sum()) == 0
    assert (a.item_hash == b.item_hash).all() and (a.prompt_hash == b.prompt_hash).all()
    # reported summary next to the recomputed one
    s = mistral.summaries.set_index("metric")
    assert s.loc["acc", "value"] == pytest.approx(0.8)
    assert s.loc["acc", "stderr"] == pytest.approx(0.10690449676496976)
    assert s.loc["acc", "n"] == 15
    assert mistral.tasks.set_index("task").loc["arc_easy", "n_choices"] == 4
    proto = mistral.tasks.set_index("task").loc["arc_easy", "protocol"]
    assert proto["num_fewshot"] == 0 and proto["output_type"] == "multiple_choice"
    assert proto["version"] == 1.0
    t = mistral.texts.set_index("item_id").loc["0"]
    assert t.prompt.startswith("Question: Which statement best explains why photosynthesis")
    assert t.target == "Sunlight is the source of energy for nearly all ecosystems."
    assert t.response == t.target  # highest loglikelihood (-19.125) is option 0


def test_gemma_gsm8k_two_filters_all_zero(lm: Path) -> None:
    run = one([lm / GEMMA])
    assert_canonical(run)
    counts = run.scores.groupby("metric").size().to_dict()
    assert counts == {"exact_match,strict-match": 8, "exact_match,flexible-extract": 8}
    assert (run.scores.score == 0).all()
    s = run.summaries.set_index("metric")
    assert s.loc["exact_match,strict-match", "stderr"] == 0.0
    assert len(run.texts) == 8  # one text per doc, not per (doc, filter)
    assert run.texts.set_index("item_id").loc["0", "response"] == " $128\n\n"
    assert run.tasks.set_index("task").loc["gsm8k", "protocol"]["generation_kwargs"]["until"][0] == "Question:"


def test_qwen_results_and_samples_become_one_run(lm: Path) -> None:
    run = one([lm / QWEN_RESULTS, lm / QWEN_SAMPLES])
    assert_canonical(run)
    assert run.name == "Qwen/Qwen3-8B" and run.harness_version == "0.4.13.dev0"
    assert {f.format for f in run.files} == {lm_eval.RESULTS, lm_eval.SAMPLES_JSONL}
    belief = run.scores[run.scores.task == "negotiationtom_belief"]
    assert set(belief.metric) == {"acc"} and len(belief) == 20
    assert belief.score.mean() == pytest.approx(0.45)
    # the CLT stderr sd(ddof=1)/sqrt(n) reproduces the reported acc_stderr (METHODS.md)
    assert belief.score.std(ddof=1) / math.sqrt(20) == pytest.approx(0.11413288653790232)
    tasks = run.tasks.set_index("task")
    assert tasks.loc["negotiationtom_belief", "n_choices"] == 4
    s = run.summaries.set_index(["task", "metric"])
    assert bool(s.loc[("negotiationtom", "acc"), "is_group"]) is True
    assert s.loc[("negotiationtom", "acc"), "n"] == 40            # sample_count, not sample_len
    assert s.loc[("negotiationtom_belief", "acc"), "n"] == 20     # n-samples effective
    assert math.isnan(s.loc[("negotiationtom_intention", "micro_f1"), "stderr"])
    assert s.loc[("negotiationtom_intention", "micro_f1"), "stderr_raw"] == "N/A"
    assert run.protocol["chat_template_sha"].startswith("a55ee1b1")
    assert run.protocol["fewshot_as_multiturn"] is True
    text = run.texts.set_index("item_id").loc["0"]
    assert text.target == "D" and text.response == "A"   # gold 3; best loglikelihood -10.0


def test_uploads_pair_results_and_samples_too(lm: Path) -> None:
    runs = parse_uploads([(QWEN_SAMPLES, (lm / QWEN_SAMPLES).read_bytes()),
                          (QWEN_RESULTS, (lm / QWEN_RESULTS).read_bytes())])
    assert len(runs) == 1 and len(runs[0].scores) == 20 and len(runs[0].files) == 2


def test_samples_alone_named_after_model_folder(lm: Path, tmp_path: Path) -> None:
    folder = tmp_path / "Qwen__Qwen3-8B"
    folder.mkdir()
    target = folder / "samples_negotiationtom_belief_2026-07-08T16-04-34.219874.jsonl"
    target.write_bytes((lm / QWEN_SAMPLES).read_bytes())
    run = one([target])
    assert run.name == "Qwen/Qwen3-8B"
    assert run.source_key == "lm_eval:2026-07-08T16-04-34.219874"
    assert set(run.scores.task) == {"negotiationtom_belief"}
    assert run.summaries.empty
    assert any("without their results file" in w for w in run.warnings)


def test_results_only_summaries_with_groups(lm: Path) -> None:
    a, b = one([lm / LLAMA1B]), one([lm / LLAMA3B])
    assert_canonical(a)
    assert a.scores.empty and b.scores.empty
    s = a.summaries.set_index(["task", "metric"])
    assert s.loc[("mmlu", "acc"), "stderr"] == pytest.approx(0.004005861705365989)
    assert s.loc[("mmlu", "acc"), "n"] == 14042   # sum over the 57 subtasks
    assert bool(s.loc[("mmlu", "acc"), "is_group"]) and not bool(s.loc[("arc_easy", "acc"), "is_group"])
    assert s.loc[("arc_easy", "acc"), "n"] == 2376
    assert s.loc[("cola", "mcc"), "stderr"] == pytest.approx(0.03188593560189863)
    assert a.tasks.set_index("task").loc["mmlu_anatomy", "n_choices"] == 4  # literal doc_to_choice
    assert a.harness_version == "git e7e32cb" and a.name == "meta-llama/Llama-3.2-1B"


def test_v03_results(lm: Path) -> None:
    run = one([lm / BLOOM])
    assert_canonical(run)
    assert run.name == "bigscience/bloom-560m" and run.protocol["results_format"] == "0.3"
    s = run.summaries.set_index(["task", "metric"])
    assert s.loc[("arc_easy", "acc"), "value"] == pytest.approx(0.4734848484848485)
    assert s.loc[("arc_easy", "acc"), "stderr"] == pytest.approx(0.010245347015573713)
    assert math.isnan(s.loc[("mc_taco", "em"), "stderr"])      # no stderr reported
    assert ("arc_easy", "acc_stderr") not in s.index
    assert run.tasks.set_index("task").loc["arc_easy", "protocol"]["num_fewshot"] == 0


def test_detects_formats_from_content(lm: Path) -> None:
    for name, fmt in [(QWEN_RESULTS, lm_eval.RESULTS), (QWEN_SAMPLES, lm_eval.SAMPLES_JSONL),
                      (MISTRAL, lm_eval.RESULTS), (BLOOM, lm_eval.RESULTS)]:
        head = (lm / name).read_bytes()[:65536]
        assert detect_format("renamed.txt", head) == fmt


# ---------------------------------------------------------------------------------------
# generated sample logs
# ---------------------------------------------------------------------------------------
def _mc_record(doc_id: int, lls: list[float], gold: int, acc: float, native: bool = False) -> dict:
    prompt = f"Question {doc_id}?\nAnswer:"
    opts = [f" option {k}" for k in range(len(lls))]
    if native:    # 0.4.0-0.4.2 / embedded layout
        arguments = [[prompt, o] for o in opts]
        resps = [[[ll, False]] for ll in lls]
        filtered = [[ll, False] for ll in lls]
    else:
        arguments = {f"gen_args_{k}": {"arg_0": prompt, "arg_1": o} for k, o in enumerate(opts)}
        resps = [[[str(ll), "False"]] for ll in lls]
        filtered = [[str(ll), "False"] for ll in lls]
    rec = {"doc_id": doc_id, "doc": {"q": doc_id}, "target": gold if native else str(gold),
           "arguments": arguments, "resps": resps, "filtered_resps": filtered, "filter": "none",
           "doc_hash": f"d{doc_id}", "prompt_hash": f"p{doc_id}", "target_hash": "t", "acc": acc}
    if not native:
        rec["metrics"] = ["acc"]
    return rec


def test_json_array_samples_of_040(tmp_path: Path) -> None:
    records = [_mc_record(i, [-1.0, -2.0 + i, -3.0], gold=1, acc=float(i >= 2), native=True)
               for i in range(4)]
    for r in records:
        r.pop("filter")          # 0.4.0 records may lack a filter
    path = tmp_path / "pretrained__EleutherAI__pythia-160m_arc_easy.jsonl"
    path.write_text(json.dumps(records, indent=2))
    assert detect_format(path.name, path.read_bytes()[:65536]) == lm_eval.SAMPLES_JSON
    run = one([path])
    assert run.files[0].format == lm_eval.SAMPLES_JSON
    assert run.scores.score.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert set(run.scores.metric) == {"acc"} and run.scores.item_hash.tolist()[0] == "d0"
    resp = run.texts.set_index("item_id").response
    assert resp["0"] == "option 0" and resp["2"] == "option 1"   # argmax of loglikelihoods
    assert run.tasks.n_choices.tolist() == [3]


def test_fast_and_line_by_line_paths_agree(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / "samples_arc_easy_2026-01-01T00-00-00.000001.jsonl"
    with path.open("w") as fh:
        for i in range(300):
            k = 3 + i % 3                    # 3..5 options, like ARC
            lls = rng.normal(size=k).round(3).tolist()
            fh.write(json.dumps(_mc_record(i, lls, gold=i % k, acc=float(rng.random() < .6))) + "\n")
    src = Source(name=str(path), path=path)
    fast = lm_eval.assemble(src.name, lm_eval.read_jsonl_fast(src, "arc_easy"))
    slow = lm_eval.assemble(src.name, lm_eval.read_jsonl_slow(src, "arc_easy"))
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    pd.testing.assert_frame_equal(fast.texts, slow.texts)
    assert fast.n_choices == slow.n_choices
    assert fast.texts.response.notna().all()


def test_list_valued_metric_kept_out_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "samples_negotiationtom_intention_2026-07-08T16-04-34.219874.jsonl"
    lines = []
    for i in range(5):
        lines.append(json.dumps({
            "doc_id": i, "doc": {}, "target": "x", "arguments": {"gen_args_0": {"arg_0": "p", "arg_1": {}}},
            "resps": [["gen"]], "filtered_resps": ["gen"], "filter": "none",
            "metrics": ["micro_f1", "exact_match"], "doc_hash": "h", "prompt_hash": "p",
            "micro_f1": [["a"], ["b"]], "exact_match": float(i % 2)}))
    path.write_text("\n".join(lines) + "\n")
    run = one([path])
    assert set(run.scores.metric) == {"exact_match"} and len(run.scores) == 5
    assert any("micro_f1" in w and "left out of item scores" in w for w in run.warnings)


def test_long_first_line_is_still_detected(tmp_path: Path) -> None:
    rec = _mc_record(0, [-1.0, -2.0], gold=0, acc=1.0)
    rec["doc"] = {"context": "x" * 100_000}           # first line longer than the 64 KB head
    path = tmp_path / "samples_long_2026-01-01T00-00-00.000001.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(_mc_record(1, [-3.0, -2.0], 1, 1.0)) + "\n")
    run = one([path])
    assert run.scores.score.tolist() == [1.0, 1.0] and run.files[0].format == lm_eval.SAMPLES_JSONL


def test_results_and_samples_pair_by_folder_and_timestamp(lm: Path, tmp_path: Path) -> None:
    ts = "2026-07-08T16-04-34.219874"
    for model in ("Qwen__Qwen3-8B", "Other__Model"):
        d = tmp_path / model
        d.mkdir()
        (d / f"results_{ts}.json").write_bytes((lm / QWEN_RESULTS).read_bytes())
        (d / f"samples_negotiationtom_belief_{ts}.jsonl").write_bytes((lm / QWEN_SAMPLES).read_bytes())
    runs = parse_paths([tmp_path])
    assert len(runs) == 2
    for run in runs:
        assert run.source_key == f"lm_eval:{ts}"
        assert len(run.files) == 2 and run.files[0].name.rsplit("/", 2)[-2] == run.files[1].name.rsplit("/", 2)[-2]
        assert len(run.scores) == 20 and not run.summaries.empty


def test_zip_of_results_and_samples_is_one_run(lm: Path, tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "out.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(lm / QWEN_RESULTS, f"Qwen__Qwen3-8B/{QWEN_RESULTS}")
        z.write(lm / QWEN_SAMPLES, f"Qwen__Qwen3-8B/{QWEN_SAMPLES}")
        z.writestr("Qwen__Qwen3-8B/README.md", "notes")
    runs = parse_paths([archive])
    assert len(runs) == 1 and len(runs[0].scores) == 20
    assert any("README.md" in w for w in runs[0].warnings)


def test_progress_is_reported(lm: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    parse_paths([lm / QWEN_RESULTS, lm / QWEN_SAMPLES], progress=lambda d, t, f: calls.append((d, t, f)))
    total = (lm / QWEN_RESULTS).stat().st_size + (lm / QWEN_SAMPLES).stat().st_size
    assert calls and calls[-1][:2] == (total, total)
    assert all(0 <= d <= t == total for d, t, _f in calls)
