"""Collect what a report shows from ``evalcore.analysis`` (no statistics computed here).

``build_report(store, spec)`` calls the same analysis functions the pages and the CLI call
(``leaderboard``, ``compare``, ``discordant_items``, ``repeats``, ``clusters``,
``plan_from_pair``) and the planning formulas of ``evalcore.stats``, and returns a frozen
``Report`` holding their results unchanged, plus the provenance the store records (each
run's files with SHA-256 and upload time, harness and version). Rendering is
``evalcore.report.html``; the methods paragraph is ``evalcore.report.methods``.

Sections are optional (``ReportSpec.sections``); a section whose data is missing (no
comparison asked for, no run with several answers per item, no cluster key) is left out and
the reason is recorded in ``Report.notes``.

Runs without item scores (summary-only: a results file without its samples) are gathered in
``Report.summary_only``, one group per checkpoint series or seed configuration
(``analysis.run_groups``), so the rendered leaderboard can name them in one line and list
them in an appendix when runs with item scores are on the board.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from evalcore import __version__, analysis
from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.redact import mask_location

SECTIONS = ("leaderboard", "comparisons", "repeats", "planner", "methods", "provenance")
DEFAULT_DELTAS = (0.01, 0.02, 0.05)   # gaps (metric units) the planner section sizes for
DEFAULT_GAP = 0.02                    # the gap of interest the key findings size for
DEFAULT_POWER = 0.8
MAX_REPEATS = 8      # repeats / cluster rows shown at most (the rest is counted in a note)


@dataclass(frozen=True)
class ReportSpec:
    """What to put in a report.

    runs : run names/ids (None: every run in the store).
    tasks : task names (None: every task of those runs).
    comparisons : (run_a, run_b) pairs; each becomes a comparison section (B - A).
    method, confidence, n_resamples, seed : leaderboard interval method and its settings
        (``analysis.leaderboard``); confidence is used everywhere.
    adjust : p-value adjustment across tasks in a comparison ("holm" or "bh").
    deltas : gaps (metric units, 0.02 = 2 points) the planner section gives item counts for.
    gap : the gap of interest (metric units) whose item counts the key findings give; it is
        sized with the deltas.
    n_examples : example disagreements shown per comparison and cell (b and c), taken from
        the compared tasks in turn.
    sections : which of ``SECTIONS`` to include.
    """

    runs: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    comparisons: tuple[tuple[str, str], ...] = ()
    method: str = "wilson"
    confidence: float = 0.95
    n_resamples: int = 2000
    seed: int = 0
    adjust: str = "holm"
    deltas: tuple[float, ...] = DEFAULT_DELTAS
    gap: float = DEFAULT_GAP
    n_examples: int = 3
    sections: tuple[str, ...] = SECTIONS
    title: str = "Evaluation report"


@dataclass(frozen=True)
class ComparisonSection:
    """One pairwise comparison: the ``analysis.Comparison`` and a few of its disagreements.

    ``examples``: up to ``ReportSpec.n_examples`` rows of ``discordant_items`` per cell (b:
    only B right, c: only A right), taken from the compared tasks in turn (the first item of
    each task, then the second, ...), with ``task`` and ``cell`` columns. ``n_discordant``:
    task -> (b, c), the counts they were chosen from."""

    comparison: analysis.Comparison
    examples: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_discordant: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRow:
    """Planner numbers for one pair of runs on one task: the pilot estimates
    (``analysis.plan_from_pair``), the MDE at the pilot's n and items needed per gap."""

    pilot: analysis.PlanFromPair
    source: str                       # "comparison" or "two best runs on the leaderboard"
    alpha: float
    power: float
    design_effect: float
    mde: float                        # at the pilot's n
    required: tuple[tuple[float, int | None], ...]   # (delta, items) ; None when sd_diff = 0


@dataclass(frozen=True)
class RunProvenance:
    """A run as the store records it: harness, version, upload time and source files."""

    run_id: int
    name: str
    model: str | None
    source_format: str
    harness: str | None
    harness_version: str | None
    created_at: str
    files: tuple[dict, ...]          # name, sha256, size, format, added_at
    cluster_keys: dict = field(default_factory=dict)   # task -> cluster key


@dataclass(frozen=True)
class SummaryOnlyGroup:
    """Runs of the leaderboard without item scores that belong together: a checkpoint
    series (``kind`` "checkpoint series", runs with a training step), a seed configuration
    ("seeds"), or the remaining ones ("other", ``name`` empty); ``name`` is the series or
    configuration (``analysis.run_groups``)."""

    kind: str
    name: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Report:
    """Everything a report shows, as computed by the analysis layer."""

    spec: ReportSpec
    created_at: str
    version: str
    store_path: str                  # the store's location, passwords and keys masked
    leaderboard: analysis.Leaderboard | None
    comparisons: tuple[ComparisonSection, ...]
    repeats: tuple[analysis.RepeatsReport, ...]
    clusters: tuple[analysis.ClusterReport, ...]
    plans: tuple[PlanRow, ...]
    provenance: tuple[RunProvenance, ...]
    notes: tuple[str, ...] = ()
    summary_only: tuple[SummaryOnlyGroup, ...] = ()
    judged: dict[tuple[str, str], str] = field(default_factory=dict)   # analysis.judged_cells

    def collapsed_runs(self) -> set[str]:
        """Summary-only runs the leaderboard names in one line instead of a row: all of them
        when the board also has runs with item scores (they alone carry paired tests and
        tiers), none when every run is summary-only (then they are the board)."""
        board = self.leaderboard
        if board is None or not len(board.cells) or not self.summary_only:
            return set()
        runs = {r for g in self.summary_only for r in g.runs}
        with_items = set(map(str, board.cells.loc[board.cells["has_items"].astype(bool), "run"]))
        return runs if with_items - runs else set()

    def has(self, section: str) -> bool:
        """True when ``section`` was asked for and has something to show."""
        if section not in self.spec.sections:
            return False
        return {"leaderboard": self.leaderboard is not None and len(self.leaderboard.cells) > 0,
                "comparisons": bool(self.comparisons),
                "repeats": bool(self.repeats or self.clusters),
                "planner": bool(self.plans),
                "methods": True,
                "provenance": bool(self.provenance)}.get(section, False)


def build_report(store, spec: ReportSpec | None = None) -> Report:
    """Run the analyses ``spec`` asks for and gather their results and the provenance.

    Raises AnalysisError for an unknown run or task, an unknown section, or a store without
    runs. Comparisons that cannot be computed (no shared items) raise as well: a report
    should not silently drop a comparison the user asked for.
    """
    spec = spec or ReportSpec()
    if not (0.0 < float(spec.gap) and all(float(d) > 0 for d in spec.deltas)):
        raise AnalysisError(f"the gaps to plan for must be positive (gap {spec.gap}, deltas "
                            f"{', '.join(map(str, spec.deltas))})")
    if int(spec.n_examples) < 0:
        raise AnalysisError(f"n_examples must be 0 or more, got {spec.n_examples}")
    unknown = [s for s in spec.sections if s not in SECTIONS]
    if unknown:
        raise AnalysisError(f"unknown report section(s) {', '.join(unknown)}; "
                            f"choose from {', '.join(SECTIONS)}")
    runs = store.runs()
    if runs.empty:
        raise AnalysisError("the store is empty: ingest some results before making a report")
    names = {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}
    ids = ([analysis.resolve_run(store, r) for r in spec.runs] if spec.runs
           else [int(r) for r in runs["run_id"]])
    ids = list(dict.fromkeys(ids))
    task_table = store.tasks(ids)
    known_tasks = set(map(str, task_table["task"]))
    if spec.tasks:
        missing = [t for t in spec.tasks if t not in known_tasks]
        if missing:
            raise AnalysisError(f"task(s) {', '.join(missing)} not in the chosen runs; they "
                                f"have: {', '.join(sorted(known_tasks)) or 'none'}")
    tasks = list(spec.tasks) if spec.tasks else sorted(known_tasks)
    notes: list[str] = []

    board = None
    summary_only: tuple[SummaryOnlyGroup, ...] = ()
    if "leaderboard" in spec.sections:
        board = _leaderboard(store, spec, ids, tasks, known_tasks, notes)
        summary_only = _summary_only(store, board)
    sections = []
    if "comparisons" in spec.sections:
        for a, b in spec.comparisons:
            sections.append(_comparison(store, spec, a, b))
    reps, cls = ((), ())
    if "repeats" in spec.sections:
        reps, cls = _repeats_and_clusters(store, spec, ids, tasks, task_table, names, notes)
    plans: tuple[PlanRow, ...] = ()
    if "planner" in spec.sections:
        plans = _plans(store, spec, sections, board, notes)
    prov = tuple(_provenance(store, rid) for rid in ids) if (
        "provenance" in spec.sections or "methods" in spec.sections) else ()
    return Report(spec=spec, created_at=_dt.datetime.now(_dt.timezone.utc).strftime(
                      "%Y-%m-%d %H:%M UTC"),
                  version=__version__,
                  store_path=mask_location(str(getattr(store, "location", ""))),
                  leaderboard=board, comparisons=tuple(sections), repeats=reps, clusters=cls,
                  plans=plans, provenance=prov, notes=tuple(notes),
                  summary_only=summary_only,
                  judged=analysis.judged_cells(store, ids) if board is not None else {})


# ---- sections ------------------------------------------------------------------------------

def _leaderboard(store, spec: ReportSpec, ids: list[int], tasks: list[str],
                 known_tasks: set[str], notes: list[str]) -> analysis.Leaderboard:
    one = tasks[0] if len(tasks) == 1 else None
    board = analysis.leaderboard(store, task=one, method=spec.method,
                                 confidence=spec.confidence, runs=ids,
                                 n_resamples=spec.n_resamples, seed=spec.seed)
    if one is not None or set(tasks) >= known_tasks:
        return board
    # a subset of tasks: keep their rows; the macro average is taken over those tasks with
    # the analysis layer's own rule, and tiers of the all-task average are dropped
    keep = set(tasks)
    cells = board.cells[board.cells["task"].isin(keep)].reset_index(drop=True)
    avg_notes: list[str] = []
    averages = analysis.macro_averages(cells, spec.confidence, avg_notes, board.metric_info,
                                       [], board.groups)
    tiers = board.tiers[board.tiers["task"].isin(keep)].reset_index(drop=True)
    ranks = board.ranks[board.ranks["task"].isin(keep)].reset_index(drop=True)
    dropped = sorted(known_tasks - keep)
    kept_notes = [n for n in board.notes if not any(n.startswith(f"{t}:") for t in dropped)]
    notes.append(f"leaderboard restricted to {len(keep)} task(s); the macro average is over "
                 f"those tasks and no tier is shown for it")
    task_notes = board.task_notes
    if len(task_notes) and "task" in task_notes:
        task_notes = task_notes[task_notes["task"].isin(keep)].reset_index(drop=True)
    return replace(board, cells=cells, averages=averages, tiers=tiers, ranks=ranks,
                   notes=tuple(kept_notes + avg_notes), task_notes=task_notes,
                   metrics_by_task={t: m for t, m in board.metrics_by_task.items() if t in keep})


def _comparison(store, spec: ReportSpec, run_a: str, run_b: str) -> ComparisonSection:
    """The comparison of two runs as ``analysis.compare`` gives it (over the chosen tasks
    both runs have, when the spec names tasks), with a few disagreements per task."""
    task = spec.tasks[0] if spec.tasks and len(spec.tasks) == 1 else None
    cmp = analysis.compare(store, run_a, run_b, task=task, confidence=spec.confidence,
                           adjust=spec.adjust)
    if spec.tasks and task is None:
        chosen = [str(t) for t in cmp.per_task["task"] if str(t) in set(spec.tasks)]
        if not chosen:
            raise AnalysisError(f"{run_a!r} and {run_b!r} share none of the tasks "
                                f"{', '.join(spec.tasks)}")
        if len(chosen) < len(cmp.per_task):
            # the subset is compared as its own family: p-values adjusted over it, verdicts
            # on them (one task: no adjustment)
            cmp = analysis.compare(store, run_a, run_b, confidence=spec.confidence,
                                   adjust=spec.adjust,
                                   **({"task": chosen[0]} if len(chosen) == 1
                                      else {"tasks": chosen}))
    per_cell: dict[str, list[pd.DataFrame]] = {"b": [], "c": []}
    counts = {}
    for row in cmp.per_task.itertuples(index=False):
        if pd.isna(row.b):
            continue
        for cell in per_cell:
            items = analysis.discordant_items(store, run_a, run_b, str(row.task),
                                              str(row.metric), cell=cell)
            per_cell[cell].append(items.head(spec.n_examples).assign(task=str(row.task),
                                                                     cell=cell))
        counts[str(row.task)] = (int(row.b), int(row.c))
    examples = pd.concat([_in_turn(frames, spec.n_examples) for frames in per_cell.values()],
                         ignore_index=True) if counts else pd.DataFrame()
    return ComparisonSection(comparison=cmp, examples=examples, n_discordant=counts)


def _in_turn(frames: list[pd.DataFrame], k: int) -> pd.DataFrame:
    """The first ``k`` rows taking one row of each frame in turn (first rows first)."""
    if not frames:
        return pd.DataFrame()
    ranked = pd.concat([f.assign(_turn=range(len(f)), _frame=i) for i, f in enumerate(frames)],
                       ignore_index=True)
    return (ranked.sort_values(["_turn", "_frame"], kind="stable").head(k)
            .drop(columns=["_turn", "_frame"]).reset_index(drop=True))


def _summary_only(store, board: analysis.Leaderboard) -> tuple[SummaryOnlyGroup, ...]:
    """The board's runs without any item score, grouped by checkpoint series and seed
    configuration (``analysis.run_groups``); groups of one run join "other"."""
    cells = board.cells
    if not len(cells):
        return ()
    has = cells.groupby(cells["run"].astype(str))["has_items"].agg(lambda v: bool(v.any()))
    bare = [r for r in dict.fromkeys(cells["run"].astype(str)) if not has[r]]
    if not bare:
        return ()
    groups = analysis.run_groups(store)
    groups = groups[groups["run"].astype(str).isin(bare)]
    found: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for g in groups.itertuples(index=False):
        # a run with a step belongs to its checkpoint series, else one with a seed to its
        # seed configuration; runs in step (seed) order
        if not pd.isna(g.step):
            key, order = ("checkpoint series", str(g.config)), float(g.step)
        elif not pd.isna(g.seed):
            key, order = ("seeds", str(g.config)), float(g.seed)
        else:
            key, order = ("other", ""), 0.0
        found.setdefault(key, []).append((order, str(g.run)))
    grouped = set(groups["run"].astype(str))
    out, other = [], [r for r in bare if r not in grouped]
    for (kind, cfg), members in sorted(found.items()):
        runs = [r for _, r in sorted(members, key=lambda m: m[0])]
        if kind == "other" or len(runs) < 2:
            other += runs
        else:
            out.append(SummaryOnlyGroup(kind=kind, name=cfg, runs=tuple(runs)))
    if other:
        out.append(SummaryOnlyGroup(kind="other", name="", runs=tuple(dict.fromkeys(other))))
    return tuple(out)


def _repeats_and_clusters(store, spec, ids, tasks, task_table, names, notes):
    reps, cls = [], []
    tt = task_table[task_table["task"].isin(tasks) & task_table["has_items"].fillna(False)]
    multi = tt[tt["k_max"].fillna(1).astype(float) >= 2][["run_id", "task"]].drop_duplicates()
    clustered = tt[tt["has_cluster"].fillna(False).astype(bool)][["run_id", "task"]
                                                                  ].drop_duplicates()
    for frame, fn, out, what in ((multi, analysis.repeats, reps, "several answers per item"),
                                 (clustered, analysis.clusters, cls, "a cluster key")):
        pairs = list(frame.itertuples(index=False))
        for r in pairs[:MAX_REPEATS]:
            try:
                out.append(fn(store, int(r.run_id), str(r.task), confidence=spec.confidence))
            except AnalysisError as exc:
                notes.append(f"{names.get(int(r.run_id))} / {r.task}: {exc}")
        if len(pairs) > MAX_REPEATS:
            notes.append(f"{len(pairs)} run x task cells have {what}; the first "
                         f"{MAX_REPEATS} are shown")
    return tuple(reps), tuple(cls)


def _plans(store, spec, sections, board, notes) -> tuple[PlanRow, ...]:
    """Pilot pairs: every compared pair and task; without comparisons, the two best runs of
    each task with item-level data on the leaderboard."""
    pairs: list[tuple[str, str, str, str]] = []
    for sec in sections:
        for t in sec.comparison.per_task["task"]:
            pairs.append((sec.comparison.run_a, sec.comparison.run_b, str(t), "comparison"))
    if not pairs and board is not None and len(board.cells):
        cells = board.cells[board.cells["has_items"].astype(bool)]
        for t, g in cells.groupby("task", sort=True):
            top = g.sort_values("score", ascending=False)["run"].astype(str).tolist()[:2]
            if len(top) == 2:
                pairs.append((top[1], top[0], str(t), "two best runs on the leaderboard"))
    alpha = 1.0 - spec.confidence
    deltas = sorted({float(d) for d in (*spec.deltas, spec.gap)})
    rows = []
    for a, b, t, source in pairs:
        try:
            pilot = analysis.plan_from_pair(store, a, b, t)
        except AnalysisError as exc:
            notes.append(f"planner: {a} vs {b} on {t}: {exc}")
            continue
        deff = float(pilot.design_effect) if pilot.design_effect else 1.0
        deff = max(deff, 1.0) if np.isfinite(deff) else 1.0
        sd = float(pilot.sd_diff)
        if not (np.isfinite(sd) and sd > 0):
            notes.append(f"planner: {a} vs {b} on {t}: the runs never disagree (sd of d = 0); "
                         f"no sample size can be derived from this pilot")
            continue
        mde = float(st.minimum_detectable_effect(pilot.n, sd_diff=sd, alpha=alpha,
                                                 power=DEFAULT_POWER, design_effect=deff))
        req = tuple((float(d), int(st.required_items(float(d), sd_diff=sd, alpha=alpha,
                                                     power=DEFAULT_POWER, design_effect=deff)))
                    for d in deltas)
        rows.append(PlanRow(pilot=pilot, source=source, alpha=alpha, power=DEFAULT_POWER,
                            design_effect=deff, mde=mde, required=req))
    return tuple(rows)


def _provenance(store, rid: int) -> RunProvenance:
    info = store.run_info(rid)
    keys: dict[str, str] = {}
    proto = info.get("protocol") or {}
    if isinstance(proto, dict) and proto.get("cluster_key") and proto.get("task"):
        keys[str(proto["task"])] = str(proto["cluster_key"])
    tp = store.task_protocols(rid)
    for t, p in zip(tp["task"], tp["protocol"]):
        if isinstance(p, dict) and p.get("cluster_key"):
            keys[str(t)] = str(p["cluster_key"])
    files = tuple({"name": str(f["name"]), "sha256": str(f["sha256"]), "size": int(f["size"]),
                   "format": str(f["format"]), "added_at": _when(f["added_at"])}
                  for f in info.get("files", []))
    return RunProvenance(run_id=int(rid), name=str(info["name"]),
                         model=_opt(info.get("model")), source_format=str(info["source_format"]),
                         harness=_opt(info.get("harness")) or _opt(proto.get("harness")
                                                                   if isinstance(proto, dict)
                                                                   else None),
                         harness_version=_opt(info.get("harness_version")),
                         created_at=_when(info.get("created_at")), files=files,
                         cluster_keys=keys)


def _opt(v) -> str | None:
    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    s = str(v)
    return s or None


def _when(v) -> str:
    if v is None:
        return ""
    try:
        return pd.Timestamp(v).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError):
        return str(v)
