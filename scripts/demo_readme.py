"""Demo generator: the truth table (data/demo_truth.json) and data/README.md (see
make_demo.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import demo_items
from demo_common import (
    DIFFICULTY_MIX,
    MODEL_BY_NAME,
    MODELS,
    N_ARC,
    N_BOOLQ,
    N_GSM,
    N_PASSAGES,
    PER_PASSAGE,
    PROTOCOL_GSM_FORMAT,
    PROTOCOL_MODEL,
    PROTOCOL_SHIFT,
    PROTOCOL_SHOTS,
    PROTOCOL_TASKS,
    READING_MU,
    READING_WITHIN_SD,
    RERUN_MODEL,
    RERUN_RESAMPLE,
    SEED,
    p_correct,
    theta_for,
)
from demo_inspect import (
    CATEGORY_EFFECT,
    INSPECT_EPOCHS,
    INSPECT_TASK,
    INSPECT_THETA_SHIFT,
    TriviaItem,
)
from demo_lm_eval import COMPARISONS, ITEM_SCORES, LmTask, pair_rows

# Truth table and README
# ---------------------------------------------------------------------------------------

def expected_scores(tasks: dict[str, LmTask], trivia: list[TriviaItem]) -> dict[str, Any]:
    """Expected accuracy of each model on each task's item set (mean of P(correct) over items)."""
    out: dict[str, Any] = {}
    for m in MODELS:
        row = {}
        for t in tasks.values():
            chance = 1.0 / t.n_choices if t.kind == "mc" else 0.0
            th = theta_for(m, t.name)
            row[t.name] = round(sum(p_correct(th, it.difficulty, chance) for it in t.items) / len(t.items), 6)
        th = m.theta + INSPECT_THETA_SHIFT
        # rounded so that last-ulp differences between platforms' exp/log cannot change the file
        row[INSPECT_TASK] = round(sum(p_correct(th, it.difficulty, 0.0) for it in trivia) / len(trivia), 6)
        out[m.name] = row
    return out


def _sd(xs: Sequence[float]) -> float:
    """Population sd of the drawn difficulties (what the README reports)."""
    mu = sum(xs) / len(xs)
    return math.sqrt(sum((x - mu) ** 2 for x in xs) / len(xs))


def write_truth(tasks: dict[str, LmTask], trivia: list[TriviaItem], observed: dict[str, Any],
                data_dir: Path) -> dict[str, Any]:
    truth = {
        "seed": SEED,
        "model": "P(correct) = chance + (1 - chance) * sigmoid(theta - difficulty)",
        "models": {m.name: {"theta": m.theta, "task_shift": m.task_shift,
                            "gsm8k_format_compliance": m.gsm_format} for m in MODELS},
        "chance": {t.name: (1.0 / t.n_choices if t.kind == "mc" else 0.0) for t in tasks.values()}
        | {INSPECT_TASK: 0.0},
        "items": {t.name: len(t.items) for t in tasks.values()} | {INSPECT_TASK: len(trivia)},
        "inspect": {"task": INSPECT_TASK, "epochs": INSPECT_EPOCHS, "theta_shift": INSPECT_THETA_SHIFT,
                    "category_effect": CATEGORY_EFFECT},
        "reading_demo": {"passages": N_PASSAGES, "questions_per_passage": PER_PASSAGE,
                         "difficulty_mean": READING_MU,
                         "passage_effect_mixture": DIFFICULTY_MIX["reading_demo"],
                         "within_passage_sd": READING_WITHIN_SD, "cluster_key": "doc.passage_id"},
        "rerun": {"model": RERUN_MODEL, "resample_share": RERUN_RESAMPLE},
        "protocol_variant": {"model": PROTOCOL_MODEL, "tasks": list(PROTOCOL_TASKS), "num_fewshot": PROTOCOL_SHOTS,
                             "apply_chat_template": True, "theta_shift": PROTOCOL_SHIFT,
                             "gsm8k_format_compliance": PROTOCOL_GSM_FORMAT},
        "difficulty_mixture": {t: [list(c) for c in comps] for t, comps in DIFFICULTY_MIX.items()},
        "difficulty_sd": {t.name: round(_sd([it.difficulty for it in t.items]), 6) for t in tasks.values()},
        "expected_accuracy": expected_scores(tasks, trivia),
        "observed": observed,
    }
    (data_dir / "demo_truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n",
                                              encoding="utf-8")
    return truth


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def correlation_rows() -> list[str]:
    """README rows: between-model per-item correlations of the main runs, per task and metric."""
    rows = []
    keys = sorted({(t, k) for (_, label, t, k) in ITEM_SCORES if label == "main"})
    for task, metric in keys:
        vecs = [ITEM_SCORES[(m.name, "main", task, metric)] for m in MODELS]
        rs = [_pearson(vecs[i], vecs[j]) for i in range(len(vecs)) for j in range(i + 1, len(vecs))]
        rows.append(f"| `{task}` | `{metric.removesuffix(',none')}` | {min(rs):.2f} | "
                    f"{sum(rs) / len(rs):.2f} | {max(rs):.2f} |")
    return rows


def write_readme(truth: dict[str, Any], data_dir: Path) -> None:
    exp = truth["expected_accuracy"]
    obs = truth["observed"]
    task_names = ["arc_easy_demo", "boolq_demo", "gsm8k_demo", "reading_demo", INSPECT_TASK]
    difficulty_rows = []
    for t, comps in DIFFICULTY_MIX.items():
        cells = [f"{w:.2f}, {mu:+.1f}, {sd:.1f}" for w, mu, sd in comps]
        sd_total = truth["difficulty_sd"][t]
        label = f"`{t}`" + (" (passage effect)" if t == "reading_demo" else "")
        difficulty_rows.append(f"| {label} | " + " | ".join(cells) + f" | {sd_total:.2f} |")
    lines = [
        "# The bundled demo",
        "",
        "`data/demo/` holds **simulated** evaluation logs written in the real formats of",
        "lm-evaluation-harness (0.4.x results JSON + `samples_<task>_<ts>.jsonl`) and inspect_ai",
        "(`.eval` zip logs), so the demo goes through exactly the same ingest path as your own files.",
        "Nothing in it is a real model or a real benchmark result: the models (`demo-org/...`) and the",
        "`*_demo` tasks are invented, the texts are short synthetic questions (the inspect task",
        "uses real, checkable trivia facts), and every score is drawn from a known model.",
        "",
        "Regenerate it (byte-identical; `tests/test_demo.py` checks this):",
        "",
        "```",
        "python scripts/make_demo.py",
        "```",
        "",
        "## Layout",
        "",
        "```",
        "data/demo/lm_eval/<model_name_sanitized>/results_<ts>.json",
        "data/demo/lm_eval/<model_name_sanitized>/samples_<task>_<ts>.jsonl",
        "data/demo/inspect/<created>_trivia-demo_<task_id>.eval",
        "data/demo_truth.json   # the simulation's true parameters and expected scores",
        "```",
        "",
        "Ingest `data/demo/` (not `data/`): the truth file and this README are not harness output.",
        "",
        "## What is simulated",
        "",
        "Each answer is correct with probability (item response theory with a guessing floor)",
        "",
        "    P(correct) = chance + (1 - chance) * sigmoid(theta_model,task - difficulty_item)",
        "",
        "with chance = 1/(number of options) for multiple-choice tasks, 0 for generation and",
        "short-answer tasks. Item difficulties are drawn once and shared by all models, so runs",
        "are correlated item by item (which is why paired comparisons pay off). As in real",
        "benchmarks the difficulties are spread widely: a skewed mixture of many easy items",
        "(nearly every model right), a minority of very hard ones (every model near chance) and a",
        "middle band that separates the models (weight, mean, sd on the logit scale):",
        "",
        "| task | easy | hard | middle | sd of difficulty |",
        "|---|---|---|---|---:|",
        *difficulty_rows,
        "",
        "Correlation of per-item correctness between two models (Pearson, main runs), min / mean / max",
        "over the 10 model pairs:",
        "",
        "| task | metric | min | mean | max |",
        "|---|---|---:|---:|---:|",
        *correlation_rows(),
        "",
        "| task | harness | items | kind | metrics | chance |",
        "|---|---|---:|---|---|---:|",
        f"| `arc_easy_demo` | lm_eval | {N_ARC} | 4-option MC (loglikelihood) | `acc`, `acc_norm` | 0.25 |",
        f"| `boolq_demo` | lm_eval | {N_BOOLQ} | yes/no about a passage | `acc` | 0.50 |",
        f"| `gsm8k_demo` | lm_eval | {N_GSM} | generation, two filters | `exact_match,strict-match`, "
        "`exact_match,flexible-extract` | 0 |",
        f"| `reading_demo` | lm_eval | {N_PASSAGES * PER_PASSAGE} = {N_PASSAGES} passages x {PER_PASSAGE} "
        "| 4-option MC | `acc` | 0.25 |",
        f"| `{INSPECT_TASK}` | inspect_ai | 60 x 5 epochs | short answer, scorer `match` (C/I) | "
        "`accuracy` | 0 |",
        "",
        "- **Clusters.** `reading_demo` items share passages: `doc[\"passage_id\"]`",
        f"  (`p001`..`p{N_PASSAGES:03d}`) is the cluster key; a passage effect drawn from the",
        f"  mixture above (within-passage sd {READING_WITHIN_SD}) makes clustered SEs wider than iid ones",
        "  (easy passages, hard passages).",
        f"  `{INSPECT_TASK}` samples carry `metadata.category` (6 categories of 10 questions) with",
        "  category effects on difficulty.",
        f"- **Several answers per item.** `{INSPECT_TASK}` ran with `epochs=5` at temperature 0.7;",
        "  each epoch is an independent draw at the item's P(correct). `reductions.json` holds the",
        "  per-sample means (inspect's `mean` reducer); the header's `accuracy`/`stderr` are computed",
        "  over those reduced values, as inspect does.",
        f"- **Reruns.** `{RERUN_MODEL}` was run a second time on `arc_easy_demo` and `gsm8k_demo` with",
        "  the same protocol (other seeds and batch size). Prompts and hashes are identical; a share",
        f"  of items ({RERUN_RESAMPLE['arc_easy_demo']:.0%} on arc, {RERUN_RESAMPLE['gsm8k_demo']:.0%} on gsm8k) "
        "is redrawn at the same P(correct), so roughly 5-10% of",
        "  items flip.",
        f"- **Protocol change.** `{PROTOCOL_MODEL}` was also run on `arc_easy_demo` and `gsm8k_demo`",
        f"  with `num_fewshot={PROTOCOL_SHOTS}` and a chat template (`fewshot_as_multiturn`): same docs and",
        "  `doc_hash`, different `prompt_hash` and config. Its true ability is higher there",
        f"  (+{PROTOCOL_SHIFT['arc_easy_demo']} and +{PROTOCOL_SHIFT['gsm8k_demo']} logit) and it",
        "  follows the `#### n` answer format far more often, so strict-match rises most. The",
        "  comparison page should warn that these two runs did not use the same instrument.",
        "- **Metric variants.** `acc` vs `acc_norm` on `arc_easy_demo` (length-normalised choice),",
        "  strict-match vs flexible-extract on `gsm8k_demo` (flexible rescues answers given without",
        "  `#### n`; how often a model uses the format is a per-model setting below).",
        "",
        "## True abilities",
        "",
        "theta on the logit scale (task shifts added where listed), format compliance = probability",
        "of ending a `gsm8k_demo` answer with `#### n` at 0-shot.",
        "",
        "| model | theta | task shifts | gsm8k format compliance |",
        "|---|---:|---|---:|",
    ]
    for m in MODELS:
        shifts = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(m.task_shift.items())) or "none"
        lines.append(f"| `{m.name}` | {m.theta:.2f} | {shifts} | {m.gsm_format:.2f} |")
    lines += [
        "",
        f"For `{INSPECT_TASK}` every model's theta is shifted by {INSPECT_THETA_SHIFT:+.1f}.",
        "",
        "## Expected vs observed scores",
        "",
        "Expected = mean over this task's items of P(correct) (for `gsm8k_demo` that is the chance of",
        "a right answer, i.e. flexible-extract; strict-match is lower by the format compliance).",
        "Observed = what the demo files contain (`acc_norm` for `arc_easy_demo`, whose simulated",
        "choice is the length-normalised one, `acc` for the other multiple-choice tasks,",
        "`exact_match,flexible-extract`, inspect `accuracy` over epoch means).",
        "",
        "| model | " + " | ".join(f"`{t}` exp / obs" for t in task_names) + " |",
        "|---|" + "---:|" * len(task_names),
    ]
    for m in MODELS:
        cells = []
        for t in task_names:
            key = {"gsm8k_demo": "exact_match,flexible-extract", INSPECT_TASK: "accuracy",
                   "arc_easy_demo": "acc_norm,none"}.get(t, "acc,none")
            o = obs["lm_eval"][m.name]["main"][t][key] if t != INSPECT_TASK else obs["inspect"][m.name][key]
            cells.append(f"{exp[m.name][t]:.3f} / {o:.3f}")
        lines.append(f"| `{m.name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## What the dashboard should conclude",
        "",
        "Paired comparisons built into the simulation, with what the files actually show: A and B",
        "are the two runs' scores, `A only`/`B only` the discordant items, p the exact two-sided",
        "McNemar p-value (unadjusted). These are the numbers the Compare page should reproduce.",
        "",
    ]
    for first, second, story in COMPARISONS:
        name_a = f"{first[0]} ({first[1]})"
        name_b = f"{second[0]} ({second[1]})"
        theta_a, theta_b = MODEL_BY_NAME[first[0]].theta, MODEL_BY_NAME[second[0]].theta
        lines += [f"### `{name_a}` vs `{name_b}`", "",
                  f"True theta {theta_a:.2f} vs {theta_b:.2f} (before task shifts): {story}", "",
                  "| task | metric | A | B | A only | B only | McNemar p |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in pair_rows(first, second):
            lines.append(f"| `{r['task']}` | `{r['metric']}` | {r['a']:.3f} | {r['b_mean']:.3f} | "
                         f"{r['only_a']} | {r['only_b']} | {r['p']:.2g} |")
        lines.append("")
    lines += demo_items.readme_lines()
    lines.append("")
    (data_dir / "README.md").write_text("\n".join(lines), encoding="utf-8")


# ---------------------------------------------------------------------------------------
