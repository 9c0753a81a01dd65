"""Suspect labels: items where the strongest models agree on an option other than the gold."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.analysis.items.picks import SUSPECT_COLUMNS, one_run_per_model, pick_matrix, task_runs
from evalcore.errors import AnalysisError
from evalcore.stats.label_consensus import (CHANCE_MODEL, DEFAULT_M, ConsensusExpectation,
                                            consensus_suspects, default_strong_size,
                                            expected_suspects, expected_suspects_given_errors,
                                            strongest)


@dataclass(frozen=True)
class SuspectReport:
    """Suspect labels of one task: the list, the rule, the chance expectation, the models.

    suspects : SUSPECT_COLUMNS plus one column per model (its pick), one row per flagged item.
    models : run_id, run, accuracy (of its picks against the gold), strong (bool), items.
    expectation : expected count if every label were correct (``CHANCE_MODEL``: per-model
    accuracy, independent errors). given_errors : the same given each item's number of strong
    models that missed the gold (``CONDITIONAL_MODEL``: item difficulty taken as observed).
    """

    task: str
    m: int
    n_strong: int
    n_options: int
    n_items: int
    suspects: pd.DataFrame
    models: pd.DataFrame
    expectation: ConsensusExpectation
    given_errors: ConsensusExpectation
    left_out: list[str]
    notes: list[str] = field(default_factory=list)
    chance_model: str = CHANCE_MODEL

    def export_csv(self) -> str:
        """The list for a relabelling pass: fill ``new_gold`` (empty rows keep their gold)."""
        out = self.suspects.copy()
        out.insert(2, "new_gold", "")
        return out.to_csv(index=False)


def suspect_labels(store, task: str, runs: list | None = None, m: int = DEFAULT_M,
                   n_strong: int | None = None) -> SuspectReport:
    """Items where at least m of the n_strong most accurate models agree on a non-gold option.

    Defaults: m = 3; n_strong = the better half of the models, at least m
    (``default_strong_size``). K (options per item) is the task's number of choices as
    stored (the most common one; items with other K are counted with it).
    """
    ids, names, cells = task_runs(store, task, runs)
    kept, dropped = one_run_per_model(store, ids, cells)
    k_opts = cells["n_choices"].dropna()
    if k_opts.empty or int(k_opts.max()) < 2:
        raise AnalysisError(f"task {task!r} is not multiple choice (no number of options "
                            "stored), so 'the same option' is undefined; the rule needs "
                            "multiple-choice picks")
    n_options = int(k_opts.max())
    pm = pick_matrix(store, task, kept)
    if int(m) > len(kept):
        raise AnalysisError(f"m = {m} models must agree but only {len(kept)} model(s) have "
                            f"answers on {task!r}; lower m")
    answered = pm.codes >= 0
    right = (pm.codes == pm.gold_codes[None, :]) & answered & (pm.gold_codes >= 0)[None, :]
    n_ans = answered.sum(axis=1)
    acc = np.where(n_ans > 0, right.sum(axis=1) / np.maximum(n_ans, 1), 0.0)
    size = default_strong_size(len(kept), m) if n_strong is None else int(n_strong)
    if not int(m) <= size <= len(kept):
        raise AnalysisError(f"the number of strong models must lie between m = {m} and "
                            f"{len(kept)} (the models with answers), got {size}")
    strong = strongest(acc, size)
    res = consensus_suspects(pm.codes, pm.gold_codes, strong, m)
    share = np.where(answered.sum(axis=0) > 0, right.sum(axis=0) / np.maximum(answered.sum(axis=0), 1),
                     np.nan)
    exp = expected_suspects(acc[list(strong)], np.full(len(pm.item_ids), n_options), m,
                            observed=res.n_flagged)
    has_gold = pm.gold_codes >= 0
    missed = (answered & ~right)[list(strong)].sum(axis=0)[has_gold]
    given = expected_suspects_given_errors(missed, n_options, m, observed=res.n_flagged)
    rows = []
    for j in np.nonzero(res.flagged)[0]:
        row = {"task": task, "item_id": pm.item_ids[j], "prompt": pm.prompts[j], "gold": pm.gold[j],
               "consensus": pm.options[j][res.option[j]], "n_agree": int(res.count[j]),
               "n_strong": int(res.answered[j]), "share_correct": float(share[j]),
               "n_models": int(answered[:, j].sum())}
        for r in kept:
            row[names[r]] = pm.picks.at[pm.item_ids[j], r]
        rows.append(row)
    cols = list(SUSPECT_COLUMNS) + [names[r] for r in kept]
    suspects = pd.DataFrame(rows, columns=cols)
    models = pd.DataFrame({"run_id": kept, "run": [names[r] for r in kept], "accuracy": acc,
                           "strong": [i in strong for i in range(len(kept))],
                           "items": n_ans}).sort_values("accuracy", ascending=False)
    notes = [f"picks: each model's stored answer on its first try; K = {n_options} options"]
    if dropped:
        notes.append("one run per model: left out " + ", ".join(names[r] for r in dropped))
    return SuspectReport(task, int(m), size, n_options, len(pm.item_ids), suspects,
                         models.reset_index(drop=True), exp, given, [names[r] for r in dropped],
                         notes)
