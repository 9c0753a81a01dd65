"""A store location with a password, on every page: the password is never shown, and a
store that cannot be reached gives one message and stops the page.

Two ways a team store becomes unreachable, both with ``password=...`` in $EVALBARS_STORE:

- never reachable: a closed port on 127.0.0.1 (the store cannot even be opened);
- gone after opening: a private PostgreSQL cluster (tests/pg_cluster.py, started for this
  module only, so stopping it disturbs no other test) holds the store, the pages open it,
  then the server stops; each page's cached connection then fails on its first query.

Every page must then show exactly one error ("The store at <location, password masked>
cannot be reached: <reason>. ..."), no exception, never "the store is empty", and the
password nowhere in what it renders (every element's protobuf, widgets and sidebar
included). When the server is back, the same process reads the store again.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from evalcore.report import ReportSpec, build_report, methods_text
from evalcore.report.html import render_html
from evalcore.report.latex import STYLES, latex_document, report_tables
from evalcore.store import Store
from tests.conftest import in_ci
from tests.pages.conftest import MISTRAL, app, no_exception, page, plain, toy_runs

SECRET = "SECRETPW-7c1f"
PAGES = ("upload", "leaderboard", "compare", "repeats", "noise", "planner", "items",
         "method_check", "report")
STORE_FREE = ("method_check",)          # pages that never open the store
PARAMS = {"planner": {"src": "store"}}  # the planner reads the store in this mode only


def rendered_text(at) -> str:
    """Everything an AppTest run rendered: the protobuf text of every element and block."""
    return "\n".join(str(node.proto) for node in at._tree if getattr(node, "proto", None))


def run_page(name: str):
    at = page(name)
    for key, value in PARAMS.get(name, {}).items():
        at.query_params[key] = value
    return at.run()


def check_one_unreachable_message(at, reasons: tuple[str, ...]) -> str:
    """The page stopped with the one "cannot be reached" error; returns its text."""
    no_exception(at)
    shown = rendered_text(at)
    assert SECRET not in shown
    assert "store is empty" not in shown.lower()
    errors = [plain(e.value) for e in at.error]
    assert len(errors) == 1, errors
    assert "cannot be reached: " in errors[0], errors[0]
    assert "password=***" in errors[0]
    assert any(r in errors[0] for r in reasons), errors[0]
    assert not at.warning and not at.info, [w.value for w in (*at.warning, *at.info)]
    return errors[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def closed_port_store(monkeypatch, tmp_path) -> str:
    location = (f"ducklake:postgres:dbname=evals host=127.0.0.1 port={free_port()} "
                f"user=evalbars password={SECRET}")
    monkeypatch.setenv("EVALBARS_STORE", location)
    monkeypatch.setenv("EVALBARS_DATA_PATH", str(tmp_path / "data"))
    return location


REFUSED = ("connection refused",)


@pytest.mark.parametrize("name", PAGES)
def test_page_with_a_store_that_cannot_be_opened(closed_port_store, name):
    at = run_page(name)
    if name in STORE_FREE:
        no_exception(at)
        assert not at.error and SECRET not in rendered_text(at)
        return
    message = check_one_unreachable_message(at, REFUSED)
    assert message.startswith("The store at ducklake:postgres:dbname=evals host=127.0.0.1 port=")
    assert "Check that the database server is running" in message


def test_app_with_a_store_that_cannot_be_opened(closed_port_store, monkeypatch):
    """Through app.py (sidebar, demo loading on, navigation): the sidebar names the store
    with its password masked and the demo loader adds no second message."""
    monkeypatch.setenv("EVALBARS_DEMO", "1")
    at = app().run()
    check_one_unreachable_message(at, REFUSED)
    captions = [plain(c.value) for c in at.sidebar.caption]
    assert any(c.startswith("Store: ducklake:postgres:dbname=evals") and
               c.endswith("password=***") for c in captions), captions
    for name in PAGES:
        if name in STORE_FREE or name in PARAMS:   # (the planner's store mode: above)
            continue
        at.switch_page(f"pages/{name}.py").run()
        assert at.title[0].value and check_one_unreachable_message(at, REFUSED)


# ---- a PostgreSQL store that goes away --------------------------------------------------
@pytest.fixture(scope="module")
def own_cluster():
    """A private cluster for this module: its server is stopped and started by the tests."""
    from tests.pg_cluster import ClusterError, PgCluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = "PostgreSQL server binaries not found"
        if in_ci():
            pytest.fail(f"{message}; CI must not skip the PostgreSQL tests", pytrace=False)
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


def stop_server(cluster) -> None:
    cluster._run("pg_ctl", "-D", str(cluster.data), "-m", "fast", "-w", "stop", timeout=60)


def start_server(cluster) -> None:
    options = (f"-c listen_addresses={cluster.host} -p {cluster.port} "
               f"-c unix_socket_directories={cluster.sock} -c fsync=off")
    cluster._run("pg_ctl", "-D", str(cluster.data), "-l", str(cluster.log), "-o", options,
                 "-w", "-t", "60", "start", timeout=90)


@pytest.fixture
def team_store(own_cluster, monkeypatch, tmp_path) -> str:
    """A PostgreSQL store holding the three toy runs, named with a password (the cluster
    trusts local connections, so libpq never sends it: the location works as written)."""
    location = f"{own_cluster.ducklake_url(own_cluster.new_database())} password={SECRET}"
    data = tmp_path / "data"
    Store(location, data_path=data).ingest(toy_runs())
    monkeypatch.setenv("EVALBARS_STORE", location)
    monkeypatch.setenv("EVALBARS_DATA_PATH", str(data))
    return location


GONE = ("the connection to the database server was lost", "connection refused")


def test_pages_when_the_server_stops_and_comes_back(own_cluster, team_store, fixtures_dir):
    for name in PAGES:                    # the store opens and every page works
        at = run_page(name)
        no_exception(at)
        assert not at.error, (name, [e.value for e in at.error])
        assert SECRET not in rendered_text(at)
    upload = page("upload").run()         # open before the server stops, upload after
    stop_server(own_cluster)
    try:
        for name in PAGES:
            at = run_page(name)
            if name in STORE_FREE:
                no_exception(at)
                continue
            check_one_unreachable_message(at, GONE)
        data = (fixtures_dir / MISTRAL).read_bytes()
        upload.file_uploader(key="up_files").set_value(
            [(MISTRAL.split("/")[-1], data, "application/json")]).run()
        check_one_unreachable_message(upload, GONE)
    finally:
        start_server(own_cluster)
    at = run_page("leaderboard")          # the cached store reconnects
    no_exception(at)
    assert not at.error and len(at.dataframe) > 0
    upload.run()                          # the same upload is tried again, and stored
    no_exception(upload)
    assert not upload.error and any("Recognised 1 run(s)" in s.value for s in upload.success)


def test_app_sidebar_masks_the_password_of_a_working_store(team_store):
    at = app().run()
    no_exception(at)
    assert not at.error
    assert SECRET not in rendered_text(at)
    captions = [plain(c.value) for c in at.sidebar.caption]
    assert any(c.startswith("Store: ducklake:postgres:") and c.endswith("password=***")
               for c in captions), captions


def test_rejected_password(own_cluster, monkeypatch, tmp_path):
    """A role that must give a password (scram-sha-256) and a wrong one in the location."""
    db = own_cluster.new_database()
    own_cluster._run("psql", "-h", own_cluster.host, "-p", str(own_cluster.port), "-U",
                     own_cluster.user, "-d", db, "-c",
                     "CREATE ROLE evalbars_pw LOGIN PASSWORD 'the-right-one'")
    hba = Path(own_cluster.data) / "pg_hba.conf"
    hba.write_text("host all evalbars_pw 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    own_cluster._run("pg_ctl", "-D", str(own_cluster.data), "reload")
    monkeypatch.setenv("EVALBARS_STORE", f"ducklake:postgres:dbname={db} host=127.0.0.1 "
                                         f"port={own_cluster.port} user=evalbars_pw "
                                         f"password={SECRET}")
    monkeypatch.setenv("EVALBARS_DATA_PATH", str(tmp_path / "data"))
    for name in ("leaderboard", "upload"):
        check_one_unreachable_message(run_page(name),
                                      ("refused the login (user name or password)",))


def test_report_never_names_the_password(team_store):
    store = Store(team_store)
    report = build_report(store, ReportSpec(comparisons=(("alpha", "beta"),)))
    assert report.store_path.endswith("password=***")
    outputs = [render_html(report), methods_text(report), repr(store),
               *(latex_document(report_tables(report, style=s)) for s in STYLES)]
    assert all(SECRET not in text for text in outputs)


def test_report_page_never_names_the_password(team_store):
    at = page("report").run()
    no_exception(at)
    assert not at.error
    assert SECRET not in rendered_text(at)

