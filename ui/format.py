"""Numbers and user text as pages show them: Markdown-safe text, percent or units by the
product's one percent rule, intervals, p-values, n, method captions, run labels.

User strings (run names, prompts, responses, file names) are shown as text: through
``st.text``/``st.code``/``st.dataframe``, or through :func:`md_escape` inside Markdown
(captions, alerts, labels), or :func:`plot_text` inside Plotly labels."""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from evalcore import analysis
from evalcore.charts import plot_text as charts_plot_text
from evalcore.metrics import range_allows_percent

CONFIDENCES = (0.90, 0.95, 0.99)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:=&^\"'])")


def md_escape(value: Any) -> str:
    """``value`` as literal text inside Markdown: every ASCII punctuation mark that Markdown or
    Streamlit's directives (``:red[...]``, ``$...$``, ``:material/...:``) could read is
    backslash-escaped, newlines become spaces. Raw HTML is never enabled anywhere."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", text)


plot_text = charts_plot_text  # ``value`` for a Plotly label (``<``, ``>``, ``&`` as entities)


def is_proportion(values: Sequence[float] | pd.Series) -> bool:
    """True when every value lies in [0, 1] (shown in percent / percentage points)."""
    s = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return bool(len(s)) and bool(((s >= 0) & (s <= 1)).all())


def proportion_by(frame: pd.DataFrame, key: str, value: str = "score",
                  infos: dict | None = None) -> dict[str, bool]:
    """``{key value: is_proportion(frame[value] of that key)}`` for every key, in one pass;
    with ``infos`` ({key: MetricInfo}), a key whose metric is known to live on a range other
    than [0, 1] is never in percent (``evalcore.metrics.shown_in_percent``, the rule the
    CLI and the report use)."""
    if frame.empty:
        return {}
    x = pd.to_numeric(frame[value], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    codes, keys = pd.factorize(frame[key].astype(str), sort=False)   # missing key: -1
    seen = ~np.isnan(x)
    bad = seen & ~((x >= 0) & (x <= 1))
    has_key = codes >= 0
    codes, seen, bad = codes[has_key], seen[has_key], bad[has_key]
    n = len(keys)
    any_seen = np.bincount(codes, weights=seen, minlength=n) > 0
    any_bad = np.bincount(codes, weights=bad, minlength=n) > 0
    ok = {str(k): bool(s and not b) for k, s, b in zip(keys, any_seen, any_bad)}
    if infos:
        ok = {k: v and range_allows_percent(infos.get(k)) for k, v in ok.items()}
    return ok


def fmt_value(x: float | None, percent: bool, digits: int = 1, signed: bool = False) -> str:
    """A number for display: ``100*x`` with ``digits`` decimals when ``percent``, else 4 sig.
    digits; "–" for missing values."""
    if x is None or (x != x if type(x) is float else pd.isna(x)):   # NaN: x != x
        return "–"
    sign = "+" if signed else ""
    if percent:
        return f"{100 * float(x):{sign}.{digits}f}"
    return f"{float(x):{sign}.4g}"


def fmt_interval(est: float, low: float, high: float, percent: bool, digits: int = 1,
                 signed: bool = False) -> str:
    """``"est [low, high]"`` for display."""
    return (f"{fmt_value(est, percent, digits, signed)} "
            f"[{fmt_value(low, percent, digits, signed)}, {fmt_value(high, percent, digits, signed)}]")


def fmt_n(n: Any) -> str:
    """A count for display: "unknown" when the file did not say (never 0 or None)."""
    if n is None or pd.isna(n):
        return "unknown"
    return str(int(n))


N_COLUMNS = ("n", "n_reported", "n_items", "Our n", "n_shared", "Shared items")


def display_frame(df: pd.DataFrame, digits: int = 4, decimals: int | None = None
                  ) -> pd.DataFrame:
    """``df`` as text for a table: counts (``N_COLUMNS``) "unknown" when missing, floats to
    ``digits`` significant digits (or ``decimals`` fixed decimals) and "–" when missing,
    None as "–"; booleans and strings as they are. Tables never show the word None."""
    out: dict[Any, Any] = {}      # the columns, then one frame (not one insert per column)
    for c in df.columns:
        col = df[c]
        if c in N_COLUMNS:
            out[c] = [fmt_n(v) for v in col]
        elif pd.api.types.is_bool_dtype(col):
            out[c] = col
        elif pd.api.types.is_float_dtype(col):
            fmt = f".{decimals}f" if decimals is not None else f".{digits}g"
            out[c] = ["–" if pd.isna(v) else format(float(v), fmt) for v in col]
        elif pd.api.types.is_string_dtype(col) and not pd.api.types.is_object_dtype(col):
            out[c] = col.astype(object).where(col.notna(), "–")    # no per-value Arrow reads
        else:
            out[c] = ["–" if v is None or (not isinstance(v, (list, tuple, dict))
                                           and pd.isna(v)) else v for v in col]
    return pd.DataFrame(out, index=df.index, columns=df.columns)


def text_table(frame: pd.DataFrame, spec: dict[str, tuple[str, str, float]]) -> pd.DataFrame:
    """``frame``'s columns for people: ``spec`` maps a column to (its heading, a format, a
    factor) and lists the columns shown, in order. Formats: a Python number format applied
    to value * factor (".2f", "+.1f", ".4g"), "text" (as written) or "yes" (a flag);
    missing values are "–", so a table never shows None or NaN."""
    out = {}
    for col, (head, fmt, factor) in spec.items():
        values = frame[col].tolist()
        if fmt == "text":
            out[head] = ["–" if v is None or (isinstance(v, float) and v != v) else str(v)
                         for v in values]
        elif fmt == "yes":
            out[head] = ["yes" if v is True or v == 1 else "" for v in values]
        else:
            out[head] = ["–" if v is None or pd.isna(v) else format(float(v) * factor, fmt)
                         for v in values]
    return pd.DataFrame(out, index=frame.index)


def fmt_p(p: float | None) -> str:
    """A p-value for display (``<0.0001`` below that)."""
    if p is None or pd.isna(p):
        return "–"
    return "<0.0001" if p < 1e-4 else f"{float(p):.4f}"


def method_caption(method: str, confidence: float) -> str:
    """The interval method's full name and the confidence level, for captions."""
    label = analysis.METHOD_LABELS.get(method, method)
    return f"Intervals: **{label}**, {confidence:.0%} confidence."


def run_label(runs: pd.DataFrame) -> Callable[[str], str]:
    """format_func showing a run name with its model (plain text in widgets)."""
    models = dict(zip(runs["name"].astype(str).tolist(), runs["model"].tolist()))

    def label(name: str) -> str:
        model = models.get(name)
        return f"{name}  ({model})" if model and str(model) != name else name
    return label
