"""The methods paragraph states what was computed on a known store, not fixed text."""

from __future__ import annotations

import re

from evalcore import analysis
from evalcore.report import ReportSpec, build_report, methods_paragraphs, methods_text
from tests.report.conftest import A, B, B_CHAT


def test_states_methods_confidence_and_n_of_the_store(demo_store, demo_report):
    text = methods_text(demo_report)
    board = demo_report.leaderboard
    for task, g in board.cells.groupby("task"):
        ns = sorted(set(int(n) for n in g["n"]))
        assert f"{task} ({board.metrics_by_task[task]}, n = {ns[0]:,}" in text
    used = board.cells["method"].value_counts()
    assert f"The Wilson score interval for {used['wilson']} run x task cells" in text
    # trivia_demo (means over 5 answers) is continuous: routed to CLT, with the reason
    assert f"normal-approximation interval for {used['clt']} run x task cell" in text
    assert "CLT used for the continuous scores of: trivia_demo" in text
    assert "95% interval" in text and "Holm" in text
    assert f"{demo_report.spec.n_resamples:,} resamples, seed {demo_report.spec.seed}" in text
    runs = demo_store.runs()
    assert f"We evaluated {len(runs)} runs" in text
    assert "lm-evaluation-harness 0.4.13.dev0" in text and "inspect_ai 0.3.179" in text
    assert f"evalbars {demo_report.version}" in text


def test_clusters_keys_and_g_come_from_the_data(demo_store, demo_report):
    text = methods_text(demo_report)
    cl = analysis.clusters(demo_store, A, "reading_demo")
    assert (f"{A} on reading_demo (key passage_id, G = {cl.n_clusters} clusters of "
            f"n = {cl.n} items, design effect {cl.design_effect:.2f}") in text
    # inspect trivia's 6 categories: offered, not applied (fewer than 20 clusters)
    assert "key category, G = 6 clusters" not in text
    assert f"cluster-robust SE of d_i where a cluster key exists ({B} vs {A} on reading_demo)" in text


def test_protocol_differences_found_are_named(demo_report):
    text = dict(methods_paragraphs(demo_report))["Protocol"]
    assert f"{B} and {B_CHAT} differ in their recorded protocol" in text
    assert "num_fewshot" in text and "chat_template" in text
    assert re.search(r"Prompt hashes of shared items differ .* gsm8k_demo \(120 items\)", text)


def test_other_settings_change_the_text(demo_store):
    spec = ReportSpec(method="clopper-pearson", confidence=0.9, tasks=("arc_easy_demo",),
                      comparisons=((A, B),), sections=("leaderboard", "comparisons", "methods"),
                      n_resamples=250, seed=11)
    text = methods_text(build_report(demo_store, spec))
    assert "The Clopper-Pearson exact interval for" in text and "Wilson" not in text
    assert "90% interval" in text and "alpha = 0.1" in text
    assert "250 resamples, seed 11" in text
    assert "n = 200 items" in text and "boolq_demo" not in text
    assert "p-values adjusted" not in text          # one task: nothing to adjust
    assert "No protocol difference beyond the model itself" in text


def test_bootstrap_settings_are_reported(demo_store):
    spec = ReportSpec(method="bootstrap", tasks=("boolq_demo",), n_resamples=300, seed=5,
                      sections=("leaderboard", "methods"))
    text = methods_text(build_report(demo_store, spec))
    assert "The bootstrap interval over items for" in text
    assert "Bootstrap settings: 300 resamples of items, seed 5" in text
