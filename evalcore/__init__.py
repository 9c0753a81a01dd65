"""evalbars core: statistics, ingest and the DuckDB store behind the dashboard and CLI.

Rooms with one-way doors: ``ingest`` (files in, canonical records out) -> ``store``
(DuckDB, the only module that writes SQL) -> ``stats`` (numbers in, result objects out).
``analysis`` joins store queries to stats for the pages and the CLI.
No module here imports Streamlit.
"""

__version__ = "0.1.0"
