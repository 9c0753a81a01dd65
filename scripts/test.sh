#!/usr/bin/env bash
# Install everything the tests need and run the whole suite.
# - Python packages from requirements-dev.txt (into the current interpreter; use a venv if you prefer).
# - Debian's chromium for the real-browser tests, when it is missing and we are root with apt-get.
#   Without it the browser tests are skipped with a reason, everything else still runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -m pip install --disable-pip-version-check -q -r requirements-dev.txt -e .
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests ..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; browser tests will be skipped"
fi
# poppler-utils (pdftoppm/pdftotext: the report PDF's pages) and pdflatex (the LaTeX tables
# compile); without them those checks are skipped with the reason.
if { ! command -v pdftoppm >/dev/null || ! command -v pdflatex >/dev/null; } \
    && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing poppler-utils and pdflatex for the report tests ..."
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends poppler-utils \
      texlive-latex-base texlive-latex-recommended >/dev/null) \
    || echo "warning: could not install poppler-utils/texlive; those report checks will be skipped"
fi
# pytest exits 5 when it collected no tests: that is a failure here too.
set +e
"$PY" -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" = "5" ]; then echo "error: no tests were collected"; exit 1; fi
exit "$rc"
