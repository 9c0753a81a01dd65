"""Demo generator: inspect_ai .eval logs (see make_demo.py)."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from demo_common import INSPECT_VERSION, DemoModel, DemoRng, mean_stderr, p_correct
from demo_content import TRIVIA

# inspect_ai .eval logs
# ---------------------------------------------------------------------------------------

INSPECT_TASK = "trivia_demo"
INSPECT_EPOCHS = 5
INSPECT_SYSTEM = "Answer the question with just the answer: no explanation, no full sentence."
CATEGORY_EFFECT = {"geography": -1.1, "chemistry": 0.2, "arithmetic": 0.9, "literature": -0.4,
                   "science": -0.9, "history": 0.3}
TRIVIA_WITHIN_SD = 0.9        # question-level difficulty sd around the category effect
INSPECT_THETA_SHIFT = -0.2     # short-answer recall is a little harder than the lm_eval tasks


@dataclass(frozen=True)
class TriviaItem:
    sample_id: int
    category: str
    question: str
    target: str
    wrong: str
    difficulty: float


def build_trivia() -> list[TriviaItem]:
    rng = DemoRng("items", "trivia")
    return [TriviaItem(k + 1, cat, q, t, w, CATEGORY_EFFECT[cat] + rng.normal(0.0, TRIVIA_WITHIN_SD))
            for k, (cat, q, t, w) in enumerate(TRIVIA)]


def _iso(dt: datetime, micro: bool = True) -> str:
    return dt.isoformat(timespec="microseconds" if micro else "seconds")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def _zip_write(zf: zipfile.ZipFile, name: str, data: bytes, when: datetime) -> None:
    info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = 0o600 << 16
    zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=6)


def write_inspect_log(model: DemoModel, index: int, items: list[TriviaItem], out_dir: Path
                      ) -> dict[str, float]:
    """One inspect_ai ``.eval`` log of ``trivia_demo`` (epochs=5, scorer ``match``)."""
    rng = DemoRng("inspect", model.name)
    created = datetime(2026, 3, 4, 9, 0, 0, tzinfo=timezone.utc) + timedelta(minutes=47 * index)
    task_id, run_id, eval_id = rng.shortuuid(), rng.shortuuid(), rng.shortuuid()
    short_model = model.name.split("/")[-1]
    model_id = f"hf/{model.name}"
    theta = model.theta + INSPECT_THETA_SHIFT
    eval_spec = {
        "eval_id": eval_id, "run_id": run_id, "created": _iso(created, micro=False),
        "task": INSPECT_TASK, "task_id": task_id, "task_version": 0,
        "task_file": "evals/trivia_demo.py", "task_display_name": INSPECT_TASK,
        "task_registry_name": INSPECT_TASK, "task_attribs": {}, "task_args": {}, "task_args_passed": {},
        "dataset": {"name": "trivia_demo", "location": "evals/trivia_demo.jsonl", "samples": len(items),
                    "sample_ids": [it.sample_id for it in items], "shuffled": False},
        "model": model_id, "model_generate_config": {"temperature": 0.7, "max_tokens": 32},
        "model_args": {}, "model_roles": {},
        "config": {"epochs": INSPECT_EPOCHS, "epochs_reducer": ["mean"], "fail_on_error": True,
                   "continue_on_fail": False, "sandbox_cleanup": True, "log_samples": True,
                   "log_realtime": True, "log_images": True, "log_shared": 0, "score_display": True},
        "revision": {"type": "git", "origin": "https://github.com/evalbars/demo-evals.git",
                     "commit": "9f3b2a1", "dirty": False},
        "packages": {"inspect_ai": INSPECT_VERSION},
        "scorers": [{"name": "match", "options": {},
                     "metrics": [{"name": "inspect_ai/accuracy", "options": {}},
                                 {"name": "inspect_ai/stderr", "options": {}}],
                     "metadata": {}}],
    }
    plan = {"name": "plan",
            "steps": [{"solver": "system_message", "params": {"template": INSPECT_SYSTEM},
                       "params_passed": {"template": INSPECT_SYSTEM}},
                      {"solver": "generate", "params": {}, "params_passed": {}}],
            "config": {"temperature": 0.7, "max_tokens": 32}}

    # Simulate: every epoch is an independent draw at the item's P(correct).
    outs = []
    for it in items:
        p = p_correct(theta, it.difficulty, 0.0)
        for epoch in range(1, INSPECT_EPOCHS + 1):
            outs.append((it, epoch, rng.bernoulli(p)))
    order = rng.shuffled(range(len(outs)))            # completion order (concurrent samples)

    buf = io.BytesIO()
    summaries: list[dict[str, Any]] = []
    usage_total = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    clock = created + timedelta(seconds=1)
    with zipfile.ZipFile(buf, "w") as zf:
        _zip_write(zf, "_journal/start.json", _dumps({"version": 2, "eval": eval_spec, "plan": plan}),
                   created)
        chunk: list[dict[str, Any]] = []
        chunk_no = 0
        for pos in order:
            it, epoch, correct = outs[pos]
            answer = it.target if correct else it.wrong
            started = clock
            dur = round(rng.uniform(0.25, 1.9), 3)
            clock = clock + timedelta(seconds=0.37)
            completed_at = started + timedelta(seconds=dur)
            n_in = 38 + len(it.question) // 4
            n_out = 2 + len(answer) // 4
            usage = {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
            for k in usage_total:
                usage_total[k] += usage[k]
            score = {"value": "C" if correct else "I", "answer": answer, "explanation": answer,
                     "history": []}
            msg_ids = [rng.shortuuid() for _ in range(3)]
            assistant = {"id": msg_ids[2], "content": answer, "source": "generate", "role": "assistant",
                         "model": short_model}
            output = {"model": short_model,
                      "choices": [{"message": assistant, "stop_reason": "stop"}],
                      "completion": answer, "usage": usage, "time": dur}
            span = rng.hexstr(32)
            sample = {
                "id": it.sample_id, "epoch": epoch, "input": it.question, "target": it.target,
                "messages": [
                    {"id": msg_ids[0], "content": INSPECT_SYSTEM, "role": "system"},
                    {"id": msg_ids[1], "content": it.question, "source": "input", "role": "user"},
                    assistant],
                "output": output,
                "scores": {"match": score},
                "metadata": {"category": it.category},
                "store": {},
                "events": [
                    {"uuid": rng.shortuuid(), "span_id": span, "timestamp": _iso(started),
                     "working_start": 0.0, "event": "sample_init",
                     "sample": {"input": it.question, "target": it.target, "id": it.sample_id,
                                "metadata": {"category": it.category}}},
                    {"uuid": rng.shortuuid(), "span_id": span,
                     "timestamp": _iso(started + timedelta(seconds=dur * 0.9)),
                     "working_start": round(dur * 0.9, 6), "event": "model", "model": model_id,
                     "input": sample_messages_ref(msg_ids, it.question), "tools": [],
                     "tool_choice": "none", "config": {"temperature": 0.7, "max_tokens": 32},
                     "output": output},
                    {"uuid": rng.shortuuid(), "span_id": span, "timestamp": _iso(completed_at),
                     "working_start": dur, "event": "score", "score": score, "target": it.target,
                     "intermediate": False}],
                "model_usage": {model_id: usage},
                "started_at": _iso(started), "completed_at": _iso(completed_at),
                "total_time": dur, "working_time": round(dur - 0.002, 3),
                "uuid": rng.shortuuid(), "error_retries": [], "attachments": {},
            }
            _zip_write(zf, f"samples/{it.sample_id}_epoch_{epoch}.json", _dumps(sample), completed_at)
            summary = {"id": it.sample_id, "epoch": epoch, "input": it.question, "target": it.target,
                       "metadata": {"category": it.category}, "scores": {"match": score},
                       "model_usage": {model_id: usage}, "started_at": _iso(started),
                       "completed_at": _iso(completed_at), "total_time": dur,
                       "working_time": round(dur - 0.002, 3), "uuid": sample["uuid"], "retries": 0,
                       "completed": True, "message_count": 3}
            chunk.append(summary)
            summaries.append(summary)
            if len(chunk) == 100:
                chunk_no += 1
                _zip_write(zf, f"_journal/summaries/{chunk_no}.json", _dumps(chunk), completed_at)
                chunk = []
        end = clock + timedelta(seconds=2)
        if chunk:
            chunk_no += 1
            _zip_write(zf, f"_journal/summaries/{chunk_no}.json", _dumps(chunk), end)
        _zip_write(zf, "summaries.json", _dumps(summaries), end)

        # mean reducer over epochs (C -> 1.0, I -> 0); accuracy and stderr over reduced values
        per_item: dict[int, list[float]] = {}
        for it, _, correct in outs:
            per_item.setdefault(it.sample_id, []).append(1.0 if correct else 0.0)
        reduced = [{"value": sum(v) / len(v), "sample_id": sid} for sid, v in per_item.items()]
        _zip_write(zf, "reductions.json", _dumps([{"scorer": "match", "samples": reduced}]), end)
        values = [r["value"] for r in reduced]
        accuracy = sum(values) / len(values)
        header = {
            "version": 2, "status": "success", "eval": eval_spec, "plan": plan,
            "results": {"total_samples": len(outs), "completed_samples": len(outs),
                        "scores": [{"name": "match", "scorer": "match", "scored_samples": len(items),
                                    "unscored_samples": 0, "params": {},
                                    "metrics": {"accuracy": {"name": "accuracy", "value": accuracy,
                                                             "params": {}},
                                                "stderr": {"name": "stderr",
                                                           "value": mean_stderr(values), "params": {}}}}]},
            "stats": {"started_at": _iso(created + timedelta(seconds=1), micro=False),
                      "completed_at": _iso(end, micro=False),
                      "model_usage": {model_id: usage_total}},
            "invalidated": False,
        }
        _zip_write(zf, "header.json", _dumps(header), end)
    stamp = created.strftime("%Y-%m-%dT%H-%M-%S+00-00")
    folder = out_dir / "inspect"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stamp}_{INSPECT_TASK.replace('_', '-')}_{task_id}.eval").write_bytes(buf.getvalue())
    per_answer = [1.0 if c else 0.0 for _, _, c in outs]
    return {"accuracy": accuracy, "per_answer_mean": sum(per_answer) / len(per_answer)}


def sample_messages_ref(msg_ids: list[str], question: str) -> list[dict[str, Any]]:
    """The model event's input messages (system prompt + user question)."""
    return [{"id": msg_ids[0], "content": INSPECT_SYSTEM, "role": "system"},
            {"id": msg_ids[1], "content": question, "source": "input", "role": "user"}]


# ---------------------------------------------------------------------------------------
