"""A real OpenID Connect provider on 127.0.0.1 for the sign-in tests: ``oidc-provider-mock``
(a test dependency, requirements-dev.txt) run as its own process.

Its sign-in page lists the predefined users as buttons (``--user-claims``, each a JSON
object with ``sub`` and the claims the ID token carries); it accepts any client id and
secret. Without the package the tests that need it are skipped with the reason, and fail
when ``$CI`` is set.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import in_ci
from tests.processes import stop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_provider() -> None:
    """Skip (fail under CI) when oidc-provider-mock is not installed."""
    if importlib.util.find_spec("oidc_provider_mock") is None:
        reason = "oidc-provider-mock is not installed (pip install -r requirements-dev.txt)"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)


@contextlib.contextmanager
def oidc_provider(log_dir: Path, users: list[dict]) -> Iterator[str]:
    """Run the provider with ``users`` (claims dicts with ``sub``) until the block ends;
    yield its base URL once its discovery document answers (30 s at most)."""
    require_provider()
    port = _free_port()
    args = [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1",
            "--port", str(port)]
    for user in users:
        args += ["--user-claims", json.dumps(user)]
    log = open(log_dir / "oidc.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/.well-known/openid-configuration",
                                            timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError("the OpenID Connect provider did not start:\n"
                                   + (log_dir / "oidc.log").read_text())
            time.sleep(0.2)
        yield url
    finally:
        stop(proc)
        log.close()


def auth_secrets(provider_url: str) -> str:
    """The ``[auth]`` section of ``.streamlit/secrets.toml`` for an app on 127.0.0.1 (any
    port: Streamlit fills in ``{port}``) signing in through ``provider_url``."""
    return (
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "test-cookie-secret-8f2c41d9a7b3e6f0"\n'
        'client_id = "evalbars-test"\n'
        'client_secret = "evalbars-test-secret"\n'
        f'server_metadata_url = "{provider_url}/.well-known/openid-configuration"\n'
    )
