"""/costs adds up as a person reads it: the parts each table shows sum to the total it shows.

Three bots' wakes of $0.00016 each: $0.00048 in all, shown as $0.0005, while each part
rounded on its own reads $0.0002 and three of them $0.0006. The API keeps the figures
as stored.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from board.server.clock import iso
from tests.support.boardtest import World
from tests.support.pages_support import sign_in

PART = 0.00016


def shown(html: str) -> list[Decimal]:
    return [Decimal(v) for v in re.findall(r'<span class="usd">\$([0-9.]+)</span>', html)]


def table(page: str, table_id: str) -> str:
    found = re.search(rf'<table class="costs" id="{table_id}">(.*?)</table>', page, re.S)
    assert found, f"no table {table_id}"
    return found.group(1)


async def test_each_table_of_every_wake_adds_up_to_the_total_shown(world: World) -> None:
    for client in (world.bot, world.peer, world.other):
        await client.record_wake(
            harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok", cost_usd=PART
        )
    answer = await world.human.costs()
    assert [b["cost_usd"] for b in answer["bots"]] == [pytest.approx(PART)] * 3  # the API's, as stored

    session = await sign_in(world.board)
    try:
        status, page = await session.get("/costs")
    finally:
        await session.close()
    assert status == 200
    total_line = re.search(r'<p id="total-line">(.*?)</p>', page, re.S)
    assert total_line is not None
    [total] = shown(total_line.group(1))
    assert total == Decimal("0.0005")
    for table_id in ("by-workspace", "by-bot", "by-day"):
        parts = shown(table(page, table_id))
        assert sum(parts) == total, (table_id, parts)
    # each bot's part is $0.0001 off its own figure at most: the one listed last gave it up
    assert shown(table(page, "by-bot")) == [Decimal("0.0002"), Decimal("0.0002"), Decimal("0.0001")]
