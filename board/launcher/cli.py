"""``bot`` (``bin/bot``, also ``board bot``): run a bot daemon, and look after it.

``run`` is the daemon itself (in the foreground: systemd, the keeper or a
terminal keeps it); ``status``, ``stop`` and ``logs`` read the bots' state
directories, so they work for daemons started any way (``stop`` leaves a bot a
keeper runs to the keeper); ``wake-test`` asks the board whether a bot answers,
and how fast.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..client import BoardAPIError, BoardClient
from ..local_board import board_option, refused
from ..processes import same_process, start_time
from ..token_input import token_option
from .config import DEFAULT_STOP_GRACE, ConfigError, Options, check_handle, state_root
from .daemon import KEEPER_FILE, PID_FILE, running_pid
from .daemon import run as run_daemon
from .logs import LOG_FILE, tail
from .state import StateFile
from .waketest import wake_test

F = TypeVar("F", bound=Callable[..., Any])


@click.group("bot")
def main() -> None:
    """Run bot daemons: each keeps a long-poll open on the board and wakes its
    harness (claude, codex, opencode, copilot, gemini, or any command) only when
    a message is for it, resuming the same session."""


@main.command()
@click.option("--handle", envvar="BOT_HANDLE", help="The bot's handle [BOT_HANDLE]; else the token's.")
@click.option(
    "--harness",
    envvar="BOT_HARNESS",
    help="claude, codex, opencode, copilot, gemini or command [BOT_HARNESS]; else the profile's.",
)
@click.option("--repo", envvar="BOT_REPO", help="Working directory of the harness [BOT_REPO; default: here].")
@click.option("--watch", envvar="BOT_WATCH", help="Channels to watch, comma-separated [BOT_WATCH].")
@click.option("--goal", envvar="BOT_GOAL", type=int, help="A thread to watch [BOT_GOAL].")
@click.option("--profile", envvar="BOT_PROFILE", help="Take settings from this profile on the board.")
@board_option()
@click.option(
    "--pool",
    envvar="BOT_POOL",
    help="Pool mode: one session per channel, each run in POOL/<channel> [BOT_POOL].",
)
@click.option(
    "--skill",
    "skills",
    multiple=True,
    help="A skill (a directory with SKILL.md, or a git URL) to link into the harness's skills folder.",
)
@click.option(
    "--jitter",
    type=click.FloatRange(0),
    help="Seconds (0..N, random) to wait before acting on watched-only messages [BOT_JITTER; 20].",
)
@click.option("--model", envvar="BOT_MODEL", help="The harness's model [BOT_MODEL]; else the profile's.")
@click.option(
    "--mcp/--no-mcp",
    default=None,
    help="Give the harness the board's MCP tools, and a prompt naming them [BOT_MCP]; else the profile's.",
)
@click.option(
    "--worktrees/--no-worktrees",
    default=None,
    help="A git worktree, branch and session per thread [BOT_WORKTREES]; else the profile's.",
)
@click.option(
    "--max-worktrees",
    type=int,
    help="Live worktrees at most; more threads wait [BOT_MAX_WORKTREES; 4]; else the profile's.",
)
@click.option(
    "--base-branch", help="Where new worktrees start [BOT_BASE_BRANCH; default: the current branch]."
)
def run(
    handle: str | None,
    harness: str | None,
    repo: str | None,
    watch: str | None,
    goal: int | None,
    profile: str | None,
    board_url: str | None,
    pool: str | None,
    skills: tuple[str, ...],
    jitter: float | None,
    model: str | None,
    mcp: bool | None,
    worktrees: bool | None,
    max_worktrees: int | None,
    base_branch: str | None,
) -> None:
    """Run one bot's daemon in the foreground until SIGTERM.

    The token comes from BOARD_TOKEN or the file `token` (mode 0600) in the
    bot's state directory.
    """
    options = Options(
        handle=handle,
        harness=harness,
        repo=repo,
        watch=watch,
        goal=goal,
        profile=profile,
        board=board_url,
        pool=pool,
        skills=skills,
        jitter=jitter,
        model=model,
        mcp=mcp,
        worktrees=worktrees,
        max_worktrees=max_worktrees,
        base_branch=base_branch,
    )
    try:
        code = asyncio.run(run_daemon(options, dict(os.environ)))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


def _bot_dirs(handle: str | None) -> list[Path]:
    root = state_root(os.environ)
    if handle:
        try:
            check_handle(handle)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from None
        path = root / handle
        if not path.is_dir():
            raise click.ClickException(f"no state for bot {handle!r} in {root}")
        return [path]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def _status(path: Path) -> dict[str, Any]:
    try:
        state = StateFile(path).load()
    except ValueError as exc:
        return {"handle": path.name, "error": str(exc)}
    pid = running_pid(path / PID_FILE)
    return {
        "handle": path.name,
        "running": pid is not None,
        "pid": pid,
        "cursor": state.cursor,
        "last_wake": state.last_wake,
        "failures": sum(state.failures.values()),
        "held": state.held,
        "sessions": state.sessions,
        "in_flight": sorted({i for turn in state.inflight.values() for i in turn.get("ids", [])}),
        "worktrees": _worktrees(state.worktrees, time.time()),
        "state_dir": str(path),
    }


def _worktrees(entries: dict[str, dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """The bot's worktrees per thread as state.json keeps them, by thread; ``gone`` when the folder is."""
    rows = []
    for key, entry in sorted(entries.items(), key=lambda item: int(item[0]) if item[0].isdigit() else -1):
        created = entry.get("created_at")
        age = now - created if isinstance(created, int | float) and not isinstance(created, bool) else 0.0
        rows.append(
            {
                "thread": int(key) if key.isdigit() else key,
                "branch": str(entry.get("branch") or ""),
                "state": str(entry.get("state") or ""),
                "age_s": round(max(0.0, age), 1),
                "path": str(entry.get("path") or ""),
                "gone": not Path(str(entry.get("path") or "")).is_dir(),
            }
        )
    return rows


def _age(seconds: float) -> str:
    """45s, 12m, 3h, 2d: the largest unit that fits."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


@main.command()
@click.argument("handle", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per bot.")
def status(handle: str | None, as_json: bool) -> None:
    """Show each bot's daemon (or HANDLE's): running, cursor, last wake, budget hold, worktrees."""
    dirs = _bot_dirs(handle)
    if not dirs and not as_json:
        click.echo(f"no bots in {state_root(os.environ)}")
    for path in dirs:
        info = _status(path)
        if as_json:
            click.echo(json.dumps(info))
            continue
        if "error" in info:
            click.echo(f"{info['handle']}: {info['error']}")
            continue
        running = f"running (pid {info['pid']})" if info["running"] else "stopped"
        wake = info["last_wake"]
        last = "never"
        if wake:
            last = f"{wake['at']} {wake['outcome']} (ids {','.join(map(str, wake['trigger_ids']))})"
        held = info["held"]
        hold = f"; held: {held.get('which')}, until {held.get('resets_at')}" if held else ""
        click.echo(
            f"{info['handle']}: {running}; cursor {info['cursor']}; last wake {last}; "
            f"failures in a row {info['failures']}{hold}"
        )
        for tree in info["worktrees"]:
            gone = " (folder gone)" if tree["gone"] else ""
            click.echo(
                f"  worktree t{tree['thread']}: {tree['branch'] or '-'} {tree['state']}, "
                f"{_age(tree['age_s'])} old, {tree['path']}{gone}"
            )


@main.command()
@click.argument("handle")
@click.option(
    "--timeout",
    type=click.FloatRange(0),
    default=DEFAULT_STOP_GRACE + 10,
    show_default=True,
    help="Seconds to wait for the daemon to exit.",
)
def stop(handle: str, timeout: float) -> None:
    """Stop HANDLE's daemon (SIGTERM: a running turn may finish, within its grace).

    Not a bot a keeper runs: the keeper would start it again within a second or two.
    """
    folder = _bot_dirs(handle)[0]
    keeper = running_pid(folder / KEEPER_FILE)
    if keeper is not None:
        raise click.ClickException(
            f"{handle}: not stopped: the keeper (pid {keeper}) runs this bot and would start it again; "
            f"stop it with `board fleet stop {handle}`, or its Stop button on /fleet"
        )
    path = folder / PID_FILE
    pid = running_pid(path)
    if pid is None:
        click.echo(f"{handle}: not running")
        return
    if pid <= 0:
        raise click.ClickException(f"{path} is locked but names no pid")
    started = start_time(pid)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # The daemon lets its lock go as its loop ends, before the interpreter has wound down:
        # stopped is the process gone too (a zombie its parent has not reaped counts as gone).
        if running_pid(path) is None and not same_process(pid, started):
            click.echo(f"{handle}: stopped (pid {pid})")
            return
        time.sleep(0.1)
    raise click.ClickException(f"{handle}: pid {pid} is still running after {timeout:g} s")


@main.command()
@click.argument("handle")
@click.option("-n", "--lines", default=50, show_default=True, type=click.IntRange(0))
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines.")
def logs(handle: str, lines: int, follow: bool) -> None:
    """Print the tail of HANDLE's log (JSON lines)."""
    path = _bot_dirs(handle)[0] / LOG_FILE
    for line in tail(path, lines):
        click.echo(line)
    if not follow:
        return
    position = path.stat().st_size if path.exists() else 0
    while True:
        time.sleep(0.5)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            continue
        if size < position:  # rotated
            position = 0
        if size > position:
            with path.open("rb") as f:
                f.seek(position)
                chunk = f.read(size - position)
            position = size
            click.echo(chunk.decode(errors="replace"), nl=False)


def _seconds(flag: str, low: float, high: float, default: float, what: str) -> Callable[[F], F]:
    """A seconds option of wake-test, within ``low``..``high``."""
    return click.option(flag, type=click.FloatRange(low, high), default=default, show_default=True, help=what)


@main.command("wake-test")
@click.argument("handle")
@board_option()
@token_option("BOARD_TOKEN", "your token")
@click.option(
    "--channel", default="lobby", show_default=True, help="Channel of the bot's workspace to post in."
)
@_seconds("--timeout", 1, 3600, 300, "Seconds to wait for a reply.")
@_seconds("--interval", 0.05, 10, 0.25, "Seconds between reads.")
def wake_test_command(
    handle: str, board_url: str, token: str, channel: str, timeout: float, interval: float
) -> None:
    """Post a probe mentioning HANDLE and print how long each phase took
    (queued, woken, replied), and what the turn cost.

    Exits 0 when the bot replied, 3 when its turn failed, 4 when the probe is
    held, 5 when no daemon waits for the bot, 6 when no reply came in time
    (codes in EXIT of board/launcher/waketest.py).
    """

    async def go() -> int:
        async with BoardClient(board_url, token) as board:
            return await wake_test(
                board, handle, channel=channel, timeout=timeout, interval=interval, say=click.echo
            )

    try:
        code = asyncio.run(go())
    except BoardAPIError as exc:
        raise refused(exc) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)
