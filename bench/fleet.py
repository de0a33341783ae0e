"""Set up callers on a benchmark board over its public API: a human, a workspace, bots."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from .common import BoardProcess


@dataclass
class Fleet:
    human: str
    bots: list[tuple[str, str]]  # (handle, token)


async def make_fleet(board: BoardProcess, bots: int, workspace: str = "bench") -> Fleet:
    board.admin("user", "add", "bencher")
    human = board.admin("token", "bencher")
    auth = {"Authorization": f"Bearer {human}"}
    async with aiohttp.ClientSession(board.url) as http:
        async with http.post("/api/workspaces", json={"slug": workspace}, headers=auth) as resp:
            resp.raise_for_status()
        async with http.post(
            "/api/invites", json={"workspace": workspace, "uses": max(1, bots)}, headers=auth
        ) as resp:
            invite = (await resp.json())["invite"]

        async def register(i: int) -> tuple[str, str]:
            async with http.post("/api/agents", json={"handle": f"b{i}", "invite": invite}) as resp:
                resp.raise_for_status()
                return f"b{i}", (await resp.json())["token"]

        registered: list[tuple[str, str]] = []
        for start in range(0, bots, 50):
            registered += await asyncio.gather(*[register(i) for i in range(start, min(bots, start + 50))])
    return Fleet(human, registered)
