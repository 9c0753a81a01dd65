"""Demo generator: an LLM-judged task with a human-labelled subset (see make_demo.py).

Two chat models answer ``judged_qa_demo`` (400 open questions, one epoch), graded by inspect_ai's
``model_graded_qa`` with a grader model ``hf/demo-org/grader-70b``. Each answer's true
(human) verdict is drawn from the item response model; the judge agrees with it except that
it passes a wrong answer with probability ``JUDGE_FALSE_PASS`` and fails a right one with
``JUDGE_FALSE_FAIL``: a lenient judge whose mean sits above the human score. People labelled
the same random sample of ``LABELLED`` items of both runs: ``data/demo_judge_labels/<model>.csv``
(``item_id,human``), the files the LLM judges page and ``judge --human`` read.

Writes ``data/demo/judge/<created>_judged-qa-demo_<task_id>.eval`` (inspect ``.eval`` zip
logs, the layout of ``demo_inspect``), the labels, and ``data/demo_judge_labels/truth.json``
(every item's human verdict and the judge's error rates).
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from demo_common import INSPECT_VERSION, DemoRng, mean_stderr, p_correct
from demo_inspect import _dumps, _iso, _zip_write

JUDGE_TASK = "judged_qa_demo"
JUDGE_MODEL = "hf/demo-org/grader-70b"
JUDGE_ITEMS = 400
LABELLED = 120
JUDGE_FALSE_PASS = 0.25
JUDGE_FALSE_FAIL = 0.05
JUDGE_INSTRUCTIONS = ("Compare the submission with the expert answer. Reply GRADE: C if the "
                      "submission is correct and complete, GRADE: I otherwise.")
# the two judged models (evaluated model, ability on the logit scale)
JUDGED_MODELS = (("hf/demo-org/atlas-7b-chat", 0.35), ("hf/demo-org/boreal-8b-chat", 0.75))
LABELS_DIR = "demo_judge_labels"
TOPICS = ("tides", "rainbows", "yeast bread", "magnets", "vaccines", "compound interest",
          "photosynthesis", "echoes", "rust", "seasons")


def _items() -> list[tuple[int, str, str, float]]:
    """(sample id, question, expert answer, difficulty) of the judged task."""
    rng = DemoRng("judge", "items")
    out = []
    for k in range(JUDGE_ITEMS):
        topic = TOPICS[k % len(TOPICS)]
        question = f"In two sentences, explain {topic} to a ten-year-old (variant {k + 1})."
        out.append((k + 1, question, f"A short, correct explanation of {topic}.",
                    rng.normal(0.0, 1.6)))
    return out


def labelled_ids() -> list[int]:
    """The sample ids people labelled: one uniformly random sample, the same for both runs."""
    return sorted(DemoRng("judge", "labels").sample(list(range(1, JUDGE_ITEMS + 1)), LABELLED))


def _verdicts(model: str, theta: float, items: list) -> list[tuple[bool, bool]]:
    """(human verdict, judge verdict) per item."""
    rng = DemoRng("judge", model)
    out = []
    for _, _, _, b in items:
        human = rng.bernoulli(p_correct(theta, b, 0.0))
        flip = rng.bernoulli(JUDGE_FALSE_FAIL if human else JUDGE_FALSE_PASS)
        out.append((human, human != flip))
    return out


def _eval_spec(model: str, created: datetime, ids: tuple[str, str, str]) -> dict[str, Any]:
    task_id, run_id, eval_id = ids
    return {
        "eval_id": eval_id, "run_id": run_id, "created": _iso(created, micro=False),
        "task": JUDGE_TASK, "task_id": task_id, "task_version": 0,
        "task_file": "evals/judged_qa_demo.py", "task_display_name": JUDGE_TASK,
        "task_registry_name": JUDGE_TASK, "task_attribs": {}, "task_args": {},
        "task_args_passed": {},
        "dataset": {"name": JUDGE_TASK, "location": "evals/judged_qa_demo.jsonl",
                    "samples": JUDGE_ITEMS, "sample_ids": list(range(1, JUDGE_ITEMS + 1)),
                    "shuffled": False},
        "model": model, "model_generate_config": {"temperature": 0.0, "max_tokens": 160},
        "model_args": {}, "model_roles": {},
        "config": {"epochs": 1, "epochs_reducer": ["mean"], "fail_on_error": True,
                   "log_samples": True},
        "revision": {"type": "git", "origin": "https://github.com/evalbars/demo-evals.git",
                     "commit": "9f3b2a1", "dirty": False},
        "packages": {"inspect_ai": INSPECT_VERSION},
        "scorers": [{"name": "model_graded_qa",
                     "options": {"model": JUDGE_MODEL, "instructions": JUDGE_INSTRUCTIONS},
                     "metrics": [{"name": "inspect_ai/accuracy", "options": {}},
                                 {"name": "inspect_ai/stderr", "options": {}}],
                     "metadata": {}}],
    }


def write_judged_log(model: str, theta: float, index: int, items: list, out_dir: Path
                     ) -> list[tuple[bool, bool]]:
    """One inspect ``.eval`` log of the judged task; returns (human, judge) per item."""
    rng = DemoRng("judge-log", model)
    created = datetime(2026, 3, 6, 10, 0, 0, tzinfo=timezone.utc) + timedelta(minutes=53 * index)
    ids = (rng.shortuuid(), rng.shortuuid(), rng.shortuuid())
    spec = _eval_spec(model, created, ids)
    plan = {"name": "plan", "steps": [{"solver": "generate", "params": {}}],
            "config": {"temperature": 0.0, "max_tokens": 160}}
    verdicts = _verdicts(model, theta, items)
    buf = io.BytesIO()
    clock = created + timedelta(seconds=1)
    summaries = []
    with zipfile.ZipFile(buf, "w") as zf:
        _zip_write(zf, "_journal/start.json", _dumps({"version": 2, "eval": spec, "plan": plan}),
                   created)
        for (sid, question, target, _), (human, judge) in zip(items, verdicts):
            answer = (f"{target} (simulated answer)" if human
                      else "A plausible but wrong explanation (simulated answer).")
            score = {"value": "C" if judge else "I", "answer": answer,
                     "explanation": f"GRADE: {'C' if judge else 'I'}",
                     "metadata": {"grader_model": JUDGE_MODEL}}
            clock += timedelta(seconds=0.41)
            sample = {"id": sid, "epoch": 1, "input": question, "target": target,
                      "messages": [{"id": rng.shortuuid(), "content": question,
                                    "source": "input", "role": "user"},
                                   {"id": rng.shortuuid(), "content": answer,
                                    "source": "generate", "role": "assistant"}],
                      "output": {"model": model.split("/")[-1], "completion": answer,
                                 "choices": [{"message": {"content": answer,
                                                          "role": "assistant"},
                                              "stop_reason": "stop"}]},
                      "scores": {"model_graded_qa": score}, "metadata": {}, "store": {},
                      "started_at": _iso(clock), "completed_at": _iso(clock),
                      "uuid": rng.shortuuid()}
            _zip_write(zf, f"samples/{sid}_epoch_1.json", _dumps(sample), clock)
            summaries.append({"id": sid, "epoch": 1, "input": question, "target": target,
                              "scores": {"model_graded_qa": score}, "completed": True})
        end = clock + timedelta(seconds=2)
        _zip_write(zf, "summaries.json", _dumps(summaries), end)
        values = [1.0 if j else 0.0 for _, j in verdicts]
        reduced = [{"value": v, "sample_id": it[0]} for it, v in zip(items, values)]
        _zip_write(zf, "reductions.json",
                   _dumps([{"scorer": "model_graded_qa", "samples": reduced}]), end)
        header = {
            "version": 2, "status": "success", "eval": spec, "plan": plan,
            "results": {"total_samples": JUDGE_ITEMS, "completed_samples": JUDGE_ITEMS,
                        "scores": [{"name": "model_graded_qa", "scorer": "model_graded_qa",
                                    "scored_samples": JUDGE_ITEMS, "unscored_samples": 0,
                                    "params": {"model": JUDGE_MODEL,
                                               "instructions": JUDGE_INSTRUCTIONS},
                                    "metrics": {"accuracy": {"name": "accuracy",
                                                             "value": sum(values) / len(values),
                                                             "params": {}},
                                                "stderr": {"name": "stderr",
                                                           "value": mean_stderr(values),
                                                           "params": {}}}}]},
            "stats": {"started_at": _iso(created + timedelta(seconds=1), micro=False),
                      "completed_at": _iso(end, micro=False)},
            "invalidated": False,
        }
        _zip_write(zf, "header.json", _dumps(header), end)
    folder = out_dir / "judge"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
    (folder / f"{stamp}_judged-qa-demo_{ids[0]}.eval").write_bytes(buf.getvalue())
    return verdicts


def write_judge_demo(demo: Path, data_dir: Path) -> dict[str, Any]:
    """The judged logs under ``demo/judge``, the human labels and their truth file."""
    items = _items()
    labelled = labelled_ids()
    labels_dir = data_dir / LABELS_DIR
    labels_dir.mkdir(parents=True, exist_ok=True)
    truth: dict[str, Any] = {"task": JUDGE_TASK, "judge": JUDGE_MODEL,
                             "false_pass": JUDGE_FALSE_PASS, "false_fail": JUDGE_FALSE_FAIL,
                             "labelled": labelled, "runs": {}}
    for index, (model, theta) in enumerate(JUDGED_MODELS):
        verdicts = write_judged_log(model, theta, index, items, demo)
        human = {it[0]: h for it, (h, _) in zip(items, verdicts)}
        rows = "".join(f"{sid},{1 if human[sid] else 0}\n" for sid in labelled)
        short = model.split("/")[-1]
        (labels_dir / f"{short}.csv").write_text("item_id,human\n" + rows, encoding="utf-8")
        truth["runs"][model] = {
            "human_mean": sum(h for h, _ in verdicts) / JUDGE_ITEMS,
            "judge_mean": sum(j for _, j in verdicts) / JUDGE_ITEMS,
            "human": [1 if h else 0 for h, _ in verdicts]}
    (labels_dir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return truth


README_SECTION = f"""
## An LLM-judged task with human labels

`data/demo/judge/` holds two inspect_ai logs of `{JUDGE_TASK}` ({JUDGE_ITEMS} open questions,
models `hf/demo-org/atlas-7b-chat` and `hf/demo-org/boreal-8b-chat`), graded by
`model_graded_qa` with the grader model `{JUDGE_MODEL}`. The judge is lenient: it passes
{JUDGE_FALSE_PASS:.0%} of the wrong answers and fails {JUDGE_FALSE_FAIL:.0%} of the right ones, so
its score sits above what people would say. People labelled the same random sample of
{LABELLED} items of both runs: `data/{LABELS_DIR}/<model>.csv` (`item_id,human`), to use on
the LLM judges page or with
`python -m evalcore judge --run hf/demo-org/atlas-7b-chat --task {JUDGE_TASK} --human data/{LABELS_DIR}/atlas-7b-chat.csv`.
Every item's human verdict: `data/{LABELS_DIR}/truth.json`.
"""
