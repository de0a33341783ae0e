"""``keeper`` (``bin/keeper``): enroll this machine, run its keeper, and show what it runs."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any

import click

from ..client import BoardAPIError, BoardClient
from ..launcher.config import ConfigError
from ..launcher.daemon import running_pid
from ..local_board import board_option, refused
from ..processes import same_process
from ..token_input import token_option
from .config import PID_FILE, STATE_FILE, Timing, keeper_dir, load_enrollment, save_enrollment
from .daemon import EXIT_CONFIG
from .daemon import run as run_keeper


@click.group("keeper")
def main() -> None:
    """The keeper of this machine's bots: it starts and stops them as the board
    says, restarts the ones that crash, and reports what runs to the board."""


@main.command()
@board_option()
@token_option("KEEPER_ENROLL_CODE", "the enroll code from the board's /fleet page", flag="code")
def enroll(board_url: str, code: str) -> None:
    """Trade an enroll code for this machine's keeper token (once per machine)."""
    directory = keeper_dir(os.environ)

    async def go() -> dict[str, Any]:
        async with BoardClient(board_url) as board:
            return await board.enroll(code, hostname=socket.gethostname())

    try:
        enrolled = asyncio.run(go())
    except BoardAPIError as exc:
        raise refused(exc) from None
    save_enrollment(directory, board_url.rstrip("/"), enrolled["machine"], enrolled["token"])
    click.echo(f"Enrolled as machine {enrolled['machine']} on {board_url}; the token is in {directory}.")
    click.echo("Start the keeper with: keeper run")


@main.command()
def run() -> None:
    """Run the keeper in the foreground until SIGTERM (the bots keep running after it)."""
    directory = keeper_dir(os.environ)
    try:
        enrolled = load_enrollment(directory)
        timing = Timing.from_env(os.environ)
    except ConfigError as exc:
        click.echo(f"keeper: {exc}", err=True)
        sys.exit(EXIT_CONFIG)
    sys.exit(asyncio.run(run_keeper(directory, enrolled, timing, dict(os.environ))))


def _status() -> dict[str, Any]:
    directory = keeper_dir(os.environ)
    try:
        enrolled = load_enrollment(directory)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    pid = running_pid(directory / PID_FILE)
    try:
        saved = json.loads((directory / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        saved = {}
    bots = []
    for handle, bot in sorted(saved.get("bots", {}).items()):
        alive = bool(bot.get("pid") and bot.get("started") and same_process(bot["pid"], bot["started"]))
        bots.append(
            {
                "handle": handle,
                "profile": bot.get("profile"),
                "desired": bot.get("desired"),
                "state": bot.get("state")
                if alive or bot.get("state") not in ("running", "starting")
                else "stopped",
                "pid": bot.get("pid") if alive else None,
                "restarts": int(bot.get("restarts", 0)),
                "last_exit_code": bot.get("last_exit_code"),
            }
        )
    return {
        "machine": enrolled.machine,
        "board": enrolled.board,
        "keeper": {"running": pid is not None, "pid": pid},
        "unreported_events": len(saved.get("journal", [])),
        "state_dir": str(directory),
        "bots": bots,
    }


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The status as one JSON object.")
def status(as_json: bool) -> None:
    """Show the machine, whether its keeper runs, and each bot's state."""
    info = _status()
    if as_json:
        click.echo(json.dumps(info))
        return
    keeper = info["keeper"]
    running = f"running (pid {keeper['pid']})" if keeper["running"] else "not running"
    click.echo(
        f"machine {info['machine']} on {info['board']}: keeper {running}; "
        f"{info['unreported_events']} event(s) not yet reported"
    )
    if not info["bots"]:
        click.echo("no bots")
    for bot in info["bots"]:
        pid = f" pid {bot['pid']}" if bot["pid"] else ""
        exit_code = "" if bot["last_exit_code"] is None else f"; last exit {bot['last_exit_code']}"
        click.echo(
            f"  {bot['handle']} ({bot['profile']}): {bot['state']}{pid}; should be {bot['desired']}; "
            f"restarts {bot['restarts']}{exit_code}"
        )
