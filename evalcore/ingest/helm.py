"""HELM run directories (``benchmark_output/runs/<suite>/<run name>/``) or a zip of one.

Files: ``per_instance_stats.json`` (required: per-instance metric values),
``run_spec.json`` (required: scenario, adapter and metric specs), ``stats.json`` (optional:
aggregate metrics -> summaries), ``scenario_state.json`` (optional: prompts, references and
completions -> texts), ``scenario.json`` (ignored).

Mapping
-------
* Run name = ``adapter_spec.model`` (e.g. ``openai/gpt2``); protocol = the adapter spec
  (method, instructions, few-shot count, temperature, max tokens, ...), the run-spec name
  and the data augmenter.
* Task = the run-spec name without its ``model=``/``model_deployment=`` arguments
  (``mmlu:subject=philosophy,method=multiple_choice_joint``); instances of splits other
  than ``test`` go to task ``<task>@<split>`` (e.g. ``@valid``), so a task's items are one
  evaluation set.
* Item id = ``instance_id``, plus ``#trial<k>`` when ``train_trial_index`` > 0 and
  ``#<perturbation name>`` for perturbed instances: HELM pairs on (instance id, train
  trial, perturbation). ids like ``id147`` are stable across models for the same scenario.
* Metrics: the names listed in the run spec's metric specs (``exact_match``,
  ``quasi_exact_match``, ...; default: ``exact_match``-like and ``f1``/``rouge``/``bleu``
  names present), one value per instance (``mean`` of a count-1 stat).
* Summaries: ``stats.json`` entries of those metrics without a perturbation; ``n`` is the
  number of instances of that split in ``per_instance_stats.json`` (the aggregate's
  ``count`` counts train trials, not instances, so it is not used as n). HELM reports no
  stderr.
* ``n_choices``: the ``num_references`` stat of multiple-choice adapter methods.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    Source,
    check_unique,
    is_number,
    load_json,
    scores_frame,
    summaries_frame,
    tasks_frame,
    texts_frame,
)
from evalcore.model import ParsedRun

PER_INSTANCE = "helm_per_instance_stats"
RUN_SPEC = "helm_run_spec"
STATS = "helm_stats"
SCENARIO_STATE = "helm_scenario_state"
SCENARIO = "helm_scenario"
PART_FORMATS = (PER_INSTANCE, RUN_SPEC, STATS, SCENARIO_STATE, SCENARIO)
HARNESS = "helm"
TEXT_LIMIT = 8000
DEFAULT_METRICS = re.compile(r"^(quasi_)?(prefix_)?exact_match$|^f1_score$|^rouge_[l12]$|^bleu_[14]$")


def _task_name(run_name: str) -> str:
    scenario, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    return scenario + (":" + ",".join(kept) if kept else "")


def _metric_names(run_spec: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for spec in run_spec.get("metric_specs") or []:
        args = spec.get("args") if isinstance(spec, dict) else None
        if isinstance(args, dict) and isinstance(args.get("names"), list):
            names.extend(str(n) for n in args["names"])
    return names


def _perturbation(p: Any) -> str | None:
    if not p:
        return None
    if isinstance(p, dict):
        return str(p.get("name") or "perturbed")
    return str(p)


def _item_id(inst: dict[str, Any]) -> str:
    iid = str(inst["instance_id"])
    trial = inst.get("train_trial_index") or 0
    if trial:
        iid += f"#trial{int(trial)}"
    pert = _perturbation(inst.get("perturbation"))
    if pert:
        iid += f"#{pert}"
    return iid


def parse_run(parts: dict[str, Source], folder: str) -> ParsedRun:
    """One ParsedRun from the files of one HELM run directory (by format name)."""
    where_folder = folder or "(upload)"
    if PER_INSTANCE not in parts or RUN_SPEC not in parts:
        have = ", ".join(s.basename for s in parts.values())
        missing = [f for f, n in ((PER_INSTANCE, "per_instance_stats.json"),
                                  (RUN_SPEC, "run_spec.json")) if f not in parts]
        raise IngestError(have or where_folder, f"folder {where_folder}", "a HELM run directory with per_instance_stats.json "
                          "and run_spec.json",
                          f"missing {', '.join('per_instance_stats.json' if m == PER_INSTANCE else 'run_spec.json' for m in missing)}"
                          f" (found {have})")
    pis_src, spec_src = parts[PER_INSTANCE], parts[RUN_SPEC]
    spec = load_json(spec_src)
    if not isinstance(spec, dict) or not isinstance(spec.get("adapter_spec"), dict):
        raise IngestError(spec_src.name, "adapter_spec", "a HELM run spec with an adapter_spec")
    pis = load_json(pis_src)
    if not isinstance(pis, list):
        raise IngestError(pis_src.name, "top level", "a list of per-instance stats")
    adapter = spec["adapter_spec"]
    run_name = str(spec.get("name") or where_folder)
    base_task = _task_name(run_name)
    wanted = _metric_names(spec)
    warnings: list[str] = []

    tasks_l: list[str] = []
    metrics_l: list[str] = []
    ids_l: list[str] = []
    vals: list[float] = []
    n_refs: Counter[int] = Counter()
    split_items: dict[str, set[str]] = {}
    for i, inst in enumerate(pis):
        where = f"[{i}]"
        if not isinstance(inst, dict) or "instance_id" not in inst or not isinstance(inst.get("stats"), list):
            raise IngestError(pis_src.name, where, "an object with instance_id and a stats list")
        iid = _item_id(inst)
        for j, st in enumerate(inst["stats"]):
            name = st.get("name") if isinstance(st, dict) else None
            if not isinstance(name, dict) or "name" not in name:
                raise IngestError(pis_src.name, f"{where}.stats[{j}]", "a stat with a name object")
            mname = str(name["name"])
            split = str(name.get("split") or "test")
            task = base_task if split == "test" else f"{base_task}@{split}"
            if mname == "num_references" and is_number(st.get("mean")):
                n_refs[int(st["mean"])] += 1
            if wanted and mname not in wanted or (not wanted and not DEFAULT_METRICS.match(mname)):
                continue
            if name.get("perturbation"):
                continue
            if not st.get("count"):
                continue
            v = st.get("mean")
            if v is None and is_number(st.get("sum")) and is_number(st.get("count")):
                v = st["sum"] / st["count"]
            if not is_number(v) or not math.isfinite(float(v)):
                raise IngestError(pis_src.name, f"{where}.stats[{j}] ({mname})", "a finite score",
                                  f"found {v!r}")
            tasks_l.append(task)
            metrics_l.append(mname)
            ids_l.append(iid)
            vals.append(float(v))
            split_items.setdefault(task, set()).add(iid)
    scores = scores_frame(tasks_l, metrics_l, ids_l, 0, np.asarray(vals, dtype="float64"))
    check_unique(scores, pis_src.name)

    # summaries from stats.json
    rows = []
    if STATS in parts:
        stats = load_json(parts[STATS])
        if not isinstance(stats, list):
            raise IngestError(parts[STATS].name, "top level", "a list of aggregate stats")
        for st in stats:
            name = st.get("name") if isinstance(st, dict) else None
            if not isinstance(name, dict) or name.get("perturbation"):
                continue
            mname = str(name.get("name"))
            if wanted and mname not in wanted or (not wanted and not DEFAULT_METRICS.match(mname)):
                continue
            split = str(name.get("split") or "test")
            task = base_task if split == "test" else f"{base_task}@{split}"
            rows.append({"task": task, "metric": mname,
                         "value": st.get("mean") if is_number(st.get("mean")) else math.nan,
                         "stderr": math.nan, "stderr_raw": None,
                         "n": len(split_items.get(task, ())) or None, "is_group": False})
    summaries = summaries_frame(rows)

    # texts from scenario_state.json
    text_rows: dict[tuple[str, str], tuple[str | None, str | None, str | None]] = {}
    if SCENARIO_STATE in parts:
        state = load_json(parts[SCENARIO_STATE])
        for rs in (state.get("request_states") or []) if isinstance(state, dict) else []:
            if not isinstance(rs, dict) or not isinstance(rs.get("instance"), dict):
                continue
            inst = rs["instance"]
            key_inst = {"instance_id": inst.get("id"), "train_trial_index": rs.get("train_trial_index"),
                        "perturbation": inst.get("perturbation")}
            if key_inst["instance_id"] is None:
                continue
            split = str(inst.get("split") or "test")
            task = base_task if split == "test" else f"{base_task}@{split}"
            mapping = rs.get("output_mapping") if isinstance(rs.get("output_mapping"), dict) else {}
            refs = inst.get("references") or []
            correct = [r.get("output", {}).get("text") for r in refs
                       if isinstance(r, dict) and "correct" in (r.get("tags") or [])]
            if mapping:
                inv = {v: k for k, v in mapping.items()}
                correct = [f"{inv[c]}. {c}" if c in inv else c for c in correct]
            req = rs.get("request") or {}
            comps = (rs.get("result") or {}).get("completions") or []
            resp = comps[0].get("text") if comps and isinstance(comps[0], dict) else None
            if isinstance(resp, str) and resp.strip() in mapping:
                resp = f"{resp.strip()}. {mapping[resp.strip()]}"
            prompt = req.get("prompt")
            text_rows[(task, _item_id(key_inst))] = (
                prompt[:TEXT_LIMIT] if isinstance(prompt, str) else None,
                " | ".join(c for c in correct if isinstance(c, str)) or None,
                resp[:TEXT_LIMIT] if isinstance(resp, str) else None)
    keys = list(text_rows)
    texts = texts_frame([k[0] for k in keys], [k[1] for k in keys], 0,
                        [text_rows[k][0] for k in keys], [text_rows[k][1] for k in keys],
                        [text_rows[k][2] for k in keys])

    method = str(adapter.get("method") or "")
    n_choices = n_refs.most_common(1)[0][0] if n_refs and "multiple_choice" in method else None
    protocol = {"harness": HARNESS, "run_spec": run_name,
                "adapter_spec": adapter,
                "scenario": spec.get("scenario_spec"),
                "data_augmenter": spec.get("data_augmenter_spec"),
                "metrics": wanted or None, "groups": spec.get("groups")}
    protocol = {k: v for k, v in protocol.items() if v is not None}
    task_proto = {k: adapter.get(k) for k in ("method", "instructions", "max_train_instances",
                                              "num_train_trials", "temperature", "max_tokens",
                                              "input_prefix", "output_prefix", "reference_prefix")
                  if k in adapter}
    task_names = sorted(set(tasks_l) | {r["task"] for r in rows}) or [base_task]
    tasks = tasks_frame([{"task": t, "n_choices": n_choices, "protocol": task_proto}
                         for t in task_names])
    files = [parts[f].source_file(f) for f in PART_FORMATS if f in parts]
    model = adapter.get("model") or adapter.get("model_deployment")
    return ParsedRun(name=str(model or run_name), model=model, source_format="helm",
                     harness=HARNESS, harness_version=None, protocol=protocol, files=files,
                     scores=scores, summaries=summaries, texts=texts, tasks=tasks,
                     source_key=None, warnings=warnings)
