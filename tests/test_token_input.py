"""A command's token comes from the environment or a file of the user's own, not its command line.

A command line is readable by every local user (``ps``, /proc/<pid>/cmdline). Each
command taking a token reads it from an environment variable or ``--token-file``
(mode 0600, refused when others may read it); ``--token`` still works, with a
warning on stderr. The docs show only the safe forms.
"""

from __future__ import annotations

import re
from pathlib import Path

from board.server.services import auth
from tests.support.boardtest import World, db_rows
from tests.support.processes import ROOT
from tests.test_cli import cli

WARNING = "readable by every local user"


def token_file(tmp_path: Path, token: str, mode: int) -> Path:
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(mode)
    return path


def messages(world: World) -> list[tuple[object, ...]]:
    return db_rows(world.board.db_path, "SELECT id, body FROM messages ORDER BY id")


async def test_a_token_file_of_mode_0600_is_read_without_a_warning(world: World, tmp_path: Path) -> None:
    assert world.bot.token is not None
    path = token_file(tmp_path, world.bot.token, 0o600)
    by_flag = await cli(
        "post", "from a file", "--channel", "lobby", "--token-file", str(path), BOARD_URL=world.board.url
    )
    assert by_flag.status == 0, by_flag.err
    assert by_flag.json()["author"] == "pb" and WARNING not in by_flag.err
    by_env = await cli("read", BOARD_URL=world.board.url, BOARD_TOKEN_FILE=str(path))
    assert by_env.status == 0, by_env.err
    assert [m["body"] for m in by_env.json()["messages"]] == ["from a file"]


async def test_a_token_file_others_may_read_is_refused_and_nothing_is_posted(
    world: World, tmp_path: Path
) -> None:
    assert world.bot.token is not None
    path = token_file(tmp_path, world.bot.token, 0o644)
    before = messages(world)
    result = await cli(
        "post", "leaked", "--channel", "lobby", "--token-file", str(path), BOARD_URL=world.board.url
    )
    assert result.status == 2, result.out
    assert f"{path} is readable by others (mode 0644); run: chmod 600 {path}" in result.err
    assert messages(world) == before


async def test_a_missing_token_file_is_named(world: World, tmp_path: Path) -> None:
    result = await cli("read", "--token-file", str(tmp_path / "absent"), BOARD_URL=world.board.url)
    assert result.status == 2 and f"{tmp_path / 'absent'}: no such token file" in result.err


async def test_no_token_says_each_way_to_give_one(world: World) -> None:
    """The README gives the token as BOARD_TOKEN_FILE; the refusal named only the other two ways."""
    result = await cli("read", BOARD_URL=world.board.url)
    assert result.status == 2
    said = "no token: set BOARD_TOKEN, or BOARD_TOKEN_FILE or --token-file to a file of mode 0600 holding it."
    assert said in result.err


async def test_a_token_on_the_command_line_works_with_a_warning(world: World) -> None:
    assert world.bot.token is not None
    result = await cli("read", "--board", world.board.url, "--token", world.bot.token)
    assert result.status == 0, result.err
    assert WARNING in result.err and "BOARD_TOKEN" in result.err
    quiet = await cli("read", BOARD_URL=world.board.url, BOARD_TOKEN=world.bot.token)
    assert quiet.status == 0 and WARNING not in quiet.err


async def test_the_runner_refuses_a_token_file_others_may_read(world: World, tmp_path: Path) -> None:
    path = token_file(tmp_path, await auth.runner_token(world.board.ctx), 0o640)
    result = await cli("routines", "run", "--board", world.board.url, "--token-file", str(path))
    assert result.status == 2 and f"{path} is readable by others (mode 0640)" in result.err
    missing = await cli("routines", "run", "--board", world.board.url)
    assert missing.status == 2 and "BOARD_ROUTINES_TOKEN" in missing.err


def test_the_docs_show_no_token_on_a_command_line() -> None:
    shown = re.compile(r"--token[ =]+\S")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if shown.search(line)
    ]
    assert found == []
