"""The deployment files stay in step with the project (no container engine runs here, so
this is what checks them; docs/deploy.md says so): the Dockerfile installs exactly
requirements.txt and starts the dashboard with the command the README runs; compose.yaml
builds that image, keeps its command, gives the app and the CLI one store and mounts the
sign-in secrets and roles file; the deploy/ examples are valid; secrets stay out of the
image and out of git."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from evalcore.roles import load_roles

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9_,-]+\])?==[0-9][0-9A-Za-z.+!-]*$")


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def requirement_lines() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [ln.split("#", 1)[0].strip() for ln in lines if ln.split("#", 1)[0].strip()]


def readme_start_command() -> list[str]:
    """What the README says starts the dashboard (``scripts/run.sh`` is ``... followed by
    `streamlit run app.py```), checked against scripts/run.sh itself."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"`scripts/run\.sh` is `pip install -r requirements\.txt -e \.` "
                      r"followed by `([^`]+)`", readme)
    assert found, "README no longer says what scripts/run.sh runs"
    command = shlex.split(found.group(1))
    assert re.search(r"-m " + re.escape(" ".join(command)) + r"\b",
                     (ROOT / "scripts" / "run.sh").read_text())
    return command


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_every_runtime_requirement_is_pinned_and_authlib_is_there():
    lines = requirement_lines()
    bad = [ln for ln in lines if not PIN.match(ln)]
    assert not bad, f"requirements.txt lines not pinned with ==: {bad}"
    names = {ln.split("==")[0].split("[")[0].lower() for ln in lines}
    assert "authlib" in names          # st.login needs it (streamlit's "auth" extra)


def test_the_image_installs_exactly_requirements_txt():
    steps = instructions()
    runs = [args for kw, args in steps if kw == "RUN"]
    installs = [args for args in runs if re.search(r"\bpip3?\b|\bpython3? -m pip\b", args)]
    assert installs == ["pip install -r requirements.txt"], installs
    copies = [args for kw, args in steps if kw == "COPY"]
    assert copies.index("requirements.txt ./") < copies.index(". .")
    # no other package manager adds Python packages, and no apt package shadows a pin
    assert not any(re.search(r"\b(uv|conda|poetry|pipx)\b", args) for args in runs)
    assert not any(re.search(r"apt-get install[^&]*python3-", args) for args in runs)


def test_the_image_runs_what_the_readme_runs():
    command = readme_start_command()
    cmd = [args for kw, args in instructions() if kw == "CMD"][-1]
    argv = json.loads(cmd)                          # exec form: no shell in between
    assert argv[:len(command)] == command, (argv, command)
    extra = argv[len(command):]
    assert all(a.startswith("--server.") for a in extra), extra
    assert "--server.address=0.0.0.0" in extra     # a container must listen beyond itself
    assert not any(kw == "ENTRYPOINT" for kw, _ in instructions())


def test_python_of_the_image_meets_the_project_floor():
    base = next(args for kw, args in instructions() if kw == "FROM")
    version = re.match(r"python:(\d+)\.(\d+)", base)
    assert version, base
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low = tuple(int(x) for x in re.match(r">=(\d+)\.(\d+)", floor).groups())
    assert tuple(int(x) for x in version.groups()) >= low


def test_compose_builds_the_image_and_keeps_its_command():
    services = compose()["services"]
    app = services["app"]
    assert app["build"] in (".", {"context": "."}), app["build"]
    assert (ROOT / "Dockerfile").exists()
    assert "command" not in app and "entrypoint" not in app   # the image's CMD runs
    assert "8501:8501" in app["ports"]
    cli = services["cli"]
    assert cli["image"] == app["image"]
    assert cli["entrypoint"] == ["python", "-m", "evalcore"]


def test_app_and_cli_share_one_store_and_the_app_has_sign_in():
    services = compose()["services"]
    app_env, cli_env = services["app"]["environment"], services["cli"]["environment"]
    store_keys = ("EVALBARS_STORE", "EVALBARS_DATA_PATH", "PGPASSWORD", "AWS_ACCESS_KEY_ID",
                  "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL")
    for key in store_keys:
        assert app_env[key] == cli_env[key], key
    assert app_env["EVALBARS_STORE"].startswith("ducklake:postgres:")
    assert "password" not in app_env["EVALBARS_STORE"].lower()   # from PGPASSWORD instead
    assert app_env["EVALBARS_DATA_PATH"].startswith("s3://")
    mounts = {m.split(":")[1]: m.split(":")[0] for m in services["app"]["volumes"]}
    assert mounts["/app/.streamlit/secrets.toml"] == "./deploy/secrets.toml"
    assert mounts[app_env["EVALBARS_ROLES"]] == "./deploy/roles.toml"
    assert all(m.endswith(":ro") for m in services["app"]["volumes"])
    # the catalog's PostgreSQL and the bucket's server are services of the same file
    assert "host=postgres" in app_env["EVALBARS_STORE"]
    assert "minio:9000" in app_env["AWS_ENDPOINT_URL"]
    assert {"postgres", "minio", "bucket"} <= set(services)


def test_no_secret_is_written_into_the_compose_file():
    secret = re.compile(r"PASSWORD|SECRET|ACCESS_KEY")
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if secret.search(key):
                assert str(value).startswith("${"), (name, key)   # from .env, never here


def test_deploy_examples_are_valid(tmp_path):
    roles = load_roles(ROOT / "deploy" / "roles.example.toml")
    assert roles.role_for("alice@lab.example") is not None
    secrets = tomllib.loads((ROOT / "deploy" / "secrets.example.toml").read_text())
    auth = secrets["auth"]
    for key in ("redirect_uri", "cookie_secret", "client_id", "client_secret",
                "server_metadata_url"):
        assert auth[key], key
    assert auth["redirect_uri"].endswith("/oauth2callback")   # what st.login requires
    env_keys = {ln.split("=")[0] for ln in (ROOT / "deploy" / "env.example").read_text()
                .splitlines() if ln and not ln.startswith("#")}
    needed = set(re.findall(r"\$\{([A-Z_]+):\?", COMPOSE.read_text()))
    assert needed <= env_keys, needed - env_keys


def ignored_by(path: str, ignore_file: Path) -> bool:
    """Whether ``path`` or a folder above it matches a pattern of ``ignore_file``."""
    patterns = [ln.strip().rstrip("/") for ln in ignore_file.read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatch(c, p) for c in candidates for p in patterns)


@pytest.mark.parametrize("path", [".streamlit/secrets.toml", "deploy/secrets.toml", ".env"])
def test_secrets_stay_out_of_the_image_and_git(path):
    assert ignored_by(path, ROOT / ".dockerignore"), path
    assert ignored_by(path, ROOT / ".gitignore"), path


def test_deploy_doc_names_every_service_and_says_nothing_was_built_here():
    text = (ROOT / "docs" / "deploy.md").read_text()
    for service in compose()["services"]:
        assert f"`{service}`" in text, service
    assert "no container engine" in text
    assert "tests/test_deploy.py" in text
