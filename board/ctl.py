"""Running the board in the background: a systemd user unit where there is one, else a pid file.

Either way a start succeeds only once the process that was started answers
``/healthz`` from loopback naming its own pid: another program answering on the
port is an error, not a running board.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .processes import end_group
from .server.settings import Settings, local_url, state_dir
from .server.store.sqlitefile import private_dir
from .server.store.stores import database_label

UNIT = "board"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
REAP_WAIT = 5.0  # a PID 1 that reaps nothing (some containers) must not hold `stop` forever


class CtlError(Exception):
    """The board could not be started, stopped or found; the message says what to do."""


def unit_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def systemd_works() -> bool:
    """Whether this user has a systemd manager to run units (``systemctl --user`` answers)."""
    try:
        done = subprocess.run(
            ["systemctl", "--user", "show-environment"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@dataclass(frozen=True)
class Board:
    """Where one board's process is described: its settings, pid file and log."""

    settings: Settings

    @property
    def pidfile(self) -> Path:
        return state_dir(self.settings) / "board.pid"

    @property
    def logfile(self) -> Path:
        return state_dir(self.settings) / "board.log"

    @property
    def url(self) -> str:
        return local_url(self.settings)

    @property
    def systemd(self) -> bool:
        """Run by systemd: the installer wrote a unit and the user's manager answers."""
        return (unit_dir() / f"{UNIT}.service").exists() and systemd_works()

    def command(self) -> list[str]:
        """``board serve --routines`` under this interpreter; ``-P``: the caller's folder never shadows it."""
        s = self.settings
        return [
            sys.executable,
            "-P",
            "-m",
            "board.cli",
            "serve",
            "--db",
            s.db,
            "--bind",
            s.bind,
            "--port",
            str(s.port),
            "--routines",  # the routines runner in the board's process
        ]


# -- what is running ----------------------------------------------------------------


def health(url: str, timeout: float = 2.0) -> dict[str, object] | None:
    """The /healthz answer at ``url``, or None when nothing answers like a board."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=timeout) as resp:
            answer = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def outside(board: Board) -> str | None:
    """A board answering at the address with no pid file of ``board ctl``'s (a bare ``board
    serve``, started in a terminal or by another tool), said in words; None when there is none."""
    answer = health(board.url)
    if answer is None or "pid" not in answer:
        return None
    return (
        f"a board that `board ctl` did not start answers at {board.url} "
        f"(pid {answer['pid']}, version {answer.get('version')})"
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _systemd_pid() -> int | None:
    done = subprocess.run(
        ["systemctl", "--user", "show", "--property", "MainPID", "--value", UNIT],
        capture_output=True,
        text=True,
        check=False,
    )
    pid = int(done.stdout.strip() or 0) if done.returncode == 0 else 0
    return pid or None


def pid_of(board: Board) -> int | None:
    """The pid of this board's process if it is alive (the unit's main pid, or the pid file's)."""
    if board.systemd:
        return _systemd_pid()
    try:
        pid = int(board.pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def port_free(bind: str, port: int) -> bool:
    """Whether ``bind:port`` can be listened on now (as aiohttp will: with SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def port_in_use_message(settings: Settings) -> str:
    return (
        f"port {settings.port} on {settings.bind} is already in use by another program; "
        f"stop it, or set BOARD_PORT (or `port = ...` in board.toml) to a free port"
    )


# -- start, stop ----------------------------------------------------------------------


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait_healthy(board: Board, pid_now: Iterator[int | None]) -> int:
    """Poll until the process started answers /healthz with its own pid; its pid."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        pid = next(pid_now)
        if pid is None:
            raise CtlError(
                f"the board exited during start-up; the end of {board.logfile}:\n{_tail(board.logfile, 15)}"
            )
        answer = health(board.url, timeout=1.0)
        if answer is not None and answer.get("pid") == pid:
            return pid
        time.sleep(0.1)
    raise CtlError(
        f"the board (pid {next(pid_now)}) did not answer on {board.url}/healthz within "
        f"{START_TIMEOUT:.0f} s; see {board.logfile}"
    )


def _spawn(board: Board) -> Iterator[int | None]:
    """Start ``board serve`` in a session of its own, logging to its log; yields its pid while alive."""
    private_dir(board.logfile.parent)  # the state folder: the database's, once the board opens it
    with board.logfile.open("ab") as log:
        proc = subprocess.Popen(
            board.command(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    board.pidfile.write_text(f"{proc.pid}\n")
    while True:
        yield proc.pid if proc.poll() is None else None


def _unit_pids() -> Iterator[int | None]:
    while True:
        active = subprocess.run(["systemctl", "--user", "is-active", "--quiet", UNIT], check=False)
        yield _systemd_pid() if active.returncode == 0 else None


def start(board: Board) -> str:
    """Start the board unless it already runs and answers; what was done, in one line."""
    pid = pid_of(board)
    if pid is not None:
        answer = health(board.url)
        if answer is not None and answer.get("pid") == pid:
            return f"the board is already running at {board.url} (pid {pid})"
        raise CtlError(
            f"a board process (pid {pid}) runs but does not answer on {board.url}; "
            "`board ctl stop` it, or look at `board ctl logs`"
        )
    if not port_free(board.settings.bind, board.settings.port):
        other = outside(board)
        if other is not None:
            raise CtlError(f"{other}; stop it where it was started, then `board ctl start`")
        raise CtlError(port_in_use_message(board.settings))
    if board.systemd:
        subprocess.run(["systemctl", "--user", "start", UNIT], check=True)
        pid = _wait_healthy(board, _unit_pids())
        how = f"systemd user unit {UNIT}.service"
    else:
        pid = _wait_healthy(board, _spawn(board))
        how = f"pid file {board.pidfile}"
    return f"the board is running at {board.url} (pid {pid}, {how}, log {board.logfile})"


def is_board(pid: int) -> bool:
    """Whether ``pid`` is a ``board serve`` (a pid file may outlive its process and its pid be reused)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        return "serve" in psutil.Process(pid).cmdline()
    return False


def stop(board: Board) -> str:
    if board.systemd:
        subprocess.run(["systemctl", "--user", "stop", UNIT], check=True)
        other = outside(board)
        if other is not None:
            raise CtlError(f"stopped systemd user unit {UNIT}.service, but {other}: left running")
        return f"stopped systemd user unit {UNIT}.service"
    pid = pid_of(board)
    if pid is None or not is_board(pid):
        board.pidfile.unlink(missing_ok=True)
        other = outside(board)
        if other is not None:
            raise CtlError(f"{other}: left running; stop it where it was started")
        return "the board was not running"
    with contextlib.suppress(ProcessLookupError):  # gone already: end_group finds nothing to end
        if os.getpgid(pid) != pid:  # what `ctl start` starts leads its own group; this was started elsewhere
            raise CtlError(
                f"pid {pid} in {board.pidfile} is a `board serve` that `board ctl start` did not start: "
                "left running; stop it where it was started"
            )
    stopped = asyncio.run(end_group(pid, STOP_TIMEOUT, poll=0.1))
    how = "stopped" if stopped else f"killed (it did not stop within {STOP_TIMEOUT:.0f} s)"
    deadline = time.monotonic() + REAP_WAIT
    while alive(pid) and time.monotonic() < deadline:  # until init reaps it, its pid still answers
        time.sleep(0.05)
    board.pidfile.unlink(missing_ok=True)
    return f"{how} the board (pid {pid})"


def status(board: Board) -> tuple[bool, str]:
    pid = pid_of(board)
    if pid is None:
        other = outside(board)
        if other is not None:  # running, though not by `board ctl`: start and stop leave it be
            return True, f"{other}; `board ctl start` and `stop` leave it as it is"
        return False, f"the board is not running (database {database_label(board.settings)})"
    answer = health(board.url)
    if answer is None or answer.get("pid") != pid:
        return False, f"the board process (pid {pid}) runs but does not answer on {board.url}"
    return True, (
        f"the board is running at {board.url} (pid {pid}, version {answer.get('version')}, "
        f"database {database_label(board.settings)}, log {board.logfile})"
    )


def logs(board: Board, lines: int) -> str:
    return _tail(board.logfile, lines)
