"""Which HELM file is which, and which paths of a ``benchmark_output/`` tree to leave alone.

HELM writes, per run folder ``benchmark_output/runs/<suite>/<run name>/``:

* ``helm-run``: ``run_spec.json``, ``scenario.json``, ``scenario_state.json``, ``stats.json``,
  ``per_instance_stats.json`` (the five files its runner checks for a completed run);
* ``helm-summarize``: ``instances.json``, ``display_predictions.json``,
  ``display_requests.json`` (compact copies for the web frontend), and per suite (or release)
  ``schema.json``, ``runs.json``, ``run_specs.json``, ``groups.json``, ``groups_metadata.json``,
  ``summary.json``, ``costs.json``, ``runs_to_run_suites.json`` and ``groups/**.json|.tex``.

Beside ``runs/`` a ``benchmark_output/`` folder holds downloaded raw data sets
(``scenarios/``), cached instances (``scenario_instances/``) and caches; those are HELM's
inputs, not results, and are skipped by path (``noise_names``).

Detection is by content: the leading keys of a JSON value (``classify_obj``) or of the first
64 KB of text (``classify_head``, for HELM's indented JSON). A file's name only decides
between HELM formats when the content is an empty list.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

PER_INSTANCE = "helm_per_instance_stats"
RUN_SPEC = "helm_run_spec"
STATS = "helm_stats"
SCENARIO_STATE = "helm_scenario_state"
SCENARIO = "helm_scenario"
DISPLAY_PREDICTIONS = "helm_display_predictions"
INSTANCES = "helm_instances"
DISPLAY_REQUESTS = "helm_display_requests"
SCHEMA = "helm_schema"
SUITE_FILE = "helm_suite_file"

# files of one run folder, grouped by folder
RUN_PARTS = (PER_INSTANCE, RUN_SPEC, STATS, SCENARIO_STATE, DISPLAY_PREDICTIONS, INSTANCES)
# recognised and never read (named at debug level)
UNUSED = (SCENARIO, DISPLAY_REQUESTS, SUITE_FILE)
ALL_FORMATS = RUN_PARTS + (SCHEMA,) + UNUSED

FILE_NAMES = {
    PER_INSTANCE: "per_instance_stats.json", RUN_SPEC: "run_spec.json", STATS: "stats.json",
    SCENARIO_STATE: "scenario_state.json", SCENARIO: "scenario.json",
    DISPLAY_PREDICTIONS: "display_predictions.json", INSTANCES: "instances.json",
    DISPLAY_REQUESTS: "display_requests.json", SCHEMA: "schema.json",
}
_BY_NAME = {v: k for k, v in FILE_NAMES.items()}
_SUITE_NAMES = {"runs.json", "run_specs.json", "groups.json", "groups_metadata.json",
                "summary.json", "costs.json", "runs_to_run_suites.json"}

# sub-folders of an output folder (one that holds runs/) that hold HELM inputs and caches
NOISE_DIRS = ("scenarios", "scenario_instances", "cache", "eval_cache", "mturk",
              "perturbations", "nltk_data", "prod_env")
# sub-folders of a suite (runs/<suite>/) or release (releases/<release>/) folder written by
# helm-summarize or the runner: tables (groups/**.json|.tex), plots, the metric cache
SUITE_NOISE_DIRS = ("groups", "plots", "eval_cache")


def _first(obj: list[Any]) -> dict[str, Any] | None:
    return obj[0] if obj and isinstance(obj[0], dict) else None


def classify_obj(obj: Any, basename: str = "") -> str | None:
    """The HELM format of a parsed JSON value, or None."""
    if isinstance(obj, dict):
        keys = set(obj)
        if not keys:                       # costs.json of runs without token counts: {}
            return SUITE_FILE if basename in _SUITE_NAMES else None
        if "adapter_spec" in keys and ("scenario_spec" in keys or "metric_specs" in keys):
            return RUN_SPEC
        if "request_states" in keys:
            return SCENARIO_STATE
        if {"name", "description", "tags"} <= keys and keys <= {
                "name", "description", "tags", "definition_path"}:
            return SCENARIO
        if "run_groups" in keys and ("metrics" in keys or "metric_groups" in keys):
            return SCHEMA
        if "date" in keys and keys <= {"release", "suites", "suite", "date"}:
            return SUITE_FILE                                   # summary.json
        if {"title", "header", "rows"} <= keys:
            return SUITE_FILE                                   # groups/json/<table>.json
        vals = list(obj.values())[:5]
        if vals and all(isinstance(v, dict) for v in vals):
            if all("num_prompt_tokens" in v or "total_tokens" in v for v in vals):
                return SUITE_FILE                               # costs.json
            if all("display_name" in v and "description" in v for v in vals):
                return SUITE_FILE                               # groups_metadata.json
        if basename == "runs_to_run_suites.json" and all(isinstance(v, str) for v in obj.values()):
            return SUITE_FILE
        return None
    if not isinstance(obj, list):
        return None
    if not obj:
        return _BY_NAME.get(basename) or (SUITE_FILE if basename in _SUITE_NAMES else None)
    first = _first(obj)
    if first is None:
        return None
    if "instance_id" in first:
        if isinstance(first.get("stats"), list):
            return PER_INSTANCE
        if "predicted_text" in first or isinstance(first.get("stats"), dict):
            return DISPLAY_PREDICTIONS
        if "request" in first:
            return DISPLAY_REQUESTS
        return None
    if isinstance(first.get("input"), dict) and "references" in first:
        return INSTANCES
    if isinstance(first.get("name"), dict) and ("split" in first["name"] or "count" in first):
        return STATS
    if isinstance(first.get("run_spec"), dict) and "stats" in first:
        return SUITE_FILE                                       # runs.json
    if "adapter_spec" in first and "scenario_spec" in first:
        return SUITE_FILE                                       # run_specs.json
    if "title" in first and ("header" in first or "rows" in first or "links" in first):
        return SUITE_FILE                                       # groups.json, groups/*.json
    return None


_LIST_OBJ = re.compile(r'\[\s*\{\s*"(\w+)"\s*:\s*([\[{"]?)')


def classify_head(text: str) -> str | None:
    """The HELM format from the first bytes of an indented JSON document, or None.

    Only decides what the head shows for sure; anything else is left to a full parse
    (``classify_obj``).
    """
    def has(pattern: str) -> bool:
        return re.search(pattern, text) is not None

    if text.startswith("["):
        m = _LIST_OBJ.match(text)
        if m is None:
            return None
        key, opener = m.group(1), m.group(2)
        if key == "instance_id":
            if has(r'"predicted_text"\s*:'):
                return DISPLAY_PREDICTIONS
            if has(r'"stats"\s*:\s*\['):
                return PER_INSTANCE
            if has(r'"request"\s*:\s*\{') and not has(r'"stats"\s*:'):
                return DISPLAY_REQUESTS
            return None
        if key == "input" and opener == "{" and has(r'"references"\s*:'):
            return INSTANCES
        if key == "name" and opener == "{" and has(r'"split"\s*:'):
            return STATS
        if key == "run_spec" and opener == "{":
            return SUITE_FILE
        if key == "title" and has(r'"header"\s*:'):
            return SUITE_FILE
        return None
    if has(r'"adapter_spec"\s*:') and (has(r'"scenario_spec"\s*:') or has(r'"metric_specs"\s*:')):
        return RUN_SPEC
    if has(r'"request_states"\s*:'):
        return SCENARIO_STATE
    if len(text) < 4096 and re.match(r'\{\s*"name"\s*:', text) and has(r'"description"\s*:') \
            and has(r'"tags"\s*:'):
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        return classify_obj(obj)
    return None


def noise_names(names: list[str]) -> set[str]:
    """The names (paths, ``archive.zip!member`` names) that lie in a HELM output folder's
    input/cache sub-folders (``NOISE_DIRS``) or in the table, plot and cache sub-folders of
    a suite or release (``runs/<suite>/groups/...``, ``SUITE_NOISE_DIRS``).

    Only HELM layouts count, seen in ``names`` themselves: an output folder is one named
    ``benchmark_output`` or one that holds ``runs/<suite>/<run>/run_spec.json``; a suite or
    release folder is ``runs/<suite>/`` with such a run or ``releases/<release>/`` with a
    ``schema.json`` or ``summary.json``. A user's own ``runs/x/groups/`` folder elsewhere is
    read as usual.
    """
    def prefix(parts: list[str], k: int) -> str:
        return "/".join(parts[:k]) + "/" if k else ""

    split = {n: re.split(r"[\\/!]", n) for n in names}
    roots: set[str] = set()                    # output folders (that hold runs/)
    suites: set[str] = set()                   # runs/<suite>/ and releases/<release>/
    for parts in split.values():
        n = len(parts)
        for j in range(n - 1):
            if parts[j] == "runs" and j + 3 == n - 1 and parts[-1] == "run_spec.json":
                roots.add(prefix(parts, j))
                suites.add(prefix(parts, j + 2))
            if parts[j] == "releases" and j + 2 == n - 1 and parts[-1] in ("schema.json",
                                                                           "summary.json"):
                roots.add(prefix(parts, j))
                suites.add(prefix(parts, j + 2))
    out: set[str] = set()
    for name, parts in split.items():
        for k, part in enumerate(parts[:-1]):
            if part in NOISE_DIRS and ((k > 0 and parts[k - 1] == "benchmark_output")
                                       or prefix(parts, k) in roots):
                out.add(name)
                break
            if part in SUITE_NOISE_DIRS and prefix(parts, k) in suites:
                out.add(name)
                break
    return out


def describe(fmt: str, name: str) -> str:
    """Why a recognised file is not read (for the debug log)."""
    base = posixpath.basename(name.replace("\\", "/").split("!")[-1])
    if fmt == SUITE_FILE:
        return f"{name}: HELM suite summary ({base}), not needed (runs are read from their folders)"
    if fmt == DISPLAY_REQUESTS:
        return f"{name}: HELM display_requests.json, not needed (prompts come from scenario_state.json)"
    if fmt == SCENARIO:
        return f"{name}: HELM scenario.json (scenario description), not needed"
    return f"{name}: HELM {fmt}, not needed"
