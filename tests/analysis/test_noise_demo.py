"""The bundled demo's Noise groups (scripts/demo_noise.py): two 3-seed configurations, two
6-checkpoint series and the main demo's protocol variant, as the analysis layer finds them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore import analysis as an

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from evalcore.ingest import parse_paths
    from evalcore.store import Store
    s = Store(tmp_path_factory.mktemp("noise_demo") / "store")
    s.ingest(parse_paths([ROOT / "data" / "demo"]))
    return s


@pytest.fixture(scope="module")
def truth():
    return json.loads((ROOT / "data" / "demo_noise_truth.json").read_text(encoding="utf-8"))


def test_seed_groups_of_the_demo(demo, truth):
    rep = an.seed_report(demo)
    assert sorted(rep.groups["config"]) == sorted(truth["seed_configs"])
    assert set(rep.groups["k"]) == {3} and set(rep.groups["task"]) == {truth["task"]}
    observed = {r["run"]: r["score"] for r in rep.runs.to_dict("records")}
    for cfg in truth["seed_configs"].values():
        for name, t in cfg["seeds"].items():
            assert observed[name] == pytest.approx(t["acc"])
    c = rep.comparisons.iloc[0]
    assert (c["config_a"], c["config_b"]) == ("demo-lab/wren-1b", "demo-lab/wren-1b-dedup")
    assert c["low"] < c["diff"] < c["high"] and c["df"] > 1 and c["seeds_needed"] >= 2


def test_checkpoint_series_of_the_demo(demo, truth):
    rep = an.checkpoint_report(demo)
    assert sorted(rep.curve["series"].unique()) == sorted(truth["series"])
    assert rep.curve.groupby("series").size().tolist() == [6, 6]
    row = rep.snr.iloc[0]
    assert row["n_series"] == 2 and row["last_n"] == 3 and row["snr"] > 0
    assert len(rep.decisions) == 5 and set(rep.decisions["n_pairs"]) == {1}


def test_protocol_group_of_the_demo(demo):
    rep = an.protocol_sensitivity(demo, task="arc_easy_demo")
    boreal = rep.groups[rep.groups["model"] == "demo-org/boreal-8b"].iloc[0]
    assert boreal["n_protocols"] == 4                 # 0-shot / 3-shot chat x acc / acc_norm
    cells = rep.cells[rep.cells["group"] == boreal["group"]]
    assert cells["differs"].str.contains("num_fewshot: 0 -> 3").sum() == 2
    assert boreal["sentence"].startswith("The protocol spread for demo-org/boreal-8b on arc_easy_demo is ")


def test_split_consistency_on_the_clustered_reading_task(demo):
    rep = an.split_report(demo, "demo-org/atlas-13b", "reading_demo")
    assert rep.result.n_clusters == 30 and rep.result.k == 10
    assert 0.8 < rep.result.random_ratio < 1.2
