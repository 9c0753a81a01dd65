"""HELM output as HELM writes it: a run folder, a zip of one, a suite folder
(``benchmark_output/runs/<suite>/``) or a whole ``benchmark_output/`` tree.

Which file is which and which paths are skipped: ``_files``; how a run folder becomes runs
(what is read, the mapping to runs, tasks, items, metrics, main metric, directions and
summaries): ``_run``. This face only re-exports.
"""

from __future__ import annotations

from evalcore.ingest.helm._files import (ALL_FORMATS, DISPLAY_PREDICTIONS, DISPLAY_REQUESTS,
                                         INSTANCES, PER_INSTANCE, RUN_PARTS, RUN_SPEC,
                                         SCENARIO, SCENARIO_STATE, SCHEMA, STATS, SUITE_FILE,
                                         UNUSED, classify_head, classify_obj, describe,
                                         noise_names)
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
