"""docs/bots.md stays true: every option of `bot run` and every variable the
daemon reads is documented."""

from __future__ import annotations

import re
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


def test_bin_bot_runs_from_a_checkout(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BOT_STATE_DIR": str(tmp_path / "none")}
    done = subprocess.run(
        [str(ROOT / "bin" / "bot"), "status"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and "no bots in" in done.stdout
