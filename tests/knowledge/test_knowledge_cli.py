"""The ``board kb`` verbs, run against a live board (in a thread: each runs its own event loop)."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner, Result

from board.cli import main
from tests.support.kb_support import World


async def kb(world: World, *args: str, stdin: str | None = None) -> Result:
    env = {"BOARD_URL": world.board.url, "BOARD_TOKEN": world.bot.token or ""}
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, main, ["kb", *args], input=stdin, env=env)


async def test_put_get_ls_search_history_diff(world: World) -> None:
    put = await kb(
        world,
        "put",
        "howto/run.md",
        "--base",
        "0",
        "--reason",
        "first",
        "--note",
        "from chat",
        stdin="# Running\n\nUse make run.\n",
    )
    assert put.exit_code == 0, put.output
    assert '"revision": 1' in put.output
    again = await kb(
        world,
        "put",
        "howto/run.md",
        "-",
        "--base",
        "1",
        "--reason",
        "second",
        stdin="# Running\n\nUse make run-all.\n",
    )
    assert again.exit_code == 0, again.output
    got = await kb(world, "get", "howto/run.md")
    assert got.exit_code == 0 and got.stdout == "# Running\n\nUse make run-all.\n"
    assert "revision 2" in got.stderr
    part = await kb(world, "get", "howto/run.md", "--lines", "3-3")
    assert part.stdout == "Use make run-all.\n"
    listed = await kb(world, "ls", "--prefix", "howto/")
    assert listed.stdout == "howto/run.md\tr2\tsettled\tRunning\n"
    found = await kb(world, "search", "make")
    assert found.stdout.startswith("howto/run.md\tr2\tsettled\t")
    history = await kb(world, "history", "howto/run.md")
    assert [line.split("\t")[0] for line in history.stdout.splitlines()] == ["r2", "r1"]
    diff = await kb(world, "diff", "howto/run.md")
    assert "-Use make run.\n+Use make run-all.\n" in diff.stdout
    stale = await kb(world, "put", "howto/run.md", "--base", "1", "--reason", "late", stdin="# x\n")
    assert stale.exit_code != 0 and "VERSION_CONFLICT" in stale.output
