"""The audit log: every mutation appends a row; the log is human-only and append-only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.services import auth
from tests.support.boardtest import DB_ERRORS, World, db_execute, db_rows, snapshot


async def entries(world: World, **params: Any) -> list[dict[str, Any]]:
    return (await world.human.audit(limit=500, **params))["entries"]


async def last_entry(world: World) -> dict[str, Any]:
    return (await entries(world))[-1]


async def call(client: BoardClient, method: str, path: str, **body: Any) -> Any:
    status, data = await client.call(method, path, json=body or None)
    assert status < 300
    return data


def row(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (entry["actor"], entry["action"], entry["target"], entry["workspace"], entry["request_id"])


async def test_every_kind_of_mutation_appends_a_row_with_its_request_id(world: World) -> None:
    human, bot = world.human, world.bot
    steps: list[tuple[Any, tuple[Any, ...]]] = [
        (
            lambda: call(human, "POST", "/api/workspaces", slug="audited", request_id="ws-create"),
            ("alice", "workspace.create", "audited", "audited", "ws-create"),
        ),
        (
            lambda: call(human, "PATCH", "/api/workspaces/audited", name="Audited", request_id="ws-patch"),
            ("alice", "workspace.update", "audited", "audited", "ws-patch"),
        ),
        (
            lambda: call(bot, "POST", "/api/channels", slug="design", topic="looks", request_id="ch-new"),
            ("pb", "channel.create", "design", "proj", "ch-new"),
        ),
        (
            lambda: call(bot, "PATCH", "/api/channels/design", topic="feel", request_id="ch-topic"),
            ("pb", "channel.update", "design", "proj", "ch-topic"),
        ),
        (
            lambda: call(bot, "POST", "/api/messages", channel="fresh", body="first", request_id="ch-post"),
            ("pb", "channel.create", "fresh", "proj", "ch-post"),
        ),
        (
            lambda: call(human, "POST", "/api/invites", workspace="proj", request_id="inv"),
            ("alice", "invite.create", "proj", "proj", "inv"),
        ),
        (
            lambda: call(world.peer, "POST", "/api/me/rotate", request_id="rot"),
            ("pb2", "token.rotate", "pb2", "proj", "rot"),
        ),
        (
            lambda: call(human, "DELETE", "/api/agents/ob/token", request_id="rev"),
            ("alice", "token.revoke", "ob", "other", "rev"),
        ),
        (
            lambda: call(human, "PUT", "/api/workspaces/audited/bots", bots=["pb2"], request_id="move"),
            ("alice", "membership.move", "pb2", "audited", "move"),
        ),
        (
            lambda: call(human, "POST", "/api/workspaces/audited/archive", request_id="ws-archive"),
            ("alice", "workspace.archive", "audited", "audited", "ws-archive"),
        ),
        (
            lambda: call(human, "DELETE", "/api/workspaces/audited", confirm="audited", request_id="ws-del"),
            ("alice", "workspace.delete", "audited", "audited", "ws-del"),
        ),
    ]
    for step, expected in steps:
        count = len(await entries(world))
        await step()
        added = (await entries(world))[count:]
        assert [row(e) for e in added] == [expected]
        assert added[0]["at"].endswith("Z")


async def test_the_idempotency_key_header_is_recorded_too(world: World) -> None:
    status, _ = await world.human.call(
        "POST", "/api/workspaces", json={"slug": "by-header"}, headers={"Idempotency-Key": "hdr-1"}
    )
    assert status == 201
    assert row(await last_entry(world)) == ("alice", "workspace.create", "by-header", "by-header", "hdr-1")


async def test_a_mutation_without_a_request_id_records_none(world: World) -> None:
    await world.human.create_workspace("plain")
    assert row(await last_entry(world)) == ("alice", "workspace.create", "plain", "plain", None)


async def test_registration_and_the_operators_commands_are_audited(world: World) -> None:
    ctx = world.board.ctx
    code = await auth.create_invite(ctx, None, auth.InviteRequest(workspace="proj"))
    assert row(await last_entry(world)) == ("operator", "invite.create", "proj", "proj", None)
    status, _ = await world.anon.call(
        "POST", "/api/agents", json={"handle": "joiner", "invite": code["invite"], "request_id": "join"}
    )
    assert status == 201
    assert row(await last_entry(world)) == ("joiner", "agent.register", "joiner", "proj", "join")
    await auth.add_human(ctx, "bob")
    assert row(await last_entry(world)) == ("operator", "human.create", "bob", None, None)
    await auth.human_token(ctx, "bob")
    assert row(await last_entry(world)) == ("operator", "token.create", "bob", None, None)


async def test_a_refused_mutation_leaves_no_row(world: World) -> None:
    before = snapshot(world.board.db_path)
    attempts: tuple[Callable[[], Awaitable[object]], ...] = (
        lambda: world.bot.create_workspace("nope"),
        lambda: world.human.create_workspace("proj"),
        lambda: world.bot.revoke_token("pb2"),
        lambda: world.other.set_bots("proj", ["ob"]),
    )
    for attempt in attempts:
        with pytest.raises(BoardAPIError):
            await attempt()
    assert snapshot(world.board.db_path) == before


# -- reading the log ------------------------------------------------------------------


async def test_the_log_filters_by_workspace_actor_action_and_since(world: World) -> None:
    await world.bot.create_channel("design")
    await world.other.create_channel("design")
    await world.human.create_channel("ops", workspace="proj")

    proj = await entries(world, workspace="proj")
    assert proj and {e["workspace"] for e in proj} == {"proj"}
    by_pb = await entries(world, actor="pb")
    assert [(e["action"], e["target"]) for e in by_pb] == [
        ("agent.register", "pb"),
        ("channel.create", "design"),
    ]
    creates = await entries(world, action="channel.create")
    assert [(e["actor"], e["workspace"]) for e in creates] == [
        ("pb", "proj"),
        ("ob", "other"),
        ("alice", "proj"),
    ]
    both = await entries(world, action="channel.create", workspace="proj")
    assert [e["actor"] for e in both] == ["pb", "alice"]

    everything = await entries(world)
    ids = [e["id"] for e in everything]
    assert ids == sorted(ids)
    later = await entries(world, since=ids[-3])
    assert [e["id"] for e in later] == ids[-2:]
    assert await entries(world, actor="nobody") == []


async def test_the_log_pages_with_next_since(world: World) -> None:
    first = await world.human.audit(limit=2)
    assert len(first["entries"]) == 2 and first["has_more"] is True
    rest = await world.human.audit(since=first["next_since"], limit=500)
    assert rest["entries"][0]["id"] == first["entries"][-1]["id"] + 1
    total = len(await entries(world))
    assert len(first["entries"]) + len(rest["entries"]) == total


async def test_only_humans_read_the_log(world: World) -> None:
    for client in (world.bot, world.admin_bot, world.other):
        with pytest.raises(BoardAPIError) as err:
            await client.audit()
        assert err.value.code == "FORBIDDEN"
    with pytest.raises(BoardAPIError) as err:
        await world.anon.audit()
    assert err.value.code == "UNAUTHENTICATED"


@pytest.mark.parametrize("bad", [{"since": "-1"}, {"limit": "0"}, {"limit": "501"}, {"who": "alice"}])
async def test_bad_log_queries_are_refused(world: World, bad: dict[str, str]) -> None:
    with pytest.raises(BoardAPIError) as err:
        await world.human.audit(**bad)
    assert err.value.code == "INVALID_ARGUMENT"


# -- append-only ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql", ["UPDATE audit SET actor = 'mallory'", "DELETE FROM audit", "DELETE FROM audit WHERE id = 1"]
)
async def test_sql_cannot_change_or_remove_audit_rows(world: World, sql: str) -> None:
    path = world.board.db_path
    before = db_rows(path, "SELECT * FROM audit ORDER BY id")
    assert before

    with pytest.raises(DB_ERRORS, match="append-only"):
        db_execute(path, sql)

    with pytest.raises(DB_ERRORS, match="append-only"):
        await world.board.ctx.db.write(lambda c: c.execute(sql))
    assert db_rows(path, "SELECT * FROM audit ORDER BY id") == before
