"""Streamlit's Deploy button and developer menu are off for users in every way the app is
started: the project's .streamlit/config.toml says so, Streamlit (1.67) applies it also when
started from another folder, and the Docker image carries the same file with nothing that
overrides it. (tests/browser/test_secrets.py checks the rendered page in Chromium.)"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WANTED = {"client.toolbarMode": "viewer", "client.showErrorDetails": "type"}


def test_config_file_hides_the_developer_controls():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    for key, value in WANTED.items():
        section, name = key.split(".")
        assert config[section][name] == value, key


def test_streamlit_applies_it_when_started_from_another_folder(tmp_path):
    """``streamlit run /path/to/app.py`` from elsewhere (what ``config._main_script_path``
    is set to by ``streamlit run``), with no user config and no STREAMLIT_* variables."""
    code = (
        "import sys, streamlit.config as c\n"
        "c._main_script_path = sys.argv[1]\n"
        "c.get_config_options(force_reparse=True)\n"
        f"print(' '.join(str(c.get_option(k)) for k in {list(WANTED)!r}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "app.py")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == list(WANTED.values())


def test_docker_image_uses_the_same_config():
    dockerfile = (ROOT / "Dockerfile").read_text()
    instructions = [line.strip() for line in dockerfile.splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
    assert "WORKDIR /app" in instructions
    assert "COPY . ." in instructions
    cmd = [line for line in instructions if line.startswith("CMD")][-1]   # the last one runs
    assert '"streamlit", "run", "app.py"' in cmd      # started in /app: /app/.streamlit applies
    assert not re.search(r"STREAMLIT_CLIENT_|--client\.", dockerfile)
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for path in (".streamlit", ".streamlit/config.toml"):
        assert not any(fnmatch.fnmatch(path, pattern.rstrip("/")) for pattern in ignored), path


def test_run_script_starts_the_app_from_the_project_folder():
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert 'cd "$(dirname "$0")/.."' in script
    assert re.search(r"-m streamlit run app\.py", script)
    assert "client." not in script
