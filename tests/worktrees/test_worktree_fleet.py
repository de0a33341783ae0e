"""Worktrees on the fleet: a keeper's report of them (hostile values too), the human's
remove_worktree order, and what its keeper's answer does to the thread's record."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fleet.test_fleet_api import bot_report, fleet_setup
from tests.support.boardtest import World, db_execute
from tests.support.pages_support import pages_as
from tests.support.refusals import refused


def worktree(thread: int, state: str = "kept", **extra: Any) -> dict[str, Any]:
    return {
        "thread": thread,
        "branch": f"bot/fb1/t{thread}",
        "path": f"/srv/app.worktrees/fb1-t{thread}",
        "state": state,
        "age_s": 7200.0,
        "disk_bytes": 3 * 1048576,
        **extra,
    }


def fb1_of(fleet: dict[str, Any]) -> dict[str, Any]:
    return next(b for m in fleet["machines"] for b in m["bots"] if b["handle"] == "fb1")


FB1_STATUS = "UPDATE fleet_bots SET status = ? WHERE agent_id = (SELECT id FROM agents WHERE handle = 'fb1')"


def remove_path(handle: str, thread: int) -> str:
    return f"/api/fleet/bots/{handle}/worktrees/{thread}/remove"


async def test_a_report_lists_each_bots_worktrees_with_the_total_on_disk(world: World) -> None:
    w = world
    box1, _ = await fleet_setup(world)
    sent = [
        worktree(5, uncommitted=2, uncommitted_paths=["src/a.py", "b.txt"]),
        worktree(6, "live", disk_bytes=None, uncommitted=None, uncommitted_paths=[]),
    ]
    await box1.client.fleet_report({"bots": [bot_report("fb1", worktrees=sent)]})
    fb1 = fb1_of(await w.human.fleet())
    assert [{k: x[k] for k in sent[0]} for x in fb1["worktrees"]] == sent
    assert fb1["worktrees_disk_bytes"] == 3 * 1048576
    assert [x["removing"] for x in fb1["worktrees"]] == [False, False]


@pytest.mark.parametrize(
    "sent",
    [
        [worktree(5, state="gone")],
        [worktree(0)],
        [worktree(5, disk_bytes=-1)],
        [worktree(5, path="x" * 1001)],
        [worktree(i + 1) for i in range(51)],
        [{"thread": 5}],  # no state
        [worktree(5, uncommitted=-1)],
        [worktree(5, uncommitted_paths=["a"] * 6)],
    ],
    ids=["state", "thread", "disk", "path", "too-many", "no-state", "uncommitted", "uncommitted-paths"],
)
async def test_a_malformed_worktree_report_is_refused(world: World, sent: list[dict[str, Any]]) -> None:
    box1, _ = await fleet_setup(world)
    await refused(
        box1.client.fleet_report({"bots": [bot_report("fb1", worktrees=sent)]}),
        ("INVALID_ARGUMENT", "LIMIT_EXCEEDED"),
        unchanged=world.board,
    )


async def test_hostile_stored_worktrees_do_not_break_the_fleet(world: World) -> None:
    """A status another keeper version wrote: odd types are unknown, the rest is left out, text escaped."""
    w = world
    box1, _ = await fleet_setup(world)
    await box1.client.fleet_report({"bots": [bot_report("fb1")]})
    hostile = (
        '{"worktrees": [{"thread": "5"}, {"thread": 7, "branch": "<script>x()</script>", "state": "odd",'
        ' "age_s": "old", "disk_bytes": 1.5, "path": ["/"], "uncommitted": "2", "uncommitted_paths": "a"},'
        ' 3, {"thread": 7, "state": "kept"},'
        ' {"thread": 8, "state": "kept", "disk_bytes": 10, "uncommitted": 3, "uncommitted_paths": ["a", 1]}]}'
    )
    db_execute(w.board.db_path, FB1_STATUS, (hostile,))
    fb1 = fb1_of(await w.human.fleet())
    assert fb1["worktrees"] == [
        {
            "thread": 7,
            "branch": "<script>x()</script>",
            "path": None,
            "state": None,
            "age_s": None,
            "disk_bytes": None,
            "uncommitted": None,
            "uncommitted_paths": [],
            "removing": False,
        },
        {
            "thread": 8,
            "branch": None,
            "path": None,
            "state": "kept",
            "age_s": None,
            "disk_bytes": 10,
            "uncommitted": 3,
            "uncommitted_paths": ["a"],
            "removing": False,
        },
    ]
    assert fb1["worktrees_disk_bytes"] == 10
    [(_, page)] = await pages_as(w.board, "alice", "/fleet")
    assert "worktrees 2 · 10 bytes on disk" in page and "0 KB" not in page  # small is not empty
    db_execute(w.board.db_path, FB1_STATUS, ('{"worktrees": {"a": 1}}',))
    assert fb1_of(await w.human.fleet())["worktrees"] == []
    db_execute(w.board.db_path, FB1_STATUS, (hostile,))
    [(status, page)] = await pages_as(w.board, "alice", "/fleet")
    assert status == 200
    assert "<script>x()</script>" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page
    assert page.count('class="inline worktree-action"') == 1  # thread 8, kept; 7's state is unknown


async def test_only_a_human_orders_a_kept_worktree_removed_and_an_ok_ack_marks_the_record(
    world: World,
) -> None:
    w = world
    box1, _ = await fleet_setup(world)
    thread_id = int((await w.human.post("task", channel="lobby", workspace="proj"))["id"])
    # The bot's record, as its daemon writes it (fb1's token is its keeper's to mint).
    token = (await box1.client.call("POST", "/api/fleet/bots/fb1/token"))[1]["token"]
    fb1 = w.board.client(token)
    await fb1.set_worktree(thread_id, state="kept", branch=f"bot/fb1/t{thread_id}", base="main", ahead=1)
    await box1.client.fleet_report(
        {"bots": [bot_report("fb1", worktrees=[worktree(thread_id), worktree(thread_id + 1000, "live")])]}
    )
    # Refused: not a human (nothing written), a worktree not reported, a live one.
    for caller in (w.bot, fb1, box1.client):
        await refused(caller.call("POST", remove_path("fb1", thread_id)), "FORBIDDEN", unchanged=w.board)
    await refused(w.human.call("POST", remove_path("fb1", 999)), "NOT_FOUND", unchanged=w.board)
    error = await refused(
        w.human.call("POST", remove_path("fb1", thread_id + 1000)), "INVALID_ARGUMENT", unchanged=w.board
    )
    assert "live" in error.message
    await refused(w.human.call("POST", remove_path("nobody", thread_id)), "NOT_FOUND", unchanged=w.board)

    _, answer = await w.human.call("POST", remove_path("fb1", thread_id))
    order = answer["order"]
    assert order["kind"] == "remove_worktree" and order["target"] == thread_id
    assert [x["removing"] for x in fb1_of(await w.human.fleet())["worktrees"]] == [True, False]
    assert fb1_of(await w.human.fleet())["pending"] is None  # the bot itself has no order on its way
    sent = (await box1.client.fleet_report({}))["orders"]
    assert [(o["id"], o["kind"], o["handle"], o["target"]) for o in sent] == [
        (order["id"], "remove_worktree", "fb1", thread_id)
    ]
    # A failed removal leaves the record as it was.
    await box1.client.fleet_report({"acks": [{"id": order["id"], "ok": False, "detail": "not inside"}]})
    assert [r["state"] for r in (await w.human.thread(thread_id))["worktrees"]] == ["kept"]
    _, again = await w.human.call("POST", remove_path("fb1", thread_id))
    await box1.client.fleet_report({"acks": [{"id": again["order"]["id"], "ok": True, "detail": "removed"}]})
    [record] = (await w.human.thread(thread_id))["worktrees"]
    assert record["state"] == "removed" and record["branch"] == f"bot/fb1/t{thread_id}"
    audit = (await w.human.audit(action="fleet.remove_worktree"))["entries"]
    assert [e["details"]["thread"] for e in audit] == [thread_id, thread_id]


def gone_path(handle: str, thread: int) -> str:
    return f"/api/fleet/bots/{handle}/worktrees/{thread}/gone"


async def test_a_kept_worktree_said_gone_reads_removed_with_its_commits_kept(world: World) -> None:
    """Its daemon or its keeper says the folder is gone; nobody else may, and a live one is not."""
    w = world
    box1, box2 = await fleet_setup(world)
    thread_id = int((await w.human.post("task", channel="lobby", workspace="proj"))["id"])
    token = (await box1.client.call("POST", "/api/fleet/bots/fb1/token"))[1]["token"]
    fb1 = w.board.client(token)
    commits = [{"sha": "abc1234", "subject": "Fix the thing"}]
    kept = {"branch": f"bot/fb1/t{thread_id}", "base": "main", "ahead": 1, "commits": commits}
    await fb1.set_worktree(thread_id, state="live", **kept)
    for caller in (w.human, w.bot):  # not the bot's nor its keeper's to say
        await refused(caller.call("POST", gone_path("fb1", thread_id)), "FORBIDDEN", unchanged=w.board)
    await refused(box2.client.call("POST", gone_path("fb1", thread_id)), "NOT_FOUND", unchanged=w.board)
    await refused(box1.client.call("POST", gone_path("fb1", 999999)), "NOT_FOUND", unchanged=w.board)
    error = await refused(fb1.worktree_gone("fb1", thread_id), "INVALID_ARGUMENT", unchanged=w.board)
    assert "live" in error.message

    await fb1.set_worktree(thread_id, state="kept", **kept)
    record = await box1.client.worktree_gone("fb1", thread_id)
    assert (record["state"], record["commits"], record["ahead"]) == ("removed", commits, 1)
    assert "removed outside the board" in record["detail"]
    [shown] = (await w.human.thread(thread_id))["worktrees"]
    assert shown == record
    # Said again (the daemon after its keeper): the record stays as it is.
    assert await fb1.worktree_gone("fb1", thread_id) == record
