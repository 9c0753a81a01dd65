"""Shared test fixtures: where the fixture folders live, temporary stores.

Two folders of real harness output feed the tests:

- ``../shared/fixtures/`` beside the clone (``FIXTURES``; ``$EVALBARS_FIXTURES`` points
  elsewhere): the lead's curated files, not part of the repository.
- ``tests/fixtures/wild/`` in the repository (``WILD``): the corpus of real files from public
  repositories, each with a PROVENANCE.md.

A missing folder skips the tests that need it, with the reason, on a developer's machine.
When ``$CI`` is set (any value but empty, ``0``, ``false`` or ``no``), a missing folder is a
failure instead: a CI run that silently skipped the real-file tests would be green for nothing.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# ../shared/fixtures relative to the repository (CI clones next to a copy of shared/).
FIXTURES = Path(os.environ.get("EVALBARS_FIXTURES", ROOT.parent / "shared" / "fixtures"))
WILD = ROOT / "tests" / "fixtures" / "wild"


def in_ci() -> bool:
    """True when ``$CI`` is set to something other than empty/0/false/no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_folder(path: Path, what: str) -> Path:
    """``path`` if it is a folder; else skip (developer machine) or fail (``$CI`` set)."""
    if path.is_dir():
        return path
    message = f"{what} not found at {path}"
    if in_ci():
        pytest.fail(f"{message}; CI must not skip the real-file tests "
                    "(set EVALBARS_FIXTURES or lay shared/ beside the clone)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_cluster():
    """A private PostgreSQL cluster for the whole session (tests/pg_cluster.py), stopped at
    the end. Missing server binaries skip the tests that need it (developer machine) or fail
    them (``$CI`` set: scripts/test.sh installs Debian's postgresql)."""
    from tests.pg_cluster import ClusterError, PgCluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = ("PostgreSQL server binaries (initdb, pg_ctl, postgres, createdb) not found "
                   "on PATH, in $EVALBARS_PG_BIN or in /usr/lib/postgresql/*/bin")
        if in_ci():
            pytest.fail(f"{message}; CI must not skip the PostgreSQL catalog tests "
                        "(scripts/test.sh installs Debian's postgresql as root)", pytrace=False)
        pytest.skip(message)
    cluster = PgCluster(bin_dir)
    try:
        cluster.start()
    except ClusterError as exc:
        cluster.stop()
        pytest.fail(f"could not start a private PostgreSQL cluster: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return require_folder(FIXTURES, "shared fixtures")


@pytest.fixture(scope="session")
def wild_dir() -> Path:
    return require_folder(WILD, "the wild corpus (tests/fixtures/wild)")


# ---- stores ------------------------------------------------------------------------------
# Every test that creates a store gets its location from ``store_location`` (one store) or
# ``store_locations`` (several), so the whole suite can run against another catalog (a
# PostgreSQL one) by parametrizing ``store_locations`` alone.

@dataclass(frozen=True)
class StoreLocation:
    """Where a test store lives: what to pass to ``Store`` and to a CLI subprocess."""

    location: str                  # Store(location, data_path=data_path) / --store location
    data_path: str | None = None   # --data-path / $EVALBARS_DATA_PATH (ducklake: URLs)

    def __str__(self) -> str:
        return self.location

    @property
    def env(self) -> dict[str, str]:
        """Environment variables naming this store (for a subprocess or monkeypatch.setenv)."""
        env = {"EVALBARS_STORE": self.location}
        if self.data_path:
            env["EVALBARS_DATA_PATH"] = self.data_path
        return env

    @property
    def cli_args(self) -> list[str]:
        """``--store LOCATION [--data-path DIR]`` for the CLI."""
        return ["--store", self.location] + (["--data-path", self.data_path]
                                             if self.data_path else [])

    def open(self, **kw: Any):
        from evalcore.store import Store
        return Store(self.location, data_path=self.data_path, **kw)

    def exists(self) -> bool:
        """True once a store was created there (a local folder's catalog file exists)."""
        if self.location.startswith("ducklake:"):
            return True
        return (Path(self.location) / "catalog.sqlite").exists()


def new_local_store_location(folder: Path) -> StoreLocation:
    """A local store folder (catalog.sqlite + data/), created on first use."""
    return StoreLocation(str(folder))


class StoreLocations:
    """Makes fresh, empty store locations for one test: ``new(name)``."""

    def __init__(self, root: Path, template: Path | None) -> None:
        self._root, self._template = root, template

    def new(self, name: str = "store") -> StoreLocation:
        folder = self._root / name
        if self._template is not None and not folder.exists():
            shutil.copytree(self._template, folder)   # an empty store: faster than creating
        return new_local_store_location(folder)


@pytest.fixture(scope="session", autouse=True)
def _scan_component_manifests_once():
    """Each new ``AppTest`` scans every installed distribution for Streamlit component
    manifests (``BidiComponentManager.discover_and_register_components``; about 1 s with a
    hundred packages), where a served app scans once at start. The installed packages do not
    change during a test session, so the scan runs once and its result is reused."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:   # a Streamlit without component manifests: nothing to scan
        yield
        return
    scan = manifest_scanner.scan_component_manifests
    cached = functools.cache(scan)
    manifest_scanner.scan_component_manifests = cached
    try:
        yield
    finally:
        manifest_scanner.scan_component_manifests = scan


@pytest.fixture(autouse=True)
def _close_store_connections():
    """Each store connection a test opened is closed after it (about 5 MB each; a session of
    hundreds of stores would otherwise keep them all). Stores of session fixtures reconnect
    on their next use."""
    from evalcore.store.catalog import close_connections, open_connection_keys
    before = open_connection_keys()
    yield
    close_connections(open_connection_keys() - before)


@pytest.fixture(scope="session")
def _empty_store_template(tmp_path_factory) -> Path:
    from evalcore.store import Store
    folder = tmp_path_factory.mktemp("empty-store") / "store"
    store = Store(folder)
    store.close()   # the SQLite catalog is checkpointed: a consistent folder to copy
    return folder


@pytest.fixture
def store_locations(tmp_path, _empty_store_template) -> StoreLocations:
    return StoreLocations(tmp_path, _empty_store_template)


@pytest.fixture
def store_location(store_locations) -> StoreLocation:
    return store_locations.new("store")


class PostgresStoreLocations:
    """Fresh, empty team stores on the session's private PostgreSQL cluster: ``new(name)``
    makes a new database (the catalog) and a data folder under the test's tmp_path."""

    def __init__(self, root: Path, cluster) -> None:
        self._root, self._cluster = root, cluster

    def new(self, name: str = "store") -> StoreLocation:
        data = self._root / name / "data"
        data.mkdir(parents=True, exist_ok=True)
        return StoreLocation(self._cluster.ducklake_url(self._cluster.new_database()), str(data))


# Markers given by where a test lives and what it uses (pytest.ini declares them), so that
# ``pytest -m "not slow"`` is a quick run of everything in-process:
# browser = a real Chromium; postgres = the private PostgreSQL cluster; apptest = a page run
# through streamlit.testing; slow = all of those plus the tests named in SLOW_TESTS.
_APPTEST_FILES = ("tests/pages/", "tests/report/test_page.py", "tests/store/test_concurrent_writers.py")
# (module path, test name prefix): simulations and whole-corpus runs that take 10 s or more
# on a quiet 2-core machine
SLOW_TESTS: tuple[tuple[str, str], ...] = ()


def pytest_collection_modifyitems(config, items):
    root = ROOT.as_posix() + "/"
    for item in items:
        path = Path(str(item.fspath)).as_posix().removeprefix(root)
        callspec = getattr(item, "callspec", None)
        params = set(map(str, callspec.params.values())) if callspec else set()
        uses_pg = "pg_cluster" in item.fixturenames or "postgres" in params
        uses_browser = path.startswith("tests/browser/") or item.get_closest_marker("browser")
        uses_apptest = path.startswith(_APPTEST_FILES) or "AppTest" in vars(item.module)
        if uses_pg:
            item.add_marker(pytest.mark.postgres)
        if uses_browser:
            item.add_marker(pytest.mark.browser)
        if uses_apptest:
            item.add_marker(pytest.mark.apptest)
        if uses_pg or uses_browser or uses_apptest or any(
                path == f and item.name.startswith(n) for f, n in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
