"""``plan``'s text output: the Planner page's sentences (analysis.PairedPlan), with the
pilot's line, and the same numbers as ``--format json``."""

from __future__ import annotations

import json
import math

import numpy as np
from scipy.stats import norm

from tests.cli_helpers import run_main
from tests.test_cli import DIALO, MISTRAL


def test_typed_plan_text_is_the_pages_sentences(capsys):
    code, out, _ = run_main(capsys, "plan", "--disagreement", "0.2", "--delta", "0.02", "--n",
                            "500")
    assert code == 0
    mde = (norm.ppf(0.975) + norm.ppf(0.8)) * math.sqrt(0.2 / 500)
    assert out.splitlines() == [
        "To detect a 2-point gap between two models at 95% confidence and 80% power, you need "
        "about 3,925 items (assuming they disagree on 20% of items).",
        f"With 500 items, the smallest gap detectable at 95% confidence with 80% power is "
        f"{100 * mde:.2f} points."]


def test_pilot_plan_text_and_json_agree(capsys, tmp_path, fixtures_dir):
    store = tmp_path / "store"
    d = fixtures_dir / "lm_eval"
    assert run_main(capsys, "--store", store, "ingest", d / MISTRAL, d / DIALO)[0] == 0
    args = ("--store", store, "plan", "--pilot", "1", "2", "--task", "arc_easy", "--delta",
            "0.05")
    code, out, _ = run_main(capsys, *args)
    assert code == 0
    lines = out.splitlines()
    dvals = np.array([-1.0] * 7 + [0.0] * 8)            # 7 of 15 items only A right
    sd = float(np.std(dvals, ddof=1))
    need = math.ceil((norm.ppf(0.975) + norm.ppf(0.8)) ** 2 * sd ** 2 / 0.05 ** 2)
    assert lines[0].startswith("Pilot: ") and "15 shared items: they disagree on 46.67% of " \
        f"them; SD of per-item differences {sd:.4f}" in lines[0]
    assert lines[1] == (
        f"To detect a 5-point gap between two models at 95% confidence and 80% power, you need "
        f"about {need:,} items (using the pilot's SD of per-item differences, {sd:.4g}: the two "
        f"runs disagree on 46.67% of 15 shared items of arc_easy).")
    doc = json.loads(run_main(capsys, *args, "--format", "json")[1])
    assert doc["required_items"] == need and doc["design_effect"] == 1.0
    assert doc["sd_diff"] == sd and doc["pilot"]["n"] == 15
