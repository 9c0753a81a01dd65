"""Demo generator: lm-evaluation-harness 0.4.x task definitions, runs, and their results
JSON and samples_*.jsonl files (see make_demo.py)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import demo_items
from demo_common import (
    ACC_SPLIT,
    LM_EVAL_VERSION,
    MODEL_BY_NAME,
    MODELS,
    N_ARC,
    N_BOOLQ,
    N_GSM,
    N_PASSAGES,
    PER_PASSAGE,
    PROTOCOL_GSM_FORMAT,
    PROTOCOL_MODEL,
    PROTOCOL_SHIFT,
    PROTOCOL_SHOTS,
    PROTOCOL_TASKS,
    RERUN_MODEL,
    RERUN_RESAMPLE,
    RERUN_TASKS,
    DemoModel,
    DemoRng,
    bf16_round,
    mean_stderr,
    p_correct,
    sha256_hex,
    theta_for,
)
from demo_content import NAMES, SHOT_NAMES, Item, build_arc, build_boolq, build_gsm, build_reading

# ---------------------------------------------------------------------------------------
# lm_eval task definitions
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LmTask:
    name: str
    kind: str                        # "mc" (loglikelihood over choices) or "gen"
    metrics: tuple[str, ...]
    items: tuple[Item, ...]
    shots: tuple[Item, ...]          # few-shot pool ("training split")
    original: int                    # n-samples.original (size of the full split)

    @property
    def n_choices(self) -> int:
        return len(self.items[0].choices) if self.kind == "mc" else 0


def doc_to_text(task: str, item: Item) -> str:
    d = item.doc
    if task == "arc_easy_demo":
        return f"Question: {d['question']}\nAnswer:"
    if task == "boolq_demo":
        return f"{d['passage']}\nQuestion: {d['question']}?\nAnswer:"
    if task == "reading_demo":
        return f"Article: {d['article']}\n\nQuestion: {d['question']}\nAnswer:"
    return f"Question: {d['question']}\nAnswer:"


def doc_to_target_text(task: str, item: Item) -> str:
    return item.solution if task == "gsm8k_demo" else item.choices[item.gold]


GSM_GEN_KWARGS = {"until": ["Question:", "</s>", "<|im_end|>"], "do_sample": False, "temperature": 0.0}

CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
                 "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
                 "{{ '<|im_start|>assistant\\n' }}{% endif %}")


def _task_config(name: str, n_shot: int, pretrained: str) -> dict[str, Any]:
    """The ``configs[task]`` entry as lm_eval 0.4.x writes it for a YAML task."""
    common_tail = {"metadata": {"version": 1.0, "pretrained": pretrained, "dtype": "bfloat16"}}
    if name == "arc_easy_demo":
        cfg = {"task": name, "tag": ["demo_science"], "dataset_path": "evalbars/demo_science",
               "dataset_name": "easy", "training_split": "train", "validation_split": "validation",
               "test_split": "test", "doc_to_text": "Question: {{question}}\nAnswer:",
               "doc_to_target": "{{choices.label.index(answerKey)}}", "unsafe_code": False,
               "doc_to_choice": "{{choices.text}}", "description": "", "target_delimiter": " ",
               "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                               {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}],
               "output_type": "multiple_choice", "repeats": 1, "should_decontaminate": True,
               "doc_to_decontamination_query": "Question: {{question}}\nAnswer:"}
    elif name == "boolq_demo":
        cfg = {"task": name, "tag": ["demo_reading"], "dataset_path": "evalbars/demo_boolq",
               "training_split": "train", "validation_split": "validation",
               "doc_to_text": "{{passage}}\nQuestion: {{question}}?\nAnswer:", "doc_to_target": "label",
               "unsafe_code": False, "doc_to_choice": ["no", "yes"], "description": "",
               "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc"}], "output_type": "multiple_choice", "repeats": 1,
               "should_decontaminate": True, "doc_to_decontamination_query": "passage"}
    elif name == "reading_demo":
        cfg = {"task": name, "tag": ["demo_reading"], "dataset_path": "evalbars/demo_reading",
               "test_split": "test",
               "doc_to_text": "Article: {{article}}\n\nQuestion: {{question}}\nAnswer:",
               "doc_to_target": "{{['A', 'B', 'C', 'D'].index(answer)}}", "unsafe_code": False,
               "doc_to_choice": "{{options}}", "description": "", "target_delimiter": " ",
               "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
               "output_type": "multiple_choice", "repeats": 1, "should_decontaminate": False}
    else:
        cfg = {"task": name, "tag": ["math_word_problems"], "dataset_path": "evalbars/demo_gsm",
               "dataset_name": "main", "training_split": "train", "test_split": "test",
               "fewshot_split": "train", "doc_to_text": "Question: {{question}}\nAnswer:",
               "doc_to_target": "{{answer}}", "unsafe_code": False, "description": "",
               "target_delimiter": " ", "fewshot_delimiter": "\n\n", "num_fewshot": n_shot,
               "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True,
                                "ignore_case": True, "ignore_punctuation": False,
                                "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
               "output_type": "generate_until", "generation_kwargs": dict(GSM_GEN_KWARGS),
               "repeats": 1,
               "filter_list": [
                   {"name": "strict-match", "filter": [
                       {"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                       {"function": "take_first"}]},
                   {"name": "flexible-extract", "filter": [
                       {"function": "regex", "group_select": -1,
                        "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                       {"function": "take_first"}]}],
               "should_decontaminate": False}
    cfg.update(common_tail)
    return cfg


def build_tasks() -> dict[str, LmTask]:
    arc = build_arc(N_ARC, DemoRng("items", "arc"), NAMES, "DemoSci")
    arc, _ = demo_items.plant_label_errors(arc, DemoRng("items", "arc-label-errors"))
    arc_shots = build_arc(40, DemoRng("items", "arc-train"), SHOT_NAMES, "DemoSciTrain")
    boolq = build_boolq(N_BOOLQ, DemoRng("items", "boolq"))
    gsm = build_gsm(N_GSM, DemoRng("items", "gsm"), NAMES)
    gsm_shots = build_gsm(40, DemoRng("items", "gsm-train"), SHOT_NAMES)
    reading = build_reading(N_PASSAGES, PER_PASSAGE, DemoRng("items", "reading"))
    return {
        "arc_easy_demo": LmTask("arc_easy_demo", "mc", ("acc", "acc_norm"), tuple(arc), tuple(arc_shots), 2376),
        "boolq_demo": LmTask("boolq_demo", "mc", ("acc",), tuple(boolq), (), 3270),
        "gsm8k_demo": LmTask("gsm8k_demo", "gen", ("exact_match",), tuple(gsm), tuple(gsm_shots), 1319),
        "reading_demo": LmTask("reading_demo", "mc", ("acc",), tuple(reading), (), 4934),
    }


# ---------------------------------------------------------------------------------------
# lm_eval run simulation and writing
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LmRun:
    model: DemoModel
    timestamp: str                   # "2026-03-02T09-14-07.412305"
    tasks: tuple[str, ...]
    n_shot: int = 0
    chat_template: bool = False
    seed_offset: int = 0             # 0 for the first pass, 1 for the rerun
    batch_sizes: tuple[int, ...] = (64,)
    label: str = "main"              # "main", "rerun", "protocol"


def lm_runs() -> list[LmRun]:
    """The seven lm_eval invocations: one per model, a rerun, a protocol variant."""
    all_tasks = ("arc_easy_demo", "boolq_demo", "gsm8k_demo", "reading_demo")
    stamps = ["2026-03-02T09-14-07.412305", "2026-03-02T10-02-51.087113", "2026-03-02T10-47-33.550921",
              "2026-03-02T11-31-18.264470", "2026-03-02T12-05-42.918356"]
    runs = [LmRun(m, ts, all_tasks) for m, ts in zip(MODELS, stamps)]
    runs.append(LmRun(MODEL_BY_NAME[RERUN_MODEL], "2026-03-03T08-21-09.733208", RERUN_TASKS,
                      seed_offset=1, batch_sizes=(32,), label="rerun"))
    runs.append(LmRun(MODEL_BY_NAME[PROTOCOL_MODEL], "2026-03-03T14-40-26.301577", PROTOCOL_TASKS,
                      n_shot=PROTOCOL_SHOTS, chat_template=True, label="protocol"))
    return runs


def _fewshot_context(task: LmTask, item_index: int, run: LmRun) -> list[tuple[str, str]]:
    """(question text, answer text) pairs lm_eval's default sampler would draw for this doc."""
    if run.n_shot == 0:
        return []
    rng = DemoRng("fewshot", task.name, 1234, item_index)
    return [(doc_to_text(task.name, s), doc_to_target_text(task.name, s))
            for s in rng.sample(task.shots, run.n_shot)]


def build_context(task: LmTask, item_index: int, item: Item, run: LmRun) -> str:
    """The exact context string lm_eval sends (plain few-shot text or chat-formatted turns)."""
    shots = _fewshot_context(task, item_index, run)
    question = doc_to_text(task.name, item)
    if run.chat_template:
        turns = []
        for q, a in shots:   # fewshot_as_multiturn: one user/assistant pair per example
            turns.append(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n{a}<|im_end|>\n")
        turns.append(f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n")
        return "".join(turns)
    parts = [f"{q} {a}" for q, a in shots] + [question]
    return "\n\n".join(parts)


def _theta(run: LmRun, task: str) -> float:
    theta = theta_for(run.model, task)
    if run.label == "protocol":
        theta += PROTOCOL_SHIFT.get(task, 0.0)
    return theta


def simulate_outcomes(run: LmRun, task: LmTask) -> list[bool]:
    """Latent correctness per item. A rerun redraws a share of items from the same P(correct)."""
    chance = 1.0 / task.n_choices if task.kind == "mc" else 0.0
    theta = _theta(run, task.name)
    first_label = "protocol" if run.label == "protocol" else "main"
    rng = DemoRng("outcome", run.model.name, task.name, first_label)
    probs = [p_correct(theta, it.difficulty, chance) for it in task.items]
    outcomes = [rng.bernoulli(p) for p in probs]
    if run.seed_offset:
        rr = DemoRng("rerun", run.model.name, task.name, run.seed_offset)
        share = RERUN_RESAMPLE[task.name]
        outcomes = [rr.bernoulli(p) if rr.bernoulli(share) else o for o, p in zip(outcomes, probs)]
    return outcomes


def _fmt_ll(x: float) -> str:
    """lm_eval's JSONL writer stringifies resps: -9.8125 -> "-9.8125"."""
    return str(float(x))


def mc_loglikelihoods(task: LmTask, item: Item, correct: bool, rng: DemoRng) -> list[float]:
    """Per-choice log-likelihoods whose argmax encodes the simulated outcome.

    The simulated choice ``b`` (gold when ``correct``) is the one with the best
    length-normalised log-likelihood (what ``acc_norm`` scores; for acc-only tasks also the
    raw argmax). For tasks with ``acc_norm``, the raw argmax ``a`` (what ``acc`` scores) equals
    ``b`` on most items; on about ACC_SPLIT of them (the same items for every model) it is a
    shorter option, which is only possible when len(a) < len(b): then ll_a > ll_b while
    ll_a/len(a) < ll_b/len(b).
    The metrics written to the files are recomputed from the rounded values, so they always
    agree with ``resps``.
    """
    k = len(item.choices)
    right = item.gold if item.truth < 0 else item.truth   # what a model that knows picks
    b = right if correct else rng.choice([j for j in range(k) if j != right])
    lengths = [float(len(c)) for c in item.choices]
    rate_b = rng.uniform(0.3, 0.9)                     # nats per character of the chosen option
    a = b
    # whether raw and normalised choices can part is a property of the item (its option
    # lengths), shared by all models, so acc correlates between models as acc_norm does
    split = DemoRng("acc-split", task.name, item.doc.get("id", item.question)).bernoulli(ACC_SPLIT)
    if "acc_norm" in task.metrics and split:
        shorter = [j for j in range(k) if lengths[j] < lengths[b]]
        if shorter:
            a = rng.choice(shorter)
    lls = [0.0] * k
    lls[b] = -rate_b * lengths[b]
    if a != b:
        lls[a] = lls[b] + rng.uniform(0.25, 0.75) * rate_b * (lengths[b] - lengths[a])
    top_raw = max(lls[a], lls[b])
    top_norm = min(lls[a] / lengths[a], lls[b] / lengths[b])
    for j in range(k):
        if j in (a, b):
            continue
        lls[j] = min(top_raw - rng.uniform(0.3, 4.0), (top_norm - rng.uniform(0.05, 0.5)) * lengths[j])
    return [bf16_round(x) for x in lls]


def argmax_first(values: Sequence[float]) -> int:
    """numpy.argmax semantics: the first index of the maximum."""
    best = 0
    for j, v in enumerate(values):
        if v > values[best]:
            best = j
    return best


def mc_sample(task: LmTask, item: Item, run: LmRun, correct: bool, rng: DemoRng,
              context: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The loglikelihood part of a multiple-choice JSONL line (stringified like lm_eval's writer)
    and the per-item metrics recomputed from it (acc: raw argmax; acc_norm: argmax of ll/len)."""
    lls = mc_loglikelihoods(task, item, correct, rng)
    greedy_pick = rng.bernoulli(0.15)
    delim = "" if run.chat_template else " "
    arguments = {f"gen_args_{j}": {"arg_0": context, "arg_1": f"{delim}{c}"}
                 for j, c in enumerate(item.choices)}
    top = argmax_first(lls)
    pairs = [[_fmt_ll(ll), str(bool(greedy_pick and j == top))] for j, ll in enumerate(lls)]
    metrics = {"acc": 1.0 if top == item.gold else 0.0}
    if "acc_norm" in task.metrics:
        lengths = [float(len(c)) for c in item.choices]
        metrics["acc_norm"] = 1.0 if argmax_first([ll / n for ll, n in zip(lls, lengths)]) == item.gold else 0.0
    sample = {"arguments": arguments, "resps": [[p] for p in pairs], "filtered_resps": pairs}
    return sample, metrics


def gsm_generation(item: Item, correct: bool, follows_format: bool, rng: DemoRng) -> str:
    """A model's raw generation for a word problem."""
    steps = [ln for ln in item.solution.split("\n") if not ln.startswith("####")]
    steps = [ln.split("<<")[0] + ln.split(">>")[-1] if "<<" in ln else ln for ln in steps]
    answer = item.answer if correct else item.wrong_answer
    if not correct:
        steps = steps[:-1] + [f"So the result is {answer}."]
    body = " " + " ".join(steps)
    if follows_format:
        return f"{body}\n#### {answer}\n\n"
    return f"{body} The answer is {answer}.\n\n" if rng.bernoulli(0.7) else f"{body}\n\n"


def gsm_filters(text: str) -> tuple[str, str]:
    """strict-match and flexible-extract results as the gsm8k filter_list computes them."""
    strict = re.findall(r"#### (\-?[0-9\.\,]+)", text)
    strict_value = strict[0] if strict else "[invalid]"
    flex_matches = re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", text)
    if flex_matches:
        last = flex_matches[-1]
        flex_value = last[0] or last[1]
    else:
        flex_value = "[invalid]"
    return strict_value, flex_value


def gsm_exact_match(pred: str, item: Item) -> float:
    """exact_match with ignore_case and regexes_to_ignore [",", "$", "(?s).*#### ", "\\.$"]."""
    def norm(s: str) -> str:
        for rx in [",", "\\$", "(?s).*#### ", "\\.$"]:
            s = re.sub(rx, "", s)
        return s.lower()
    return 1.0 if norm(pred) == norm(item.target) else 0.0


def doc_hash(doc: dict[str, Any]) -> str:
    """lm_eval's doc_hash: sha256 of json.dumps(doc, indent=2, ensure_ascii=False)."""
    return sha256_hex(json.dumps(doc, indent=2, default=str, ensure_ascii=False))


ITEM_SCORES: dict[tuple[str, str, str, str], list[float]] = {}   # (model, label, task, metric)


def exact_mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p: min(1, 2 * BinomCDF(min(b, c); b + c, 1/2)), in exact integers."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2.0 * tail / 2.0 ** n)


def pair_rows(first: tuple[str, str], second: tuple[str, str]) -> list[dict[str, Any]]:
    """Per (task, metric) paired summary of two simulated runs: means, b, c, exact McNemar p."""
    rows = []
    for (model, label, task, metric), xs in sorted(ITEM_SCORES.items()):
        if (model, label) != first:
            continue
        ys = ITEM_SCORES.get((second[0], second[1], task, metric))
        if ys is None:
            continue
        b = sum(1 for x, y in zip(xs, ys) if x == 1.0 and y == 0.0)
        c = sum(1 for x, y in zip(xs, ys) if x == 0.0 and y == 1.0)
        rows.append({"task": task, "metric": metric.removesuffix(",none"), "a": sum(xs) / len(xs), "b_mean": sum(ys) / len(ys),
                     "only_a": b, "only_b": c, "p": exact_mcnemar_p(b, c)})
    return rows


COMPARISONS = (   # (first run, second run, what the simulation built in)
    (("demo-org/atlas-13b", "main"), ("demo-org/cirrus-3b", "main"),
     "a large true gap on every task; clearly different."),
    (("demo-org/boreal-8b", "main"), ("demo-org/atlas-7b", "main"),
     "nearly equal; with a few hundred items the paired difference is not "
     "significant (no difference detected; the comparison page says what gap this design could "
     "have detected)."),
    (("demo-org/cirrus-3b-instruct", "main"), ("demo-org/cirrus-3b", "main"),
     "nearly equal on the multiple-choice tasks; on gsm8k_demo the instruct model is better, far "
     "more so on strict-match (it follows the answer format)."),
    (("demo-org/atlas-7b", "main"), ("demo-org/atlas-7b", "rerun"),
     "the same model and protocol twice: every difference is rerun noise."),
    (("demo-org/boreal-8b", "main"), ("demo-org/boreal-8b", "protocol"),
     "0-shot vs few-shot + chat template: prompt hashes differ on every item (not the same "
     "instrument); the protocol diff lists num_fewshot, chat_template, fewshot_as_multiturn."),
)


def write_lm_run(run: LmRun, tasks: dict[str, LmTask], out_dir: Path) -> dict[str, Any]:
    """Write one lm_eval invocation (results JSON + one samples JSONL per task)."""
    sanitized = run.model.name.replace("/", "__")
    folder = out_dir / "lm_eval" / sanitized
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    task_hashes: dict[str, str] = {}
    observed: dict[str, dict[str, float]] = {}
    for tname in run.tasks:
        task = tasks[tname]
        outcomes = simulate_outcomes(run, task)
        # Per-item streams shared by both passes of a rerun: items whose latent outcome did not
        # change render identically; the protocol variant gets its own streams.
        render_label = "protocol" if run.label == "protocol" else "main"
        fmt_p = PROTOCOL_GSM_FORMAT if run.chat_template else run.model.gsm_format
        lines: list[dict[str, Any]] = []
        metric_values: dict[str, list[float]] = {}
        by_filter: dict[str, list[dict[str, Any]]] = {"strict-match": [], "flexible-extract": []}
        for idx, (item, correct) in enumerate(zip(task.items, outcomes)):
            rng = DemoRng("render", run.model.name, tname, render_label, idx, correct)
            context = build_context(task, idx, item, run)
            head = {"doc_id": idx, "doc": item.doc, "target": str(item.target)}
            hashes = {"doc_hash": doc_hash(item.doc), "prompt_hash": sha256_hex(context),
                      "target_hash": sha256_hex(str(item.target))}
            if task.kind == "mc":
                body, metrics = mc_sample(task, item, run, correct, rng, context)
                line = {**head, **body, "filter": "none", "metrics": list(task.metrics), **hashes, **metrics}
                lines.append(line)
                for k, v in metrics.items():
                    metric_values.setdefault(f"{k},none", []).append(v)
            else:
                follows = DemoRng("format", run.model.name, tname, render_label, idx).bernoulli(fmt_p)
                text = gsm_generation(item, correct, follows, rng)
                strict_v, flex_v = gsm_filters(text)
                args = {"gen_args_0": {"arg_0": context, "arg_1": dict(GSM_GEN_KWARGS)}}
                for filt, value in (("strict-match", strict_v), ("flexible-extract", flex_v)):
                    em = gsm_exact_match(value, item)
                    by_filter[filt].append({**head, "arguments": args, "resps": [[text]],
                                            "filtered_resps": [value], "filter": filt,
                                            "metrics": ["exact_match"], **hashes, "exact_match": em})
                    metric_values.setdefault(f"exact_match,{filt}", []).append(em)
        if task.kind == "gen":
            lines = by_filter["strict-match"] + by_filter["flexible-extract"]
        sample_file = folder / f"samples_{tname}_{run.timestamp}.jsonl"
        with sample_file.open("w", encoding="utf-8", newline="\n") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        task_hashes[tname] = sha256_hex("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"]
                                                for s in lines))
        entry: dict[str, Any] = {"name": tname, "alias": tname, "sample_len": len(task.items)}
        for key, vals in metric_values.items():
            metric, filt = key.split(",")
            entry[key] = sum(vals) / len(vals)
            entry[f"{metric}_stderr,{filt}"] = mean_stderr(vals)
        results[tname] = entry
        observed[tname] = {k: sum(v) / len(v) for k, v in metric_values.items()}
        for k, v in metric_values.items():
            ITEM_SCORES[(run.model.name, run.label, tname, k)] = v
    _write_results_json(run, tasks, results, task_hashes, folder)
    return observed


def _write_results_json(run: LmRun, tasks: dict[str, LmTask], results: dict[str, Any],
                        task_hashes: dict[str, str], folder: Path) -> None:
    model = run.model
    ts = datetime.strptime(run.timestamp, "%Y-%m-%dT%H-%M-%S.%f").replace(tzinfo=timezone.utc)
    n_items = sum(len(tasks[t].items) for t in run.tasks)
    seeds = (0, 1234, 1234, 1234) if run.seed_offset == 0 else (1, 4321, 4321, 4321)
    sha_rng = DemoRng("model-sha", model.name)
    higher = {}
    for t in run.tasks:
        higher[t] = {m: True for m in tasks[t].metrics}
    doc = {
        "results": results,
        "group_subtasks": {t: [] for t in run.tasks},
        "configs": {t: _task_config(t, run.n_shot, model.name) for t in run.tasks},
        "versions": {t: 1.0 for t in run.tasks},
        "n-shot": {t: run.n_shot for t in run.tasks},
        "higher_is_better": higher,
        "n-samples": {t: {"original": tasks[t].original, "effective": len(tasks[t].items)}
                      for t in run.tasks},
        "config": {
            "model": "hf",
            "model_args": {"pretrained": model.name, "dtype": "bfloat16"},
            "model_num_parameters": model.params,
            "model_dtype": "torch.bfloat16",
            "model_revision": "main",
            "model_sha": sha_rng.hexstr(40),
            "batch_size": "auto",
            "batch_sizes": list(run.batch_sizes),
            "device": "cuda:0",
            "use_cache": None,
            "limit": None,
            "bootstrap_iters": 100000,
            "gen_kwargs": {},
            "random_seed": seeds[0],
            "numpy_seed": seeds[1],
            "torch_seed": seeds[2],
            "fewshot_seed": seeds[3],
        },
        "git_hash": "4c1e7d2",
        "date": ts.timestamp(),
        "pretty_env_info": ("PyTorch version: 2.9.1+cu128\nIs debug build: False\nCUDA used to build "
                            "PyTorch: 12.8\n\nOS: Ubuntu 24.04.3 LTS (x86_64)\nPython version: 3.12.11 "
                            "(64-bit runtime)\nIs CUDA available: True\nGPU models and configuration: "
                            "GPU 0: NVIDIA A100-SXM4-80GB\n\n(simulated environment: evalbars demo)"),
        "transformers_version": "4.57.3",
        "lm_eval_version": LM_EVAL_VERSION,
        "upper_git_hash": None,
        "tokenizer_pad_token": ["<|endoftext|>", "0"],
        "tokenizer_eos_token": ["<|im_end|>", "2"],
        "tokenizer_bos_token": [None, "None"],
        "eot_token_id": 2,
        "max_length": 4096,
        "task_hashes": task_hashes,
        "model_source": "hf",
        "model_name": model.name,
        "model_name_sanitized": model.name.replace("/", "__"),
        "system_instruction": None,
        "system_instruction_sha": None,
        "fewshot_as_multiturn": bool(run.chat_template),
        "chat_template": CHAT_TEMPLATE if run.chat_template else None,
        "chat_template_sha": sha256_hex(CHAT_TEMPLATE) if run.chat_template else None,
        "total_evaluation_time_seconds": str(round(40.0 + 0.9 * n_items * (1 + run.n_shot / 2) +
                                                   model.params / 1e8, 6)),
    }
    path = folder / f"results_{run.timestamp}.json"
    path.write_text(json.dumps(doc, indent=2, default=str, ensure_ascii=False), encoding="utf-8")


# ---------------------------------------------------------------------------------------
