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

import os
import sys
from pathlib import Path

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
