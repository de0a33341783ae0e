"""/fleet in a real browser, with a real keeper running a real ``bot run`` daemon.

Stopping the bot with its button shows ``stopping…`` at once, and still after a
render that raced the click; it ends its process group, and the card turns to
``stopped`` over the page's live stream without a reload, the last orders too; its
Start button brings it back the same way. An order the board refuses reads ``not
sent`` and gives the buttons back. A render the same as the last is not drawn; a new one
keeps the keyboard's focus on its control, and waits while a link is pressed (5 s at most),
so that it cannot take the click away. The add-a-machine form shows the installer's one
line. A bot whose profile names a missing repo says why in one line on its card, the
line ``board doctor`` prints too. Every state shows in a word and a colour of its
own, on a desktop and on a phone with no sideways scroll. Unassigning one bot on its
page stops it alone. Removing the machine asks first, naming its bot, then the
keeper, refused, stops the daemon.
"""

from __future__ import annotations

import asyncio
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, expect

from tests.keeper.keeperrun import KeeperProcess, daemons, fleet_bot, group_gone, running, state
from tests.launcher.botrun import LiveBoard
from tests.support.boardtest import World, eventually
from tests.support.browser_support import Tab, signed_in_tab
from tests.support.doctor_support import doctor_async, doctor_env
from tests.support.fleettest import BADGES, keeper_with_bots
from tests.support.held_stream import HeldStream, hold_fleet_stream

pytestmark = pytest.mark.timeout(240)


async def painted(badge: Locator) -> str | None:
    """A badge's background and text colours, once it is painted: the cards are redrawn as the
    fleet changes, and a badge read as its card is replaced has no computed colours yet."""
    colour = str(
        await badge.evaluate("e => getComputedStyle(e).backgroundColor + ' ' + getComputedStyle(e).color")
    )
    return colour if colour.strip() else None


async def fleet_tab(chromium: Browser, world: World, tmp_path: Path, width: int = 1280) -> Tab:
    """A tab signed in as alice, on /fleet."""
    tab = await signed_in_tab(chromium, world, tmp_path, width)
    await tab.page.goto(world.board.url + "/fleet")
    return tab


def with_orders(render: dict[str, Any], newer: list[dict[str, str]]) -> dict[str, Any]:
    """render with orders newer than any on the board put first in its last orders."""
    items = "".join(
        f'<li data-order="{10**9 - n}" data-handle="{o["handle"]}" data-kind="{o["kind"]}" data-target="">'
        f"#{10**9 - n} {o['kind']} {o['handle']}</li>"
        for n, o in enumerate(newer)
    )
    return render | {"orders": re.sub(r"(<ul[^>]*>)", lambda m: m[1] + items, render["orders"], count=1)}


async def test_stop_and_start_a_bot_from_its_card(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    bot = await running(world, "fb")
    pgid = bot["pid"]
    tab = await signed_in_tab(chromium, world, tmp_path)
    held = await hold_fleet_stream(tab.page, world.board.url + "/fleet")
    card = tab.page.locator("#machine-box1")
    await expect(card).to_have_attribute("data-status", "online")
    row = tab.page.locator("#bot-fb")
    await expect(row).to_have_attribute("data-state", "running")
    await expect(row).to_have_attribute("data-pid", str(bot["pid"]))
    await tab.shot("01-running")
    tab.page.on("framenavigated", lambda frame: tab.dialogs.append(f"navigated to {frame.url}"))

    before = await held.drawn()
    await row.locator("button[name=stop]").click()
    assert await row.locator(".badge.state").text_content() == "stopping…"  # at once, before any answer
    # A render that left the board before the order was recorded, drawn after the click: the card
    # still says the order is on its way, its buttons still off, until a render knows the order.
    await held.replay(before)
    assert await row.locator(".badge.state").text_content() == "stopping…"
    assert await row.locator("button[aria-disabled=true]").count() == 3
    await tab.shot("01b-stopping-after-a-raced-render")
    # Nor does a render whose newer order is another bot's, or another kind of order of fb's.
    for other in ({"handle": "fc", "kind": "stop"}, {"handle": "fb", "kind": "start"}):
        await held.replay(with_orders(before, [other]))
        assert await row.locator(".badge.state").text_content() == "stopping…"
    # A full list of newer orders may have pushed this one out: that render's word stands.
    cap = int(await tab.page.locator("#orders").get_attribute("data-cap") or 0)
    await held.replay(with_orders(before, [{"handle": "fc", "kind": "stop"}] * cap))
    assert await row.locator(".badge.state").text_content() == "running"
    await held.let_go()
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-state", "stopped", timeout=60_000)
    await expect(tab.page.locator("#bot-fb .badge.state")).to_have_text("stopped")
    await expect(tab.page.locator("#last-orders li").first).to_contain_text("stop fb on box1 by alice")
    await expect(tab.page.locator("#last-orders li").first).to_contain_text("done")
    await state(world, "fb", "stopped")
    await eventually(lambda: group_gone(pgid), "the bot's process group to end", 30)
    assert daemons(keeper, "fb") == []
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-pid", "")
    await tab.shot("02-stopped")

    await tab.page.locator("#bot-fb button[name=start]").click()
    assert await tab.page.locator("#bot-fb .badge.state").text_content() == "starting…"
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-state", "running", timeout=60_000)
    await expect(tab.page.locator("#bot-fb .badge.state")).to_have_text("running", timeout=30_000)
    await expect(tab.page.locator("#last-orders li").first).to_contain_text("start fb on box1 by alice")
    again = await running(world, "fb")
    assert again["pid"] != bot["pid"] and len(daemons(keeper, "fb")) == 1
    await expect(tab.page.locator("#bot-fb")).to_have_attribute("data-pid", str(again["pid"]))
    await tab.shot("03-started-again")
    assert tab.dialogs == [] and tab.errors == []  # no reload: the page never navigated

    await tab.page.fill("#add-machine input[name=machine_name]", "box2")
    await tab.page.click("#add-machine button")
    line = tab.page.locator("#enroll-line")
    await expect(line).to_contain_text(f"curl -fsSL {world.board.url}/install.sh | KEEPER_ENROLL_CODE=bk_")
    await tab.shot("04-add-a-machine")
    await tab.page.click("#bot-fb a")
    await expect(tab.page.locator("#log-tail")).not_to_be_empty()
    await tab.shot("05-bot")


async def s1_running_on_box9(chromium: Browser, world: World, tmp_path: Path) -> tuple[Tab, HeldStream]:
    """/fleet with its stream held, showing bot s1 running on box9, a machine whose keeper
    is this test's client."""
    box9 = await keeper_with_bots(world, "box9", "s1")
    await box9.client.fleet_report(
        {"interval": 3600, "bots": [{"handle": "s1", "state": "running", "pid": 7}]}
    )
    tab = await signed_in_tab(chromium, world, tmp_path)
    held = await hold_fleet_stream(tab.page, world.board.url + "/fleet")
    await expect(tab.page.locator("#bot-s1")).to_have_attribute("data-state", "running")
    return tab, held


async def test_an_order_the_board_refuses_reads_not_sent_and_no_render_marks_it_again(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, held = await s1_running_on_box9(chromium, world, tmp_path)
    card = tab.page.locator("#bot-s1")
    before = await held.drawn()
    # A token from another session: the board refuses the form with its error page.
    await card.locator("form.bot-action input[name=csrf]").evaluate_all(
        "inputs => inputs.forEach((i) => { i.value = 'not-this-session'; })"
    )
    await card.locator("button[name=stop]").click()
    await expect(card.locator(".badge.state")).to_have_text("not sent")
    await expect(card.locator(".badge.state")).to_have_class(re.compile(r"\btone-bad\b"))
    assert await card.locator("button:enabled").count() == 3  # try again
    await tab.shot("01b-not-sent")
    assert [o for o in (await world.human.fleet())["orders"] if o["handle"] == "s1"] == []
    await held.replay(before)  # nothing was sent, so a render says what the board knows
    await expect(card.locator(".badge.state")).to_have_text("running")
    assert await card.locator("button:enabled").count() == 3
    await held.let_go()
    assert tab.errors == []


async def test_a_render_keeps_the_focus_and_waits_for_a_press_to_end(
    chromium: Browser, world: World, tmp_path: Path
) -> None:
    tab, held = await s1_running_on_box9(chromium, world, tmp_path)
    page, waits = tab.page, tab.page.locator("body")
    stop, remove = page.locator("#bot-s1 button[name=stop]"), page.locator("#machine-box9 .remove-machine")
    before = await held.drawn()

    def marked(name: str, html: str = before["html"]) -> dict[str, Any]:
        return before | {"html": html + f'<i class="{name}"></i>'}

    async def press(on: Locator, render: dict[str, Any]) -> None:
        """The pointer pressed on ``on`` when ``render`` arrives: it waits."""
        box = await on.bounding_box()
        assert box is not None
        await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        await page.mouse.down()
        await held.send(render)
        await expect(waits).to_have_attribute("data-waiting", "render")

    # The same render again is not drawn: the focused button stays the element it was.
    first = marked("first")
    await held.send(first)
    await expect(page.locator("i.first")).to_have_count(1)
    await stop.focus()
    await stop.evaluate("b => { b.dataset.kept = 'yes'; }")
    await held.send(first)
    await held.reconnected()
    await expect(stop).to_have_attribute("data-kept", "yes")
    await expect(stop).to_be_focused()
    # A new render gives the focus back to the same button, though a link came before it.
    claimed = re.sub(r'(<article[^>]* id="bot-s1"[^>]*>)', r'\1<a href="/t/42">#42</a>', before["html"])
    assert claimed != before["html"]
    await held.send(marked("second", claimed))
    await expect(page.locator("i.second")).to_have_count(1)
    await expect(stop).not_to_have_attribute("data-kept", "yes")
    await expect(stop).to_be_focused()
    await tab.shot("01c-focus-kept")
    # So does one that comes while Space is down on a button: its click sends the order.
    await page.keyboard.down(" ")
    await held.send(marked("third"))
    await expect(waits).to_have_attribute("data-waiting", "render")
    await page.keyboard.up(" ")
    await expect(page.locator("i.third")).to_have_count(1)
    await expect(page.locator("#bot-s1 .badge.state")).to_have_text("stopping…")
    assert [o["kind"] for o in (await world.human.fleet())["orders"] if o["handle"] == "s1"] == ["stop"]
    # Its buttons are off while the order is on its way, and the focus stays on Stop, there too
    # after the next render; Space on it again sends nothing.
    await expect(stop).to_have_attribute("aria-disabled", "true")
    await expect(stop).to_be_focused()
    await held.send(marked("stopping"))
    await expect(page.locator("i.stopping")).to_have_count(1)
    await expect(stop).to_have_attribute("aria-disabled", "true")
    await expect(stop).to_be_focused()
    await tab.shot("01d-focus-kept-on-a-pending-stop")
    await page.keyboard.press(" ")
    # A key held down repeats its press, but the render still waits 5 s at most. (Past the
    # last press's release first: its own end, 350 ms on, is no part of this one.)
    await page.locator("#bot-s1 a.handle").focus()
    await page.wait_for_timeout(500)
    await page.keyboard.down(" ")
    await held.send(marked("repeated"))
    await expect(waits).to_have_attribute("data-waiting", "render")

    async def repeat() -> None:
        while True:
            await asyncio.sleep(0.25)
            await page.keyboard.down(" ")

    repeating = asyncio.create_task(repeat())
    try:
        await expect(page.locator("i.repeated")).to_have_count(1, timeout=10_000)
    finally:
        repeating.cancel()
    await page.keyboard.up(" ")
    # A press that makes no click (released off the link) lets the waiting render be drawn.
    await press(remove, marked("fourth"))
    await expect(page.locator("i.fourth")).to_have_count(0)
    await page.mouse.move(1, 1)
    await page.mouse.up()
    await expect(page.locator("i.fourth")).to_have_count(1)
    await expect(waits).not_to_have_attribute("data-waiting", "render")
    # A render waits 5 s at most for a press to end.
    await press(remove, marked("fifth"))
    await expect(page.locator("i.fifth")).to_have_count(1, timeout=10_000)
    await page.mouse.up()
    assert page.url.endswith("/fleet")
    # A render between the press on a link and its release waits for the click: drawn at once,
    # it would take the link away under the pointer and the click with it.
    # A key's click meanwhile (Enter on Stop, focused from the page's script) ends only its own
    # press: the render still waits, past the 350 ms a release would give it.
    await press(remove, marked("sixth"))
    await stop.evaluate("b => b.addEventListener('click', () => { b.dataset.clicked = 'yes'; })")
    await stop.focus()
    await page.keyboard.press("Enter")
    await expect(stop).to_have_attribute("data-clicked", "yes")
    await page.wait_for_timeout(700)
    await expect(waits).to_have_attribute("data-waiting", "render")
    await expect(page.locator("i.sixth")).to_have_count(0)
    await page.mouse.up()
    await page.wait_for_url("**/fleet/machines/box9/remove")
    await expect(page.locator("#to-unassign")).to_have_text(re.compile(r"^s1 "))
    assert [o["kind"] for o in (await world.human.fleet())["orders"] if o["handle"] == "s1"] == ["stop"]
    await held.let_go()
    assert tab.errors == []


async def test_a_broken_bot_says_why_in_one_line_on_its_card_and_in_board_doctor(
    chromium: Browser, world: World, keeper: KeeperProcess, live: LiveBoard, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-repo"
    await world.human.create_profile("broken", "proj", "claude", repo=str(missing))
    await world.human.assign_bot("box1", "broken", "confused")
    await state(world, "confused", "misconfigured")
    why = f"bot: repo {missing} is not a directory"

    tab = await fleet_tab(chromium, world, tmp_path)
    row = tab.page.locator("#bot-confused")
    await expect(row).to_have_attribute("data-state", "misconfigured")
    await expect(row.locator(".why")).to_have_text(why)
    await tab.shot("06-misconfigured")

    env = doctor_env(tmp_path / "doctor", live.port, BOARD_DB=str(live.db_path))
    found = await doctor_async(env)
    (line,) = found.lines("bot confused")
    assert line.startswith(f"FAIL  bot confused on box1: misconfigured: {why} — fix its profile broken")
    assert tab.errors == []


STATES = {
    "fb": "running",
    "w1": "waking",
    "b1": "backoff",
    "s1": "stopped",
    "c1": "crashed",
    "m1": "misconfigured",
    "p1": "start",  # should run, and nothing has started it yet: pending
    "away": "offline",
}


async def no_sideways_scroll(tab: Tab) -> None:
    width = await tab.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"


async def test_each_state_in_a_word_and_a_colour_on_a_desktop_and_a_phone(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    await running(world, "fb")
    box9 = await keeper_with_bots(world, "box9", "w1", "b1", "s1", "c1", "m1", "p1")
    stop = (await world.human.fleet_order("s1", "stop"))["order"]["id"]
    lines = [f"step {n}: reading the board" for n in range(8)] + ["<b>not bold</b>"]
    await box9.client.fleet_report(
        {
            "interval": 3600,  # box9 stays online through the test, reporting once
            "acks": [{"id": stop, "ok": True}],
            "bots": [
                {"handle": "w1", "state": "waking", "pid": 101, "cpu_percent": 3.5, "rss": 52428800},
                {"handle": "b1", "state": "backoff", "backoff_s": 8.0, "restarts": 3},
                {"handle": "s1", "state": "stopped"},
                {
                    "handle": "c1",
                    "state": "crashed",
                    "error": "Traceback\nRuntimeError: the \u202eharness died",
                },
                {"handle": "m1", "state": "misconfigured", "error": "bot: repo /srv/gone is not a directory"},
                {"handle": "p1", "state": "stopped", "log_tail": lines},
            ],
        }
    )
    box8 = await keeper_with_bots(world, "box8", "away")
    await box8.client.fleet_report(
        {"interval": 0.05, "bots": [{"handle": "away", "state": "running", "pid": 7}]}
    )

    tab = await fleet_tab(chromium, world, tmp_path)
    await expect(tab.page.locator("#machine-box8")).to_have_attribute("data-status", "stale", timeout=30_000)
    colours: dict[str, set[str]] = {}
    for handle, shown in STATES.items():
        tone, word = BADGES[shown]
        badge = tab.page.locator(f"#bot-{handle} .badge.state")
        await expect(badge).to_have_text(word)
        await expect(badge).to_have_class(re.compile(rf"\btone-{tone}\b"))
        colour = await eventually(partial(painted, badge), f"{handle}'s badge painted")
        colours.setdefault(tone, set()).add(colour)
    assert all(len(c) == 1 for c in colours.values()), colours  # one colour per tone
    assert len({c for cs in colours.values() for c in cs}) == len(colours), colours  # a tone each
    # A daemon's last line as it is but for a bidirectional override, which would reverse it.
    await expect(tab.page.locator("#bot-c1 .why")).to_have_text("RuntimeError: the \\u202eharness died")
    await expect(tab.page.locator("#bot-p1 .log-tail")).to_contain_text("<b>not bold</b>")  # text, not HTML
    await expect(tab.page.locator("#bot-w1 .spark-cpu title")).to_have_text(
        "CPU, last 6 h: latest 3.5 %, peak 3.5 %"
    )
    await tab.shot("07-every-state")
    await no_sideways_scroll(tab)

    phone = await fleet_tab(chromium, world, tmp_path, width=390)
    await expect(phone.page.locator("#bot-c1 .badge.state")).to_have_text("crashed")
    await phone.shot("08-every-state-phone")
    await no_sideways_scroll(phone)
    assert tab.errors == [] and phone.errors == []


async def test_unassigning_a_bot_on_its_page_stops_it_and_revokes_its_token(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    """One bot taken off its machine from the pages, its machine and the other bots kept: the
    route was there, but no page had its button (only removing the whole machine did it)."""
    await world.human.assign_bot("box1", "proj-dev", "fb")
    await world.human.assign_bot("box1", "proj-dev", "fc")
    pgid = (await running(world, "fb"))["pid"]
    await running(world, "fc")
    token = keeper.bots_dir / "fb" / "token"
    tab = await fleet_tab(chromium, world, tmp_path)
    await tab.page.click("#bot-fb a.handle")
    await expect(tab.page.locator("#unassign")).to_contain_text("its token stops working")
    await expect(tab.page.locator("#unassign button")).to_have_text("Unassign fb from box1")
    await tab.shot("11-unassign-asks")

    await tab.page.click("#unassign button")
    await tab.page.wait_for_url("**/fleet")
    await expect(tab.page.locator("#bot-fb")).to_have_count(0)
    await expect(tab.page.locator("#bot-fc")).to_have_attribute("data-state", "running")
    await eventually(lambda: group_gone(pgid), "the keeper to stop the unassigned bot", 60)
    await eventually(lambda: not token.exists(), "the keeper to delete its token file", 30)
    assert await fleet_bot(world, "fb") is None and daemons(keeper, "fb") == []
    assert len(daemons(keeper, "fc")) == 1
    await tab.shot("12-unassigned")
    assert tab.errors == []


async def test_removing_a_machine_asks_unassigns_and_its_keeper_stops_the_bot(
    chromium: Browser, world: World, keeper: KeeperProcess, tmp_path: Path
) -> None:
    await world.human.assign_bot("box1", "proj-dev", "fb")
    pgid = (await running(world, "fb"))["pid"]
    tab = await fleet_tab(chromium, world, tmp_path)
    await tab.page.click("#machine-box1 .remove-machine")
    await expect(tab.page.locator("#to-unassign")).to_have_text(re.compile(r"^fb proj/proj-dev, running$"))
    await expect(tab.page.locator("#remove-machine button")).to_have_text("Remove box1 and unassign 1 bot")
    await tab.shot("09-remove-asks")
    assert await fleet_bot(world, "fb") is not None  # asking changed nothing

    await tab.page.click("#remove-machine button")
    await tab.page.wait_for_url("**/fleet")
    await expect(tab.page.locator("#no-machines")).to_be_visible()
    await tab.shot("10-removed")
    assert (await world.human.fleet())["machines"] == []
    await eventually(lambda: group_gone(pgid), "the removed machine's keeper to stop its bot", 60)
    await eventually(lambda: keeper.events("refused"), "the keeper to log that it was refused", 30)
    await asyncio.sleep(2)  # ten times the keeper's least restart delay: a crash loop would show
    logged = keeper.events()
    after = logged[logged.index(keeper.events("refused")[0]) :]
    assert [e for e in after if e["event"] == "state" and e["state"] == "starting"] == []  # not restarted
    assert daemons(keeper, "fb") == [] and keeper.proc is not None and keeper.proc.poll() is None
    phone = await fleet_tab(chromium, world, tmp_path, width=390)
    await no_sideways_scroll(phone)
    assert tab.errors == [] and phone.errors == []
