"""A throw-away PostgreSQL cluster for the tests (Debian's PostgreSQL binaries), and a TCP
relay that can be cut to make a running server unreachable.

`postgres_url` (session-scoped) runs `initdb` into a temporary directory, starts the server on
a free port of 127.0.0.1 (its unix socket in that directory too), creates a database and a
password user, and yields a `Postgres` (`url`, `user`, `password`, `options()`); at the end
`pg_ctl stop -m immediate` and the directory is deleted. PostgreSQL refuses to run as root:
as root, the binaries run as the `postgres` OS user, who owns the directory. Missing
binaries fail the fixture (CI installs postgresql).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

USER, PASSWORD, DATABASE = "tarn", "tarn-secret", "tarn_tests"


@dataclass
class Postgres:
    """A running cluster: `url` is the JDBC URL of its test database."""

    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def options(self, **more: str) -> dict[str, str]:
        """JDBC catalog options for this database (the user and password as `jdbc.*`)."""
        return {"uri": self.url, "jdbc.user": self.user, "jdbc.password": self.password, **more}

    def connect(self):
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, dbname=self.database, user=self.user,
                               password=self.password, autocommit=True)


def postgres_binary(name: str) -> str:
    """`initdb` / `pg_ctl`: on PATH or in /usr/lib/postgresql/<version>/bin (newest first)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not candidates:
        pytest.fail(f"PostgreSQL's {name} is neither on PATH nor in /usr/lib/postgresql/*/bin: install "
                    "PostgreSQL (Debian: apt-get install postgresql) to run the JDBC catalog tests")
    return candidates[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_server_user(args: list[str]) -> list[str]:
    """Run as `postgres` when we are root (the server refuses root)."""
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


def run(args: list[str], what: str, timeout: float = 60) -> None:
    result = subprocess.run(as_server_user(args), capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server for the session with database `tarn_tests` (see the module)."""
    initdb, pg_ctl = postgres_binary("initdb"), postgres_binary("pg_ctl")
    root = Path(tempfile.mkdtemp(prefix="tarn-pg-"))
    data, log = root / "data", root / "server.log"
    (root / "password").write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        root.chmod(0o700)
        for path in (root, root / "password"):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    port = free_port()
    try:
        run([initdb, "-D", str(data), "-U", USER, f"--pwfile={root / 'password'}", "--auth-local=trust",
             "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"], "initdb")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        run([pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"], "pg_ctl start")
        server = Postgres("127.0.0.1", port, USER, PASSWORD, "postgres")
        with server.connect() as connection:
            connection.execute(f"CREATE DATABASE {DATABASE}")
        server.database = DATABASE
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def unique_key(prefix: str = "k") -> str:
    """A catalog-key of its own for one test (tests share the cluster's database)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class TcpRelay:
    """Forwards 127.0.0.1:<port> to `target`; `cut()` closes every connection and refuses new
    ones, as a database server that went down."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.open:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.open = False
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
