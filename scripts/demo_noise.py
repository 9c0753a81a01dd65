"""Demo data for the Noise page: training seeds and checkpoint series.

Called by ``scripts/make_demo.py`` (``write_noise_demo``), which passes itself as ``md`` so
the runs are simulated and written by the same code as the rest of the demo (the same item
response model, the same lm-evaluation-harness 0.4 file layout). Everything goes under
``data/demo/noise/lm_eval/<model>/``, all on ``boolq_demo``:

* **seeds**: two training configurations of a 1B model, ``demo-lab/wren-1b`` and
  ``demo-lab/wren-1b-dedup`` (deduplicated data, truly a little better), three seeds each,
  model names ending in ``-seed1`` .. ``-seed3``.
* **checkpoints**: two data mixes, ``demo-lab/kite-1b-mixA`` and ``-mixB``, six checkpoints
  each (steps 2000 .. 12000, model names ending in ``-step<N>``). mixB ends better but
  starts behind, so early checkpoints can order the mixes the wrong way.

All are results JSON only, as lm_eval writes them without ``--log_samples`` (training-time
evals often are; it also keeps the bundled demo small): the page works from the reported
scores and stderrs there. The item-level sections (split consistency) use the main demo.

The protocol group the Noise page shows comes from the main demo (``boreal-8b`` 0-shot vs
3-shot with chat template, and the acc/acc_norm and strict/flexible metric variants).

True abilities (logit scale) are written to ``data/demo_noise_truth.json``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

NOISE_TASK = "boolq_demo"
SEED_CONFIGS = {"demo-lab/wren-1b": -0.8, "demo-lab/wren-1b-dedup": 0.3}
SEEDS = (1, 2, 3)
SEED_SD = 0.60                      # between-seed sd of theta (logit)
SERIES = {"demo-lab/kite-1b-mixA": (-0.60, 1.0), "demo-lab/kite-1b-mixB": (0.40, 2.8)}
STEPS = (2000, 4000, 6000, 8000, 10000, 12000)
CURVE_TAU = 3000.0                  # theta(step) = final - deficit * exp(-(step - 2000) / tau)
STEP_SD = 0.10                      # step-to-step wobble of theta (logit)
PARAMS_1B = 1_176_764_416


def _seed_runs(md: ModuleType) -> list[tuple[Any, float]]:
    out = []
    for c, (cfg, theta) in enumerate(SEED_CONFIGS.items()):
        for s in SEEDS:
            u = md.DemoRng("noise-seed", cfg, s).normal(0.0, SEED_SD)
            model = md.DemoModel(f"{cfg}-seed{s}", PARAMS_1B, theta + u, {}, gsm_format=0.5)
            ts = f"2026-03-05T{9 + c:02d}-{10 * s:02d}-00.000000"
            out.append((md.LmRun(model, ts, (NOISE_TASK,)), theta + u))
    return out


def _series_runs(md: ModuleType) -> list[tuple[Any, float]]:
    out = []
    for c, (name, (final, deficit)) in enumerate(SERIES.items()):
        for j, step in enumerate(STEPS):
            wobble = md.DemoRng("noise-step", name, step).normal(0.0, STEP_SD)
            theta = final - deficit * math.exp(-(step - STEPS[0]) / CURVE_TAU) + wobble
            model = md.DemoModel(f"{name}-step{step}", PARAMS_1B, theta, {}, gsm_format=0.5)
            ts = f"2026-03-06T{9 + c:02d}-{5 * j:02d}-00.000000"
            out.append((md.LmRun(model, ts, (NOISE_TASK,)), theta))
    return out


def _write_results_only(md: ModuleType, run: Any, tasks: dict[str, Any], out: Path) -> dict:
    """``md.write_lm_run`` without the samples files (lm_eval without --log_samples)."""
    obs = md.write_lm_run(run, tasks, out)
    folder = out / "lm_eval" / run.model.name.replace("/", "__")
    for sample in folder.glob(f"samples_*_{run.timestamp}.jsonl"):
        sample.unlink()
    return obs


def write_noise_demo(md: ModuleType, tasks: dict[str, Any], demo_dir: Path,
                     data_dir: Path) -> dict[str, Any]:
    """Write the seed and checkpoint runs under ``demo_dir / "noise"`` and the truth JSON.

    Returns the observed accuracies {model name: acc} (also stored in the truth file).
    """
    out = demo_dir / "noise"
    observed: dict[str, float] = {}
    truth: dict[str, Any] = {"task": NOISE_TASK, "seed_sd_theta": SEED_SD, "step_sd_theta": STEP_SD,
                             "seed_configs": {}, "series": {}}
    for run, theta in _seed_runs(md):
        obs = _write_results_only(md, run, tasks, out)
        observed[run.model.name] = obs[NOISE_TASK]["acc,none"]
        cfg = run.model.name.rsplit("-seed", 1)[0]
        truth["seed_configs"].setdefault(cfg, {"theta": SEED_CONFIGS[cfg], "seeds": {}})
        truth["seed_configs"][cfg]["seeds"][run.model.name] = {"theta": round(theta, 6),
                                                              "acc": observed[run.model.name]}
    for run, theta in _series_runs(md):
        obs = _write_results_only(md, run, tasks, out)
        observed[run.model.name] = obs[NOISE_TASK]["acc,none"]
        name = run.model.name.rsplit("-step", 1)[0]
        truth["series"].setdefault(name, {"final_theta": SERIES[name][0], "checkpoints": {}})
        truth["series"][name]["checkpoints"][run.model.name] = {"theta": round(theta, 6),
                                                               "acc": observed[run.model.name]}
    (data_dir / "demo_noise_truth.json").write_text(json.dumps(truth, indent=2) + "\n",
                                                    encoding="utf-8")
    return observed
