"""Workspaces: create, seed, settings, archive (read-only), delete, and moving bots between them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from tests.support.boardtest import PgDatabase, World, db_rows, held, snapshot
from tests.support.refusals import refused


async def slugs(client: BoardClient) -> list[str]:
    return [w["slug"] for w in (await client.workspaces())["workspaces"]]


# -- create ------------------------------------------------------------------------


async def test_a_human_creates_a_workspace(world: World) -> None:
    status, made = await world.human.call("POST", "/api/workspaces", json={"slug": "web-app", "name": "Web"})
    assert status == 201
    assert made["slug"] == "web-app" and made["name"] == "Web" and made["archived"] is False
    assert made["review"] == "none"
    assert "web-app" in await slugs(world.human)
    assert (await world.human.workspace("web-app"))["name"] == "Web"
    # A bot can be invited into it at once.
    invite = await world.human.invite("web-app")
    assert invite["workspace"] == "web-app"


async def test_the_name_defaults_to_the_slug(world: World) -> None:
    assert (await world.human.create_workspace("plain"))["name"] == "plain"


async def test_bots_cannot_create_workspaces(world: World) -> None:
    for bot in (world.bot, world.admin_bot):
        await refused(bot.create_workspace("mine"), "FORBIDDEN", unchanged=world.board)


async def test_a_taken_slug_is_a_name_conflict(world: World) -> None:
    for slug in ("proj", "admin"):
        error = await refused(world.human.create_workspace(slug), "NAME_CONFLICT", unchanged=world.board)
        assert slug in error.message


@pytest.mark.parametrize("slug", ["x", "Proj", "has space", "a/b", "../up", "..", "-a", "é-a", "a" * 65, ""])
async def test_a_bad_slug_is_refused(world: World, slug: str) -> None:
    await refused(world.human.create_workspace(slug), "INVALID_ARGUMENT", unchanged=world.board)


async def test_unknown_fields_are_refused(world: World) -> None:
    await refused(
        world.human.call("POST", "/api/workspaces", json={"slug": "ok-slug", "owner": "me"}),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_a_seed_posts_one_thread_in_the_admin_lobby_that_mentions_nobody(world: World) -> None:
    before = db_rows(world.board.db_path, "SELECT coalesce(max(id), 0) FROM messages")[0][0]
    seed = "Docs at https://example.invalid/docs. Ask @ab or @pb, cc @alice."
    await world.human.create_workspace("seeded", "Seeded", seed=seed)

    new = db_rows(
        world.board.db_path,
        "SELECT m.id, w.slug, c.slug, m.kind, m.reply_to, m.tags, m.mentions FROM messages m "
        "JOIN workspaces w ON w.id = m.workspace_id LEFT JOIN channels c ON c.id = m.channel_id "
        "WHERE m.id > ?",
        (before,),
    )
    assert len(new) == 1
    message_id, workspace, channel, kind, reply_to, tags, mentions = new[0]
    assert (workspace, channel, kind, reply_to) == ("admin", "lobby", "event", None)
    assert tags == '["seed"]' and mentions == "[]"
    assert db_rows(world.board.db_path, "SELECT count(*) FROM inbox WHERE message_id = ?", (message_id,)) == [
        (0,)
    ]

    message = await world.admin_bot.message(message_id)
    assert seed in message["body"] and "seeded" in message["body"]
    assert message["meta"]["seed_workspace"] == "seeded"
    for client in (world.admin_bot, world.bot):
        assert (await client.inbox())["messages"] == []
    # Nothing was posted in the new workspace itself.
    assert (await world.human.messages(workspace="seeded"))["messages"] == []


async def test_no_seed_posts_nothing(world: World) -> None:
    before = snapshot(world.board.db_path)["messages"]
    await world.human.create_workspace("quiet")
    assert snapshot(world.board.db_path)["messages"] == before


# -- settings ----------------------------------------------------------------------


async def test_a_human_renames_and_sets_the_review_policy(world: World) -> None:
    changed = await world.human.patch_workspace("proj", name="Project Two", review="bots")
    assert (changed["name"], changed["review"]) == ("Project Two", "bots")
    got = await world.bot.workspace("proj")
    assert (got["name"], got["review"]) == ("Project Two", "bots")
    assert (await world.human.patch_workspace("proj", review="all"))["name"] == "Project Two"


async def test_settings_refusals_change_nothing(world: World) -> None:
    await refused(world.bot.patch_workspace("proj", name="Mine"), "FORBIDDEN", unchanged=world.board)
    await refused(world.admin_bot.patch_workspace("proj", name="Mine"), "FORBIDDEN", unchanged=world.board)
    await refused(world.other.patch_workspace("proj", name="Mine"), "NOT_FOUND", unchanged=world.board)
    await refused(
        world.human.patch_workspace("proj", review="some"), "INVALID_ARGUMENT", unchanged=world.board
    )
    await refused(world.human.patch_workspace("proj"), "INVALID_ARGUMENT", unchanged=world.board)
    await refused(world.human.patch_workspace("nowhere", name="X"), "NOT_FOUND", unchanged=world.board)


# -- archive -----------------------------------------------------------------------


async def populate_proj(world: World) -> dict[str, Any]:
    """Threads, a conversation and a claim in proj, then archive it."""
    root = await world.human.post("plan for @pb", channel="lobby", workspace="proj")
    reply = await world.bot.post("on it", reply_to=root["id"])
    second = await world.human.post("another task", channel="lobby", workspace="proj")
    conversation = (await world.bot.open_conversation(["pb2"], "pairing"))["conversation"]
    said = await world.bot.post("hello pb2", conversation=conversation["id"])
    await world.bot.claim(root["id"])
    await world.bot.create_channel("design", topic="how it looks")
    return {
        "root": root["id"],
        "reply": reply["id"],
        "second": second["id"],
        "conversation": conversation["id"],
        "said": said["id"],
    }


async def test_archive_makes_a_workspace_read_only(world: World) -> None:
    facts = await populate_proj(world)
    archived = await world.human.archive_workspace("proj")
    assert archived["archived"] is True and archived["archived_at"]
    again = await world.human.archive_workspace("proj")
    assert again["archived_at"] == archived["archived_at"]

    root, second = facts["root"], facts["second"]
    writes: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("bot posts a root", lambda: world.bot.post("more", channel="lobby")),
        ("bot posts in a new channel", lambda: world.bot.post("more", channel="fresh")),
        ("human posts a root", lambda: world.human.post("more", channel="lobby", workspace="proj")),
        ("admin bot posts", lambda: world.admin_bot.post("more", channel="lobby", workspace="proj")),
        ("bot replies", lambda: world.bot.post("more", reply_to=root)),
        ("human replies", lambda: world.human.post("more", reply_to=root)),
        ("bot posts in its conversation", lambda: world.bot.post("x", conversation=facts["conversation"])),
        ("bot opens a conversation", lambda: world.bot.open_conversation(["alice"])),
        ("bot reopens its conversation", lambda: world.bot.open_conversation(["pb2"])),
        ("bot makes a channel", lambda: world.bot.create_channel("newer")),
        (
            "human re-topics a channel",
            lambda: world.human.patch_channel("lobby", topic="t", workspace="proj"),
        ),
        ("holder renews", lambda: world.bot.claim(root)),
        ("peer claims", lambda: world.peer.claim(second)),
        ("holder releases", lambda: world.bot.release(root)),
        ("human hands off", lambda: world.human.handoff(root, "pb2")),
        ("holder closes", lambda: world.bot.done(root)),
        ("peer marks seen", lambda: world.peer.receipts([facts["said"]])),
        ("bot marks done", lambda: world.bot.receipts([root], "done")),
        (
            "bot records a wake",
            lambda: world.bot.record_wake(harness="claude", started_at="2026-11-30T04:00:00Z", outcome="ok"),
        ),
        ("human invites", lambda: world.human.invite("proj")),
        ("human moves a bot in", lambda: world.human.set_bots("proj", ["pb", "pb2", "ob"])),
        ("human renames it", lambda: world.human.patch_workspace("proj", name="Renamed")),
    ]
    wrong = []
    for what, call in writes:
        before = snapshot(world.board.db_path)
        try:
            await call()
        except BoardAPIError as exc:
            if exc.code != "FORBIDDEN":
                wrong.append(f"{what}: {exc.code} {exc.message}")
        else:
            wrong.append(f"{what}: allowed")
        if snapshot(world.board.db_path) != before:
            wrong.append(f"{what}: changed the database")
    assert wrong == [], "\n".join(wrong)

    # Reads still work, for everyone who could read before.
    assert len((await world.bot.messages())["messages"]) == 5
    assert len((await world.human.messages(workspace="proj"))["messages"]) == 5
    assert [m["id"] for m in (await world.bot.thread(root))["messages"]][:2] == [root, facts["reply"]]
    assert (await world.bot.message(facts["reply"]))["body"] == "on it"
    assert (await world.bot.search("plan"))["messages"][0]["id"] == root
    assert {c["slug"] for c in (await world.bot.channels())["channels"]} == {"lobby", "design"}
    assert len((await world.peer.conversations())["conversations"]) == 1
    assert (await world.bot.claims())["claims"][0]["holder"] == "pb"
    assert (await world.bot.me())["workspace"] == "proj"
    assert (await world.bot.workspace("proj"))["archived"] is True
    peer_inbox = await world.peer.inbox(ack=True)
    assert [m["id"] for m in peer_inbox["messages"]] == [facts["said"]]
    # Another workspace is untouched by the archive.
    assert (await world.other.post("still open", channel="lobby"))["body"] == "still open"


async def test_the_admin_workspace_cannot_be_archived(world: World) -> None:
    error = await refused(world.human.archive_workspace("admin"), "FORBIDDEN", unchanged=world.board)
    assert "admin" in error.message
    assert (await world.human.workspace("admin"))["archived"] is False


async def test_only_humans_archive(world: World) -> None:
    await refused(world.bot.archive_workspace("proj"), "FORBIDDEN", unchanged=world.board)
    await refused(world.admin_bot.archive_workspace("proj"), "FORBIDDEN", unchanged=world.board)
    await refused(world.other.archive_workspace("proj"), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.archive_workspace("nowhere"), "NOT_FOUND", unchanged=world.board)


# -- delete ------------------------------------------------------------------------


async def test_delete_needs_an_archived_workspace_and_its_slug_typed_again(world: World) -> None:
    await populate_proj(world)
    error = await refused(world.human.delete_workspace("proj", "proj"), "FORBIDDEN", unchanged=world.board)
    assert "rchive" in error.message
    await world.human.archive_workspace("proj")
    for wrong in ("other", "PROJ", "", "proj "):
        error = await refused(
            world.human.delete_workspace("proj", wrong), "INVALID_ARGUMENT", unchanged=world.board
        )
        assert '"confirm": "proj"' in error.message
    await refused(
        world.human.call("DELETE", "/api/workspaces/proj", json={}),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    await refused(world.bot.delete_workspace("proj", "proj"), "FORBIDDEN", unchanged=world.board)
    await refused(world.admin_bot.delete_workspace("proj", "proj"), "FORBIDDEN", unchanged=world.board)
    await refused(world.other.delete_workspace("proj", "proj"), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.delete_workspace("nowhere", "nowhere"), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.delete_workspace("admin", "admin"), "FORBIDDEN", unchanged=world.board)


def count(world: World, sql: str, *params: Any) -> int:
    return int(db_rows(world.board.db_path, sql, params)[0][0])


async def test_delete_removes_everything_in_the_workspace_and_leaves_a_receipt(world: World) -> None:
    facts = await populate_proj(world)
    kept = await world.other.post("other work, cc @alice", channel="lobby")
    await world.bot.me()
    workspace_id = count(world, "SELECT id FROM workspaces WHERE slug = 'proj'")
    messages = count(world, "SELECT count(*) FROM messages WHERE workspace_id = ?", workspace_id)
    channels = count(world, "SELECT count(*) FROM channels WHERE workspace_id = ?", workspace_id)
    assert messages >= 5 and channels == 2

    await world.human.archive_workspace("proj")
    result = await world.human.delete_workspace("proj", "proj")
    removed = {"messages": messages, "channels": channels, "conversations": 1, "bots": 2, "documents": 0}
    assert result == {"deleted": "proj", "removed": removed}

    for table in ("messages", "channels", "conversations", "claims", "invites"):
        assert count(world, f"SELECT count(*) FROM {table} WHERE workspace_id = ?", workspace_id) == 0
    assert count(world, "SELECT count(*) FROM agents WHERE handle IN ('pb', 'pb2')") == 0
    assert count(world, "SELECT count(*) FROM messages WHERE id IN (?, ?)", facts["root"], facts["said"]) == 0
    if isinstance(world.board.db_path, PgDatabase):  # the index is a column of the messages themselves
        found = "SELECT count(*) FROM messages WHERE search_vector @@ to_tsquery('simple', 'plan')"
    else:
        found = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'plan'"
    assert count(world, found) == 0
    for bot in (world.bot, world.peer):
        with pytest.raises(BoardAPIError) as err:
            await bot.me()
        assert err.value.code == "UNAUTHENTICATED"
    with pytest.raises(BoardAPIError) as err:
        await world.human.workspace("proj")
    assert err.value.code == "NOT_FOUND"
    assert "proj" not in await slugs(world.human)
    assert await world.human.message(kept["id"])
    assert [a["handle"] for a in (await world.human.agents())["agents"]] == ["ab", "alice", "ob"]

    receipt = (await world.human.audit(action="workspace.delete"))["entries"]
    assert len(receipt) == 1
    assert receipt[0]["actor"] == "alice" and receipt[0]["target"] == "proj"
    assert receipt[0]["details"] == removed
    # The workspace's earlier audit rows stay too.
    assert any(
        e["action"] == "workspace.archive" for e in (await world.human.audit(workspace="proj"))["entries"]
    )


async def test_the_slug_of_a_deleted_workspace_can_be_used_again(world: World) -> None:
    await world.human.archive_workspace("proj")
    await world.human.delete_workspace("proj", "proj")
    again = await world.human.create_workspace("proj", "Fresh start")
    assert again["archived"] is False
    assert (await world.human.messages(workspace="proj"))["messages"] == []


# -- membership --------------------------------------------------------------------


async def test_moving_a_bot_changes_its_scope_at_once(world: World) -> None:
    lobby_other = await world.other.post("welcome to other", channel="lobby")
    lobby_proj = await world.human.post("proj news", channel="lobby", workspace="proj")
    assert (await world.bot.me())["workspace"] == "proj"  # cached now

    moved = await world.human.set_bots("other", ["ob", "pb"])
    assert moved == {"workspace": "other", "bots": ["ob", "pb"]}

    assert (await world.bot.me())["workspace"] == "other"
    assert [m["id"] for m in (await world.bot.messages())["messages"]] == [lobby_other["id"]]
    assert (await world.bot.message(lobby_other["id"]))["body"] == "welcome to other"
    calls: tuple[Callable[[], Awaitable[object]], ...] = (
        lambda: world.bot.workspace("proj"),
        lambda: world.bot.message(lobby_proj["id"]),
        lambda: world.bot.messages(workspace="proj"),
        lambda: world.bot.post("hi", channel="lobby", workspace="proj"),
        lambda: world.bot.agent("pb2"),
    )
    for call in calls:
        with pytest.raises(BoardAPIError) as err:
            await call()
        assert err.value.code == "NOT_FOUND"
    assert [a["handle"] for a in (await world.bot.agents())["agents"]] == ["alice", "ob", "pb"]
    assert [a["handle"] for a in (await world.peer.agents())["agents"]] == ["alice", "pb2"]
    posted = await world.bot.post("hello other", channel="lobby")
    assert posted["workspace"] == "other"

    audit = (await world.human.audit(action="membership.move"))["entries"]
    assert [(e["target"], e["workspace"], e["details"]) for e in audit] == [("pb", "other", {"from": "proj"})]


async def test_moving_a_bot_where_it_already_is_changes_nothing(world: World) -> None:
    before = snapshot(world.board.db_path)
    assert (await world.human.set_bots("proj", ["pb", "PB2"]))["bots"] == ["pb", "pb2"]
    assert snapshot(world.board.db_path) == before


async def test_put_sets_the_whole_list_and_never_strands_a_bot(world: World) -> None:
    # Leaving pb2 out would leave it in no workspace: refused, naming it, nothing changed.
    error = await refused(
        world.human.set_bots("proj", ["pb", "ob"]), "INVALID_ARGUMENT", unchanged=world.board
    )
    assert error.details == {"field": "bots", "left_out": ["pb2"]} and "pb2" in error.message
    assert (await world.other.me())["workspace"] == "other"

    # Once pb2 is named in another workspace's list, proj's list can drop it.
    assert (await world.human.set_bots("other", ["ob", "pb2"]))["bots"] == ["ob", "pb2"]
    assert (await world.human.set_bots("proj", ["pb"]))["bots"] == ["pb"]
    bots = [
        a["handle"] for a in (await world.human.agents(workspace="proj"))["agents"] if a["kind"] != "human"
    ]
    assert bots == ["pb"]
    assert (await world.peer.me())["workspace"] == "other"


async def test_membership_refusals_change_nothing(world: World) -> None:
    await refused(world.human.set_bots("proj", ["pb2", "nobody"]), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.set_bots("proj", ["alice"]), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.set_bots("nowhere", ["pb"]), "NOT_FOUND", unchanged=world.board)
    await refused(world.bot.set_bots("proj", ["ob"]), "FORBIDDEN", unchanged=world.board)
    await refused(world.admin_bot.set_bots("proj", ["ob"]), "FORBIDDEN", unchanged=world.board)
    await refused(world.other.set_bots("proj", ["ob"]), "NOT_FOUND", unchanged=world.board)
    await refused(world.human.set_bots("proj", ["bad handle"]), "INVALID_ARGUMENT", unchanged=world.board)
    assert (await world.other.me())["workspace"] == "other"


async def test_moving_a_bot_releases_the_claims_it_can_no_longer_reach(world: World) -> None:
    root = await world.human.post("task in proj", channel="lobby", workspace="proj")
    await world.bot.claim(root["id"])
    other_root = await world.other.post("task in other", channel="lobby")

    await world.human.set_bots("other", ["ob", "pb"])

    thread = await world.human.thread(root["id"])
    assert thread["claim"]["state"] == "open" and thread["claim"]["holder"] is None
    assert [h["action"] for h in thread["claim_history"]] == ["claim", "release"]
    assert "moved to workspace other" in thread["messages"][-1]["body"]
    # The peer who stayed can take the thread now; pb works in its new workspace.
    assert (await world.peer.claim(root["id"]))["holder"] == "pb2"
    assert (await world.bot.claim(other_root["id"]))["holder"] == "pb"
    assert [c["thread_id"] for c in (await world.bot.me())["claims"]] == [other_root["id"]]


async def test_moving_a_bot_into_admin_keeps_its_claims(world: World) -> None:
    root = await world.human.post("task in proj", channel="lobby", workspace="proj")
    await world.bot.claim(root["id"])
    await world.human.set_bots("admin", ["ab", "pb"])
    assert (await world.human.thread(root["id"]))["claim"]["holder"] == "pb"
    assert (await world.bot.me())["role"] == "admin_bot"


async def test_a_workspace_whose_bot_wrote_elsewhere_is_kept_until_the_bot_moves(world: World) -> None:
    """Deleting the bot would orphan its messages in another workspace: refused, with the way out."""
    root = await world.human.post("task", channel="lobby", workspace="proj")
    await world.bot.post("my answer", reply_to=root["id"])
    await world.human.set_bots("other", ["ob", "pb"])
    await world.human.archive_workspace("other")

    error = await refused(world.human.delete_workspace("other", "other"), "FORBIDDEN", unchanged=world.board)
    assert "pb" in error.message and "proj" in error.message
    assert error.details["bots"] == {"pb": ["proj"]}

    await world.human.create_workspace("keep")
    await world.human.set_bots("keep", ["pb"])
    result = await world.human.delete_workspace("other", "other")
    assert result["removed"]["bots"] == 1
    assert (await world.bot.me())["workspace"] == "keep"
    assert [m["author"] for m in (await world.human.thread(root["id"]))["messages"]] == ["alice", "pb"]


async def test_a_deleted_bots_request_ids_do_not_replay_for_a_newcomer(world: World) -> None:
    """A deleted bot's id is never given again, and its stored answers are gone with it."""
    await world.human.create_workspace("tmp")
    temp = await world.board.bot("tb", "tmp")
    body = {"channel": "lobby", "body": "hello", "request_id": "first"}
    _, said = await temp.call("POST", "/api/messages", json=body)
    assert said["workspace"] == "tmp"
    temp_id = db_rows(world.board.db_path, "SELECT id FROM agents WHERE handle = 'tb'")[0][0]
    await world.human.archive_workspace("tmp")
    await world.human.delete_workspace("tmp", "tmp")
    assert db_rows(world.board.db_path, "SELECT count(*) FROM requests") == [(0,)]

    newcomer = await world.board.bot("nb", "other")
    assert db_rows(world.board.db_path, "SELECT id FROM agents WHERE handle = 'nb'")[0][0] > temp_id
    status, posted = await newcomer.call("POST", "/api/messages", json=body)
    assert status == 201 and posted["workspace"] == "other" and posted["author"] == "nb"


async def test_a_moved_bot_hears_no_claims_end_in_its_old_workspace(world: World) -> None:
    """A bot's live worktree record stays with a thread of the workspace it left: that thread's
    done is no news to be given there, out of the bot's reach."""
    root = await world.human.post("fix the build", channel="lobby", workspace="proj")
    await world.bot.set_worktree(int(root["id"]), state="live", branch=f"bot/pb/t{root['id']}", base="main")
    await world.human.set_bots("other", ["ob", "pb"])
    await world.human.done(int(root["id"]), "fixed elsewhere")
    assert (await world.bot.inbox())["messages"] == []


async def test_a_moved_bot_hears_no_more_of_a_thread_it_posted_in(world: World) -> None:
    """A bot that posted in a thread of proj, then moved to other, was still given each later
    reply there (a reason ``thread``): a workspace it can no longer read, and a wake each."""
    root = await world.human.post("which parser?", channel="lobby", workspace="proj")
    await world.bot.post("the new one", reply_to=int(root["id"]))
    thanks = await world.human.post("thanks", reply_to=int(root["id"]))
    assert [m["body"] for m in (await world.bot.inbox())["messages"]] == ["thanks"]  # still its own
    await world.human.set_bots("other", ["ob", "pb"])
    await world.human.post("one more question", reply_to=int(root["id"]))
    assert (await world.bot.inbox(since=int(thanks["id"])))["messages"] == []
    assert (await world.bot.wake(since=int(thanks["id"]), wait=0))["messages"] == []


async def test_a_moved_bot_is_woken_by_nothing_of_the_workspace_it_left(world: World) -> None:
    """A bot moved out of proj is still among the recipients of a conversation it was in there
    and of a thread it held and marked done. The stored read hides those; a long-poll held on the
    inbox or the wake feed was answered with them as they were posted: another workspace's text."""
    conversation = (await world.peer.open_conversation(["pb"], "pairing"))["conversation"]
    root = await world.human.post("ship it", channel="lobby", workspace="proj")
    await world.bot.claim(int(root["id"]))
    await world.bot.done(int(root["id"]), "shipped")
    await world.human.set_bots("other", ["ob", "pb"])
    cursor = int((await world.bot.me())["cursor"])
    inbox = asyncio.create_task(world.bot.inbox(since=cursor, wait=3))
    wake = asyncio.create_task(world.bot.wake(since=cursor, wait=3))
    await held(world.board, 2)
    await world.peer.post("a secret of proj", conversation=conversation["id"])
    await world.human.post("one more thing, in proj", reply_to=int(root["id"]))
    assert (await inbox)["messages"] == [] and (await wake)["messages"] == []
    mine = await world.human.post("@pb over here", channel="lobby", workspace="other")
    assert [m["id"] for m in (await world.bot.inbox(since=cursor, wait=3))["messages"]] == [mine["id"]]


@pytest.mark.parametrize("change", ["move", "revoke"])
async def test_a_bots_held_long_polls_answer_at_once_when_it_moves_or_loses_its_token(
    world: World, change: str
) -> None:
    """A long-poll held through a move or a revocation was held to the end of its wait (up to a
    minute), then refused, since the credential it began with no longer stands for what it
    was. It is now refused at once, and nothing of the workspace it left is answered."""
    cursor = int((await world.bot.me())["cursor"])
    polls = [
        asyncio.create_task(world.bot.messages(channel="lobby", workspace="proj", since=cursor, wait=30)),
        asyncio.create_task(world.bot.inbox(since=cursor, wait=30)),
        asyncio.create_task(world.bot.wake(since=cursor, wait=30)),
    ]
    await held(world.board, 3)
    if change == "move":
        await world.human.set_bots("other", ["ob", "pb"])
    else:
        await world.human.revoke_token("pb")
    answers = await asyncio.wait_for(asyncio.gather(*polls, return_exceptions=True), 10)
    assert [getattr(answer, "code", answer) for answer in answers] == ["UNAUTHENTICATED"] * 3
    assert world.board.ctx.hub.waiting == 0
    asked_again = world.bot.messages(channel="lobby", workspace="proj", since=cursor)
    await refused(asked_again, "NOT_FOUND" if change == "move" else "UNAUTHENTICATED")


async def test_a_moved_bots_inbox_lists_nothing_of_the_workspace_it_left(world: World) -> None:
    """What had reached a bot's inbox in proj was still listed, counted and given to its wake
    feed after its move to other: messages of a workspace it can no longer read."""
    before = await world.human.post("@pb have a look", channel="lobby", workspace="proj")
    assert [m["id"] for m in (await world.bot.inbox())["messages"]] == [before["id"]]
    await world.human.set_bots("other", ["ob", "pb"])
    after = await world.human.post("@pb and here", channel="lobby", workspace="other")
    assert [m["id"] for m in (await world.bot.inbox())["messages"]] == [after["id"]]
    assert [m["id"] for m in (await world.bot.wake(wait=0))["messages"]] == [after["id"]]
    assert (await world.bot.me())["inbox"] == 1
    page = await world.bot.inbox_threads()
    assert [g["thread_id"] for g in page["groups"]] == [after["id"]] and page["unread"] == 1
    await refused(world.bot.receipts([int(before["id"])]), "NOT_FOUND")
    assert (await world.bot.inbox_mark("done", all=True))["marked"] == 1


async def test_an_admin_bots_inbox_lists_what_reached_it_in_every_workspace(world: World) -> None:
    """An admin bot reads every workspace: its inbox keeps what reached it in each (the check
    that hides a moved bot's old workspace reads its home's slug for that)."""
    handle = (await world.admin_bot.me())["handle"]
    here = await world.human.post(f"@{handle} have a look", channel="lobby", workspace="proj")
    there = await world.human.post(f"@{handle} and here", channel="lobby", workspace="other")
    ids = [here["id"], there["id"]]
    assert [m["id"] for m in (await world.admin_bot.inbox())["messages"]] == ids
    assert [m["id"] for m in (await world.admin_bot.wake(wait=0))["messages"]] == ids
    assert (await world.admin_bot.me())["inbox"] == 2
    page = await world.admin_bot.inbox_threads()
    assert sorted(g["thread_id"] for g in page["groups"]) == ids and page["unread"] == 2
    await world.admin_bot.receipts([int(here["id"])])
    assert (await world.admin_bot.inbox_mark("done", all=True))["marked"] == 2
