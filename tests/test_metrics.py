"""evalcore.metrics: direction and range of a metric, the harness's declarations."""

from __future__ import annotations

import pytest

from evalcore import metrics as mx


@pytest.mark.parametrize("name", ["perplexity", "ppl", "word_perplexity", "byte_perplexity",
                                  "bits_per_byte", "likelihood_difference"])
def test_losses_are_lower_is_better_and_unbounded(name):
    i = mx.metric_info(name)
    assert i.direction == mx.LOWER and i.high is None and i.rankable
    assert not i.averageable and i.why_not_averaged() == "lower is better"
    assert i.higher_is_better is False


def test_pct_stereotype_is_best_at_half_even_when_the_harness_says_lower():
    # lm_eval 0.4 crows_pairs yaml declares higher_is_better: false for pct_stereotype;
    # the documented table wins (an unbiased model scores 0.5)
    i = mx.metric_info("pct_stereotype", harness_higher=False)
    assert (i.direction, i.ideal, i.low, i.high) == (mx.TARGET, 0.5, 0.0, 1.0)
    assert not i.rankable and i.higher_is_better is None
    assert "best at 0.5" in i.why_not_averaged() and "best at 0.5" in i.label


def test_harness_declaration_beats_the_table_and_keeps_the_known_range():
    acc = mx.metric_info("acc,none", harness_higher=True)
    assert acc.source == mx.SOURCE_HARNESS and acc.averageable
    odd = mx.metric_info("bleu_max", harness_higher=True)
    assert odd.direction == mx.HIGHER and odd.why_not_averaged() == "scale unknown"
    flipped = mx.metric_info("acc", harness_higher=False)   # range only kept if directions agree
    assert flipped.direction == mx.LOWER and flipped.low is None


def test_filters_and_scorer_prefixes_are_stripped():
    assert mx.metric_info("exact_match,strict-match").averageable
    assert mx.metric_info("choice:accuracy").averageable
    assert mx.base_name("exact_match,flexible-extract") == "exact_match"


def test_mcc_is_not_on_the_unit_scale():
    i = mx.metric_info("mcc")
    assert i.direction == mx.HIGHER and not i.averageable
    assert i.why_not_averaged() == "scale [-1, 1], not [0, 1]"


def test_unknown_metric_and_the_credit_convention():
    u = mx.metric_info("toxicity_score")
    assert u.direction == mx.UNKNOWN and not u.rankable
    assert u.why_not_averaged() == "direction unknown" and u.label == "direction unknown"
    c = mx.metric_info("match", credit_scores=True)
    assert c.averageable and c.source == mx.SOURCE_CONVENTION


def test_harness_higher_is_better_reads_the_protocol():
    proto = {"higher_is_better": {"perplexity": False, "acc": True}}
    assert mx.harness_higher_is_better(proto, "perplexity") is False
    assert mx.harness_higher_is_better(proto, "acc,none") is True
    assert mx.harness_higher_is_better(proto, "f1") is None
    ml = {"metric_list": [{"metric": "mcc", "higher_is_better": True}]}
    assert mx.harness_higher_is_better(ml, "mcc") is True
    assert mx.harness_higher_is_better(None, "acc") is None


def test_primary_metric_follows_metric_list_and_filter_list():
    ifeval = {"metric_list": [{"metric": "prompt_level_strict_acc"},
                              {"metric": "inst_level_strict_acc"}]}
    avail = ["inst_level_loose_acc", "inst_level_strict_acc", "prompt_level_loose_acc",
             "prompt_level_strict_acc"]
    assert mx.harness_primary_metric(ifeval, avail) == "prompt_level_strict_acc"
    gsm = {"metric_list": [{"metric": "exact_match"}],
           "filter_list": [{"name": "strict-match"}, {"name": "flexible-extract"}]}
    assert mx.harness_primary_metric(
        gsm, ["exact_match,flexible-extract", "exact_match,strict-match"]) == \
        "exact_match,strict-match"
    assert mx.harness_primary_metric({"metric_list": [{"metric": "f1"}]}, ["acc"]) is None
    assert mx.harness_primary_metric({}, ["acc"]) is None


def test_finite_unit():
    assert mx.finite_unit([0.0, 0.5, 1.0, float("nan")])
    assert not mx.finite_unit([0.2, 1.5])
    assert not mx.finite_unit([])


# --- one metric per task: the rule every surface uses ------------------------------------

IFEVAL = {"metric_list": [{"metric": "prompt_level_strict_acc"},
                          {"metric": "prompt_level_loose_acc"}]}


def test_task_primary_metric_first_protocol_in_run_order_decides():
    avail = ["prompt_level_loose_acc", "prompt_level_strict_acc"]
    assert mx.task_primary_metric([{}, IFEVAL], avail) == (
        "prompt_level_strict_acc", "the first metric of the lm_eval task config's metric_list")
    helm = {"primary_metric": "bbq_accuracy", "primary_metric_from": "suite schema.json"}
    assert mx.task_primary_metric([helm], ["bbq_accuracy", "exact_match"])[0] == "bbq_accuracy"
    assert mx.task_primary_metric([{"suite": "harness", "primary_metric": "mc2"}],
                                  ["mc1", "mc2"]) == (
        "mc2", "the metric the Open LLM Leaderboard ranked on")
    assert mx.task_primary_metric([{}], ["acc"]) == (None, mx.NO_PRIMARY)


def test_choose_task_metric_any_keeps_the_primary_and_names_who_lacks_it():
    c = mx.choose_task_metric("lambada", "perplexity", "src",
                              {"new": {"perplexity", "acc"}, "old": {"ppl", "acc"}})
    assert c.metric == "perplexity" and c.is_primary and c.fallback_from is None
    assert c.missing == ("old",)
    assert c.reason == "'perplexity', the harness's primary metric (src)"


def test_choose_task_metric_all_falls_back_with_the_reason():
    c = mx.choose_task_metric("lambada", "perplexity", "src",
                              {"a": {"ppl", "acc"}, "b": {"ppl", "acc"}}, need="all")
    assert c.metric == "acc" and c.fallback_from == "perplexity" and c.missing == ()
    assert c.reason.startswith("'acc' instead of the primary metric 'perplexity' (src), "
                               "which neither run has; 'acc' by the default rule")
    assert c.reason.endswith("among the metrics both runs share")
    one = mx.choose_task_metric("t", "f1", "src", {"a": {"f1", "em"}, "b": {"em"}}, need="all")
    assert one.metric == "em" and "which b lacks" in one.reason
    none = mx.choose_task_metric("t", None, mx.NO_PRIMARY, {"a": {"f1"}, "b": {"em"}},
                                 need="all")
    assert none.metric is None and none.reason == "t: both runs share no metric"


def test_choose_task_metric_default_rule_without_a_primary():
    c = mx.choose_task_metric("t", None, mx.NO_PRIMARY, {"a": {"bleu", "f1"}})
    assert c.metric == "bleu" and c.fallback_from is None
    assert c.reason == f"'bleu' by the default rule ({mx.RULE_TEXT}): {mx.NO_PRIMARY}"
    assert mx.choose_task_metric("t", None, "", {"a": {"acc_norm", "acc"}}).metric == "acc"
    with pytest.raises(ValueError):
        mx.choose_task_metric("t", None, "", {"a": {"acc"}}, need="some")
