#!/usr/bin/env bash
# Install the runtime and start the dashboard on the bundled demo data (http://localhost:8501).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -m pip install --disable-pip-version-check -q -r requirements.txt -e .
exec "$PY" -m streamlit run app.py "$@"
