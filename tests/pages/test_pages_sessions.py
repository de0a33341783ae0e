"""Signing in and the refusals that change nothing: links, passwords, CSRF, sessions on the API."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from markupsafe import escape

from board.server.clock import ManualClock
from board.server.errors import RateLimited
from board.server.pages.routing import local_path
from board.server.services import sessions
from board.server.services.ratelimit import RateLimiter
from tests.support.boardtest import Board, World, db_rows, held, snapshot, start_board, stop_board
from tests.support.pages_support import browser, login_link, sign_in


async def test_a_link_signs_in_once_and_its_cookie_is_strict(world: World) -> None:
    b = browser(world.board)
    link = await login_link(world.board, "alice")
    token = link.split("=", 1)[1]
    status, page = await b.get(link)
    assert status == 200 and "Sign in as alice" in page
    async with b.http.post(world.board.url + "/login", data={"token": token}, allow_redirects=False) as resp:
        assert resp.status == 303
        cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # plain HTTP on loopback; Secure comes with TLS
    before = snapshot(world.board.db_path)
    again = browser(world.board)
    status, page = await again.get(link)
    assert status == 401 and "already used" in page and "board admin user link" in page
    status, page = await again.post("/login", {"token": token})
    assert status == 401 and "already used" in page
    assert snapshot(world.board.db_path) == before
    await b.close()
    await again.close()


async def test_the_cookie_is_secure_when_the_board_is_announced_as_https(tmp_path: Path) -> None:
    """Behind a TLS proxy the board sees plain HTTP; the browser's address is the https one."""
    board = await start_board(tmp_path, public_url="https://board.example/")
    b = browser(board)
    link = await login_link(board, "alice")
    async with b.http.post(
        board.url + "/login", data={"token": link.split("=", 1)[1]}, allow_redirects=False
    ) as resp:
        assert resp.status == 303
        cookie = resp.headers["Set-Cookie"]
    assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    await b.close()
    await stop_board(board)


async def test_an_expired_link_says_so(clocked_world: World, clock: ManualClock) -> None:
    board = clocked_world.board
    link = await login_link(board, "alice")
    clock.advance(board.ctx.settings.login_link_ttl + 1)
    b = browser(board)
    status, page = await b.get(link)
    assert status == 401 and "expired" in page
    before = snapshot(board.db_path)
    status, _ = await b.post("/login", {"token": link.split("=", 1)[1]})
    assert status == 401
    assert snapshot(board.db_path) == before
    await b.close()


async def test_forms_without_their_own_csrf_token_change_nothing(world: World) -> None:
    alice = await sign_in(world.board)
    mallory = await sign_in(world.board)  # another session (of the same human, even)
    before = snapshot(world.board.db_path)
    form = {"workspace": "proj", "body": "forged post"}
    for csrf in ("", mallory.csrf, "x" * 32):
        status, page = await alice.post("/c/lobby", form, csrf=csrf)
        assert status == 403 and "stale or not from this board" in page
    assert snapshot(world.board.db_path) == before
    status, _ = await alice.post("/c/lobby", form)
    assert status == 303
    assert db_rows(world.board.db_path, "SELECT count(*) FROM messages WHERE body = 'forged post'") == [(1,)]
    await alice.close()
    await mallory.close()


async def test_the_api_takes_the_session_with_csrf_on_mutations(world: World) -> None:
    alice = await sign_in(world.board)
    url = world.board.url
    async with alice.http.get(url + "/api/me") as resp:
        assert resp.status == 200 and (await resp.json())["handle"] == "alice"
    body = {"channel": "lobby", "workspace": "proj", "body": "from the page"}
    before = snapshot(world.board.db_path)
    for headers in ({}, {"X-CSRF-Token": "wrong"}):
        async with alice.http.post(url + "/api/messages", json=body, headers=headers) as resp:
            assert resp.status == 403
            assert (await resp.json())["error"]["code"] == "FORBIDDEN"
    assert snapshot(world.board.db_path) == before
    async with alice.http.post(
        url + "/api/messages", json=body, headers={"X-CSRF-Token": alice.csrf}
    ) as resp:
        assert resp.status == 201 and (await resp.json())["author"] == "alice"
    await alice.close()


async def test_signing_out_ends_the_session_everywhere(world: World) -> None:
    alice = await sign_in(world.board)
    cookie = alice.cookie()
    status, location = await alice.post("/logout", {})
    assert status == 303 and location == "/login"
    async with aiohttp.ClientSession(cookies={sessions.COOKIE: cookie}) as http:
        async with http.get(world.board.url + "/settings", allow_redirects=False) as resp:
            assert resp.status == 303 and resp.headers["Location"].startswith("/login")
        async with http.get(world.board.url + "/api/me") as resp:
            assert resp.status == 401
    await alice.close()


async def _held_messages(session: Any, url: str, since: int) -> dict[str, Any]:
    """A long-poll of the lobby held with the session's cookie: its status and answer."""
    lobby = {"workspace": "proj", "channel": "lobby", "since": str(since), "wait": "30"}
    async with session.http.get(url + "/api/messages", params=lobby) as resp:
        return {"status": resp.status, **(await resp.json())}


@pytest.mark.parametrize("how", ["signed out", "another session's new password"])
async def test_a_sessions_held_long_polls_are_refused_as_soon_as_it_ends(world: World, how: str) -> None:
    """A long-poll held with a session is refused as soon as the session ends, not at the end
    of its wait, and what is posted after takes no part in it; another session's goes on."""
    alice, other = await sign_in(world.board), await sign_in(world.board)
    url = world.board.url
    since = int((await world.bot.me())["cursor"])
    signed_out = asyncio.create_task(_held_messages(alice, url, since))
    goes_on = asyncio.create_task(_held_messages(other, url, since))
    await held(world.board, 2)
    started = time.monotonic()
    if how == "signed out":
        assert (await alice.post("/logout", {}))[0] == 303
    else:
        assert (await other.post("/settings/password", {"password": "correct horse battery"}))[0] == 200
    answer = await asyncio.wait_for(signed_out, 10)
    assert answer["status"] == 401 and answer["error"]["code"] == "UNAUTHENTICATED"
    assert time.monotonic() - started < 10  # its wait was 30 s
    posted = await world.bot.post("after the sign-out", channel="lobby")
    answer = await asyncio.wait_for(goes_on, 35)
    assert answer["status"] == 200
    assert [m["id"] for m in answer["messages"]] in ([], [posted["id"]])
    await alice.close()
    await other.close()


async def test_password_sign_in_and_its_limits(board: Board) -> None:
    alice = await sign_in(board, "alice")
    status, page = await alice.post("/settings/password", {"password": "short"})
    assert status == 422
    status, page = await alice.post("/settings/password", {"password": "correct horse battery"})
    assert status == 200 and "Password saved" in page
    status, page = await alice.post("/settings/password", {"current": "nope", "password": "another secret!"})
    assert status == 403
    await alice.close()
    fresh = browser(board)
    # A wrong password gives the form back, saying so, the name as typed (escaped), going on to
    # the same page: only the password is typed again.
    for typed in ("alice", '"><script>x</script>'):
        status, page = await fresh.post("/login", {"handle": typed, "password": "nope", "next": "/settings"})
        assert status == 401 and '<p class="refusal" id="refusal">Wrong name or password.</p>' in page
        assert f'name="handle" autocomplete="username" required value="{escape(typed)}"' in page
        assert 'name="next" value="/settings"' in page and "<script>x" not in page
    status, location = await fresh.post(
        "/login", {"handle": "alice", "password": "correct horse battery", "next": "/settings"}
    )
    assert status == 303 and location == "/settings"
    status, _ = await fresh.get("/settings")
    assert status == 200
    await fresh.close()


async def test_wrong_passwords_back_off_and_the_right_one_ends_the_wait(
    clocked_world: World, clock: ManualClock
) -> None:
    board = clocked_world.board
    alice = await sign_in(board, "alice")
    status, _ = await alice.post("/settings/password", {"password": "correct horse battery"})
    assert status == 200
    await alice.close()
    guesser = browser(board)

    async def attempt(password: str) -> int:
        status, _ = await guesser.post("/login", {"handle": "alice", "password": password})
        return status

    assert [await attempt("wrong guess") for _ in range(5)] == [401] * 5
    before = snapshot(board.db_path)
    assert await attempt("correct horse battery") == 429  # waits 1 s: even the right one
    clock.advance(1)
    assert await attempt("wrong guess") == 401
    assert [await attempt("wrong guess") for _ in range(2)] == [429, 429]  # now 2 s
    clock.advance(1.5)
    assert await attempt("correct horse battery") == 429
    assert snapshot(board.db_path) == before  # no session was opened by a refused try
    clock.advance(0.5)
    assert await attempt("correct horse battery") == 303
    await guesser.close()
    again = browser(board)
    status, _ = await again.post("/login", {"handle": "alice", "password": "wrong guess"})
    assert status == 401  # the right password ended the count: four free wrong ones again
    await again.close()


async def test_no_password_guessing_keeps_the_human_from_a_one_time_link(clocked_world: World) -> None:
    board = clocked_world.board  # a clock that stands still: no bucket refills while argon2 works
    mallory = browser(board)
    refusals = []
    for handle in ["alice"] * 6 + [f"nobody-{n}" for n in range(6)]:
        status, page = await mallory.post("/login", {"handle": handle, "password": "wrong guess"})
        refusals.append(status)
    assert refusals[:6] == [401] * 5 + [429]  # alice's password waits at this address
    assert refusals[-1] == 429 and "sign-in attempts from this address" in page  # then any account
    for _ in range(3):  # the same address, the same account: a link still signs alice in
        b = browser(board)
        link = await login_link(board, "alice")
        status, location = await b.post("/login", {"token": link.split("=", 1)[1], "next": "/settings"})
        assert (status, location) == (303, "/settings")
        status, _ = await b.get("/settings")
        assert status == 200
        await b.close()
    await mallory.close()


def test_the_wait_is_per_account_at_an_address_and_grows_to_its_cap() -> None:
    now = [0.0]
    limits = sessions.SignInLimits(lambda: now[0])
    waits = []
    for _ in range(16):
        limits.check_password("10.0.0.1", "Alice")
        limits.failed("10.0.0.1", "alice")
        try:
            limits.check_password("10.0.0.1", "alice")
            waits.append(0.0)
        except RateLimited as exc:
            waits.append(exc.retry_after)
        now[0] += 400  # past any wait, and the address bucket refilled
    assert waits == [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]
    limits.check_password("10.0.0.2", "alice")  # alice from elsewhere: no wait
    limits.failed("10.0.0.1", "alice")
    limits.check_password("10.0.0.1", "bob")  # another account at that address: no wait
    limits.succeeded("10.0.0.1", "ALICE")
    limits.check_password("10.0.0.1", "alice")


async def test_a_sign_in_form_from_another_site_is_refused(world: World) -> None:
    link = await login_link(world.board, "alice")
    before = snapshot(world.board.db_path)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            world.board.url + "/login",
            data={"token": link.split("=", 1)[1]},
            headers={"Origin": "http://evil.example"},
            allow_redirects=False,
        ) as resp,
    ):
        assert resp.status == 403
    assert snapshot(world.board.db_path) == before


OFF_THE_BOARD = [
    "//evil.example/x",
    "/\t/evil.example",  # a browser drops the tab: //evil.example
    "/\n/evil.example",
    "/\\evil.example",  # a browser reads the backslash as a slash
    "\\\\evil.example",
    " //evil.example",  # a browser trims the space
    "\x01//evil.example",
    "https://evil.example/",
    "javascript:alert(1)",
    "evil.example",
]


@pytest.mark.parametrize("target", OFF_THE_BOARD)
def test_a_target_a_browser_would_read_as_another_site_is_not_followed(target: str) -> None:
    assert local_path(target) == "/"
    assert local_path(target, "/t/5") == "/t/5"


def test_a_path_on_this_board_is_kept_as_a_browser_reads_it() -> None:
    assert local_path("/t/5?x=1#m2") == "/t/5?x=1#m2"
    assert local_path("/settings\r\n") == "/settings"
    assert local_path("/a\tb") == "/ab"
    assert local_path("/c/lobby\x00x") == "/"  # a control character no browser drops
    assert local_path(None) == local_path("") == "/"


async def test_sign_in_goes_only_to_a_path_on_this_board(world: World) -> None:
    for target in OFF_THE_BOARD:
        b = browser(world.board)
        link = await login_link(world.board, "alice")
        status, location = await b.post("/login", {"token": link.split("=", 1)[1], "next": target})
        assert (status, location) == (303, "/"), target
        await b.close()


async def test_a_newline_in_next_neither_spends_the_link_nor_drops_the_connection(world: World) -> None:
    b = browser(world.board)
    link = await login_link(world.board, "alice")
    status, page = await b.get(link + "&next=%2Fsettings%0D%0ASet-Cookie:%20x=1")
    assert status == 200 and "Sign in as alice" in page
    status, location = await b.post("/login", {"token": link.split("=", 1)[1], "next": "/settings\r\nX: y"})
    assert (status, location) == (303, "/settingsX: y")
    status, page = await b.get("/settings")
    assert status == 200 and "alice" in page  # signed in by that one link
    await b.close()


async def test_a_reply_goes_back_only_to_a_page_of_this_board(world: World) -> None:
    alice = await sign_in(world.board)
    root = await world.human.post("a thread", channel="lobby", workspace="proj")
    for back in ("/\t/evil.example", "/\\evil.example", "https://evil.example"):
        status, location = await alice.post(f"/t/{root['id']}", {"body": "ok", "back": back})
        assert (status, location) == (303, f"/t/{root['id']}"), back
    status, location = await alice.post(f"/t/{root['id']}", {"body": "ok", "back": "/c/lobby?thread=1"})
    assert (status, location) == (303, "/c/lobby?thread=1")
    await alice.close()


async def test_a_read_on_the_session_cookie_records_no_receipt(world: World) -> None:
    """Any site can make a browser send a GET with its cookie: ack=true wants a bearer token."""
    mention = await world.bot.post("@alice a question for you", channel="lobby")
    alice = await sign_in(world.board)
    before = snapshot(world.board.db_path)
    status, text = await alice.get("/api/inbox?ack=true")
    assert status == 403
    assert json.loads(text)["error"]["code"] == "FORBIDDEN" and "POST /api/receipts" in text
    assert snapshot(world.board.db_path) == before
    status, text = await alice.get("/api/inbox")
    assert status == 200 and [m["id"] for m in json.loads(text)["messages"]] == [mention["id"]]
    assert snapshot(world.board.db_path) == before
    page = await world.human.inbox(ack="true")  # alice's bearer token: her own client's read
    assert [m["id"] for m in page["messages"]] == [mention["id"]]
    seen = db_rows(world.board.db_path, "SELECT state FROM receipts WHERE message_id = ?", (mention["id"],))
    assert seen == [("seen",)]
    await alice.close()


async def test_mcp_does_not_take_the_browser_session(world: World) -> None:
    """Only the JSON API, whose mutations check CSRF, accepts the cookie; /mcp wants a token."""
    alice = await sign_in(world.board)
    before = snapshot(world.board.db_path)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "post", "arguments": {"channel": "lobby", "workspace": "proj", "body": "x"}},
    }
    headers = {"X-CSRF-Token": alice.csrf, "Accept": "application/json, text/event-stream"}
    async with alice.http.post(world.board.url + "/mcp", json=call, headers=headers) as resp:
        assert resp.status == 401
    assert snapshot(world.board.db_path) == before
    await alice.close()


def test_the_sign_in_limit_remembers_a_bounded_number_of_addresses() -> None:
    """Each address tried gets a bucket; a board reachable from many addresses (an IPv6 network)
    must not keep one for every address that ever tried, however many there are."""
    now = [0.0]
    limits = sessions.SignInLimits(lambda: now[0])
    kept = RateLimiter.MAX_KEYS
    for i in range(3 * kept):
        limits.check_password(f"2001:db8::{i:x}", "alice")
        now[0] += 0.01
    assert len(limits.addresses) <= kept
    now[0] += 3600  # every bucket full again: as good as never tried
    limits.check_password("10.0.0.1", "alice")
    assert len(limits.addresses) <= kept
