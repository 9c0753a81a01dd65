"""Training seeds: between-seed variance beside the item SE, and configurations compared with the seed as a random effect.

Groups and cell scores: ``evalcore.analysis.noise.groups`` (its docstring has the rules)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import check_confidence, empty_frame
from evalcore.analysis.noise.groups import (SEED_COMPARISON_COLUMNS, SEED_GROUP_COLUMNS,
                                            SEED_RUN_COLUMNS, cell_scores, default_metrics, fmt,
                                            points_scale, run_groups, unit)
from evalcore.errors import AnalysisError


@dataclass(frozen=True)
class SeedReport:
    """groups: between-seed variance per (configuration, step, task) (SEED_GROUP_COLUMNS);
    runs: each seed's score with its interval (SEED_RUN_COLUMNS); comparisons: every pair
    of configurations on a task, the seed as a random effect (SEED_COMPARISON_COLUMNS);
    ``gap``: the gap (in score units) the seeds-needed column plans for, None = the observed
    difference of each pair."""

    groups: pd.DataFrame
    runs: pd.DataFrame
    comparisons: pd.DataFrame
    confidence: float
    gap: float | None
    how_to: str = ("Upload two or more runs of one configuration trained with different seeds, "
                   "or tag them seed=1, seed=2 (and config=NAME when the model names differ "
                   "by more than the seed); a model name ending in -seed2 is read as seed 2.")


def seed_report(store, *, task: str | None = None, confidence: float = 0.95,
                gap: float | None = None, alpha: float = 0.05, power: float = 0.8) -> SeedReport:
    """Seed groups, their between-seed SD against the item SE, and pairwise comparisons.

    Per group: ``stats.seed_variance`` of the seed scores with their item SEs. Per pair of
    configurations with >= 2 seeds each on a task: ``stats.seed_comparison`` (B - A, B the
    later configuration in name order) and ``stats.seeds_needed`` for ``gap`` (score units;
    default: the observed |diff|) with the pooled run variance of the two groups.
    """
    check_confidence(confidence)
    if gap is not None and not (np.isfinite(gap) and gap > 0):
        raise AnalysisError(f"gap must be a positive number, got {gap!r}")
    rg = run_groups(store)
    seeded = rg[rg["seed"].notna()]
    empty = SeedReport(empty_frame(SEED_GROUP_COLUMNS), empty_frame(SEED_RUN_COLUMNS),
                       empty_frame(SEED_COMPARISON_COLUMNS), confidence, gap)
    if seeded.empty:
        return empty
    cells = cell_scores(store, seeded["run_id"].tolist(), confidence)
    if task is not None:
        cells = cells[cells["task"] == task]
    if cells.empty:
        return empty
    dm = default_metrics(store, cells)
    cells = cells[[dm[t] == m for t, m in zip(cells["task"], cells["metric"])]].merge(seeded, on="run_id")
    cells["step_key"] = cells["step"].fillna(-1).astype(int)     # -1: no step
    groups, runs, fits = [], [], {}
    for (cfg, stp, t), g in cells.groupby(["config", "step_key", "task"], sort=True):
        stp = None if int(stp) < 0 else int(stp)
        g = g.sort_values("seed")
        for r in g.itertuples(index=False):
            runs.append((cfg, t, str(r.metric), int(r.seed), int(r.run_id), str(r.run), r.n,
                         float(r.score), float(r.se), float(r.low), float(r.high)))
        if g["seed"].nunique() < 2:
            continue
        sv = st.seed_variance(g["score"].to_numpy(float), g["se"].to_numpy(float))
        fits[(cfg, stp, t)] = (g, sv)
        scale = points_scale(*g["score"])
        step_txt = "" if stp is None else f" at step {stp}"
        sentence = _group_sentence(cfg, step_txt, t, sv, scale)
        groups.append((cfg, stp, t, dm[t], sv.k,
                       sv.mean, sv.sd_observed, sv.between_sd, sv.item_se, sv.seed_to_item_ratio,
                       sv.between_var, ", ".join(g["run"].astype(str)), sentence))
    comps = _comparisons(fits, dm, confidence, gap, alpha, power)
    mk = lambda rows, cols: pd.DataFrame(rows, columns=list(cols)) if rows else empty_frame(cols)  # noqa: E731
    return SeedReport(mk(groups, SEED_GROUP_COLUMNS), mk(runs, SEED_RUN_COLUMNS),
                      mk(comps, SEED_COMPARISON_COLUMNS), confidence, gap)


def _group_sentence(cfg: str, step_txt: str, t: str, sv, scale: float) -> str:
    """The sentence of one seed group (``stats.seed_variance`` result ``sv``)."""
    if np.isfinite(sv.seed_to_item_ratio) and sv.between_var <= 0:
        return (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} spreads no more than item "
                f"noise alone would make it (SD of the seed scores "
                f"{fmt(sv.sd_observed, scale)}, item SE of one run "
                f"{fmt(sv.item_se, scale)} {unit(scale)}): no seed effect is visible "
                f"with {sv.k} seeds.")
    if np.isfinite(sv.seed_to_item_ratio):
        cmp_txt = ("larger than" if sv.between_sd > sv.item_se else "smaller than")
        return (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} moves by an SD of "
                f"{fmt(sv.between_sd, scale)} {unit(scale)} beyond item noise, "
                f"{cmp_txt} the item SE of one run ({fmt(sv.item_se, scale)}).")
    return (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} has an SD of "
            f"{fmt(sv.sd_observed, scale)} {unit(scale)} (no item SE known, so "
            "seed and item noise cannot be told apart).")


def _comparisons(fits: dict, dm: dict[str, str], confidence: float, gap: float | None,
                 alpha: float, power: float) -> list[tuple]:
    """Every pair of configurations with >= 2 seeds on one task and step: B - A (B the later
    key in (task, step, configuration) order) as SEED_COMPARISON_COLUMNS rows."""
    comps = []
    keys = sorted(fits, key=lambda k: (k[2], str(k[1]), k[0]))
    for i, ka in enumerate(keys):
        for kb in keys[i + 1:]:
            if ka[2] != kb[2] or ka[1] != kb[1]:
                continue
            (ga, va), (gb, vb) = fits[ka], fits[kb]
            c = st.seed_comparison(ga["score"].to_numpy(float), gb["score"].to_numpy(float),
                                   ga["se"].to_numpy(float), gb["se"].to_numpy(float), confidence)
            want = gap if gap is not None else abs(c.diff)
            between = 0.5 * (max(va.between_var, 0.0) + max(vb.between_var, 0.0))
            item = 0.5 * ((va.item_var if np.isfinite(va.item_var) else 0.0)
                          + (vb.item_var if np.isfinite(vb.item_var) else 0.0))
            need = (st.seeds_needed(want, between, item, alpha, power)
                    if want > 0 and np.isfinite(c.low) else None)
            scale = points_scale(*ga["score"], *gb["score"])
            verdict = ("excludes 0" if c.low > 0 or c.high < 0 else "includes 0"
                       if np.isfinite(c.low) else "cannot be computed (no spread between seeds and "
                       "no item SE: the noise is unknown, not zero)")
            need_txt = ("" if need is None else
                        f" To detect a {fmt(want, scale)}-{unit(scale)[:-1]} gap with "
                        f"{power:.0%} power, train "
                        + (f"{need.seeds} seeds per configuration." if need.seeds is not None
                           else f"more than {st.seeds.MAX_SEEDS} seeds per configuration."))
            ci_txt = (f", {c.confidence:.0%} CI [{fmt(c.low, scale)}, {fmt(c.high, scale)}] "
                      f"(df {c.df:.1f}); the interval {verdict}." if np.isfinite(c.low)
                      else f"; the interval {verdict}.")
            sentence = (f"{kb[0]} - {ka[0]} on {ka[2]}: {fmt(c.diff, scale)} {unit(scale)}"
                        f"{ci_txt}{need_txt}")
            comps.append((ka[2], dm[ka[2]], ka[0], kb[0], va.k, vb.k, c.diff, c.se, c.df, c.low,
                          c.high, c.p_value, ", ".join(n for n, f in zip((ka[0], kb[0]), c.floored) if f),
                          None if need is None else need.seeds,
                          None if need is None else need.seeds_normal, want, sentence))
    return comps
