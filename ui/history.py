"""The History section of the Upload & runs page: who changed the store, when and what, and
the undo of a delete (``Store.restore_run``), as the CLI's ``history`` and ``restore``.

Restoring is offered only to a user the store would let restore (``access.may``); the store
checks again on the write. The runs a delete of this session removed get an "Undo" button
(``UNDO_KEY`` in the session state holds their ids, set by the page's delete)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore import access
from evalcore.errors import EvalbarsError
from evalcore.store import HistoryEntry, Store
from evalcore.store.maintain import keep_history_default
from ui import common

UNDO_KEY = "up_undo"          # run ids the last delete of this session removed
FLASH_KEY = "up_flash"        # the page's one-line success message after a rerun
SHOWN = 30


def history_table(entries: list[HistoryEntry]) -> pd.DataFrame:
    """The history as the page shows it (times in UTC, newest first)."""
    return pd.DataFrame({
        "when (UTC)": [e.time.strftime("%Y-%m-%d %H:%M:%S") for e in entries],
        "who": [e.author for e in entries],
        "what": [e.op for e in entries],
        "runs": [", ".join(f"{n} (#{i})" for i, n in e.runs) for e in entries],
        "message": [e.message for e in entries]})


def history_section(store: Store, actor: access.Actor | None) -> None:
    """Draw the History section: the undo of this session's last delete, the restore of
    any deleted run that can still be restored, and the latest changes."""
    st.markdown("**History**")
    try:
        entries = store.history(limit=SHOWN)
        deleted = store.deleted_runs()
    except EvalbarsError as exc:
        common.show_error(exc)
        return
    may_restore = access.may(actor, "restore")
    restorable = {i: n for e in deleted for i, n in e.runs}
    if may_restore:
        _undo_button(store, actor, restorable)
        _restore_control(store, actor, restorable)
    if not entries:
        st.caption("No changes recorded yet.")
        return
    common.show_table(history_table(entries), "history", "up_history")
    days = keep_history_default().total_seconds() / 86400
    st.caption(f"The latest {SHOWN} changes; `python -m evalcore history` lists all. A deleted "
               f"run can be restored while maintain keeps the store's history ({days:g} days "
               "by default).")


def _undo_button(store: Store, actor: access.Actor | None, restorable: dict[int, str]) -> None:
    undo = [i for i in st.session_state.get(UNDO_KEY, []) if i in restorable]
    if not undo:
        return
    names = ", ".join(restorable[i] for i in undo)
    if st.button(f"Undo the delete of {names}", key="up_undo_btn", type="primary"):
        _restore(store, actor, undo, restorable)


def _restore_control(store: Store, actor: access.Actor | None,
                     restorable: dict[int, str]) -> None:
    if not restorable:
        return
    ids = list(restorable)
    c_pick, c_btn = st.columns([3, 1])
    pick = c_pick.selectbox("Deleted run", ids, key="up_restore_pick",
                            format_func=lambda i: f"{restorable[i]} (#{i})")
    c_btn.write("")
    if c_btn.button("Restore", key="up_restore_btn"):
        _restore(store, actor, [pick], restorable)


def _restore(store: Store, actor: access.Actor | None, ids: list[int],
             restorable: dict[int, str]) -> None:
    try:
        for rid in ids:
            store.restore_run(rid, actor=actor)
    except EvalbarsError as exc:
        common.show_error(exc)
        return
    st.session_state.pop(UNDO_KEY, None)
    st.session_state[FLASH_KEY] = "Restored " + ", ".join(restorable[i] for i in ids) + "."
    st.rerun()
