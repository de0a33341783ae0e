"""The one call pipeline: what a request id costs and keeps, on the API, the pages and MCP.

A post with a request id is one write transaction, its answer kept in it; a page form
sent twice posts once, and a page post is under the write limit like any other write;
an MCP tool call with a request id is replayed as the API's call is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser as Chromium
from playwright.async_api import expect

from board.client import BoardAPIError
from tests.support.boardtest import StoreChoice, World, db_rows, snapshot, start_board, stop_board
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import Browser, sign_in
from tests.test_mcp import TRANSPORTS, call, connect, refused

FORM_REQUEST_ID = re.compile(r'name="request_id" value="([^"]+)"')


def _writes(world: World) -> tuple[int, int]:
    """Write transactions (the writer's batches) and write jobs committed so far."""
    stats = world.board.ctx.db.stats
    return stats.batches, stats.writes


def _kept(world: World, request_id: str) -> list[tuple[int, str]]:
    sql = "SELECT status, response FROM requests WHERE request_id = ?"
    return [(row[0], row[1]) for row in db_rows(world.board.db_path, sql, (request_id,))]


def _count(world: World, body: str) -> int:
    return int(db_rows(world.board.db_path, "SELECT count(*) FROM messages WHERE body = ?", (body,))[0][0])


async def test_a_post_with_a_request_id_is_one_write_transaction(world: World) -> None:
    await world.bot.post("warm up", channel="lobby")  # its presence is written now, not below
    before = _writes(world)
    posted = await world.bot.post("counted", channel="lobby", request_id="one-transaction")
    after = _writes(world)
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1), "effect and kept answer: one write"
    [(status, response)] = _kept(world, "one-transaction")
    assert (status, json.loads(response)) == (201, posted)
    # The retry is a read: no write at all, the same answer.
    again = await world.bot.post("counted", channel="lobby", request_id="one-transaction")
    assert again == posted and _writes(world) == after
    assert _count(world, "counted") == 1


async def test_a_claim_keeps_its_answer_in_its_own_write(world: World) -> None:
    root = await world.human.post("a job", channel="lobby", workspace="proj")
    await world.bot.me()  # presence
    before = _writes(world)
    status, claimed = await world.bot.call(
        "POST", f"/api/threads/{root['id']}/claim", json={"note": "mine", "request_id": "claim-1"}
    )
    assert status == 201 and _writes(world)[0] - before[0] == 1
    [(kept_status, kept)] = _kept(world, "claim-1")
    assert (kept_status, json.loads(kept)) == (201, claimed)


async def test_an_answer_rendered_after_its_write_is_kept_by_a_second_one(world: World) -> None:
    """A route whose answer is not its write job's result keeps the applied mark, then the answer."""
    await world.human.me()
    before = _writes(world)
    body = {"slug": "later", "request_id": "ws-1"}
    status, made = await world.human.call("POST", "/api/workspaces", json=body)
    assert status == 201 and _writes(world)[0] - before[0] == 2
    status, again = await world.human.call("POST", "/api/workspaces", json=body)
    assert (status, again) == (201, made)


# -- pages ----------------------------------------------------------------------------------


async def _form_request_id(browser: Browser, path: str) -> str:
    status, page = await browser.get(path)
    assert status == 200, page
    found = FORM_REQUEST_ID.search(page)
    assert found is not None, f"{path} renders its post form with a request id"
    return found.group(1)


async def test_a_page_form_sent_twice_posts_once(world: World) -> None:
    browser = await sign_in(world.board)
    try:
        rid = await _form_request_id(browser, "/c/lobby?workspace=proj")
        form = {"workspace": "proj", "body": "sent twice", "request_id": rid}
        first = await browser.post("/c/lobby", form)
        second = await browser.post("/c/lobby", form)
        assert first[0] == 303 and second == first, "the second sending leads where the first did"
        assert _count(world, "sent twice") == 1
        # The same id with another text is refused, and posts nothing.
        before = snapshot(world.board.db_path)
        status, page = await browser.post("/c/lobby", {**form, "body": "another text"})
        assert status == 409 and 'data-code="REQUEST_ID_REUSE"' in page
        assert snapshot(world.board.db_path) == before
        # A new render is a new id: the same text posts again.
        again = {**form, "request_id": await _form_request_id(browser, "/c/lobby?workspace=proj")}
        assert (await browser.post("/c/lobby", again))[0] == 303
        assert _count(world, "sent twice") == 2
    finally:
        await browser.close()


async def test_a_reply_form_sent_twice_replies_once(world: World) -> None:
    root = await world.bot.post("a thread", channel="lobby")
    browser = await sign_in(world.board)
    try:
        rid = await _form_request_id(browser, f"/t/{root['id']}")
        form = {"body": "one reply", "request_id": rid}
        first = await browser.post(f"/t/{root['id']}", form)
        assert first[0] == 303 and await browser.post(f"/t/{root['id']}", form) == first
        assert _count(world, "one reply") == 1
    finally:
        await browser.close()


async def test_a_page_post_over_the_write_limit_is_refused_and_posts_nothing(
    tmp_path: Path, store: StoreChoice
) -> None:
    board = await start_board(tmp_path, store=store, write_rate=0.01, write_burst=1)
    try:
        browser = await sign_in(board, "carol")
        try:
            form = {"workspace": "admin", "body": "the one"}
            assert (await browser.post("/c/lobby", form))[0] == 303
            before = snapshot(board.db_path)
            status, page = await browser.post("/c/lobby", {**form, "body": "too fast"})
            assert status == 429 and 'data-code="RATE_LIMITED"' in page, page
            assert snapshot(board.db_path) == before, "nothing is written"
        finally:
            await browser.close()
    finally:
        await stop_board(board)


async def test_the_post_form_in_a_browser_posts_once_when_sent_again(
    chromium: Chromium, world: World, tmp_path: Path
) -> None:
    tab = await signed_in_tab(chromium, world, tmp_path)
    await tab.page.goto(world.board.url + "/c/lobby?workspace=proj")
    form = tab.page.locator(".stream form.compose")
    sent: dict[str, str | float | bool] = {
        "csrf": await form.locator("input[name=csrf]").input_value(),
        "request_id": await form.locator("input[name=request_id]").input_value(),
        "workspace": "proj",
        "body": "from the browser",
    }
    await tab.page.fill(".stream textarea[name=body]", "from the browser")
    await tab.page.click(".stream button[type=submit]")
    await tab.page.wait_for_url("**thread=*")
    await expect(tab.page.locator("#roots .msg").last).to_contain_text("from the browser")
    await tab.shot("pipeline-posted-from-the-form")
    # The browser sends the same form again (a resent POST): led to the same thread, no second post.
    again = await tab.page.request.post(world.board.url + "/c/lobby", form=sent, max_redirects=0)
    assert again.status == 303 and tab.page.url.endswith(again.headers["location"])
    assert _count(world, "from the browser") == 1 and tab.errors == []


# -- MCP ------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_call_with_a_request_id_takes_effect_once(world: World, transport: str) -> None:
    async with connect(world.board, world.bot.token or "", transport) as client:
        first = await call(client, "post", body="by tool", channel="lobby", request_id="tool-1")
        again = await call(client, "post", body="by tool", channel="lobby", request_id="tool-1")
        assert again == first and _count(world, "by tool") == 1
        before = snapshot(world.board.db_path)
        reused = await refused(client, "post", body="other", channel="lobby", request_id="tool-1")
        assert reused["code"] == "REQUEST_ID_REUSE"
        malformed = await refused(client, "post", body="x", channel="lobby", request_id="has spaces!")
        assert malformed["code"] == "INVALID_ARGUMENT"
        assert snapshot(world.board.db_path) == before
        # A claim by tool is replayed too, and a read takes no request id.
        claim = await call(client, "claim", action="claim", id=first["id"], request_id="tool-claim")
        assert await call(client, "claim", action="claim", id=first["id"], request_id="tool-claim") == claim
        unknown = await refused(client, "read", action="message", id=first["id"], request_id="r")
        assert unknown["code"] == "INVALID_ARGUMENT"
    # The API's retry of the tool's call is the same call: its first answer again.
    with pytest.raises(BoardAPIError) as other:
        await world.bot.post("by tool, changed", channel="lobby", request_id="tool-1")
    assert other.value.code == "REQUEST_ID_REUSE"
