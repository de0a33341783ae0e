"""Identity: registration by invite, token rotation and revocation, hashed storage, presence, roster."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from board.client import BoardAPIError, BoardClient
from board.server.clock import ManualClock, iso
from board.server.errors import Unauthenticated
from board.server.principal import Principal
from board.server.services import auth, tokencache
from tests.support.boardtest import Board, PgDatabase, Where, World, db_rows, snapshot
from tests.support.refusals import refused


async def invite(board: Board, workspace: str = "proj", uses: int = 1, expires_in: int = 86400) -> str:
    req = auth.InviteRequest(workspace=workspace, uses=uses, expires_in=expires_in)
    return (await auth.create_invite(board.ctx, None, req))["invite"]


async def register(board: Board, **body: Any) -> tuple[int, Any]:
    return await board.client().call("POST", "/api/agents", json=body)


# -- registration --------------------------------------------------------------------


async def test_registration_with_an_invite_creates_a_bot_in_its_workspace(world: World) -> None:
    board = world.board
    code = await invite(board, "proj")
    status, data = await register(board, handle="builder", invite=code, description="builds things")

    assert status == 201
    assert data["token"].startswith("bb_") and len(data["token"]) > 40
    agent = data["agent"]
    assert (agent["handle"], agent["kind"], agent["workspace"]) == ("builder", "other", "proj")
    assert agent["description"] == "builds things"
    me = await board.client(data["token"]).me()
    assert (me["handle"], me["workspace"], me["role"]) == ("builder", "proj", "bot")


async def test_an_invite_to_the_admin_workspace_makes_an_admin_bot(world: World) -> None:
    status, data = await register(world.board, handle="keeperbot", invite=await invite(world.board, "admin"))
    assert status == 201
    me = await world.board.client(data["token"]).me()
    assert (me["workspace"], me["role"]) == ("admin", "admin_bot")


async def test_a_used_up_invite_is_refused(world: World) -> None:
    board = world.board
    code = await invite(board, uses=2)
    for handle in ("first", "second"):
        status, _ = await register(board, handle=handle, invite=code)
        assert status == 201
    await refused(register(board, handle="third", invite=code), "UNAUTHENTICATED", unchanged=board)


async def test_an_unknown_invite_is_refused(world: World) -> None:
    await refused(
        register(world.board, handle="stranger", invite="bi_not-a-real-invite"),
        "UNAUTHENTICATED",
        unchanged=world.board,
    )


async def test_registration_without_an_invite_is_refused(world: World) -> None:
    await refused(register(world.board, handle="stranger"), "INVALID_ARGUMENT", unchanged=world.board)


async def test_an_expired_invite_is_refused(clocked_world: World, clock: ManualClock) -> None:
    board = clocked_world.board
    code = await invite(board, expires_in=60)
    clock.advance(59)
    live = await invite(board, expires_in=60)
    clock.advance(2)
    await refused(register(board, handle="late", invite=code), "UNAUTHENTICATED", unchanged=board)
    status, _ = await register(board, handle="ontime", invite=live)
    assert status == 201


async def test_a_taken_handle_is_refused_whatever_its_case(world: World) -> None:
    board = world.board
    code = await invite(board)
    for handle in ("pb", "PB", "Alice", "BOARD"):
        error = await refused(register(board, handle=handle, invite=code), "NAME_CONFLICT", unchanged=board)
        assert "taken" in error.message
    # The refusals spent nothing: the invite still has its one use.
    status, _ = await register(board, handle="fresh", invite=code)
    assert status == 201


# ".." would be a dot segment in every URL naming the bot (/a/.., /api/agents/../token), which
# browsers and HTTP clients resolve away: a human could not open, budget or revoke it. A leading
# "-" reads as an option where a command takes the handle (board fleet assign HANDLE ...).
@pytest.mark.parametrize(
    "handle", ["x", "a" * 33, "has space", "semi;colon", "ünïcode", "", "..", "-h", ".x"]
)
async def test_a_bad_handle_is_refused(world: World, handle: str) -> None:
    error = await refused(
        register(world.board, handle=handle, invite=await invite(world.board)),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )
    assert "handle" in error.message


@pytest.mark.parametrize("kind", ["claude-code", "codex", "opencode", "copilot", "gemini", "other"])
async def test_registration_takes_the_harness_label_and_the_roster_shows_it(world: World, kind: str) -> None:
    code = await invite(world.board, "proj")
    status, data = await register(world.board, handle="labelled", invite=code, kind=kind)
    assert status == 201 and data["agent"]["kind"] == kind
    client = world.board.client(data["token"])
    assert (await client.me())["role"] == "bot"  # a label, not a role: still a plain bot
    roster = {a["handle"]: a["kind"] for a in (await world.peer.agents())["agents"]}
    assert roster["labelled"] == kind and roster["pb"] == "other"
    assert (await world.human.agent("labelled"))["kind"] == kind


async def test_registration_never_makes_a_human(world: World) -> None:
    code = await invite(world.board)
    for kind in ("human", "system", "keeper", "bot", "Claude-Code"):
        await refused(
            register(world.board, handle="wannabe", invite=code, kind=kind),
            "INVALID_ARGUMENT",
            unchanged=world.board,
        )
    await refused(
        register(world.board, handle="wannabe", invite=code, role="human"),
        "INVALID_ARGUMENT",
        unchanged=world.board,
    )


async def test_an_invite_to_an_archived_workspace_is_refused(world: World) -> None:
    code = await invite(world.board, "other")
    await world.human.archive_workspace("other")
    await refused(register(world.board, handle="latecomer", invite=code), "FORBIDDEN", unchanged=world.board)


async def test_only_humans_issue_invites(world: World) -> None:
    for caller in (world.bot, world.admin_bot):
        with pytest.raises(BoardAPIError) as err:
            await caller.invite("proj")
        assert err.value.code == "FORBIDDEN"
    with pytest.raises(BoardAPIError) as err:
        await world.human.invite("nowhere")
    assert err.value.code == "NOT_FOUND"
    made = await world.human.invite("proj", uses=3, expires_in=3600)
    assert made["invite"].startswith("bi_") and made["uses"] == 3
    for handle in ("one", "two", "three"):
        status, _ = await register(world.board, handle=handle, invite=made["invite"])
        assert status == 201


# -- tokens -------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["bot", "human"])
async def test_rotation_gives_a_new_token_and_stops_the_old_one_at_once(world: World, who: str) -> None:
    old = world.bot if who == "bot" else world.human
    await old.me()  # the old token is now in the server's cache
    rotated = await old.rotate()
    prefix = "bb_" if who == "bot" else "bh_"
    assert rotated["token"].startswith(prefix) and rotated["token"] != old.token

    await refused(old.me(), "UNAUTHENTICATED")
    fresh = world.board.client(rotated["token"])
    assert (await fresh.me())["handle"] == ("pb" if who == "bot" else "alice")


async def test_a_human_revokes_a_bots_token_and_it_stops_at_once(world: World) -> None:
    await world.bot.me()
    revoked = await world.human.revoke_token("pb")
    assert revoked == {"handle": "pb", "revoked": 1}
    await refused(world.bot.me(), "UNAUTHENTICATED")
    # Its workspace neighbour is untouched.
    assert (await world.peer.me())["handle"] == "pb2"


async def test_bots_cannot_revoke_tokens(world: World) -> None:
    for caller, target in ((world.peer, "pb"), (world.admin_bot, "pb"), (world.bot, "pb")):
        before = snapshot(world.board.db_path)
        with pytest.raises(BoardAPIError) as err:
            await caller.revoke_token(target)
        assert (err.value.code, err.value.status) == ("FORBIDDEN", 403)
        assert snapshot(world.board.db_path) == before
    assert (await world.bot.me())["handle"] == "pb"


async def test_revoking_something_that_is_not_a_bot_is_not_found(world: World) -> None:
    for handle in ("alice", "board", "nobody"):
        with pytest.raises(BoardAPIError) as err:
            await world.human.revoke_token(handle)
        assert err.value.code == "NOT_FOUND"
    assert (await world.human.me())["handle"] == "alice"


def database_bytes(where: Where) -> bytes:
    """Everything the database holds: the SQLite file and its WAL, or every row on PostgreSQL."""
    if isinstance(where, PgDatabase):
        tables = [t for (t,) in db_rows(where, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return "\n".join(str(row) for t in tables for row in db_rows(where, f"SELECT * FROM {t}")).encode()
    data = where.read_bytes()
    wal = Path(f"{where}-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


async def test_raw_tokens_never_reach_the_database_file(world: World) -> None:
    board = world.board
    login = await auth.login_link_token(board.ctx, "alice")
    secrets = [login, world.human.token, world.bot.token, world.peer.token, world.other.token]
    rotated = await world.bot.call("POST", "/api/me/rotate", json={"request_id": "rotate-1"})
    secrets.append(rotated[1]["token"])
    status, made = await world.human.call(
        "POST", "/api/invites", json={"workspace": "proj", "uses": 2, "request_id": "invite-1"}
    )
    assert status == 201
    secrets.append(made["invite"])

    stored = database_bytes(board.db_path)
    for secret in secrets:
        assert secret and secret.encode() not in stored, f"{(secret or '')[:3]}... is stored in the clear"
        assert hashlib.sha256(secret.encode()).hexdigest().encode() in stored


async def test_a_retried_invite_makes_no_second_invite_and_keeps_no_code(world: World) -> None:
    body = {"workspace": "proj", "uses": 1, "request_id": "invite-again"}
    status, first = await world.human.call("POST", "/api/invites", json=body)
    before = snapshot(world.board.db_path)
    status_again, again = await world.human.call("POST", "/api/invites", json=body)

    assert (status, status_again) == (201, 201)
    assert snapshot(world.board.db_path) == before
    assert again["workspace"] == "proj" and again["invite"] is None
    assert first["invite"].encode() not in database_bytes(world.board.db_path)
    registered, _ = await register(world.board, handle="invited", invite=first["invite"])
    assert registered == 201


# -- presence -----------------------------------------------------------------------


async def presence_of(world: World, handle: str) -> tuple[str, str | None]:
    agent = await world.human.agent(handle)
    return agent["presence"], agent["last_seen_at"]


async def test_a_call_makes_a_bot_active(world: World) -> None:
    assert await presence_of(world, "pb") == ("away", None)
    await world.bot.me()
    state, seen = await presence_of(world, "pb")
    assert state == "active" and seen is not None


async def test_last_seen_is_written_at_most_every_30_seconds(
    clocked_world: World, clock: ManualClock
) -> None:
    board = clocked_world.board
    stats = board.ctx.db.stats

    def last_seen() -> str | None:
        return db_rows(board.db_path, "SELECT last_seen_at FROM agents WHERE handle = 'pb'")[0][0]

    writes = stats.writes
    for _ in range(10):
        await clocked_world.bot.me()
    assert stats.writes - writes == 1
    first = last_seen()
    assert first == iso(clock.now())

    clock.advance(29)
    writes = stats.writes
    for _ in range(5):
        await clocked_world.bot.channels()
    assert stats.writes - writes == 0
    assert last_seen() == first

    clock.advance(2)
    await clocked_world.bot.me()
    assert stats.writes - writes == 1
    assert last_seen() == iso(clock.now()) != first


async def test_presence_fades_with_time(clocked_world: World, clock: ManualClock) -> None:
    await clocked_world.bot.me()
    expected = [(0, "active"), (299, "active"), (2, "recent"), (3300, "idle"), (82800, "away")]
    for step, state in expected:
        clock.advance(step)
        agent = (await clocked_world.human.agents(workspace="proj"))["agents"]
        assert {a["handle"]: a["presence"] for a in agent}["pb"] == state


# -- roster -------------------------------------------------------------------------


async def handles(client: BoardClient, **params: Any) -> list[str]:
    return [a["handle"] for a in (await client.agents(**params))["agents"]]


async def test_a_bot_sees_its_workspace_and_the_humans_only(world: World) -> None:
    assert await handles(world.bot) == ["alice", "pb", "pb2"]
    assert await handles(world.other) == ["alice", "ob"]
    assert await handles(world.bot, workspace="proj") == ["alice", "pb", "pb2"]
    for workspace in ("other", "admin"):
        with pytest.raises(BoardAPIError) as err:
            await world.bot.agents(workspace=workspace)
        assert err.value.code == "NOT_FOUND"
    for handle in ("ob", "ab", "board"):
        with pytest.raises(BoardAPIError) as err:
            await world.bot.agent(handle)
        assert err.value.code == "NOT_FOUND"
    assert (await world.bot.agent("alice"))["kind"] == "human"
    assert (await world.bot.agent("PB2"))["handle"] == "pb2"


async def test_humans_see_every_workspace(world: World) -> None:
    assert await handles(world.human) == ["ab", "alice", "ob", "pb", "pb2"]
    assert await handles(world.human, workspace="other") == ["alice", "ob"]
    assert (await world.human.agent("ob"))["workspace"] == "other"


async def test_an_admin_bot_sees_its_own_workspace_unless_it_names_another(world: World) -> None:
    assert await handles(world.admin_bot) == ["ab", "alice"]
    assert await handles(world.admin_bot, workspace="proj") == ["alice", "pb", "pb2"]


async def test_the_roster_pages_by_handle(world: World) -> None:
    first = await world.human.agents(limit=2)
    assert [a["handle"] for a in first["agents"]] == ["ab", "alice"]
    assert first["has_more"] is True
    rest = await world.human.agents(after=first["agents"][-1]["handle"])
    assert [a["handle"] for a in rest["agents"]] == ["ob", "pb", "pb2"]


async def test_a_revocation_racing_a_first_lookup_still_stops_the_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup that read the token just before the revocation must not cache it afterwards."""
    ctx = world.board.ctx
    token = world.bot.token
    assert token is not None
    ctx.tokens.forget_agent((await auth.authenticate(ctx, token)).agent_id)
    real_read = ctx.db.read
    read_done, go_on = asyncio.Event(), asyncio.Event()

    async def slow_read(fn: Any) -> Any:
        result = await real_read(fn)
        read_done.set()
        await go_on.wait()
        return result

    monkeypatch.setattr(ctx.db, "read", slow_read)
    lookup = asyncio.create_task(auth.authenticate(ctx, token))
    await read_done.wait()
    monkeypatch.setattr(ctx.db, "read", real_read)
    human = await auth.authenticate(ctx, world.human.token)
    await auth.revoke_bot_token(ctx, human, "pb")
    go_on.set()
    await lookup  # it began before the revocation: it may still succeed

    with pytest.raises(Unauthenticated):
        await auth.authenticate(ctx, token)
    await refused(world.bot.me(), "UNAUTHENTICATED")


def test_tokens_cached_together_expire_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries put at one moment (a thousand daemons connecting, then re-polling after each
    post) used to expire at one moment, ten seconds on, and the next post read every token
    again before it was answered: `bench wake`'s long-polls of 1,000 bots took 0.8 to 1.1 s
    for those posts against 0.35 for the rest. Each entry now lives 10 to 20 s, drawn apart."""
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])  # the cache reads time.monotonic()
    cache = tokencache.TokenCache()
    hashes = [f"h{i}" for i in range(400)]
    for i, token_hash in enumerate(hashes):
        cache.put(token_hash, Principal(i + 1, f"bot{i}", "bot"), cache.generation)

    def alive_at(seconds: float) -> int:
        now[0] = 1000.0 + seconds
        return sum(cache.get(h) is not None for h in hashes)

    assert alive_at(9.99) == 400
    expired = [400 - alive_at(second) for second in range(10, 21)]  # by 10 s, 11 s, ... 20 s
    assert expired[-1] == 400, expired
    assert max(later - earlier for earlier, later in itertools.pairwise(expired)) < 200, expired
