"""lm_eval results JSON (v0.3 and 0.4.0 .. 0.4.13): summaries, run and task protocol.

Files
-----
* ``results_<ts>.json`` (0.4.x; ``results.json`` in 0.4.0-0.4.2; any name in 0.3): summary
  metrics per task and group. 0.4 keys are ``"<metric>,<filter>"`` and
  ``"<metric>_stderr,<filter>"``; 0.3 keys have no filter. Metric naming in evalbars:
  ``acc`` when the filter is ``none`` (or absent), else ``"exact_match,strict-match"``.
  A stderr of ``"N/A"`` becomes NaN with ``stderr_raw="N/A"``. ``n`` is the group entry's
  ``sample_count`` for that metric, else ``n-samples[task].effective``, else
  ``sample_len``, else (groups) the sum over the group's subtasks. Entries listed in
  ``groups`` or with a non-empty ``group_subtasks`` list are ``is_group`` summaries.
  Some wrappers embed per-sample records under a top-level ``samples: {task: [...]}``
  key; they are read like sample logs.
* ``samples_<task>_<ts>.jsonl`` (0.4.3+): one JSON object per line and per (doc, filter).
  JSON-array files of 0.4.0-0.4.2 (``<model_args>_<task>.jsonl`` holding ``[{...}, ...]``)
  and embedded records use the same record layout (``arguments`` as ``[[ctx, cont], ...]``
  and native floats/bools in ``resps`` instead of the stringified ``gen_args_i`` dicts).

"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from evalcore.errors import IngestError
from evalcore.ingest._common import MAX_ABS_SCORE, Source, dumps, is_number, load_json

RESULTS = "lm_eval_results"
SAMPLES_JSONL = "lm_eval_samples_jsonl"
SAMPLES_JSON = "lm_eval_samples_json"
HARNESS = "lm-evaluation-harness"

TS_RE = r"\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:\.\d+)?"
RESULTS_NAME = re.compile(rf"^results_(?P<ts>{TS_RE})\.json$")
SAMPLES_NAME = re.compile(rf"^samples_(?P<task>.+)_(?P<ts>{TS_RE})\.jsonl?$")

ENTRY_META = frozenset({"alias", "name", "sample_len", "sample_count", "samples", " "})
RUN_CONFIG_KEYS = (
    "model", "model_args", "model_num_parameters", "model_dtype", "model_revision", "model_sha",
    "batch_size", "device", "limit", "bootstrap_iters", "gen_kwargs", "random_seed",
    "numpy_seed", "torch_seed", "fewshot_seed", "num_fewshot", "description_dict", "no_cache",
    "use_cache",
)
RUN_TOP_KEYS = (
    "lm_eval_version", "git_hash", "upper_git_hash", "transformers_version", "max_length",
    "model_name", "model_source", "chat_template", "chat_template_sha", "system_instruction",
    "system_instruction_sha", "fewshot_as_multiturn", "tokenizer_pad_token",
    "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id",
)
TASK_CONFIG_KEYS = (
    "task", "task_alias", "tag", "dataset_path", "dataset_name", "dataset_kwargs",
    "training_split", "validation_split", "test_split", "fewshot_split", "process_docs",
    "doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix", "description",
    "target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot", "metric_list",
    "output_type", "generation_kwargs", "repeats", "filter_list", "should_decontaminate",
)


@dataclass
class ResultsFile:
    """A parsed results JSON and what pairing needs from it."""

    src: Source
    obj: dict[str, Any]
    ts: str | None
    task_names: set[str]           # tasks with per-item data possible (non-group)

    @property
    def embedded(self) -> dict[str, Any]:
        s = self.obj.get("samples")
        return s if isinstance(s, dict) else {}


# top-level keys of a results file that must be objects when present
_MAPPING_KEYS = ("configs", "versions", "n-shot", "task_hashes", "groups", "group_subtasks",
                 "n-samples", "higher_is_better", "samples")


def read_results(src: Source) -> ResultsFile:
    obj = load_json(src)
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), dict):
        raise IngestError(src.name, "top level", "an lm_eval results object with a 'results' mapping")
    for task, entry in obj["results"].items():
        if not isinstance(entry, dict):
            raise IngestError(src.name, f"results.{task}", "an object of metric values",
                              f"found {type(entry).__name__}")
    for key in _MAPPING_KEYS:     # the layout the readers rely on: say what was found where
        v = obj.get(key)
        if v is not None and not isinstance(v, dict):
            raise IngestError(src.name, key, "an object (or no such key)", f"found {_describe(v)}")
    for g, subs in (obj.get("group_subtasks") or {}).items():
        if subs is not None and not (isinstance(subs, list) and
                                     all(isinstance(t, str) for t in subs)):
            raise IngestError(src.name, f"group_subtasks.{g}", "a list of task names",
                              f"found {_describe(subs)}")
    m = RESULTS_NAME.match(src.basename)
    groups = _group_names(obj)
    names = set(obj.get("configs") or {}) | set(obj["results"])
    return ResultsFile(src=src, obj=obj, ts=m.group("ts") if m else None,
                       task_names={t for t in names if t not in groups})


def _group_names(obj: dict[str, Any]) -> set[str]:
    groups = set(obj.get("groups") or {})
    for g, subs in (obj.get("group_subtasks") or {}).items():
        if subs:
            groups.add(g)
    return groups


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if is_number(v):
        return float(v)
    return None


def _describe(val: Any) -> str:
    """What a JSON value is, for a message: its type and at most 40 characters of it."""
    kind = {str: "a string", list: "a list", dict: "an object", bool: "a boolean",
            type(None): "null"}.get(type(val), type(val).__name__)
    text = dumps(val)
    return f"{kind} {text[:40]}{'...' if len(text) > 40 else ''}"


def summary_value(val: Any, src_name: str, where: str, warnings: list[str] | None
                  ) -> float | None:
    """A reported summary value as a float, or None (left out, with a warning saying so).

    Numbers are kept; NaN is kept as a missing value (warned); infinite values and values
    beyond +-``MAX_ABS_SCORE`` raise ``IngestError`` naming the field; a boolean becomes
    1.0/0.0 and strings, lists, objects and null are left out, each with a warning naming
    file, field and what was found."""
    def warn(text: str) -> None:
        if warnings is not None:
            warnings.append(f"{src_name}: {where}: {text}")

    if isinstance(val, bool):
        warn(f"found the boolean {dumps(val)} where a number was expected; stored as "
             f"{float(val):g} (a boolean is not a score: check the file)")
        return float(val)
    if is_number(val):
        v = float(val)
        if math.isnan(v):
            warn("found NaN; kept as a missing value")
            return v
        if not math.isfinite(v) or abs(v) > MAX_ABS_SCORE:
            raise IngestError(src_name, where, f"a finite number within +-{MAX_ABS_SCORE:g}",
                              f"found {val!r}")
        return v
    warn(f"found {_describe(val)} where a number was expected; this value was left out "
         "(no reported value for this metric)")
    return None


def results_summaries(obj: dict[str, Any], warnings: list[str] | None = None,
                      src_name: str = "results") -> list[dict[str, Any]]:
    """Summary rows (SUMMARY_COLUMNS as dicts) from a results object (0.3 and 0.4).

    Values are checked by ``summary_value`` (problems go to ``warnings``, naming
    ``src_name`` and the field ``results.<task>.<key>``)."""
    results: dict[str, Any] = obj["results"]
    groups_obj = obj.get("groups") or {}
    group_subtasks = obj.get("group_subtasks") or {}
    groups = _group_names(obj)
    nsamples = obj.get("n-samples") or {}
    entries = dict(results)
    for g, entry in groups_obj.items():
        if g not in entries and isinstance(entry, dict):
            entries[g] = entry

    def count(value: Any) -> int | None:
        # a count the file gives as NaN, Infinity or a negative number is unknown, not an error
        if is_number(value) and math.isfinite(value) and value >= 0:
            return int(value)
        return None

    def task_n(task: str, depth: int = 0) -> int | None:
        ns = nsamples.get(task)
        if isinstance(ns, dict) and count(ns.get("effective")) is not None:
            return count(ns["effective"])
        entry = entries.get(task) or {}
        if count(entry.get("sample_len")) is not None:
            return count(entry["sample_len"])
        subs = group_subtasks.get(task) or []
        if subs and depth < 20:
            parts = [task_n(s, depth + 1) for s in subs]
            if all(p is not None for p in parts):
                return int(sum(parts))  # type: ignore[arg-type]
        return None

    rows: list[dict[str, Any]] = []
    for task, entry in entries.items():
        counts = entry.get("sample_count") if isinstance(entry.get("sample_count"), dict) else {}
        section = "results" if task in results else "groups"
        for key, val in entry.items():
            if key in ENTRY_META or not isinstance(key, str):
                continue
            base, _, filt = key.partition(",")
            if base.endswith("_stderr"):
                continue
            value = summary_value(val, src_name, f"{section}.{task}.{key}", warnings)
            if value is None:
                continue
            metric = base if filt in ("", "none") else f"{base},{filt}"
            se_key = f"{base}_stderr,{filt}" if "," in key else f"{base}_stderr"
            se = entry.get(se_key)
            se_num = _number(se)
            n = counts.get(key) if is_number(counts.get(key)) else task_n(task)
            rows.append({
                "task": task, "metric": metric, "value": value,
                "stderr": se_num if se_num is not None else math.nan,
                "stderr_raw": None if se is None or se_num is not None else str(se),
                "n": None if n is None else int(n), "is_group": task in groups,
            })
    return rows


def _model_from_args(model_args: Any) -> str | None:
    if isinstance(model_args, dict):
        for k in ("pretrained", "model", "model_name", "path"):
            if isinstance(model_args.get(k), str):
                return model_args[k]
        return None
    if isinstance(model_args, str):
        for part in model_args.split(","):
            k, _, v = part.partition("=")
            if k.strip() in ("pretrained", "model", "model_name", "path") and v:
                return v.strip()
    return None


def run_identity(obj: dict[str, Any]) -> tuple[str | None, str | None]:
    """(model name, harness version) of a results object."""
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    model = obj.get("model_name") or _model_from_args(cfg.get("model_args")) or cfg.get("model")
    version = obj.get("lm_eval_version")
    if not version and obj.get("git_hash"):
        version = f"git {obj['git_hash']}"
    return (str(model) if model else None), (str(version) if version else None)


def _is_v03(obj: dict[str, Any]) -> bool:
    return not any("," in k for e in obj["results"].values() if isinstance(e, dict) for k in e) \
        and "configs" not in obj


def run_protocol(obj: dict[str, Any]) -> dict[str, Any]:
    """Run-level settings compared in protocol diffs (None values dropped)."""
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    proto: dict[str, Any] = {"harness": HARNESS, "results_format": "0.3" if _is_v03(obj) else "0.4"}
    for k in RUN_TOP_KEYS:
        if obj.get(k) is not None:
            proto[k] = obj[k]
    for k in RUN_CONFIG_KEYS:
        if cfg.get(k) is not None:
            proto[k] = cfg[k]
    proto["apply_chat_template"] = obj.get("chat_template") is not None
    return proto


# a judge call in a task's own code (process_results): an LLM client or API in the source
_JUDGE_CALL = re.compile(r"chat\.completions|OpenAI\(|Anthropic\(|messages\.create|"
                         r"litellm|judge", re.I)
_JUDGE_MODEL_LITERAL = re.compile(r"model\s*=\s*[\"']([^\"']+)[\"']")


def task_judges(tc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The LLM judge of an lm_eval task config, when its scoring calls one: a metric named
    like a judge (``llm_judge``, ``*_judge``) or a ``process_results`` that calls a chat
    model. {metric: {"model", "model_source", "template_sha256"}}: the model when the code
    names it as a literal (``model="..."``), else "unknown (set in process_results)"; the
    hash is of the ``process_results`` source (prompt and call together)."""
    import hashlib
    metrics = [str(m.get("metric")) for m in tc.get("metric_list") or []
               if isinstance(m, dict) and m.get("metric") is not None]
    code = tc.get("process_results") if isinstance(tc.get("process_results"), str) else ""
    judged = [m for m in metrics if "judge" in m.lower()]
    if not judged and not (code and _JUDGE_CALL.search(code)):
        return {}
    literal = _JUDGE_MODEL_LITERAL.search(code)
    record = {"model": literal.group(1) if literal else "unknown (set in process_results)",
              "model_source": "process_results",
              "template_sha256": (hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
                                  if code else "unknown")}
    return {m: dict(record) for m in (judged or metrics or ["score"])}


def task_rows(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per-task protocol and n_choices from configs, versions, n-shot, task_hashes and the
    harness's ``higher_is_better`` per metric (read by ``evalcore.metrics``)."""
    configs = obj.get("configs") or {}
    versions = obj.get("versions") or {}
    nshot = obj.get("n-shot") or {}
    hashes = obj.get("task_hashes") or {}
    hib = obj.get("higher_is_better") if isinstance(obj.get("higher_is_better"), dict) else {}
    group_subtasks = obj.get("group_subtasks") or {}
    groups = _group_names(obj)
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    out: dict[str, dict[str, Any]] = {}
    names = list(obj["results"]) + [t for t in configs if t not in obj["results"]] + \
        [g for g in groups if g not in obj["results"]]
    for task in names:
        tc = configs.get(task) if isinstance(configs.get(task), dict) else {}
        proto: dict[str, Any] = {k: tc[k] for k in TASK_CONFIG_KEYS if tc.get(k) is not None}
        if task in versions:
            proto["version"] = versions[task]
        elif isinstance(tc.get("metadata"), dict) and "version" in tc["metadata"]:
            proto["version"] = tc["metadata"]["version"]
        if task in nshot:
            proto["num_fewshot"] = nshot[task]
        elif "num_fewshot" not in proto and cfg.get("num_fewshot") is not None:
            proto["num_fewshot"] = cfg["num_fewshot"]
        if hashes.get(task):
            proto["task_hash"] = hashes[task]
        if isinstance(hib.get(task), dict):
            # the harness's own direction per metric (0.4 results; evalcore.metrics)
            proto["higher_is_better"] = {str(m): v for m, v in hib[task].items()
                                         if isinstance(v, bool)}
        judges = task_judges(tc)
        if judges:
            proto["judges"] = judges
        if task in groups:
            proto["is_group"] = True
            proto["subtasks"] = list(group_subtasks.get(task) or [])
        choice = tc.get("doc_to_choice")
        n_choices = len(choice) if isinstance(choice, list) and choice else None
        out[task] = {"task": task, "n_choices": n_choices, "protocol": proto}
    return out
