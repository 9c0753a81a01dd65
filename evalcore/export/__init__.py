"""Exports: stored runs written in other tools' formats (no Streamlit, no SQL).

``eee``: Every Eval Ever aggregate JSON and instance-level JSONL in the datastore's folder
layout, with the leaderboard's intervals in the uncertainty fields.
"""

from evalcore.export.eee import (EeeExport, ExportedRun, SCHEMA_VERSION, export_eee,
                                 export_eee_zip, write_eee)

__all__ = ["EeeExport", "ExportedRun", "SCHEMA_VERSION", "export_eee", "export_eee_zip",
           "write_eee"]
