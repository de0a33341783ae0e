"""Two board processes on one PostgreSQL database: one dispatches, and each notification goes once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from board.server.api.keys import OUTBOX
from tests.support.boardtest import (
    Board,
    StoreChoice,
    World,
    db_rows,
    eventually,
    populate,
    start_board,
    stop_board,
)
from tests.support.notify_support import SECRET, Receiver


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    yield r
    await r.close()


@dataclass
class TwoBoards:
    boards: list[Board]
    world: World
    destination: int  # alice's webhook, for mentions


@pytest.fixture
async def two(tmp_path: Path, store: StoreChoice, receiver: Receiver) -> AsyncIterator[TwoBoards]:
    """Two board processes on one database; alice, on the first, has a webhook for mentions."""
    if store.cluster is None:
        pytest.skip("two board processes share a database on PostgreSQL only")
    url = store.overrides()["database_url"]
    boards = [
        await start_board(tmp_path / "a", database_url=url),
        await start_board(tmp_path / "b", database_url=url),
    ]
    try:
        world = await populate(boards[0])
        made = await world.human.create_destination(
            "hook", "webhook", url=receiver.url("/hook/a"), secret=SECRET
        )
        await world.human.set_destination_kinds(made["id"], ["mention"])
        yield TwoBoards(boards, world, int(made["id"]))
    finally:
        for board in reversed(boards):
            await stop_board(board)


async def test_two_boards_on_one_database_send_each_notification_once(
    two: TwoBoards, receiver: Receiver
) -> None:
    first, second = two.boards
    on_second = second.client(two.world.bot.token)
    for i in range(10):
        poster = two.world.bot if i % 2 else on_second
        await poster.post(f"@alice number {i}", channel="lobby", workspace="proj")
    await eventually(lambda: len(receiver.at("/hook/a")) >= 10 or None, "ten deliveries", timeout=30)
    dispatching = [b.app[OUTBOX].dispatching for b in two.boards]
    assert sorted(dispatching) == [False, True], dispatching
    subjects = sorted(r.json()["id"] for r in receiver.at("/hook/a"))
    assert len(subjects) == len(set(subjects)) == 10

    # A row is marked sent once its batch has been tried, after the receiver has it.
    def settled() -> list[tuple[Any, ...]] | None:
        found = db_rows(first.db_path, "SELECT state, attempts FROM notifications")
        return found if len(found) == 10 and all(state in ("sent", "failed") for state, _ in found) else None

    states = await eventually(settled, "ten notifications sent or failed", timeout=30)
    assert sorted(states) == [("sent", 1)] * 10


async def test_an_enqueue_on_the_other_board_wakes_the_dispatching_one_at_once(
    two: TwoBoards, receiver: Receiver
) -> None:
    """The outbox's wake is one of the signals every process hears (NOTIFY board), so the
    dispatching board sends another's notification without waiting for its poll."""
    boards = two.boards
    for board in boards:
        board.app[OUTBOX].poll = 120.0  # a send within seconds is a wake, not the poll
    await eventually(lambda: any(b.app[OUTBOX].dispatching for b in boards) or None, "a dispatcher")
    dispatching = next(b for b in boards if b.app[OUTBOX].dispatching)
    other = next(b for b in boards if b is not dispatching)
    on_dispatching = dispatching.client(two.world.bot.token)
    await on_dispatching.post("@alice first, woken here", channel="lobby", workspace="proj")
    await eventually(lambda: receiver.at("/hook/a") or None, "the first delivery", timeout=10)
    posted = await other.client(two.world.bot.token).post(
        "@alice from the other board", channel="lobby", workspace="proj"
    )
    await eventually(lambda: len(receiver.at("/hook/a")) >= 2 or None, "the other board's", timeout=10)
    assert receiver.at("/hook/a")[1].json()["id"] == f"m{posted['id']}:{two.destination}"
    assert not other.app[OUTBOX].dispatching


async def test_quiet_hours_set_on_the_other_board_hold_what_this_one_enqueues(two: TwoBoards) -> None:
    """Who has quiet hours is cached per process; a change on another drops it (NOTIFY board)."""
    first, second = two.boards
    world = two.world
    await world.bot.post("@alice before quiet hours", channel="lobby", workspace="proj")  # cached: none
    await second.client(world.human.token).set_quiet_hours("00:00", "23:59", "UTC+14:00")

    async def held() -> bool | None:
        posted = await world.bot.post("@alice in quiet hours", channel="lobby", workspace="proj")
        key = f"m{posted['id']}:{two.destination}"
        [(due, created)] = db_rows(
            first.db_path, f"SELECT next_at, created_at FROM notifications WHERE idem_key = '{key}'"
        )
        return True if str(due) > str(created) else None

    await eventually(held, "a mention held by quiet hours set on the other board", timeout=10, interval=0.1)
