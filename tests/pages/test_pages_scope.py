"""Pages are a transport: every page route, for every caller, on populated data.

A signed-in human gets the page; a caller without a live session (none, a bot's,
an admin bot's, another workspace's bot's, a keeper's or the runner's token, a
signed-out or an expired session) is sent to /login with no page of data, and a
POST of theirs changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from board.server.api.discovery import canonical
from board.server.pages import all_pages
from board.server.services import auth, sessions
from board.server.store import identity
from board.server.store import sessions as session_store
from tests.support.boardtest import Board, World, db_rows, populate, snapshot, start_board, stop_board
from tests.support.fleettest import enroll_keeper
from tests.support.pages_support import Browser, sign_in
from tests.support.scope_pages import PAGE_DECISIONS

SECRET_TEXT = "please look"


async def test_every_page_route_has_a_decision(board: Board) -> None:
    pages = {(r.method, canonical(r.path)) for r in all_pages()}
    assert pages <= set(PAGE_DECISIONS), f"pages without a decision: {sorted(pages - set(PAGE_DECISIONS))}"
    public = {(r.method, canonical(r.path)) for r in all_pages() if r.public}
    assert public == {k for k, case in PAGE_DECISIONS.items() if case.public and k[1] != "/static"}


async def _facts(world: World) -> dict[str, Any]:
    root = await world.human.post(f"hello @pb, {SECRET_TEXT}", channel="lobby", workspace="proj")
    claimed = await world.bot.post("mine", channel="lobby", workspace="proj")
    await world.bot.claim(claimed["id"])
    conversation = await world.human.open_conversation(["pb"], workspace="proj")
    await world.human.call("PATCH", "/api/workspaces/proj", json={"review": "bots"})
    await world.bot.put_document("notes.md", "# Notes\n\nproposed\n", 0, "start")
    routine = {"name": "nightly", "workspace": "proj", "schedule": "0 2 * * *", "bot": "pb"}
    await world.bot.call("POST", "/api/routines", json={**routine, "prompt": f"tidy up, {SECRET_TEXT}"})
    await world.human.create_profile("proj-dev", "proj", "claude", identity=f"you are pb, {SECRET_TEXT}")
    destination = await world.human.create_destination("phone", "ntfy", url="http://127.0.0.1:9/topic")
    return {
        "destination": str(destination["id"]),
        "root": str(root["id"]),
        "claimed": str(claimed["id"]),
        "conversation_id": str(conversation["conversation"]["id"]),
        "lobby": "lobby",
        "release": "release",
    }


async def _expired_session(board: Board) -> str:
    """A session cookie of alice whose time is over."""
    human = await board.ctx.db.read(lambda conn: identity.agent_by_handle(conn, "alice"))
    assert human is not None
    cookie = "expired-session-cookie-value"

    async def write(conn: Any) -> None:
        await session_store.insert(
            conn,
            auth.hash_secret(cookie),
            human["id"],
            "csrf-of-expired",
            "2026-01-01T00:00:00Z",
            "2026-01-02T00:00:00Z",
        )

    await board.ctx.db.write(write)
    return cookie


async def _request(
    b: Board,
    method: str,
    path: str,
    form: dict[str, str] | None,
    *,
    headers: dict[str, str],
    cookies: dict[str, str],
    csrf: str,
) -> tuple[int, str, str]:
    async with aiohttp.ClientSession(cookies=cookies) as http:
        data = None if form is None else {**form, "csrf": csrf}
        async with http.request(
            method, b.url + path, data=data, headers=headers, allow_redirects=False
        ) as resp:
            if resp.content_type == "text/event-stream":
                return resp.status, "", ""
            return resp.status, await resp.text(), resp.headers.get("Location", "")


@pytest.mark.parametrize("key", sorted(PAGE_DECISIONS), ids=lambda k: f"{k[0]} {k[1]}")
async def test_page_decision_for_each_caller(key: tuple[str, str], tmp_path: Path) -> None:
    method, template = key
    case = PAGE_DECISIONS[key]
    board = await start_board(tmp_path)
    human: Browser | None = None
    signed_out: Browser | None = None
    try:
        world = await populate(board)
        facts = await _facts(world)
        keeper = await enroll_keeper(board, world.human, "box1")
        human = await sign_in(board)
        signed_out = await sign_in(board)
        signed_out_cookie = signed_out.cookie()
        await signed_out.post("/logout", {})
        facts["token_id"] = str(
            db_rows(board.db_path, "SELECT min(id) FROM tokens WHERE kind = 'human'")[0][0]
        )
        path = template
        for name, fact in case.path.items():
            path = path.replace("{" + name + "}", facts.get(fact, fact))
        path += case.query
        form = None if case.form is None else {k: facts.get(v, v) for k, v in case.form.items()}
        callers = {
            "anon": ({}, {}),
            "bot": ({"Authorization": f"Bearer {world.bot.token}"}, {}),
            "admin_bot": ({"Authorization": f"Bearer {world.admin_bot.token}"}, {}),
            "other_bot": ({"Authorization": f"Bearer {world.other.token}"}, {}),
            "human_api_token": ({"Authorization": f"Bearer {world.human.token}"}, {}),
            "keeper": ({"Authorization": f"Bearer {keeper.token}"}, {}),
            "runner": ({"Authorization": f"Bearer {await auth.runner_token(board.ctx)}"}, {}),
            "signed_out": ({}, {sessions.COOKIE: signed_out_cookie}),
            "expired": ({}, {sessions.COOKIE: await _expired_session(board)}),
        }
        if case.public:
            # A public page ignores tokens; one more caller would only spend the sign-in limit.
            callers.pop("keeper")
            callers.pop("runner")
        for role, (headers, cookies) in callers.items():
            before = snapshot(board.db_path)
            status, text, location = await _request(
                board, method, path, form, headers=headers, cookies=cookies, csrf=human.csrf
            )
            assert status == case.anon, f"{method} {template} as {role}: {status}"
            assert SECRET_TEXT not in text, f"{method} {template} as {role} showed data"
            if status == 303:
                assert location.startswith("/login"), f"{method} {template} as {role}: to {location}"
            if method == "POST" and not case.public:
                assert snapshot(board.db_path) == before, (
                    f"{method} {template} as {role} changed the database"
                )
        cookie = human.cookie()
        status, _, _ = await _request(
            board, method, path, form, headers={}, cookies={sessions.COOKIE: cookie}, csrf=human.csrf
        )
        assert status == case.human, f"{method} {template} as a signed-in human: {status}"
    finally:
        for b in (human, signed_out):
            if b is not None:
                await b.close()
        await stop_board(board)


def test_docs_list_every_page() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "pages.md").read_text(encoding="utf-8")
    missing = [f"{r.method} {r.path}" for r in all_pages() if f"| {r.method} | `{r.path}` |" not in text]
    assert not missing, f"docs/pages.md does not list: {missing}"
