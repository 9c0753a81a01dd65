"""All four noise sections together (the CLI's ``noise`` command)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from evalcore.analysis._common import empty_frame
from evalcore.analysis.noise.checkpoints import CheckpointReport, checkpoint_report
from evalcore.analysis.noise.groups import RUN_GROUP_COLUMNS, run_groups
from evalcore.analysis.noise.protocols import ProtocolReport, protocol_sensitivity
from evalcore.analysis.noise.seeds import SeedReport, seed_report
from evalcore.analysis.noise.splits import SplitReport, split_report
from evalcore.errors import AnalysisError


@dataclass(frozen=True)
class NoiseReport:
    """The four sections together (the CLI's ``noise`` command)."""

    protocols: ProtocolReport
    seeds: SeedReport
    checkpoints: CheckpointReport
    splits: SplitReport | None = None
    runs: pd.DataFrame = field(default_factory=lambda: empty_frame(RUN_GROUP_COLUMNS))


def noise_report(store, *, task: str | None = None, confidence: float = 0.95, gap: float | None = None,
          last_n: int | None = None, split_run=None, split_task: str | None = None,
          k: int = 10, repetitions: int = 200, seed: int = 0) -> NoiseReport:
    """``protocol_sensitivity``, ``seed_report``, ``checkpoint_report`` and (with
    ``split_run``) ``split_report`` (on ``split_task`` or ``task``)."""
    splits = None
    if split_run is not None:
        t = split_task or task
        if t is None:
            raise AnalysisError("split consistency needs a task")
        splits = split_report(store, split_run, t, k=k, repetitions=repetitions, seed=seed)
    return NoiseReport(protocol_sensitivity(store, task=task, confidence=confidence),
                       seed_report(store, task=task, confidence=confidence, gap=gap),
                       checkpoint_report(store, task=task, confidence=confidence, last_n=last_n),
                       splits, run_groups(store))
