"""Receipts (an addressed agent saw or finished with a message) and wake records
(one harness run each, written by the bot's launcher)."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardClient
from board.server.clock import ManualClock
from board.server.services import auth, longpoll, messages, posting
from tests.support.boardtest import World, db_rows, held, snapshot
from tests.support.refusals import refused


def _receipts(message: dict[str, Any]) -> dict[str, tuple[str, str | None, str | None]]:
    return {r["handle"]: (r["reason"], r["seen_at"], r["done_at"]) for r in message["receipts"]}


async def _inbox_count(client: BoardClient) -> int:
    return int((await client.me())["inbox"])


# -- receipts ----------------------------------------------------------------------------


async def test_the_addressed_bot_marks_seen_then_done(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    posted = await w.human.post("@pb @pb2 please both review", channel="lobby", workspace="proj")
    assert _receipts(await w.human.message(posted["id"])) == {
        "pb": ("mention", None, None),
        "pb2": ("mention", None, None),
    }
    seen_at = w.board.ctx.now()
    answer = await w.bot.receipts([posted["id"]], "seen")
    assert answer == {"state": "seen", "message_ids": [posted["id"]]}

    clock.advance(120)
    done_at = w.board.ctx.now()
    await w.bot.receipts([posted["id"]], "done")
    await w.bot.receipts([posted["id"]], "seen")  # again: the first time stands
    receipts = _receipts(await w.peer.message(posted["id"]))
    assert receipts == {"pb": ("mention", seen_at, done_at), "pb2": ("mention", None, None)}


async def test_done_alone_counts_as_seen(world: World) -> None:
    posted = await world.human.post("@pb the answer is 42", channel="lobby", workspace="proj")
    before = await _inbox_count(world.bot)
    await world.bot.receipts([posted["id"]], "done")
    _, seen_at, done_at = _receipts(await world.human.message(posted["id"]))["pb"]
    assert seen_at is not None and seen_at == done_at
    assert await _inbox_count(world.bot) == before - 1


async def test_a_message_not_addressed_to_me_is_refused_whole(world: World) -> None:
    w = world
    mine = await w.human.post("@pb yours", channel="lobby", workspace="proj")
    theirs = await w.human.post("@pb2 not yours", channel="lobby", workspace="proj")
    plain = await w.peer.post("nobody's in particular", channel="lobby")
    foreign = await w.human.post("@ob other workspace", channel="lobby", workspace="other")
    before = snapshot(w.board.db_path)
    for ids in ([theirs["id"]], [plain["id"]], [foreign["id"]], [10**9], [mine["id"], theirs["id"]]):
        exc = await refused(w.bot.receipts(ids, "seen"), "NOT_FOUND")
        assert (exc.status, exc.code) == (404, "NOT_FOUND"), ids
    assert snapshot(w.board.db_path) == before
    assert _receipts(await w.human.message(mine["id"]))["pb"] == ("mention", None, None)
    # An author does not receipt its own message: it was never addressed to it.
    await refused(w.peer.receipts([plain["id"]], "done"), "NOT_FOUND")


async def test_receipts_validate_their_body(world: World) -> None:
    posted = await world.human.post("@pb hi", channel="lobby", workspace="proj")
    before = snapshot(world.board.db_path)
    for body, code in (
        ({"message_ids": [posted["id"]], "state": "read"}, "INVALID_ARGUMENT"),
        ({"message_ids": [], "state": "seen"}, "INVALID_ARGUMENT"),
        ({"message_ids": [posted["id"]]}, "INVALID_ARGUMENT"),
        ({"message_ids": [0], "state": "seen"}, "INVALID_ARGUMENT"),
        ({"message_ids": list(range(1, 502)), "state": "seen"}, "LIMIT_EXCEEDED"),
        ({"message_ids": [posted["id"]], "state": "seen", "extra": 1}, "INVALID_ARGUMENT"),
    ):
        exc = await refused(world.bot.request("POST", "/api/receipts", json=body), code)
        assert exc.code == code, body
    await refused(world.anon.receipts([posted["id"]]), "UNAUTHENTICATED")
    assert snapshot(world.board.db_path) == before


async def test_inbox_ack_records_seen_for_what_it_returns(world: World) -> None:
    w = world
    ids = [(await w.human.post(f"@pb task {i}", channel="lobby", workspace="proj"))["id"] for i in range(3)]
    assert await _inbox_count(w.bot) == 3
    page = await w.bot.inbox(ack=True, limit=2)
    assert [m["id"] for m in page["messages"]] == ids[:2] and page["has_more"] is True
    assert await _inbox_count(w.bot) == 1
    for message_id, expect_seen in zip(ids, (True, True, False), strict=True):
        _, seen_at, done_at = _receipts(await w.human.message(message_id))["pb"]
        assert (seen_at is not None) is expect_seen and done_at is None
    # Reading without ack records nothing.
    await w.bot.inbox(since=page["next_since"])
    assert await _inbox_count(w.bot) == 1
    rows = db_rows(w.board.db_path, "SELECT message_id, state FROM receipts ORDER BY message_id")
    assert rows == [(ids[0], "seen"), (ids[1], "seen")]


async def test_inbox_ack_on_a_long_poll_acks_what_woke_it(world: World) -> None:
    import asyncio

    w = world
    cursor = (await w.bot.me())["cursor"]
    waiting = asyncio.create_task(w.bot.inbox(since=cursor, wait=10, ack=True))
    await held(w.board)
    posted = await w.human.post("@pb wake up", channel="lobby", workspace="proj")
    page = await asyncio.wait_for(waiting, 5)
    assert [m["id"] for m in page["messages"]] == [posted["id"]]
    assert _receipts(await w.human.message(posted["id"]))["pb"][1] is not None
    assert await _inbox_count(w.bot) == 0


async def test_me_inbox_counts_unseen_mail_only(world: World) -> None:
    w = world
    assert await _inbox_count(w.bot) == 0
    a = await w.human.post("@pb one", channel="lobby", workspace="proj")
    b = await w.human.post("@pb two", channel="lobby", workspace="proj")
    await w.bot.post("my own post does not count", channel="lobby")
    assert await _inbox_count(w.bot) == 2
    await w.bot.receipts([a["id"]], "seen")
    assert await _inbox_count(w.bot) == 1
    await w.bot.receipts([b["id"]], "done")
    assert await _inbox_count(w.bot) == 0
    assert await _inbox_count(w.peer) == 0


async def test_receipts_of_a_message_show_every_addressee(world: World) -> None:
    w = world
    root = await w.peer.post("root by pb2", channel="lobby")
    convo = (await w.human.open_conversation(["pb", "pb2"], "trio", workspace="proj"))["conversation"]
    reply = await w.human.post("@pb see above", reply_to=root["id"])
    in_convo = await w.human.post("hello both", conversation=convo["id"])
    assert _receipts(await w.bot.message(reply["id"])) == {
        "pb": ("mention", None, None),
        "pb2": ("thread", None, None),
    }
    await w.peer.receipts([in_convo["id"]], "seen")
    receipts = _receipts(await w.bot.message(in_convo["id"]))
    assert set(receipts) == {"pb", "pb2"}
    assert receipts["pb"] == ("conversation", None, None) and receipts["pb2"][1] is not None
    # Who is not addressed has no receipt row to show; another workspace sees nothing.
    await refused(w.other.message(in_convo["id"]), "NOT_FOUND")


# -- wakes ---------------------------------------------------------------------------------

RUN = {
    "trigger_ids": [],
    "harness": "claude",
    "session_id": "sess-1",
    "started_at": "2026-11-30T04:00:00Z",
    "ended_at": "2026-11-30T04:03:30Z",
    "exit_code": 0,
    "outcome": "ok",
    "cost_usd": 0.42,
    "input_tokens": 12000,
    "output_tokens": 800,
}


async def test_a_bot_records_a_wake(world: World) -> None:
    w = world
    trigger = await w.human.post("@pb go", channel="lobby", workspace="proj")
    resp = await w.bot._http().post(
        f"{w.board.url}/api/wakes",
        json=RUN | {"trigger_ids": [trigger["id"]]},
        headers={"Authorization": f"Bearer {w.bot.token}"},
    )
    assert resp.status == 201
    wake = await resp.json()
    assert wake["bot"] == "pb" and wake["workspace"] == "proj"
    assert wake["trigger_ids"] == [trigger["id"]]
    for key in ("harness", "session_id", "started_at", "ended_at", "exit_code", "outcome", "cost_usd"):
        assert wake[key] == RUN[key], key
    assert wake["error"] is None and wake["created_at"]

    minimal = await w.bot.record_wake(
        harness="codex", started_at="2026-11-30T05:00:00+01:00", outcome="skipped"
    )
    assert minimal["started_at"] == "2026-11-30T04:00:00Z"  # stored as UTC
    assert minimal["ended_at"] is None and minimal["trigger_ids"] == []

    audit = await w.human.audit(action="wake.record")
    assert [e["actor"] for e in audit["entries"]] == ["pb", "pb"]


async def test_a_wake_carries_its_cache_usage_and_why_its_session_rotated(world: World) -> None:
    rotated = await world.bot.record_wake(
        **RUN, cache_read_tokens=11000, cache_write_tokens=900, rotated="turns"
    )
    assert (rotated["cache_read_tokens"], rotated["cache_write_tokens"], rotated["rotated"]) == (
        11000,
        900,
        "turns",
    )
    assert [w["rotated"] for w in (await world.human.wakes(bot="pb"))["wakes"]] == ["turns"]
    plain = await world.bot.record_wake(**RUN)
    assert plain["rotated"] is None and plain["cache_read_tokens"] is None  # a harness that does not say
    await refused(world.bot.record_wake(**RUN, rotated="sideways"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(
        world.bot.record_wake(**RUN, cache_read_tokens=-1), "INVALID_ARGUMENT", unchanged=world.board
    )


async def test_only_a_bot_records_wakes(world: World) -> None:
    before = snapshot(world.board.db_path)
    exc = await refused(world.human.record_wake(**RUN), "FORBIDDEN")
    assert (exc.status, exc.code) == (403, "FORBIDDEN")
    await refused(world.anon.record_wake(**RUN), "UNAUTHENTICATED")
    assert snapshot(world.board.db_path) == before


async def test_a_wake_names_only_messages_its_bot_may_read(world: World) -> None:
    """A trigger of another workspace is NOT_FOUND exactly as an absent one, and nothing is kept."""
    w = world
    mine = await w.human.post("@pb go", channel="lobby", workspace="proj")
    foreign = await w.human.post("@ob go", channel="lobby", workspace="other")
    absent = foreign["id"] + 1000
    before = snapshot(w.board.db_path)
    answers = []
    for trigger in (foreign["id"], absent):
        exc = await refused(w.bot.record_wake(**RUN | {"trigger_ids": [mine["id"], trigger]}), "NOT_FOUND")
        answers.append((exc.status, exc.code, exc.message.replace(str(trigger), "<id>"), exc.details))
    assert answers[0] == answers[1] and answers[0][:2] == (404, "NOT_FOUND")
    assert snapshot(w.board.db_path) == before
    assert (await w.bot.wakes())["wakes"] == []
    # its own workspace's messages are fine; an admin bot may name any workspace's
    assert (await w.bot.record_wake(**RUN | {"trigger_ids": [mine["id"]]}))["trigger_ids"] == [mine["id"]]
    assert (await w.admin_bot.record_wake(**RUN | {"trigger_ids": [foreign["id"]]}))["trigger_ids"] == [
        foreign["id"]
    ]


@pytest.mark.parametrize(
    "change",
    [
        {"started_at": "yesterday"},
        {"started_at": "2026-13-40T00:00:00Z"},
        {"ended_at": "soon"},
        {"ended_at": "2026-11-30T03:59:59Z"},  # before it started
        {"outcome": "great"},
        {"harness": "has spaces"},
        {"harness": None},
        {"exit_code": 300},
        {"cost_usd": -1},
        {"input_tokens": -5},
        {"trigger_ids": [0]},
        {"trigger_ids": "1,2"},
        {"colour": "blue"},
    ],
)
async def test_wake_records_are_validated(world: World, change: dict[str, Any]) -> None:
    body = {k: v for k, v in (RUN | change).items() if v is not None}
    before = snapshot(world.board.db_path)
    exc = await refused(world.bot.request("POST", "/api/wakes", json=body), "INVALID_ARGUMENT")
    assert exc.code == "INVALID_ARGUMENT", change
    assert snapshot(world.board.db_path) == before


async def test_wakes_are_listed_within_scope(world: World) -> None:
    w = world
    mine = [(await w.bot.record_wake(**RUN))["id"] for _ in range(2)]
    peer = (await w.peer.record_wake(**RUN | {"harness": "codex"}))["id"]
    foreign = (await w.other.record_wake(**RUN))["id"]

    def ids(page: dict[str, Any]) -> list[int]:
        return [x["id"] for x in page["wakes"]]

    assert ids(await w.bot.wakes()) == [*mine, peer]
    assert ids(await w.peer.wakes(bot="pb")) == mine
    assert ids(await w.bot.wakes(bot="ob")) == []
    assert ids(await w.other.wakes()) == [foreign]
    assert ids(await w.human.wakes()) == [*mine, peer, foreign]
    assert ids(await w.human.wakes(bot="ob")) == [foreign]
    assert ids(await w.human.wakes(workspace="proj")) == [*mine, peer]
    await refused(w.bot.wakes(workspace="other"), "NOT_FOUND")

    first = await w.human.wakes(limit=2)
    assert ids(first) == mine and first["has_more"] is True
    rest = await w.human.wakes(since=first["next_since"])
    assert ids(rest) == [peer, foreign] and rest["has_more"] is False


async def test_an_empty_inboxs_cursor_never_skips_a_message(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mention committed after an empty wait gave up stays above the answer's cursor."""
    w = world
    ctx = w.board.ctx
    alice = await auth.authenticate(ctx, w.human.token)
    late: list[int] = []
    real_poll = longpoll.poll

    async def poll_then_post(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        items = await real_poll(*args, **kwargs)
        request = posting.PostMessage(body="@pb just too late", channel="lobby", workspace="proj")
        late.append((await posting.post(ctx, alice, request))["id"])
        return items

    since = (await w.bot.me())["cursor"]
    monkeypatch.setattr(messages, "poll", poll_then_post)
    page = await w.bot.inbox(since=since, wait=1)
    monkeypatch.undo()
    assert page["messages"] == []
    again = await w.bot.inbox(since=page["cursor"])
    assert [m["id"] for m in again["messages"]] == late
