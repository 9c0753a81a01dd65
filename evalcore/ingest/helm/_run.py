"""Reading HELM run folders into runs (which file is which: ``_files``).

Per run folder
--------------
* Read: ``run_spec.json`` (required), ``per_instance_stats.json`` (the per-instance values;
  if absent, ``display_predictions.json`` with ``instances.json`` for the splits is read
  instead, with a warning: HELM's display copy holds only the metrics its schema shows),
  ``stats.json`` (summaries), ``scenario_state.json`` (prompts, references, completions;
  without it the texts come from ``instances.json`` and ``display_predictions.json``).
* Recognised and not read (named at debug level): ``scenario.json``, ``instances.json`` and
  ``display_predictions.json`` when ``per_instance_stats.json`` is there,
  ``display_requests.json``, and the suite files of ``helm-summarize`` (``runs.json``,
  ``groups.json``, ...) except ``schema.json``, which is read for main metrics and directions.

Mapping
-------
* A run = one model in one suite folder: every run folder of a suite with the same
  ``adapter_spec.model`` (and deployment) becomes one run whose tasks are the run folders'
  scenarios (a task name that repeats within such a group starts a new run). Run name = the
  model; run protocol = harness, suite, model and deployment; the adapter spec is per task.
* Task = the run-spec name without ``model=``/``model_deployment=``
  (``mmlu:subject=philosophy,method=multiple_choice_joint``) for the scenario's main split
  (see below); instances of other splits go to ``<task>@<split>`` and perturbed instances to
  ``<task>#<perturbation>`` (``<task>@valid#typos(prob=0.1)``): a task's items are one set.
* Item id = ``instance_id``; ``answer_idx`` = ``train_trial_index``. HELM's pairing key is
  (instance id, train trial, perturbation): the perturbation is in the task, the trial in
  the answer index, so several train trials are K answers per item (the same in-context
  examples for every model in trial k) and the item, not the (item, trial), is the unit.
* Metrics: every per-instance stat with values (``count`` > 0), except HELM's bookkeeping
  stats (``BOOKKEEPING``: token and byte counts, runtimes, costs, finish reasons, batch
  size, truncation, ``max_prob``, ``logprob``, ``predicted_index``); value = the stat's mean.
* Primary metric and main split per task (``choose_main``), recorded in the task protocol
  as ``primary_metric``/``main_split``/``primary_metric_from``: (1) the suite's
  ``schema.json`` run group of the run spec's ``groups`` (``environment.main_name`` and
  ``main_split``), (2) the same from HELM's published schemas (``_schema.MAIN_METRICS``),
  (3) otherwise the first metric named in the run spec's metric specs that has values, then
  ``exact_match``-like names, then the first name alphabetically; main split ``test``.
* Direction per metric (task protocol ``higher_is_better`` {metric: bool}, read by
  ``evalcore.metrics`` as the harness's declaration): the negation of ``lower_is_better`` in
  the suite's ``schema.json``, else in HELM's published schemas
  (``_schema.LOWER_IS_BETTER``/``HIGHER_IS_BETTER``); metrics HELM declares no direction
  for are left out (direction unknown unless evalbars' own table knows them).
* Summaries: the ``stats.json`` mean of each kept metric (and of the primary metric) per
  split and perturbation; HELM's worst-case ``robustness``/``fairness`` aggregates have no
  per-instance values and are not stored. HELM averages each train trial over its instances
  and then the trials, which equals the mean over (item, trial) pairs when every trial covers
  the same instances; a stored mean that differs from ``stats.json`` by more than 1e-9 is
  named in a warning. ``n`` = instances (``stats.json``'s ``count`` counts trials). HELM
  reports no stderr.
* ``n_choices``: the ``num_references`` stat of multiple-choice adapter methods.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    Source,
    check_unique,
    concat_frames,
    is_number,
    load_json,
    scores_frame,
    summaries_frame,
    tasks_frame,
    texts_frame,
)
from evalcore.ingest.helm._files import (
    DISPLAY_PREDICTIONS,
    FILE_NAMES,
    INSTANCES,
    PER_INSTANCE,
    RUN_SPEC,
    SCENARIO_STATE,
    SCHEMA,
    STATS,
    describe,
)
from evalcore.ingest.helm._metrics import (
    BOOKKEEPING,
    SuiteSchema,
    choose_main,
    direction,
    equivalent_candidates,
    metric_spec_names,
    perturbation_label,
    read_schema,
    task_for,
    task_name,
)
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, ParsedRun, SourceFile

log = logging.getLogger("evalcore.ingest.helm")

HARNESS = "helm"
TEXT_LIMIT = 8000
TOLERANCE = 1e-9
_ADAPTER_RUN_KEYS = ("model", "model_deployment")


@dataclass
class _Value:
    split: str
    pert: str | None
    metric: str
    item: str
    trial: int
    value: float


@dataclass
class Folder:
    """What one run folder contributes to a run."""

    folder: str
    run_name: str
    model: str | None
    deployment: str | None
    scores: pd.DataFrame
    summaries: list[dict[str, Any]]
    texts: pd.DataFrame
    tasks: list[dict[str, Any]]
    files: list[SourceFile]
    warnings: list[str] = field(default_factory=list)


def _parent(folder: str) -> str:
    i = max(folder.rfind("/"), folder.rfind("\\"), folder.rfind("!"))
    return folder[:i] if i >= 0 else ""


def _ancestors(folder: str) -> list[str]:
    out = [folder]
    while folder:
        folder = _parent(folder)
        out.append(folder)
    return out


def _suite_name(folder: str) -> str | None:
    """The suite of a run folder's parent ``.../runs/<suite>``, else None."""
    parts = re.split(r"[\\/!]", folder)
    return parts[-1] if len(parts) >= 2 and parts[-2] == "runs" and parts[-1] else None


def _finite(src: Source, where: str, metric: str, v: Any) -> float:
    if not is_number(v) or not math.isfinite(float(v)):
        raise IngestError(src.name, f"{where} ({metric})", "a finite score", f"found {v!r}")
    return float(v)


def _from_per_instance(src: Source, n_refs: Counter[int]) -> list[_Value]:
    pis = load_json(src)
    if not isinstance(pis, list):
        raise IngestError(src.name, "top level", "a list of per-instance stats")
    out: list[_Value] = []
    for i, inst in enumerate(pis):
        where = f"[{i}]"
        if not isinstance(inst, dict) or "instance_id" not in inst or not isinstance(inst.get("stats"), list):
            raise IngestError(src.name, where, "an object with instance_id and a stats list")
        iid = str(inst["instance_id"])
        trial = inst.get("train_trial_index") or 0
        if not isinstance(trial, int) or trial < 0:
            raise IngestError(src.name, f"{where}.train_trial_index", "a non-negative integer",
                              f"found {trial!r}")
        entry_pert = inst.get("perturbation")
        for j, st in enumerate(inst["stats"]):
            name = st.get("name") if isinstance(st, dict) else None
            if not isinstance(name, dict) or "name" not in name:
                raise IngestError(src.name, f"{where}.stats[{j}]", "a stat with a name object")
            mname = str(name["name"])
            if mname == "num_references" and is_number(st.get("mean")):
                n_refs[int(st["mean"])] += 1
            if BOOKKEEPING.match(mname) or not st.get("count"):
                continue                      # bookkeeping, or not computed for this instance
            v = st.get("mean")
            if v is None and is_number(st.get("sum")) and is_number(st.get("count")):
                v = st["sum"] / st["count"]
            out.append(_Value(str(name.get("split") or "test"),
                              perturbation_label(name.get("perturbation") or entry_pert), mname,
                              iid, trial, _finite(src, f"{where}.stats[{j}]", mname, v)))
    return out


def _from_display(src: Source, inst_src: Source | None, warnings: list[str],
                  n_refs: Counter[int]) -> list[_Value]:
    preds = load_json(src)
    if not isinstance(preds, list):
        raise IngestError(src.name, "top level", "a list of display predictions")
    splits: dict[tuple[str, str | None], str] = {}
    if inst_src is not None:
        insts = load_json(inst_src)
        for inst in insts if isinstance(insts, list) else []:
            if isinstance(inst, dict) and "id" in inst:
                splits[(str(inst["id"]), perturbation_label(inst.get("perturbation")))] = \
                    str(inst.get("split") or "test")
                if isinstance(inst.get("references"), list):
                    n_refs[len(inst["references"])] += 1
    warnings.append(f"{src.name}: no per_instance_stats.json; scores read from HELM's display "
                    "copy, which holds only the metrics HELM's schema shows for this scenario"
                    + ("" if inst_src is not None else
                       "; without instances.json every instance is taken to be in the main split"))
    out: list[_Value] = []
    for i, p in enumerate(preds):
        where = f"[{i}]"
        if not isinstance(p, dict) or "instance_id" not in p or not isinstance(p.get("stats"), dict):
            raise IngestError(src.name, where, "an object with instance_id and a stats object")
        iid = str(p["instance_id"])
        pert = perturbation_label(p.get("perturbation"))
        split = splits.get((iid, pert), "")               # "" = main split, resolved later
        trial = p.get("train_trial_index") or 0
        for mname, v in p["stats"].items():
            if BOOKKEEPING.match(str(mname)):
                continue
            out.append(_Value(split, pert, str(mname), iid, int(trial),
                              _finite(src, f"{where}.stats", str(mname), v)))
    return out


def _texts(src: Source, base: str, main_split: str) -> pd.DataFrame:
    state = load_json(src)
    rows: dict[tuple[str, str, int], tuple[str | None, str | None, str | None]] = {}
    for rs in (state.get("request_states") or []) if isinstance(state, dict) else []:
        if not isinstance(rs, dict) or not isinstance(rs.get("instance"), dict):
            continue
        if rs.get("request_mode") == "calibration":
            continue
        inst = rs["instance"]
        if inst.get("id") is None:
            continue
        task = task_for(base, str(inst.get("split") or "test"),
                        perturbation_label(inst.get("perturbation")), main_split)
        key = (task, str(inst["id"]), int(rs.get("train_trial_index") or 0))
        if key in rows:                  # multiple_choice_separate: one request per choice
            continue
        mapping = rs.get("output_mapping") if isinstance(rs.get("output_mapping"), dict) else {}
        refs = inst.get("references") or []
        correct = [(r.get("output") or {}).get("text") for r in refs
                   if isinstance(r, dict) and "correct" in (r.get("tags") or [])]
        if mapping:
            inv = {v: k for k, v in mapping.items()}
            correct = [f"{inv[c]}. {c}" if c in inv else c for c in correct]
        req = rs.get("request") or {}
        comps = (rs.get("result") or {}).get("completions") or []
        resp = comps[0].get("text") if comps and isinstance(comps[0], dict) else None
        if isinstance(resp, str) and resp.strip() in mapping:
            resp = f"{resp.strip()}. {mapping[resp.strip()]}"
        prompt = req.get("prompt") if isinstance(req, dict) else None
        rows[key] = (prompt[:TEXT_LIMIT] if isinstance(prompt, str) else None,
                     " | ".join(c for c in correct if isinstance(c, str)) or None,
                     resp[:TEXT_LIMIT] if isinstance(resp, str) else None)
    keys = list(rows)
    return texts_frame([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                       [rows[k][0] for k in keys], [rows[k][1] for k in keys],
                       [rows[k][2] for k in keys])


def _display_texts(preds_src: Source, inst_src: Source, base: str,
                   main_split: str) -> pd.DataFrame:
    """Texts from HELM's display copies when scenario_state.json is absent: prompt = the
    instance's input text (without HELM's few-shot prefix), target = its correct
    references, response = the predicted text (with its mapped option, if any)."""
    insts = load_json(inst_src)
    by_key: dict[tuple[str, str | None], dict[str, Any]] = {}
    for inst in insts if isinstance(insts, list) else []:
        if isinstance(inst, dict) and "id" in inst:
            by_key[(str(inst["id"]), perturbation_label(inst.get("perturbation")))] = inst
    preds = load_json(preds_src)
    rows: dict[tuple[str, str, int], tuple[str | None, str | None, str | None]] = {}
    for p in preds if isinstance(preds, list) else []:
        if not isinstance(p, dict) or "instance_id" not in p:
            continue
        pert = perturbation_label(p.get("perturbation"))
        inst = by_key.get((str(p["instance_id"]), pert))
        if inst is None:
            continue
        task = task_for(base, str(inst.get("split") or "test"), pert, main_split)
        key = (task, str(p["instance_id"]), int(p.get("train_trial_index") or 0))
        text = (inst.get("input") or {}).get("text") if isinstance(inst.get("input"), dict) else None
        correct = [(r.get("output") or {}).get("text") for r in inst.get("references") or []
                   if isinstance(r, dict) and "correct" in (r.get("tags") or [])]
        resp = p.get("predicted_text")
        if isinstance(resp, str) and isinstance(p.get("mapped_output"), str):
            resp = f"{resp.strip()}. {p['mapped_output']}"
        rows.setdefault(key, (text[:TEXT_LIMIT] if isinstance(text, str) else None,
                              " | ".join(c for c in correct if isinstance(c, str)) or None,
                              resp[:TEXT_LIMIT] if isinstance(resp, str) else None))
    keys = list(rows)
    return texts_frame([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                       [rows[k][0] for k in keys], [rows[k][1] for k in keys],
                       [rows[k][2] for k in keys])


def _reported_main(stats: list[dict[str, Any]], primary: str, base: str,
                   main_split: str) -> dict[str, float]:
    """task -> the stats.json mean of the main metric (whole split and perturbation: not a
    sub-split, not a worst case)."""
    out: dict[str, float] = {}
    for s in stats:
        name = s["name"]
        pert = name.get("perturbation")
        if str(name.get("name")) != primary or name.get("sub_split") or \
                (isinstance(pert, dict) and pert.get("computed_on") == "worst"):
            continue
        if s.get("count") and is_number(s.get("mean")):
            task = task_for(base, str(name.get("split") or "test"), perturbation_label(pert),
                            main_split)
            out.setdefault(task, float(s["mean"]))
    return out


def _main_from_equivalent(scores: pd.DataFrame, stats: list[dict[str, Any]],
                          primary: str | None, groups: list[str], base: str, main_split: str,
                          run_name: str, warnings: list[str]
                          ) -> tuple[pd.DataFrame, dict[str, str]]:
    """Item scores for a main metric that HELM computes over all instances only (no
    per-instance values; ``bbq_accuracy``), taken from a per-instance metric that is the same
    number: one of ``equivalent_candidates`` whose per-instance mean (over instances per train
    trial, then over trials, as HELM averages) equals the main metric's stats.json value
    within 1e-9 on that task. When several candidates match they must agree item by item;
    otherwise none is taken (named in ``warnings``). Returns the scores with the copied rows
    (metric renamed to the main metric) and task -> the metric they were copied from."""
    if primary is None or primary in set(scores["metric"]):
        return scores, {}
    added, used = [], {}
    for task, value in _reported_main(stats, primary, base, main_split).items():
        sub = scores[scores["task"] == task]
        matches = []
        for m in equivalent_candidates(groups, primary):
            rows = sub[sub["metric"] == m]
            if len(rows):
                mean = float(rows.groupby("answer_idx")["score"].mean().mean())
                if abs(mean - value) <= TOLERANCE * max(1.0, abs(value)):
                    matches.append((m, rows))
        if not matches:
            continue
        keyed = [r.sort_values(["item_id", "answer_idx"])[["item_id", "answer_idx", "score"]]
                 .reset_index(drop=True) for _, r in matches]
        if any(not k.equals(keyed[0]) for k in keyed[1:]):
            warnings.append(f"{run_name}: HELM's main metric {primary!r} on {task} has no "
                            f"per-instance values; {', '.join(m for m, _ in matches)} each "
                            f"average to its stats.json value {value!r} but differ item by "
                            "item, so none is taken for its item scores")
            continue
        m, rows = matches[0]
        added.append(rows.assign(metric=primary))
        used[task] = m
        warnings.append(f"{run_name}: HELM's main metric {primary!r} has no per-instance "
                        f"values (HELM computes it over all instances); on {task} its item "
                        f"scores are those of {m!r}, whose per-instance mean equals the "
                        f"stats.json value {value!r}")
    if added:
        scores = concat_frames([scores, *added], SCORE_COLUMNS)
    return scores, used



def annotator_judges(spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """HELM annotators (``run_spec.annotators``: scores graded by a model, e.g. HELM's
    model-as-judge annotators) as judges {annotator: {"model", "model_source",
    "template_sha256"}}: the model from the annotator's args (``model``,
    ``model_deployment``, ``judge_model``) when given, else "unknown (in the annotator)";
    the hash of the annotator spec (class and args), so a changed annotator reads as another
    instrument."""
    import hashlib
    import json
    out: dict[str, dict[str, str]] = {}
    for ann in spec.get("annotators") or []:
        if not isinstance(ann, dict) or not isinstance(ann.get("class_name"), str):
            continue
        args = ann.get("args") if isinstance(ann.get("args"), dict) else {}
        model = next((str(args[k]) for k in ("model", "model_deployment", "judge_model")
                      if isinstance(args.get(k), str) and args[k]),
                     "unknown (in the annotator)")
        digest = hashlib.sha256(json.dumps(ann, sort_keys=True, default=str).encode("utf-8")
                                ).hexdigest()[:16]
        out[ann["class_name"].rsplit(".", 1)[-1]] = {
            "model": model, "model_source": "HELM annotator spec", "template_sha256": digest}
    return out

def read_folder(parts: dict[str, Source], folder: str, schema: SuiteSchema | None) -> Folder:
    """What one HELM run folder holds, by format name (see ``_files``)."""
    where_folder = folder or "(upload)"
    _check_parts(parts, where_folder)
    spec_src = parts[RUN_SPEC]
    spec = load_json(spec_src)
    if not isinstance(spec, dict) or not isinstance(spec.get("adapter_spec"), dict):
        raise IngestError(spec_src.name, "adapter_spec", "a HELM run spec with an adapter_spec")
    adapter = spec["adapter_spec"]
    run_name = str(spec.get("name") or where_folder)
    base = task_name(run_name)
    groups = [str(g) for g in spec.get("groups") or [] if isinstance(g, str)]
    warnings: list[str] = []
    n_refs: Counter[int] = Counter()
    used = [RUN_SPEC]
    if PER_INSTANCE in parts:
        values = _from_per_instance(parts[PER_INSTANCE], n_refs)
        used.append(PER_INSTANCE)
        value_src = parts[PER_INSTANCE]
    else:
        values = _from_display(parts[DISPLAY_PREDICTIONS], parts.get(INSTANCES), warnings, n_refs)
        used += [DISPLAY_PREDICTIONS] + ([INSTANCES] if INSTANCES in parts else [])
        value_src = parts[DISPLAY_PREDICTIONS]
    stats = _stats_entries(parts, used)
    available = {v.metric for v in values} | {
        str(s["name"].get("name")) for s in stats
        if s.get("count") and not BOOKKEEPING.match(str(s["name"].get("name")))}
    primary, main_split, source = choose_main(groups, available, metric_spec_names(spec), schema)
    for v in values:
        if not v.split:
            v.split = main_split

    tasks_l = [task_for(base, v.split, v.pert, main_split) for v in values]
    scores = scores_frame(tasks_l, [v.metric for v in values], [v.item for v in values],
                          np.asarray([v.trial for v in values], dtype="int64"),
                          np.asarray([v.value for v in values], dtype="float64"))
    check_unique(scores, value_src.name)
    scores, items_from = _main_from_equivalent(scores, stats, primary, groups, base, main_split,
                                               run_name, warnings)
    summaries = _summaries(stats, scores, primary, base, main_split,
                           parts[STATS].name if STATS in parts else "", warnings)
    if primary is not None and primary not in available:
        warnings.append(f"{run_name}: HELM's main metric {primary!r} ({source}) is not in this "
                        "run's files")
    elif primary is not None and primary not in set(scores["metric"]) and not items_from:
        warnings.append(f"{run_name}: HELM's main metric {primary!r} has no per-instance values "
                        "(HELM derives it from other stats); only its stats.json value is stored")
    texts = _folder_texts(parts, base, main_split, used)
    method = str(adapter.get("method") or "")
    n_choices = n_refs.most_common(1)[0][0] if n_refs and "multiple_choice" in method else None
    main = {"primary_metric": primary, "main_split": main_split, "primary_metric_from": source}
    tasks = _tasks(spec, run_name, groups, main, items_from, n_choices, scores, summaries,
                   set(tasks_l), schema)
    files = [parts[f].source_file(f) for f in used]
    for fmt, src in parts.items():
        if fmt not in used:
            log.debug("%s", describe(fmt, src.name) if fmt not in (INSTANCES, DISPLAY_PREDICTIONS)
                      else f"{src.name}: HELM {FILE_NAMES[fmt]}, not needed beside "
                           "per_instance_stats.json")
    return Folder(folder=folder, run_name=run_name, model=adapter.get("model"),
                  deployment=adapter.get("model_deployment"), scores=scores,
                  summaries=summaries, texts=texts, tasks=tasks, files=files, warnings=warnings)


def _check_parts(parts: dict[str, Source], where_folder: str) -> None:
    """A run folder needs run_spec.json and per_instance_stats.json (or
    display_predictions.json); IngestError naming what is missing and what was found."""
    have = ", ".join(s.basename for s in parts.values())
    if RUN_SPEC in parts and (PER_INSTANCE in parts or DISPLAY_PREDICTIONS in parts):
        return
    missing = [FILE_NAMES[f] for f in (RUN_SPEC,) if f not in parts]
    if PER_INSTANCE not in parts and DISPLAY_PREDICTIONS not in parts:
        missing.append(FILE_NAMES[PER_INSTANCE])
    raise IngestError(have or where_folder, f"folder {where_folder}",
                      "a HELM run folder with run_spec.json and per_instance_stats.json "
                      "(or display_predictions.json)",
                      f"missing {', '.join(missing)} (found {have})")


def _stats_entries(parts: dict[str, Source], used: list[str]) -> list[dict[str, Any]]:
    """stats.json's entries that have a name (none without the file); the file joins
    ``used`` when present."""
    if STATS not in parts:
        return []
    raw = load_json(parts[STATS])
    if not isinstance(raw, list):
        raise IngestError(parts[STATS].name, "top level", "a list of aggregate stats")
    used.append(STATS)
    return [s for s in raw if isinstance(s, dict) and isinstance(s.get("name"), dict)]


def _summaries(stats: list[dict[str, Any]], scores: pd.DataFrame, primary: str | None,
               base: str, main_split: str, stats_name: str,
               warnings: list[str]) -> list[dict[str, Any]]:
    """The reported value of every (task, metric) that has per-instance values (or is the
    main metric of a task), from stats.json; a warning where stats.json and the per-instance
    values disagree. Worst-case perturbations and sub-splits are not a task's value."""
    # HELM: mean over instances per train trial, then mean over trials
    means = (scores.groupby(["task", "metric", "answer_idx"], sort=False)["score"].mean()
             .groupby(level=[0, 1], sort=False).mean())
    n_items = scores.groupby("task", sort=False)["item_id"].nunique()
    summaries: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for s in stats:
        name = s["name"]
        mname = str(name.get("name"))
        pert = name.get("perturbation")
        if isinstance(pert, dict) and pert.get("computed_on") == "worst":
            continue                      # worst case over perturbations: no per-instance values
        if name.get("sub_split"):
            continue                      # one sub-split's mean, not the task's
        task = task_for(base, str(name.get("split") or "test"), perturbation_label(pert), main_split)
        key = (task, mname)
        if key in seen or not s.get("count") or not is_number(s.get("mean")):
            continue
        if key not in means.index and not (mname == primary and task in n_items.index):
            continue
        seen.add(key)
        value = float(s["mean"])
        if key in means.index and abs(means[key] - value) > TOLERANCE * max(1.0, abs(value)):
            warnings.append(f"{stats_name}: {task} {mname} is {value!r} in stats.json, "
                            f"the per-instance values average to {float(means[key])!r}")
        summaries.append({"task": task, "metric": mname, "value": value, "stderr": math.nan,
                          "stderr_raw": None, "n": int(n_items.get(task, 0)) or None,
                          "is_group": False})
    return summaries


def _folder_texts(parts: dict[str, Source], base: str, main_split: str,
                  used: list[str]) -> pd.DataFrame:
    """Prompts, references and completions: from scenario_state.json, else from
    display_predictions.json with instances.json, else none."""
    if SCENARIO_STATE in parts:
        used.append(SCENARIO_STATE)
        return _texts(parts[SCENARIO_STATE], base, main_split)
    if DISPLAY_PREDICTIONS in parts and INSTANCES in parts:
        used += [f for f in (DISPLAY_PREDICTIONS, INSTANCES) if f not in used]
        return _display_texts(parts[DISPLAY_PREDICTIONS], parts[INSTANCES], base, main_split)
    return texts_frame([], [], 0, [], [], [])


def _tasks(spec: dict, run_name: str, groups: list[str], main: dict[str, Any],
           items_from: dict[str, Any], n_choices: int | None, scores: pd.DataFrame,
           summaries: list[dict[str, Any]], task_names: set[str],
           schema: SuiteSchema | None) -> list[dict[str, Any]]:
    """Each task's protocol: the run spec, the adapter settings that are the task's, the main
    metric and where it comes from, and each metric's direction."""
    task_adapter = {k: v for k, v in spec["adapter_spec"].items() if k not in _ADAPTER_RUN_KEYS}
    tasks = []
    for t in sorted(task_names | {r["task"] for r in summaries}):
        metrics_t = sorted(set(scores.loc[scores["task"] == t, "metric"]) | {
            r["metric"] for r in summaries if r["task"] == t})
        proto = {"run_spec": run_name, "adapter_spec": task_adapter,
                 "scenario": spec.get("scenario_spec"),
                 "data_augmenter": spec.get("data_augmenter_spec"), "groups": groups or None,
                 "primary_metric": main["primary_metric"], "main_split": main["main_split"],
                 "primary_metric_from": main["primary_metric_from"],
                 "primary_metric_items_from": items_from.get(t),
                 "higher_is_better": {m: d == "higher" for m in metrics_t
                                      if (d := direction(m, schema)) != "unknown"} or None,
                 "judges": annotator_judges(spec) or None}
        tasks.append({"task": t, "n_choices": n_choices,
                      "protocol": {k: v for k, v in proto.items() if v is not None}})
    return tasks



def parse_runs(folders: dict[str, dict[str, Source]], schemas: dict[str, Source],
               on_error: Callable[[dict[str, Source], IngestError], None] | None = None
               ) -> list[ParsedRun]:
    """Runs from HELM run folders (by folder, then by format) and suite ``schema.json``
    files (by folder): one run per (suite folder, model, deployment); see the package
    docstring. ``on_error(parts, error)``: a folder (or a schema.json, given as
    ``{SCHEMA: src}``) that cannot be read is reported there and left out, the rest goes on;
    without it the error is raised. A folder without any per-instance value is a run of its
    own, with no scores (the caller reports it, it is not merged into its model's run)."""
    def fail(parts: dict[str, Source], exc: IngestError) -> None:
        if on_error is None:
            raise exc
        on_error(parts, exc)

    loaded: dict[str, SuiteSchema] = {}
    for f, s in schemas.items():
        try:
            loaded[f] = read_schema(s)
        except IngestError as exc:
            fail({SCHEMA: s}, exc)
    groups: dict[tuple[str, str | None, str | None, int], list[Folder]] = defaultdict(list)
    for n, (folder, parts) in enumerate(folders.items()):
        sfolder = next((a for a in _ancestors(folder) if a in loaded), None)
        try:
            f = read_folder(parts, folder, loaded[sfolder] if sfolder is not None else None)
        except IngestError as exc:
            fail(parts, exc)
            continue
        if not len(f.scores):
            groups[(_parent(folder), f.model, f.deployment, -1 - n)].append(f)
            continue
        k = 0
        while True:
            key = (_parent(folder), f.model, f.deployment, k)
            taken = {t["task"] for g in groups.get(key, []) for t in g.tasks}
            if not taken & {t["task"] for t in f.tasks}:
                break
            k += 1
        groups[key].append(f)
    runs: list[ParsedRun] = []
    for (suite, model, deployment, _k), members in groups.items():
        protocol = {"harness": HARNESS, "suite": _suite_name(suite),
                    "model": model, "model_deployment": deployment}
        warnings = [w for m in members for w in m.warnings]
        runs.append(ParsedRun(
            name=str(model or members[0].run_name), model=model, source_format="helm",
            harness=HARNESS, harness_version=None,
            protocol={k: v for k, v in protocol.items() if v is not None},
            # the suite's schema.json is shared by every run of the suite: not one run's file
            # (the store would take runs sharing a file for parts of one run)
            files=[x for m in members for x in m.files],
            scores=concat_frames([m.scores for m in members], SCORE_COLUMNS),
            summaries=summaries_frame([r for m in members for r in m.summaries]),
            texts=concat_frames([m.texts for m in members], TEXT_COLUMNS),
            tasks=tasks_frame([t for m in members for t in m.tasks]),
            source_key=None, warnings=warnings))
    return runs


def parse_run(parts: dict[str, Source], folder: str) -> ParsedRun:
    """One run from the files of one HELM run folder (by format name)."""
    return parse_runs({folder: parts}, {})[0]
