"""``board routines import`` as a real process: shipped definitions become proposals, once."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
from html import unescape
from pathlib import Path

import pytest

from board.mcp.tools import TOOLS, TOOLS_BY_NAME
from board.server.services import auth
from routines.importer import SHIPPED
from tests.support.boardtest import World, database_env
from tests.support.pages_support import pages_as
from tests.support.processes import ROOT, board_env, command

HTTP_CALL = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/api/[^ `?]*)")
TOOL_CALL = re.compile(r'`(\w+)\((?:action="(\w+)")?')


def _route(path: str) -> str:
    """A route with its placeholders blanked, so the prompt's and the tools' compare."""
    return re.sub(r"\{[^}]*\}", "{}", path)


TOOL_ROUTES = {(a.method, _route(a.route)): (t.name, name) for t in TOOLS for name, a in t.actions.items()}


@pytest.mark.parametrize("name", ["knowledge-reconciler", "board-daily-care"])
def test_a_shipped_prompt_names_each_call_over_http_and_as_its_mcp_tool(name: str) -> None:
    """A bot run with the board's MCP tools follows the same prompt as one with curl: each
    step's HTTP call that has a tool names it beside it, and each tool named is served."""
    prompt = (SHIPPED / name / "prompt.md").read_text()
    paired = 0
    for step in re.split(r"\n\s*\n|\n(?=\s*(?:-|\d+\.) )", prompt):
        tools = {(m[1], m[2] or m[1]) for m in TOOL_CALL.finditer(step)}
        for tool, action in tools:
            assert action in TOOLS_BY_NAME[tool].actions, (tool, action)
        for method, path in HTTP_CALL.findall(step):
            twin = TOOL_ROUTES.get((method, _route(path)))
            assert twin is None or twin in tools, f"{method} {path} names no {twin} beside it:\n{step}"
            paired += twin is not None
    assert paired >= 5


async def import_routines(
    world: World, folder: Path | None, *extra: str, cwd: Path | None = None
) -> tuple[int, str]:
    """``board routines import`` of ``folder`` (None: the shipped routines), run in ``cwd``."""
    token = await auth.human_token(world.board.ctx, "alice")
    where = [] if folder is None else [str(folder)]
    proc = await asyncio.create_subprocess_exec(
        *command("routines", "import", *where, "--board", world.board.url, *extra),
        cwd=cwd,
        env=board_env(BOARD_TOKEN=token),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_import_proposes_each_shipped_routine_once_and_a_changed_file_once_more(
    world: World, tmp_path: Path
) -> None:
    code, out = await import_routines(world, SHIPPED, "--workspace", "proj", "--bot", "ab")
    assert code == 0, out
    assert out.splitlines() == [
        "board-daily-care: proposed version 1 (pending)",
        "knowledge-reconciler: proposed version 1 (pending)",
    ]
    reconciler = await world.human.routine("knowledge-reconciler")
    assert reconciler["workspace"] == "proj" and reconciler["state"] == "unapproved"
    assert reconciler["versions"][0]["prompt"] == (SHIPPED / "knowledge-reconciler" / "prompt.md").read_text()
    assert reconciler["versions"][0]["quiet_hours"] == "08:00-20:00"
    assert (await world.human.routine("board-daily-care"))["workspace"] == "admin"

    code, out = await import_routines(world, SHIPPED, "--workspace", "proj", "--bot", "ab")
    assert code == 0, out
    assert out.splitlines() == [
        "board-daily-care: unchanged, latest is version 1 (pending)",
        "knowledge-reconciler: unchanged, latest is version 1 (pending)",
    ]
    proposals = await world.human.audit(action="routine.propose")
    assert len(proposals["entries"]) == 2

    changed = tmp_path / "routines"
    shutil.copytree(SHIPPED, changed)
    toml = changed / "knowledge-reconciler" / "routine.toml"
    toml.write_text(toml.read_text().replace('schedule = "0 2 * * *"', 'schedule = "30 3 * * *"'))
    code, out = await import_routines(world, changed, "--workspace", "proj", "--bot", "ab")
    assert code == 0, out
    assert "knowledge-reconciler: proposed version 2 (pending)" in out
    assert "board-daily-care: unchanged, latest is version 1 (pending)" in out
    versions = (await world.human.routine("knowledge-reconciler"))["versions"]
    assert [(v["version"], v["schedule"], v["state"]) for v in versions] == [
        (1, "0 2 * * *", "pending"),
        (2, "30 3 * * *", "pending"),
    ]
    for name in ("knowledge-reconciler", "board-daily-care"):
        assert (await world.human.routine_runs(name))["runs"] == []


async def test_import_refuses_a_definition_without_a_bot_and_proposes_nothing(world: World) -> None:
    code, out = await import_routines(world, SHIPPED, "--workspace", "proj")
    assert code != 0
    assert "board-daily-care/routine.toml names no bot" in out
    assert "--bot board-daily-care=<handle>" in out and "--bot knowledge-reconciler=<handle>" in out
    assert (await world.human.routines())["routines"] == []

    code, out = await import_routines(
        world, SHIPPED, "--workspace", "proj", "--bot", "knowledge-reconciler=pb"
    )
    assert code != 0 and "board-daily-care/routine.toml names no bot" in out
    assert (await world.human.routines())["routines"] == []


def readme_lines() -> list[str]:
    """The README's routines lines, in order: the admin invite, the registration, the import."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("Routines are jobs") :].split("```")[1]
    return [line.split("  #")[0].strip() for line in block.strip().splitlines()]


async def run_line(line: str, world: World, **env: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *shlex.split(line),
        env=board_env(PATH=str(Path(command()[0]).parent) + ":/usr/bin:/bin", **env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, f"{line}\n{out.decode()}"
    return out.decode()


async def test_the_readmes_lines_import_both_shipped_routines_each_with_its_own_bot(
    world: World, tmp_path: Path
) -> None:
    invite_line, register_line, import_line = readme_lines()[:3]
    assert invite_line == "board admin invite admin"
    board = f"{shlex.quote(command()[0])} -m board.cli"
    out = await run_line(invite_line.replace("board", board, 1), world, **database_env(world.board))
    invite = out.strip().splitlines()[-1]
    assert invite.startswith("bi_")
    registered = json.loads(
        await run_line(
            register_line.replace("localhost:8080", world.board.url).replace("bi_...", invite), world
        )
    )
    assert registered["agent"]["handle"] == "care-bot" and registered["agent"]["workspace"] == "admin"

    # The import reads the human's token from the file its line names, never the command line.
    assignment, command_line = import_line.split(" ", 1)
    assert assignment == "BOARD_TOKEN_FILE=~/.board/token"
    token_file = tmp_path / "token"
    token_file.write_text(await auth.human_token(world.board.ctx, "alice"))
    token_file.chmod(0o600)
    line = command_line.replace("board", board, 1)
    line = line.replace("myproject", "proj").replace("box3-wordsnap", "pb") + f" --board {world.board.url}"
    out = await run_line(line, world, BOARD_TOKEN_FILE=str(token_file))
    assert out.splitlines() == [
        "board-daily-care: proposed version 1 (pending)",
        "knowledge-reconciler: proposed version 1 (pending)",
    ]
    care = await world.human.routine("board-daily-care")
    reconciler = await world.human.routine("knowledge-reconciler")
    assert (care["workspace"], care["versions"][0]["bot"]) == ("admin", "care-bot")
    assert (reconciler["workspace"], reconciler["versions"][0]["bot"]) == ("proj", "pb")


async def test_a_bot_that_cannot_run_one_routine_is_refused_naming_it_and_imports_nothing(
    world: World, tmp_path: Path
) -> None:
    named = tmp_path / "routines"
    shutil.copytree(SHIPPED, named)
    toml = named / "knowledge-reconciler" / "routine.toml"
    toml.write_text(toml.read_text() + 'bot = "ob"\n')  # a file's own bot, of another workspace
    code, out = await import_routines(world, named, "--workspace", "proj", "--bot", "ab")
    assert code != 0
    assert "knowledge-reconciler: INVALID_ARGUMENT: ob is not a bot that reads workspace proj" in out, out
    assert (await world.human.routines())["routines"] == []

    # board-daily-care (first) may run with ab; knowledge-reconciler may not run in proj with ob
    code, out = await import_routines(
        world,
        SHIPPED,
        "--workspace",
        "proj",
        "--bot",
        "board-daily-care=ab",
        "--bot",
        "knowledge-reconciler=ob",
    )
    assert code != 0
    assert "knowledge-reconciler: INVALID_ARGUMENT: ob is not a bot that reads workspace proj" in out, out
    assert "Nothing was imported." in out and "proposed" not in out
    assert (await world.human.routines())["routines"] == []
    assert (await world.human.audit(action="routine.propose"))["entries"] == []

    code, out = await import_routines(
        world, SHIPPED, "--workspace", "proj", "--bot", "ab", "--bot", "daily=ab"
    )
    assert code != 0
    assert "--bot daily=...: " in out and "holds no routine daily" in out and "board-daily-care" in out
    assert (await world.human.routines())["routines"] == []

    code, out = await import_routines(world, SHIPPED, "--workspace", "proj", "--bot", "ab", "--bot", "pb")
    assert code != 0 and "--bot pb: give HANDLE once" in out
    assert (await world.human.routines())["routines"] == []


async def test_the_line_an_empty_routines_page_shows_imports_as_it_reads(
    world: World, tmp_path: Path
) -> None:
    """A new person copies it from /routines and fills in its names: the shipped routines are
    proposed, the reconciler with a bot of their workspace and the daily care with an admin bot.

    It runs where they are, outside any checkout: an installed board has no ``docs/`` to name."""
    [(_, page)] = await pages_as(world.board, "alice", "/routines")
    shown = re.search(r'id="import-line"[^>]*>([^<]*)<', page)
    assert shown, page
    names = {"W": "proj", "B": "pb", "ADMIN_BOT": "ab"}
    argv = [
        re.sub(r"\b(W|B|ADMIN_BOT)\b", lambda m: names[m.group(1)], a)
        for a in shlex.split(unescape(shown[1]))
    ]
    assert argv[:3] == ["board", "routines", "import"], argv
    code, out = await import_routines(world, None, *argv[3:], cwd=tmp_path)
    assert code == 0, out
    assert out.splitlines() == [
        "board-daily-care: proposed version 1 (pending)",
        "knowledge-reconciler: proposed version 1 (pending)",
    ]
    assert (await world.human.routine("knowledge-reconciler"))["versions"][0]["bot"] == "pb"


async def test_a_board_with_no_admin_bot_yet_imports_the_reconciler_alone(
    world: World, tmp_path: Path
) -> None:
    """A new board's bots are its workspace's: --only names the routines to propose, so the
    reconciler comes in without the admin bot the daily care needs; one not shipped is named."""
    code, out = await import_routines(
        world, None, "--workspace", "proj", "--bot", "pb", "--only", "knowledge-reconciler", cwd=tmp_path
    )
    assert code == 0, out
    assert out.splitlines() == ["knowledge-reconciler: proposed version 1 (pending)"]
    assert [r["name"] for r in (await world.human.routines())["routines"]] == ["knowledge-reconciler"]
    # The line /routines shows, with --only: the daily care's bot is named for a routine left out.
    line = ["--workspace", "proj", "--bot", "knowledge-reconciler=pb", "--bot", "board-daily-care=ADMIN_BOT"]
    code, out = await import_routines(world, None, *line, "--only", "knowledge-reconciler", cwd=tmp_path)
    assert code == 0 and "knowledge-reconciler: unchanged, latest is version 1" in out, out
    code, out = await import_routines(world, None, "--bot", "pb", "--only", "nightly", cwd=tmp_path)
    assert code != 0 and "--only nightly: " in out and "knowledge-reconciler" in out, out
