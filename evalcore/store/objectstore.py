"""Parquet files on S3-compatible object storage (AWS S3, MinIO, R2, GCS's S3 interface).

A store's data path may be ``s3://bucket/prefix/`` (``--data-path`` /
``$EVALBARS_DATA_PATH``); the catalog stays a SQLite file or a PostgreSQL database. DuckDB
reads and writes the objects through its ``httpfs`` extension, installed from PyPI
(``duckdb-ext-httpfs``, pinned in requirements.txt) like the other extensions, so nothing
is downloaded at run time.

Credentials come from the standard AWS variables, read when a connection opens and given to
DuckDB as a temporary (in-memory, never written) S3 secret of that connection:

* ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (required), ``AWS_SESSION_TOKEN``
  (optional);
* ``AWS_REGION`` (else ``AWS_DEFAULT_REGION``, else us-east-1);
* ``AWS_ENDPOINT_URL`` for an S3-compatible server: its host and port become the endpoint,
  addressed path-style (``http://host:port/bucket/key``), over plain HTTP when the URL
  starts with ``http://``. Without it, AWS S3 itself (virtual-host style, HTTPS).

A missing variable, credentials the server refuses, a missing bucket and a server that
cannot be reached are one line each naming what to fix (``object_store_error``): the store
counts as unavailable (``StoreUnavailableError``, CLI exit code 4), like a PostgreSQL
catalog with a wrong password; a write that failed committed nothing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from evalcore.errors import StoreError, StoreUnavailableError
from evalcore.redact import mask_location

S3_SCHEME = "s3://"
SECRET_NAME = "evalbars_s3"          # fixed SQL identifier
KEY_VAR, SECRET_VAR, TOKEN_VAR = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
REGION_VARS = ("AWS_REGION", "AWS_DEFAULT_REGION")
ENDPOINT_VAR = "AWS_ENDPOINT_URL"
DEFAULT_REGION = "us-east-1"


def is_object_store(data_path: str | None) -> bool:
    """True for a data path on S3-compatible object storage (``s3://...``)."""
    return bool(data_path) and data_path.lower().startswith(S3_SCHEME)


@dataclass(frozen=True)
class S3Settings:
    """What DuckDB's S3 secret needs, from the AWS variables (``from_environment``)."""

    key_id: str
    secret: str
    session_token: str | None
    region: str
    endpoint: str | None          # host[:port] of an S3-compatible server, None for AWS
    use_ssl: bool
    url_style: str                # "path" for an S3-compatible server, else "vhost"

    @classmethod
    def from_environment(cls, data_path: str,
                         env: dict[str, str] | None = None) -> S3Settings:
        """The settings for ``data_path``; ``StoreUnavailableError`` naming the variable
        when a credential is missing or the endpoint is not an http(s) URL."""
        env = os.environ if env is None else env
        for var in (KEY_VAR, SECRET_VAR):
            if not env.get(var, "").strip():
                raise StoreUnavailableError(
                    f"store unavailable: {var} is not set; the data path {data_path} is on "
                    f"object storage and needs its credentials in {KEY_VAR} and {SECRET_VAR} "
                    f"(and {ENDPOINT_VAR} for an S3-compatible server). Nothing was written.")
        region = next((env[v].strip() for v in REGION_VARS if env.get(v, "").strip()),
                      DEFAULT_REGION)
        endpoint, use_ssl, style = None, True, "vhost"
        url = env.get(ENDPOINT_VAR, "").strip()
        if url:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise StoreUnavailableError(
                    f"store unavailable: {ENDPOINT_VAR}={mask_location(url)!r} is not an "
                    "http:// or https:// URL of an S3-compatible server (e.g. "
                    "http://127.0.0.1:9000). Nothing was written.")
            endpoint, use_ssl, style = parts.netloc, parts.scheme == "https", "path"
        token = env.get(TOKEN_VAR, "").strip() or None
        return cls(env[KEY_VAR].strip(), env[SECRET_VAR].strip(), token, region, endpoint,
                   use_ssl, style)

    def secret_sql(self) -> str:
        """``CREATE OR REPLACE TEMPORARY SECRET`` for these settings (DDL takes no
        parameters: every value is a quoted literal)."""
        opts = [("KEY_ID", self.key_id), ("SECRET", self.secret), ("REGION", self.region),
                ("URL_STYLE", self.url_style)]
        if self.session_token:
            opts.append(("SESSION_TOKEN", self.session_token))
        if self.endpoint:
            opts.append(("ENDPOINT", self.endpoint))
        body = ", ".join(f"{k} {_quote(v)}" for k, v in opts)
        return (f"CREATE OR REPLACE TEMPORARY SECRET {SECRET_NAME} (TYPE s3, {body}, "
                f"USE_SSL {'true' if self.use_ssl else 'false'})")

    @property
    def place(self) -> str:
        """The object store in words (no secrets)."""
        if self.endpoint:
            return f"the S3-compatible server at {'https' if self.use_ssl else 'http'}://" \
                   f"{self.endpoint} ({ENDPOINT_VAR})"
        return f"AWS S3 (region {self.region})"


def _quote(text: str) -> str:
    if "\x00" in text:
        raise StoreError("an AWS variable contains a NUL character")
    return "'" + text.replace("'", "''") + "'"


def wants_secret(data_path: str | None, catalog_kind: str,
                 env: dict[str, str] | None = None) -> bool:
    """Whether a connection needs the S3 secret: an ``s3://`` data path, or a PostgreSQL
    catalog opened without a data path (it remembers its own, which may be on S3) while
    both AWS credentials are set (with one missing, a catalog whose data is on S3 fails at
    its first read of a data file, and one whose data is in a folder is not refused)."""
    env = os.environ if env is None else env
    if is_object_store(data_path):
        return True
    return (data_path is None and catalog_kind == "postgres"
            and all(env.get(v, "").strip() for v in (KEY_VAR, SECRET_VAR)))


# DuckDB httpfs's words, lower case
_CONNECT_TEXT = ("could not establish connection", "connection refused", "failed to connect",
                 "couldn't connect", "connection reset", "timed out")
_HTTP_CODE = re.compile(r"http(?: code|/\S+)?\s*(\d{3})|\(http code (\d{3})\)", re.I)


def object_store_error(exc: BaseException, action: str) -> StoreError | None:
    """The error in words when ``exc`` is an object-store failure of httpfs (an HTTP
    request to an ``s3://`` data path), else None."""
    text = str(exc)
    low = text.lower()
    if "http" not in low or not ("s3://" in low or "http error" in low or "http put" in low
                                 or "http get" in low or "http head" in low):
        return None
    try:
        settings = S3Settings.from_environment("s3://")
        place = settings.place
    except StoreError:
        place = "the object store"
    code = next((int(a or b) for a, b in _HTTP_CODE.findall(text)), None)
    if any(t in low for t in _CONNECT_TEXT):
        reason = "nothing accepts connections there (connection failed)"
    elif code in (401, 403):
        reason = (f"it refused the credentials (HTTP {code}): check {KEY_VAR} and "
                  f"{SECRET_VAR}")
    elif code == 404:
        reason = (f"the bucket or path does not exist (HTTP 404): create the bucket, or check "
                  f"the data path and {ENDPOINT_VAR}")
    elif code is not None and code >= 500:
        reason = f"the server failed (HTTP {code})"
    else:
        return None
    return StoreUnavailableError(f"store unavailable: {place} cannot be used: {reason}; "
                                 f"{action} did not complete and a write that had not "
                                 "committed changed nothing.")
