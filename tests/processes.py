"""Stopping the servers the tests start (Streamlit, the OpenID Connect provider, the S3
server): terminate, then kill if it has not exited, and always reap the process (an
unreaped child is a ResourceWarning, an error under ``filterwarnings = error``)."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)   # reaped: no ResourceWarning when a loaded machine is slow
