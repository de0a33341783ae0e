"""The sweep, driven by a ManualClock: nudge stalled claims once, release abandoned ones,
flag unseen mail to away bots, and never do any of it twice.

Each test calls one sweep pass directly (``board.server.sweep.sweep``) after moving
the clock; nothing sleeps. The board's settings are the defaults: a nudge after
30 minutes without progress, a release after 2 hours.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardClient
from board.server import sweep as sweep_module
from board.server.clock import ManualClock, iso
from board.server.services.context import Context
from board.server.store import requests as request_store
from board.server.store.db import Database
from board.server.store.writer import DatabaseUnreachable
from board.server.sweep import REQUESTS_KEPT, sweep
from tests.support.boardtest import (
    LONG_WAIT,
    WOKEN_WITHIN,
    Board,
    Where,
    World,
    db_execute,
    db_rows,
    held,
    populate,
    snapshot,
    start_board,
    stop_board,
)

MINUTE = 60


async def _claimed_thread(w: World, body: str = "make the build green") -> int:
    root = await w.human.post(body, channel="lobby", workspace="proj")
    await w.bot.claim(root["id"], note="on it")
    return int(root["id"])


async def _events(client: BoardClient, tid: int, kind: str) -> list[dict[str, Any]]:
    thread = await client.thread(tid)
    return [m for m in thread["messages"] if m["kind"] == "event" and m["meta"].get("claim") == kind]


def _history(db_path: Where, tid: int, action: str) -> int:
    rows = db_rows(
        db_path, "SELECT count(*) FROM claim_events WHERE thread_id = ? AND action = ?", (tid, action)
    )
    return int(rows[0][0])


async def test_a_stalled_claim_is_nudged_once(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    ctx = w.board.ctx
    tid = await _claimed_thread(w)

    clock.advance(29 * MINUTE)
    assert (await sweep(ctx)).nudged == []

    clock.advance(2 * MINUTE)
    report = await sweep(ctx)
    assert report.nudged == [tid] and report.released == []
    nudges = await _events(w.human, tid, "nudge")
    assert len(nudges) == 1
    assert nudges[0]["mentions"] == ["pb"] and nudges[0]["body"].startswith("@pb ")
    assert nudges[0]["author"] == "board"
    inbox = {m["id"]: m for m in (await w.bot.inbox())["messages"]}
    assert inbox[nudges[0]["id"]]["reason"] == "mention"

    # Right after, and again a little later: the same stretch is not nudged twice.
    before = snapshot(w.board.db_path)
    assert (await sweep(ctx)).nudged == []
    clock.advance(10 * MINUTE)
    assert (await sweep(ctx)).nudged == []
    assert snapshot(w.board.db_path) == before
    assert _history(w.board.db_path, tid, "nudge") == 1
    # A nudge is not progress: the claim stays stalled and is listed as such.
    stalled = await w.human.claims(stalled=True)
    assert [c["thread_id"] for c in stalled["claims"]] == [tid]


async def test_progress_then_a_new_stall_gets_a_new_nudge(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    ctx = w.board.ctx
    tid = await _claimed_thread(w)
    clock.advance(31 * MINUTE)
    assert (await sweep(ctx)).nudged == [tid]

    clock.advance(5 * MINUTE)
    await w.bot.post("halfway: the flaky test is a timezone bug", reply_to=tid)
    assert (await w.human.claims(stalled=True))["claims"] == []
    clock.advance(29 * MINUTE)
    assert (await sweep(ctx)).nudged == []
    clock.advance(2 * MINUTE)
    assert (await sweep(ctx)).nudged == [tid]
    assert (await sweep(ctx)).nudged == []
    assert len(await _events(w.human, tid, "nudge")) == 2


async def test_an_abandoned_claim_is_released(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    ctx = w.board.ctx
    tid = await _claimed_thread(w)
    clock.advance(31 * MINUTE)
    await sweep(ctx)
    clock.advance(88 * MINUTE)  # 1 h 59 min without progress
    assert (await sweep(ctx)).released == []

    clock.advance(2 * MINUTE)
    report = await sweep(ctx)
    assert report.released == [tid] and report.nudged == []
    thread = await w.human.thread(tid)
    assert thread["claim"]["state"] == "open" and thread["claim"]["holder"] is None
    assert thread["messages"][0]["claim"]["state"] == "open"
    assert thread["claim_history"][-1]["action"] == "expire"
    assert thread["claim_history"][-1]["actor"] == "board"
    released = await _events(w.human, tid, "expire")
    assert len(released) == 1 and "released by the board" in released[0]["body"]
    # The bot that held it hears so, and no longer lists it as its claim.
    assert released[0]["id"] in {m["id"] for m in (await w.bot.inbox())["messages"]}
    assert (await w.bot.me())["claims"] == []

    assert (await sweep(ctx)).released == []
    assert _history(w.board.db_path, tid, "expire") == 1
    taken = await w.peer.claim(tid)
    assert taken["holder"] == "pb2"


async def test_a_sweep_that_comes_late_releases_without_nudging(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    tid = await _claimed_thread(w)
    clock.advance(3 * 3600)
    report = await sweep(w.board.ctx)
    assert report.released == [tid] and report.nudged == []


async def test_the_holders_wait_wakes_on_its_nudge(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    tid = await _claimed_thread(w)
    cursor = (await w.bot.me())["cursor"]
    waiting = asyncio.create_task(w.bot.inbox(since=cursor, wait=LONG_WAIT))
    await held(w.board)
    clock.advance(31 * MINUTE)
    await sweep(w.board.ctx)
    page = await asyncio.wait_for(waiting, WOKEN_WITHIN)  # well before the wait's end: the nudge woke it
    assert [m["meta"]["claim"] for m in page["messages"]] == ["nudge"]
    assert page["messages"][0]["thread_id"] == tid


async def test_unseen_mail_to_an_away_bot_is_flagged(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    ctx = w.board.ctx
    await w.peer.me()  # pb2 was here once, now
    await w.bot.me()
    clock.advance(25 * 3600)  # both have been away for a day
    await w.bot.me()  # pb is back
    to_away = await w.human.post("@pb2 please review the release notes", channel="lobby", workspace="proj")
    to_here = await w.human.post("@pb please review the changelog", channel="lobby", workspace="proj")

    clock.advance(29 * MINUTE)
    assert (await sweep(ctx)).flagged == 0
    clock.advance(2 * MINUTE)
    assert (await sweep(ctx)).flagged == 1
    assert (await sweep(ctx)).flagged == 0

    for reader in (w.human, w.bot):
        page = await reader.claims(stalled=True)
        assert [(u["message_id"], u["handle"]) for u in page["unseen"]] == [(to_away["id"], "pb2")]
        assert page["unseen"][0]["thread_id"] == to_away["id"]
    assert (await w.other.claims(stalled=True))["unseen"] == []
    assert to_here["id"] not in [u["message_id"] for u in (await w.human.claims(stalled=True))["unseen"]]

    # Once pb2 has seen it, it is no longer listed.
    await w.peer.receipts([to_away["id"]], "seen")
    assert (await w.human.claims(stalled=True))["unseen"] == []


async def test_unseen_conversation_mail_is_listed_only_to_its_members(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    await w.peer.me()
    clock.advance(25 * 3600)  # pb2 has been away for a day
    room = (await w.human.open_conversation(["pb2", "pb"], workspace="proj"))["conversation"]
    private = await w.human.post("pb2, the private plan", conversation=room["id"])
    clock.advance(31 * MINUTE)
    assert (await sweep(w.board.ctx)).flagged >= 1
    flagged = [u["message_id"] for u in (await w.human.claims(stalled=True))["unseen"]]
    assert private["id"] in flagged  # it is there to leak
    assert private["id"] in [u["message_id"] for u in (await w.bot.claims(stalled=True))["unseen"]]
    outsider = await w.board.bot("pb3", "proj")
    assert private["id"] not in [u["message_id"] for u in (await outsider.claims(stalled=True))["unseen"]]


async def test_mail_marked_done_is_not_flagged_unseen(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    posted = await w.human.post("@pb2 please look", channel="lobby", workspace="proj")
    await w.peer.receipts([posted["id"]], "done")
    clock.advance(25 * 3600)
    assert (await sweep(w.board.ctx)).flagged == 0
    assert (await w.human.claims(stalled=True))["unseen"] == []


async def test_an_archived_workspace_is_left_alone(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    tid = await _claimed_thread(w)
    await w.human.archive_workspace("proj")
    clock.advance(3 * 3600)
    report = await sweep(w.board.ctx)
    assert report.nudged == [] and report.released == []
    assert (await w.human.thread(tid))["claim"]["holder"] == "pb"


@pytest.fixture
async def two_boards(tmp_path: Path, clock: ManualClock) -> AsyncIterator[tuple[Board, Context]]:
    """A board, and a second process's database and context on the same file."""
    board = await start_board(tmp_path, clock=clock)
    db = Database(board.db_file, exclusive=False)
    await db.open()
    try:
        yield board, Context(db=db, settings=board.ctx.settings, clock=clock)
    finally:
        await db.close()
        await stop_board(board)


async def test_two_processes_sweeping_at_once_nudge_once(
    two_boards: tuple[Board, Context], clock: ManualClock
) -> None:
    board, second = two_boards
    w = await populate(board)
    tids = [await _claimed_thread(w, f"job {i}") for i in range(3)]

    clock.advance(31 * MINUTE)
    first_report, second_report = await asyncio.gather(sweep(board.ctx), sweep(second))
    assert sorted(first_report.nudged + second_report.nudged) == tids
    for tid in tids:
        assert _history(board.db_path, tid, "nudge") == 1
        assert len(await _events(w.human, tid, "nudge")) == 1

    clock.advance(2 * 3600)
    first_report, second_report = await asyncio.gather(sweep(second), sweep(board.ctx))
    assert sorted(first_report.released + second_report.released) == tids
    for tid in tids:
        assert _history(board.db_path, tid, "expire") == 1


async def test_the_running_board_sweeps_on_its_own(tmp_path: Path, clock: ManualClock) -> None:
    board = await start_board(tmp_path, clock=clock, sweep_every=1)
    try:
        w = await populate(board)
        tid = await _claimed_thread(w)
        cursor = (await w.bot.me())["cursor"]
        clock.advance(31 * MINUTE)
        page = await w.bot.inbox(since=cursor, wait=5)
        assert [(m["thread_id"], m["meta"]["claim"]) for m in page["messages"]] == [(tid, "nudge")]
    finally:
        await stop_board(board)


async def test_claims_already_nudged_do_not_crowd_out_new_stalls(
    clocked_world: World, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pass handles a bounded batch; claims that need nothing must not fill it."""
    import board.server.sweep as sweep_module

    monkeypatch.setattr(sweep_module, "BATCH", 2)
    w = clocked_world
    ctx = w.board.ctx
    first = [await _claimed_thread(w, f"old {i}") for i in range(2)]
    clock.advance(10 * MINUTE)
    later = await _claimed_thread(w, "newer")
    archived_root = await w.other.post("in a workspace about to close", channel="lobby")
    await w.other.claim(archived_root["id"])
    await w.human.archive_workspace("other")

    clock.advance(21 * MINUTE)
    assert (await sweep(ctx)).nudged == first
    clock.advance(10 * MINUTE)
    assert (await sweep(ctx)).nudged == [later]
    assert (await sweep(ctx)).nudged == []


async def test_mail_a_moved_bot_can_no_longer_read_is_neither_flagged_nor_listed(
    clocked_world: World, clock: ManualClock
) -> None:
    """A bot moved to another workspace reads its old inbox no more, nor can mark it seen: a
    flag on that mail stood in the list for good, before newer ones, and more were flagged."""
    w = clocked_world
    await w.peer.me()
    clock.advance(25 * 3600)  # pb2 has been away for a day
    flagged = await w.human.post("@pb2 please review the release notes", channel="lobby", workspace="proj")
    clock.advance(31 * MINUTE)
    assert (await sweep(w.board.ctx)).flagged == 1
    await w.human.post("@pb2 and the changelog", channel="lobby", workspace="proj")
    assert [u["message_id"] for u in (await w.human.claims(stalled=True))["unseen"]] == [flagged["id"]]
    await w.human.set_bots("other", ["ob", "pb2"])
    clock.advance(31 * MINUTE)
    assert (await sweep(w.board.ctx)).flagged == 0
    assert (await w.human.claims(stalled=True))["unseen"] == []


async def test_a_backlog_past_its_keep_is_pruned_whole_in_bounded_transactions(
    clocked_world: World, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first sweep after a long stop finds every request id that expired meanwhile (a
    busy fleet's day: millions) and deleted them in its one transaction, holding the writer
    for as long. They go in transactions of ``PRUNE_AT_MOST`` each, one after another, until
    none is left; the ids still kept stay."""
    monkeypatch.setattr(sweep_module, "PRUNE_AT_MOST", 2)
    expired = iso(clock.now() - timedelta(seconds=REQUESTS_KEPT + 60))
    kept = iso(clock.now() - timedelta(seconds=REQUESTS_KEPT - 60))
    for n, at in enumerate([expired] * 5 + [kept]):
        db_execute(
            clocked_world.board.db_path,
            "INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)"
            " VALUES (1, ?, 'f', 201, '{}', ?)",
            (f"r{n}", at),
        )
    each: list[int] = []
    batches: set[int] = set()  # the writer's count of committed batches, as each prune ran
    prune = request_store.prune
    ctx = clocked_world.board.ctx

    async def counted(conn: Any, before: str, at_most: int) -> int:
        batches.add(ctx.db.stats.batches)
        each.append(await prune(conn, before, at_most))
        return each[-1]

    monkeypatch.setattr(request_store, "prune", counted)
    report = await sweep(ctx)
    assert report.pruned_requests == 5 and each == [2, 2, 1] and len(batches) == 3
    left = db_rows(clocked_world.board.db_path, "SELECT request_id FROM requests WHERE agent_id = 1")
    assert left == [("r5",)]


async def test_a_backlog_prune_that_fails_leaves_the_pass_reported_and_the_rest_to_the_next(
    clocked_world: World,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The pass's decisions are committed before a backlog is pruned on: a prune that fails
    then (the database gone a moment) is one warning, the pass's report is still returned
    with what it nudged, and the next pass prunes what is left."""
    await _claimed_thread(clocked_world)
    clock.advance(31 * MINUTE)
    monkeypatch.setattr(sweep_module, "PRUNE_AT_MOST", 1)
    expired = iso(clock.now() - timedelta(seconds=REQUESTS_KEPT + 60))
    for n in range(3):
        db_execute(
            clocked_world.board.db_path,
            "INSERT INTO requests (agent_id, request_id, fingerprint, status, response, created_at)"
            " VALUES (1, ?, 'f', 201, '{}', ?)",
            (f"r{n}", expired),
        )
    prune = request_store.prune
    calls = 0

    async def fails_second(conn: Any, before: str, at_most: int) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise DatabaseUnreachable("the database went away")
        return await prune(conn, before, at_most)

    monkeypatch.setattr(request_store, "prune", fails_second)
    report = await sweep(clocked_world.board.ctx)
    assert len(report.nudged) == 1 and report.pruned_requests == 1
    assert [r.getMessage() for r in caplog.records if r.name == "board.server.sweep"] == [
        "sweep: pruning a backlog failed; the next pass goes on with it (the database went away)"
    ]
    monkeypatch.setattr(request_store, "prune", prune)
    assert (await sweep(clocked_world.board.ctx)).pruned_requests == 2
