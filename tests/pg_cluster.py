"""A private, throw-away PostgreSQL cluster for the team-catalog tests and benches.

The tests run the store against a real PostgreSQL catalog (``ducklake:postgres:...``). This
module starts one cluster per test session, in a temporary folder of its own:

- ``initdb`` with trust authentication for the superuser ``postgres``, UTF-8;
- the server listens on 127.0.0.1 only, on a free port, with its unix socket in the cluster's
  private folder (never the system's ``/var/run/postgresql``);
- PostgreSQL refuses to run as root, so when we are root the server programs run as the
  ``postgres`` user (Debian's package creates it) and the folder is handed to that user;
- a small watchdog process stops the cluster and deletes its folder if the process that
  started it dies without calling :meth:`PgCluster.stop` (a killed pytest leaves nothing
  running);
- ``fsync=off``: a test cluster that loses its data on a power cut loses nothing of value,
  and commits are several times faster. It changes nothing a client can observe.

Each test asks for its own database (:meth:`PgCluster.new_database`), so catalogs never leak
between tests. Server binaries are looked up in ``$EVALBARS_PG_BIN``, then beside ``pg_ctl``
on ``PATH``, then in Debian's ``/usr/lib/postgresql/<version>/bin`` (highest version first).

Run by hand, ``python tests/pg_cluster.py`` starts a cluster, prints a store URL for
``--store`` / ``EVALBARS_STORE`` and keeps it running until Ctrl-C.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres", "createdb")


class ClusterError(RuntimeError):
    """The cluster could not be started or used; the message carries the server log's tail."""


def find_bin_dir() -> Path | None:
    """The folder holding initdb, pg_ctl, postgres and createdb, or None when there is none."""
    candidates: list[Path] = []
    if os.environ.get("EVALBARS_PG_BIN"):
        candidates.append(Path(os.environ["EVALBARS_PG_BIN"]))
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)

    def version(p: Path) -> tuple:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name)) or (0,)

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for folder in candidates:
        if all((folder / prog).is_file() and os.access(folder / prog, os.X_OK)
               for prog in SERVER_PROGRAMS):
            return folder
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> str | None:
    """'postgres' when we are root (the server refuses root), else None (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    import pwd
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterError("running as root, PostgreSQL needs an unprivileged user to run "
                           "as, and there is no 'postgres' user (Debian's postgresql "
                           "package creates it)") from None
    return "postgres"


class PgCluster:
    """One private PostgreSQL cluster: ``start()``, ``new_database()``, ``stop()``.

    ``base`` (a new temporary folder unless given) holds ``data/`` (the cluster),
    ``sock/`` (the unix socket) and ``server.log``.
    """

    def __init__(self, bin_dir: Path, base: Path | None = None) -> None:
        self.bin_dir = Path(bin_dir)
        self.base = Path(base) if base else Path(tempfile.mkdtemp(prefix="evalbars-pg-"))
        self.data = self.base / "data"
        self.sock = self.base / "sock"
        self.log = self.base / "server.log"
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.user = "postgres"      # the cluster's superuser (initdb -U), not the OS user
        self._os_user = _server_user()
        self._watchdog: subprocess.Popen | None = None
        self._count = 0

    # -- running programs as the server's OS user -------------------------------------------
    def _run(self, prog: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        cmd = [str(self.bin_dir / prog), *args]
        kwargs = {"user": self._os_user} if self._os_user else {}
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              cwd=self.base, **kwargs)
        if proc.returncode != 0:
            raise ClusterError(f"{prog} failed (exit {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout).strip()}{self._log_tail()}")
        return proc

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\nserver log (last lines):\n" + "\n".join(text) if text else ""

    # -- life cycle ----------------------------------------------------------------------------
    @property
    def version(self) -> str:
        """The server's version line, e.g. 'pg_ctl (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'."""
        return subprocess.run([str(self.bin_dir / "pg_ctl"), "--version"], capture_output=True,
                              text=True, check=True).stdout.strip()

    def start(self, attempts: int = 3) -> PgCluster:
        """initdb and start the server; retry on another port if the chosen one was taken."""
        self.base.mkdir(parents=True, exist_ok=True)
        self.sock.mkdir(exist_ok=True)
        if self._os_user:
            import pwd
            pw = pwd.getpwnam(self._os_user)
            for path in (self.base, self.sock):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(self.base, 0o700)
        self._run("initdb", "-D", str(self.data), "-U", self.user, "--auth=trust",
                  "-E", "UTF8", "--locale=C", "--no-sync", timeout=120)
        last: ClusterError | None = None
        for _ in range(attempts):
            self.port = free_port()
            options = (f"-c listen_addresses={self.host} -p {self.port} "
                       f"-c unix_socket_directories={self.sock} -c fsync=off "
                       f"-c synchronous_commit=off -c full_page_writes=off "
                       f"-c max_connections=300")
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                          "-w", "-t", "60", "start", timeout=90)
                break
            except ClusterError as exc:
                last = exc
        else:
            raise last or ClusterError("the server did not start")
        self._start_watchdog()
        return self

    def _start_watchdog(self) -> None:
        self._watchdog = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--watch", str(os.getpid()),
             str(self.bin_dir), str(self.base)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    def running(self) -> bool:
        """True while the server answers ``pg_ctl status``."""
        if not self.data.is_dir():
            return False
        cmd = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"]
        kwargs = {"user": self._os_user} if self._os_user else {}
        return subprocess.run(cmd, check=False, capture_output=True, cwd=self.base,
                              **kwargs).returncode == 0

    def stop(self) -> None:
        """Stop the server (fast mode: clients are disconnected) and delete the folder."""
        if self._watchdog is not None:
            self._watchdog.terminate()
            self._watchdog.wait(timeout=10)
            self._watchdog = None
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", timeout=60)
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- databases ----------------------------------------------------------------------------
    def new_database(self, prefix: str = "lake") -> str:
        """Create an empty database with a fresh name and return that name."""
        self._count += 1
        name = f"{prefix}_{self._count}_{uuid.uuid4().hex[:8]}"
        self._run("createdb", "-h", self.host, "-p", str(self.port), "-U", self.user, name)
        return name

    def dsn(self, dbname: str) -> str:
        """libpq keyword/value connection string for ``dbname`` (TCP on loopback)."""
        return f"dbname={dbname} host={self.host} port={self.port} user={self.user}"

    def ducklake_url(self, dbname: str) -> str:
        """The DuckLake ATTACH string of a PostgreSQL catalog in ``dbname``."""
        return f"ducklake:postgres:{self.dsn(dbname)}"


def _watch(parent_pid: int, bin_dir: str, base: str) -> int:
    """Watchdog body: when ``parent_pid`` is gone, stop the cluster and delete its folder."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # stop() ends us normally
    while True:
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        time.sleep(0.5)
    cluster = PgCluster(Path(bin_dir), Path(base))
    try:
        if cluster.running():
            cluster._run("pg_ctl", "-D", str(cluster.data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--watch"]:
        return _watch(int(argv[1]), argv[2], argv[3])
    bin_dir = find_bin_dir()
    if bin_dir is None:
        print("PostgreSQL server binaries not found (apt-get install postgresql)", file=sys.stderr)
        return 1
    with PgCluster(bin_dir) as cluster:
        db = cluster.new_database("evalbars")
        print(cluster.version)
        print(f"EVALBARS_STORE='{cluster.ducklake_url(db)}'")
        print("running; Ctrl-C stops it and deletes the cluster", flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
