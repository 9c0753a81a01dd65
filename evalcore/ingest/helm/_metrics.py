"""Names (tasks, perturbations), bookkeeping stats, HELM's main metric and metric direction."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from evalcore.ingest._common import Source, load_json
from evalcore.ingest.helm import _schema

BOOKKEEPING = re.compile(
    r"^(num_\w+|finish_reason_\w+|\w*_runtime|training_\w+_cost|batch_size|prompt_truncated"
    r"|max_prob|logprob|predicted_index)$")
_PREFERRED = ("exact_match", "quasi_exact_match", "prefix_exact_match",
              "quasi_prefix_exact_match", "f1_score", "rouge_l", "bleu_4")
# The main metric of HELM's safety run groups before their metrics were unified as
# ``safety_score``: the mean of the two judges' scores under the scenario's own name
# (stanford-crfm/helm ``src/helm/benchmark/metrics/xstest_metrics.py`` ``xst_score``,
# ``harm_bench_metrics.py`` ``harm_bench_score``, ``anthropic_red_team_metrics.py``
# ``art_score``, ``simple_safety_tests_metrics.py`` ``sst_score``, later replaced by
# ``safety_metrics.py``). A run written by such a HELM has no ``safety_score``.
OLDER_MAIN_NAMES: dict[str, tuple[str, ...]] = {
    "xstest": ("xst_score",),
    "harm_bench": ("harm_bench_score",),
    "anthropic_red_team": ("art_score",),
    "simple_safety_tests": ("sst_score",),
}


# ---------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------
def task_name(run_name: str) -> str:
    scenario, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    return scenario + (":" + ",".join(kept) if kept else "")


def perturbation_label(p: Any) -> str | None:
    """A short label of a HELM perturbation description: its name and parameters."""
    if not p:
        return None
    if not isinstance(p, dict):
        return str(p)
    params = [f"{k}={p[k]}" for k in sorted(p)
              if k not in ("name", "robustness", "fairness", "computed_on") and p[k] is not None]
    return str(p.get("name") or "perturbed") + (f"({','.join(params)})" if params else "")


def task_for(base: str, split: str, pert: str | None, main_split: str) -> str:
    t = base if split == main_split else f"{base}@{split}"
    return f"{t}#{pert}" if pert else t


def metric_spec_names(run_spec: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for spec in run_spec.get("metric_specs") or []:
        args = spec.get("args") if isinstance(spec, dict) else None
        if isinstance(args, dict) and isinstance(args.get("names"), list):
            names.extend(str(n) for n in args["names"])
    return names


# ---------------------------------------------------------------------------------------
# schema: main metric and direction
# ---------------------------------------------------------------------------------------
@dataclass
class SuiteSchema:
    """The parts of a suite's ``schema.json`` used here."""

    name: str
    main: dict[str, tuple[str, str]] = field(default_factory=dict)   # group -> (metric, split)
    lower_is_better: dict[str, bool] = field(default_factory=dict)


def read_schema(src: Source) -> SuiteSchema:
    obj = load_json(src)
    out = SuiteSchema(src.name)
    for rg in obj.get("run_groups") or [] if isinstance(obj, dict) else []:
        env = rg.get("environment") if isinstance(rg, dict) else None
        if isinstance(env, dict) and isinstance(env.get("main_name"), str):
            name = env["main_name"]
            if name and name != "none" and not name.startswith("$"):
                out.main[str(rg.get("name"))] = (name, str(env.get("main_split") or "test"))
    for m in obj.get("metrics") or [] if isinstance(obj, dict) else []:
        if isinstance(m, dict) and isinstance(m.get("lower_is_better"), bool):
            out.lower_is_better[str(m.get("name"))] = m["lower_is_better"]
    return out


def choose_main(groups: list[str], available: set[str], spec_names: list[str],
                schema: SuiteSchema | None) -> tuple[str | None, str, str]:
    """(primary metric, main split, where the choice came from) for a run spec's groups."""
    for g in groups:
        if schema is not None and g in schema.main:
            name, split = schema.main[g]
            return name, split, f"suite schema.json, run group {g!r}"
    for g in groups:
        cands = _schema.MAIN_METRICS.get(g)
        if cands:
            found = next(((n, s) for n, s in cands if n in available), None)
            if found is None:
                older = [(n, cands[0][1]) for n in OLDER_MAIN_NAMES.get(g, ())]
                found = next(((n, s) for n, s in older if n in available), None)
                if found is not None:
                    return (*found, f"HELM's published schemas, run group {g!r} (the name "
                                    f"HELM gave its main metric before {cands[0][0]!r})")
            name, split = found if found is not None else cands[0]
            return name, split, f"HELM's published schemas, run group {g!r}"
    for n in spec_names:
        if n in available:
            return n, "test", "fallback: first metric named in the run spec"
    for n in _PREFERRED:
        if n in available:
            return n, "test", "fallback: exact_match-like name"
    if available:
        return sorted(available)[0], "test", "fallback: first metric alphabetically"
    return None, "test", "no metric with per-instance values"


def direction(metric: str, schema: SuiteSchema | None) -> str:
    """"lower", "higher" or "unknown" (HELM's ``lower_is_better``)."""
    if schema is not None and metric in schema.lower_is_better:
        return "lower" if schema.lower_is_better[metric] else "higher"
    if metric in _schema.LOWER_IS_BETTER:
        return "lower"
    if metric in _schema.HIGHER_IS_BETTER:
        return "higher"
    return "unknown"


def equivalent_candidates(groups: list[str], primary: str) -> list[str]:
    """Per-instance metrics to try, in order, as the item scores of a main metric HELM
    computes only over all instances (such as ``bbq_accuracy``): the other main metrics
    HELM's schemas name for the run's groups, then exact-match-like names."""
    out: list[str] = []
    for g in groups:
        out += [n for n, _ in _schema.MAIN_METRICS.get(g, ()) if n != primary]
    return list(dict.fromkeys(out + [n for n in _PREFERRED if n != primary]))
