"""Every routine route answers each role as ``scope_routines.ROUTINE_DECISIONS`` says.

Each route is called on a fresh board holding routine ``nightly``; every refusal
leaves the database exactly as it was (row counts, and every routine row).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from board.client import BoardClient
from board.server.api import routines as routine_routes
from board.server.services import auth
from tests.support.boardtest import Board, db_rows, populate, snapshot, start_board, stop_board
from tests.support.scope_routines import ROLES, ROUTINE_DECISIONS

ORDER = ("anon", "other_bot", "bot", "admin_bot", "runner", "human")
SCHEDULED = "2026-12-02T01:00:00Z"
ROUTINE_TABLES = ("routines", "routine_versions", "routine_runs", "routine_changes")


def state(board: Board) -> tuple[dict[str, int], list[Any]]:
    """What a refused call must not change."""
    rows = [db_rows(board.db_path, f"SELECT * FROM {table} ORDER BY 1") for table in ROUTINE_TABLES]
    return snapshot(board.db_path), rows


async def status(client: BoardClient, method: str, path: str, body: Any) -> int:
    headers = {"Authorization": f"Bearer {client.token}"} if client.token else {}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, client.base_url + path, json=body, headers=headers) as resp,
    ):
        await resp.read()
        return resp.status


def body_for(method: str, path: str, role: str) -> Any:
    tag = role.replace("_", "-")
    if path == "/api/routines" and method == "POST":
        return {
            "name": f"r-{tag}",
            "workspace": "proj",
            "schedule": "every 1h",
            "bot": "pb",
            "prompt": "Tidy.",
        }
    if path.endswith("/versions"):
        return {"schedule": "0 3 * * *", "bot": "pb", "prompt": f"Proposed by {role}."}
    if path.endswith("/approve"):
        return {"note": "looks right"}
    if path.endswith("/reject"):
        return {"note": "not this one"}
    if path.endswith("/runs") and method == "POST":
        return {"version": 1, "scheduled_for": SCHEDULED}
    if path.endswith("/finish"):
        return {"state": "done", "outcome": "ok"}
    return None


async def test_every_routine_route_has_a_decision(board: Board) -> None:
    declared = {(r.method, r.path) for r in routine_routes.ROUTES}
    assert declared == set(ROUTINE_DECISIONS)
    for decision in ROUTINE_DECISIONS.values():
        assert set(decision) == set(ROLES)


@pytest.mark.parametrize("key", sorted(ROUTINE_DECISIONS), ids=lambda k: f"{k[0]} {k[1]}")
async def test_each_role_gets_the_decided_answer(key: tuple[str, str], tmp_path: Path) -> None:
    method, template = key
    board = await start_board(tmp_path)
    try:
        world = await populate(board)
        runner = board.client(await auth.runner_token(board.ctx))
        await world.bot.propose_routine(
            "nightly", workspace="proj", schedule="0 2 * * *", bot="pb", prompt="Do."
        )
        await world.human.approve_version("nightly", 1, "fine")
        await world.bot.propose_version("nightly", schedule="0 2 * * *", bot="pb", prompt="Do more.")
        run_id = 0
        if template.endswith("/resume"):
            await world.human.pause_routine("nightly")
        if "{id}" in template:
            run_id = (await runner.create_run("nightly", 1, SCHEDULED))["id"]
            if template.endswith("/finish"):  # a run the bot has closed: the runner may finish it done
                await runner.start_run("nightly", run_id)
                thread = (await world.human.routine("nightly"))["thread_id"]
                await world.bot.claim(thread)
                await world.bot.done(thread, "ok")
        path = template.format(name="nightly", v=2, id=run_id)
        callers = {
            "human": world.human,
            "bot": world.bot,
            "admin_bot": world.admin_bot,
            "other_bot": world.other,
            "runner": runner,
            "anon": world.anon,
        }
        wrong = []
        for role in ORDER:
            before = state(board)
            got = await status(callers[role], method, path, body_for(method, template, role))
            if got != ROUTINE_DECISIONS[key][role]:
                wrong.append(f"{role}: {got}, decided {ROUTINE_DECISIONS[key][role]}")
            if got >= 400:
                assert state(board) == before, f"{method} {template} as {role} ({got}) wrote"
        assert not wrong, f"{method} {template}: " + "; ".join(wrong)
    finally:
        await stop_board(board)
