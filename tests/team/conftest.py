"""A local S3-compatible server (moto, from PyPI) for the object-storage tests.

``moto_s3`` starts ``moto_server`` on 127.0.0.1 on a free port, once per session, and stops
it at the end; each test makes its own bucket (``new_bucket``). Without moto installed the
tests are skipped, or fail when ``$CI`` is set (CI installs requirements-dev.txt)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import in_ci
from tests.processes import stop

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "evalbars-test", "AWS_SECRET_ACCESS_KEY": "evalbars-secret",
               "AWS_REGION": "us-east-1"}


@dataclass
class MotoS3:
    endpoint: str
    process: subprocess.Popen

    @property
    def env(self) -> dict[str, str]:
        return CREDENTIALS | {"AWS_ENDPOINT_URL": self.endpoint}

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])

    def new_bucket(self) -> str:
        name = f"evals-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        out, token = [], None
        while True:
            kw = {"Bucket": bucket} | ({"ContinuationToken": token} if token else {})
            page = self.client().list_objects_v2(**kw)
            out += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return out
            token = page["NextContinuationToken"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _moto_server() -> str | None:
    exe = Path(sys.executable).with_name("moto_server")
    return str(exe) if exe.exists() else shutil.which("moto_server")


def _start(extra_env: dict[str, str]):
    exe = _moto_server()
    try:
        import boto3  # noqa: F401
    except ImportError:
        exe = None
    if exe is None:
        message = "moto[server] and boto3 are not installed (requirements-dev.txt)"
        if in_ci():
            pytest.fail(f"{message}; CI must not skip the object-storage tests", pytrace=False)
        pytest.skip(message)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | extra_env
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    server = MotoS3(f"http://127.0.0.1:{port}", proc)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("moto_server did not start", pytrace=False)
            time.sleep(0.2)
    try:
        yield server
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def moto_s3():
    """An S3-compatible server that accepts any credentials."""
    yield from _start({})


@pytest.fixture
def moto_s3_with_auth():
    """An S3-compatible server that checks credentials (moto's IAM check from the first
    request on): every key evalbars is given there is unknown to it, so refused (HTTP 403)."""
    yield from _start({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
