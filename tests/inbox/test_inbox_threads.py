"""The inbox by thread: groups with counts, newest first and paged; marking a thread or all
read or done; each caller reaches only its own inbox, and a refusal changes nothing."""

from __future__ import annotations

from typing import Any

from tests.support.boardtest import World, db_rows
from tests.support.refusals import refused


async def _two_threads(w: World) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A thread with two messages for alice, then a newer thread with one."""
    first = await w.bot.post("@alice the deploy plan", channel="lobby")
    reply = await w.peer.post("@alice step two of it", reply_to=first["id"])
    second = await w.bot.post("@alice a question on the docs", channel="builds")
    return first, reply, second


async def test_groups_by_thread_newest_first_with_counts(world: World) -> None:
    first, reply, second = await _two_threads(world)
    await world.bot.post("nobody's business", channel="lobby")  # in no inbox of alice's
    page = await world.human.inbox_threads()
    assert [g["thread_id"] for g in page["groups"]] == [second["id"], first["id"]]
    newer, older = page["groups"]
    assert (older["messages"], older["unread"], older["latest_id"]) == (2, 2, reply["id"])
    assert older["root"]["preview"] == "@alice the deploy plan" and older["latest"]["id"] == reply["id"]
    assert (newer["messages"], newer["unread"], newer["workspace"]) == (1, 1, "proj")
    assert page["unread"] == 3 and page["has_more"] is False


async def test_groups_are_paged_by_their_newest_message(world: World) -> None:
    first, _, second = await _two_threads(world)
    one = await world.human.inbox_threads(limit=1)
    assert [g["thread_id"] for g in one["groups"]] == [second["id"]]
    assert one["has_more"] is True and one["next_before"] == second["id"]
    rest = await world.human.inbox_threads(limit=1, before=one["next_before"])
    assert [g["thread_id"] for g in rest["groups"]] == [first["id"]] and rest["has_more"] is False


async def test_marking_a_thread_read_keeps_it_and_done_removes_it(world: World) -> None:
    first, reply, second = await _two_threads(world)
    answer = await world.human.inbox_mark("seen", thread_id=reply["id"])  # any message names its thread
    assert answer == {"state": "seen", "thread_id": first["id"], "marked": 2, "unread": 1}
    groups = {g["thread_id"]: g for g in (await world.human.inbox_threads())["groups"]}
    assert groups[first["id"]]["unread"] == 0 and groups[second["id"]]["unread"] == 1
    done = await world.human.inbox_mark("done", thread_id=first["id"])
    assert done["marked"] == 2 and done["unread"] == 1
    page = await world.human.inbox_threads()
    assert [g["thread_id"] for g in page["groups"]] == [second["id"]]
    receipts = {r["handle"]: r for r in (await world.human.message(first["id"]))["receipts"]}
    assert receipts["alice"]["seen_at"] and receipts["alice"]["done_at"]


async def test_mark_all_read_marks_every_thread(world: World) -> None:
    await _two_threads(world)
    answer = await world.human.inbox_mark("seen", all=True)
    assert answer["marked"] == 3 and answer["unread"] == 0 and answer["thread_id"] is None
    page = await world.human.inbox_threads()
    assert [g["unread"] for g in page["groups"]] == [0, 0] and page["unread"] == 0
    assert (await world.human.inbox_mark("seen", all=True))["marked"] == 0  # again: nothing new


async def test_each_caller_sees_and_marks_only_its_own_inbox(world: World) -> None:
    first, _, _ = await _two_threads(world)
    for_pb = await world.human.post("@pb yours alone", channel="lobby", workspace="proj")
    # pb started the first thread, so pb2's reply is in its inbox too (it takes part).
    pb_groups = (await world.bot.inbox_threads())["groups"]
    assert [(g["thread_id"], g["messages"]) for g in pb_groups] == [(for_pb["id"], 1), (first["id"], 1)]
    assert (await world.other.inbox_threads())["groups"] == []
    assert (await world.bot.inbox_mark("seen", all=True))["marked"] == 2  # pb's all is pb's
    assert (await world.human.inbox_threads())["unread"] == 3
    assert (await world.human.inbox_mark("seen", all=True))["marked"] == 3
    pb = (await world.bot.inbox_threads())["groups"]
    assert [(g["thread_id"], g["unread"]) for g in pb] == [(for_pb["id"], 0), (first["id"], 0)]
    alice_rows = db_rows(
        world.board.db_path,
        "SELECT count(*) FROM receipts r JOIN agents a ON a.id = r.agent_id WHERE a.handle = 'alice'",
    )
    assert alice_rows == [(3,)]


async def test_marking_is_refused_whole_and_changes_nothing(world: World) -> None:
    first, _, second = await _two_threads(world)
    board = world.board
    # Neither or both of thread_id and all.
    for body in ({"state": "seen"}, {"state": "seen", "thread_id": first["id"], "all": True}):
        await refused(
            world.human.request("POST", "/api/inbox/mark", json=body),
            "INVALID_ARGUMENT",
            message="Name thread_id or all=true",
            unchanged=board,
        )
    await refused(
        world.human.request("POST", "/api/inbox/mark", json={"state": "later", "all": True}),
        "INVALID_ARGUMENT",
        unchanged=board,
    )
    # A thread pb may read (it started it) but has nothing of in its inbox: alice's stays unread.
    await refused(world.bot.inbox_mark("seen", thread_id=second["id"]), "NOT_FOUND", unchanged=board)
    # Another workspace's bot cannot even see the thread.
    await refused(world.other.inbox_mark("done", thread_id=first["id"]), "NOT_FOUND", unchanged=board)
    await refused(world.human.inbox_mark("seen", thread_id=10**9), "NOT_FOUND", unchanged=board)
    await refused(world.anon.inbox_mark("seen", all=True), "UNAUTHENTICATED", unchanged=board)
    assert (await world.human.inbox_threads())["unread"] == 3


async def test_an_archived_workspace_leaves_the_inbox_view(world: World) -> None:
    await world.human.create_workspace("old", "Old")
    old_bot = await world.board.bot("olb", "old")
    await old_bot.post("@alice in a workspace about to close", channel="lobby")
    await _two_threads(world)
    assert (await world.human.inbox_threads())["unread"] == 4
    await world.human.archive_workspace("old")
    page = await world.human.inbox_threads()
    assert page["unread"] == 3 and len(page["groups"]) == 2
    assert (await world.human.inbox_mark("done", all=True))["marked"] == 3  # the archived one stays as it was


async def test_notification_settings_are_a_humans_and_kept_per_kind(world: World) -> None:
    kinds = ("mention", "dm", "held", "crashed", "routine", "run_failed", "review")
    assert await world.human.request_object("GET", "/api/notifications") == dict.fromkeys(kinds, True)
    answer = await world.human.request_object(
        "PUT", "/api/notifications", json={"dm": False, "crashed": False, "review": False}
    )
    assert answer == dict.fromkeys(kinds, True) | {"dm": False, "crashed": False, "review": False}
    again = await world.human.request_object("PUT", "/api/notifications", json={"crashed": True})
    assert again["dm"] is False and again["crashed"] is True
    board = world.board
    await refused(
        world.bot.request("PUT", "/api/notifications", json={"dm": True}),
        "FORBIDDEN",
        message="Browser notifications are a human's",
        unchanged=board,
    )
    await refused(world.bot.request("GET", "/api/notifications"), "FORBIDDEN")
    for body in ({"sms": True}, {"dm": "sometimes"}):
        await refused(
            world.human.request("PUT", "/api/notifications", json=body), "INVALID_ARGUMENT", unchanged=board
        )
    assert (await world.human.request_object("GET", "/api/notifications"))["dm"] is False
