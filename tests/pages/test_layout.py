"""Every page in a real browser, on a desktop and a phone, light and dark: nothing scrolls sideways,
axe-core finds nothing serious, and the shared layout (menu, channel list, times, theme) works."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from board.server.pages import all_pages
from routines import importer
from tests.support.boardtest import World, db_execute, db_rows
from tests.support.browser_support import Tab, axe_findings, new_tab, signed_in_tab, use_login_link
from tests.support.fleettest import keeper_with_bots
from tests.support.forge import FakeForge
from tests.support.pages_support import login_link

LONG_HANDLE = "reviewer-bot-with-a-long-name-01"  # 32, the longest a handle may be
UNBROKEN = "x" * 40 + "/" + "deadbeef" * 30  # a path or hash with nowhere to wrap
STREAMS = {"/events", "/fleet/events"}  # Server-Sent Events, not pages to look at

#: Each page route, as a path with seeded rows (see ``seed``). A new page route fails
#: ``test_every_page_is_listed`` until it is added here.
PAGES = {
    "/login": "/login",
    "/settings": "/settings",
    "/settings/destinations/{id}": "/settings/destinations/{destination}",
    "/": "/?workspace=proj",
    "/c/{slug}": "/c/lobby?workspace=proj&thread={root}",
    "/t/{id}": "/t/{root}",
    "/agents": "/agents?workspace=proj",
    "/a/{handle}": f"/a/{LONG_HANDLE}",
    "/search": "/search?q=deploy",
    "/inbox": "/inbox",
    "/audit": "/audit",
    "/kb": "/kb?workspace=proj",
    "/kb/review": "/kb/review",
    "/kb/{slug}/{path:.+}": "/kb/proj/runbook/deploy.md",
    "/routines": "/routines",
    "/costs": "/costs",
    "/workspaces": "/workspaces",
    "/fleet": "/fleet",
    "/fleet/bots/{handle}": "/fleet/bots/fb1",
    "/fleet/machines/{name}/remove": "/fleet/machines/box1/remove",
    "/fleet/profiles": "/fleet/profiles",
    "/fleet/profiles/{name}": "/fleet/profiles/proj-dev",
    "/onboard": "/onboard",
    "/intake": "/intake",
}
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


def test_every_page_is_listed() -> None:
    pages = {r.path for r in all_pages() if r.method == "GET" and r.path not in STREAMS}
    assert pages == set(PAGES)


async def seed(world: World) -> dict[str, int]:
    """Rows in every table a page shows, with a long handle and long unbroken strings among them
    (in a channel's topic and in quotes nested five deep too)."""
    long_bot = await world.board.bot(LONG_HANDLE, "proj")
    await world.human.call("PATCH", "/api/workspaces/proj", json={"review": "bots"})
    root = await world.human.post(f"please deploy @pb: see {UNBROKEN}", channel="lobby", workspace="proj")
    await world.human.patch_channel("lobby", workspace="proj", topic=f"Deploys of {UNBROKEN}")
    quoted = "".join("> " * n + f"{UNBROKEN}\n" for n in range(1, 6)) + "\n- a\n  - b\n    - c"
    await long_bot.post(
        f"Deploy log at `{UNBROKEN}`\n\n```\n{UNBROKEN}\n```\n\n{quoted}", reply_to=root["id"]
    )
    await world.bot.post(f"@alice the deploy needs you: {UNBROKEN}", channel="lobby", workspace="proj")
    await world.bot.claim(root["id"], note=f"on it {UNBROKEN}")
    started = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    await long_bot.record_wake(
        harness="claude", started_at=started, outcome="ok", trigger_ids=[root["id"]], cost_usd=0.0421
    )
    await long_bot.put_document("runbook/deploy.md", f"# Deploy\n\nRun `{UNBROKEN}`.\n", 0, UNBROKEN)
    await world.bot.put_document("notes/a-much-longer-document-name-than-usual.md", "# Notes\n", 0, "notes")
    shipped = importer.SHIPPED / "knowledge-reconciler"
    await importer.propose(world.bot, importer.read(shipped, {"workspace": "proj", "bot": "pb"}))
    await world.human.create_profile("proj-dev", "proj", "claude", repo=f"~/src/{UNBROKEN}")
    await keeper_with_bots(world, "box1", "fb1")
    repo = "acme/" + "deadbeef" * 12  # a repository name with nowhere to wrap
    mappings = [
        {"repository": repo, "workspace": "proj", "channel": "issues", "label": "bug", "bot": LONG_HANDLE}
        | {"reply_out": True}
    ]
    mappings.append({"repository": repo, "workspace": "proj", "channel": "issues"})
    secret = "a webhook secret of length"
    source = {"forge": "github", "secret": secret, "mappings": mappings}
    await world.human.request("PUT", "/api/intake/sources/acme-github", json=source)
    forge = FakeForge("github", world.board.url, "acme-github", secret, repository=repo)
    issue = forge.issue(7, title=f"Deploy fails: {UNBROKEN}", body=f"See `{UNBROKEN}`", labels=("bug",))
    opened = await forge.send(forge.opened(issue))
    await forge.send(forge.commented(forge.issue(8), "a comment on an issue with no thread"))
    # A reply out with its error: the source has no API token.
    await long_bot.post(f"Fixed: {UNBROKEN}", reply_to=opened.answer["thread_id"], tags=["forge"])
    alice = db_rows(world.board.db_path, "SELECT id FROM agents WHERE handle = 'alice'")[0][0]
    db_execute(  # an API token of the longest name, with nowhere to wrap
        world.board.db_path,
        "INSERT INTO tokens (hash, agent_id, kind, created_at, name) VALUES ('seed', ?, 'human', ?, ?)",
        (alice, "2026-11-30T04:00:00Z", UNBROKEN[:64]),
    )
    return {"root": root["id"], "destination": await _destination_with_a_log(world)}


async def _destination_with_a_log(world: World) -> int:
    """A webhook whose log holds a sent, a failed (with its error) and a pending notification."""
    made = await world.human.create_destination(
        f"ops-{UNBROKEN}"[:80], "webhook", url=f"http://127.0.0.1:9/{UNBROKEN}", secret="s" * 20
    )
    await world.human.set_destination_kinds(made["id"], ["mention", "crashed", "run_failed"])
    await world.human.set_quiet_hours("22:00", "07:00", "Europe/Paris")
    await world.human.update_destination(made["id"], active=False)  # its rows below stay as written
    rows = [
        ("sent", 1, "", "2026-11-30T04:00:00Z"),
        ("failed", 6, f"ClientConnectorError: cannot connect to 127.0.0.1:9 {UNBROKEN}", None),
        ("pending", 2, "HTTP 502 Bad Gateway", None),
    ]
    for n, (state, attempts, error, sent_at) in enumerate(rows):
        db_execute(
            world.board.db_path,
            """INSERT INTO notifications (idem_key, destination_id, kind, subject, text, link, state,
                   attempts, next_at, last_error, created_at, sent_at)
               VALUES (?, ?, 'mention', ?, 't', '/inbox', ?, ?, '9999-01-01T00:00:00.000Z', ?,
                       '2026-11-30T04:00:00Z', ?)""",
            (
                f"seed{n}:{made['id']}",
                made["id"],
                f"pb mentioned you in #lobby {UNBROKEN}",
                state,
                attempts,
                error,
                sent_at,
            ),
        )
    return int(made["id"])


async def look(page: Page, name: str, tab: Tab, width: int) -> list[str]:
    """What is wrong with the page as shown: sideways scrolling, and axe-core's serious findings."""
    problems = [f"{name}: {finding}" for finding in await axe_findings(page)]
    scroll = await page.evaluate("document.documentElement.scrollWidth")
    if scroll > width:
        wide = await page.evaluate(
            """(width) => Array.from(document.querySelectorAll('main *, header *'))
                .filter((e) => e.getBoundingClientRect().right > width + 1)
                .slice(0, 3).map((e) => e.tagName + '.' + e.className)""",
            width,
        )
        problems.append(f"{name}: scrolls sideways ({scroll} > {width} px), widest {wide}")
    await tab.shot(name)
    return problems


@pytest.mark.timeout(600)
@pytest.mark.parametrize("size", SIZES)
async def test_every_page_fits_and_passes_axe_in_both_themes(
    chromium: Browser, world: World, tmp_path: Path, size: str
) -> None:
    ids = await seed(world)
    width, height = SIZES[size]
    tab = await signed_in_tab(chromium, world, tmp_path, width=width, height=height)
    guest = await new_tab(chromium, tmp_path, width=width, height=height)
    problems: list[str] = []
    for route, path in PAGES.items():
        where = guest if route == "/login" else tab
        response = await where.page.goto(world.board.url + path.format(**ids))
        assert response is not None and response.status == 200, (route, response and response.status)
        slug = route.strip("/").replace("/", "-").replace("{", "").replace("}", "").split(":")[0] or "board"
        for theme in ("light", "dark"):
            await where.page.emulate_media(color_scheme=theme)
            problems += await look(where.page, f"{size}-{theme}-{slug}", where, width)
    assert not problems, "\n".join(problems)
    assert tab.errors == [] and guest.errors == []
    await tab.page.context.close()  # ends the live streams the board would wait out on closing


async def test_a_phone_opens_the_menu_by_keyboard(chromium: Browser, world: World, tmp_path: Path) -> None:
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    page = tab.page
    menu = page.get_by_role("button", name="Menu")
    nav = page.locator("#site-nav")
    await expect(nav).to_be_hidden()
    await menu.focus()
    await page.keyboard.press("Enter")
    await expect(menu).to_have_attribute("aria-expanded", "true")
    await expect(nav.get_by_role("link", name="Inbox")).to_be_visible()
    await tab.shot("menu-open-phone")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Escape")
    await expect(nav).to_be_hidden()
    await expect(menu).to_be_focused()
    await expect(menu).to_have_attribute("aria-expanded", "false")
    # Just opened, the focus is still on the button: Escape closes it from there too.
    await page.keyboard.press("Enter")
    await expect(nav).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(nav).to_be_hidden()
    await expect(menu).to_have_attribute("aria-expanded", "false")
    desktop = await signed_in_tab(chromium, world, tmp_path)
    await expect(desktop.page.get_by_role("button", name="Menu")).to_be_hidden()
    await expect(desktop.page.locator("#site-nav").get_by_role("link", name="Inbox")).to_be_visible()
    assert tab.errors == [] and desktop.errors == []


async def test_a_phone_shows_the_stream_first_and_channels_behind_a_button(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    await world.bot.post("hello from pb", channel="lobby", workspace="proj")
    tab = await signed_in_tab(chromium, world, tmp_path, width=390, height=844)
    page = tab.page
    await page.goto(world.board.url + "/c/lobby?workspace=proj")
    places = page.locator("#places")
    await expect(page.locator("#roots .msg")).to_contain_text("hello from pb")
    await expect(places).to_be_hidden()
    stream_top = await page.locator(".stream").evaluate("e => e.getBoundingClientRect().top")
    assert stream_top < 120  # right under the top bar, not below the channel list
    button = page.get_by_role("button", name="Channels")
    await button.click()
    await expect(places.get_by_role("link", name="#lobby")).to_be_visible()
    await tab.shot("channels-open-phone")
    await places.get_by_role("link", name="#lobby").focus()
    await page.keyboard.press("Escape")
    await expect(places).to_be_hidden()
    desktop = await signed_in_tab(chromium, world, tmp_path)
    await expect(desktop.page.get_by_role("button", name="Channels")).to_be_hidden()
    await expect(desktop.page.locator("#places")).to_be_visible()


async def test_times_are_relative_exact_on_hover_and_move_on(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    posted = await world.bot.post("a time to read", channel="lobby", workspace="proj")
    tab = await new_tab(chromium, tmp_path)
    page = tab.page
    created = datetime.fromisoformat(posted["created_at"].replace("Z", "+00:00"))
    await page.clock.install(
        time=created + timedelta(seconds=2)
    )  # the page's clock, however slow the machine
    await use_login_link(tab, world.board.url + await login_link(world.board, "alice"))
    await page.goto(world.board.url + "/settings")
    async with page.expect_navigation():  # the page reloads to show its times in the new zone
        await page.get_by_label("Time zone").select_option("Pacific/Marquesas")
    await expect(page.get_by_label("Time zone")).to_have_value("Pacific/Marquesas")
    await page.goto(world.board.url + "/c/lobby?workspace=proj")
    stamp = page.locator(f"#m{posted['id']} header time")
    await expect(stamp).to_have_attribute("datetime", created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    await expect(stamp).to_have_text("just now")
    # The exact time on hover, in the zone chosen on Settings (UTC-9:30 all year), whatever the machine's.
    at = created - timedelta(hours=9, minutes=30)
    title = await stamp.get_attribute("title")
    assert title is not None and f"{at.hour % 12 or 12}:{at.minute:02d}:{at.second:02d}" in title, title
    assert "GMT-9:30" in title, title
    await page.clock.fast_forward("03:00")
    await expect(stamp).to_have_text("3 min ago")
    await page.clock.fast_forward("02:00:00")
    await expect(stamp).to_have_text("2 h ago")
    assert tab.errors == []


async def test_the_theme_switch_on_settings_is_kept(chromium: Browser, world: World, tmp_path: Path) -> None:
    tab = await signed_in_tab(chromium, world, tmp_path)
    page = tab.page
    await page.emulate_media(color_scheme="light")
    background = "getComputedStyle(document.body).backgroundColor"
    light = await page.evaluate(background)
    await page.goto(world.board.url + "/settings")
    await page.get_by_label("Theme").select_option("dark")
    dark = await page.evaluate(background)
    assert dark != light and await page.evaluate("document.documentElement.dataset.theme") == "dark"
    await page.goto(world.board.url + "/inbox")
    assert await page.evaluate(background) == dark  # kept for the next page, over the system's light
    await tab.shot("inbox-dark-by-choice")
    await page.goto(world.board.url + "/settings")
    await expect(page.get_by_label("Theme")).to_have_value("dark")
    await page.get_by_label("Theme").select_option("system")
    assert await page.evaluate(background) == light
    await page.emulate_media(color_scheme="dark")
    assert await page.evaluate(background) == dark  # "system" follows the system again
    assert tab.errors == []
