"""docs/bots.md stays true: every option of `bot run` and every variable the
daemon reads is documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from board.launcher.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "bots.md").read_text() + (ROOT / "docs" / "harnesses.md").read_text()


def test_every_option_of_bot_run_is_documented() -> None:
    run = main.commands["run"]
    for param in run.params:
        for opt in param.opts:
            assert f"`{opt}`" in DOCS, f"{opt} is not in docs/bots.md"
        if getattr(param, "envvar", None):
            assert f"`{param.envvar}`" in DOCS, f"{param.envvar} is not in docs/bots.md"


def test_every_variable_the_daemon_reads_is_documented() -> None:
    source = "".join(p.read_text() for p in (ROOT / "board" / "launcher").rglob("*.py"))
    names = set(re.findall(r"""["'](BOT_[A-Z_]+|BOARD_[A-Z_]+)["']""", source))
    assert {"BOT_JITTER", "BOT_STATE_DIR", "BOARD_TOKEN"} <= names
    missing = sorted(n for n in names if n not in DOCS)
    assert not missing, f"undocumented: {missing}"


def test_every_subcommand_is_documented() -> None:
    for name in main.commands:
        assert f"`bot {name}" in DOCS


def run_bin_bot(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    """``bin/bot status`` as a shell runs it: its ``#!/usr/bin/env python3`` picks the interpreter."""
    env = {"PATH": path, "HOME": str(tmp_path), "BOT_STATE_DIR": str(tmp_path / "none")}
    return subprocess.run(
        [str(ROOT / "bin" / "bot"), "status"], env=env, capture_output=True, text=True, timeout=30
    )


def test_bin_bot_runs_from_a_checkout(tmp_path: Path) -> None:
    done = run_bin_bot(tmp_path, os.environ["PATH"])  # the suite's python3 first (tests/conftest.py)
    assert done.returncode == 0 and "no bots in" in done.stdout


def test_bin_bot_without_its_dependencies_says_what_to_run(tmp_path: Path) -> None:
    bare = tmp_path / "bare"  # a python3 with the standard library only
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    done = run_bin_bot(tmp_path, f"{bare / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"bin/bot: {bare / 'bin' / 'python3'} has no ")
    assert f"run 'bash {ROOT / 'install.sh'}'" in done.stderr and (ROOT / "install.sh").exists()
