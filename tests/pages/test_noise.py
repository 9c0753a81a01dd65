"""The Noise page (pages/noise.py) on the demo store and on an empty-of-groups store: each
section shows its numbers from evalcore.analysis.noise, or says what to upload or tag."""

from __future__ import annotations

import json

import numpy as np

from evalcore import analysis as an
from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (
    check_only_open_tab_computed,
    no_exception,
    page,
    page_on_tab,
    plain,
    store_file,
    texts,
)


def _markdown(at) -> list[str]:
    return [plain(m.value) for m in at.markdown]


TABS = ("Protocols", "Seeds", "Checkpoints", "Splits")


def _tab(name: str, **params: str):
    """The page with the tab ``name`` open (from the URL, as a shared link opens it)."""
    return page_on_tab("noise", "nz_tab", name, TABS[0], **params)


def test_demo_store_fills_every_section(demo_store):
    ats = {name: _tab(name) for name in TABS}
    for at in ats.values():
        no_exception(at)
        assert not at.error, [e.value for e in at.error]
    # protocols: the first task with a group (arc_easy_demo), its sentences
    md = " ".join(_markdown(ats["Protocols"]))
    pr = an.protocol_sensitivity(demo_store)
    first = pr.groups[pr.groups["task"] == "arc_easy_demo"]
    for sentence in first["sentence"]:
        assert sentence in md
    # seeds: group sentences and the comparison
    md = " ".join(_markdown(ats["Seeds"]))
    sd = an.seed_report(demo_store)
    for sentence in list(sd.groups["sentence"]) + list(sd.comparisons["sentence"]):
        assert sentence in md
    # checkpoints: SNR metric equals the analysis
    snr = an.checkpoint_report(demo_store).snr.iloc[0]
    metric = next(m for m in ats["Checkpoints"].metric if m.label == "Signal-to-noise")
    assert metric.value == f"{snr['snr']:.4g}"
    # splits: a sentence and the random-split yardstick near 1
    yard = next(m for m in ats["Splits"].metric if m.label == "Random splits / reference")
    assert 0.8 < float(yard.value) < 1.2
    # charts: protocol spread, seeds, learning curve
    specs = [json.loads(c.proto.spec) for at in ats.values() for c in at.get("plotly_chart")]
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert any(t.startswith("Learning curve on boolq_demo") for t in titles)
    curve = next(s for s in specs if s["layout"]["title"]["text"].startswith("Learning curve"))
    assert len(curve["data"]) == 2 and len(curve["data"][0]["x"]) == 6


def test_only_the_open_tab_is_computed(demo_store, monkeypatch):
    calls = check_only_open_tab_computed(
        monkeypatch, "noise", "nz_tab",
        {"Protocols": "protocol_sensitivity", "Seeds": "seed_report",
         "Checkpoints": "checkpoint_report", "Splits": "split_report"})
    # switching tabs in the session: the other section runs, the first does not
    at = _tab("Protocols")
    calls.clear()
    at.session_state["nz_tab"] = "Seeds"
    at.run()
    assert calls == ["seed_report"]


def test_protocol_group_choice_and_table(demo_store):
    at = page("noise")
    at.query_params["pr_task"] = "gsm8k_demo"
    at.query_params["pr_group"] = "demo-org/boreal-8b"
    at.run()
    no_exception(at)
    table = next(d.value for d in at.dataframe
                 if "Differs from the first run" in d.value.columns)
    assert len(table) == 4
    assert table["Differs from the first run"].str.contains("num_fewshot: 0 -> 3").sum() == 2
    pr = an.protocol_sensitivity(demo_store, task="gsm8k_demo")
    row = pr.groups[pr.groups["model"] == "demo-org/boreal-8b"].iloc[0]
    rng = next(m for m in at.metric if m.label.startswith("Range"))
    assert rng.value == f"{100 * row['range']:.1f} pp"
    # every table of the section is headed for people, with units, and shows no None/NaN
    groups = next(d.value for d in at.dataframe if "Range (pp)" in d.value.columns)
    assert "Nearest other model" in groups.columns and "range_points" not in groups.columns
    for frame in at.dataframe:
        assert not {"nearest_gap", "item_se", "max_range", "metric_family"} & set(frame.value.columns)
        assert not frame.value.astype(str).isin(["None", "nan", "NaN"]).any().any()


def test_planned_gap_changes_seeds_needed(demo_store):
    at = _tab("Seeds", sd_gap="10")
    no_exception(at)
    want = an.seed_report(demo_store, gap=0.10).comparisons.iloc[0]
    assert any(f"To detect a 10.0-point gap with 80% power, train {int(want['seeds_needed'])} seeds"
               in m for m in _markdown(at))


def test_store_without_groups_says_what_to_upload(tmp_path):
    rng = np.random.default_rng(0)
    store = Store(store_file(tmp_path))
    store.ingest([parsed_run("solo", {("t", "acc"): (rng.random(60) < 0.5).astype(float)})])
    ats = [_tab(name) for name in TABS]
    for at in ats:
        no_exception(at)
    info = " ".join(t for at in ats for t in texts(at.info))
    assert "No protocol group" in info and "model=NAME" in info
    assert "No seed group" in info and "seed=1, seed=2" in info
    assert "No checkpoint series" in info and "step=1000" in info
    # the split section still works on the one run with 60 items
    assert any(m.label == "Splits × items" and m.value == "6 × 10" for m in ats[3].metric)


def test_seed_and_checkpoint_tables_in_plain_words(demo_store):
    seeds = _tab("Seeds")
    no_exception(seeds)
    groups = next(d.value for d in seeds.dataframe if "Configuration" in d.value.columns)
    want = an.seed_report(demo_store).groups.iloc[0]
    assert groups.loc[0, "Between-seed SD beyond item noise (pp)"] == \
        f"{100 * want['between_sd']:.2f}"
    assert groups.loc[0, "Between-seed variance (pp²)"] == f"{1e4 * want['between_var']:.4g}"
    checkpoints = _tab("Checkpoints")
    no_exception(checkpoints)
    assert any(m.label == "Signal (relative spread)" for m in checkpoints.metric)
    for at in (seeds, checkpoints):
        for frame in at.dataframe:
            names = set(frame.value.columns)
            assert not {"between_sd", "between_var", "sd_observed", "seeds_needed", "n_pairs",
                        "k_a", "config_a"} & names, names
            assert not frame.value.astype(str).isin(["None", "nan", "NaN"]).any().any()
