"""Reports: one self-contained HTML file (and its PDF) from the analysis layer.

``build_report(store, ReportSpec(...))`` gathers the results (``build``), ``key_findings``
picks what page 1 leads with (``findings``), ``render_html`` turns them into one HTML file
with Plotly's JavaScript inlined once (``html``),
``methods_text`` writes the methods section from what was computed (``methods``) and
``write_pdf`` prints the HTML with headless Chromium (``pdf``). No Streamlit here; Plotly is
needed (it is a dashboard dependency).
"""

from evalcore.report.build import (  # noqa: F401
    SECTIONS,
    ComparisonSection,
    PlanRow,
    Report,
    ReportSpec,
    RunProvenance,
    SummaryOnlyGroup,
    build_report,
)
from evalcore.report.findings import KeyFindings, key_findings  # noqa: F401
from evalcore.report.methods import methods_paragraphs, methods_text  # noqa: F401
