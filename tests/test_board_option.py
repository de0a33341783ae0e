"""Every command that talks to a board names it the same way: ``--board`` (or BOARD_URL).

``--url``, the option's former name on the ``board`` command's verbs, is still
accepted for one release but no longer shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click

from board.cli import main as board_main
from board.keeper.cli import main as keeper_main
from board.launcher.cli import main as bot_main

OLD_NAME = re.compile(r"--url\b(?!-)")  # not --url-source


def _commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        here = f"{path} {name}"
        if isinstance(command, click.Group):
            yield from _commands(command, here)
        else:
            yield here, command


def _every_command() -> Iterator[tuple[str, click.Command]]:
    for group, name in ((board_main, "board"), (bot_main, "bot"), (keeper_main, "keeper")):
        assert isinstance(group, click.Group)
        yield from _commands(group, name)


def test_every_board_address_option_is_board_and_the_old_name_is_never_shown() -> None:
    taking, renamed = set(), set()
    for name, command in _every_command():
        for param in command.params:
            if not {"--board", "--url"} & set(param.opts):
                continue
            taking.add(name)
            if "--url" in param.opts:
                renamed.add(name)
            assert isinstance(param, click.Option)
            declared = (param.opts[0], param.name, param.envvar)
            assert declared == ("--board", "board_url", "BOARD_URL"), name
            assert param.opts[1:] in ([], ["--url"]) and not param.secondary_opts, name
            shown = command.get_help(click.Context(command, info_name=name))
            assert "--board" in shown and not OLD_NAME.search(shown), (name, shown)
    # The verbs that called it --url keep that name for now; the commands that said --board never had it.
    assert {
        "board read",
        "board post",
        "board kb ls",
        "board fleet ls",
        "board admin user add",
        "board admin enroll-code",
        "board routines run",
        "board routines import",
    } <= renamed
    assert taking - renamed == {
        "board mcp",
        "board bot run",
        "bot run",
        "board bot wake-test",
        "bot wake-test",
        "keeper enroll",
    }
