"""The inbox on the live stream: every tab (with a workspace or none) hears the viewer's
unread count, which of its highlighted messages were read, and what to notify of."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from board.server.api.keys import CONTEXT
from board.server.clock import iso
from board.server.hub import Event
from board.server.principal import Principal
from board.server.services.inbox_watch import Watch
from board.server.services.live import Arrival
from board.server.store import identity as identity_store
from tests.support.boardtest import World
from tests.support.fleettest import keeper_with_bots
from tests.support.pages_support import Browser, sign_in

HOPS = 4


async def _frames(resp: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    """The next ``count`` events of a stream (message and inbox alike), as {event, data}."""
    found: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    while len(found) < count:
        line = (await resp.content.readline()).decode().rstrip("\n")
        if line.startswith("event: "):
            event["event"] = line[7:]
        elif line.startswith("data: "):
            event["data"] = json.loads(line[6:])
        elif line == "" and event:
            found.append(event)
            event = {}
    return found


async def _next_inbox(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    while True:
        [frame] = await asyncio.wait_for(_frames(resp, 1), 10)
        if frame["event"] == "inbox":
            data: dict[str, Any] = frame["data"]
            return data


async def _open(alice: Browser, query: str = "") -> tuple[aiohttp.ClientResponse, dict[str, Any]]:
    """A stream and its first frame: the viewer's inbox as it is."""
    resp = await alice.http.get(alice.url + "/events?" + query)
    assert resp.status == 200
    [first] = await asyncio.wait_for(_frames(resp, 1), 10)
    assert first["event"] == "inbox"
    return resp, first["data"]


async def test_a_mention_anywhere_counts_highlights_and_notifies_and_reading_clears(world: World) -> None:
    alice = await sign_in(world.board)
    resp, first = await _open(alice)  # a page with no workspace: its inbox alone
    assert first == {"unread": 0, "highlight": [], "read": [], "notify": []}
    posted = await world.other.post("@alice the other project needs you", channel="lobby")
    told = await _next_inbox(resp)
    assert told["unread"] == 1 and told["highlight"] == [posted["id"]] and told["read"] == []
    assert told["notify"] == [
        {
            "kind": "mention",
            "title": "ob mentioned you in #lobby: @alice the other project needs you",
            "body": "@alice the other project needs you",
            "url": f"/t/{posted['id']}#m{posted['id']}",
            "tag": f"m{posted['id']}",
        }
    ]
    await world.human.receipts([posted["id"]], "seen")  # another tab, or a client: the same receipts
    assert await _next_inbox(resp) == {"unread": 0, "highlight": [], "read": [posted["id"]], "notify": []}
    resp.close()
    await alice.close()


async def test_a_replys_notification_names_its_thread_by_the_roots_first_line(world: World) -> None:
    """As the mailed notice does: two mentions in #lobby otherwise read the same in the tray."""
    root = await world.bot.post("## Release *2.1* checklist\n\nSteps below.", channel="lobby")
    alice = await sign_in(world.board)
    resp, _ = await _open(alice)
    await world.peer.post("@alice the tag is pushed", reply_to=root["id"])
    told = await _next_inbox(resp)
    assert [n["title"] for n in told["notify"]] == ["pb2 mentioned you in #lobby: Release 2.1 checklist"]
    resp.close()
    await alice.close()


async def test_a_workspace_stream_places_its_messages_and_counts_every_workspace(world: World) -> None:
    alice = await sign_in(world.board)
    resp, _ = await _open(alice, "workspace=proj")
    elsewhere = await world.other.post("@alice over here", channel="lobby")
    [frame] = await asyncio.wait_for(_frames(resp, 1), 10)
    assert frame["event"] == "inbox" and frame["data"]["highlight"] == [elsewhere["id"]]  # no message frame
    here = await world.bot.post("@alice and here", channel="lobby")
    message, inbox = await asyncio.wait_for(_frames(resp, 2), 10)
    assert message["event"] == "message" and message["data"]["message"]["id"] == here["id"]
    assert inbox["event"] == "inbox" and inbox["data"]["unread"] == 2
    plain = await world.bot.post("for nobody in particular", channel="lobby")
    [frame] = await asyncio.wait_for(_frames(resp, 1), 10)  # a message, and no inbox frame after it
    assert frame["event"] == "message" and frame["data"]["message"]["id"] == plain["id"]
    resp.close()
    await alice.close()


async def test_the_page_names_its_highlighted_ids_and_hears_when_they_are_read(world: World) -> None:
    root = await world.bot.post("@alice first", channel="lobby")
    reply = await world.peer.post("@alice second", reply_to=root["id"])
    other = await world.bot.post("@alice elsewhere", channel="builds")
    alice = await sign_in(world.board)
    resp, first = await _open(alice, f"workspace=proj&mine={root['id']},{reply['id']},{other['id']}")
    assert first["unread"] == 3 and first["read"] == []
    await world.human.inbox_mark("seen", thread_id=root["id"])
    told = await _next_inbox(resp)
    assert told["unread"] == 1 and sorted(told["read"]) == [root["id"], reply["id"]]
    await world.human.inbox_mark("done", all=True)
    assert (await _next_inbox(resp))["read"] == [other["id"]]
    resp.close()
    await alice.close()


async def test_a_kind_turned_off_is_not_notified_but_still_counted(world: World) -> None:
    await world.human.request_object("PUT", "/api/notifications", json={"dm": False})
    alice = await sign_in(world.board)
    resp, _ = await _open(alice)
    dm = (await world.bot.open_conversation(["alice"], topic="private"))["conversation"]
    posted = await world.bot.post("just between us", conversation=dm["id"])
    told = await _next_inbox(resp)
    assert told["unread"] == 1 and told["highlight"] == [posted["id"]] and told["notify"] == []
    await world.human.request_object("PUT", "/api/notifications", json={"dm": True})
    again = await world.bot.post("and once more", conversation=dm["id"])
    told = await _next_inbox(resp)
    assert [(n["kind"], n["title"]) for n in told["notify"]] == [
        ("dm", "pb wrote to you in a conversation: and once more")
    ]
    assert told["highlight"] == [again["id"]]
    resp.close()
    await alice.close()


async def test_a_budget_hold_is_notified_and_a_bots_tags_cannot_pass_for_one(world: World) -> None:
    alice = await sign_in(world.board)
    resp, _ = await _open(alice)
    await world.bot.post(
        "@alice held?", channel="lobby", workspace="proj", tags=["budget-held", "loop-paused"]
    )
    told = await _next_inbox(resp)
    assert [(n["kind"], n["title"]) for n in told["notify"]] == [
        ("mention", "pb mentioned you in #lobby: @alice held?")
    ]

    await world.human.set_budget("pb", budget_wakes=1)
    await world.bot.record_wake(harness="claude", started_at=iso(datetime.now(UTC)), outcome="ok")
    await world.human.post("@pb one more", channel="lobby", workspace="proj")
    assert "held" in await world.bot.wake(since=0, wait=0)  # the feed tells the hold: one notice
    notes: list[dict[str, Any]] = []
    while not notes:
        notes = (await _next_inbox(resp))["notify"]
    # It names the bot and opens the page where a human lifts the hold.
    assert [(n["kind"], n["title"], n["url"]) for n in notes] == [
        ("held", "pb is held: a daily budget is spent", "/a/pb")
    ]
    resp.close()
    await alice.close()


async def test_a_held_loop_a_routine_to_approve_and_a_crash_are_notified(world: World) -> None:
    await world.human.patch_workspace("proj", loop_hops=HOPS)
    alice = await sign_in(world.board)
    resp, _ = await _open(alice)
    root = await world.human.post("@pb sort it out with @pb2", channel="lobby", workspace="proj")
    for turn in range(HOPS):
        speaker, other = (world.bot, "pb2") if turn % 2 == 0 else (world.peer, "pb")
        await speaker.post(f"@{other} over to you ({turn})", reply_to=root["id"])
    notes: list[dict[str, Any]] = []
    while not notes:
        notes = (await _next_inbox(resp))["notify"]
    assert [(n["kind"], n["title"]) for n in notes] == [("held", "A bot is held in #lobby")]

    fields = {"workspace": "proj", "schedule": "0 2 * * *", "bot": "pb", "prompt": "tidy up"}
    await world.bot.propose_routine("tidy", **fields)
    told = await _next_inbox(resp)
    assert [(n["kind"], n["url"]) for n in told["notify"]] == [("routine", "/routines#pending-tidy-1")]

    box = await keeper_with_bots(world, "box1", "fb1")
    report = {"handle": "fb1", "state": "running", "pid": 4242, "restarts": 0}
    await box.client.fleet_report({"bots": [report]})
    await box.client.fleet_report({"bots": [report | {"state": "crashed"}]})
    notes = []
    while not notes:
        notes = (await _next_inbox(resp))["notify"]
    assert [(n["kind"], n["title"]) for n in notes] == [("crashed", "Bot fb1 crashed")]
    await box.client.fleet_report({"bots": [report | {"state": "crashed", "restarts": 1}]})
    await world.bot.post("@alice after the crash", channel="lobby")
    later = await _next_inbox(resp)  # still crashed: not told again
    assert [n["kind"] for n in later["notify"]] == ["mention"]
    resp.close()
    await alice.close()


async def test_the_board_and_thread_pages_name_the_unread_mentions_and_dms_they_show(world: World) -> None:
    root = await world.bot.post("@alice have a look", channel="lobby")
    reply = await world.human.post("on it", reply_to=root["id"])
    answer = await world.bot.post("thanks, no rush", reply_to=root["id"])  # for alice: a thread reply
    not_hers = await world.bot.post("@pb2 yours", reply_to=root["id"])
    alice = await sign_in(world.board)
    for page in (f"/t/{root['id']}", f"/c/lobby?workspace=proj&thread={root['id']}"):
        status, html = await alice.get(page)
        assert status == 200 and f'data-for-me="{root["id"]}"' in html, page
        assert all(f'id="m{m["id"]}"' in html for m in (reply, answer, not_hers))
    await world.human.inbox_mark("seen", thread_id=root["id"])
    status, html = await alice.get(f"/t/{root['id']}")
    assert status == 200 and "data-for-me" not in html
    await alice.close()


async def test_a_stream_naming_bad_ids_is_refused_and_holds_nothing(world: World) -> None:
    alice = await sign_in(world.board)
    for query in ("mine=abc", "mine=1,,2", "mine=" + ",".join(["1"] * 501)):
        resp = await alice.http.get(alice.url + "/events?" + query)
        assert resp.status == 422, query
        resp.close()
    assert world.board.ctx.hub.waiting == 0
    await alice.close()


async def test_a_batchs_replies_read_their_threads_roots_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tab named each notified reply's thread with a read of its own, on every open tab: a
    batch of replies reads their roots in one."""
    ctx = world.board.app[CONTEXT]
    me = await ctx.db.read(lambda conn: identity_store.agent_by_handle(conn, "alice"))
    assert me is not None
    first = await world.bot.post("First thread", channel="lobby")
    second = await world.bot.post("## Second *thread*", channel="lobby")
    replies = [
        await world.peer.post(f"@alice look {i}", reply_to=int(root["id"]))
        for i, root in enumerate([first, second, first])
    ]
    watch = Watch(ctx, Principal(int(me["id"]), "alice", "human"), [])
    watch.on = {"mention": True}
    reads: list[object] = []
    read = ctx.db.read

    async def counted(fn: Any) -> Any:
        reads.append(fn)
        return await read(fn)

    monkeypatch.setattr(ctx.db, "read", counted)
    events = [Event(r, 0, None, None, int(r["thread_id"])) for r in [first, *replies]]
    frame = await watch.update([Arrival(e, "mention") for e in events], set())
    assert frame is not None
    assert [n["title"] for n in frame["notify"]] == [
        "pb mentioned you in #lobby: First thread",
        *(
            f"pb2 mentioned you in #lobby: {name}"
            for name in ("First thread", "Second thread", "First thread")
        ),
    ]
    assert len(reads) == 2  # the roots, and the unread count
