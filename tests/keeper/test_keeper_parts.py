"""The keeper's parts on their own: settings, what bots inherit, finding and stopping processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import psutil
import pytest

from board.keeper import processes, report
from board.keeper.config import Timing, bot_environment
from board.keeper.supervisor import iso, last_output
from board.launcher.config import ConfigError
from board.launcher.logs import tail
from board.processes import start_time
from tests.support.processes import ended

ROOT = Path(__file__).resolve().parents[2]


def test_every_interval_is_a_setting_and_documented() -> None:
    environ = {f"KEEPER_{f.name.upper()}": "3" for f in fields(Timing)}
    timing = Timing.from_env(environ)
    assert all(getattr(timing, f.name) == 3 for f in fields(Timing))
    documented = set(re.findall(r"KEEPER_[A-Z_]+", (ROOT / "docs" / "fleet.md").read_text()))
    assert set(environ) <= documented, set(environ) - documented


@pytest.mark.parametrize(
    "environ",
    [
        {"KEEPER_INTERVAL": "soon"},
        {"KEEPER_CHECK": "-1"},
        {"KEEPER_INTERVAL": "0"},
        {"KEEPER_CRASH_LIMIT": "0"},
    ],
)
def test_bad_settings_are_refused(environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        Timing.from_env(environ)


def test_bots_inherit_no_token_and_no_keeper_settings() -> None:
    env = bot_environment({"BOARD_TOKEN": "bb_x", "KEEPER_INTERVAL": "1", "BOT_HANDLE": "x", "HOME": "/h"})
    assert env["HOME"] == "/h" and not {"BOARD_TOKEN", "KEEPER_INTERVAL", "BOT_HANDLE"} & set(env)


def test_a_log_tail_is_read_from_the_end_and_across_rotation(tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    log.with_name("bot.log.1").write_text("".join(f"old {i}\n" for i in range(5)))
    log.write_text("".join(f"line {i} " + "x" * 100 + "\n" for i in range(2000)))
    assert tail(log, 2) == [f"line {i} " + "x" * 100 for i in (1998, 1999)]
    log.write_text("new 0\n")
    assert tail(log, 3) == ["old 3", "old 4", "new 0"]
    assert tail(tmp_path / "absent.log", 3) == []


def test_why_a_daemon_exited_is_its_last_whole_lines(tmp_path: Path) -> None:
    """The output file keeps every run: its last 1,000 bytes began inside an earlier run's log
    line, and a misconfigured bot's fleet page opened on '", "code": "UNAVAILABLE", ...'."""
    out = tmp_path / "daemon.out"
    earlier = "".join(
        json.dumps({"event": "board_retry", "attempt": i, "pad": "x" * 60}) + "\n" for i in range(40)
    )
    out.write_text(earlier + "bot: repo /srv/app is not a directory\n")
    shown = last_output(out)
    assert shown.startswith('{"event": "board_retry"') and shown.endswith(
        "bot: repo /srv/app is not a directory"
    )
    assert len(shown.encode()) <= 1000
    out.write_text("y" * 3000 + "\n")  # one line longer than the limit: its end, rather than nothing
    assert last_output(out) == "y" * 999
    assert last_output(tmp_path / "absent") == ""


def _sleeper(tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL, start_new_session=True, cwd=tmp_path)


def test_a_reused_pid_is_not_taken_for_the_bot(tmp_path: Path) -> None:
    other = _sleeper(tmp_path)
    try:
        began = start_time(other.pid)
        assert began is not None
        assert processes.find(tmp_path, other.pid, began - 100) is None  # same pid, another process
        found = processes.find(tmp_path, other.pid, began)
        assert found is not None and found.pid == other.pid
    finally:
        other.kill()
        other.wait()
    assert processes.find(tmp_path, other.pid, began) is None


async def test_stop_kills_the_whole_group_and_the_harness_group(tmp_path: Path) -> None:
    """A daemon that ignores SIGTERM, with a child in a group of its own: both are gone."""
    script = textwrap.dedent(
        """
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        print(child.pid, flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdout is not None
    with proc.stdout:
        child = int(proc.stdout.readline())
    daemon = processes.Daemon(proc.pid, start_time(proc.pid) or 0.0, popen=proc)
    assert os.getpgid(child) != os.getpgid(proc.pid)
    code = await processes.stop(daemon, grace=0.3)
    assert code == -signal.SIGKILL
    assert ended(proc.pid) and ended(child)


def _keeper(
    tmp_path: Path, *args: str, interpreter: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KEEPER_", "BOARD_"))}
    env["KEEPER_STATE_DIR"] = str(tmp_path / "keeper")
    return subprocess.run(
        [*(interpreter or [sys.executable]), str(ROOT / "bin" / "keeper"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_machine_not_enrolled_is_told_what_to_run(tmp_path: Path) -> None:
    run = _keeper(tmp_path, "run")
    assert run.returncode == 2 and "KEEPER_ENROLL_CODE=CODE keeper enroll --board URL" in run.stderr
    assert "Traceback" not in run.stderr
    status = _keeper(tmp_path, "status")
    assert status.returncode == 1 and "not enrolled" in status.stderr


def test_enroll_takes_its_code_from_the_environment_not_the_command_line(tmp_path: Path) -> None:
    missing = _keeper(tmp_path, "enroll", "--board", "http://127.0.0.1:9")
    assert missing.returncode == 2 and "no code: set KEEPER_ENROLL_CODE" in missing.stderr
    on_argv = _keeper(tmp_path, "enroll", "--board", "http://127.0.0.1:9", "--code", "bk_x")
    assert "warning: --code puts the enroll code" in on_argv.stderr and "KEEPER_ENROLL_CODE" in on_argv.stderr
    assert not (tmp_path / "keeper").exists() or not any((tmp_path / "keeper").iterdir())


def test_bin_keeper_without_dependencies_says_what_to_install(tmp_path: Path) -> None:
    bare = _keeper(tmp_path, "status", interpreter=[sys.executable, "-S", "-I"])  # no site-packages
    assert bare.returncode == 1
    lines = bare.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in bare.stderr, bare.stderr
    assert lines[0].startswith(f"bin/keeper: {sys.executable} has no ")
    assert f"run 'bash {ROOT / 'install.sh'}'" in lines[0] and "-m pip install -e" in lines[0]


def test_every_keeper_command_is_documented() -> None:
    from board.keeper.cli import main

    docs = (ROOT / "docs" / "fleet.md").read_text()
    for name in main.commands:
        assert f"keeper {name}" in docs


def test_a_report_names_a_process_by_its_start_and_a_gone_one_is_no_such_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        measured = report._measure(psutil.Process(proc.pid))
        started = start_time(proc.pid)
        assert started is not None and measured["started_at"] == iso(started)
        assert measured["pid"] == proc.pid and measured["rss"] > 0
        watched = psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    with pytest.raises(psutil.NoSuchProcess):
        report._measure(watched)


async def test_uninstall_stops_a_daemon_the_keeper_started_before_it_took_its_lock(tmp_path: Path) -> None:
    """A daemon takes its bot's lock a moment after it starts: one the keeper started just
    before it was stopped holds none yet, and uninstall, which looked for locks alone, left it
    running. One nobody recorded and holding no lock is no bot, and is left alone."""
    environ = {"KEEPER_STATE_DIR": str(tmp_path / "keeper"), "BOT_STATE_DIR": str(tmp_path / "bots")}
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    starting = subprocess.Popen(sleeper, start_new_session=True)
    stranger = subprocess.Popen(sleeper, start_new_session=True)
    try:
        began = start_time(starting.pid)
        (tmp_path / "keeper").mkdir()
        recorded = {"bots": {"fb": {"pid": starting.pid, "started": began, "state": "starting"}}}
        (tmp_path / "keeper" / "state.json").write_text(json.dumps(recorded))
        said = await processes.stop_all(environ, grace=5)
        assert said == (
            f"stopped 1 bot daemon(s) (pid {starting.pid}) with 0 harness process(es) in 1 process group(s)"
        )
        assert starting.wait(5) is not None and stranger.poll() is None
    finally:
        for proc in (starting, stranger):
            proc.kill()
            proc.wait()
