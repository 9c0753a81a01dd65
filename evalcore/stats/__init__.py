"""evalcore.stats: the statistics behind every number evalbars shows.

Pure functions of numbers and arrays (no I/O, no Streamlit); results are frozen dataclasses that
carry the estimate, the interval, the method name and n together. Formulas: ../shared/METHODS.md;
each function's docstring states its formula, reference and edge cases.

Errors: impossible inputs (n = 0, successes > n, mismatched lengths, NaN, confidence outside
(0, 1), ...) raise :class:`StatsInputError`, a subclass of both
:class:`evalcore.errors.AnalysisError` and :class:`ValueError`.

Modules: ``intervals`` (one score), ``bootstrap`` (resampling, rank intervals), ``clustered``
(cluster-robust SE), ``paired`` (two runs, McNemar), ``paired_binary`` (score-type intervals
for the difference of two paired 0/1 runs, method routing, discordance upper bound),
``paired_tests`` (the test each paired interval inverts; a row's p-value and interval from
one procedure), ``repeats`` (K answers, reruns, pass@k),
``planning`` (MDE, sample size, pre-registration), ``aggregate`` (tasks, p-value adjustment,
best-of-k, top tier), ``label_consensus`` (suspect labels and their chance expectation),
``two_sample`` (difference of two disjoint item sets), ``ppi`` (LLM judges: prediction-powered
inference with human labels, judge-human agreement, labels needed), ``ppi_coverage`` (the
Method check of PPI++ against judge-only and human-only intervals).
Noise beyond the items: ``protocol`` (spread across measurement protocols), ``seeds``
(between-seed variance, seed-as-random-effect comparison, seeds needed), ``signal_noise``
(checkpoint series: signal, noise, SNR, decision accuracy), ``splits`` (split consistency).
"""

from evalcore.stats._checks import StatsInputError, z_value
from evalcore.stats.aggregate import (BestTier, TaskAggregate, adjust_pvalues, aggregate_tasks,
                                      best_of_k_inflation, indistinguishable_from_best,
                                      pooled_sample_stderr)
from evalcore.stats.bootstrap import (BootstrapResult, RankIntervals, bootstrap_interval,
                                      bootstrap_means_shared, mean_difference,
                                      paired_bootstrap_ranks)
from evalcore.stats.bootstrap_binomial import BootstrapColumns, bootstrap_proportions
from evalcore.stats.clustered import (FEW_CLUSTERS, ClusteredInterval, ClusteredSE,
                                      GroupedClusteredIntervals, cluster_t_value,
                                      clustered_interval, clustered_se,
                                      clustered_intervals_of_matrices,
                                      grouped_clustered_intervals, korn_graubard_interval)
from evalcore.stats.intervals import (PROPORTION_METHODS, SCORE_METHODS, Interval,
                                      beta_interval, chance_level, clip_to_range,
                                      clopper_pearson_interval, clt_interval, contains_chance,
                                      half_width, mean_se, range_text,
                                      mean_se_from_moments,
                                      proportion_interval, required_n_for_half_width,
                                      score_interval, wilson_interval)
from evalcore.stats.label_consensus import (ConsensusExpectation, ConsensusItems,
                                            consensus_suspects, expected_suspects,
                                            flag_probability)
from evalcore.stats.paired import (SMALL_N, McNemarResult, PairedColumns, PairedDifference,
                                   PairedMoments, paired_moments,
                                   correlation, mcnemar, mcnemar_exact_p, mean_quantile, mean_quantiles,
                                   normal_p_value, paired_clustered_se, paired_columns,
                                   paired_difference)
from evalcore.stats.paired_binary import (PAIRED_BINARY_METHODS, PairedProportionInterval,
                                          choose_paired_binary_method,
                                          discordance_upper_bound,
                                          paired_proportion_interval)
from evalcore.stats.paired_tests import (PairedPValues, bound_test_p, paired_binary_test_p,
                                         paired_p_values, score_test_p, wald_test_p,
                                         widen_to_zero)
from evalcore.stats.planning import (effective_n, minimum_detectable_effect,
                                     minimum_detectable_effect_unpaired,
                                     preregistration_markdown, required_items,
                                     required_items_unpaired, sd_diff_with_answers)
from evalcore.stats.ppi import (Kappa, LabelShift, LabelsNeeded, MeanT, PPIMean,
                                binary_agreement_moments, cohens_kappa, judge_bias,
                                ppi_labels_needed,
                                label_shift, power_tuning_lambda, ppi_mean, ppi_paired_difference,
                                ppi_variance, t_mean_interval)
from evalcore.stats.two_sample import TwoSampleDifference, two_sample_difference
from evalcore.stats.protocol import ProtocolSpread, protocol_spread
from evalcore.stats.seeds import (SeedComparison, SeedsNeeded, SeedVariance, satterthwaite_df,
                                  seed_comparison, seed_variance, seeds_needed)
from evalcore.stats.signal_noise import (DecisionAccuracy, SignalToNoise, decision_accuracy,
                                         relative_dispersion, relative_sd, series_signal_to_noise,
                                         signal_to_noise)
from evalcore.stats.splits import SplitConsistency, split_consistency
from evalcore.stats.repeats import (PassAtK, RerunNoise, VarianceComponents, pass_at_k,
                                    pass_at_k_summary, rerun_noise, variance_components)

__all__ = [
    # errors and helpers
    "StatsInputError", "z_value",
    # one score
    "Interval", "PROPORTION_METHODS", "SCORE_METHODS", "wilson_interval",
    "clopper_pearson_interval", "beta_interval", "clt_interval", "mean_se", "mean_se_from_moments",
    "proportion_interval",
    "score_interval", "chance_level", "contains_chance", "half_width", "required_n_for_half_width",
    "clip_to_range", "range_text",
    # bootstrap
    "BootstrapResult", "RankIntervals", "bootstrap_interval", "mean_difference",
    "BootstrapColumns", "bootstrap_proportions", "bootstrap_means_shared",
    "paired_bootstrap_ranks",
    # clustered
    "ClusteredSE", "clustered_se", "ClusteredInterval", "clustered_interval", "cluster_t_value",
    "korn_graubard_interval",
    "FEW_CLUSTERS", "GroupedClusteredIntervals", "grouped_clustered_intervals",
    "clustered_intervals_of_matrices",
    # paired
    "PairedDifference", "McNemarResult", "PairedColumns", "paired_difference", "mcnemar",
    "paired_columns", "PairedMoments", "paired_moments", "correlation", "mcnemar_exact_p", "normal_p_value", "mean_quantile", "mean_quantiles",
    "paired_clustered_se",
    "SMALL_N",
    # paired 0/1 runs at small n
    "PAIRED_BINARY_METHODS", "PairedProportionInterval", "paired_proportion_interval",
    "choose_paired_binary_method", "discordance_upper_bound",
    # the p-value of each interval's own test; the row's p and interval (intersection-union)
    "PairedPValues", "paired_p_values", "score_test_p", "wald_test_p", "bound_test_p",
    "paired_binary_test_p", "widen_to_zero",
    # repeats
    "VarianceComponents", "RerunNoise", "PassAtK", "variance_components", "rerun_noise",
    "pass_at_k", "pass_at_k_summary",
    # planning
    "minimum_detectable_effect", "required_items", "minimum_detectable_effect_unpaired",
    "required_items_unpaired", "effective_n", "sd_diff_with_answers", "preregistration_markdown",
    # many tasks / models
    "TaskAggregate", "BestTier", "aggregate_tasks", "pooled_sample_stderr", "adjust_pvalues",
    "best_of_k_inflation", "indistinguishable_from_best",
    # item quality
    "ConsensusItems", "ConsensusExpectation", "consensus_suspects", "expected_suspects",
    "flag_probability", "TwoSampleDifference", "two_sample_difference",
    # noise beyond the items
    "ProtocolSpread", "protocol_spread", "SeedVariance", "SeedComparison", "SeedsNeeded",
    "seed_variance", "seed_comparison", "seeds_needed", "satterthwaite_df", "SignalToNoise",
    "DecisionAccuracy", "signal_to_noise", "series_signal_to_noise", "relative_dispersion",
    "relative_sd",
    "decision_accuracy", "SplitConsistency", "split_consistency",
    # LLM judges: prediction-powered inference, agreement
    "PPIMean", "Kappa", "MeanT", "LabelShift", "ppi_mean", "ppi_paired_difference",
    "power_tuning_lambda", "ppi_variance", "cohens_kappa", "judge_bias", "t_mean_interval",
    "label_shift", "LabelsNeeded", "ppi_labels_needed", "binary_agreement_moments",
]
