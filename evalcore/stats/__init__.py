"""evalcore.stats: the statistics behind every number evalbars shows.

Pure functions of numbers and arrays (no I/O, no Streamlit); results are frozen dataclasses that
carry the estimate, the interval, the method name and n together. Formulas: ../shared/METHODS.md;
each function's docstring states its formula, reference and edge cases; each module's docstring
says what it covers. Impossible inputs (n = 0, successes > n, mismatched lengths, NaN,
confidence outside (0, 1), ...) raise :class:`StatsInputError`, a subclass of both
:class:`evalcore.errors.AnalysisError` and :class:`ValueError`. This face only re-exports.
"""

from evalcore.stats._checks import StatsInputError, z_value  # noqa: F401
from evalcore.stats.aggregate import (  # noqa: F401
    BestTier, TaskAggregate, adjust_pvalues, aggregate_tasks, best_of_k_inflation,
    indistinguishable_from_best, pooled_sample_stderr)
from evalcore.stats.bootstrap import (  # noqa: F401
    BootstrapResult, RankIntervals, bootstrap_interval, bootstrap_means_shared, mean_difference,
    paired_bootstrap_ranks)
from evalcore.stats.bootstrap_binomial import BootstrapColumns, bootstrap_proportions  # noqa: F401
from evalcore.stats.clustered import (  # noqa: F401
    FEW_CLUSTERS, ClusteredInterval, ClusteredSE, GroupedClusteredIntervals, cluster_t_value,
    clustered_interval, clustered_se, clustered_intervals_of_matrices, grouped_clustered_intervals,
    korn_graubard_interval)
from evalcore.stats.intervals import (  # noqa: F401
    PROPORTION_METHODS, SCORE_METHODS, Interval, beta_interval, chance_level, clip_to_range,
    clopper_pearson_interval, clt_interval, contains_chance, half_width, mean_se, range_text,
    mean_se_from_moments, proportion_interval, required_n_for_half_width, score_interval,
    wilson_interval)
from evalcore.stats.label_consensus import (  # noqa: F401
    ConsensusExpectation, ConsensusItems, consensus_suspects, expected_suspects, flag_probability)
from evalcore.stats.paired import (  # noqa: F401
    SMALL_N, McNemarResult, PairedColumns, PairedDifference, PairedMoments, paired_moments,
    correlation, mcnemar, mcnemar_exact_p, mean_quantile, mean_quantiles, normal_p_value,
    paired_clustered_se, paired_columns, paired_difference)
from evalcore.stats.paired_binary import (  # noqa: F401
    PAIRED_BINARY_METHODS, PairedProportionInterval, choose_paired_binary_method,
    discordance_upper_bound, paired_proportion_interval)
from evalcore.stats.paired_tests import (  # noqa: F401
    PairedPValues, bound_test_p, paired_binary_test_p, paired_p_values, score_test_p, wald_test_p,
    widen_to_zero)
from evalcore.stats.planning import (  # noqa: F401
    effective_n, minimum_detectable_effect, minimum_detectable_effect_unpaired,
    preregistration_markdown, required_items, required_items_unpaired, sd_diff_with_answers)
from evalcore.stats.ppi import (  # noqa: F401
    Kappa, LabelShift, LabelsNeeded, MeanT, PPIMean, binary_agreement_moments, cohens_kappa,
    judge_bias, ppi_labels_needed, label_shift, power_tuning_lambda, ppi_mean,
    ppi_paired_difference, ppi_variance, t_mean_interval)
from evalcore.stats.two_sample import TwoSampleDifference, two_sample_difference  # noqa: F401
from evalcore.stats.protocol import ProtocolSpread, protocol_spread  # noqa: F401
from evalcore.stats.seeds import (  # noqa: F401
    SeedComparison, SeedsNeeded, SeedVariance, satterthwaite_df, seed_comparison, seed_variance,
    seeds_needed)
from evalcore.stats.signal_noise import (  # noqa: F401
    DecisionAccuracy, SignalToNoise, decision_accuracy, relative_dispersion, relative_sd,
    series_signal_to_noise, signal_to_noise)
from evalcore.stats.splits import SplitConsistency, split_consistency  # noqa: F401
from evalcore.stats.repeats import (  # noqa: F401
    PassAtK, RerunNoise, VarianceComponents, pass_at_k, pass_at_k_summary, rerun_noise,
    variance_components)
