#!/usr/bin/env bash
# Install everything the tests need and run the whole suite.
# - Python packages from requirements-dev.txt (into the current interpreter; use a venv if you prefer).
# - Debian's chromium for the real-browser tests, when it is missing and we are root with apt-get.
#   Without it the browser tests are skipped with a reason, everything else still runs.
# - Debian's postgresql (15) for the team-catalog tests (tests/pg_cluster.py starts a private
#   cluster on 127.0.0.1 per test session), when its server programs are missing and we are
#   root with apt-get. Without it those tests are skipped, and fail when $CI is set.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -m pip install --disable-pip-version-check -q -r requirements-dev.txt -e .
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests ..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; browser tests will be skipped"
fi
# The same lookup as tests/pg_cluster.py: $EVALBARS_PG_BIN, pg_ctl on PATH, Debian's folders.
have_postgres() {
  [ -n "${EVALBARS_PG_BIN:-}" ] && [ -x "$EVALBARS_PG_BIN/initdb" ] && return 0
  command -v pg_ctl >/dev/null && command -v initdb >/dev/null && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
if ! have_postgres && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian postgresql for the PostgreSQL catalog tests ..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
    || echo "warning: could not install postgresql; the PostgreSQL catalog tests will be skipped (failed under CI)"
fi
# The OpenID Connect provider of the sign-in tests (oidc-provider-mock, in
# requirements-dev.txt) is started on 127.0.0.1 by the tests themselves
# (tests/auth/oidc_provider.py); without the package they are skipped, and fail under CI.
# poppler-utils (pdftoppm/pdftotext: the report PDF's pages) and pdflatex (the LaTeX tables
# compile); without them those checks are skipped with the reason.
if { ! command -v pdftoppm >/dev/null || ! command -v pdflatex >/dev/null; } \
    && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing poppler-utils and pdflatex for the report tests ..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends poppler-utils \
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
