"""``board routines``: run the runner on its own, and import shipped definitions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from board.client import BoardAPIError, BoardClient
from board.local_board import board_option
from board.token_input import token_option

from . import importer
from .runner import FileClock, Runner, TokenRefused

if TYPE_CHECKING:
    from aiohttp import web

#: The exit code of a runner whose token the board refused: ``bot run``'s for the same.
EXIT_REFUSED = 3
#: How a runner token begins (``board admin runner-token``): any other is a human's or a bot's.
RUNNER_PREFIX = "br_"
#: What to do about a refused token, after the refusal.
NEW_TOKEN = (
    "Make a runner token with `board admin runner-token` (on the board's machine) and give it "
    "in a file of mode 0600 (--token-file, BOARD_ROUTINES_TOKEN_FILE) or in BOARD_ROUTINES_TOKEN."
)


@click.group()
def routines() -> None:
    """Scheduled jobs a human approves: the runner, and importing definitions."""


@routines.command("run")
@board_option(renamed=True)
@token_option("BOARD_ROUTINES_TOKEN", "a runner token (from `board admin runner-token`)")
@click.option(
    "--check-every",
    type=click.FloatRange(0.05),
    default=30.0,
    show_default=True,
    help="Seconds between checks of open runs.",
)
@click.option(
    "--clock-file",
    type=click.Path(dir_okay=False, path_type=Path),
    hidden=True,
    help="Read the time from this file (RFC 3339): tests move it.",
)
def run(board_url: str, token: str, check_every: float, clock_file: Path | None) -> None:
    """Run the routines runner on its own, until interrupted.

    Exits 3 when the board refuses the token (unknown, revoked, or not a runner's).
    """
    if not token.startswith(RUNNER_PREFIX):  # a human's or a bot's reads routines but runs none
        click.echo(
            f"routines: the token is not a runner's (a runner's starts {RUNNER_PREFIX}). {NEW_TOKEN}",
            err=True,
        )
        sys.exit(EXIT_REFUSED)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # its job bookkeeping is ours to say

    async def go() -> None:
        async with BoardClient(board_url, token, timeout=120) as board:
            clock = FileClock(clock_file) if clock_file is not None else None
            await Runner(board, clock, check_every=check_every).run()

    click.echo(f"routines: running against {board_url}", err=True)
    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        pass
    except TokenRefused as exc:
        click.echo(f"routines: {exc}. {NEW_TOKEN}", err=True)
        sys.exit(EXIT_REFUSED)


@routines.command("import")
@board_option(renamed=True)
@token_option("BOARD_TOKEN", "your token")
@click.option("--workspace", help="The workspace of definitions that name none.")
@click.option(
    "--bot",
    "bots",
    multiple=True,
    metavar="[ROUTINE=]HANDLE",
    help="ROUTINE=HANDLE: the bot of that routine; HANDLE: of every definition naming none. Repeatable.",
)
@click.option(
    "--only",
    multiple=True,
    metavar="ROUTINE",
    help="Propose this routine of the folder and not the others. Repeatable.",
)
@click.argument(
    "folder",
    required=False,
    default=importer.SHIPPED,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
def import_(
    board_url: str,
    token: str,
    workspace: str | None,
    bots: tuple[str, ...],
    only: tuple[str, ...],
    folder: Path,
) -> None:
    """Propose each FOLDER/<name>/ (routine.toml, prompt.md); unchanged files propose nothing.

    Without FOLDER, the routines shipped with the board: knowledge-reconciler and board-daily-care.

    The board checks every definition first: one it refuses (a bot that cannot
    run it, say) imports none of them.
    """
    try:
        found = importer.definitions(folder, workspace, importer.Bots.parse(bots), only)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None

    async def go() -> None:
        async with BoardClient(board_url, token) as board:
            problems = []
            for definition in found:
                try:
                    await importer.propose(board, definition, dry_run=True)
                except BoardAPIError as exc:
                    problems.append(f"{definition.name}: {exc.code}: {exc.message}")
            if problems:
                raise click.ClickException("\n".join([*problems, "Nothing was imported."]))
            for definition in found:
                answer = await importer.propose(board, definition)
                what = "proposed" if answer["proposed"] else "unchanged, latest is"
                click.echo(f"{definition.name}: {what} version {answer['version']} ({answer['state']})")

    try:
        asyncio.run(go())
    except BoardAPIError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from None


#: Seconds between tries to take the runner's duty while another board process holds it.
DUTY_RETRY = 15.0


def in_process(
    url: str,
    issue_token: Callable[[web.Application], Awaitable[str]],
    duty: Callable[[web.Application], AbstractAsyncContextManager[bool]],
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A clean-up context that runs the runner beside the board (``board serve --routines``).

    Several board processes on one database may each be started with ``--routines``:
    the runner runs in the one holding the ``duty`` and takes over when that one stops.
    """

    async def on_duty(board: BoardClient, app: web.Application) -> None:
        while True:
            async with duty(app) as mine:
                if mine:
                    await Runner(board).run()
            if not mine:  # a duty ends only with its lock lost: ask again at once
                await asyncio.sleep(DUTY_RETRY)

    async def runner(app: web.Application) -> AsyncIterator[None]:
        board = BoardClient(url, await issue_token(app), timeout=120)
        task = asyncio.create_task(on_duty(board, app), name="routines-runner")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await board.close()

    return runner
