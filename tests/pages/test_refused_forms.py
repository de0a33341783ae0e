"""A refused post or reply shows its page again with the refusal and the text typed in place.

Bodies over the 16,000-character limit are refused (413, LIMIT_EXCEEDED); the form is sent as a browser
sends it, and in a real browser whose textarea lost its ``maxlength`` (a paste the page
did not stop). A form whose CSRF token fails is shown no text: that is the error page.
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from urllib.parse import urlencode

from playwright.async_api import Browser, expect

from board.server.pages.routing import FORM_TOO_LARGE
from board.server.services.posting import MAX_BODY
from tests.support.boardtest import World, db_rows
from tests.support.browser_support import signed_in_tab
from tests.support.pages_support import sign_in

TYPED = "A long report <b>kept</b>, line one\nline two & more. " + "x" * MAX_BODY


def textarea(page: str, form_id: str) -> str:
    found = re.search(rf'<form [^>]*id="{form_id}">(.*?)</form>', page, re.S)
    assert found, f"no form {form_id}"
    area = re.search(r"<textarea[^>]*>\n?(.*?)</textarea>", found.group(1), re.S)
    assert area
    return html.unescape(area.group(1))


def messages(world: World) -> int:
    return int(db_rows(world.board.db_path, "SELECT count(*) FROM messages")[0][0])


async def test_a_refused_post_or_reply_keeps_its_text_on_its_page(world: World) -> None:
    root = await world.bot.post("a root", channel="lobby", workspace="proj")
    before = messages(world)
    session = await sign_in(world.board)
    try:
        status, page = await session.post("/c/lobby", {"workspace": "proj", "body": TYPED})
        assert status == 413 and textarea(page, "compose-form") == TYPED
        assert '<p class="refusal" role="alert" data-code="LIMIT_EXCEEDED">' in page
        assert 'id="roots"' in page and "#lobby" in page  # the channel's page, not the error page

        back = f"/c/lobby?workspace=proj&thread={root['id']}"
        status, page = await session.post(f"/t/{root['id']}", {"body": TYPED, "back": back})
        assert status == 413 and textarea(page, "reply-form") == TYPED
        assert textarea(page, "compose-form") == ""  # only the form that was sent is filled

        status, page = await session.post(f"/t/{root['id']}", {"body": TYPED})
        assert status == 413 and textarea(page, "reply-form") == TYPED and "Thread #" in page

        status, page = await session.post("/c/lobby", {"workspace": "proj", "body": TYPED}, csrf="forged")
        assert status == 403 and "line one" not in page and 'class="card error"' in page
    finally:
        await session.close()
    assert messages(world) == before  # nothing refused was written


async def test_a_form_over_the_board_s_limit_on_a_body_gets_the_error_page(world: World) -> None:
    """Past 1 MB the board reads none of the form, so it cannot be shown again: the page
    says so, as a page (the API's JSON error would be read as a blank page of text)."""
    before = messages(world)
    session = await sign_in(world.board)
    try:
        form = urlencode({"workspace": "proj", "body": "x" * (1024 * 1024), "csrf": session.csrf})
        sent = io.BytesIO(form.encode())  # as a stream: aiohttp warns of a large body given whole
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        async with session.http.post(f"{session.url}/c/lobby", data=sent, headers=headers) as resp:
            status, page = resp.status, await resp.text()
        assert status == 413 and 'class="card error"' in page and "<!doctype html>" in page.lower()
        assert html.escape(FORM_TOO_LARGE) in page and "LIMIT_EXCEEDED" not in page[:20]
    finally:
        await session.close()
    assert messages(world) == before


async def test_in_a_browser_the_refused_text_is_back_in_the_form(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + "/c/lobby?workspace=proj")
    area = page.locator("#compose-form textarea[name=body]")
    await area.evaluate("node => node.removeAttribute('maxlength')")
    await area.fill(TYPED)
    await page.locator("#compose-form button[type=submit]").click()
    await expect(page.locator("#compose-form .refusal")).to_contain_text("at most 16,000 are allowed")
    await expect(page.locator("#compose-form textarea[name=body]")).to_have_value(TYPED)
    await tab.shot("refused-post")
    # Shortened to fit, it goes through from the same form.
    await page.locator("#compose-form textarea[name=body]").fill(TYPED[:200])
    await page.locator("#compose-form button[type=submit]").click()
    await page.wait_for_url("**thread=*")
    await expect(page.locator("#compose-form .refusal")).to_have_count(0)
    await expect(page.locator("#roots .msg").last).to_contain_text("line two & more.")
    await tab.shot("post-after-refusal")
    assert tab.errors == []


def form_input(page: str, form_id: str, name: str) -> str:
    found = re.search(rf'<form [^>]*id="{form_id}">(.*?)</form>', page, re.S)
    assert found, f"no form {form_id}"
    value = re.search(rf'<input name="{name}"[^>]*value="([^"]*)"', found.group(1))
    assert value, f"no {name} in {form_id}"
    return html.unescape(value.group(1))


async def test_a_refused_knowledge_form_keeps_its_reason_on_the_documents_page(world: World) -> None:
    await world.bot.put_document("notes.md", "# Notes\n\nsecret\n", 0, "start")
    session = await sign_in(world.board)
    try:
        reason = 'a leaked key, "rotated" <today>'
        form = {"workspace": "proj", "revision": "1", "reason": reason, "confirm": "yes"}
        status, page = await session.post("/kb/proj/notes.md/redact", form)
        assert status == 422 and 'id="redact-form"' in page and "secret" in page  # the document's page
        assert form_input(page, "redact-form", "reason") == reason
        assert form_input(page, "delete-form", "reason") == ""  # only the form that was sent
        refusal = re.search(r'id="redact-form">.*?<p class="refusal"[^>]*>(.*?)</p>', page, re.S)
        assert refusal and "Type redact" in refusal.group(1)
    finally:
        await session.close()
