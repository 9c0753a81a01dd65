"""Shared page plumbing: the store, cached analysis calls, URL state, exports, messages.

Nothing here computes a statistic. Numbers come from ``evalcore.analysis`` (and
``evalcore.stats`` for the planner); this module only fetches, caches, formats and renders.

Rules every page follows through these helpers:

- The store is opened once per server process (``st.cache_resource`` keyed on the store
  path, i.e. ``$EVALBARS_STORE`` or the default path).
- Analysis results are cached (``st.cache_data``) on (function, store path, store version,
  arguments); ``Store.version()`` changes whenever the content does.
- ``EvalbarsError`` from evalcore becomes a message on the page, never a traceback; a store
  that cannot be reached (PostgreSQL down, wrong host, rejected password) gives one message
  saying so and stops the page (:func:`stop_if_unreachable`), never "the store is empty".
- The store location and every error message are shown with passwords and keys masked
  (:func:`store_label`, :func:`error_text`; ``evalcore.redact``).
- User strings (run names, prompts, responses, file names) are shown as text: through
  ``st.text``/``st.code``/``st.dataframe``, or through :func:`md_escape` when they must sit
  inside Markdown (captions, alerts, labels), or :func:`plot_text` inside Plotly labels.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from evalcore import access, analysis
from evalcore.access import Actor
from evalcore.charts import plot_text as charts_plot_text
from evalcore.errors import EvalbarsError, IngestError, StoreError, StoreUnavailableError
from evalcore.metrics import range_allows_percent
from evalcore.redact import mask_location
from evalcore.store import Store, default_store_location
from evalcore.tables import slug, to_latex, to_markdown  # noqa: F401  (the pages' exports)
from evalcore.unreachable import unreachable_message, unreachable_reason

ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = ROOT / "data" / "demo"
DEMO_TAG = "demo"
DEMO_ENV = "EVALBARS_DEMO"   # "0" disables loading the bundled demo into an empty store

CONFIDENCES = (0.90, 0.95, 0.99)

EMPTY_STORE = (
    "The store is empty. Add results on the **Upload & runs** page: lm-evaluation-harness "
    "results JSON and sample logs, inspect_ai `.eval`/`.json` logs, HELM run folders (zipped), "
    "or a tidy CSV/JSONL/Parquet table with columns model, task, item_id, score."
)


# ---- navigation --------------------------------------------------------------------------
def ensure_app_navigation() -> None:
    """Make a page that was opened by its URL run inside ``app.py``'s ``st.navigation``.

    Streamlit (1.67) starts a server whose folder has a ``pages/`` directory in its legacy
    multipage mode: until ``st.navigation`` has run once in the process, the first request
    for a page URL (``/compare?run_a=...``, a shared link) runs that page's script alone,
    without ``app.py``'s setup and sidebar. A page that finds itself in that mode switches
    the mode off and reruns, which executes ``app.py`` and its navigation for the same URL.
    Every page calls this first.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


# ---- store -------------------------------------------------------------------------------
def store_path() -> str:
    """The store this server uses: ``$EVALBARS_STORE`` (a folder or a ``ducklake:`` URL,
    with ``$EVALBARS_DATA_PATH``) or the default folder ``./.evalbars``. It may hold a
    password: show :func:`store_label` instead."""
    return default_store_location()


def store_label() -> str:
    """The store location as shown to people: passwords, keys and tokens masked."""
    return mask_location(store_path())


def masked(text: BaseException | str) -> str:
    """``text`` (an error or any message) as plain text with every secret masked: those
    written in it and those of the store location, wherever the text repeats them."""
    return mask_location(str(text), context=store_path())


def error_text(exc: BaseException | str) -> str:
    """:func:`masked` as Markdown-safe text (for ``st.error``/``st.info``/captions)."""
    return md_escape(masked(exc))


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> Store:
    return Store(path)   # one cached connection per process (DuckLake attach costs ~0.2 s)


def stop_if_unreachable(exc: BaseException) -> None:
    """When ``exc`` says the store cannot be reached: that one message, and the page stops."""
    if isinstance(exc, StoreUnavailableError):      # the store's own word for it
        reason = unreachable_reason(exc) or "the connection to it failed"
    elif analysis.is_store_busy(exc):
        return
    else:
        reason = unreachable_reason(exc)
    if reason is None:
        return
    st.error(md_escape(unreachable_message(store_path(), reason)
                       + " Reload this page once it is back."), icon=":material/cloud_off:")
    st.stop()


def get_store() -> Store:
    """The shared ``Store``; renders an error and stops the page when it cannot be opened."""
    try:
        return _open_store(store_path())
    except EvalbarsError as exc:
        stop_if_unreachable(exc)
        st.error(f"The store at {md_escape(store_label())} could not be opened: "
                 f"{error_text(exc)}")
        st.stop()
    raise AssertionError("unreachable")


def store_version(store: Store) -> str:
    """``store.version()`` (the catalog's latest snapshot): the first catalog query of a
    page, so a store that went away since it was opened stops the page with its message.
    Pass it on as ``store.one_version(common.store_version(store))``."""
    try:
        return store.version()
    except EvalbarsError as exc:
        show_error(exc)
        st.stop()
    raise AssertionError("unreachable")


@contextlib.contextmanager
def page_snapshot() -> Iterator[None]:
    """Every store read of the page run inside the block sees one snapshot
    (``Store.one_version``): a write, compaction or ``maintain`` that commits meanwhile is
    seen by the next run, never by half of this one. For pages that only read (a page that
    writes must see its own write: reads inside a pinned block do not). A store that cannot
    be opened or reached leaves the block unpinned, and the page says so itself."""
    try:
        store = _open_store(store_path())
        version = store.version()
    except EvalbarsError:
        yield
        return
    with store.one_version(version):
        yield


def runs_table(store: Store) -> pd.DataFrame:
    """``Store.runs()`` (run_id, name, model, ..., has_items); on a store error, a message
    and ``st.stop()`` (an unreadable store is never shown as an empty one)."""
    try:
        return store.runs()
    except EvalbarsError as exc:
        show_error(exc)
        st.stop()
    raise AssertionError("unreachable")


def tasks_table(store: Store, run_ids: list[int] | None = None) -> pd.DataFrame:
    """``Store.tasks(run_ids)``; on a store error, a message and ``st.stop()``."""
    try:
        return store.tasks(None if run_ids is None else [int(r) for r in run_ids])
    except EvalbarsError as exc:
        show_error(exc)
        st.stop()
    raise AssertionError("unreachable")


def require_runs(store: Store, minimum: int = 1, purpose: str = "") -> pd.DataFrame:
    """The runs table, or an info message and ``st.stop()`` when fewer than ``minimum`` runs."""
    runs = runs_table(store)
    if runs.empty:
        st.info(EMPTY_STORE)
        st.stop()
    if len(runs) < minimum:
        st.info(
            f"The store holds {len(runs)} run; {purpose or 'this page'} needs at least "
            f"{minimum}. Upload another run of the same tasks on the **Upload & runs** page."
        )
        st.stop()
    return runs


def runs_and_tasks(store: Store, minimum: int = 1, purpose: str = ""
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``require_runs`` and its demo banner, then ``tasks_table`` for every run, read at one
    store version: one catalog query for both (the tasks come from the copy of the small
    tables that ``runs()`` made; a write in between is seen by the next read after them)."""
    with store.one_version(store_version(store)):
        runs = require_runs(store, minimum, purpose)
        demo_banner(runs)
        return runs, tasks_table(store)


@st.cache_resource(show_spinner="Loading the bundled demo data ...")
def _seed_demo(path: str) -> tuple[str, ...]:
    """Ingest ``data/demo`` into the store at ``path`` if it is empty (once per process).

    The demo runs are tagged ``demo``. Returns the names of the runs added.
    """
    from evalcore.ingest import parse_paths

    store = _open_store(path)
    if not store.runs().empty or not DEMO_DIR.is_dir():
        return ()
    report = store.ingest(parse_paths([DEMO_DIR]))
    names = []
    for row in report.runs.itertuples():
        store.set_tags(int(row.run_id), [DEMO_TAG])
        names.append(str(row.name))
    return tuple(names)


def ensure_demo() -> None:
    """Load the bundled demo into an empty store (unless ``EVALBARS_DEMO=0``). A store that
    cannot be opened or reached is left to the page, which says so once. A read-only
    evalbars (``EVALBARS_READONLY``) writes nothing, the demo included."""
    if os.environ.get(DEMO_ENV, "1").strip() in ("0", "false", "no", "off") \
            or access.read_only():
        return
    try:
        _open_store(store_path())
    except EvalbarsError:
        return
    try:
        _seed_demo(str(store_path()))
    except EvalbarsError as exc:
        if unreachable_reason(exc) is None:
            st.warning(f"The bundled demo could not be loaded: {error_text(exc)}")


def demo_run_ids(runs: pd.DataFrame) -> list[int]:
    """Ids of the runs tagged ``demo``."""
    if runs.empty or "tags" not in runs:
        return []
    return [int(rid) for rid, tags in zip(runs["run_id"].tolist(), runs["tags"].tolist())
            if DEMO_TAG in (list(tags) if tags is not None else [])]


def demo_banner(runs: pd.DataFrame) -> None:
    """A small note when the demo runs are in the store, with how to remove them."""
    if demo_run_ids(runs):
        st.caption(
            ":material/science: **Demo data**: the runs tagged `demo` are simulated (generated by "
            "`scripts/make_demo.py`). Remove them on **Upload & runs** (*Delete the demo runs*); "
            "start with `EVALBARS_DEMO=0` to keep an empty store empty."
        )


# ---- ingest ----------------------------------------------------------------------------
def ingest_uploads(files: list[tuple[str, bytes]], store: Store,
                   progress: Callable[[int, int, str], None] | None = None,
                   cluster_key: str | None = None,
                   columns: dict[str, str] | None = None,
                   actor: Actor | None = None) -> dict:
    """Read in-memory uploads as a batch and store every good run in one transaction
    (``cluster_key`` and ``columns``, a tidy column map, as in
    ``evalcore.ingest.read_uploads``: None picks automatically, "" means no clusters) on
    behalf of ``actor`` (the session's user; the store checks its role). One bad file does
    not block the others.

    Returns ``{"ok": bool, "report": IngestReport | None, "run_ids": [int], "problems":
    [dict], "column_choices": {file: [column]}, "files": [dict]}`` (``problems``: one
    ``evalcore.ingest.problem_row`` per file not stored; ``column_choices``: the columns of
    each tidy table whose columns were not recognised; ``files``: :func:`file_outcomes`) or,
    when the batch could not be read at all or the store failed, ``{"ok": False, "error":
    exc}`` with nothing written. ``ok`` is False when no run was stored.
    """
    from evalcore.ingest import problem_row, read_uploads
    from evalcore.ingest.tidy import TidyColumnsError

    try:
        batch = read_uploads(files, progress=progress, cluster_key=cluster_key,
                             columns=columns)
        report = (store.ingest(batch.runs, skip_invalid=True, actor=actor)
                  if batch.runs else None)
        outcomes = file_outcomes(files, report, store) if report is not None else []
    except EvalbarsError as exc:
        return {"ok": False, "error": exc}
    problems = [problem_row(e) for e in batch.problems]
    if report is not None:
        problems += [problem_row(StoreError(m)) for m in report.rejected]
    run_ids = [int(x) for x in report.runs["run_id"]] if report is not None else []
    choices = {e.file: list(e.found) for e in batch.problems if isinstance(e, TidyColumnsError)}
    return {"ok": bool(run_ids), "report": report, "run_ids": run_ids, "problems": problems,
            "column_choices": choices, "files": outcomes}


def file_outcomes(files: list[tuple[str, bytes]], report: Any, store: Store) -> list[dict]:
    """What became of each uploaded file: ``{"file", "sha256", "status", "runs"}`` with status
    "new" (a run it belongs to was added or merged), "already stored" (every run it belongs
    to was already in the store, by the file's sha256) or "none" (no run holds it: it was not
    stored, see the problems). A file belongs to a run that records its sha256 (the store's
    idempotency key) or, for a zip, one of its members (``name!member``)."""
    import hashlib

    owners: dict[str, list[tuple[str, str]]] = {}      # sha256 or "name!" -> [(run, status)]
    for row in report.runs.itertuples():
        info = store.run_info(int(row.run_id))
        for f in info.get("files", []):
            key = str(f["sha256"]).lower()
            name = str(f["name"])
            entries = [key] + ([name.split("!", 1)[0] + "!"] if "!" in name else [])
            for k in entries:
                owners.setdefault(k, []).append((str(row.name), str(row.status)))
    out = []
    for name, data in files:
        sha = hashlib.sha256(data).hexdigest()
        held = owners.get(sha, []) + owners.get(f"{name}!", [])
        runs = list(dict.fromkeys(r for r, _ in held))
        status = ("none" if not held else
                  "already stored" if all(s == "already present" for _, s in held) else "new")
        out.append({"file": name, "sha256": sha, "status": status, "runs": runs})
    return out


def tab_sections(key: str, sections: dict[str, Callable[[], None]]) -> None:
    """One ``st.tabs`` tab per section (label -> function drawing it); only the open tab's
    section runs. The open tab is widget state bound to the URL under ``key``, so a shared
    link opens the same tab, and switching tabs reruns the page (from its caches)."""
    tabs = st.tabs(list(sections), key=key, bind="query-params")
    for tab, section in zip(tabs, sections.values()):
        if tab.open:
            with tab:
                section()


# ---- analysis calls ----------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=256)
def _cached_call(fn_name: str, path: str, version: str, args: tuple, kwargs: tuple) -> Any:
    fn = getattr(analysis, fn_name)
    return fn(_open_store(path), *args, **dict(kwargs))


def compute(fn_name: str, *args: Any, stop: bool = True, **kwargs: Any) -> Any:
    """Call ``evalcore.analysis.<fn_name>(store, *args, **kwargs)`` through the cache.

    An ``EvalbarsError`` is rendered as a message; then the page stops (``stop=True``) or
    ``None`` is returned so the rest of the page still draws.
    """
    store = get_store()
    try:
        # one catalog query for the version: the analysis's memo checks reuse it
        with store.one_version() as version, \
                st.spinner(f"Computing ({fn_name.replace('_', ' ')}) ...", show_time=True):
            return _cached_call(fn_name, str(store_path()), str(version), tuple(args),
                                tuple(sorted(kwargs.items())))
    except EvalbarsError as exc:
        show_error(exc)
    if stop:
        st.stop()
    return None


def show_error(exc: BaseException) -> None:
    """Render an evalcore error as a message (info for impossible analyses, error for input),
    secrets masked; a store that cannot be reached gives its one message and stops the page."""
    stop_if_unreachable(exc)
    text = error_text(exc)
    if isinstance(exc, IngestError):
        st.error(f"Nothing was written. {text}")
    else:
        st.info(text)


# ---- text safety and formatting ----------------------------------------------------------
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


# ---- URL state ---------------------------------------------------------------------------
# A URL-bound widget has one value, kept in ``?param=``. Its default is passed on every run
# as that same value (the user's latest choice, else the URL's), because the browser draws a
# widget that (re)appears from its default: a widget skipped for a run (an empty intermediate
# selection, a ``st.stop`` above it) would come back showing its minimum or first option while
# the server computes with the URL's value, and the next interaction would send that shown
# value back as the user's choice. So the browser, the session state, the URL and the
# computation hold one value.
def url_get(param: str) -> str | None:
    """The value of ``?param=`` in the page URL, or None."""
    value = st.query_params.get(param)
    return None if value in (None, "") else str(value)


def url_set(param: str, value: Any) -> None:
    """Write (or remove, for None) ``?param=`` so the current view can be shared."""
    if value is None or value == "" or (isinstance(value, (list, tuple)) and not value):
        if param in st.query_params:
            del st.query_params[param]
        return
    if isinstance(value, (list, tuple)):
        new = [str(v) for v in value]
        if st.query_params.get_all(param) != new:
            st.query_params[param] = new
        return
    if st.query_params.get(param) != str(value):
        st.query_params[param] = str(value)


def url_choice(label: str, options: Sequence[str], param: str, *, key: str,
               default: str | None = None, format_func: Callable[[Any], str] = str,
               widget: str = "selectbox", help: str | None = None, container: Any = None,
               disabled: bool = False) -> str | None:
    """A single-choice widget whose value lives in ``?param=`` (URL first, then ``default``).

    ``options`` are strings (they round-trip through the URL). ``widget``: "selectbox",
    "radio", "select_slider" or "segmented" (which cannot be deselected). A value that is
    no longer among the options falls back to ``default`` (or the first option), in the
    browser as on the server. ``disabled`` shows the value without letting it change.
    Returns the chosen option (None when there are no options).
    """
    box = container if container is not None else st
    options = [str(o) for o in options]
    if not options:
        url_set(param, None)
        return None
    held = st.session_state.get(key)          # the value the user just chose, if any
    # a held value that is not among these options (the box showed other options on the
    # last run, e.g. a placeholder) gives way to the URL's, which kept the last real choice
    wanted = str(held) if held is not None and str(held) in options else url_get(param)
    initial = wanted if wanted in options else default if default in options else options[0]
    index = options.index(initial)
    common = dict(key=key, format_func=format_func, help=help, disabled=disabled)
    if widget == "radio":
        value = box.radio(label, options, index=index, horizontal=True, **common)
    elif widget == "select_slider":
        value = box.select_slider(label, options, value=initial, **common)
    elif widget == "segmented":
        value = box.segmented_control(label, options, default=initial, selection_mode="single",
                                      required=True, **common)
    else:
        value = box.selectbox(label, options, index=index, **common)
    value = initial if value is None else str(value)
    url_set(param, value)
    return value


def url_multi(label: str, options: Sequence[str], param: str, *, key: str,
              format_func: Callable[[Any], str] = str, help: str | None = None,
              container: Any = None) -> list[str]:
    """A multiselect whose value lives in ``?param=a&param=b`` (absent = all options).

    Chosen values that are no longer among the options are dropped; the rest stay chosen."""
    box = container if container is not None else st
    options = [str(o) for o in options]
    wanted = [v for v in st.query_params.get_all(param) if v in options] or list(options)
    if key in st.session_state:
        held = list(st.session_state[key] or [])
        kept = [v for v in held if v in options]
        if kept != held:        # a server-side change: the browser is told (set_value)
            st.session_state[key] = kept
        wanted = list(st.session_state[key])
    value = box.multiselect(label, options, default=wanted, key=key, format_func=format_func,
                            help=help)
    url_set(param, None if set(value) == set(options) else value)
    return list(value)


def url_number(param: str, default: float, *, cast: Callable[[str], Any] = float) -> Any:
    """A number from ``?param=`` (``default`` when absent or unreadable)."""
    raw = url_get(param)
    if raw is None:
        return default
    try:
        value = cast(raw)
    except ValueError:
        return default
    return value if value == value else default        # NaN: the default


def url_numeric(kind: str, label: str, param: str, *, key: str, default: float,
                min_value: float, max_value: float, step: float, fmt: str | None = None,
                help: str | None = None, container: Any = None, cast: type = float) -> Any:
    """A number input ("number") or slider ("slider") whose value lives in ``?param=``
    (``default`` when absent; clipped to [min_value, max_value])."""
    box = container if container is not None else st
    held = st.session_state.get(key)          # the value the user just chose, if any
    start = held if isinstance(held, (int, float)) else url_number(param, default, cast=cast)
    initial = cast(min(max(start, min_value), max_value))
    kwargs = dict(min_value=cast(min_value), max_value=cast(max_value), step=cast(step),
                  value=initial, key=key, help=help)
    if fmt:
        kwargs["format"] = fmt
    if kind == "slider":
        value = box.slider(label, **kwargs)
    else:
        value = box.number_input(label, **kwargs)
    url_set(param, value)
    return value


def confidence_choice(key: str, container: Any = None, label: str = "Confidence",
                      help: str | None = None) -> float:
    """The confidence level selector (URL ``conf``)."""
    value = url_choice(label, [f"{c:.2f}" for c in CONFIDENCES], "conf", key=key,
                       default="0.95", format_func=lambda s: f"{float(s):.0%}",
                       container=container, help=help)
    return float(value)


def run_label(runs: pd.DataFrame) -> Callable[[str], str]:
    """format_func showing a run name with its model (plain text in widgets)."""
    models = dict(zip(runs["name"].astype(str).tolist(), runs["model"].tolist()))

    def label(name: str) -> str:
        model = models.get(name)
        return f"{name}  ({model})" if model and str(model) != name else name
    return label


# ---- exports (the writers: evalcore.tables) -------------------------------------------
def table_downloads(df: pd.DataFrame, name: str, key: str) -> None:
    """Download buttons for ``df`` as CSV, Markdown and LaTeX (generated on click)."""
    frame = df.copy()
    base = slug(name)
    row = st.container(horizontal=True, gap="small")
    row.download_button("CSV", data=lambda: frame.to_csv(index=False), file_name=f"{base}.csv",
                        mime="text/csv", key=f"{key}_csv", on_click="ignore",
                        icon=":material/download:")
    row.download_button("Markdown", data=lambda: to_markdown(frame), file_name=f"{base}.md",
                        mime="text/markdown", key=f"{key}_md", on_click="ignore")
    row.download_button("LaTeX", data=lambda: to_latex(frame), file_name=f"{base}.tex",
                        mime="application/x-tex", key=f"{key}_tex", on_click="ignore")


def show_table(df: pd.DataFrame, name: str, key: str, *, column_config: dict | None = None,
               height: int | str = "auto") -> None:
    """``st.dataframe`` (text-only rendering) plus its CSV/Markdown/LaTeX downloads."""
    st.dataframe(df, hide_index=True, column_config=column_config, key=f"{key}_df",
                 height=height)
    table_downloads(df, name, key)


PLOTLY_CONFIG = {"displaylogo": False,
                 "toImageButtonOptions": {"format": "png", "scale": 2}}


def show_chart(fig: Any, name: str, key: str, *, export_fig: Any = None) -> None:
    """Draw a Plotly figure (exact values on hover) with slide-size PNG/SVG downloads
    (``ui.export``; the figure also joins the page's "all figures" zip) and larger fonts in
    presentation mode (``ui.present``, which also hides the chart's toolbar).

    ``export_fig``: the figure the downloads and the zip hold when it differs from the one
    drawn (a page that prints a chart's title and notes as text around it draws the chart
    alone and exports it with them, so a slide stands on its own)."""
    from ui import export, present

    config = {**PLOTLY_CONFIG,
              "toImageButtonOptions": {**PLOTLY_CONFIG["toImageButtonOptions"],
                                       "filename": slug(name)}}
    if present.is_on():
        config["displayModeBar"] = False
    st.plotly_chart(present.present_figure(fig), key=key, config=config)
    export.chart_exports(fig if export_fig is None else export_fig, name, key)


def method_check_link(design: str, **params: float | int | None) -> str:
    """Markdown link to the Method check page with the design's numbers in its URL (coverage
    of every interval method for this n; see pages/method_check.py for the parameters)."""
    from urllib.parse import urlencode

    query = {"design": design, **{k: (f"{v:.4g}" if isinstance(v, float) else str(v))
                                  for k, v in params.items() if v is not None}}
    return (f"[Method check: how often each interval method covers at this n]"
            f"(method_check?{urlencode(query)})")
