"""A throwaway PostgreSQL cluster: initdb in a temporary directory, a free loopback port, gone after.

``pg_cluster`` is the session fixture; :func:`running_cluster` is the same thing for code outside
pytest (``python tests/support/pgcluster.py`` starts one and prints its URL until interrupted).
PostgreSQL refuses to run as root, so as root the server's commands run as the ``postgres``
system user, in a directory that user owns.

``BOARD_TEST_STORES`` (default ``sqlite,postgresql``) names the stores the suite runs against;
without ``postgresql`` in it no cluster starts and every test that needs one is skipped.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

STORES = ("sqlite", "postgresql")
INSTALL_HINT = "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's postgresql package."
# Speed over durability: the cluster lives as long as one test run.
SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "'32MB'",
}
START_ATTEMPTS = 4  # a free port can be taken by someone else between picking it and binding it
# In memory when the machine has it: creating a database there takes about 10 ms, against
# some 300 ms on a busy disk, even with fsync off.
SCRATCH = Path("/dev/shm")


def wanted_stores() -> tuple[str, ...]:
    """The stores BOARD_TEST_STORES asks for, in its order; ValueError on a name that is none."""
    raw = os.environ.get("BOARD_TEST_STORES", ",".join(STORES))
    stores = tuple(name.strip() for name in raw.split(",") if name.strip())
    unknown = [name for name in stores if name not in STORES]
    if unknown or not stores:
        raise ValueError(f"BOARD_TEST_STORES={raw!r}: name stores among {', '.join(STORES)}")
    return stores


def server_bindir() -> Path | None:
    """Where initdb and pg_ctl are: ``pg_config --bindir``, else the newest /usr/lib/postgresql/*/bin."""
    candidates = []
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
        candidates.append(Path(found.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(p) for p in versions), key=lambda p: _version(p.parent.name), reverse=True)
    return next((c for c in candidates if (c / "initdb").is_file() and (c / "pg_ctl").is_file()), None)


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PgCluster:
    """A running cluster: its superuser URL, and new databases on demand (drop them when done)."""

    bindir: Path
    base: Path
    as_postgres: bool = False  # run the server's commands as the postgres system user
    port: int = 0
    _names: Iterator[int] = field(default_factory=itertools.count, init=False)

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def fresh_database(self, like: str | None = None, encoding: str = "UTF8") -> str:
        """The URL of a new database, named uniquely in this cluster: empty, or a copy of ``like``.

        ``like`` is the URL of an earlier database of this cluster (say, one migrated once for
        many tests); nothing may be connected to it while it is copied. ``encoding`` is for
        an empty one: another than UTF8 is one the board refuses.
        """
        name = f"board_{os.getpid()}_{next(self._names)}"
        template = "template0" if like is None else urlsplit(like).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} ENCODING {} STRATEGY file_copy").format(
                    sql.Identifier(name), sql.Identifier(template), sql.Literal(encoding)
                )
            )
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database from :meth:`fresh_database` (the cluster's data may live in memory)."""
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    # -- lifecycle ---------------------------------------------------------------

    @property
    def data(self) -> Path:
        return self.base / "data"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.as_postgres:
            # runuser lives in sbin, which a user's PATH may leave out.
            where = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"
            runuser = shutil.which("runuser", path=where) or "runuser"
            command = [runuser, "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    def _checked(self, *args: str) -> None:
        done = self._run(*args)
        if done.returncode:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout}")

    def init(self) -> None:
        self._checked(
            "initdb", "-D", str(self.data), "-A", "trust", "-E", "UTF8", "--locale=C", "-U", "postgres"
        )
        settings = {**SETTINGS, "unix_socket_directories": f"'{self.base}'"}
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("".join(f"{name} = {value}\n" for name, value in settings.items()))

    def start(self) -> None:
        """Start on a free port (another one if that port was taken meanwhile); wait until it accepts."""
        log = self.base / "server.log"
        for _ in range(START_ATTEMPTS):
            self.port = _free_port()
            done = self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(log), "-o", f"-p {self.port}", "-w", "start"
            )
            if done.returncode == 0:
                with psycopg.connect(self.url, connect_timeout=10):
                    return
        raise RuntimeError(f"PostgreSQL did not start; its log:\n{log.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def running_cluster() -> Iterator[PgCluster]:
    """A cluster started in a new temporary directory; stopped and removed on the way out."""
    bindir = server_bindir()
    if bindir is None:
        raise RuntimeError(INSTALL_HINT)
    scratch = SCRATCH if SCRATCH.is_dir() and os.access(SCRATCH, os.W_OK) else None
    base = Path(tempfile.mkdtemp(prefix="board-pg-", dir=scratch))
    as_postgres = os.geteuid() == 0
    if as_postgres:
        owner = pwd.getpwnam("postgres")
        os.chown(base, owner.pw_uid, owner.pw_gid)
    cluster = PgCluster(bindir, base, as_postgres)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The suite's one cluster, started on first use; skipped when BOARD_TEST_STORES leaves it out."""
    if "postgresql" not in wanted_stores():
        pytest.skip("BOARD_TEST_STORES leaves out postgresql")
    if server_bindir() is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    with running_cluster() as cluster:
        yield cluster


if __name__ == "__main__":
    with running_cluster() as cluster:
        print(cluster.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()
