"""The whole life of an install: install.sh in fresh HOMEs and fresh virtual environments.

From this checkout (``BOARD_SOURCE=<path>``): install and start the board with its
local keeper, sign in with the printed link in a real browser, a second machine
joining the fleet from the board's own ``/install.sh`` piped into bash, a port
already in use, an upgrade in place that keeps the database, and uninstalling
until nothing is left.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.launcher.fakeharness import FAKES_BIN, SANDBOX_ENV, Fake
from tests.support.install_support import (
    api,
    belonging_to,
    carrying,
    fleet_bots,
    left_behind,
    machine,
    machines,
    printed_pid,
    run,
    signed_in_as,
)
from tests.support.pgcluster import PgCluster
from tests.support.processes import ROOT, ended, free_port, health

# Two installs into fresh virtual environments, on a machine others share.
pytestmark = pytest.mark.timeout(480)


async def test_the_whole_life_of_an_install(tmp_path: Path, chromium: Browser) -> None:
    home, second = tmp_path / "home", tmp_path / "second"
    home.mkdir()
    second.mkdir()
    port = free_port()
    fake = Fake(tmp_path / "fake")
    # The fake harnesses on PATH, so the keeper's bot daemons run real turns.
    env = machine(
        home,
        port,
        BOARD_SOURCE=str(ROOT),
        PATH=f"{FAKES_BIN}{os.pathsep}{os.environ['PATH']}",
        FAKE_HARNESS_DIR=str(fake.root),
        **SANDBOX_ENV,
    )
    state = home / ".local/state/bot-board"
    board = str(home / ".local/bin/board")
    try:
        began = time.monotonic()
        first = run(env)
        took = time.monotonic() - began
        assert first.returncode == 0, first.stdout + first.stderr
        print(f"--- a fresh install took {took:.0f} s and printed:\n{first.stdout}")
        link = re.search(
            rf"sign in with this one-time link: (http://127\.0\.0\.1:{port}/login\?token=bl_\S+)",
            first.stdout,
        )
        assert link, first.stdout
        pid = printed_pid(first.stdout)
        assert health(port)["pid"] == pid == int((state / "board.pid").read_text())
        for command in ("board", "bot", "keeper"):
            assert (home / ".local/bin" / command).exists()

        # The printed link signs the human in, in a real browser.
        assert await signed_in_as(chromium, link.group(1), tmp_path) == "alice"

        # Data a human wrote, to be kept by everything that follows.
        token = subprocess.run(
            [board, "admin", "token", "alice"], env=env, capture_output=True, text=True, check=True
        ).stdout.splitlines()[-1]
        posted = subprocess.run(
            [board, "post", "kept across the upgrade", "--channel", "lobby", "--workspace", "admin"],
            env={**env, "BOARD_URL": f"http://127.0.0.1:{port}", "BOARD_TOKEN": token},
            capture_output=True,
            text=True,
        )
        assert posted.returncode == 0, posted.stderr

        # Re-running is safe: the same board keeps running, a new link is printed.
        again = run(env)
        assert again.returncode == 0, again.stderr
        assert printed_pid(again.stdout) == pid and "already running" in again.stdout
        assert "sign in with this one-time link: http" in again.stdout
        assert "the keeper is already running" in again.stdout

        # The local keeper was enrolled with the board and reports to it.
        url = f"http://127.0.0.1:{port}"
        assert "the keeper is running (pid" in first.stdout
        assert machines(url, token) == {socket.gethostname(): True}

        # board doctor finds nothing that needs a human on a fresh install.
        doctor = subprocess.run([board, "doctor"], env=env, capture_output=True, text=True, timeout=120)
        assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout + doctor.stderr
        print(f"--- board doctor on a fresh install:\n{doctor.stdout}")
        assert f"ok    keeper {socket.gethostname()}: last report " in doctor.stdout

        # A second machine needs nothing but the board: its installer piped into bash, and a code.
        code = api(url, token, "POST", "/api/fleet/enroll-codes", {"machine_name": "second"})["code"]
        joined = subprocess.run(
            f"curl -fsSL {url}/install.sh | KEEPER_ENROLL_CODE={code} bash -s -- keeper",
            shell=True,
            env=machine(second, free_port()),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert joined.returncode == 0, joined.stdout + joined.stderr
        assert f"from {url}/install/bot_board-" in joined.stdout
        assert f"this machine's keeper reports to {url}" in joined.stdout
        assert (second / ".local/bin/keeper").exists() and not (
            second / ".local/state/bot-board/board.db"
        ).exists()
        assert machines(url, token) == {socket.gethostname(): True, "second": True}
        assert belonging_to(second) and carrying(second, code) == []

        # A port taken by another program is an error naming it, never a false "running".
        assert subprocess.run([board, "ctl", "stop"], env=env, capture_output=True).returncode == 0
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            taken.bind(("127.0.0.1", port))
            taken.listen()
            blocked = run(env)
        assert blocked.returncode != 0
        assert f"port {port} on 127.0.0.1 is already in use" in blocked.stderr
        assert "BOARD_PORT" in blocked.stderr and "is running at" not in blocked.stdout

        # Upgrade in place: a backup first, the database kept, the board started again.
        upgraded = run(env, "upgrade")
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        assert "backed up" in upgraded.stdout
        (backup,) = (state / "backups").iterdir()
        assert "stopped the keeper" in upgraded.stdout and "the keeper is running" in upgraded.stdout
        new_pid = printed_pid(upgraded.stdout)
        assert health(port)["pid"] == new_pid
        for db in (state / "board.db", backup):
            conn = sqlite3.connect(db)
            try:
                assert conn.execute(
                    "SELECT count(*) FROM messages WHERE body = 'kept across the upgrade'"
                ).fetchone() == (1,)
            finally:
                conn.close()

        # Two bots run under the keeper, one of them mid-turn in a harness of its own group.
        repo = home / "repo"
        repo.mkdir()
        fake.script({"do": "hang", "seconds": 300})
        profile = {"name": "home-dev", "workspace": "admin", "harness": "claude", "repo": str(repo)}
        api(url, token, "POST", "/api/profiles", profile)
        for handle in ("hb1", "hb2"):
            bot = {"machine": socket.gethostname(), "profile": "home-dev", "handle": handle}
            api(url, token, "POST", "/api/fleet/bots", bot)
        fleet_bots(url, token, "running", {"hb1", "hb2"})
        api(
            url,
            token,
            "POST",
            "/api/messages",
            {"body": "@hb1 a long one", "channel": "lobby", "workspace": "admin"},
        )
        waking = fleet_bots(url, token, "waking", {"hb1"})["hb1"]
        harness = waking["harness"]["pid"]  # type: ignore[index]
        assert os.getpgid(harness) != os.getpgid(waking["pid"])  # type: ignore[arg-type]

        # Uninstall keeps the data; --purge leaves nothing at all.
        removed = run(env, "uninstall")
        assert removed.returncode == 0, removed.stderr
        assert "stopped 2 bot daemon(s)" in removed.stdout, removed.stdout
        # hb1's harness and the grandchild it started; the two daemons' groups and the harness's.
        assert "with 2 harness process(es) in 3 process group(s)" in removed.stdout, removed.stdout
        assert ended(harness)  # a zombie until init reaps the orphan: stopped all the same
        assert (
            f"stopped the board (pid {new_pid})" in removed.stdout and "stopped the keeper" in removed.stdout
        )
        assert not (home / ".local/share/bot-board").exists() and not (home / ".local/bin/board").exists()
        assert (state / "board.db").exists()
        try:
            os.kill(new_pid, 0)
            raise AssertionError("the board still runs after uninstall")
        except ProcessLookupError:
            pass
    finally:
        gone = run(env, "uninstall", "--purge")
        keeper_gone = run(machine(second, 1), "uninstall", "--purge")
    assert gone.returncode == 0, gone.stderr
    # a keeper's machine has no board settings: nothing to stop, and nothing to complain of
    assert keeper_gone.returncode == 0 and keeper_gone.stderr == "", keeper_gone.stderr
    assert "routines runner" not in gone.stdout, gone.stdout  # nothing was left running to stop
    assert belonging_to(home) == [] and belonging_to(second) == []
    assert left_behind(home) == [] and left_behind(second) == []


def test_a_fresh_shell_finds_the_board_on_the_port_the_installer_was_told(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    env = machine(home, port, BOARD_SOURCE=str(ROOT))
    fresh = {k: v for k, v in env.items() if k != "BOARD_PORT"}  # a later login: no BOARD_PORT
    board = str(home / ".local/bin/board")
    config = home / ".config/bot-board/board.toml"

    def fresh_shell(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([board, *args], env={**fresh, **extra}, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    try:
        installed = run(env)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert f"port = {port}\n" in config.read_text() and config.stat().st_mode & 0o777 == 0o600
        link = fresh_shell("admin", "user", "link", "alice").stdout.splitlines()[-1]
        assert link.startswith(f"http://127.0.0.1:{port}/login?token=bl_")
        assert f"the board is running at http://127.0.0.1:{port}" in fresh_shell("ctl", "status").stdout
        token = fresh_shell("admin", "token", "alice").stdout.splitlines()[-1]
        read = fresh_shell("read", "--workspace", "admin", BOARD_TOKEN=token)
        assert "messages" in json.loads(read.stdout)
    finally:
        gone = run(fresh, "uninstall", "--purge")
    assert gone.returncode == 0, gone.stderr
    assert not config.exists() and left_behind(home) == []


def test_a_checkout_with_an_old_build_folder_installs_only_what_it_holds(tmp_path: Path) -> None:
    """pip builds a checkout in place, and setuptools' build/ keeps files the checkout no longer
    has: a migration renamed since an earlier install came back and stopped the board at start."""
    checkout = tmp_path / "checkout"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in files.stdout.splitlines():
        if (ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            (checkout / name).write_bytes((ROOT / name).read_bytes())
    stale = (
        checkout / "build" / "lib" / "board" / "server" / "store" / "migrations" / "0099_renamed_since.sql"
    )
    stale.parent.mkdir(parents=True)
    stale.write_text("ALTER TABLE messages ADD COLUMN twice TEXT;\n")
    home = tmp_path / "home"
    home.mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = machine(home, free_port(), BOARD_SOURCE=str(checkout), TMPDIR=str(scratch))
    done = run(env, "bot", "--help", script=str(checkout / "install.sh"))
    assert done.returncode == 0, done.stdout + done.stderr
    linked = " ".join(str(home / ".local" / "bin" / c) for c in ("board", "bot", "keeper"))
    assert f"bot-board: commands: {linked}\n" in done.stdout, done.stdout  # no space left after the last
    installed = list((home / ".local" / "share" / "bot-board" / "venv").rglob("migrations/0*.sql"))
    assert installed and not [p for p in installed if p.name == stale.name], installed
    assert stale.exists()  # the checkout itself is left as it was
    assert not list(scratch.iterdir())  # the copy it built from is gone


def test_an_upgrade_of_a_board_on_postgresql_starts_it_again(tmp_path: Path, pg_cluster: PgCluster) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = machine(home, free_port(), BOARD_SOURCE=str(ROOT), BOARD_DATABASE_URL=pg_cluster.fresh_database())
    later = {k: v for k, v in env.items() if k != "BOARD_DATABASE_URL"}  # a later shell: the file has it
    board = str(home / ".local/bin/board")
    try:
        installed = run(env)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        # the SQLite file a move onto PostgreSQL leaves behind, as it was
        (home / ".local/state/bot-board/board.db").write_bytes(b"")
        upgraded = run(later, "upgrade")
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        assert "pg_dump" in upgraded.stdout and "backed up" not in upgraded.stdout
        status = subprocess.run([board, "ctl", "status"], env=later, capture_output=True, text=True)
        assert status.returncode == 0 and "database postgresql://" in status.stdout, status.stdout
    finally:
        gone = run(later, "uninstall", "--purge")
    assert gone.returncode == 0, gone.stderr


def test_a_board_installed_on_postgresql_says_so_and_uninstall_stops_it(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    """No SQLite file is made on PostgreSQL: what the installer says and what uninstall stops
    follow the database the settings name, not the file."""
    home = tmp_path / "home"
    home.mkdir()
    env = machine(home, free_port(), BOARD_SOURCE=str(ROOT), BOARD_DATABASE_URL=pg_cluster.fresh_database())
    later = {k: v for k, v in env.items() if k != "BOARD_DATABASE_URL"}
    try:
        installed = run(env)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        assert not (home / ".local/state/bot-board/board.db").exists()
        assert "board backup" not in installed.stdout and "board.db" not in installed.stdout, installed.stdout
        assert "bot-board: database postgresql://" in installed.stdout, installed.stdout
        assert "pg_dump" in installed.stdout, installed.stdout
    finally:
        gone = run(later, "uninstall", "--purge")
    assert gone.returncode == 0, gone.stderr
    assert "stopped the board" in gone.stdout, gone.stdout
    # --purge removes what is in HOME; the database is the operator's, and the last line says so
    assert "stay in the PostgreSQL database postgresql://" in gone.stdout.splitlines()[-1], gone.stdout
    assert "dropdb" in gone.stdout, gone.stdout
    assert belonging_to(home) == [] and left_behind(home) == []
