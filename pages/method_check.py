"""Method check: for the user's n and score (or discordance, or clusters), how often each
interval method offered actually covers the truth and how wide it is, as a chart and a table.

Numbers: ``evalcore.stats.coverage.method_check`` (exact binomial sums for one 0/1 score,
seeded simulation otherwise) and ``proportion_coverage_curve`` for the pointwise chart.
For an LLM judge with human labels (design "judge"): ``evalcore.stats.ppi_coverage``, PPI++
beside the judge-only and human-only intervals under a biased judge.
URL state: design, n, p, sd, dis, diff, pa, g, icc, items, fpass, ffail, conf, seed (so the Leaderboard and Compare
pages can link here with the user's numbers filled in).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.errors import EvalbarsError
from evalcore.stats import coverage as cov
from evalcore.stats.ppi_coverage import ppi_coverage
from ui import charts, common

DESIGNS = {"proportion": "One 0/1 score", "paired": "Two runs, paired 0/1 scores",
           "clustered": "One 0/1 score, clustered items",
           "mean": "One score of continuous values (partial credit)",
           "judge": "LLM judge with human labels (PPI)"}


@st.cache_data(show_spinner=False, max_entries=64)
def _report(n: int, kwargs: tuple) -> cov.CoverageReport:
    return cov.method_check(n, **dict(kwargs))


@st.cache_data(show_spinner=False, max_entries=64)
def _judge_report(n: int, kwargs: tuple) -> cov.CoverageReport:
    return ppi_coverage(n, **dict(kwargs))


@st.cache_data(show_spinner=False, max_entries=64)
def _curve(n: int, p: float, confidence: float) -> cov.CoverageCurve:
    return cov.proportion_coverage_curve(n, p, confidence)


common.ensure_app_navigation()
st.title("Method check")
st.caption("How often does each interval method contain the true value, for your number of "
           "items and your score? A 95% interval should cover 95% of the time; at small n or "
           "near 0 or 1 some methods cover far less. Computed exactly for one 0/1 score, "
           "simulated (seeded) otherwise.")

design = common.url_choice("Design", list(DESIGNS), "design", key="mc_design",
                           format_func=lambda d: DESIGNS[d], widget="radio")
c1, c2, c3, c4 = st.columns([2, 2, 2, 1])
n = common.url_numeric("number", "Human labels n" if design == "judge" else "Number of items n",
                       "n", key="mc_n", default=100,
                       min_value=2, max_value=cov.MAX_N_MEAN if design == "mean" else cov.MAX_N,
                       step=1, cast=int, container=c1)
kwargs: dict = {}
if design == "proportion":
    kwargs["p"] = common.url_numeric("slider", "Expected score p", "p", key="mc_p", default=0.7,
                                     min_value=0.01, max_value=0.99, step=0.01, container=c2)
elif design == "mean":
    kwargs["p"] = common.url_numeric("slider", "Expected mean score", "p", key="mc_p",
                                     default=0.6, min_value=0.05, max_value=0.95, step=0.01,
                                     container=c2)
    kwargs["sd"] = common.url_numeric("number", "sd of the item scores", "sd", key="mc_sd",
                                      default=0.25, min_value=0.01, max_value=0.49, step=0.01,
                                      container=c3,
                                      help="0/1 scores have sd sqrt(p(1-p)); partial credit less.")
elif design == "paired":
    kwargs["discordance"] = common.url_numeric(
        "slider", "Discordance rate (items the runs disagree on)", "dis", key="mc_dis",
        default=0.1, min_value=0.01, max_value=0.9, step=0.01, container=c2)
    kwargs["difference"] = common.url_numeric(
        "number", "True difference B − A", "diff", key="mc_diff", default=0.0,
        min_value=-0.9, max_value=0.9, step=0.01, container=c3,
        help="At most the discordance rate in size: the runs differ only where they disagree.")
    kwargs["p"] = common.url_numeric("slider", "Accuracy of run A", "pa", key="mc_pa",
                                     default=0.5, min_value=0.0, max_value=0.99, step=0.01,
                                     container=c2)
elif design == "judge":
    kwargs["n_items"] = common.url_numeric("number", "Judged items (all)", "items",
                                           key="mc_items", default=2000, min_value=4,
                                           max_value=1_000_000, step=1, cast=int, container=c2)
    kwargs["p"] = common.url_numeric("slider", "Human score p", "p", key="mc_p", default=0.6,
                                     min_value=0.01, max_value=0.99, step=0.01, container=c2)
    kwargs["false_pass"] = common.url_numeric(
        "slider", "Judge passes wrong items", "fpass", key="mc_fpass", default=0.3,
        min_value=0.0, max_value=0.95, step=0.01, container=c3,
        help="Share of the items people mark wrong that the judge marks right.")
    kwargs["false_fail"] = common.url_numeric(
        "slider", "Judge fails right items", "ffail", key="mc_ffail", default=0.05,
        min_value=0.0, max_value=0.95, step=0.01, container=c3)
else:
    kwargs["clusters"] = common.url_numeric("number", "Number of clusters G", "g", key="mc_g",
                                            default=8, min_value=2, max_value=5000, step=1,
                                            cast=int, container=c2)
    kwargs["icc"] = common.url_numeric("number", "Intra-cluster correlation (ICC)", "icc",
                                       key="mc_icc", default=0.1, min_value=0.0, max_value=0.95,
                                       step=0.01, container=c3)
    kwargs["p"] = common.url_numeric("slider", "Expected score p", "p", key="mc_p", default=0.5,
                                     min_value=0.01, max_value=0.99, step=0.01, container=c2)
confidence = common.confidence_choice("mc_conf", container=c4)
seed = common.url_numeric("number", "Seed", "seed", key="mc_seed", default=0, min_value=0,
                          max_value=2 ** 31 - 1, step=1, cast=int, container=c4)

try:
    with st.spinner("Computing coverage ...", show_time=True):
        build = _judge_report if design == "judge" else _report
        report = build(int(n), tuple(sorted({**kwargs, "confidence": confidence,
                                             "seed": seed}.items())))
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()

default = report.default
verdict_text = (f"**{common.md_escape(default.label)}** "
                f"{common.md_escape(cov.coverage_sentence(report))} "
                f"(nominal {confidence:.0%}): {common.md_escape(default.verdict)}.")
(st.warning if default.undercovers else st.success)(verdict_text)
st.caption(f"{common.md_escape(cov.describe(report))}. "
           + ("Exact: binomial probabilities summed over every k. " if report.exact else
              f"{report.replicates:,} simulated samples, seed {report.seed}. ")
           + f"Criterion: {common.md_escape(report.criterion)}; "
           + f"{common.md_escape(report.min_criterion)}.")

title = f"Coverage of {confidence:.0%} intervals, n = {report.n:,}" + (
    "" if report.window is None else
    f", averaged over {report.window[0]} in [{report.window[1]:.4g}, {report.window[2]:.4g}]")
fig = charts.coverage_plot(report.methods, nominal=report.nominal, tolerance=cov.TOLERANCE,
                           title=title)
common.show_chart(fig, f"coverage_{report.setting}_n{report.n}", "mc_chart")

average = "Coverage, average (%)" if report.window is not None else "Coverage (%)"
lowest = ("Lowest pointwise (%)" if report.exact else f"Lowest of {cov.SLICES} slices (%)")
rows = [{"Method": m.label, "Default": "yes" if m.is_default else "",
         average: 100 * m.coverage,
         "Monte Carlo SE (pp)": None if m.exact else 100 * m.coverage_se,
         lowest: 100 * m.min_coverage,
         "Monte Carlo SE of the lowest (pp)": None if m.exact else 100 * m.min_coverage_se,
         "Mean width (pp)": 100 * m.mean_width, "Verdict": m.verdict}
        for m in report.methods]
table = pd.DataFrame(rows).dropna(axis=1, how="all")   # exact: no Monte Carlo columns
# numbers as text with two decimals: a value that could not be estimated shows "–"
common.show_table(common.display_frame(table, decimals=2),
                  f"method_check_{report.setting}_n{report.n}", "mc_table")
for note in report.notes:
    st.caption(common.md_escape(note))

if report.setting == "proportion":
    p = float(kwargs["p"])
    curve = _curve(int(n), p, confidence)
    window = cov.neighbourhood_window(p)
    fig2 = charts.coverage_curve_plot(curve.p, dict(curve.coverage), labels=cov.LABELS,
                                      nominal=confidence, chosen_p=p, window=window, n=curve.n)
    common.show_chart(fig2, f"coverage_curve_n{curve.n}", "mc_curve")

with st.expander("How to read this"):
    st.markdown(
        "- **Coverage**: the share of repeated experiments whose interval contains the true "
        "value. Below nominal: the interval is overconfident. Above: honest but wider than "
        "needed (conservative).\n"
        "- **Averaged over a neighbourhood**: the coverage of any interval for a count jumps up "
        "and down as the true score moves (Brown, Cai & DasGupta 2001); you do not know your "
        "true score to within a few points, so the table averages over ±20% of it (on the side "
        "nearer 0 or 1), and every coverage figure says so. *Lowest* shows how far the jumps "
        "go: the pointwise minimum over that range (exact), or the lowest of 10 equal slices "
        "of it with its Monte Carlo SE (simulated).\n"
        f"- **Verdict**: within {100 * cov.TOLERANCE:g} points of nominal, undercovers, or "
        "overcovers.\n"
        "- **Mean width**: the average width of the interval, in percentage points (pp) "
        "of the score.\n"
        "- **Monte Carlo SE**: how far a simulated coverage may be off because the number of "
        "simulated samples is finite.\n"
        "- Command line: `python -m evalcore coverage --n N --p P` (see `--help`).")
