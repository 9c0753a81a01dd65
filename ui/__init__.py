"""Shared dashboard code: store access, URL state, exports (``ui.common``) and Plotly chart
builders (``ui.charts``). No statistics here: every number comes from ``evalcore``."""
