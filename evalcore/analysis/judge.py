"""LLM-judged tasks: the judge's score corrected with a random sample of human labels.

``judge_report`` reads one run's per-item scores on a task (the judge's scores: the task's
metric as the harness stored it), joins a human-labels CSV (``evalcore.judge_labels``) and
returns, from ``evalcore.stats.ppi``:

- ``judge_only``: the judge's mean over every item with the product's usual interval
  (Wilson for 0/1 scores, CLT otherwise): how noisy the judge's average is, not how far it
  is from what people would say;
- ``human_only``: the labelled items alone (Wilson for 0/1 labels, t otherwise);
- ``ppi``: the PPI++ estimate of the human mean with its interval and lambda, from the
  judge's scores on the N unlabelled items and the human-minus-judge residuals on the n
  labelled ones;
- agreement on the labelled items: the confusion table and Cohen's kappa (when both raters
  use at most ``KAPPA_MAX_CATEGORIES`` values), and the judge's bias mean(judge - human).

PPI assumes the labelled items are a uniformly random sample of the task's items; the report
says so (``SAMPLING_NOTE``) and warns when the judge's scores on the labelled items differ
from those on the rest (``stats.label_shift``, p < ``SHIFT_ALPHA``). Labels are used per
call and never stored.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from evalcore import stats as st
from evalcore.analysis._common import check_confidence, resolve_run, run_names
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError
from evalcore.judge_labels import HumanLabels, read_labels
from evalcore.stats.ppi import MIN_LABELLED
from evalcore.words import label

KAPPA_MAX_CATEGORIES = 10
SHIFT_ALPHA = 0.01
SAMPLING_NOTE = ("PPI's interval is valid only if the labelled items are a uniformly random "
                 "sample of the task's items (chosen before seeing any score); labels chosen "
                 "by difficulty, source or the judge's verdict bias the correction.")


@dataclass(frozen=True)
class JudgedScores:
    """One run's per-item scores on a task: ``item_ids[i]`` scored ``scores[i]``."""

    run: str
    run_id: int
    task: str
    metric: str
    item_ids: tuple[str, ...]
    scores: np.ndarray = field(repr=False)

    @property
    def binary(self) -> bool:
        return bool(np.isin(self.scores, (0.0, 1.0)).all())

    def label_range(self) -> tuple[float, float]:
        """Allowed human labels: [0, 1] when every judge score lies in [0, 1], else the range
        of the judge's scores on this task."""
        lo, hi = float(self.scores.min()), float(self.scores.max())
        return (0.0, 1.0) if lo >= 0.0 and hi <= 1.0 else (lo, hi)


@dataclass(frozen=True)
class JudgeReport:
    """Judge-only, human-only and PPI++ answers for one run and task (module docstring).

    kappa : with the confusion table (rows human, columns judge), or None when a rater uses
    more than KAPPA_MAX_CATEGORIES values. warnings : sentences for the reader. judges : the
    judge recorded in the task protocol at ingest (``judges_of``), {} when none.
    """

    run: str
    task: str
    metric: str
    confidence: float
    labels_file: str
    n_labelled: int
    n_unlabelled: int
    judge_only: st.Interval
    human_only: st.Interval | st.MeanT
    ppi: st.PPIMean
    bias: st.MeanT
    kappa: st.Kappa | None
    shift: st.LabelShift
    binary_labels: bool
    warnings: tuple[str, ...]
    sampling_note: str = SAMPLING_NOTE
    judges: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON answer of ``judge`` (keys documented in docs/cli.md)."""
        def iv(x: Any, label: str) -> dict[str, Any]:
            return {"estimate": x.estimate, "low": x.low, "high": x.high, "se": x.se,
                    "method": x.method, "label": label}
        ppi = iv(self.ppi, "PPI++: judge on every item, corrected by the human labels")
        ppi.update(lam=self.ppi.lam, lam_tuned=self.ppi.tuned)
        kappa = None
        if self.kappa is not None:
            kappa = {k: v for k, v in asdict(self.kappa).items()
                     if k not in ("table", "categories", "n")}
        return {
            "run": self.run, "task": self.task, "metric": self.metric,
            "judges": self.judges, "confidence": self.confidence, "labels_file": self.labels_file,
            "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled,
            "judge_only": iv(self.judge_only, "the judge's mean over every item (the "
                                              "judge's noise only, not its bias)"),
            "human_only": iv(self.human_only, "the human labels alone"),
            "ppi": ppi,
            "agreement": {
                "bias": {**iv(self.bias, "mean(judge - human) on the labelled items")},
                "kappa": kappa,
                "confusion": None if self.kappa is None else {
                    "categories": list(self.kappa.categories),
                    "rows": "human", "columns": "judge",
                    "counts": [list(r) for r in self.kappa.table]},
            },
            "sampling": {"assumption": self.sampling_note,
                         "judge_mean_labelled": self.shift.mean_labelled,
                         "judge_mean_unlabelled": self.shift.mean_unlabelled,
                         "p_value": self.shift.p_value, "test": self.shift.method},
            "warnings": list(self.warnings),
        }


def judges_of(protocol: dict | None) -> dict[str, dict[str, str]]:
    """The ``judges`` record of a task protocol ({scorer: {"model", "model_source",
    "template_sha256"}}, written at ingest for model-graded scorers), or {}."""
    got = (protocol or {}).get("judges")
    return got if isinstance(got, dict) else {}


def judge_text(judges: dict[str, dict[str, str]]) -> str:
    """"openai/gpt-4o (model_graded_qa, template 1a2b...)" for each judge, "; "-joined."""
    parts = []
    for scorer, j in sorted(judges.items()):
        tpl = j.get("template_sha256", "")
        tpl = "default template" if tpl == "scorer default" else f"template {tpl}"
        parts.append(f"{j.get('model', 'unknown')} ({scorer}, {tpl})")
    return "; ".join(parts)


def judged_cells(store, run_ids: list[int] | None = None) -> dict[tuple[str, str], str]:
    """(run name, task) -> the judge in words (``judge_text``) for every task of the runs
    whose protocol records a model-graded scorer: the cells the leaderboard marks."""
    table = store.task_protocol_table(None if run_ids is None else [int(r) for r in run_ids])
    names = run_names(store)
    out: dict[tuple[str, str], str] = {}
    for rid, task, proto in zip(table["run_id"].tolist(), table["task"].tolist(),
                                table["protocol"].tolist()):
        found = judges_of(proto if isinstance(proto, dict) else None)
        if found:
            out[(names.get(int(rid), str(rid)), str(task))] = judge_text(found)
    return out


def run_judges(store, run_id: int, task: str) -> dict[str, dict[str, str]]:
    """The judges recorded for one run's task ({} when none)."""
    table = store.task_protocol_table([int(run_id)], task=str(task))
    protos = table["protocol"].tolist()
    return judges_of(protos[0] if protos and isinstance(protos[0], dict) else None)


def judged_scores(store, run: str | int, task: str, metric: str | None = None) -> JudgedScores:
    """The run's per-item scores (mean over answers) on ``task``, with their item ids;
    ``metric`` None: the task's default metric with item scores."""
    rid = resolve_run(store, run)
    name = run_names(store).get(rid, str(rid))
    if metric is None:
        choice = task_metric(store, [rid], task, need="any", items_only=True)
        if choice.metric is None:
            raise AnalysisError(f"run {name!r} has no item scores on task {task!r}")
        metric = str(choice.metric)
    mat = store.item_matrices([(task, metric)], run_ids=[rid]).get((task, metric))
    if mat is None or mat.scores.size == 0:
        raise AnalysisError(f"run {name!r} has no item scores on task {task!r}, metric "
                            f"{metric!r}")
    col = np.asarray(mat.scores, dtype=float)[:, 0]
    keep = ~np.isnan(col)
    ids = store.item_labels(task, np.asarray(mat.items)[keep])
    return JudgedScores(name, rid, str(task), metric, tuple(map(str, ids)), col[keep])


def read_run_labels(judged: JudgedScores, data: bytes | str, source: str) -> HumanLabels:
    """The labels CSV checked against the run's item ids and the judge's scale."""
    low, high = judged.label_range()
    return read_labels(data, source, judged.item_ids, low=low, high=high,
                       what=f"task {judged.task!r} in run {judged.run!r}")


def _split(judged: JudgedScores, labels: HumanLabels
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human labels, judge on the labelled items, judge on the unlabelled items)."""
    at = {item: i for i, item in enumerate(judged.item_ids)}
    rows = np.array([at[i] for i in labels.item_ids], dtype=np.int64)
    rest = np.ones(judged.scores.size, dtype=bool)
    rest[rows] = False
    if rest.sum() < 2:
        raise AnalysisError(f"{labels.source}: every item but {int(rest.sum())} is labelled; "
                            "PPI needs at least 2 unlabelled items (use the human labels "
                            "alone)")
    return np.asarray(labels.values, dtype=float), judged.scores[rows], judged.scores[rest]


def _kappa(human: np.ndarray, judge: np.ndarray, confidence: float) -> st.Kappa | None:
    if max(np.unique(human).size, np.unique(judge).size) > KAPPA_MAX_CATEGORIES:
        return None
    return st.cohens_kappa(human, judge, confidence)


def _warnings(shift: st.LabelShift, ppi: st.PPIMean, human_only: Any) -> list[str]:
    out = []
    if shift.suspicious(SHIFT_ALPHA):
        out.append(f"the labelled items do not look like a random sample: the judge's mean is "
                   f"{shift.mean_labelled:.3g} on them and {shift.mean_unlabelled:.3g} on the "
                   f"rest (Mann-Whitney p = {shift.p_value:.2g}); PPI's interval assumes a "
                   "random sample")
    if ppi.lam == 0.0:
        out.append("lambda = 0: the judge's scores do not track the human labels here, so "
                   "the PPI++ interval is the human labels' own CLT interval")
    if ppi.high - ppi.low > human_only.high - human_only.low:
        out.append("the PPI++ interval is wider than the human-only one (the human-only "
                   "interval uses another method; the judge adds little here)")
    return out


def judge_report(store, run: str | int, task: str, data: bytes | str, source: str, *,
                 metric: str | None = None, confidence: float = 0.95) -> JudgeReport:
    """Judge-only, human-only and PPI++ answers for ``run`` on ``task`` with the labels CSV
    ``data`` (named ``source`` in messages); IngestError for a bad labels file."""
    check_confidence(confidence)
    judged = judged_scores(store, run, task, metric)
    labels = read_run_labels(judged, data, source)
    human, judge_lab, judge_unl = _split(judged, labels)
    binary_judge = judged.binary
    judge_only = st.score_interval(judged.scores, "wilson" if binary_judge else "clt",
                                   confidence)
    binary_labels = bool(np.isin(human, (0.0, 1.0)).all())
    human_only: st.Interval | st.MeanT = (
        st.wilson_interval(int(human.sum()), int(human.size), confidence) if binary_labels
        else st.t_mean_interval(human, confidence))
    ppi = st.ppi_mean(human, judge_lab, judge_unl, confidence)
    shift = st.label_shift(judge_lab, judge_unl)
    return JudgeReport(
        run=judged.run, task=judged.task, metric=judged.metric, confidence=confidence,
        labels_file=source, n_labelled=int(human.size), n_unlabelled=int(judge_unl.size),
        judge_only=judge_only, human_only=human_only, ppi=ppi,
        bias=st.judge_bias(human, judge_lab, confidence),
        kappa=_kappa(human, judge_lab, confidence), shift=shift, binary_labels=binary_labels,
        warnings=tuple(_warnings(shift, ppi, human_only)),
        judges=run_judges(store, judged.run_id, judged.task))


def estimate_rows(report: JudgeReport) -> list[dict[str, Any]]:
    """The three answers side by side (the CLI's table and the page's table): which, the
    estimate, the interval, its width, the method and the items behind it."""
    def row(which: str, x: Any, items: int, method: str) -> dict[str, Any]:
        return {"answer": which, "mean": x.estimate, "low": x.low, "high": x.high,
                "width": x.high - x.low, "items": items, "method": method}
    human_method = ("Wilson score interval" if report.binary_labels
                    else "t interval, n - 1 df")
    judge_method = label("score", report.judge_only.method)
    if report.judge_only.detail:
        judge_method += f" ({report.judge_only.detail})"
    return [
        row("judge only (the judge's mean, its noise only)", report.judge_only,
            report.n_labelled + report.n_unlabelled, judge_method),
        row("human labels only", report.human_only, report.n_labelled, human_method),
        row("PPI++ (judge corrected by the human labels)", report.ppi,
            report.n_labelled + report.n_unlabelled,
            f"{report.ppi.method}, lambda = {report.ppi.lam:.3f}"),
    ]


def agreement_sentences(report: JudgeReport) -> list[str]:
    """Bias and kappa in words, as the page and the CLI print them."""
    pct = 100 * report.confidence
    b = report.bias
    out = [f"Judge bias on the {report.n_labelled} labelled items: mean(judge - human) = "
           f"{b.estimate:+.4f} ({pct:g}% CI {b.low:+.4f} to {b.high:+.4f}, t interval)."]
    k = report.kappa
    if k is None:
        out.append(f"Cohen's kappa not computed: a rater uses more than "
                   f"{KAPPA_MAX_CATEGORIES} distinct values.")
    elif np.isnan(k.kappa):
        out.append("Cohen's kappa undefined: both raters give one value to every labelled "
                   "item.")
    else:
        out.append(f"Agreement: {100 * k.observed:.1f}% of the labelled items; Cohen's kappa "
                   f"= {k.kappa:.3f} ({pct:g}% CI {k.low:.3f} to {k.high:.3f}; "
                   f"{KAPPA_SE_NAME}).")
    return out


KAPPA_SE_NAME = "Fleiss-Cohen-Everitt 1969 SE"


# ---------------------------------------------------------------------------------------
# two runs graded by one judge: the paired difference corrected with human labels
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class JudgeComparison:
    """B - A for two runs on the same items: the judge-only paired difference (the Compare
    page's row for this task), the human labels alone (items labelled in both runs) and
    PPI++ on the per-item differences. ``same_judge``: both runs record the same judge and
    template (False: the difference mixes models and instruments; None: not recorded)."""

    run_a: str
    run_b: str
    task: str
    metric: str
    confidence: float
    n_shared: int
    n_labelled: int
    n_unlabelled: int
    judge_only: dict[str, Any]
    human_only: dict[str, Any]
    ppi: st.PPIMean
    same_judge: bool | None
    judges_a: dict[str, dict[str, str]]
    judges_b: dict[str, dict[str, str]]
    warnings: tuple[str, ...]
    sampling_note: str = SAMPLING_NOTE

    def to_dict(self) -> dict[str, Any]:
        """The JSON answer of ``judge --vs`` (keys documented in docs/cli.md)."""
        def row(r: dict[str, Any], label: str) -> dict[str, Any]:
            return {"estimate": r["diff"], "low": r["low"], "high": r["high"],
                    "method": r["interval_method"], "p_value": r["p_value"], "label": label}
        p = self.ppi
        return {"run_a": self.run_a, "run_b": self.run_b, "task": self.task,
                "metric": self.metric, "confidence": self.confidence,
                "n_shared": self.n_shared, "n_labelled": self.n_labelled,
                "n_unlabelled": self.n_unlabelled,
                "judge_only": row(self.judge_only, "the judge's paired difference B - A (the "
                                                   "Compare page's interval)"),
                "human_only": row(self.human_only, "the human labels' paired difference on "
                                                   "the items labelled in both runs"),
                "ppi": {"estimate": p.estimate, "low": p.low, "high": p.high, "se": p.se,
                        "method": p.method, "lam": p.lam, "lam_tuned": p.tuned,
                        "label": "PPI++ on per-item differences"},
                "same_judge": self.same_judge, "judges_a": self.judges_a,
                "judges_b": self.judges_b, "sampling": {"assumption": self.sampling_note},
                "warnings": list(self.warnings)}


def _judge_warning(ja: dict, jb: dict) -> tuple[bool | None, list[str]]:
    if not ja or not jb:
        return None, ["no judge is recorded for one of the runs: whether both were graded by "
                      "the same judge cannot be checked"]
    def instrument(j: dict) -> dict:
        return {k: (v.get("model"), v.get("template_sha256")) for k, v in j.items()}
    if instrument(ja) == instrument(jb):
        return True, []
    return False, [f"the runs were graded by different judges or templates ({judge_text(ja)} "
                   f"vs {judge_text(jb)}): not measured with the same instrument, so the "
                   "difference mixes the models with the judges"]


def judge_compare(store, run_a: str | int, run_b: str | int, task: str, data_a: bytes | str,
                  source_a: str, data_b: bytes | str, source_b: str, *,
                  metric: str | None = None, confidence: float = 0.95) -> JudgeComparison:
    """B - A corrected by PPI++: human labels of each run (two CSVs, checked against each
    run's items), paired on the items both runs scored and both files label; the judge's
    per-item differences on the other shared items are the unlabelled part."""
    from evalcore.analysis.compare import paired_cell, paired_items_row
    from evalcore.analysis.compare_rows import SharedItems
    check_confidence(confidence)
    a = judged_scores(store, run_a, task, metric)
    b = judged_scores(store, run_b, task, a.metric)
    labels_a = read_run_labels(a, data_a, source_a).as_dict()
    labels_b = read_run_labels(b, data_b, source_b).as_dict()
    shared = paired_cell(store, a.run_id, b.run_id, task, a.metric)
    if len(shared) < 4:
        raise AnalysisError(f"runs {a.run!r} and {b.run!r} share {len(shared)} items of "
                            f"{task!r}; a paired correction needs more")
    ids = [str(i) for i in store.item_labels(task, shared.items)]
    both = np.array([i in labels_a and i in labels_b for i in ids])
    if both.sum() < MIN_LABELLED:
        raise AnalysisError(f"{source_a} and {source_b} label {int(both.sum())} shared items "
                            "in common; the paired correction needs at least 10")
    if (~both).sum() < 2:
        raise AnalysisError("every shared item is labelled in both runs; PPI needs at least 2 "
                            "unlabelled items (use the human labels alone)")
    ya = np.array([labels_a[i] for i, k in zip(ids, both) if k])
    yb = np.array([labels_b[i] for i, k in zip(ids, both) if k])
    judge_row = paired_items_row(shared, task, a.metric, confidence, None, a.run, b.run)
    keys = np.asarray(shared.items)[both]
    human_row = paired_items_row(SharedItems(keys, ya, yb, None), task, "human labels",
                                 confidence, None, a.run, b.run)
    ppi = st.ppi_paired_difference(ya, yb, shared.x_a[both], shared.x_b[both],
                                   shared.x_a[~both], shared.x_b[~both], confidence)
    ja, jb = run_judges(store, a.run_id, task), run_judges(store, b.run_id, task)
    same, warnings = _judge_warning(ja, jb)
    return JudgeComparison(a.run, b.run, str(task), a.metric, confidence, len(shared),
                           int(both.sum()), int((~both).sum()), judge_row, human_row, ppi,
                           same, ja, jb, tuple(warnings))


def comparison_rows(cmp: JudgeComparison) -> list[dict[str, Any]]:
    """The three differences side by side (CLI table and page)."""
    d = cmp.to_dict()
    return [{"answer": label, "difference": d[k]["estimate"], "low": d[k]["low"],
             "high": d[k]["high"], "width": d[k]["high"] - d[k]["low"], "items": items,
             "method": d[k]["method"]}
            for k, label, items in (
                ("judge_only", "judge only (paired, every shared item)", cmp.n_shared),
                ("human_only", "human labels only (paired)", cmp.n_labelled),
                ("ppi", "PPI++ (judge differences corrected by the labels)", cmp.n_shared))]
