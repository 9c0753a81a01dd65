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

Conventions used throughout
---------------------------
* Scores are per-item means over answers (``store.item_means`` / ``store.cell_stats``), so an
  item with K answers counts once; "binary" means every item mean is exactly 0 or 1.
* Differences are always B - A. "Points" are percentage points when every score lies in
  [0, 1] (difference x 100), otherwise raw metric units.
* Default metric per task (when none is asked for): one decision for every surface,
  ``metric_choice.task_metrics`` / ``task_metric``: the harness's primary metric (lm_eval's
  first ``metric_list`` entry, HELM's schema main metric, the Open LLM Leaderboard's ranked
  metric) as the protocols of every run of the store name it; when the runs asked about lack
  it, ``acc`` if present, else ``exact_match,strict-match``, else the first metric
  alphabetically, with the reason in the answer (``MetricChoice.reason``).
* Verdict rule (``compare``, ``analysis.verdicts``): with ``alpha = 1 - confidence`` and
  power 0.8, each row's interval and p-value come from one procedure (the p of the test the
  interval inverts; for 0/1 scores the larger of it and the exact McNemar p, the interval
  widened to 0 when the exact test does not reject), and
  - "different" iff the p-value the row calls adjusted (Holm or BH across tasks when
    several are compared; else the row's own p) is below alpha;
  - otherwise "underpowered" when the minimum detectable effect (MDE) exceeds
    ``mde_threshold`` (default 5 points for scores in [0, 1]; for other scales 5 % of the
    larger absolute mean of the two runs);
  - otherwise "no difference detected, and this design could have detected X points".
"""



from evalcore.analysis._common import (  # noqa: F401
    AVERAGE_COLUMNS,
    AVERAGE_TASK,
    BENIGN_PROTOCOL_CATEGORIES,
    BINARY_ONLY_METHODS,
    CELL_COLUMNS,
    DEFAULT_POWER,
    ITEM_LEVEL_METHODS,
    METHODS,
    METHOD_LABELS,
    PER_TASK_COLUMNS,
    PREFERRED_METRICS,
    PROTOCOL_COLUMNS,
    RANK_COLUMNS,
    TIER_COLUMNS,
    default_metric,
    is_store_busy,
    resolve_run,
)
from evalcore.analysis.metric_choice import (  # noqa: F401
    primary_metrics,
    task_metric,
    task_metrics,
)
from evalcore.analysis.leaderboard import (  # noqa: F401
    Leaderboard,
    leaderboard,
    rank_intervals,
)
from evalcore.analysis.board_average import macro_averages  # noqa: F401
from evalcore.analysis.compare import (  # noqa: F401
    Comparison,
    Pairing,
    compare,
    verdict_text,
)
from evalcore.analysis.discordant import discordant_items  # noqa: F401
from evalcore.analysis.judge import (  # noqa: F401
    JudgeComparison,
    JudgeReport,
    comparison_rows,
    judge_compare,
    JudgedScores,
    agreement_sentences,
    estimate_rows,
    judge_report,
    judge_text,
    judged_cells,
    judged_scores,
    run_judges,
)
from evalcore.analysis.repeats import (  # noqa: F401
    ClusterReport,
    RepeatsReport,
    RerunReport,
    clusters,
    metric_variants,
    repeats,
    rerun_noise,
)
from evalcore.analysis.planning import (  # noqa: F401
    LabelsPlan,
    PairedPlan,
    judge_labels_plan,
    PlanFromPair,
    paired_plan,
    pilot_design_effect,
    pilot_sentence,
    pilot_spread,
    plan_from_pair,
)
from evalcore.analysis.overview import (  # noqa: F401
    OVERVIEW_RUN_COLUMNS,
    OVERVIEW_TASK_COLUMNS,
    Overview,
    overview,
)
from evalcore.analysis.items import (  # noqa: F401
    ContaminationReport,
    RescoreReport,
    SuspectReport,
    contamination,
    item_choices,
    read_relabels,
    rescore,
    suspect_labels,
)
from evalcore.analysis.noise import (  # noqa: F401
    CheckpointReport,
    NoiseReport,
    ProtocolReport,
    SeedReport,
    SplitReport,
    checkpoint_report,
    metric_family,
    noise_report,
    protocol_sensitivity,
    run_groups,
    seed_report,
    split_report,
)
