"""The report's appendix: the summary-only runs the leaderboard names in one line, the
provenance of every run in one compact table, and the report's notes.

Provenance: one row per source file (run, file name, format, SHA-256, size, upload time). The
hash is shown by its first 12 hex digits (enough to tell the files of a store apart by eye);
the full SHA-256 is the cell's ``title`` (shown on hover) and in ``data-sha256``, so the HTML
file always carries every full hash.
"""

from __future__ import annotations

import re

from evalcore import words
from evalcore.report.build import Report
from evalcore.report.format import e, name, table
from evalcore.report.html_board import summary_only_table

SHORT_HASH = 12


def _base(path: str) -> str:
    """The file's name without its folders (the stored name may be a full local path)."""
    return re.split(r"[\\/]", path)[-1] or path


def _minute(stamp: str) -> str:
    """"2026-12-04 18:58:13 UTC" as "2026-12-04 18:58"."""
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d)", stamp or "")
    return m.group(1) if m else (stamp or "–")


def _run_rows(p) -> list[str]:
    """One table row per source file of run ``p``; the run, its harness and (when every
    file has the same) upload time span the rows."""
    harness = " ".join(x for x in (p.harness or p.source_format, p.harness_version) if x)
    times = list(dict.fromkeys(_minute(f["added_at"]) for f in p.files)) or \
        [_minute(p.created_at)]
    rs = f" rowspan='{len(p.files)}'" if len(p.files) > 1 else ""
    lead = f"<td{rs}>{name(p.name)}</td><td{rs}>{e(harness)}</td>"
    when = f"<td{rs}>{e(times[0])}</td>" if len(times) == 1 else ""
    if not p.files:
        return [f"<tr class='first'>{lead}<td colspan='4' class='muted'>no source file "
                f"recorded</td>{when}</tr>"]
    rows = []
    for i, f in enumerate(p.files):
        full = e(f["sha256"])
        cells = (f"<td><span title='{e(f['name'])}'>{name(_base(f['name']))}</span></td>"
                 f"<td>{e(words.label('file', f['format']))}</td>"
                 f"<td><span class='hash' title='{full}' data-sha256='{full}'>"
                 f"{e(f['sha256'][:SHORT_HASH])}</span></td>"
                 f"<td class='num'>{int(f['size']):,}</td>")
        if len(times) > 1:
            cells += f"<td>{e(_minute(f['added_at']))}</td>"
        elif i == 0:
            cells += when
        rows.append(f"<tr class='first'>{lead}{cells}</tr>" if i == 0 else f"<tr>{cells}</tr>")
    return rows


def provenance_table(report: Report) -> str:
    """Every run's source files: name, format, the SHA-256's first digits (the full hash in
    the title), size and upload time (UTC), one line per file."""
    num_class = ' class="num"'
    head = "".join(f"<th{num_class if h == 'Bytes' else ''}>{h}</th>" for h in
                   ("Run", "Harness", "File", "Format", f"SHA-256 (first {SHORT_HASH})",
                    "Bytes", "Uploaded (UTC)"))
    body = "".join(r for p in report.provenance for r in _run_rows(p))
    return (f"<table class='provenance'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table>")


def appendix_section(report: Report) -> str:
    """Summary-only runs, provenance and notes; empty when there is none of them."""
    parts = []
    if report.has("leaderboard"):
        parts.append(summary_only_table(report))
    if report.has("provenance"):
        parts.append(f"<h3>Provenance</h3><p class='muted'>Every run's source files as the "
                     f"store records them: file name, format, the first {SHORT_HASH} hex digits "
                     f"of its SHA-256 (the full hash is in the HTML file: hover over it), size "
                     f"and upload time.</p>" + provenance_table(report))
    if report.notes:
        parts.append("<h3>Notes</h3><ul class='notes'>"
                     + "".join(f"<li>{e(n)}</li>" for n in report.notes) + "</ul>")
    parts = [p for p in parts if p]
    if not parts:
        return ""
    return ('<section id="appendix" class="page"><h2>Appendix</h2>' + "".join(parts)
            + "</section>")
