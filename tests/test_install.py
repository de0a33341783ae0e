"""install.sh in a fresh HOME and a fresh virtual environment, from this checkout."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_install_starts_a_board_and_uninstall_removes_it(tmp_path: Path) -> None:
    port = free_port()
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ["PATH"],
        "BOARD_SOURCE": str(ROOT),
        "BOARD_PORT": str(port),
        "BOARD_USER": "alice",
    }
    done = subprocess.run(
        ["bash", str(ROOT / "install.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    try:
        assert done.returncode == 0, done.stderr
        assert f"http://127.0.0.1:{port}/login?token=bl_" in done.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            assert json.load(resp)["ok"] is True
        assert (tmp_path / ".local/bin/board").exists()
        assert (tmp_path / ".local/bin/bot").exists()
        assert (tmp_path / ".local/bin/keeper").exists()
        assert (tmp_path / ".local/state/bot-board/board.db").exists()
        again = subprocess.run(
            ["bash", str(ROOT / "install.sh")], env=env, capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr  # re-running is safe
    finally:
        gone = subprocess.run(
            ["bash", str(ROOT / "install.sh"), "uninstall", "--purge"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert gone.returncode == 0, gone.stderr
    assert not (tmp_path / ".local/share/bot-board").exists()
    assert not (tmp_path / ".local/state/bot-board").exists()
