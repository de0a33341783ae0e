"""A bot's record of its git worktree per thread: written by the bot only, in a thread it reads,
strictly checked, shown on the thread's answer and page, and holding delivery while it waits."""

from __future__ import annotations

from typing import Any

import pytest

from board.client import BoardClient
from board.server.clock import ManualClock
from tests.support.boardtest import World, db_execute, db_rows
from tests.support.pages_support import pages_as
from tests.support.refusals import refused

KEPT: dict[str, Any] = {
    "state": "kept",
    "branch": "bot/pb/t1",
    "base": "main",
    "path": "/srv/app.worktrees/pb-t1",
    "ahead": 2,
    "commits": [
        {"sha": "a1b2c3d4", "subject": "Fix the parser"},
        {"sha": "0fedcba", "subject": "Add a test"},
    ],
    "diffstat": (
        " src/parse.py | 4 ++--\n tests/test_parse.py | 9 +++++++++\n"
        " 2 files changed, 11 insertions(+), 2 deletions(-)"
    ),
    "detail": "",
}


async def a_thread(w: World, body: str = "a task for @pb") -> int:
    return int((await w.human.post(body, channel="lobby", workspace="proj"))["id"])


def record_of(thread: dict[str, Any], bot: str) -> dict[str, Any]:
    return next(r for r in thread["worktrees"] if r["bot"] == bot)


async def test_a_bot_records_its_worktree_and_the_thread_shows_each_bots_newest_first(
    clocked_world: World, clock: ManualClock
) -> None:
    w = clocked_world
    thread_id = await a_thread(w)
    assert (await w.human.thread(thread_id))["worktrees"] == []
    live = await w.bot.set_worktree(
        thread_id, state="live", branch="bot/pb/t1", base="main", path=KEPT["path"]
    )
    assert live["thread_id"] == thread_id and live["bot"] == "pb" and live["state"] == "live"
    assert live["commits"] == [] and live["ahead"] == 0
    kept = await w.bot.set_worktree(thread_id, **KEPT)
    assert {k: kept[k] for k in KEPT} == KEPT  # the same row, replaced
    clock.advance(2)
    await w.peer.set_worktree(thread_id, state="waiting", detail="all 4 of @pb2's worktrees are in use")
    records = (await w.human.thread(thread_id))["worktrees"]
    assert [r["bot"] for r in records] == ["pb2", "pb"]
    assert record_of({"worktrees": records}, "pb") == kept
    assert db_rows(w.board.db_path, "SELECT count(*) FROM thread_worktrees")[0][0] == 2
    # A reply's id names its thread: the record is the thread's.
    reply = await w.human.post("more", reply_to=thread_id)
    again = await w.bot.set_worktree(reply["id"], **{**KEPT, "ahead": 3})
    assert again["thread_id"] == thread_id and again["ahead"] == 3


async def test_a_human_is_refused_and_nothing_is_written(world: World) -> None:
    w = world
    thread_id = await a_thread(w)
    await refused(
        w.human.set_worktree(thread_id, **KEPT), "FORBIDDEN", message="bot's daemon", unchanged=w.board
    )
    assert (await w.human.thread(thread_id))["worktrees"] == []


async def test_a_thread_the_bot_cannot_read_is_not_found_and_nothing_is_written(world: World) -> None:
    w = world
    thread_id = await a_thread(w)
    await refused(w.other.set_worktree(thread_id, **KEPT), "NOT_FOUND", unchanged=w.board)
    await refused(w.bot.set_worktree(10**9, **KEPT), "NOT_FOUND", unchanged=w.board)
    # Nor does a bot of another workspace learn the thread's records.
    await refused(w.other.thread(thread_id), "NOT_FOUND")


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"state": "gone"}, "state", "INVALID_ARGUMENT"),
        ({"branch": "-x"}, "branch", "INVALID_ARGUMENT"),
        ({"branch": "bot/pb/t1; rm -rf /"}, "branch", "INVALID_ARGUMENT"),
        ({"branch": ""}, "branch", "INVALID_ARGUMENT"),  # only while waiting
        ({"base": "b" * 201}, "base", "INVALID_ARGUMENT"),
        ({"path": "/srv/a\n/srv/b"}, "path", "INVALID_ARGUMENT"),
        ({"path": "p" * 1001}, "path", "INVALID_ARGUMENT"),
        ({"ahead": -1}, "ahead", "INVALID_ARGUMENT"),
        ({"ahead": "2"}, "ahead", "INVALID_ARGUMENT"),
        ({"commits": [{"sha": "xyz", "subject": "s"}]}, "commits[0].sha", "INVALID_ARGUMENT"),
        ({"commits": [{"sha": "abcdef12", "subject": "s" * 201}]}, "commits[0].subject", "INVALID_ARGUMENT"),
        ({"commits": [{"sha": "abcdef12", "when": "now"}]}, "commits[0].when", "INVALID_ARGUMENT"),
        ({"commits": [{"sha": "abcdef12"}] * 51}, "commits", "LIMIT_EXCEEDED"),
        ({"diffstat": "x" * 4001}, "diffstat", "INVALID_ARGUMENT"),
        ({"detail": "d" * 501}, "detail", "INVALID_ARGUMENT"),
        ({"owner": "pb"}, "owner", "INVALID_ARGUMENT"),
    ],
)
async def test_bad_input_is_refused_naming_its_field_and_the_record_stays(
    world: World, change: dict[str, Any], field: str, code: str
) -> None:
    w = world
    thread_id = await a_thread(w)
    before = await w.bot.set_worktree(thread_id, **KEPT)
    error = await refused(w.bot.set_worktree(thread_id, **{**KEPT, **change}), code, unchanged=w.board)
    assert error.details.get("field") == field, error.details
    assert record_of(await w.human.thread(thread_id), "pb") == before


async def test_a_waiting_bot_holds_its_queued_messages_in_the_thread_until_it_has_a_worktree(
    world: World,
) -> None:
    w = world
    await w.bot.wake(wait=1, since=10**9)  # its daemon waits on its feed: not unreachable
    thread_id = await a_thread(w)
    elsewhere = await a_thread(w, "another task for @pb")
    detail = "all 4 of @pb's worktrees are in use"
    await w.bot.set_worktree(thread_id, state="waiting", detail=detail)
    asked = await w.human.post("@pb and this too", reply_to=thread_id)
    for message_id in (thread_id, asked["id"]):
        [entry] = (await w.human.message(message_id))["delivery"]
        assert (entry["state"], entry.get("reason")) == ("held", f"worktrees: {detail}")
    # Another thread of the same bot is not held by this one's wait.
    [other] = (await w.human.message(elsewhere))["delivery"]
    assert other["state"] == "queued"
    # The thread's page of messages says the same, in one read.
    states = {m["id"]: m["delivery"][0]["state"] for m in (await w.human.thread(thread_id))["messages"]}
    assert states == {thread_id: "held", asked["id"]: "held"}
    await w.bot.set_worktree(thread_id, state="live", branch="bot/pb/t1", base="main", path=KEPT["path"])
    [entry] = (await w.human.message(asked["id"]))["delivery"]
    assert entry["state"] == "queued"


async def test_hostile_stored_values_render_escaped_on_the_thread_page(world: World) -> None:
    w = world
    thread_id = await a_thread(w)
    await w.bot.set_worktree(thread_id, **KEPT)
    db_execute(
        w.board.db_path,
        "UPDATE thread_worktrees SET commits = ?, diffstat = ?, branch = ?, detail = ? WHERE thread_id = ?",
        (
            '[{"sha": 7}, "x", {"subject": "<b>bold</b>"}',
            "<script>alert(1)</script>",
            "<i>b</i>",
            "<img>",
            thread_id,
        ),
    )
    record = record_of(await w.human.thread(thread_id), "pb")
    assert record["commits"] == []  # the column does not read back as JSON: none
    db_execute(
        w.board.db_path,
        "UPDATE thread_worktrees SET commits = ? WHERE thread_id = ?",
        ('[{"sha": 7}, "x", {"subject": "<b>bold</b>"}]', thread_id),
    )
    record = record_of(await w.human.thread(thread_id), "pb")
    assert record["commits"] == [{"sha": "7", "subject": ""}, {"sha": "", "subject": "<b>bold</b>"}]
    [(status, page)] = await pages_as(w.board, "alice", f"/t/{thread_id}")
    assert status == 200
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;i&gt;b&lt;/i&gt;" in page and "<img>" not in page


async def test_the_thread_page_says_where_a_live_or_kept_worktree_is_on_the_bots_machine(
    world: World,
) -> None:
    """It named the branch only: a human who would look at the work found no folder to open."""
    w = world
    thread_id = await a_thread(w)
    await w.bot.set_worktree(thread_id, **KEPT)
    [(status, page)] = await pages_as(w.board, "alice", f"/t/{thread_id}")
    record = page[page.index('<li class="worktree" data-bot="pb"') :].split("</li>")[0]
    assert status == 200 and '<code class="path">/srv/app.worktrees/pb-t1</code>' in record, record
    await w.bot.set_worktree(thread_id, **{**KEPT, "state": "removed"})
    [(_, page)] = await pages_as(w.board, "alice", f"/t/{thread_id}")
    assert 'class="path"' not in page  # gone from disk: no folder to name


async def test_the_client_method_is_the_route(world: World) -> None:
    """The daemon's call (board.client.set_worktree) leaves out what it does not send."""
    w = world
    thread_id = await a_thread(w)
    client: BoardClient = w.bot
    record = await client.set_worktree(thread_id, state="waiting", detail="busy", branch=None)
    assert record["branch"] == "" and record["detail"] == "busy"
