"""Tables as text for export: Markdown, LaTeX (booktabs), interval cells and file-name slugs.

One copy for every surface that exports a table: the CLI's ``--format markdown|latex``, the
pages' download buttons (``ui.common``) and the report's LaTeX tables (``evalcore.report.latex``).
The writers take cells that are already text, so each surface keeps its own number format
(the terminal's 4 significant digits, the pages' ``%.4f``, the report's percent) while the
escaping and the table layout are the same everywhere:

* ``markdown_table``: a GitHub-flavoured Markdown table; backslashes, pipes and line breaks in
  cells are escaped, so a cell never splits into two columns or two rows.
* ``latex_tabular``: a booktabs ``tabular`` (``\\toprule``/``\\midrule``/``\\bottomrule``;
  needs ``\\usepackage{booktabs}``); cells are LaTeX already (``latex_escape`` for user text).
* ``latex_escape``: LaTeX's special characters, also ``<`` and ``>`` (which OT1-encoded fonts
  print as other glyphs), written as commands; line breaks become spaces.
* ``interval_cell``: an estimate with its interval, ``71.9 [68.1, 75.5]`` or ``71.9 $\\pm$ 3.8``.
* ``to_markdown`` / ``to_latex``: a DataFrame export as the pages offer it (``to_latex`` joins
  an estimate and its ``low``/``high`` into one interval cell and names a single method).
* ``slug``: a file-name-safe version of a title.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Sequence

import pandas as pd

STYLES = ("brackets", "pm")
# estimate columns that, with ``low`` and ``high`` beside them, become one interval cell
LATEX_ESTIMATES = ("score", "diff", "estimate", "mean")

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}"}


def slug(text: Any, fallback: str = "table") -> str:
    """A file-name-safe version of ``text``: runs of other characters than letters, digits,
    ``.``, ``_`` and ``-`` become ``_``, at most 80 characters; ``fallback`` when nothing is
    left."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_")[:80] or fallback


def latex_escape(value: Any) -> str:
    """``value`` as LaTeX text (special characters escaped, newlines as spaces)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch)
                   for ch in str(value).replace("\n", " ").replace("\r", " "))


def _markdown_escape(text: str) -> str:
    """A cell's text inside a Markdown table: the backslash first, so the escape of a pipe
    cannot be undone by a backslash before it."""
    return (text.replace("\\", "\\\\").replace("|", "\\|")
            .replace("\r", " ").replace("\n", " "))


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table of text cells (no trailing newline)."""
    head = "| " + " | ".join(_markdown_escape(str(c)) for c in header) + " |"
    rule = "| " + " | ".join("---" for _ in header) + " |"
    body = ["| " + " | ".join(_markdown_escape(v) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def latex_tabular(header: Sequence[str], rows: Iterable[Sequence[str]], spec: str) -> str:
    """A booktabs ``tabular`` of LaTeX cells with column alignment ``spec`` (no trailing
    newline); the caller escapes user text (``latex_escape``)."""
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(header) + " \\\\",
             "\\midrule"]
    lines += [" & ".join(row) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


# ---- interval cells ------------------------------------------------------------------------

def is_missing(x: Any) -> bool:
    """True for None, NaN, NA and NaT (False for values pandas cannot test)."""
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def format_number(x: float, scale: float, digits: int, signed: bool = False) -> str:
    """``x * scale`` for a LaTeX cell: ``digits`` decimals in percent (``scale`` 100), else 4
    significant digits; minus (and plus when ``signed``) in math mode."""
    v = float(x) * scale
    if scale == 100.0:
        text = f"{v:{'+' if signed else ''}.{digits}f}"
    else:
        text = f"{v:{'+' if signed else ''}.4g}"
    return text.replace("-", "$-$") if not signed else text.replace("-", "$-$").replace("+", "$+$")


def interval_cell(est: Any, low: Any, high: Any, *, scale: float, style: str, digits: int = 1,
                  signed: bool = False) -> tuple[str, bool]:
    """(cell text, asymmetric) of an estimate with its interval in ``style``.

    ``"brackets"``: ``71.9 [68.1, 75.5]``; ``"pm"``: ``71.9 $\\pm$ 3.8`` when the interval is
    symmetric to the printed digit, else ``71.9$^{+3.6}_{-3.8}$`` (asymmetric is then True),
    because one half-width would misstate one side. A missing estimate is ``--``; a missing
    bound leaves the estimate alone.
    """
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; use one of {', '.join(STYLES)}")
    if is_missing(est):
        return "--", False
    if is_missing(low) or is_missing(high):
        return format_number(est, scale, digits, signed), False
    if style == "brackets":
        return (f"{format_number(est, scale, digits, signed)} "
                f"[{format_number(low, scale, digits, signed)}, "
                f"{format_number(high, scale, digits, signed)}]"), False
    up, down = (float(high) - float(est)) * scale, (float(est) - float(low)) * scale
    q = 10 ** digits if scale == 100.0 else None
    same = (round(up * q) == round(down * q)) if q else math.isclose(up, down, rel_tol=1e-3)
    if same:
        half = f"{up:.{digits}f}" if scale == 100.0 else f"{up:.3g}"
        return f"{format_number(est, scale, digits, signed)} $\\pm$ {half}", False
    fu = f"{up:.{digits}f}" if scale == 100.0 else f"{up:.3g}"
    fd = f"{down:.{digits}f}" if scale == 100.0 else f"{down:.3g}"
    return f"{format_number(est, scale, digits, signed)}$^{{+{fu}}}_{{-{fd}}}$", True


# ---- DataFrame exports (the pages' downloads) ------------------------------------------------

def to_markdown(df: pd.DataFrame, float_digits: int = 6) -> str:
    """``df`` as a Markdown table: floats with ``float_digits`` significant digits, missing
    values empty."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else f"{v:.{float_digits}g}"
        if v is None or (not isinstance(v, (list, tuple, dict)) and pd.isna(v)):
            return ""
        return str(v)

    rows = ([cell(v) for v in row] for row in df.itertuples(index=False))
    return markdown_table([str(c) for c in df.columns], rows) + "\n"


def _latex_column(values: pd.Series, float_digits: int) -> list[str]:
    """A column's cells as LaTeX: text escaped, whole-number floats as counts, other floats
    with ``float_digits`` decimals, missing values empty."""
    if values.dtype == object or str(values.dtype) in ("string", "str"):
        return ["" if v is None or (not isinstance(v, str) and pd.isna(v)) else latex_escape(v)
                for v in values]
    if pd.api.types.is_float_dtype(values):
        present = values.dropna()
        if len(present) and bool((present == present.round()).all()):
            return ["" if pd.isna(v) else str(int(v)) for v in values]   # counts as counts
        return ["" if pd.isna(v) else f"{v:.{float_digits}f}" for v in values]
    return ["" if is_missing(v) else str(v) for v in values]


def _interval_column(df: pd.DataFrame) -> tuple[str, str | None]:
    """The estimate column that carries ``low``/``high`` (or "") and the caption naming the
    one method, when there is one."""
    est = next((c for c in LATEX_ESTIMATES if c in df.columns), None)
    if est is None or not {"low", "high"} <= set(df.columns):
        return "", None
    methods = df["method"].dropna().unique() if "method" in df.columns else []
    return est, ("Estimates with intervals [low, high]"
                 + (f"; method: {latex_escape(methods[0])}." if len(methods) == 1 else "."))


def to_latex(df: pd.DataFrame, float_digits: int = 4) -> str:
    """``df`` as a booktabs LaTeX table (special characters escaped).

    A table with an estimate column (``score``, ``diff``, ``estimate`` or ``mean``) and
    ``low``/``high`` carries its intervals as ``0.77 [0.7069, 0.8229]`` in one column
    (``interval_cell`` in the table's own units), and when a ``method`` column holds one
    method the caption names it. Numeric columns (booleans included) are right-aligned.
    """
    columns = {str(c): _latex_column(df[c], float_digits) for c in df.columns}
    spec = {str(c): "r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns}
    est, caption = _interval_column(df)
    if est:
        cells = [interval_cell(e, lo, hi, scale=1.0, style="brackets")[0]
                 for e, lo, hi in zip(df[est], df["low"], df["high"])]
        rest = [str(c) for c in df.columns if c not in (est, "low", "high")]
        at = min(list(df.columns).index(est), len(rest))
        joined = f"{est} [low, high]"
        order = rest[:at] + [joined] + rest[at:]
        columns = {c: cells if c == joined else columns[c] for c in order}
        spec = {c: "l" if c == joined else spec[c] for c in order}
    header = [latex_escape(c) for c in columns]
    rows = zip(*columns.values()) if columns else iter(())
    body = latex_tabular(header, rows, "".join(spec.values()))
    if caption is not None:
        body = f"\\begin{{table}}\n\\caption{{{caption}}}\n{body}\n\\end{{table}}"
    return body + "\n"
