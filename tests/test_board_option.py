"""Every command that talks to a board names it the same way: ``--board`` (or BOARD_URL).

``--url``, the option's former name on the ``board`` command's verbs, is still
accepted for one release but no longer shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

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


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["kb", "ls"], {"BOARD_URL": "127.0.0.1:18431"}),
        (["kb", "ls", "--url", "127.0.0.1:18431"], {}),
        (["read", "--board", "127.0.0.1:18431"], {}),
    ],
)
def test_an_address_without_http_is_refused_before_any_call(args: list[str], env: dict[str, str]) -> None:
    """The client cannot call it, and would say the board cannot be reached, as if it were down."""
    result = CliRunner().invoke(board_main, args, env={"BOARD_TOKEN": "bb_x", **env})
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Invalid value for '--board': '127.0.0.1:18431' has no http:// or https://: "
        "give it as http://127.0.0.1:18431"
    )
