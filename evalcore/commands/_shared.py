"""What every CLI command shares: exit codes, output rendering (table, JSON, CSV, Markdown,
LaTeX), opening the store, the CLI error types and the argument types."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

import numpy as np
import pandas as pd

from evalcore.errors import EvalbarsError
from evalcore.redact import mask_location
from evalcore.tables import latex_escape, latex_tabular, markdown_table
from evalcore.termsafe import escape, escape_json

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_BUSY, EXIT_DISK_FULL = 0, 1, 2, 3, 4, 5
FORMATS = ("table", "json", "csv", "markdown", "latex")
DEFAULT_LOCK_TIMEOUT = 120.0  # seconds (--lock-timeout); = store.catalog.DEFAULT_LOCK_TIMEOUT


# ---------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------

def _jsonable(v: Any) -> Any:
    """Plain JSON values: NaN/NA -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_jsonable(x) for x in v]
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v if isinstance(v, (str, int, float)) else str(v)


def records(df: pd.DataFrame | None) -> list[dict]:
    """DataFrame rows as JSON-able dicts (column order kept)."""
    if df is None or len(df) == 0:
        return []
    cols = list(df.columns)
    return [{c: _jsonable(v) for c, v in zip(cols, row)}
            for row in df.itertuples(index=False, name=None)]


def dump_json(obj: Any) -> str:
    """Indented JSON; control characters (also DEL, C1, bidi) as ``\\uNNNN`` escapes."""
    return escape_json(json.dumps(_jsonable(obj), indent=2, ensure_ascii=False))


def _cell_text(v: Any, digits: int = 4) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return ""
        return f"{v:.{digits}g}" if abs(v) >= 1e4 or (v != 0 and abs(v) < 1e-3) else \
            f"{v:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{v:.{digits}f}" else f"{v}"
    if isinstance(v, (list, tuple)):
        return escape(", ".join(map(str, v)))
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return escape(str(v))


def _text_frame(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({c: [_cell_text(v) for v in df[c]] for c in df.columns},
                        columns=list(df.columns))


def to_markdown(df: pd.DataFrame) -> str:
    """The table as Markdown, cells as the terminal shows them (``evalcore.tables``)."""
    t = _text_frame(df)
    return markdown_table(list(t.columns), t.itertuples(index=False, name=None))


def to_latex(df: pd.DataFrame) -> str:
    """A booktabs tabular (every cell escaped; needs \\usepackage{booktabs})."""
    t = _text_frame(df)
    spec = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) and not
                   pd.api.types.is_bool_dtype(df[c]) else "l" for c in df.columns)
    return latex_tabular([latex_escape(str(c)) for c in t.columns],
                         ([latex_escape(v) for v in row]
                          for row in t.itertuples(index=False, name=None)), spec)


def to_table(df: pd.DataFrame) -> str:
    if len(df) == 0:
        return "(none)"
    return _text_frame(df).to_string(index=False)


def render(df: pd.DataFrame, fmt: str) -> str:
    """One table in table/csv/markdown/latex."""
    if fmt == "csv":
        return df.to_csv(index=False).rstrip("\n")
    if fmt == "markdown":
        return to_markdown(df)
    if fmt == "latex":
        return to_latex(df)
    return to_table(df)


def _out(text: str) -> None:
    sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))


def _err(text: str) -> None:
    """A message on stderr, passwords and keys masked (every error the CLI prints comes
    here; ``$EVALBARS_STORE``'s secrets are masked also where a message repeats them bare)."""
    masked = mask_location(text, context=os.environ.get("EVALBARS_STORE", ""))
    sys.stderr.write(masked.rstrip("\n") + "\n")


def _interval(lo: float, hi: float, scale: float = 1.0, digits: int = 3) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    return f"[{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


# ---------------------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------------------

def _store_path(args) -> str:
    """The store location: --store, else $EVALBARS_STORE, else ./.evalbars."""
    if args.store:
        return str(args.store)
    from evalcore.store import default_store_location
    return default_store_location()


def _store_label(args) -> str:
    """The store location as printed: passwords and keys masked."""
    return mask_location(_store_path(args))


def _actor(args):
    """The acting user of a CLI command: the local user (every role), named by
    ``--author``, else $EVALBARS_AUTHOR, else the OS user (``access.local_actor``)."""
    from evalcore import access
    return access.local_actor(getattr(args, "author", None) or os.environ.get(ENV_AUTHOR))


ENV_AUTHOR = "EVALBARS_AUTHOR"


def _open_store(args, *, create: bool = False):
    from evalcore.store import CATALOG_FILE, Store, resolve_location
    location = _store_path(args)
    target = resolve_location(location, args.data_path)
    catalog = (target.path / CATALOG_FILE if target.kind == "local" else
               target.path if target.kind == "sqlite" else None)
    if not create and catalog is not None and not catalog.exists():
        raise _BadInput(f"no store at {location}: ingest some files first "
                        f"(python -m evalcore ingest PATH) or pass --store LOCATION")
    store = Store(location, data_path=args.data_path, lock_timeout=args.lock_timeout)
    store.pin_reads()       # a command reads one snapshot, whoever writes meanwhile
    return store


class _BadInput(EvalbarsError):
    """A CLI-level bad input (exit code 3)."""


class _Usage(EvalbarsError):
    """Options that do not fit together or are missing (exit code 2, like argparse)."""


def _cut(value: Any, width: int = 44) -> Any:
    """A long text value cut to ``width`` characters with an ellipsis (for terminal tables)."""
    text = value if isinstance(value, str) else None
    if text is None or len(text) <= width:
        return value
    return text[:width - 1].replace("\n", " ") + "…"


def _short_list(text: str, limit: int = 60) -> str:
    """A comma list cut to about ``limit`` characters ("a,b,c,... (+70 more)")."""
    items = str(text).split(",")
    out: list[str] = []
    for it in items:
        if len(",".join(out + [it])) > limit:
            return ",".join(out) + f",... (+{len(items) - len(out)} more)"
        out.append(it)
    return ",".join(out)




# ---------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------

def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _confidence(text: str) -> float:
    """A level or a share strictly between 0 and 1 (``stats.check_confidence``, imported
    here so that ``--help`` and other usage errors need no scipy)."""
    from evalcore.stats._checks import StatsInputError, check_confidence
    v = _number(text)
    try:
        return check_confidence(v)
    except StatsInputError:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}") from None


def _positive_float(text: str) -> float:
    v = _number(text)
    if not (v > 0.0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return v


def _non_negative_float(text: str) -> float:
    v = _number(text)
    if not (v >= 0.0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return v


def _unit_float(text: str) -> float:
    v = _number(text)
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1), got {text}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return v


def json_epilog(command: str) -> str:
    """The one-line ``--help`` epilog that names where a command's JSON keys are listed."""
    return f"JSON keys (--format json): docs/cli.md, section \"JSON keys\", {command}."


def _add_format(p: argparse.ArgumentParser, choices=FORMATS) -> None:
    p.add_argument("--format", choices=choices, default="table",
                   help="output format (default: table). json keys are stable and documented "
                        "in docs/cli.md; csv/markdown/latex give the main table")


def _add_store_options(p: argparse.ArgumentParser, default: Any = argparse.SUPPRESS) -> None:
    """``--store`` and ``--lock-timeout``, accepted before and after the subcommand.

    Both the main parser and every subparser declare them with ``argparse.SUPPRESS`` as
    default, so an option given in one place is not overwritten by the other parser's
    default (the real defaults are set once on the main parser); given twice, the one after
    the subcommand wins.
    """
    p.add_argument("--store", metavar="LOCATION", default=default,
                   help="the store: a folder (catalog.sqlite + data/), a DuckLake URL "
                        "ducklake:postgres:dbname=... host=... (a team store), or an old "
                        ".duckdb file (read-only). Default: $EVALBARS_STORE if set, else "
                        "./.evalbars; before or after the command")
    p.add_argument("--data-path", metavar="DIR", default=default, dest="data_path",
                   help="where a ducklake: store keeps its Parquet files: a folder or "
                        "s3://bucket/prefix/ (credentials from AWS_ACCESS_KEY_ID, "
                        "AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL); default: "
                        "$EVALBARS_DATA_PATH; needed once, when a team store is created")
    p.add_argument("--author", metavar="NAME", default=default,
                   help="who a write is recorded as (history); default: $EVALBARS_AUTHOR, "
                        "else the OS user")
    p.add_argument("--lock-timeout", metavar="SECONDS", type=_non_negative_float,
                   default=default, dest="lock_timeout",
                   help="how long to wait while another process holds the store before "
                        f"giving up with exit code 4 (default {DEFAULT_LOCK_TIMEOUT:g})")
