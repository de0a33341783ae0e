"""Helpers for tests that drive the fake harnesses (tests/fakes): where they
live, their script and records, and whether a recorded pid still runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FAKES_BIN = Path(__file__).resolve().parent.parent / "fakes" / "bin"
# Claude Code refuses bypassPermissions as root unless told the machine is a
# sandbox; test machines that run as root are disposable ones.
SANDBOX_ENV = {"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}


class Fake:
    """The fake harnesses' directory: write their script, read what they recorded."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def script(self, *steps: dict[str, Any]) -> None:
        (self.root / "script.json").write_text(json.dumps(list(steps)))

    def _jsonl(self, name: str) -> list[dict[str, Any]]:
        return read_jsonl(self.root / name)

    def calls(self) -> list[dict[str, Any]]:
        return self._jsonl("calls.jsonl")

    def actions(self) -> list[dict[str, Any]]:
        return self._jsonl("actions.jsonl")

    def last_call(self) -> dict[str, Any]:
        calls = self.calls()
        assert calls, "the fake recorded no call"
        return calls[-1]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete records of a JSON-lines file another process may be appending to.

    Its writer may be mid-record: text after the last newline is not written yet.
    """
    if not path.exists():
        return []
    written = path.read_text().rpartition("\n")[0]
    return [json.loads(line) for line in written.split("\n") if line.strip()]


def alive(pid: int) -> bool:
    """Whether pid is a running process (a zombie is not: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"
