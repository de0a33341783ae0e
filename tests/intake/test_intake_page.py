"""The /intake page in Chromium: a human adds a source, maps a repository, and the forge's
issue lands where the mapping says; then removes the mapping and deletes the source."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from board.client import BoardAPIError
from tests.support.boardtest import World, populate, snapshot, start_board, stop_board
from tests.support.browser_support import signed_in_tab
from tests.support.forge import FakeForge
from tests.support.pages_support import pages_as, sign_in

SECRET = "a-webhook-secret-typed-on-a-page"


async def test_a_source_set_on_the_page_turns_an_issue_into_a_thread(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    fake = FakeForge("forgejo", world.board.url, "acme", SECRET)
    api = await fake.start()
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.goto(world.board.url + "/intake")
    add = page.locator("#add-source")
    await add.locator("input[name=name]").fill("acme")
    await add.locator("select[name=forge]").select_option("forgejo")
    await add.locator("input[name=secret]").fill(SECRET)
    await add.locator("input[name=api_url]").fill(api)
    await add.locator("input[name=api_token]").fill("forge-token-typed-once")
    await add.get_by_role("button", name="Add source").click()
    source = page.locator("#source-acme")
    await expect(source).to_contain_text("Secret set · API token set")
    assert SECRET not in await page.content() and "forge-token-typed-once" not in await page.content()

    mapping = source.locator("form.add-mapping")
    await mapping.locator("input[name=repository]").fill("acme/app")
    await mapping.locator("input[name=label]").fill("bug")
    await mapping.locator("input[name=workspace]").fill("proj")
    await mapping.locator("input[name=channel]").fill("issues")
    await mapping.locator("input[name=bot]").fill("pb")
    await mapping.get_by_role("button", name="Map repository").click()
    row = page.locator("#source-acme .intake-mappings tbody tr")
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("acme/app")
    await expect(row).to_contain_text("@pb")
    await tab.shot("intake-mapped")

    # The forge's side: an issue labelled bug becomes a thread in proj's #issues mentioning pb.
    sent = await fake.send(fake.opened(fake.issue(7, title="Crash on start", labels=("bug",))))
    assert sent.status == 200 and sent.answer["status"] == "accepted", sent.answer
    woken = await world.bot.wake()
    assert [m["id"] for m in woken["messages"]] == [sent.answer["thread_id"]]
    await page.goto(world.board.url + "/intake")
    await expect(page.locator(".intake-log tbody tr").first).to_contain_text("accepted")
    await tab.shot("intake-delivered")

    # Changing the source's settings with its secret left empty keeps the secret.
    settings = source.locator("details.source-settings")
    await settings.locator("summary").click()
    await settings.locator("input[name=api_url]").fill(api + "/")
    await settings.get_by_role("button", name="Save").click()
    again = await fake.send(fake.commented(fake.issue(7, labels=("bug",)), "still broken"))
    assert again.status == 200, again.answer

    await source.get_by_role("button", name="Remove the mapping of acme/app for label bug").click()
    await expect(page.locator("#source-acme .intake-mappings tbody tr")).to_contain_text(
        "No repository mapped"
    )
    await page.locator("#source-acme details.source-settings summary").click()
    await page.locator("#source-acme input[name=confirm]").fill("acme")
    await page.locator("#source-acme").get_by_role("button", name="Delete source").click()
    await expect(page.locator("#source-acme")).to_have_count(0)
    assert tab.errors == []
    await fake.close()


async def test_the_page_forms_refuse_a_bot_and_a_wrong_confirmation(world: World) -> None:
    await world.human.request(
        "PUT", "/api/intake/sources/acme", json={"forge": "github", "secret": SECRET, "mappings": []}
    )
    alice = await sign_in(world.board)
    before = snapshot(world.board.db_path)
    status, page = await alice.post("/intake/sources/acme/delete", {"confirm": "acm"})
    assert status == 422 and "Type the source's name, acme" in html.unescape(page)
    status, _ = await alice.post("/intake/sources/acme/mappings/remove", {"repository": "acme/app"})
    assert status == 404
    assert snapshot(world.board.db_path) == before
    await alice.close()
    # The services refuse a bot whatever the transport: the page's forms call the same ones.
    with pytest.raises(BoardAPIError) as refused:
        await world.bot.request("PUT", "/api/intake/sources/acme", json={"forge": "github"})
    assert refused.value.code == "FORBIDDEN"
    assert snapshot(world.board.db_path) == before


async def test_a_payload_url_on_the_boards_own_machine_says_a_forge_cannot_reach_it(
    world: World, tmp_path: Path
) -> None:
    """A board installed with its defaults shows http://127.0.0.1:8080/api/intake/<name>: a person
    pasted it into GitHub, whose deliveries then failed to connect with no word from the board."""
    source = {"forge": "github", "secret": SECRET, "mappings": []}
    await world.human.request("PUT", "/api/intake/sources/acme", json=source)
    [(status, page)] = await pages_as(world.board, "alice", "/intake")
    assert status == 200 and f"{world.board.url}/api/intake/acme" in page
    assert 'class="note-warn loopback"' in page and "BOARD_PUBLIC_URL" in page

    # Plain HTTP: the test signs in over it (an https board sets its cookie Secure).
    public = await start_board(tmp_path / "public", public_url="http://board.example")
    try:
        await (await populate(public)).human.request("PUT", "/api/intake/sources/acme", json=source)
        [(status, page)] = await pages_as(public, "alice", "/intake")
        assert status == 200 and "http://board.example/api/intake/acme" in page
        assert "loopback" not in page
    finally:
        await stop_board(public)
