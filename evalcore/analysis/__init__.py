"""Analysis layer: joins store queries to stats for the pages and the CLI.

The package mirrors the pages: ``leaderboard`` (runs x tasks, averages, tiers, ranks), ``items``
(suspect labels, re-scoring, contamination overlap),
``compare`` (two runs on the same items), ``repeats`` (answers per item, reruns, clusters,
metric variants), ``planning`` (inputs from a pilot pair), ``overview`` (what the store
holds), ``noise`` (noise beyond the items: protocols, seeds, checkpoints, splits), ``judge``
(LLM-judged tasks corrected with human labels, PPI++); ``_common`` holds the constants and small helpers they share. Every public name is
importable from ``evalcore.analysis``. Every function takes a ``Store`` and plain values,
returns a frozen dataclass whose tables are pandas DataFrames with the documented columns,
and raises ``AnalysisError``/``StoreError`` with a human message for impossible requests
(no shared items, unknown run, ...). Runs may be given by name or id.

This package only wires store queries to ``evalcore.stats``: every standard error, interval,
test and planning quantity comes from ``evalcore.stats``. The store is used duck-typed (any
object with the ``Store`` reading methods works), so tests can use hand-built stores.

The conventions every module follows (scores, differences, the default metric, the verdict
rule): ``evalcore.analysis._common``.
"""

from evalcore.analysis._common import (  # noqa: F401
    AVERAGE_COLUMNS, AVERAGE_TASK, BENIGN_PROTOCOL_CATEGORIES, BINARY_ONLY_METHODS,
    CELL_COLUMNS, DEFAULT_POWER, ITEM_LEVEL_METHODS, METHODS, METHOD_LABELS, PER_TASK_COLUMNS,
    PREFERRED_METRICS, PROTOCOL_COLUMNS, RANK_COLUMNS, TIER_COLUMNS, default_metric,
    is_store_busy, resolve_run)
from evalcore.analysis.metric_choice import (  # noqa: F401
    primary_metrics, task_metric, task_metrics)
from evalcore.analysis.leaderboard import Leaderboard, leaderboard, rank_intervals  # noqa: F401
from evalcore.analysis.board_average import macro_averages  # noqa: F401
from evalcore.analysis.compare import Comparison, Pairing, compare, verdict_text  # noqa: F401
from evalcore.analysis.discordant import discordant_items  # noqa: F401
from evalcore.analysis.judge import (  # noqa: F401
    JudgeComparison, JudgeReport, comparison_rows, judge_compare, JudgedScores,
    agreement_sentences, estimate_rows, judge_report, judge_text, judged_cells, judged_scores,
    run_judges)
from evalcore.analysis.repeats import (  # noqa: F401
    ClusterReport, RepeatsReport, RerunReport, clusters, metric_variants, repeats, rerun_noise)
from evalcore.analysis.planning import (  # noqa: F401
    LabelsPlan, PairedPlan, judge_labels_plan, PlanFromPair, paired_plan, pilot_design_effect,
    pilot_sentence, pilot_spread, plan_from_pair)
from evalcore.analysis.overview import (  # noqa: F401
    OVERVIEW_RUN_COLUMNS, OVERVIEW_TASK_COLUMNS, Overview, overview)
from evalcore.analysis.items import (  # noqa: F401
    ContaminationReport, RescoreReport, SuspectReport, contamination, item_choices,
    read_relabels, rescore, suspect_labels)
from evalcore.analysis.noise import (  # noqa: F401
    CheckpointReport, NoiseReport, ProtocolReport, SeedReport, SplitReport, checkpoint_report,
    metric_family, noise_report, protocol_sensitivity, run_groups, seed_report, split_report)
