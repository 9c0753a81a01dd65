"""Generate the bundled evalbars demo: simulated eval logs in real harness formats.

Run ``python scripts/make_demo.py`` from the repository root. It (re)writes

- ``data/demo/lm_eval/<model_name_sanitized>/results_<ts>.json`` and
  ``samples_<task>_<ts>.jsonl``: lm-evaluation-harness 0.4.x native output
  (results JSON with ``name``/``alias``/``sample_len``, ``n-samples``, ``config``,
  ``task_hashes``; one JSONL line per (doc, filter) with ``doc_hash``/``prompt_hash``/
  ``target_hash`` = sha256 hex of the doc JSON, the first request's context and
  ``str(target)``, exactly as lm_eval computes them);
- ``data/demo/inspect/<created>_<task>_<task_id>.eval``: inspect_ai ``.eval`` zip logs
  (deflate; ``_journal/start.json``, ``_journal/summaries/<n>.json``, ``samples/<id>_epoch_<k>.json``,
  ``summaries.json``, ``reductions.json``, ``header.json``) with 5 epochs per sample;
- ``data/demo/judge/*.eval``: an LLM-judged task (``model_graded_qa``) of two chat models, with
  human labels on a random sample in ``data/demo_judge_labels/`` (``scripts/demo_judge.py``);
- ``data/demo_truth.json``: the true simulated parameters and the expected scores;
- ``data/demo_items/``: a corpus sample with planted overlaps and the list of planted label
  errors (``scripts/demo_items.py``);
- ``data/README.md``: what the demo contains, with the true abilities.

The simulation is item response theory with a guessing floor (3PL with unit slope):

    P(correct | model m, item i) = c + (1 - c) * sigmoid(theta_{m,t} - b_i)

with c = 1 / (number of choices) for multiple-choice tasks and 0 otherwise, theta the
model's ability on task t (logit scale) and b_i the item difficulty. Difficulties are drawn
from a skewed mixture (``DIFFICULTY_MIX``: many easy items, a minority of very hard ones, a
middle band), shared by all models, so different models' per-item correctness correlates
(about 0.3-0.5) as in real evals. Difficulties of the reading task share a passage effect
(b_i = mu + u_passage + e_i, u_passage from the mixture) and those of the inspect task a
category effect, so clustered standard errors differ from iid ones there.

Determinism: all randomness flows from ``random.Random(seed).random()`` (whose sequence
Python guarantees across versions), through small helpers written here (no numpy
streams, no ``random.choice``/``gauss``, whose algorithms may change). Timestamps are
fixed, JSON is written with a fixed key order, zip members carry fixed dates and
permissions. Running the script twice gives byte-identical files.
"""


from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

# the generator's parts live next to this script (scripts/demo_*.py)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_items  # noqa: E402  (item-quality demo)
from demo_common import MODELS, ROOT, DemoModel, DemoRng  # noqa: E402,F401
from demo_content import DAYS, JOBS, NAMES, PETS, PLACES, PRODUCTS, TOWNS  # noqa: E402
from demo_inspect import build_trivia, write_inspect_log  # noqa: E402
from demo_judge import README_SECTION as JUDGE_README, write_judge_demo  # noqa: E402
from demo_lm_eval import (ITEM_SCORES, LmRun, build_tasks, doc_to_text,  # noqa: E402,F401
                          lm_runs, write_lm_run)
from demo_readme import write_readme, write_truth  # noqa: E402

# DemoModel, DemoRng, LmRun and write_lm_run are used through this module by
# scripts/demo_noise.py (generate() hands it the module); tests/test_demo.py uses MODELS,
# build_trivia and write_inspect_log from it.

# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------

def generate(data_dir: Path) -> dict[str, Any]:
    """Write the whole demo under ``data_dir`` (``data_dir/demo``, truth JSON, README)."""
    demo = data_dir / "demo"
    if demo.exists():
        shutil.rmtree(demo)
    demo.mkdir(parents=True)
    ITEM_SCORES.clear()
    tasks = build_tasks()
    observed: dict[str, Any] = {"lm_eval": {}, "inspect": {}}
    for run in lm_runs():
        obs = write_lm_run(run, tasks, demo)
        observed["lm_eval"].setdefault(run.model.name, {})[run.label] = obs
    trivia = build_trivia()
    for i, m in enumerate(MODELS):
        observed["inspect"][m.name] = write_inspect_log(m, i, trivia, demo)
    write_judge_demo(demo, data_dir)        # an LLM-judged task and its human labels
    # seeds and checkpoint series for the Noise page: scripts/demo_noise.py
    import importlib.util
    spec = importlib.util.spec_from_file_location("demo_noise", Path(__file__).with_name("demo_noise.py"))
    demo_noise = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo_noise)
    demo_noise.write_noise_demo(sys.modules[__name__], tasks, demo, data_dir)
    truth = write_truth(tasks, trivia, observed, data_dir)
    arc, reading = tasks["arc_easy_demo"].items, tasks["reading_demo"].items
    demo_items.write_corpus(arc, reading, [i for i, it in enumerate(arc) if it.truth >= 0],
                            lambda it: doc_to_text("arc_easy_demo", it),
                            lambda it: doc_to_text("reading_demo", it),
                            NAMES + JOBS + PLACES + PETS + TOWNS + PRODUCTS + DAYS,
                            DemoRng("items", "corpus"), data_dir)
    write_readme(truth, data_dir)
    readme = data_dir / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").rstrip("\n") + "\n" + JUDGE_README,
                      encoding="utf-8")
    return truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data",
                        help="data folder to write (default: the repository's data/)")
    args = parser.parse_args(argv)
    generate(args.out)
    total = sum(p.stat().st_size for p in (args.out / "demo").rglob("*") if p.is_file())
    print(f"wrote {args.out / 'demo'} ({total / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
