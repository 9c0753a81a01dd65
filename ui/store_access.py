"""The store as pages see it: its location (secrets masked), the one shared connection, a
page's snapshot, the runs and tasks tables, the bundled demo, uploads, and errors as messages.

The store is opened once per server process (``st.cache_resource`` keyed on the store path,
i.e. ``$EVALBARS_STORE`` or the default path). ``EvalbarsError`` from evalcore becomes a
message on the page, never a traceback; a store that cannot be reached (PostgreSQL down, wrong
host, rejected password) gives one message saying so and stops the page
(:func:`stop_if_unreachable`), never "the store is empty". The location and every error
message are shown with passwords and keys masked (``evalcore.redact``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd
import streamlit as st

from evalcore import access, analysis
from evalcore.access import Actor
from evalcore.errors import EvalbarsError, IngestError, StoreError, StoreUnavailableError
from evalcore.redact import mask_location
from evalcore.store import Store, default_store_location
from evalcore.unreachable import unreachable_message, unreachable_reason
from ui.format import md_escape

ROOT = Path(__file__).resolve().parents[1]


DEMO_DIR = ROOT / "data" / "demo"


DEMO_TAG = "demo"


DEMO_ENV = "EVALBARS_DEMO"   # "0" disables loading the bundled demo into an empty store


EMPTY_STORE = (
    "The store is empty. Add results on the **Upload & runs** page: lm-evaluation-harness "
    "results JSON and sample logs, inspect_ai `.eval`/`.json` logs, HELM run folders (zipped), "
    "or a tidy CSV/JSONL/Parquet table with columns model, task, item_id, score."
)


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


def show_error(exc: BaseException) -> None:
    """Render an evalcore error as a message (info for impossible analyses, error for input),
    secrets masked; a store that cannot be reached gives its one message and stops the page."""
    stop_if_unreachable(exc)
    text = error_text(exc)
    if isinstance(exc, IngestError):
        st.error(f"Nothing was written. {text}")
    else:
        st.info(text)
