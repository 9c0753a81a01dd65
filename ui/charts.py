"""Chart builders for the pages.

The builders themselves are pure Plotly (no Streamlit) and live in ``evalcore.charts`` so
that the report (``evalcore.report``) draws exactly the figures the pages show; this module
re-exports them under the name the pages import.
"""

from evalcore.charts import *  # noqa: F401,F403
from evalcore.charts import AVERAGE_PANEL, COLORS, FONT, plot_text  # noqa: F401
from evalcore.charts_forest import *  # noqa: F401,F403  (forest plot)
from evalcore.charts_noise import *  # noqa: F401,F403  (Noise page)
