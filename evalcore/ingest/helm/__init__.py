"""HELM output as HELM writes it: a run folder, a zip of one, a suite folder
(``benchmark_output/runs/<suite>/``) or a whole ``benchmark_output/`` tree.

Which file is which and which paths are skipped: ``_files``. Per run folder
------------------------------------------------------------------------
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

from evalcore.ingest.helm._files import (
    ALL_FORMATS,
    DISPLAY_PREDICTIONS,
    DISPLAY_REQUESTS,
    INSTANCES,
    PER_INSTANCE,
    RUN_PARTS,
    RUN_SPEC,
    SCENARIO,
    SCENARIO_STATE,
    SCHEMA,
    STATS,
    SUITE_FILE,
    UNUSED,
    classify_head,
    classify_obj,
    describe,
    noise_names,
)
from evalcore.ingest.helm._metrics import BOOKKEEPING, choose_main, direction, perturbation_label
from evalcore.ingest.helm._run import HARNESS, parse_run, parse_runs, read_folder

PART_FORMATS = RUN_PARTS  # the formats grouped per run folder

__all__ = [
    "ALL_FORMATS", "BOOKKEEPING", "DISPLAY_PREDICTIONS", "DISPLAY_REQUESTS", "HARNESS",
    "INSTANCES", "PART_FORMATS", "PER_INSTANCE", "RUN_PARTS", "RUN_SPEC", "SCENARIO",
    "SCENARIO_STATE", "SCHEMA", "STATS", "SUITE_FILE", "UNUSED", "choose_main",
    "classify_head", "classify_obj", "describe", "direction", "noise_names", "parse_run",
    "parse_runs", "perturbation_label", "read_folder",
]
