"""Claims end to end: every transition, every refusal, and where the claim shows.

A thread is open, claimed (one holder) or done. Each transition appends an
event message to the thread and a row to the claim's history; refusals leave
the database as it was.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from board.client import BoardAPIError, BoardClient
from board.server.clock import ManualClock, iso, parse_time
from tests.support.boardtest import World, db_rows, snapshot
from tests.support.refusals import refused


async def _thread(world: World, body: str = "fix the flaky build") -> int:
    root = await world.human.post(body, channel="lobby", workspace="proj")
    return int(root["id"])


def _shape(exc: BoardAPIError) -> tuple[int, str, str, dict[str, Any]]:
    return exc.status, exc.code, exc.message, exc.details


async def _events(client: BoardClient, thread_id: int) -> list[str]:
    thread = await client.thread(thread_id)
    return [m["body"] for m in thread["messages"] if m["kind"] == "event"]


async def _history(client: BoardClient, thread_id: int) -> list[tuple[str, str | None, str | None, str]]:
    thread = await client.thread(thread_id)
    return [(h["action"], h["actor"], h["holder"], h["note"]) for h in thread["claim_history"]]


async def _inbox(client: BoardClient) -> dict[int, dict[str, Any]]:
    return {m["id"]: m for m in (await client.inbox(limit=500))["messages"]}


def _later(moment: str, minutes: float) -> str:
    return iso(parse_time(moment) + timedelta(minutes=minutes))


# -- claim and renew ---------------------------------------------------------------------


async def test_claim_then_renew_by_the_holder(clocked_world: World, clock: ManualClock) -> None:
    w = clocked_world
    tid = await _thread(w)
    first = await w.bot.request("POST", f"/api/threads/{tid}/claim", json={"note": "on it"})
    assert first["state"] == "claimed" and first["holder"] == "pb" and first["note"] == "on it"
    assert first["lease_until"] == _later(first["claimed_at"], 60)

    clock.advance(600)
    # The holder claiming again renews: 200, a fresh lease from now, counted as progress.
    resp = await w.bot._http().post(
        f"{w.board.url}/api/threads/{tid}/claim",
        json={"lease_minutes": 30},
        headers={"Authorization": f"Bearer {w.bot.token}"},
    )
    assert resp.status == 200
    renewed = await resp.json()
    assert renewed["holder"] == "pb" and renewed["state"] == "claimed"
    assert renewed["claimed_at"] == first["claimed_at"]
    assert renewed["progress_at"] == w.board.ctx.now()
    assert renewed["lease_until"] == _later(w.board.ctx.now(), 30)

    # One claim event in the thread; the renewal is in the history only.
    assert await _events(w.human, tid) == ["claimed by pb: on it"]
    assert [h[0] for h in await _history(w.human, tid)] == ["claim", "renew"]


async def test_claim_answers_201_and_a_second_bot_gets_claimed(world: World) -> None:
    tid = await _thread(world)
    resp = await world.bot._http().post(
        f"{world.board.url}/api/threads/{tid}/claim",
        json={},
        headers={"Authorization": f"Bearer {world.bot.token}"},
    )
    assert resp.status == 201
    before = snapshot(world.board.db_path)
    exc = await refused(world.peer.claim(tid), "CLAIMED")
    assert (exc.status, exc.code, exc.details["holder"]) == (409, "CLAIMED", "pb")
    assert exc.details["claim"]["holder"] == "pb"
    assert "pb" in exc.message
    assert snapshot(world.board.db_path) == before


async def test_claim_validates_its_body(world: World) -> None:
    tid = await _thread(world)
    for body in ({"lease_minutes": 0}, {"lease_minutes": 7 * 24 * 60 + 1}, {"holder": "pb"}):
        exc = await refused(
            world.bot.request("POST", f"/api/threads/{tid}/claim", json=body), "INVALID_ARGUMENT"
        )
        assert exc.code == "INVALID_ARGUMENT", body
    assert (await world.bot.thread(tid))["claim"]["state"] == "open"


async def test_claim_retry_with_the_same_request_id_has_no_second_effect(world: World) -> None:
    tid = await _thread(world)
    body = {"note": "once", "request_id": "claim-once-1"}
    first = await world.bot.request("POST", f"/api/threads/{tid}/claim", json=body)
    again = await world.bot.request("POST", f"/api/threads/{tid}/claim", json=body)
    assert again == first
    assert [h[0] for h in await _history(world.human, tid)] == ["claim"]


# -- refusals ------------------------------------------------------------------------------


async def test_release_handoff_done_by_a_non_holder_are_forbidden(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    before = snapshot(world.board.db_path)
    for call in (
        world.peer.release(tid, "mine now"),
        world.peer.handoff(tid, "pb2"),
        world.peer.done(tid, "finished"),
    ):
        exc = await refused(call, "FORBIDDEN")
        assert (exc.status, exc.code) == (403, "FORBIDDEN")
        assert "pb" in exc.message
    assert snapshot(world.board.db_path) == before
    assert (await world.peer.thread(tid))["claim"]["holder"] == "pb"


async def test_release_of_an_open_thread_is_refused(world: World) -> None:
    tid = await _thread(world)
    before = snapshot(world.board.db_path)
    for call in (world.bot.release(tid), world.bot.handoff(tid, "pb2"), world.bot.done(tid)):
        exc = await refused(call, ("INVALID_ARGUMENT", "FORBIDDEN"))
        assert exc.code in ("INVALID_ARGUMENT", "FORBIDDEN")
    assert snapshot(world.board.db_path) == before


async def test_a_thread_of_another_workspace_looks_like_no_thread(world: World) -> None:
    foreign = await world.other.post("their work", channel="lobby")
    await world.other.claim(foreign["id"])
    tid = await _thread(world)
    await world.bot.claim(tid)
    before = snapshot(world.board.db_path)
    missing = 10**9
    for verb in ("claim", "release", "handoff", "done"):
        body = {"to": "pb2"} if verb == "handoff" else {}
        hidden = await refused(
            world.bot.request("POST", f"/api/threads/{foreign['id']}/{verb}", json=body), "NOT_FOUND"
        )
        absent = await refused(
            world.bot.request("POST", f"/api/threads/{missing}/{verb}", json=body), "NOT_FOUND"
        )
        assert hidden.code == "NOT_FOUND" and hidden.status == 404
        assert _shape(hidden) == _shape(absent), verb
    # ... and the other workspace cannot touch ours either.
    exc = await refused(world.other.release(tid), "NOT_FOUND")
    assert exc.code == "NOT_FOUND"
    assert snapshot(world.board.db_path) == before
    assert (await world.other.thread(foreign["id"]))["claim"]["holder"] == "ob"


async def test_handoff_to_a_bot_of_another_workspace_looks_like_no_bot(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    before = snapshot(world.board.db_path)
    foreign = await refused(world.bot.handoff(tid, "ob", "please"), "NOT_FOUND")
    absent = await refused(world.bot.handoff(tid, "nobody-here", "please"), "NOT_FOUND")
    system = await refused(world.bot.handoff(tid, "board", "please"), "NOT_FOUND")
    assert foreign.code == "NOT_FOUND"
    assert _shape(foreign) == _shape(absent) == _shape(system)
    assert snapshot(world.board.db_path) == before


# -- transitions -----------------------------------------------------------------------------


async def test_handoff_lands_in_the_targets_inbox_and_moves_the_claim(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid, note="started")
    moved = await world.bot.handoff(tid, "pb2", "tests pass, needs docs")
    assert moved["holder"] == "pb2" and moved["state"] == "claimed"

    inbox = await _inbox(world.peer)
    handoffs = [m for m in inbox.values() if m.get("reason") == "handoff"]
    assert len(handoffs) == 1
    assert handoffs[0]["thread_id"] == tid
    assert "handed to @pb2" in handoffs[0]["body"] and handoffs[0]["body"].endswith(
        ": tests pass, needs docs"
    )

    # The old holder has let go; the new one holds.
    await refused(world.bot.release(tid), "FORBIDDEN")
    released = await world.peer.release(tid, "not mine after all")
    assert released["state"] == "open" and released["holder"] is None


async def test_done_twice_answers_the_first_outcome_with_no_second_event(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    first = await world.bot.done(tid, "merged in #12")
    assert first["state"] == "done" and first["holder"] == "pb" and first["note"] == "merged in #12"
    before = snapshot(world.board.db_path)
    again = await world.bot.done(tid, "merged again?")
    assert again == first
    assert snapshot(world.board.db_path) == before
    assert [h[0] for h in await _history(world.human, tid)] == ["claim", "done"]


async def test_a_human_releases_hands_off_and_closes_any_claim(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    released = await world.human.release(tid, "wrong bot")
    assert released["state"] == "open"

    await world.bot.claim(tid)
    moved = await world.human.handoff(tid, "pb2", "you know this code")
    assert moved["holder"] == "pb2"

    closed = await world.human.done(tid, "not needed any more")
    assert closed["state"] == "done" and closed["holder"] == "pb2"

    assert await _history(world.human, tid) == [
        ("claim", "pb", "pb", ""),
        ("release", "alice", None, "wrong bot"),
        ("claim", "pb", "pb", ""),
        ("handoff", "alice", "pb2", "you know this code"),
        ("done", "alice", "pb2", "not needed any more"),
    ]


async def test_a_human_may_close_an_open_thread_but_a_bot_must_claim_first(world: World) -> None:
    tid = await _thread(world)
    exc = await refused(world.bot.done(tid, "done?"), "FORBIDDEN")
    assert exc.code == "FORBIDDEN"
    closed = await world.human.done(tid, "won't fix")
    assert closed["state"] == "done"


async def test_each_transition_posts_an_event_and_a_history_row(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid, note="looking")
    await world.bot.handoff(tid, "pb2", "over to you")
    await world.peer.done(tid, "fixed in 3f2a")

    thread = await world.human.thread(tid)
    events = [m for m in thread["messages"] if m["kind"] == "event"]
    assert [e["body"] for e in events] == [
        "claimed by pb: looking",
        "handed to @pb2 by pb: over to you",
        "done by pb2: fixed in 3f2a",
    ]
    assert all(e["author"] == "board" and e["reply_to"] == tid for e in events)
    assert [e["meta"]["claim"] for e in events] == ["claim", "handoff", "done"]
    assert [e["meta"]["by"] for e in events] == ["pb", "pb", "pb2"]
    assert await _history(world.human, tid) == [
        ("claim", "pb", "pb", "looking"),
        ("handoff", "pb", "pb2", "over to you"),
        ("done", "pb2", "pb2", "fixed in 3f2a"),
    ]
    # Events are not replies: the reply count is the people's.
    assert thread["messages"][0]["replies"]["count"] == 0
    # Every transition is audited.
    audit = await world.human.audit(workspace="proj", limit=100)
    actions = [e["action"] for e in audit["entries"] if e["target"] == str(tid)]
    assert actions == ["claim.claim", "claim.handoff", "claim.done"]


async def test_the_actor_does_not_find_its_own_transition_in_its_inbox(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid, note="mine")
    assert not [m for m in (await _inbox(world.bot)).values() if m["thread_id"] == tid]
    # The thread's author hears that someone took it.
    author_inbox = await _inbox(world.human)
    assert [m["body"] for m in author_inbox.values() if m["thread_id"] == tid] == ["claimed by pb: mine"]


async def test_a_holder_hears_when_someone_else_ends_its_claim(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    await world.human.release(tid, "priorities changed")
    await world.peer.claim(tid)
    await world.human.handoff(tid, "pb", "back to you")
    await world.human.done(tid, "shipped")
    pb = [m["body"] for m in (await _inbox(world.bot)).values() if m["thread_id"] == tid]
    pb2 = [m["body"] for m in (await _inbox(world.peer)).values() if m["thread_id"] == tid]
    assert "released by alice: priorities changed" in pb
    assert "handed to @pb by alice: back to you" in pb2
    assert "done by alice: shipped" in pb


# -- where the claim shows -------------------------------------------------------------------


async def test_claim_state_shows_on_roots_threads_me_and_roster(world: World) -> None:
    held = await _thread(world, "held thread")
    free = await _thread(world, "free thread")
    await world.bot.claim(held, note="working")

    listing = await world.peer.messages(channel="lobby", roots=True)
    by_id = {m["id"]: m for m in listing["messages"]}
    assert by_id[held]["claim"]["state"] == "claimed" and by_id[held]["claim"]["holder"] == "pb"
    assert by_id[free]["claim"] == {"state": "open", "holder": None}

    compact = await world.peer.messages(channel="lobby", roots=True, view="compact")
    rows = {m["id"]: m for m in compact["messages"]}
    assert "body" not in rows[held]
    assert rows[held]["claim"]["holder"] == "pb" and rows[free]["claim"]["state"] == "open"

    human_list = await world.human.messages(workspace="proj", channel="lobby", roots=True)
    assert {m["id"]: m["claim"]["state"] for m in human_list["messages"]}[held] == "claimed"

    thread = await world.peer.thread(held)
    assert thread["thread_id"] == held
    assert thread["claim"]["holder"] == "pb" and thread["claim"]["note"] == "working"
    assert thread["messages"][0]["claim"]["holder"] == "pb"

    me = await world.bot.me()
    assert [c["thread_id"] for c in me["claims"]] == [held]
    assert (await world.peer.me())["claims"] == []

    roster = {a["handle"]: a for a in (await world.peer.agents())["agents"]}
    assert [c["thread_id"] for c in roster["pb"]["claims"]] == [held]
    assert roster["pb2"]["claims"] == []
    assert [c["thread_id"] for c in (await world.human.agent("pb"))["claims"]] == [held]

    # Once done, it is no longer an active claim.
    await world.bot.done(held, "ok")
    assert (await world.bot.me())["claims"] == []
    assert (await world.peer.thread(held))["claim"]["state"] == "done"


async def test_claims_list_filters_and_scope(world: World) -> None:
    a = await _thread(world, "a")
    b = await _thread(world, "b")
    c = await _thread(world, "c")
    await world.bot.claim(a)
    await world.peer.claim(b)
    await world.peer.claim(c)
    await world.peer.done(c, "ok")
    foreign = await world.other.post("theirs", channel="lobby")
    await world.other.claim(foreign["id"])

    def ids(page: dict[str, Any]) -> list[int]:
        return [x["thread_id"] for x in page["claims"]]

    assert ids(await world.bot.claims()) == [a, b, c]
    assert ids(await world.bot.claims(holder="pb2")) == [b, c]
    assert ids(await world.bot.claims(state="claimed")) == [a, b]
    assert ids(await world.bot.claims(holder="pb2", state="done")) == [c]
    assert ids(await world.bot.claims(holder="ob")) == []
    assert ids(await world.other.claims()) == [foreign["id"]]
    assert ids(await world.human.claims()) == [a, b, c, foreign["id"]]
    assert ids(await world.human.claims(workspace="other")) == [foreign["id"]]
    await refused(world.bot.claims(workspace="other"), "NOT_FOUND")

    first = await world.human.claims(limit=2)
    assert ids(first) == [a, b] and first["has_more"] is True
    rest = await world.human.claims(limit=2, since=first["next_since"])
    assert ids(rest) == [c, foreign["id"]] and rest["has_more"] is False


# -- leases ------------------------------------------------------------------------------


async def test_another_bot_may_claim_once_the_lease_has_passed(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    tid = await _thread(w)
    claim = await w.bot.claim(tid, lease_minutes=10)
    clock.advance(9 * 60)
    await refused(w.peer.claim(tid), "CLAIMED")
    clock.advance(61)
    assert w.board.ctx.now() > claim["lease_until"]
    taken = await w.peer.claim(tid, note="picking this up")
    assert taken["holder"] == "pb2" and taken["state"] == "claimed"
    assert [h[:3] for h in await _history(w.human, tid)] == [
        ("claim", "pb", "pb"),
        ("claim", "pb2", "pb2"),
    ]
    # The bot whose lease ran out hears who took the thread.
    assert "claimed by pb2: picking this up" in [m["body"] for m in (await _inbox(w.bot)).values()]
    await refused(w.bot.release(tid), "FORBIDDEN")


async def test_the_holders_post_renews_the_lease_and_a_non_holders_does_not(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    tid = await _thread(w)
    claim = await w.bot.claim(tid, lease_minutes=20)

    clock.advance(300)
    await w.peer.post("have you tried turning it off and on", reply_to=tid)
    after_peer = (await w.human.thread(tid))["claim"]
    assert after_peer["progress_at"] == claim["progress_at"]
    assert after_peer["lease_until"] == claim["lease_until"]

    clock.advance(300)
    await w.bot.post("found it: a race in the cache", reply_to=tid)
    after_holder = (await w.human.thread(tid))["claim"]
    now = w.board.ctx.now()
    assert after_holder["progress_at"] == now
    assert after_holder["lease_until"] == _later(now, 20)

    # Renewed: past the first lease the thread is still the holder's.
    clock.advance(15 * 60)
    await refused(w.peer.claim(tid), "CLAIMED")


async def test_replies_in_a_claimed_thread_reach_the_holder(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    reply = await world.peer.post("the logs are in /tmp/ci", reply_to=tid)
    human_reply = await world.human.post("any news?", reply_to=tid)
    inbox = await _inbox(world.bot)
    assert inbox[reply["id"]]["reason"] == "thread"
    assert inbox[human_reply["id"]]["reason"] == "thread"
    # The holder's own reply is not in its inbox, but reaches the others in the thread.
    own = await world.bot.post("on it", reply_to=tid)
    assert own["id"] not in await _inbox(world.bot)
    assert own["id"] in await _inbox(world.peer)
    assert own["id"] in await _inbox(world.human)


async def test_a_reply_after_done_reopens_nothing_but_reaches_the_holder(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    await world.bot.done(tid, "fixed")
    reply = await world.peer.post("still broken on arm64", reply_to=tid)
    assert (await world.human.thread(tid))["claim"]["state"] == "done"
    assert (await _inbox(world.bot))[reply["id"]]["reason"] == "thread"
    rows = db_rows(world.board.db_path, "SELECT state FROM claims WHERE thread_id = ?", (tid,))
    assert rows == [("done",)]


async def test_claiming_a_done_thread_reopens_it(world: World) -> None:
    tid = await _thread(world)
    await world.bot.claim(tid)
    await world.bot.done(tid, "fixed")
    again = await world.peer.claim(tid, note="regression")
    assert again["state"] == "claimed" and again["holder"] == "pb2"
    assert (await _events(world.human, tid))[-1] == "reopened by pb2: regression"


async def test_a_reply_id_names_its_thread_and_an_admin_bot_is_not_handed_it(world: World) -> None:
    """Handoff stays in the workspace: an admin bot is no more a target than an absent handle.

    An admin bot may claim another workspace's thread itself; it is not handed one there.
    """
    root = await world.human.post("work", channel="lobby", workspace="proj")
    reply = await world.peer.post("a reply", reply_to=root["id"])
    claim = await world.bot.claim(reply["id"])
    assert claim["thread_id"] == root["id"] and claim["holder"] == "pb"
    before = snapshot(world.board.db_path)
    to_admin = await refused(world.bot.handoff(root["id"], "ab", "admin, please take it"), "NOT_FOUND")
    to_nobody = await refused(
        world.bot.handoff(root["id"], "nobody-here", "admin, please take it"), "NOT_FOUND"
    )
    assert _shape(to_admin) == _shape(to_nobody) and to_admin.code == "NOT_FOUND"
    assert snapshot(world.board.db_path) == before
    assert (await world.human.thread(root["id"]))["claim"]["holder"] == "pb"
    handed = await world.bot.handoff(root["id"], "pb2", "yours")
    assert handed["holder"] == "pb2"
    own = await _thread(world, "another task")
    assert (await world.admin_bot.claim(own))["holder"] == "ab"
    # In the admin workspace, admin bots are the workspace's own bots: a handoff reaches them.
    task = await world.human.post("seed it", channel="lobby", workspace="admin")
    await world.human.claim(task["id"])
    assert (await world.human.handoff(task["id"], "ab", "yours"))["holder"] == "ab"
