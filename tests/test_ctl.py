"""``board ctl``: a background board with a pid file, started only when it is the one answering."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import board_env, command, free_port, health, kill, serve, wait_healthy


def ctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command("ctl", *args), env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh HOME (no systemd unit, no settings file), a state folder and a free port; stopped after."""
    env = board_env(
        HOME=str(tmp_path),
        BOARD_DB=str(tmp_path / "state" / "board.db"),
        BOARD_PORT=str(free_port()),
    )
    env.pop("XDG_CONFIG_HOME", None)
    yield env
    ctl(env, "stop")


def test_start_status_logs_stop(home: dict[str, str], tmp_path: Path) -> None:
    started = ctl(home, "start")
    assert started.returncode == 0, started.stderr
    pid = int((tmp_path / "state" / "board.pid").read_text())
    port = int(home["BOARD_PORT"])
    assert f"running at http://127.0.0.1:{port} (pid {pid}" in started.stdout
    assert health(port)["pid"] == pid

    again = ctl(home, "start")
    assert again.returncode == 0 and f"already running at http://127.0.0.1:{port} (pid {pid})" in again.stdout
    assert int((tmp_path / "state" / "board.pid").read_text()) == pid  # no second board

    status = ctl(home, "status")
    assert status.returncode == 0 and f"pid {pid}" in status.stdout
    assert "serving http://127.0.0.1" in ctl(home, "logs").stdout

    stopped = ctl(home, "stop")
    assert stopped.returncode == 0 and f"stopped the board (pid {pid})" in stopped.stdout
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "state" / "board.pid").exists()
    assert ctl(home, "status").returncode == 3
    assert "not running" in ctl(home, "stop").stdout


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Another program on the port, answering /healthz like a board."""

    def do_GET(self) -> None:
        body = json.dumps({"ok": True, "version": "0.1.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_port_in_use_is_an_error_naming_it_and_what_to_set(home: dict[str, str], tmp_path: Path) -> None:
    port = int(home["BOARD_PORT"])
    impostor = http.server.HTTPServer(("127.0.0.1", port), _Impostor)
    thread = threading.Thread(target=impostor.serve_forever, daemon=True)
    thread.start()
    try:
        started = ctl(home, "start")
    finally:
        impostor.shutdown()
        impostor.server_close()
    assert started.returncode != 0
    assert f"port {port} on 127.0.0.1 is already in use" in started.stderr and "BOARD_PORT" in started.stderr
    assert "running" not in started.stdout
    assert not (tmp_path / "state" / "board.pid").exists()
    assert not (tmp_path / "state" / "board.db").exists()  # nothing was started


def test_a_board_that_cannot_start_is_reported_with_its_log(home: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "state" / "board.db"
    db.parent.mkdir(parents=True)
    db.write_text("not a database")
    started = ctl(home, "start")
    assert started.returncode != 0
    assert "exited during start-up" in started.stderr and "cannot open the database" in started.stderr


def test_the_folder_it_is_started_from_cannot_shadow_the_board(home: dict[str, str], tmp_path: Path) -> None:
    decoy = tmp_path / "checkout"
    (decoy / "board").mkdir(parents=True)
    (decoy / "board" / "__init__.py").write_text("")
    (decoy / "board" / "cli.py").write_text("raise SystemExit('the decoy board ran')\n")
    started = subprocess.run(
        [sys.executable, "-P", "-m", "board.cli", "ctl", "start"],
        cwd=decoy,
        env=home,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr
    assert "decoy" not in (tmp_path / "state" / "board.log").read_text()


def test_stop_leaves_a_board_it_did_not_start_running(home: dict[str, str], tmp_path: Path) -> None:
    """A stale pid file whose pid now names a ``board serve`` in another's process group: not ours to end."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "serve"], cwd=tmp_path)
    try:
        assert os.getpgid(other.pid) != other.pid
        (tmp_path / "state").mkdir()
        (tmp_path / "state" / "board.pid").write_text(f"{other.pid}\n")
        stopped = ctl(home, "stop")
        assert stopped.returncode == 1
        assert f"pid {other.pid}" in stopped.stderr and "did not start" in stopped.stderr
        assert other.poll() is None  # still running
    finally:
        other.kill()
        other.wait()


def test_a_board_started_outside_ctl_is_named_and_left_running(home: dict[str, str]) -> None:
    """A bare `board serve` (the README's first way) writes no pid file: ctl still knows it for
    a board, says so, and neither starts a second one nor stops it."""
    port, db = int(home["BOARD_PORT"]), Path(home["BOARD_DB"])
    db.parent.mkdir()
    served = serve(db, port=port, env=home)
    try:
        wait_healthy(served)
        url = f"http://127.0.0.1:{port}"
        said = f"a board that `board ctl` did not start answers at {url} (pid {served.proc.pid},"
        status = ctl(home, "status")
        assert status.returncode == 0 and said in status.stdout
        started = ctl(home, "start")
        assert (
            started.returncode == 1
            and said in started.stderr
            and "stop it where it was started" in started.stderr
        )
        stopped = ctl(home, "stop")
        assert stopped.returncode == 1 and said in stopped.stderr and "left running" in stopped.stderr
        assert served.proc.poll() is None and health(port)["pid"] == served.proc.pid
    finally:
        kill(served.proc)


def test_status_names_the_postgresql_database_without_its_password(home: dict[str, str]) -> None:
    url = "postgresql://board:hunter2@db.internal/board"
    status = ctl({**home, "BOARD_DATABASE_URL": url}, "status")
    assert status.returncode == 3
    assert "(database postgresql://board:***@db.internal/board)" in status.stdout + status.stderr
    assert "hunter2" not in status.stdout + status.stderr and home["BOARD_DB"] not in status.stdout
