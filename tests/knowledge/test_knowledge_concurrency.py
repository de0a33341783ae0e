"""Compare-and-set under contention: no update is ever lost."""

from __future__ import annotations

import asyncio
import random
import time

from board.client import BoardAPIError, BoardClient
from tests.support.kb_support import World

WRITERS = 16
CYCLES = 50


async def append_lines(client: BoardClient, name: str, path: str) -> int:
    """Read, append one unique line, write on top of what was read; on a conflict, read again."""
    conflicts = 0
    for i in range(CYCLES):
        attempt = 0
        while True:
            doc = await client.document(path)
            body = doc["body"] + f"{name} line {i}\n"
            try:
                await client.put_document(path, body, doc["latest_revision"], f"{name} {i}")
                break
            except BoardAPIError as exc:
                if exc.code == "VERSION_CONFLICT":
                    conflicts += 1
                    attempt += 1
                    await asyncio.sleep(random.uniform(0, 0.02 * min(attempt, 10)))  # jittered backoff
                elif exc.code == "RATE_LIMITED":
                    await asyncio.sleep(exc.retry_after or 1.0)
                else:
                    raise
    return conflicts


async def test_sixteen_writers_lose_no_update(world: World) -> None:
    await world.bot.put_document("log.md", "# Log\n", 0, "start")
    writers = [await world.board.bot(f"writer{n:02d}", "proj") for n in range(WRITERS)]
    started = time.monotonic()
    conflicts = await asyncio.gather(
        *(append_lines(client, f"w{n:02d}", "log.md") for n, client in enumerate(writers))
    )
    elapsed = time.monotonic() - started
    doc = await world.bot.document("log.md")
    lines = doc["body"].splitlines()[1:]
    assert len(lines) == WRITERS * CYCLES
    assert sorted(lines) == sorted(f"w{n:02d} line {i}" for n in range(WRITERS) for i in range(CYCLES))
    for n in range(WRITERS):  # each writer's lines are in its own order
        mine = [line for line in lines if line.startswith(f"w{n:02d} ")]
        assert mine == [f"w{n:02d} line {i}" for i in range(CYCLES)]
    assert doc["latest_revision"] == WRITERS * CYCLES + 1
    history = await world.bot.document_history("log.md", limit=1, view="compact")
    assert history["revisions"][0]["revision"] == WRITERS * CYCLES + 1
    assert sum(conflicts) > 0, "the writers never collided; the test proved nothing"
    assert elapsed < 60
