"""Upload & runs: drop result files, see what was recognised and which files were not stored
(each with its place and reason; one bad file does not block the others), and manage the
runs in the store (rename, tag, delete with confirmation). Only the controls the session's
role allows are drawn (``ui/auth.py``: none in read-only mode or for a viewer; an uploader
uploads, renames and tags own runs; an admin also deletes), and every write carries the
session's actor, which the store checks again.

Work: ``evalcore.ingest.read_uploads`` then ``Store.ingest`` (one transaction);
``evalcore.analysis.overview`` for the tables. Nothing here parses or writes SQL itself.
"""

from __future__ import annotations

import hashlib
import shlex
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import access, analysis
from evalcore.errors import EvalbarsError, IngestError
from evalcore.ingest import problem_row
from evalcore.unreachable import unreachable_reason
from evalcore.ingest.tidy import CANONICAL, format_columns, suggest_columns
from ui import auth, common, history

FORMATS_HELP = ("lm-evaluation-harness results JSON and sample logs (`samples_*.jsonl`), "
                "lighteval / Open LLM Leaderboard `results_*.json` (summaries), "
                "inspect_ai logs (`.eval`, `.json`), HELM run folders, suites or a whole "
                "`benchmark_output/` folder as `.zip`, Every Eval Ever `<uuid>.json` files "
                "with their `<uuid>_samples.jsonl`, tidy tables "
                "(CSV/JSONL/Parquet with columns `model`, `task`, `item_id`, `score`; other "
                "column names can be mapped once the table is dropped). Upload a results file "
                "together with its sample logs so they become one run.")
NAMES_SHOWN = 8          # run names listed in one line before "and N more"


def names_text(names: list[str]) -> str:
    """Run or file names for one line of text, the first few and how many more."""
    shown = ", ".join(names[:NAMES_SHOWN])
    more = len(names) - NAMES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """``common.display_frame`` (missing values as "–", never None) with a column that mixes
    numbers and "–" turned into text, so the table can be drawn."""
    out = common.display_frame(df)
    for c in out.columns:
        col = out[c]
        if col.dtype == object and any(isinstance(v, str) for v in col) \
                and not all(isinstance(v, str) for v in col):
            out[c] = [v if isinstance(v, str) else str(v) for v in col]
    return out


def sort_uploads(listed: list[tuple[str, bytes]], options: tuple) -> dict:
    """The uploader's files (it keeps every file added in this session) against what this
    session already did with them, by content (sha256): ``fresh`` files to read now, files
    ``stored`` earlier (-> their runs), files that ``failed`` earlier with the same settings
    (read again only when the cluster or column settings change), and ``duplicates`` of
    another file in the list."""
    done = st.session_state.setdefault("up_done", {})
    failed = st.session_state.setdefault("up_failed", {})
    seen: set[str] = set()
    out: dict = {"fresh": [], "stored": [], "failed": [], "duplicates": [], "shas": []}
    for name, data in listed:
        sha = hashlib.sha256(data).hexdigest()
        out["shas"].append(sha)
        if sha in seen:
            out["duplicates"].append(name)
        elif sha in done:
            out["stored"].append({"file": name, "runs": list(done[sha])})
        elif failed.get(sha) == options:
            out["failed"].append(name)
        else:
            out["fresh"].append((name, data))
        seen.add(sha)
    return out


def read_fresh(sorted_files: dict, options: tuple, cluster_key: str | None,
               columns: dict | None) -> dict:
    """Store the files not read before in this session; remember what became of each."""
    fresh = sorted_files["fresh"]
    result: dict = {"report": None, "problems": [], "files": [], "run_ids": [],
                    "column_choices": {}}
    if fresh:
        bar = st.progress(0.0, text="Reading the files ...")

        def _progress(done: int, total: int, current: str) -> None:
            share = min(1.0, done / total) if total else 0.0
            bar.progress(share, text=f"Reading {common.md_escape(current)} ({share:.0%})")

        result = common.ingest_uploads(fresh, store, _progress, cluster_key=cluster_key,
                                       columns=columns, actor=auth.actor())
        bar.progress(1.0, text="Done.")
    if "error" in result:
        if unreachable_reason(result["error"]) is not None:
            return {**result, "retry": True}          # nothing remembered: tried again
        for name, data in fresh:
            st.session_state["up_failed"][hashlib.sha256(data).hexdigest()] = options
        return result
    stored = {f["sha256"]: f["runs"] for f in result["files"] if f["status"] != "none"}
    for name, data in fresh:
        sha = hashlib.sha256(data).hexdigest()
        if sha in stored:
            st.session_state["up_done"][sha] = tuple(stored[sha])
        else:                                  # not stored: its reason is in the problems
            st.session_state["up_failed"][sha] = options
    report = result.get("report")
    new_ids = [] if report is None else [
        int(r) for r, status in zip(report.runs["run_id"], report.runs["status"])
        if status != "already present"]
    if new_ids:
        st.session_state["up_new_ids"] = new_ids
    already = sorted_files["stored"] + [{"file": f["file"], "runs": f["runs"]}
                                        for f in result["files"]
                                        if f["status"] == "already stored"]
    return {**result, "already": already, "duplicates": sorted_files["duplicates"],
            "failed_before": sorted_files["failed"], "read": len(fresh)}


def role_note(what: str) -> None:
    """Why a control is missing: read-only mode, or the user's role."""
    who = auth.actor()
    reason = ("this evalbars is read-only" if access.read_only()
              else f"your role ({who.role.value}) does not allow it")
    st.caption(f"{what}: not available, {reason}.")


def upload_controls() -> tuple[list, str | None]:
    """The file uploader and the cluster choice: (the uploaded files, the cluster key)."""
    files = st.file_uploader("Drop result files here (one or many)", accept_multiple_files=True,
                             key="up_files", help=FORMATS_HELP)
    st.caption(FORMATS_HELP)
    c_mode, c_field = st.columns([3, 2])
    mode = c_mode.radio(
        "Clusters (items that share a passage, subject, problem ...)", list(CLUSTER_MODES),
        format_func=CLUSTER_MODES.get, horizontal=True, key="up_cluster_mode",
        help="The field of inspect sample metadata or lm_eval docs that groups items, for "
             "clustered standard errors. Automatic picks an obvious grouping key when one "
             "exists and reports it. Applies to files not yet in the store.")
    field = c_field.text_input("Cluster field", key="up_cluster_field",
                               placeholder="e.g. passage_id", label_visibility="collapsed",
                               disabled=mode != "field")
    return files, {"auto": None, "none": ""}.get(mode, field.strip() or None)


def run_owner_note(target: str, owner: str | None) -> None:
    st.caption(f"You may rename and tag only the runs you uploaded; "
               f"{common.md_escape(target)} was uploaded by "
               f"{common.md_escape(owner or 'someone else')}.")


def rename_control(rid: int, target: str, allowed: bool) -> None:
    new_name = st.text_input("New name", value=target, key=f"up_newname_{rid}",
                             disabled=not allowed)
    if st.button("Rename", key="up_rename",
                 disabled=not allowed or not new_name.strip() or new_name == target):
        try:
            store.rename_run(rid, new_name.strip(), actor=auth.actor())
            st.session_state["up_flash"] = f"Renamed {target} to {new_name.strip()}."
            st.rerun()
        except EvalbarsError as exc:
            common.show_error(exc)


def tag_control(rid: int, target: str, tags_now: Any, allowed: bool) -> None:
    tag_text = st.text_input("Tags (comma-separated)", key=f"up_tags_{rid}",
                             value=", ".join(list(tags_now) if tags_now is not None else []),
                             disabled=not allowed)
    if st.button("Save tags", key="up_save_tags", disabled=not allowed):
        tags = [t.strip() for t in tag_text.split(",") if t.strip()]
        try:
            store.set_tags(rid, tags, actor=auth.actor())
            st.session_state["up_flash"] = f"Tags of {target}: {', '.join(tags) or 'none'}."
            st.rerun()
        except EvalbarsError as exc:
            common.show_error(exc)


def delete_buttons(rid: int, runs: pd.DataFrame) -> None:
    st.write("")
    if st.button("Delete this run ...", key="up_delete", type="secondary"):
        st.session_state["up_confirm"] = [rid]
    demo_ids = common.demo_run_ids(runs)
    if demo_ids and st.button("Delete the demo runs ...", key="up_delete_demo"):
        st.session_state["up_confirm"] = demo_ids


def confirm_delete(ids: dict[str, int]) -> None:
    """The confirmation of a delete asked for with :func:`delete_buttons`."""
    pending = [i for i in st.session_state.get("up_confirm", []) if i in ids.values()]
    if not pending:
        return
    doomed = [n for n, i in ids.items() if i in pending]
    st.warning(f"Delete {len(doomed)} run(s) and all their scores and texts? History below "
               "can restore them while the store keeps its history.")
    st.text("\n".join(doomed))
    yes, no = st.columns([1, 6])
    if yes.button("Yes, delete", key="up_confirm_yes", type="primary"):
        try:
            for rid in pending:
                store.delete_run(rid, actor=auth.actor())
            st.session_state["up_flash"] = f"Deleted {len(pending)} run(s)."
            st.session_state[history.UNDO_KEY] = pending
        except EvalbarsError as exc:
            common.show_error(exc)
        st.session_state.pop("up_confirm", None)
        st.rerun()
    if no.button("Cancel", key="up_confirm_no"):
        st.session_state.pop("up_confirm", None)
        st.rerun()


def manage_runs(runs: pd.DataFrame) -> None:
    """Rename, tag and delete (after a confirmation) the chosen run, with the controls the
    session's role allows: an uploader renames and tags the runs they uploaded, an admin
    any run and also deletes. Each write passes the session's actor; the store checks it
    again, so a control shown by mistake still changes nothing."""
    can = {a: auth.may_on_own_runs(a) for a in ("rename", "tag", "delete")}
    if not any(can.values()):
        role_note("Renaming, tagging and deleting runs")
        return
    st.markdown("**Manage a run**")
    names = [str(n) for n in runs["name"]]
    ids = dict(zip(names, runs["run_id"].astype(int)))
    target = st.selectbox("Run", names, key="up_target", format_func=common.run_label(runs))
    rid = ids[target]
    tags_now = runs.set_index(runs["name"].astype(str)).loc[target, "tags"] \
        if "tags" in runs else []
    # an uploader's rename and tag depend on who uploaded this run
    owner = store.run_owner(rid) if can["rename"] and not auth.may("rename") else None
    here = {a: auth.may(a, run_owner=owner) for a in ("rename", "tag")}
    if can["rename"] and not here["rename"]:
        run_owner_note(target, owner)
    c_ren, c_tag, c_del = st.columns(3)
    if can["rename"]:
        with c_ren:
            rename_control(rid, target, here["rename"])
    if can["tag"]:
        with c_tag:
            tag_control(rid, target, tags_now, here["tag"])
    if can["delete"]:
        with c_del:
            delete_buttons(rid, runs)
        confirm_delete(ids)


common.ensure_app_navigation()
st.title("Upload & runs")
store = common.get_store()


# ---- upload --------------------------------------------------------------------------
CLUSTER_MODES = {"auto": "picked automatically", "none": "none", "field": "this field:"}
# the role decides whether the upload controls exist; the store checks the role again
if auth.may("ingest"):
    uploads, cluster_key = upload_controls()
else:
    role_note("Uploading")
    uploads, cluster_key = [], None
columns = st.session_state.get("up_columns") or None
if uploads:
    options = (cluster_key, format_columns(columns or {}))
    listed = [(f.name, f.getvalue()) for f in uploads]
    sorted_files = sort_uploads(listed, options)
    signature = (tuple(sorted_files["shas"]), options)
    if st.session_state.get("up_sig") != signature:
        result = read_fresh(sorted_files, options, cluster_key, columns)
        if not result.get("retry"):
            st.session_state["up_sig"] = signature
        st.session_state["up_result"] = result

result = st.session_state.get("up_result") if uploads else None
if result is not None:
    report = result.get("report")
    problems = pd.DataFrame(result.get("problems") or [],
                            columns=["file", "where", "kind", "reason"])
    already = result.get("already") or []
    if "error" in result:
        exc = result["error"]
        common.stop_if_unreachable(exc)
        st.error("Nothing was written to the store. The upload could not be read:")
        if isinstance(exc, IngestError):
            problems = pd.DataFrame([problem_row(exc)])
        else:
            st.text(common.masked(exc))
    elif report is None and len(problems):
        st.error(f"Nothing was written to the store: none of the {len(problems)} new file(s) "
                 "could be stored (listed below).")
    elif report is not None:
        new_runs = report.runs[report.runs["status"] != "already present"]
        if len(new_runs):
            st.success(f"Recognised {len(report.runs)} run(s); {len(new_runs)} added or merged. "
                       f"New: {common.md_escape(names_text(list(new_runs['name'])))} (first in "
                       "the runs table below).")
    if already:
        runs_before = list(dict.fromkeys(r for f in already for r in f["runs"]))
        st.info(f"Already stored: {len(already)} file(s) (runs "
                f"{common.md_escape(names_text(runs_before))}); nothing was written for them.")
    if result.get("duplicates"):
        st.caption(f"{len(result['duplicates'])} file(s) in the list have the same content as "
                   f"another one and were read once: "
                   f"{common.md_escape(names_text(result['duplicates']))}.")
    if result.get("failed_before"):
        st.caption(f"{len(result['failed_before'])} file(s) that could not be stored before were "
                   "not read again (change the cluster or column settings to read them again): "
                   f"{common.md_escape(names_text(result['failed_before']))}.")
    if len(problems):
        bad = int((problems["kind"] != "no scores").sum())
        if report is not None:
            st.warning(f"{len(problems)} new file(s) were not stored ({bad} bad, "
                       f"{len(problems) - bad} without scores); every other run was stored "
                       "whole.")
        st.markdown("**Not stored**")
        common.show_table(readable(problems.rename(columns={
            "file": "File", "where": "Where", "kind": "Kind", "reason": "Reason"})),
            "ingest_not_stored", "up_problems")
    if report is not None and len(report.runs):
        st.markdown("**What was recognised in the new files**")
        cols = [c for c in ("name", "model", "source_format", "tasks", "metrics", "n_items",
                            "n_scores", "k_max", "status", "warnings") if c in report.runs]
        recognised = report.runs[cols].rename(columns={"k_max": "answers per item"})
        order = (recognised["status"] == "already present").to_numpy().argsort(kind="stable")
        common.show_table(recognised.iloc[order].reset_index(drop=True), "ingest_report",
                          "up_report")
        if report.warnings:
            st.markdown(f"**Warnings ({len(report.warnings)})**")
            st.text("\n".join(f"- {w}" for w in report.warnings[:50]))
        try:
            audit = store.audit(result["run_ids"])
            flagged = audit[audit["flag"].notna()] if len(audit) else audit
        except EvalbarsError:
            flagged = pd.DataFrame()
        if len(flagged):
            st.markdown(f"**Audit flags ({len(flagged)})**: reported stderr checked against the "
                        "item scores")
            common.show_table(readable(flagged), "ingest_audit", "up_audit")


# ---- tidy tables whose columns were not recognised: a column map -----------------------
NO_COLUMN = "(none)"
choices = (result or {}).get("column_choices") or {}
if choices:
    found = sorted({c for cols in choices.values() for c in cols}, key=str.lower)
    guess = {**suggest_columns(found), **(columns or {})}
    st.markdown("**Tables with other column names**")
    st.caption(f"{len(choices)} table(s) were not read because their columns have other names "
               "than model, task, item_id and score. Say which column is which, and they are "
               "read again with this column map (files already stored are not read twice).")
    with st.form("up_columns_form"):
        picked = {}
        grid = st.columns(4)
        for i, name in enumerate(CANONICAL):
            options = [NO_COLUMN, *found]
            default = guess.get(name)
            picked[name] = grid[i % 4].selectbox(
                name, options, index=options.index(default) if default in options else 0,
                key=f"up_col_{name}")
        submitted = st.form_submit_button("Read the tables again with these columns")
    chosen = {k: v for k, v in picked.items() if v != NO_COLUMN}
    st.caption("The same on the command line:")
    st.code(f"python -m evalcore ingest FILE --columns {shlex.quote(format_columns(chosen))}",
            language="bash")
    if submitted:
        st.session_state["up_columns"] = chosen
        st.rerun()

# ---- runs in the store ---------------------------------------------------------------
st.divider()
st.subheader("Runs in the store")
flash = st.session_state.pop("up_flash", None)
if flash:
    st.success(common.md_escape(flash))
runs = common.runs_table(store)
if runs.empty:
    st.info("The store is empty. Drop files above to add runs.")
    history.history_section(store, auth.actor())   # a delete of the last run can be undone
    st.stop()
common.demo_banner(runs)

view = runs.copy()
if "tags" in view:
    view["tags"] = view["tags"].map(lambda t: ", ".join(t) if isinstance(t, (list, tuple))
                                    else ("" if t is None else ", ".join(list(t))))
show_cols = [c for c in ("run_id", "name", "model", "source_format", "harness",
                         "harness_version", "tags", "created_at", "n_tasks", "n_scores",
                         "has_items") if c in view]
# the runs the last upload stored come first, marked and highlighted
just_stored = set(st.session_state.get("up_new_ids") or [])
is_new = view["run_id"].astype(int).isin(just_stored)
table = readable(view[show_cols])
table.insert(0, "new", ["new" if x else "" for x in is_new])
table = table.iloc[(~is_new).to_numpy().argsort(kind="stable")].reset_index(drop=True)
if just_stored & set(view["run_id"].astype(int)):
    st.caption(f"The {int(is_new.sum())} run(s) stored by the last upload are first and "
               "marked *new*.")
st.dataframe(table.style.apply(
    lambda row: ["background-color: #fff3c4" if row["new"] else "" for _ in row], axis=1),
    hide_index=True, key="up_runs_df")
common.table_downloads(table, "runs", "up_runs")
without_items = view[~view["has_items"].fillna(False).astype(bool)] if "has_items" in view else []
if len(without_items):
    st.caption(f"{len(without_items)} run(s) have no item-level data (results JSON only): the "
               "leaderboard shows them with the harness's reported stderr; paired comparisons "
               "need the sample logs.")

ov = common.compute(analysis.overview, stop=False)
if ov is not None:
    with st.expander("Tasks and metrics per run"):
        common.show_table(readable(ov.tasks), "tasks", "up_tasks")
    if ov.audit is not None and len(ov.audit):
        flagged = ov.audit[ov.audit["flag"].notna()] if "flag" in ov.audit else ov.audit
        with st.expander(f"Stderr audit ({len(flagged)} flag(s))"):
            common.show_table(readable(ov.audit), "audit", "up_audit_all")
    for note in ov.notes:
        st.caption(common.md_escape(note))

# ---- Every Eval Ever download (evalcore.export.eee; docs/formats.md) --------------------
with st.expander("Download as Every Eval Ever"):
    st.caption("Each run as an Every Eval Ever aggregate JSON and, with item scores, its "
               "instance-level JSONL, in the datastore's folder layout; the uncertainty "
               "fields hold the leaderboard's interval, method, confidence, SE and n.")
    e_runs, e_method, e_conf = st.columns([4, 2, 1])
    eee_runs = e_runs.multiselect("Runs", [str(n) for n in runs["name"]], key="up_eee_runs",
                                  format_func=common.run_label(runs))
    eee_method = e_method.selectbox("Interval method", ("wilson", "clopper-pearson", "bayes",
                                                        "clt", "bootstrap", "clustered"),
                                    key="up_eee_method")
    eee_conf = common.confidence_choice("up_eee_conf", container=e_conf)
    asked = (tuple(eee_runs), eee_method, eee_conf)
    if eee_runs and st.button("Prepare the zip", key="up_eee_prepare"):
        from evalcore.export import export_eee, export_eee_zip
        try:
            done = export_eee(store, list(eee_runs), method=eee_method, confidence=eee_conf)
            st.session_state["up_eee_zip"] = (asked, export_eee_zip(done), len(done.files))
        except EvalbarsError as exc:
            common.show_error(exc)
    ready = st.session_state.get("up_eee_zip")
    if ready and ready[0] == asked:
        st.download_button(f"Download every_eval_ever.zip ({ready[2]} files)", data=ready[1],
                           file_name="every_eval_ever.zip", mime="application/zip",
                           key="up_eee_download")

manage_runs(runs)

st.divider()
history.history_section(store, auth.actor())
