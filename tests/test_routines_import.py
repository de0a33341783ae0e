"""``board routines import`` as a real process: shipped definitions become proposals, once."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from boardtest import World
from processes import ROOT, board_env, command

from board.server.services import auth

SHIPPED = ROOT / "docs" / "routines"


async def import_routines(world: World, folder: Path, *extra: str) -> tuple[int, str]:
    token = await auth.human_token(world.board.ctx, "alice")
    proc = await asyncio.create_subprocess_exec(
        *command("routines", "import", str(folder), "--url", world.board.url, *extra),
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
    assert "names no bot" in out and "--bot" in out
    assert (await world.human.routines())["routines"] == []
