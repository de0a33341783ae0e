"""The keeper's settings and files.

Everything the keeper keeps lives in one directory, ``KEEPER_STATE_DIR``
(default ``$XDG_STATE_HOME/bot-board/keeper`` or ``~/.local/state/bot-board/keeper``),
mode 0700: ``keeper.json`` (the board's address and the machine's name),
``token`` (the keeper token, mode 0600), ``keeper.pid`` (locked while the
keeper runs), ``state.json`` (what it supervises, what it has not yet told the
board) and ``keeper.log``. Bots keep their own state directories, where the
bot daemons look for them (``BOT_STATE_DIR``).

Every interval is a setting, so a test can run a whole crash loop in seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..launcher.config import ConfigError, parse_seconds, read_token_file
from ..launcher.state import write_atomic

CONFIG_FILE = "keeper.json"
TOKEN_FILE = "token"
PID_FILE = "keeper.pid"
STATE_FILE = "state.json"
LOG_FILE = "keeper.log"


def keeper_dir(environ: Mapping[str, str]) -> Path:
    override = environ.get("KEEPER_STATE_DIR", "").strip()
    if override:
        return Path(override).expanduser()
    base = environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "bot-board" / "keeper"


@dataclass(frozen=True)
class Timing:
    """How often and how patiently the keeper acts; each from a KEEPER_* variable."""

    interval: float = 10.0  # KEEPER_INTERVAL: seconds between reports
    check: float = 1.0  # KEEPER_CHECK: seconds between looks at the bot processes
    stop_grace: float = 15.0  # KEEPER_STOP_GRACE: SIGTERM, then SIGKILL after this long
    backoff_min: float = 1.0  # KEEPER_BACKOFF_MIN: first restart delay after a crash
    backoff_max: float = 300.0  # KEEPER_BACKOFF_MAX: the longest restart delay
    crash_limit: int = 5  # KEEPER_CRASH_LIMIT: this many crashes ...
    crash_window: float = 600.0  # KEEPER_CRASH_WINDOW: ... within this many seconds: crashed
    stable_after: float = 60.0  # KEEPER_STABLE_AFTER: a run this long resets the backoff
    retry_max: float = 60.0  # KEEPER_RETRY_MAX: the longest wait between tries to reach the board
    log_lines: int = 10  # KEEPER_LOG_LINES: lines of each bot's log in a report

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Timing:
        default = cls()
        values: dict[str, float] = {}
        for name in (
            "interval",
            "check",
            "stop_grace",
            "backoff_min",
            "backoff_max",
            "crash_window",
            "stable_after",
            "retry_max",
        ):
            variable = f"KEEPER_{name.upper()}"
            values[name] = parse_seconds(variable, environ.get(variable), getattr(default, name))
        if values["interval"] < 0.05 or values["check"] < 0.01:
            raise ConfigError("KEEPER_INTERVAL must be at least 0.05 s and KEEPER_CHECK at least 0.01 s")
        return cls(
            **values,
            crash_limit=_count(environ, "KEEPER_CRASH_LIMIT", default.crash_limit),
            log_lines=_count(environ, "KEEPER_LOG_LINES", default.log_lines),
        )


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1 or int(raw) > 1000:
        raise ConfigError(f"{name} must be a whole number from 1 to 1000, not {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class Enrolled:
    """What ``keeper enroll`` left: the board, the machine's name, and the keeper token."""

    board: str
    machine: str
    token: str


def save_enrollment(directory: Path, board: str, machine: str, token: str) -> None:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.chmod(0o700)
    write_atomic(directory / TOKEN_FILE, token + "\n", mode=0o600)
    write_atomic(directory / CONFIG_FILE, json.dumps({"board": board, "machine": machine}, indent=1) + "\n")


def load_enrollment(directory: Path) -> Enrolled:
    try:
        data = json.loads((directory / CONFIG_FILE).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"this machine is not enrolled ({directory / CONFIG_FILE} is missing): "
            "run `KEEPER_ENROLL_CODE=CODE keeper enroll --board URL` with a code from the board's /fleet page"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"{directory / CONFIG_FILE} is not JSON: {exc}") from None
    token = read_token_file(directory / TOKEN_FILE)
    return Enrolled(board=str(data["board"]), machine=str(data["machine"]), token=token)


def bot_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What a bot daemon the keeper starts inherits: never a token, nor the keeper's own settings."""
    scrubbed = (
        "BOARD_TOKEN",
        "BOT_HANDLE",
        "BOT_PROFILE",
        "BOT_HARNESS",
        "BOT_REPO",
        "BOT_WATCH",
        "BOT_GOAL",
    )
    return {k: v for k, v in environ.items() if k not in scrubbed and not k.startswith("KEEPER_")} | {
        "PYTHONUNBUFFERED": "1",
        "PATH": environ.get("PATH", os.defpath),
    }
