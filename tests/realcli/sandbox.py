"""Where the real-CLI suite runs a harness: as nobody in particular, with nothing of this machine's.

Each CLI runs with a fresh HOME and working folder, no credentials (the environment is built
from nothing), and, where the kernel allows, in a network namespace that has only loopback
(``unshare -n``). When the suite runs as root the CLI runs as ``nobody``: some CLIs refuse
their unattended flags as root, and a bot is not meant to run as root.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

JAIL = Path(__file__).with_name("jail.py")
UNPRIVILEGED = "nobody"


def _works(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def network_isolation() -> list[str]:
    """The `unshare` prefix that gives a command a network of its own, or [] where none can."""
    if shutil.which("unshare") is None:
        return []
    prefix = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "--map-current-user", "-n"]
    return prefix if _works([*prefix, "true"]) else []


@dataclass(frozen=True)
class Sandbox:
    """A fresh HOME and working folder, and a wrapper per CLI that runs it inside the jail."""

    root: Path
    uid: int
    gid: int
    isolation: tuple[str, ...]

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    def wrap(self, binary: Path, name: str) -> Path:
        """An executable that runs binary as the sandbox's user, without network, with its argv."""
        script = self.root / "bin" / name
        script.parent.mkdir(exist_ok=True)
        jail = [sys.executable, str(JAIL), str(self.uid), str(self.gid), "--", str(binary)]
        script.write_text(f'#!/bin/sh\nexec {shlex.join([*self.isolation, *jail])} "$@"\n')
        script.chmod(0o755)
        return script

    def env(self) -> dict[str, str]:
        """The whole environment a CLI gets: no variable of this machine's but where node is."""
        node = shutil.which("node")
        path = os.pathsep.join(
            p for p in (os.path.dirname(node or ""), "/usr/local/bin", "/usr/bin", "/bin") if p
        )
        return {"HOME": str(self.home), "PATH": path, "LANG": "C.UTF-8", "TERM": "dumb"}


@contextmanager
def sandbox(as_root: bool = False) -> Iterator[Sandbox]:
    """A new sandbox, removed afterwards; its user is `nobody` when we are root (unless as_root)."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 and not as_root:
        entry = pwd.getpwnam(UNPRIVILEGED)
        uid, gid = entry.pw_uid, entry.pw_gid
    root = Path(tempfile.mkdtemp(prefix="bot-board-realcli-"))
    try:
        root.chmod(0o755)  # the sandbox's user must reach its home inside
        for folder in ("home", "work"):
            (root / folder).mkdir()
            os.chown(root / folder, uid, gid)
        yield Sandbox(root, uid, gid, tuple(network_isolation()))
    finally:
        shutil.rmtree(root, ignore_errors=True)
