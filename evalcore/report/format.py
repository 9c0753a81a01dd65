"""Formatting for the report's HTML: escaped text, names that break only at separators,
numbers with their units, tables and figures (display only; no statistics here).

Names (runs, tasks, files) go through ``name``: escaped, with a ``<wbr>`` after every '/',
'-' and '_' so a long name can wrap at those characters and nowhere else (the ``.name``
style keeps the browser from breaking inside a word). Numbers: proportions in percent and
their differences in percentage points ("points"), other scales in the metric's units.
Missing values print as "–", never as None or NaN.
"""

from __future__ import annotations

import html as _html
import math
import re

import pandas as pd

from evalcore import charts, words

MISSING = words.MISSING
FIG_WIDTH = 1100         # px; fits the printed A4 landscape page (1,180 px of HTML at 88%)
PRINT_ZOOM = 0.88        # the printed page shows the HTML at this scale (CSS zoom in print)
PRINTED_PAGE = 800       # px of HTML one printed A4 landscape page holds (703 px / PRINT_ZOOM)
PRINT_HEIGHT = 700       # px of HTML a full-page figure may take
SHORT_NAME = 40          # names up to this many characters never wrap
_BREAK_AFTER = re.compile(r"([/\-_])")


def missing(x) -> bool:
    """True for None, NaN and pandas' missing values."""
    try:
        return x is None or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def e(value) -> str:
    """A user string as HTML text (``<``, ``>``, ``&`` and quotes escaped); "–" if missing."""
    if missing(value):
        return MISSING
    return _html.escape(str(value), quote=True)


def name(value) -> str:
    """A run, task or file name as HTML: escaped; a short name never wraps, a long one only
    after '/', '-' and '_'."""
    if missing(value):
        return MISSING
    text = _html.escape(str(value), quote=True)
    if len(str(value)) <= SHORT_NAME:
        return f'<span class="name short">{text}</span>'
    # the escaped text has no '/', '-' or '_' inside an entity (&lt; &gt; &amp; &quot; &#x27;)
    breakable = _BREAK_AFTER.sub(r"\1<wbr>", text)
    return f'<span class="name">{breakable}</span>'


def num(x, scale: float = 1.0, digits: int = 1, signed: bool = False) -> str:
    """``x * scale`` with ``digits`` decimals (percent/points) or 4 significant digits."""
    if missing(x):
        return MISSING
    v = float(x) * scale
    if not math.isfinite(v):
        return MISSING
    sign = "+" if signed else ""
    if scale == 100.0:
        return f"{v:{sign}.{digits}f}"
    return f"{v:{sign}.4g}"


def interval(est, low, high, scale: float, signed: bool = False) -> str:
    """"71.9 [68.1, 75.5]": the estimate and its interval on one scale."""
    if missing(low) or missing(high):
        return num(est, scale, 1, signed)
    return (f"{num(est, scale, 1, signed)} [{num(low, scale, 1, signed)}, "
            f"{num(high, scale, 1, signed)}]")


def pval(p) -> str:
    """A p-value: four decimals, "&lt;0.0001" below that."""
    if missing(p):
        return MISSING
    return "&lt;0.0001" if float(p) < 1e-4 else f"{float(p):.4f}"


def scale_of(values) -> float:
    """100 when every value lies in [0, 1] (proportions, shown in percent), else 1."""
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    return 100.0 if len(v) and bool(((v >= 0) & (v <= 1)).all()) else 1.0


def score_unit(scale: float) -> str:
    """The unit of a score: "%" for proportions, else the metric's own units."""
    return "%" if scale == 100.0 else "metric units"


def gap_unit(scale: float) -> str:
    """The unit of a difference: percentage points for proportions, else metric units."""
    return "points" if scale == 100.0 else "metric units"


def table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(),
          text: set[int] = frozenset(), css: str = "") -> str:
    """An HTML table from already-escaped cells; ``numeric`` columns right-aligned,
    ``text`` columns wrapped as prose."""
    def cls(i: int) -> str:
        return ' class="num"' if i in numeric else (' class="text"' if i in text else "")
    head = "".join(f"<th{cls(i)}>{h}</th>" for i, h in enumerate(headers))
    thead = f"<thead><tr>{head}</tr></thead>" if headers else ""
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}>{thead}<tbody>{body}</tbody></table>"


def cut(text, limit: int, one_line: bool = False) -> str:
    """A long text cut at ``limit`` characters (" …" added), escaped; ``one_line`` turns
    every run of whitespace (line breaks included) into one space first."""
    if missing(text):
        return MISSING
    s = " ".join(str(text).split()) if one_line else str(text)
    return e(s if len(s) <= limit else s[:limit].rstrip() + " …")


class Figures:
    """Numbered figure divs; Plotly's JS is not included (it is inlined once in <head>).

    ``print_height``: the most a figure may take on the printed page (px at 96 dpi); a
    taller figure is scaled down for print (CSS ``zoom``), so a tall forest plot fits one
    page instead of breaking across two.
    """

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, fig, caption: str = "", print_height: int = PRINT_HEIGHT) -> str:
        self.count += 1
        fig = fig.update_layout(width=FIG_WIDTH)
        height = int(fig.layout.height or 450)
        div = fig.to_html(full_html=False, include_plotlyjs=False,
                          div_id=f"figure-{self.count}",
                          config={"displaylogo": False, "responsive": False,
                                  "displayModeBar": False},
                          default_width=f"{FIG_WIDTH}px", default_height=f"{height}px")
        zoom = min(1.0, print_height / height)
        cap = f'<div class="caption">Figure {self.count}. {caption}</div>' if caption else ""
        return (f'<div class="fig" style="--print-zoom: {zoom:.3f}">{div}{cap}</div>')


def paired_method(key) -> str:
    """The readable name of a comparison row's interval method (``words``)."""
    return words.label("paired", key)


def score_method(key) -> str:
    """The readable name of a leaderboard cell's interval method (``words``)."""
    return words.label("score", key)


def plot_label(value) -> str:
    """Text for inside a figure (``charts.plot_text``)."""
    return charts.plot_text(value)
