# evalbars dashboard: Streamlit on port 8501, DuckDB store on the /data volume.
#
#   docker build -t evalbars .
#   docker run --rm -p 8501:8501 -v evalbars-data:/data evalbars
#   docker run --rm -v evalbars-data:/data -v "$PWD/results:/in:ro" evalbars \
#       python -m evalcore ingest /in          # the CLI, against the same store
#
# A lab server (PostgreSQL catalog, S3-compatible bucket, sign-in): compose.yaml beside this
# file, walked through in docs/deploy.md. Served on 0.0.0.0 without [auth] in
# .streamlit/secrets.toml (mounted at run time, never copied in), every page says that
# anyone who reaches it may write.
#
# Build with --build-arg WITH_CHROMIUM=1 to add Debian's chromium, which kaleido uses to
# save charts as PNG on the server; without it the charts' own download buttons are used.
FROM python:3.11-slim

ARG WITH_CHROMIUM=0

# Streamlit's own settings (upload size, no Deploy button or developer menu, error details)
# come from .streamlit/config.toml, copied with the app below, as in a local run; a
# STREAMLIT_* variable here would override it.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    EVALBARS_STORE=/data/evalbars \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_SERVER_HEADLESS=true

# hadolint ignore=DL3008
RUN if [ "$WITH_CHROMIUM" = "1" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends chromium \
        && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app

# Dependencies first, so code changes do not invalidate this layer.
COPY requirements.txt ./
RUN pip install -r requirements.txt

RUN groupadd --system evalbars \
    && useradd --system --gid evalbars --create-home --home-dir /home/evalbars evalbars \
    && mkdir -p /data \
    && chown evalbars:evalbars /data

# The application (see .dockerignore for what stays out); owned by root, read-only for the app user.
COPY . .

USER evalbars

VOLUME ["/data"]
EXPOSE 8501

# slim has no curl: probe Streamlit's health endpoint with the standard library.
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]

CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
