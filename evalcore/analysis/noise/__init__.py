"""Noise beyond the items: protocol spread, training seeds, checkpoint series, item splits.

One module per section (``protocols``, ``seeds``, ``checkpoints``, ``splits``), the run
groups and cell scores they share in ``groups`` (its docstring has the grouping rules), all
four together in ``report``. This face only re-exports.
"""

from evalcore.analysis.noise.checkpoints import CheckpointReport, checkpoint_report
from evalcore.analysis.noise.groups import (CURVE_COLUMNS, DECISION_COLUMNS, DEFAULT_LAST_N,
                                            PROTOCOL_CELL_COLUMNS, PROTOCOL_GROUP_COLUMNS,
                                            RUN_GROUP_COLUMNS, SEED_COMPARISON_COLUMNS,
                                            SEED_GROUP_COLUMNS, SEED_RUN_COLUMNS, SEED_TOKEN,
                                            SNR_COLUMNS, STEP_TOKEN, TASK_BAND_COLUMNS,
                                            metric_family, run_groups)
from evalcore.analysis.noise.protocols import ProtocolReport, protocol_sensitivity
from evalcore.analysis.noise.report import NoiseReport, noise_report
from evalcore.analysis.noise.seeds import SeedReport, seed_report
from evalcore.analysis.noise.splits import SplitReport, split_report

__all__ = [
    "CURVE_COLUMNS", "DECISION_COLUMNS", "DEFAULT_LAST_N", "PROTOCOL_CELL_COLUMNS",
    "PROTOCOL_GROUP_COLUMNS", "RUN_GROUP_COLUMNS", "SEED_COMPARISON_COLUMNS",
    "SEED_GROUP_COLUMNS", "SEED_RUN_COLUMNS", "SEED_TOKEN", "SNR_COLUMNS", "STEP_TOKEN",
    "TASK_BAND_COLUMNS", "CheckpointReport", "NoiseReport", "ProtocolReport", "SeedReport",
    "SplitReport", "checkpoint_report", "metric_family", "noise_report", "protocol_sensitivity",
    "run_groups", "seed_report", "split_report",
]
