"""Test support for ``board doctor``: run the real command in a test's own folders, read its lines.

Every run is a ``python -m board.cli doctor`` process with HOME, the XDG folders,
the keeper's and the bots' state folders inside the test's folder, so nothing of
the machine it runs on is looked at.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import board_env, command

LINE = re.compile(r"^(ok|warn|FAIL|skip) {2,4}([^:]+): (.*)$")


def doctor_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    return board_env(
        HOME=str(home),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        KEEPER_STATE_DIR=str(tmp_path / "keeper"),
        BOT_STATE_DIR=str(tmp_path / "bots"),
        BOARD_PORT=str(port),
        **extra,
    )


def default_db(tmp_path: Path) -> Path:
    """Where the board's database is with :func:`doctor_env` and no BOARD_DB."""
    return tmp_path / "state" / "bot-board" / "board.db"


@dataclass
class Diagnosis:
    """What one ``board doctor`` run printed, and its exit status."""

    code: int
    text: str
    checks: list[dict[str, Any]]

    def lines(self, name: str, *, exact: bool = False) -> list[str]:
        """The printed lines of the checks called ``name`` (unless ``exact``, or starting ``name``)."""
        return [
            line
            for line in self.text.splitlines()
            if (m := LINE.match(line)) and (m[2] == name or (not exact and m[2].startswith(name)))
        ]

    def status(self, name: str) -> list[str]:
        return [c["status"] for c in self.checks if c["check"].startswith(name)]

    def failing(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.startswith("FAIL")]


def _diagnosis(code: int, text: str, data: str) -> Diagnosis:
    for line in text.splitlines():
        assert LINE.match(line), f"not a doctor line: {line!r}"
    parsed = json.loads(data)
    assert parsed["ok"] == (code == 0) and code in (0, 1), (code, text)
    return Diagnosis(code, text, parsed["checks"])


def doctor(env: dict[str, str], *args: str) -> Diagnosis:
    """``board doctor ARGS`` twice, as text and as JSON; they must agree on the exit status."""
    text = subprocess.run(command("doctor", *args), env=env, capture_output=True, text=True, timeout=120)
    data = subprocess.run(
        command("doctor", "--json", *args), env=env, capture_output=True, text=True, timeout=120
    )
    assert text.returncode == data.returncode, (text.stdout, text.stderr, data.stdout)
    assert not text.stderr, text.stderr
    return _diagnosis(text.returncode, text.stdout, data.stdout)


async def doctor_async(env: dict[str, str], *args: str) -> Diagnosis:
    """:func:`doctor` without blocking the event loop (a board in the test's process must answer)."""
    outputs = []
    for extra in ((), ("--json",)):
        proc = await asyncio.create_subprocess_exec(
            *command("doctor", *extra, *args),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert not err, err.decode()
        outputs.append((int(proc.returncode or 0), out.decode()))
    (code, text), (code_json, data) = outputs
    assert code == code_json, (text, data)
    return _diagnosis(code, text, data)
